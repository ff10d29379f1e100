package cli

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

// Flag is one row of a command's flag table: its name, the typed field it sets, what it does.
type Flag struct {
	Name  string
	Value flag.Value
	Usage string
	// Arg names the value in --help (--source=PATH); "" takes the value's.
	Arg string
	// Default is --help's default; "" shows the field's value unless it is empty, 0, 0s or false.
	Default string
}

// Group is a heading of --help with its flags, in the order shown.
type Group struct {
	Title string
	Flags []Flag
}

// FlagSet binds a command's flag table and the Beam runner flags to one flag.FlagSet: it parses,
// each error one line naming its flag, and writes --help from the same table.
type FlagSet struct {
	name   string
	groups []Group
	fs     *flag.FlagSet
	runner []*flag.Flag
	err    error
}

// newFlagSet binds groups, and the Beam runner flags with beamFlags; a name twice in the table
// panics.
func newFlagSet(name string, groups []Group, beamFlags bool) *FlagSet {
	s := &FlagSet{name: name, groups: groups, fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	s.fs.SetOutput(io.Discard) // errors are reported by Main, in one line
	for _, g := range groups {
		for _, f := range g.Flags {
			if s.fs.Lookup(f.Name) != nil {
				panic("cli: flag --" + f.Name + " twice in the table of " + name)
			}
			s.fs.Var(captured{f.Value, f.Name, &s.err}, f.Name, f.Usage)
		}
	}
	if !beamFlags {
		return s
	}
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if s.fs.Lookup(f.Name) != nil || strings.HasPrefix(f.Name, "test.") {
			return // ours wins; go test's flags are no command's
		}
		s.fs.Var(captured{f.Value, f.Name, &s.err}, f.Name, f.Usage)
		s.runner = append(s.runner, f)
	})
	return s
}

func shownDefault(v string) string {
	if slices.Contains([]string{"", "0", "0s", "false", "[]"}, v) {
		return ""
	}
	return v
}

// parse reads a command line: flag.ErrHelp for -h or --help, or an error naming the flag.
func (s *FlagSet) parse(args []string) error {
	s.err = nil
	if err := s.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return cmp.Or(s.err, flagError(err))
	}
	if rest := s.fs.Args(); len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q: flags take the form --name=value", rest[0])
	}
	return nil
}

// Given reports whether the command line set the flag.
func (s *FlagSet) Given(name string) bool {
	given := false
	s.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// Set sets a flag as if the command line had (defaults that depend on another flag).
func (s *FlagSet) Set(name, value string) error {
	s.err = nil
	if err := s.fs.Set(name, value); err != nil {
		return cmp.Or(s.err, fmt.Errorf("--%s: %w", name, err))
	}
	return nil
}

// captured keeps a failing Set's error, named by flag, for parse: the flag package only formats it.
type captured struct {
	flag.Value
	name string
	err  *error
}

func (c captured) Set(v string) error {
	if err := c.Value.Set(v); err != nil {
		*c.err = fmt.Errorf("--%s: %w", c.name, err)
		return err
	}
	return nil
}

// IsBoolFlag keeps a switch usable without a value (--follow).
func (c captured) IsBoolFlag() bool { return isSwitch(c.Value) }

func isSwitch(v flag.Value) bool {
	b, ok := v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// ErrIf is the error format describes when bad, else nil: a command's Validate lists its checks
// as ErrIf calls, under cmp.Or (the first failure) or errors.Join (every failure).
func ErrIf(bad bool, format string, args ...any) error {
	if !bad {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// flagError rewrites the flag package's messages in the --name form.
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s (see --help)", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s: missing value", name)
	}
	if strings.HasPrefix(msg, "bad flag syntax: ") {
		return fmt.Errorf("bad flag syntax %q", strings.TrimPrefix(msg, "bad flag syntax: "))
	}
	return err
}

// runnerFlags are the Beam runner flags --help describes; the SDK's others are listed by name.
var runnerFlags = []struct{ Name, Usage, Default string }{
	{"runner", "where the job runs: prism (in this process), universal (a portable job server, e.g. Flink's), dataflow", "prism"},
	{"endpoint", "the job server's address (universal runner; Flink's job server), or prism's when it runs elsewhere", ""},
	{"environment_type", "how the runner starts workers: LOOPBACK (in this process), PROCESS (this binary, see docs/workers.md), DOCKER, EXTERNAL", "LOOPBACK on prism"},
	{"environment_config", "the environment's setting: a boot command (PROCESS), a container image (DOCKER), an address (EXTERNAL)", ""},
	{"job_name", "the job's name in the runner", "drawn per run"},
	{"project", "Dataflow: the Google Cloud project", ""},
	{"region", "Dataflow: the region", ""},
	{"temp_location", "Dataflow: a gs:// folder for temporary files", ""},
	{"staging_location", "Dataflow: a gs:// folder for the staged binary", ""},
	{"worker_binary", "Dataflow: a prebuilt linux/amd64 binary of this command for the workers", ""},
	{"parallelism", "Flink: the job's parallelism", ""},
	{"experiments", "comma-separated Beam experiments", ""},
}

// workerFlags are the SDK harness's own flags, which --help leaves out.
var workerFlags = []string{"worker", "id", "logging_endpoint", "control_endpoint", "status_endpoint", "semi_persist_dir", "options", "provision_endpoint", "artifact_endpoint"}

// helpWidth is where --help wraps.
const helpWidth = 100

// writeHelp writes --help: the synopsis, each group of the table, then the Beam runner flags. It
// shows a field's value as its default, so it is called on a set nothing has parsed into.
func (s *FlagSet) writeHelp(w io.Writer, synopsis string) error {
	type row struct{ left, usage string }
	type section struct {
		title string
		rows  []row
	}
	var sections []section
	width := 0
	add := func(sec *section, left, usage string) {
		sec.rows = append(sec.rows, row{left, usage})
		width = max(width, len(left))
	}
	for _, g := range s.groups {
		sec := section{title: g.Title}
		for _, f := range g.Flags {
			add(&sec, flagLeft(f.Name, f.Value, f.Arg), withDefault(f.Usage, cmp.Or(f.Default, shownDefault(f.Value.String()))))
		}
		sections = append(sections, sec)
	}
	var others []string
	if len(s.runner) > 0 {
		sec, described := section{title: "Beam runner flags"}, map[string]bool{}
		for _, r := range runnerFlags {
			// Not registered, or the command's own: not in s.runner.
			if i := slices.IndexFunc(s.runner, func(f *flag.Flag) bool { return f.Name == r.Name }); i >= 0 {
				add(&sec, flagLeft(r.Name, s.runner[i].Value, ""), withDefault(r.Usage, r.Default))
				described[r.Name] = true
			}
		}
		sections = append(sections, sec)
		for _, f := range s.runner {
			if !described[f.Name] && !slices.Contains(workerFlags, f.Name) {
				others = append(others, "--"+f.Name)
			}
		}
	}
	width = min(width, 30)
	var b strings.Builder
	b.WriteString(strings.TrimRight(synopsis, "\n") + "\n")
	for _, sec := range sections {
		fmt.Fprintf(&b, "\n%s:\n", sec.title)
		for _, r := range sec.rows {
			writeWrapped(&b, r.left, r.usage, width)
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		writeWrapped(&b, "", "also accepted (see the Beam SDK's documentation): "+strings.Join(others, " "), 2)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flagLeft is a flag's left column: "--name=ARG", or "--name" for a switch.
func flagLeft(name string, v flag.Value, arg string) string {
	if isSwitch(v) {
		return "--" + name
	}
	if arg == "" {
		if a, ok := v.(interface{ Arg() string }); ok {
			arg = a.Arg()
		} else {
			arg = "VALUE"
		}
	}
	return "--" + name + "=" + arg
}

func withDefault(usage, def string) string {
	if def == "" {
		return usage
	}
	return usage + " (default " + def + ")"
}

// writeWrapped writes "  left  usage" wrapped at helpWidth; a wide left puts usage below.
func writeWrapped(b *strings.Builder, left, usage string, width int) {
	indent := strings.Repeat(" ", 2+width+2)
	line := "  " + left
	if len(left) > width {
		b.WriteString(line + "\n")
		line = indent
	} else {
		line += strings.Repeat(" ", width-len(left)+2)
	}
	for i, word := range strings.Fields(usage) {
		switch {
		case i == 0:
		case len(line)+1+len(word) > helpWidth:
			b.WriteString(line + "\n")
			line = indent
		default:
			line += " "
		}
		line += word
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
}

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
