package oracle_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// Generate a small log and recompute what a bounded replay must end with.
func ExampleReplay() {
	tmp, err := os.MkdirTemp("", "oracle-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	c := gen.Demo()
	c.Events = 2000
	c.MaxLine = 4096 // keeps the oversized line small
	dir := filepath.Join(tmp, "log")
	if _, err := gen.Write(dir, c); err != nil {
		log.Fatal(err)
	}

	s := oracle.DefaultSettings(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	s.Event.MaxLine = c.MaxLine
	res, err := oracle.Replay(dir, s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("conserved:", res.Conserved() == nil)
	fmt.Printf("read=%d counted=%d duplicates=%d conflicts=%d quarantined=%d too_late=%d\n",
		res.Read, res.Counted, res.Duplicates, len(res.Conflicts), len(res.Quarantined), len(res.TooLate))
	fmt.Println("windows:", len(res.Final), "final,", len(res.Distinct), "in the raw log")
	// Output:
	// conserved: true
	// read=2075 counted=1992 duplicates=69 conflicts=2 quarantined=2 too_late=10
	// windows: 45 final, 46 in the raw log
}
