package jsonl

import (
	"bytes"
	"encoding/json"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
)

// Row is a snapshot row as JSON, in the jsonl sink's form: hourly_revenue's
// columns, then "writer" when set. Reports render rows through it.
type Row model.Row

// MarshalJSON implements json.Marshaler.
func (r Row) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	if err := table.AppendJSONFields(&buf, table.HourlyRevenue.Columns, table.CurrentCodec.Put(nil, model.Row(r))); err != nil {
		return nil, err
	}
	if r.Writer != "" {
		buf.WriteByte(',')
		if err := table.AppendJSONFields(&buf, []table.Column{{Name: "writer", Type: table.String}}, []any{r.Writer}); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a row Row wrote (a JSON run report read back).
func (r *Row) UnmarshalJSON(data []byte) error {
	row, err := table.DecodeJSONLine(table.CurrentCodec, data)
	if err != nil {
		return err
	}
	var w struct {
		Writer string `json:"writer"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	row.Writer = w.Writer
	*r = Row(row)
	return nil
}
