package scenario

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
)

func init() {
	register.Function1x2[[]byte, model.Record, error](decodeRecord)
}

func decodeRecord(b []byte) (model.Record, error) { return coders.DecodeRecord(b) }

// DecodeRecords turns encoded records (coders.EncodeRecord) into records. A
// TestStream carries only types with built-in coders, so scenario tests feed
// records through it as bytes.
func DecodeRecords(s beam.Scope, encoded beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("DecodeRecords"), decodeRecord, encoded)
}
