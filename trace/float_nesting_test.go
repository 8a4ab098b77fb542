package trace

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestChromeNestsInFloats: a reader of the JSON puts a slice's end at
// ts + dur added in float64. Two GPU tasks back to back (taken from a
// crowd run with -offload gpu) end and begin at the same nanosecond, but
// 1118082.671 + 422.195 is 1118504.8660000002, one float step after the
// next one's ts: on one track that is a partial overlap. The writer must
// decide lanes on the values as read, so that on every track each slice
// starts at or after the end of the slices it follows, or ends inside
// the one it starts in, in float64 arithmetic with no tolerance.
func TestChromeNestsInFloats(t *testing.T) {
	rec := New(1, 64)
	gpu := func(task uint32, start, stop int64) {
		rec.TaskRan(&sched.RunEvent{Thread: -1, Where: sched.GPU, Task: sched.TaskID(task), Kernel: 1, Start: start, Stop: stop})
	}
	gpu(1, 1118082671, 1118504866)
	gpu(2, 1118504866, 1118927061)
	gpu(3, 1119349256, 1119771451)
	gpu(4, 1119771451, 1120193646)
	// A child that ends with its parent, both read back in floats.
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 10, Start: 804220547, Stop: 805883864})
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 11, Start: 805000001, Stop: 805883864})
	var buf bytes.Buffer
	if err := rec.WriteChrome(&buf); err != nil {
		t.Fatal(err)
	}
	if err := CheckChrome(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string   `json:"name"`
			Ph   string   `json:"ph"`
			Ts   float64  `json:"ts"`
			Dur  *float64 `json:"dur"`
			Tid  int      `json:"tid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	type span struct{ a, b float64 }
	tracks := map[int][]span{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			tracks[e.Tid] = append(tracks[e.Tid], span{e.Ts, e.Ts + *e.Dur})
		}
	}
	for tid, ss := range tracks {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].a < ss[j].a || ss[i].a == ss[j].a && ss[i].b > ss[j].b })
		var open []span
		for _, s := range ss {
			for len(open) > 0 && open[len(open)-1].b <= s.a {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && s.b > open[len(open)-1].b {
				t.Errorf("tid %d: [%v, %v) starts inside [%v, %v) and ends after it, as read in floats", tid, s.a, s.b, open[len(open)-1].a, open[len(open)-1].b)
			}
			open = append(open, s)
		}
	}
}
