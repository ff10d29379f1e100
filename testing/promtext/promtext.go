// Package promtext parses the Prometheus text exposition format (0.0.4)
// strictly enough to test an endpoint that writes it: every sample belongs
// to a family announced by # TYPE (a histogram's _bucket, _sum and _count,
// a summary's _sum and _count), metric and label names are valid, label
// values are quoted and escaped, values are floats, no series appears
// twice, and a histogram's buckets are cumulative and end in le="+Inf"
// equal to its _count.
package promtext

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Family is one metric family.
type Family struct {
	Name, Type, Help string
	Samples          []Sample
}

// Sample is one line of a family.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Exposition is a parsed scrape, families by name.
type Exposition map[string]*Family

var (
	nameRE  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Parse reads an exposition.
func Parse(r io.Reader) (Exposition, error) {
	e := Exposition{}
	series := map[string]bool{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a comment
			}
			fam := e.family(f[2])
			rest := ""
			if len(f) == 4 {
				rest = f[3]
			}
			if f[1] == "TYPE" {
				if fam.Type != "" || len(fam.Samples) > 0 {
					return nil, fmt.Errorf("line %d: # TYPE %s again, or after its samples", n, f[2])
				}
				switch rest {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					return nil, fmt.Errorf("line %d: bad type %q", n, rest)
				}
				fam.Type = rest
			} else {
				fam.Help = rest
			}
			if !nameRE.MatchString(f[2]) {
				return nil, fmt.Errorf("line %d: bad metric name %q", n, f[2])
			}
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v: %q", n, err, line)
		}
		fam := e.owner(s.Name)
		if fam == nil {
			return nil, fmt.Errorf("line %d: sample %s has no # TYPE", n, s.Name)
		}
		key := seriesKey(s)
		if series[key] {
			return nil, fmt.Errorf("line %d: series %s twice", n, key)
		}
		series[key] = true
		fam.Samples = append(fam.Samples, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, f := range e {
		if f.Type == "" {
			return nil, fmt.Errorf("family %s has # HELP but no # TYPE", f.Name)
		}
		if f.Type == "histogram" {
			if err := checkHistogram(f); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func (e Exposition) family(name string) *Family {
	f := e[name]
	if f == nil {
		f = &Family{Name: name}
		e[name] = f
	}
	return f
}

// owner is the family a sample name belongs to.
func (e Exposition) owner(name string) *Family {
	if f := e[name]; f != nil && f.Type != "" {
		return f
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f := e[base]; f != nil && (f.Type == "histogram" || (f.Type == "summary" && suffix != "_bucket")) {
			return f
		}
	}
	return nil
}

func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.Name = line[:i]
	if !nameRE.MatchString(s.Name) {
		return s, fmt.Errorf("bad metric name %q", s.Name)
	}
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return s, fmt.Errorf("bad labels")
			}
			name := rest[:eq]
			if !labelRE.MatchString(name) {
				return s, fmt.Errorf("bad label name %q", name)
			}
			rest = rest[eq+2:]
			var v strings.Builder
			for {
				if rest == "" {
					return s, fmt.Errorf("unterminated label value")
				}
				c := rest[0]
				rest = rest[1:]
				if c == '"' {
					break
				}
				if c == '\\' {
					if rest == "" {
						return s, fmt.Errorf("bad escape")
					}
					switch rest[0] {
					case '\\', '"':
						v.WriteByte(rest[0])
					case 'n':
						v.WriteByte('\n')
					default:
						return s, fmt.Errorf("bad escape \\%c", rest[0])
					}
					rest = rest[1:]
					continue
				}
				v.WriteByte(c)
			}
			if _, dup := s.Labels[name]; dup {
				return s, fmt.Errorf("label %s twice", name)
			}
			s.Labels[name] = v.String()
			rest = strings.TrimPrefix(rest, ",")
		}
		rest = rest[1:]
	}
	f := strings.Fields(rest)
	if len(f) < 1 || len(f) > 2 || !strings.HasPrefix(rest, " ") {
		return s, fmt.Errorf("want a value and an optional timestamp")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, fmt.Errorf("bad value %q", f[0])
	}
	if len(f) == 2 {
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			return s, fmt.Errorf("bad timestamp %q", f[1])
		}
	}
	s.Value = v
	return s, nil
}

func seriesKey(s Sample) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		parts = append(parts, k+"="+strconv.Quote(s.Labels[k]))
	}
	return s.Name + "{" + strings.Join(parts, ",") + "}"
}

func checkHistogram(f *Family) error {
	prev, prevLe := -1.0, math.Inf(-1)
	var inf, count float64
	hasInf, hasCount, hasSum := false, false, false
	for _, s := range f.Samples {
		switch s.Name {
		case f.Name + "_bucket":
			le, err := strconv.ParseFloat(s.Labels["le"], 64)
			if err != nil {
				return fmt.Errorf("%s: bucket le=%q", f.Name, s.Labels["le"])
			}
			if le <= prevLe || s.Value < prev {
				return fmt.Errorf("%s: buckets not increasing or not cumulative at le=%s", f.Name, s.Labels["le"])
			}
			prev, prevLe = s.Value, le
			if math.IsInf(le, 1) {
				inf, hasInf = s.Value, true
			}
		case f.Name + "_count":
			count, hasCount = s.Value, true
		case f.Name + "_sum":
			hasSum = true
		default:
			return fmt.Errorf("%s: sample %s", f.Name, s.Name)
		}
	}
	if !hasInf || !hasCount || !hasSum || inf != count {
		return fmt.Errorf("%s: want an le=\"+Inf\" bucket equal to _count and a _sum", f.Name)
	}
	return nil
}

// Value returns the value of the sample name with exactly the labels given
// as name, value pairs, and whether there is one.
func (e Exposition) Value(name string, labels ...string) (float64, bool) {
	f := e.owner(name)
	if f == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
sample:
	for _, s := range f.Samples {
		if s.Name != name || len(s.Labels) != len(want) {
			continue
		}
		for k, v := range want {
			if s.Labels[k] != v {
				continue sample
			}
		}
		return s.Value, true
	}
	return 0, false
}
