package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// ExitUsage is every command's exit code for a bad flag or setting: one
// line on stderr, nothing run.
const ExitUsage = 2

// Command is the shape every command shares over its options O: flags parsed, beam.Init, settings
// validated, our logger, a context the first SIGINT/SIGTERM cancels, the work, an exit code.
type Command[O any] struct {
	// Name prefixes the one-line errors ("launch: ...").
	Name string
	// Synopsis heads --help: the usage line, what the command does, its exit codes.
	Synopsis string
	// Defaults are the options before parsing; --help shows them as the flags' defaults.
	Defaults func() O
	// Flags is the command's flag table over o.
	Flags func(o *O) []Group
	// Plain leaves out the Beam runner flags: the command submits no Beam job.
	Plain bool
	// Complete, if set, finishes o once fs has parsed it: defaults that depend on other flags,
	// settings read from several flags together.
	Complete func(o *O, fs *FlagSet) error
	// Validate checks the parsed settings after beam.Init and returns the log level.
	Validate func(O) (slog.Level, error)
	// Run does the work and returns the exit code; an error is printed as one line.
	Run func(ctx context.Context, o O, stdout io.Writer) (int, error)
}

func (c Command[O]) flagSet(o *O) *FlagSet { return newFlagSet(c.Name, c.Flags(o), !c.Plain) }

// Parse reads a command line (without the program name) into the defaults, checking syntax only
// (Validate checks the settings): an error names its flag; flag.ErrHelp asks for Usage.
func (c Command[O]) Parse(args []string) (O, error) {
	o := c.Defaults()
	fs := c.flagSet(&o)
	err := fs.parse(args)
	if err == nil && c.Complete != nil {
		err = c.Complete(&o, fs)
	}
	return o, err
}

// Usage writes --help: the synopsis, then the flag table with the defaults' values.
func (c Command[O]) Usage(w io.Writer) error {
	o := c.Defaults()
	return c.flagSet(&o).writeHelp(w, c.Synopsis)
}

// Main runs c with args (without the program name) and returns its exit code.
func Main[O any](c Command[O], args []string, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "%s: %s\n", c.Name, OneLine(err))
		return code
	}
	o, err := c.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.Usage(stdout)
		return 0
	} else if err != nil {
		return fail(ExitUsage, err)
	}
	// As a worker, Init never returns: it comes before our settings are checked.
	beam.Init()
	level, err := c.Validate(o)
	if err != nil {
		return fail(ExitUsage, err)
	}
	// beam.Init installed Beam's default logger; ours replaces it.
	slog.SetDefault(NewLogger(stderr, level))

	// The first signal stops the work gracefully; a second ends the process.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		cancel()
	}()
	code, err := c.Run(ctx, o, stdout)
	if err != nil {
		return fail(code, err)
	}
	return code
}

// OneLine renders an error on one line: the first of joined errors, newlines folded.
func OneLine(err error) string {
	for {
		j, ok := err.(interface{ Unwrap() []error })
		if !ok || len(j.Unwrap()) == 0 {
			break
		}
		err = j.Unwrap()[0]
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}
