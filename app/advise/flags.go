package advise

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/watermark"
)

// flagGroup is a heading of --help and its flags.
type flagGroup struct {
	title string
	flags []flagDef
}

type flagDef struct {
	name, usage string
	value       flag.Value
}

// command is cmd/advise's flags over the options they set.
type command struct {
	o              Options
	from, to, date string
	logLevel       slog.Level
	groups         []flagGroup
	fs             *flag.FlagSet
	err            error // a value's refusal, naming its flag
}

// newCommand declares the flags: one table, which --help prints grouped,
// each default once.
func newCommand() *command {
	c := &command{o: Defaults()}
	o := &c.o
	c.groups = []flagGroup{
		{"The raw log", []flagDef{
			{"source", "raw-log folder (local, gs://BUCKET/PATH, s3://BUCKET/PATH) or a Pub/Sub archive (required)", stringValue{&o.Source}},
			{"arrival-field", "payload field holding each record's arrival instant (RFC 3339 or epoch ms), e.g. received_at; a Pub/Sub archive's publish times serve without it", stringValue{&o.ArrivalField}},
			{"segment-by", "comma-separated payload fields to split the shares by (default: --dimensions)", listValue{&o.Segments}},
			{"from", "first window start measured, an RFC 3339 whole hour (inclusive)", stringValue{&c.from}},
			{"to", "window start to stop before (exclusive)", stringValue{&c.to}},
			{"date", "measure the windows of one UTC day, YYYY-MM-DD (instead of --from/--to)", stringValue{&c.date}},
		}},
		{"The job's settings (as cmd/launch spells them)", []flagDef{
			{"window", "window size", durationValue{&o.Triggers.Window}},
			{"ooo-bound", "out-of-order bound", durationValue{&o.Watermark.OutOfOrderBound}},
			{"idle-timeout", "processing time after which a silent partition leaves the watermark minimum", durationValue{&o.Watermark.IdleTimeout}},
			{"idle-advance", "with every partition idle the watermark follows processing-time or holds (hold)", idleAdvanceValue{&o.Watermark.IdleAdvance}},
			{"allowed-lateness", "correction period after the window end", durationValue{&o.Triggers.AllowedLateness}},
			{"dedup-retention", "dedup horizon (default window + allowed lateness)", durationValue{&o.Retention}},
			{"dimensions", "comma-separated payload fields the job reports by (they are part of the fingerprint)", listValue{&o.Event.Dimensions}},
			{"max-future", "quarantine events further than this ahead of their arrival", durationValue{&o.Event.MaxFuture}},
			{"max-age", "quarantine events older than this behind their partition watermark (0 off)", durationValue{&o.Event.MaxAge}},
			{"max-line", "longest accepted line, e.g. 512KiB", sizeValue{&o.Event.MaxLine}},
		}},
		{"What to try (comma-separated values; the current one is always added)", []flagDef{
			{"try-ooo-bound", "bounds", durationsValue{&o.Try.Bounds}},
			{"try-lateness-percentiles", "also try the bounds at these percentiles of the measured lateness", intsValue{&o.Try.LatenessPercentiles}},
			{"try-allowed-lateness", "allowed latenesses", durationsValue{&o.Try.Lateness}},
			{"try-dedup-retention", "dedup horizons (shorter than window + lateness shows what cmd/launch refuses)", durationsValue{&o.Try.Retention}},
			{"try-idle-timeout", "idle timeouts", durationsValue{&o.Try.Idle}},
		}},
		{"Targets of the recommendation", []flagDef{
			{"target-late-share", "at most this share of events and of revenue in LATE revisions, e.g. 1% (none: no limit)", shareValue{&o.Targets.LateSharePPM}},
			{"target-too-late-share", "at most this share too late, left to reconciliation (none: keep --allowed-lateness, the business's correction period)", shareValue{&o.Targets.TooLateSharePPM}},
			{"target-ontime", "every window's ON_TIME row at most this long after its end (needs an arrival clock; 0: no limit)", durationValue{&o.Targets.OnTime}},
			{"target-residual-dups", "at most this many copies counted twice", int64Value{&o.Targets.ResidualDups}},
		}},
		{"Output", []flagDef{
			{"report", "also write the advice to PATH (.html, .md or .json, by extension)", stringValue{&o.Report}},
			{"job-report", "a cmd/launch JSON run report (--report=run.json) whose delay histograms are shown beside the advisor's", stringValue{&o.JobReport}},
			{"log-level", "debug, info, warn or error", levelValue{&c.logLevel}},
		}},
	}
	c.fs = flag.NewFlagSet("advise", flag.ContinueOnError)
	c.fs.SetOutput(io.Discard)
	for _, g := range c.groups {
		for _, f := range g.flags {
			c.fs.Var(named{f.name, f.value, &c.err}, f.name, f.usage)
		}
	}
	return c
}

// named makes a value's error name its flag: `--window: invalid duration
// "x"`, not the flag package's own wording.
type named struct {
	name string
	flag.Value
	err *error
}

func (n named) Set(s string) error {
	if err := n.Value.Set(s); err != nil {
		*n.err = fmt.Errorf("--%s: %w", n.name, err)
		return *n.err
	}
	return nil
}

// parse reads the command line; a value's error names its flag.
func (c *command) parse(args []string) error {
	if err := c.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		if c.err != nil {
			return c.err
		}
		return fmt.Errorf("%w (see --help)", err)
	}
	if c.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; see --help)", c.fs.Arg(0))
	}
	rng, err := reconcile.ParseRange(c.from, c.to, c.date)
	if err != nil {
		return err
	}
	c.o.Range = rng
	if len(c.o.Segments) == 0 {
		c.o.Segments = c.o.Event.Dimensions
	}
	return nil
}

// usage prints --help: the flags by group, each with its default.
func (c *command) usage(w io.Writer) {
	d := newCommand()
	fmt.Fprintln(w, "usage: advise --source=PATH [--arrival-field=FIELD] [--dimensions=..] [--target-late-share=1%] [--target-ontime=15m] [flags]")
	fmt.Fprintln(w, "Replays a raw log with the stream's rules and prints, for the current settings and candidate values, what each would do; then the smallest settings meeting the targets, as cmd/launch flags.")
	for gi, g := range c.groups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for fi, f := range g.flags {
			def := d.groups[gi].flags[fi].value.String()
			if def != "" && def != "0s" && def != "0" {
				def = " (default " + def + ")"
			} else {
				def = ""
			}
			fmt.Fprintf(w, "  --%s\n      %s%s\n", f.name, f.usage, def)
		}
	}
}

type stringValue struct{ s *string }

func (v stringValue) String() string     { return *v.s }
func (v stringValue) Set(s string) error { *v.s = s; return nil }

type durationValue struct{ d *time.Duration }

func (v durationValue) String() string { return Span(*v.d) }
func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q", s)
	}
	*v.d = d
	return nil
}

type durationsValue struct{ ds *[]time.Duration }

func (v durationsValue) String() string {
	var out []string
	for _, d := range *v.ds {
		out = append(out, Span(d))
	}
	return strings.Join(out, ",")
}

func (v durationsValue) Set(s string) error {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("invalid duration %q in %q", f, s)
		}
		out = append(out, d)
	}
	*v.ds = out
	return nil
}

type intsValue struct{ ns *[]int }

func (v intsValue) String() string {
	var out []string
	for _, n := range *v.ns {
		out = append(out, strconv.Itoa(n))
	}
	return strings.Join(out, ",")
}

func (v intsValue) Set(s string) error {
	*v.ns = nil
	if s == "" {
		return nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("invalid number %q in %q", f, s)
		}
		*v.ns = append(*v.ns, n)
	}
	return nil
}

type listValue struct{ l *[]string }

func (v listValue) String() string { return strings.Join(*v.l, ",") }
func (v listValue) Set(s string) error {
	*v.l = nil
	if s != "" {
		*v.l = strings.Split(s, ",")
	}
	return nil
}

type int64Value struct{ n *int64 }

func (v int64Value) String() string { return strconv.FormatInt(*v.n, 10) }
func (v int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("invalid count %q: want 0 or more", s)
	}
	*v.n = n
	return nil
}

// shareValue is a percentage ("1%", "0.5%") in parts per million, or
// "none".
type shareValue struct{ ppm *int64 }

func (v shareValue) String() string {
	if *v.ppm < 0 {
		return "none"
	}
	return PPM(*v.ppm)
}

func (v shareValue) Set(s string) error {
	if s == "none" {
		*v.ppm = -1
		return nil
	}
	num, ok := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || f < 0 || f > 100 || math.IsNaN(f) {
		return fmt.Errorf("invalid share %q: want a percentage from 0%% to 100%%, such as 1%% or 0.5%%, or none", s)
	}
	*v.ppm = int64(math.Round(f * 10_000))
	return nil
}

type sizeValue struct{ n *int }

func (v sizeValue) String() string { return cli.FormatSize(*v.n) }
func (v sizeValue) Set(s string) error {
	n, err := cli.ParseSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}

type idleAdvanceValue struct{ a *watermark.IdleAdvance }

func (v idleAdvanceValue) String() string { return v.a.String() }
func (v idleAdvanceValue) Set(s string) error {
	a, err := watermark.ParseIdleAdvance(s)
	if err != nil {
		return fmt.Errorf("want processing-time or hold, got %q", s)
	}
	*v.a = a
	return nil
}

type levelValue struct{ l *slog.Level }

func (v levelValue) String() string { return strings.ToLower(v.l.String()) }
func (v levelValue) Set(s string) error {
	if err := v.l.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("want debug, info, warn or error, got %q", s)
	}
	return nil
}
