package jsonl

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
)

// Row is a snapshot row as JSON, in the jsonl sink's form: hourly_revenue's
// columns, then "writer" when set. Reports render rows through it.
type Row model.Row

// MarshalJSON implements json.Marshaler.
func (r Row) MarshalJSON() ([]byte, error) {
	cols, vals := table.HourlyRevenue.Columns, table.CurrentCodec.Put(nil, model.Row(r))
	if r.Writer != "" {
		cols, vals = append(slices.Clip(cols), table.Column{Name: "writer", Type: table.String}), append(vals, r.Writer)
	}
	buf := bytes.NewBufferString("{")
	table.AppendJSONFields(buf, cols, vals)
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
