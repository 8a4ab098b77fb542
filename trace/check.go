package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// CheckChrome reads a trace in the Chrome trace event format (the JSON
// object form WriteChrome writes, or a bare array of events) and returns
// an error if two complete ("X") slices on one (pid, tid) track partly
// overlap, which the format forbids and Perfetto answers by dropping
// slices. Times are compared in whole nanoseconds (the microsecond floats
// rounded), so float noise in a conforming trace is not an overlap. The
// error names both slices and how many overlaps there are.
func CheckChrome(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	type event struct {
		Name string   `json:"name"`
		Ph   string   `json:"ph"`
		Ts   float64  `json:"ts"`
		Dur  *float64 `json:"dur"`
		Pid  int      `json:"pid"`
		Tid  int      `json:"tid"`
	}
	var doc struct {
		TraceEvents *[]event `json:"traceEvents"`
	}
	var events []event
	// JSON may have whitespace before its value: a pretty-printed or
	// hand-edited array is still the array form. Anything else than an
	// array or an object with a traceEvents array (null, {}, a number) is
	// refused: passing it would pass a trace with nothing in it.
	switch v := bytes.TrimLeft(data, " \t\r\n"); {
	case len(v) > 0 && v[0] == '[':
		err = json.Unmarshal(data, &events)
	case len(v) > 0 && v[0] == '{':
		if err = json.Unmarshal(data, &doc); err == nil {
			if doc.TraceEvents == nil {
				err = errors.New(`the object has no "traceEvents" array`)
			} else {
				events = *doc.TraceEvents
			}
		}
	default:
		if err = json.Unmarshal(data, &events); err == nil {
			err = errors.New("neither an array of events nor an object")
		}
	}
	if err != nil {
		return fmt.Errorf("trace: not a Chrome trace: %w", err)
	}
	type slice struct {
		name       string
		start, end int64
	}
	tracks := map[[2]int][]slice{}
	for _, e := range events {
		if e.Ph != "X" {
			continue
		}
		if e.Dur == nil || *e.Dur < 0 {
			return fmt.Errorf("trace: X event %q at %v µs on pid %d tid %d has no or a negative duration", e.Name, e.Ts, e.Pid, e.Tid)
		}
		start := int64(math.Round(e.Ts * 1000))
		tracks[[2]int{e.Pid, e.Tid}] = append(tracks[[2]int{e.Pid, e.Tid}], slice{e.Name, start, start + int64(math.Round(*e.Dur*1000))})
	}
	keys := make([][2]int, 0, len(tracks))
	for k := range tracks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	var first error
	bad, total := 0, 0
	for _, k := range keys {
		ss := tracks[k]
		total += len(ss)
		sort.SliceStable(ss, func(i, j int) bool {
			if ss[i].start != ss[j].start {
				return ss[i].start < ss[j].start
			}
			return ss[i].end > ss[j].end
		})
		var open []slice
		for _, s := range ss {
			for len(open) > 0 && open[len(open)-1].end <= s.start {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && s.end > open[len(open)-1].end {
				bad++
				if first == nil {
					o := open[len(open)-1]
					first = fmt.Errorf("pid %d tid %d: slice %q [%.3f, %.3f) µs starts inside %q [%.3f, %.3f) µs and ends after it",
						k[0], k[1], s.name, float64(s.start)/1000, float64(s.end)/1000, o.name, float64(o.start)/1000, float64(o.end)/1000)
				}
				continue // not pushed: count each bad slice once
			}
			open = append(open, s)
		}
	}
	if bad > 0 {
		return fmt.Errorf("trace: %d of %d complete slices partly overlap another on their track (slices on one track must nest); the first: %w", bad, total, first)
	}
	return nil
}
