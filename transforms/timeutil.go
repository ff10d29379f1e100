package transforms

import (
	"time"
)

func timeOf(ms int64) time.Time { return time.UnixMilli(ms) }

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
