package cli

import (
	"cmp"
	"flag"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

// sharedUsage is what the flags cmd/launch, cmd/reconcile and cmd/advise share mean (SPEC §6's
// shared flags), spelled once, with --help's default where the field's value is not it; a command's
// table binds them to its fields with Shared, or Stream for the stream's settings.
var sharedUsage = map[string]struct{ arg, usage, def string }{
	"window":            {"", "window size; must divide 24h", ""},
	"allowed-lateness":  {"", "how long after window_end a window takes corrections (then FINAL)", ""},
	"early":             {"", "EARLY refresh period in processing time; 0s turns it off (a replay has none)", ""},
	"ooo-bound":         {"", "out-of-order bound: partition watermark = max valid event time - bound", ""},
	"idle-timeout":      {"", "processing time after which a silent partition leaves the watermark minimum", ""},
	"idle-advance":      {"", "when every partition is idle the watermark follows processing-time (minus --ooo-bound; live traffic) or holds (hold; a backfill; prism only)", ""},
	"dedup-retention":   {"", "how long an event_id is remembered, in event time; shorter than the default is refused", "window + allowed lateness"},
	"max-future":        {"", "quarantine events further than this ahead of processing time", ""},
	"max-age":           {"", "quarantine events older than this behind their partition watermark (0s: off)", ""},
	"max-line":          {"", "longest accepted line, in bytes or a size like 512KiB; longer ones are quarantined as oversized", ""},
	"dimensions":        {"FIELD,...", "payload fields to report by (the dims column; a missing field is null)", ""},
	"report":            {"PATH", "write a report of the run to PATH: .html, .md or .json, by extension", ""},
	"log-level":         {"", "debug, info, warn or error (Beam's and prism's own logs show from warn, or all with debug)", ""},
	"dry-run":           {"", "build the pipeline for --runner as a submission would, check it against the runner's capabilities, write its portable pipeline proto (protojson) to stdout, or to FILE with --dry-run=FILE, and exit 0: no service is contacted, nothing is run", ""},
	"shared-filesystem": {"", "every worker sees this machine's local paths (a job server on this machine, an NFS mount): allow local paths off the in-process runner", ""},
}

// Shared is the table row of a flag in sharedUsage, bound to v. An unknown
// name is a programming error and panics.
func Shared(name string, v flag.Value) Flag {
	u, ok := sharedUsage[name]
	if !ok {
		panic("cli: no shared flag --" + name)
	}
	return Flag{Name: name, Value: v, Usage: u.usage, Arg: u.arg, Default: u.def}
}

// Stream binds the stream's settings (SPEC §2, §3), which every command spells with the same
// flags, to a command's copy of them: which field a flag sets is written once.
type Stream struct {
	Event     *event.Config
	Watermark *watermark.Policy
	Triggers  *triggers.Policy
	Retention *time.Duration    // --dedup-retention
	Usage     map[string]string // the command's own wording of a flag, by name
}

// Flags are the table rows of the named stream flags, in that order.
func (s Stream) Flags(names ...string) []Flag {
	values := map[string]flag.Value{
		"window":           Duration(&s.Triggers.Window),
		"early":            Duration(&s.Triggers.Early),
		"allowed-lateness": Duration(&s.Triggers.AllowedLateness),
		"ooo-bound":        Duration(&s.Watermark.OutOfOrderBound),
		"idle-timeout":     Duration(&s.Watermark.IdleTimeout),
		"idle-advance":     IdleAdvance(&s.Watermark.IdleAdvance),
		"dedup-retention":  Duration(s.Retention),
		"max-future":       Duration(&s.Event.MaxFuture),
		"max-age":          Duration(&s.Event.MaxAge),
		"max-line":         Size(&s.Event.MaxLine),
		"dimensions":       List(&s.Event.Dimensions),
	}
	return slicesx.Map(names, func(name string) Flag {
		f := Shared(name, values[name])
		f.Usage = cmp.Or(s.Usage[name], f.Usage)
		return f
	})
}
