// Command advise derives the stream's settings from a raw log's measured delays: what each
// candidate would send to LATE or too late, and the smallest settings meeting the targets.
//
//	go run ./cmd/advise --source=PATH [--arrival-field=received_at] [--dimensions=..] [--target-late-share=1%] [--target-ontime=15m] [--report=advice.html]
//
// Exit codes: 0 the recommendation meets every target, 1 no candidate does,
// 2 a bad flag or an unreadable source. Everything lives in package advise.
package main

import (
	"os"

	"github.com/revenue-stream/hourly/app/advise"
)

func main() { os.Exit(advise.Main(os.Args[1:], os.Stdout, os.Stderr)) }
