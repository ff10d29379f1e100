// Command advise derives the stream's settings from a raw log's measured
// delays (issue #28): it replays the log's arrival order per partition with
// the stream's validation, fingerprint, watermark and window rules, and
// prints, for the current settings and candidate values, the share of
// events and revenue each out-of-order bound sends to LATE revisions or too
// late (per partition and segment), when ON_TIME comes, what each allowed
// lateness leaves to reconciliation, what each dedup horizon would count
// twice, what each idle timeout turns late, and the smallest settings that
// meet the targets, as cmd/launch flags.
//
//	go run ./cmd/advise --source=PATH [--arrival-field=received_at] [--dimensions=..] [--target-late-share=1%] [--target-ontime=15m] [--report=advice.html]
//
// Exit codes: 0 the recommendation meets every target, 1 no candidate
// does (the summary names what is missed), 2 a bad flag or an unreadable
// source. It never changes a running job.
//
// Everything it does lives in package advise (advise.Main).
package main

import (
	"os"

	"github.com/revenue-stream/hourly/app/advise"
)

func main() { os.Exit(advise.Main(os.Args[1:], os.Stdout, os.Stderr)) }
