package sinks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/revenue-stream/hourly/model"
)

// The JSON form of the table contract: one object per row, columns in order,
// times and money as strings, as in SQLite.

// appendJSONFields appends `"name":value` for each column, comma-separated.
func appendJSONFields(buf *bytes.Buffer, cols []Column, vals []any) error {
	for i, c := range cols {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := appendJSONString(buf, c.Name); err != nil {
			return err
		}
		buf.WriteByte(':')
		v := vals[i]
		if v == nil {
			buf.WriteString("null")
			continue
		}
		var err error
		if c.Type == Int64 {
			buf.WriteString(strconv.FormatInt(v.(int64), 10))
		} else {
			err = appendJSONString(buf, text(c, v).(string))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

// appendJSONString appends s as a JSON string without HTML escaping, so
// payloads stay readable.
func appendJSONString(buf *bytes.Buffer, s string) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// encodeJSONLine appends a record as one JSON line of its table.
func encodeJSONLine[T any](buf *bytes.Buffer, c codec[T], v T) error {
	buf.WriteByte('{')
	if err := appendJSONFields(buf, c.t.Columns, c.put(nil, v)); err != nil {
		return err
	}
	buf.WriteString("}\n")
	return nil
}

// decodeJSONLine reads a JSON object of every column into a record.
func decodeJSONLine[T any](c codec[T], line []byte) (T, error) {
	var zero T
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return zero, err
	}
	vals := make([]any, len(c.t.Columns))
	for i, col := range c.t.Columns {
		raw, ok := fields[col.Name]
		if !ok {
			return zero, fmt.Errorf("%s: no %s", c.t.Name, col.Name)
		}
		if col.Nullable && string(raw) == "null" {
			continue
		}
		var err error
		if col.Type == Int64 {
			var n int64
			err = json.Unmarshal(raw, &n)
			vals[i] = n
		} else {
			var s string
			if err = json.Unmarshal(raw, &s); err == nil {
				vals[i], err = parseText(col, s)
			}
		}
		if err != nil {
			return zero, fmt.Errorf("%s.%s: %w", c.t.Name, col.Name, err)
		}
	}
	return c.get(vals)
}

// RowJSON is a snapshot row as JSON: hourly_revenue's columns, then "writer"
// when set. Reports render rows through it.
type RowJSON model.Row

// MarshalJSON implements json.Marshaler.
func (r RowJSON) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	if err := appendJSONFields(&buf, HourlyRevenue.Columns, currentCodec.put(nil, model.Row(r))); err != nil {
		return nil, err
	}
	if r.Writer != "" {
		buf.WriteByte(',')
		if err := appendJSONFields(&buf, []Column{{Name: "writer", Type: String}}, []any{r.Writer}); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a row RowJSON wrote (a JSON run report read back).
func (r *RowJSON) UnmarshalJSON(data []byte) error {
	row, err := decodeJSONLine(currentCodec, data)
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
	*r = RowJSON(row)
	return nil
}
