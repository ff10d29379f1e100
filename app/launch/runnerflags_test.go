package launch

import (
	"strings"
	"testing"
)

// TestRefusesARunnerBeamDoesNotRegister: Beam's registry takes a --runner only as spelled
// (beam.Run exits the process with log.Exitf for any other), while the capability table read it
// ignoring case and took an unknown name for a portable job server: a typo or a capital passed
// every check, the launcher set up its work, then died at submission with exit 1. It is one
// line, exit 2, before any work.
func TestRefusesARunnerBeamDoesNotRegister(t *testing.T) {
	dir := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"))
	reset := runnerFlags(t)
	for _, runner := range []string{"flnk", "Flink", "Prism", "DATAFLOW", "samza"} {
		reset()
		args := []string{"--runner=" + runner, "--shared-filesystem", "--source=" + dir}
		o, err := Parse(args)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err == nil {
			t.Errorf("launch %s: accepted; Beam registers no runner %q, so the submission would exit the process", strings.Join(args, " "), runner)
			continue
		}
		reset()
		wantRefusedBeforeWork(t, args, "launch: --runner="+runner+": not a runner Beam registers under that name: want prism, flink, universal or dataflow (exactly so spelled; also PrismRunner, FlinkRunner, PortableRunner, portable, DataflowRunner)")
	}
	// Every spelling Beam registers passes this check.
	for _, runner := range []string{"prism", "PrismRunner", "flink", "FlinkRunner", "universal", "portable", "PortableRunner"} {
		reset()
		o, err := Parse([]string{"--runner=" + runner, "--shared-filesystem", "--source=" + dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("--runner=%s: %v", runner, err)
		}
	}
}

// TestRefusesDurationOnDataflow: --duration ends a run with a graceful stop, which the launcher
// cannot do on Dataflow (stopRefusal): it submitted, waited the duration, then exited 1 leaving the
// job running. It is one line, exit 2, before any work.
func TestRefusesDurationOnDataflow(t *testing.T) {
	dir := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"))
	reset := runnerFlags(t)
	for _, runner := range []string{"dataflow", "DataflowRunner"} {
		reset()
		args := []string{"--runner=" + runner, "--sink=bigquery:my-project.d", "--source=" + dir, "--shared-filesystem", "--follow", "--duration=1h"}
		o, err := Parse(args)
		if err != nil {
			t.Fatal(err)
		}
		err = o.Validate()
		if err == nil {
			t.Errorf("launch %s: accepted; the launcher cannot stop a Dataflow job when the duration is up", strings.Join(args, " "))
			continue
		}
		want := "--duration stops the run gracefully, which the launcher cannot do on --runner=" + runner + ": the launcher cannot stop a Dataflow job: cancel it with `gcloud dataflow jobs cancel` (not drain, which closes every open window early; docs/restart.md)"
		if got := err.Error(); got != want {
			t.Errorf("launch %s:\n got %q\nwant %q", strings.Join(args, " "), got, want)
		}
	}
}
