package main

// The trace Perfetto opens after `crowd -offload gpu|auto
// -trace FILE`, checked twice: by the project's trace.CheckChrome and by
// an independent reading written here, as a strict viewer would read it
// (float64 microseconds, no tolerance).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/trace"
)

func TestTraceGPUAndAutoValid(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	dir := t.TempDir()
	for _, off := range []string{"gpu", "auto"} {
		tr := filepath.Join(dir, off+".json")
		_, out := demo(t, "-count", "200", "-frames", "12", "-size", "160x120", "-offload", off, "-trace", tr, "-out", filepath.Join(dir, off+".png"))
		if !strings.Contains(out, tr) {
			t.Errorf("-offload %s: the run does not say it wrote %s:\n%s", off, tr, out)
		}
		data, err := os.ReadFile(tr)
		if err != nil {
			t.Fatalf("-offload %s: %v", off, err)
		}
		if err := trace.CheckChrome(bytes.NewReader(data)); err != nil {
			t.Errorf("-offload %s: trace.CheckChrome: %v", off, err)
		}
		for _, p := range strictTraceProblems(data) {
			t.Errorf("-offload %s: %s", off, p)
		}
	}
}

// strictTraceProblems reads a Chrome trace on its own and lists what a
// strict viewer would object to: not JSON; events without ph, pid, tid or
// (other than metadata) ts; negative times or durations; complete slices
// that do not nest on their track when ts + dur is added in float64;
// slices of a track out of time order; B/E pairs that do not balance;
// flow starts without their finish or finishing before they start; a
// track with slices but no thread_name.
func strictTraceProblems(data []byte) []string {
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	if len(doc.TraceEvents) == 0 {
		return []string{"no events"}
	}
	var probs []string
	bad := func(format string, args ...any) {
		if len(probs) < 20 {
			probs = append(probs, fmt.Sprintf(format, args...))
		}
	}
	num := func(e map[string]any, k string) (float64, bool) {
		v, ok := e[k].(float64)
		return v, ok
	}
	type span struct {
		a, b float64
		name string
	}
	type key struct{ pid, tid float64 }
	tracks := map[key][]span{}
	lastTs := map[key]float64{}
	depth := map[key]int{}
	named := map[key]bool{}
	flows := map[string][2]float64{} // id -> s ts, f ts (NaN-free: -1 when absent)
	for i, e := range doc.TraceEvents {
		ph, _ := e["ph"].(string)
		pid, okp := num(e, "pid")
		tid, okt := num(e, "tid")
		if ph == "" || !okp || (!okt && ph != "M") {
			bad("event %d (%v) lacks ph, pid or tid", i, e["name"])
			continue
		}
		k := key{pid, tid}
		if ph == "M" {
			if e["name"] == "thread_name" {
				named[k] = true
			}
			continue
		}
		ts, ok := num(e, "ts")
		if !ok || ts < 0 {
			bad("event %d %q (%s) has no or a negative ts", i, e["name"], ph)
			continue
		}
		switch ph {
		case "X":
			dur, ok := num(e, "dur")
			if !ok || dur < 0 {
				bad("X event %q at %v has no or a negative dur", e["name"], ts)
				continue
			}
			if ts < lastTs[k] {
				bad("pid %v tid %v: X %q at %v comes after a slice at %v", pid, tid, e["name"], ts, lastTs[k])
			}
			lastTs[k] = ts
			tracks[k] = append(tracks[k], span{ts, ts + dur, fmt.Sprint(e["name"])})
		case "B":
			depth[k]++
		case "E":
			if depth[k]--; depth[k] < 0 {
				bad("pid %v tid %v: E without B at %v", pid, tid, ts)
			}
		case "s", "f":
			id := fmt.Sprint(e["id"])
			f, ok := flows[id]
			if !ok {
				f = [2]float64{-1, -1}
			}
			if ph == "s" {
				f[0] = ts
			} else {
				f[1] = ts
			}
			flows[id] = f
		}
	}
	for k, n := range depth {
		if n != 0 {
			bad("pid %v tid %v: %d B events without E", k.pid, k.tid, n)
		}
	}
	for id, f := range flows {
		if f[0] < 0 || f[1] < 0 || f[1] < f[0] {
			bad("flow %s: start %v, finish %v", id, f[0], f[1])
		}
	}
	for k, ss := range tracks {
		if !named[k] {
			bad("pid %v tid %v has %d slices but no thread_name", k.pid, k.tid, len(ss))
		}
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].a < ss[j].a || ss[i].a == ss[j].a && ss[i].b > ss[j].b })
		var open []span
		for _, s := range ss {
			for len(open) > 0 && open[len(open)-1].b <= s.a {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && s.b > open[len(open)-1].b {
				o := open[len(open)-1]
				bad("pid %v tid %v: %q [%v, %v) starts inside %q [%v, %v) and ends after it", k.pid, k.tid, s.name, s.a, s.b, o.name, o.a, o.b)
				continue
			}
			open = append(open, s)
		}
	}
	return probs
}
