package pubsub

import (
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/watermark"
)

func TestParseSource(t *testing.T) {
	for _, ok := range []struct{ in, project, sub string }{
		{"pubsub:projects/my-proj/subscriptions/revenue-events", "my-proj", "revenue-events"},
		{"projects/123456/subscriptions/sub.v2_x~y+z%20", "123456", "sub.v2_x~y+z%20"},
		{"pubsub:projects/example.com:legacy/subscriptions/abc", "example.com:legacy", "abc"},
	} {
		p, s, err := ParseSource(ok.in)
		if err != nil || p != ok.project || s != ok.sub {
			t.Errorf("ParseSource(%q) = %q, %q, %v; want %q, %q", ok.in, p, s, err, ok.project, ok.sub)
		}
	}
	for _, bad := range []string{
		"", "pubsub:", "pubsub:projects/p", "pubsub:projects/p/subscriptions/",
		"pubsub:projects/p/topics/t", "pubsub:projects//subscriptions/sss",
		"pubsub:projects/p/subscriptions/s", // too short
		"pubsub:projects/p/subscriptions/9abc",
		"pubsub:projects/p/subscriptions/googsub",
		"pubsub:projects/P/subscriptions/abc",
		"pubsub:projects/p/subscriptions/abc/extra",
		"pubsub:projects/p/subscriptions/a b c",
		"pubsub://projects/p/subscriptions/abc",
	} {
		_, _, err := ParseSource(bad)
		if err == nil {
			t.Errorf("ParseSource(%q) accepted", bad)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "--source=") {
			t.Errorf("ParseSource(%q) error %q: want one line naming --source", bad, msg)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Options{
		Watermark: watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute},
		Event:     event.DefaultConfig(),
	}
	const sub = "pubsub:projects/p/subscriptions/abc"
	if err := Validate(sub, good); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	for name, mut := range map[string]func(*Options){
		"idle":       func(o *Options) { o.Watermark.IdleTimeout = 0 },
		"bound":      func(o *Options) { o.Watermark.OutOfOrderBound = -1 },
		"max-future": func(o *Options) { o.Event.MaxFuture = 0 },
		"per-call":   func(o *Options) { o.MaxPerCall = -1 },
		"archive":    func(o *Options) { o.ArchiveDir = "s4://bucket/log" },
		"held":       func(o *Options) { o.MaxHeld = 10 },
		"extension":  func(o *Options) { o.AckExtension = time.Hour },
		"fail-after": func(o *Options) { o.ArchiveFailAfter = -time.Second },
	} {
		o := good
		mut(&o)
		if err := Validate(sub, o); err == nil {
			t.Errorf("%s: bad option accepted", name)
		}
	}
	gcs := good
	gcs.ArchiveDir = "gs://bucket/log"
	if err := Validate(sub, gcs); err != nil {
		t.Errorf("a GCS archive refused: %v", err)
	}
	if got := good.withDefaults("abc").ArchiveDir; got != "pubsub-log/abc" {
		t.Errorf("default archive = %q", got)
	}
}
