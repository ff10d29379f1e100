// Command launch runs the hourly revenue job (SPEC §6):
//
//	go run ./cmd/launch                              # the demo: generate ./demo-data once, replay it into revenue.db
//	go run ./cmd/launch --demo=live [--ui=8080]      # live traffic around now: watch EARLY, ON_TIME, LATE, FINAL
//	go run ./cmd/launch --source=PATH                # replay a raw-log folder, then stop
//	go run ./cmd/launch --source=PATH --follow       # keep watching the folder (streaming)
//	go run ./cmd/launch --source=pubsub:projects/P/subscriptions/S [--pubsub-archive=DIR]
//	                                                 # read a subscription (streaming) until SIGINT/SIGTERM
//
// Everything it does lives in package launch; see launch.Usage for the flags.
package main

import (
	"os"

	"github.com/revenue-stream/hourly/app/launch"
)

func main() {
	os.Exit(launch.Main(os.Args[1:], os.Stdout, os.Stderr))
}
