package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const module = "github.com/vkjobs/vkjobs"

// sample is three rounds: the same lines three times over, as
// scripts/benchmarks.sh appends them.
const sample = `goos: linux
pkg: github.com/vkjobs/vkjobs/sched
BenchmarkEmptyTask/sched-2    	 1000	     100 ns/op	       0 B/op	       0 allocs/op
BenchmarkEmptyTask/waitgroup-2         	 1000	     300 ns/op	      40 B/op	       2 allocs/op
BenchmarkParallelFor/1M/serial-2       	       1	  11000000 ns/op	 762.38 MB/s	       0 B/op	       0 allocs/op
BenchmarkParallelFor/1M/sched-2        	       1	   5500000 ns/op	1351.22 MB/s	       0 B/op	       0 allocs/op
BenchmarkPeersFib/sched/p1-2    	       1	  10000 ns/op	  50 ns/task
BenchmarkPeersFib/waitgroup/p1-2    	       1	  90000 ns/op	  450 ns/task
PASS
ok  	github.com/vkjobs/vkjobs/sched	17.455s
pkg: github.com/vkjobs/vkjobs/sched
BenchmarkEmptyTask/sched-2    	 1000	     120 ns/op	       0 B/op	       0 allocs/op
BenchmarkEmptyTask/waitgroup-2         	 1000	     360 ns/op	      40 B/op	       2 allocs/op
BenchmarkParallelFor/1M/serial-2       	       1	  11000000 ns/op	 762.38 MB/s	       0 B/op	       0 allocs/op
BenchmarkParallelFor/1M/sched-2        	       1	   5500000 ns/op	1351.22 MB/s	       0 B/op	       0 allocs/op
BenchmarkPeersFib/sched/p1-2    	       1	  10000 ns/op	  50 ns/task
BenchmarkPeersFib/waitgroup/p1-2    	       1	  90000 ns/op	  450 ns/task
pkg: github.com/vkjobs/vkjobs/sched
BenchmarkEmptyTask/sched-2    	 1000	     500 ns/op	       0 B/op	       0 allocs/op
BenchmarkEmptyTask/waitgroup-2         	 1000	     330 ns/op	      40 B/op	       2 allocs/op
BenchmarkParallelFor/1M/serial-2       	       1	  11000000 ns/op	 762.38 MB/s	       0 B/op	       0 allocs/op
BenchmarkParallelFor/1M/sched-2        	       1	   5500000 ns/op	1351.22 MB/s	       0 B/op	       0 allocs/op
BenchmarkPeersFib/sched/p1-2    	       1	  10000 ns/op	  50 ns/task
BenchmarkPeersFib/waitgroup/p1-2    	       1	  90000 ns/op	  450 ns/task
BenchmarkPeersEmptyMix-2    	      50	  3000000 ns/op	  1.40 sched/chanpool	  0.90 sched/pond
BenchmarkPeersParallelForMix/64K-2    	      50	  300000 ns/op	  0.98 sched/goroutines
pkg: github.com/vkjobs/vkjobs/render
BenchmarkMergeSort/merge-n-sort-2         	       1	   5064975 ns/op	        50.65 ns/packet	       0 B/op	       0 allocs/op
BenchmarkMergeSort/SortStableFunc-2       	       1	  23968244 ns/op	       239.7 ns/packet	       0 B/op	       0 allocs/op
pkg: github.com/vkjobs/vkjobs/anim/offline
BenchmarkSample/cm=0.01/seek/goroutines=1-2  	 100	 8761365 ns/op	 1905 cpu-ns/bone	 4416 ns/bone	 0 B/op	 0 allocs/op
BenchmarkSample/uniform-cm=0.01/seek/goroutines=1-2  	 100	 82109 ns/op	 19.05 cpu-ns/bone	 41.39 ns/bone	 0 B/op	 0 allocs/op
`

func find(t *testing.T, bs []Benchmark, group string) *Benchmark {
	t.Helper()
	for i := range bs {
		if bs[i].Group == group {
			return &bs[i]
		}
	}
	t.Fatalf("no group %q", group)
	return nil
}

func variant(t *testing.T, b *Benchmark, name string) *Variant {
	t.Helper()
	for i := range b.Variants {
		if b.Variants[i].Name == name {
			return &b.Variants[i]
		}
	}
	t.Fatalf("%s: no variant %q", b.Group, name)
	return nil
}

func TestIsRatio(t *testing.T) {
	for u, want := range map[string]bool{"sched/chanpool": true, "p1/p2": true, "dqs/lbs": true, "machine-1/2": true,
		"sched-ns/task": false, "ns/op": false, "allocs/op": false, "MB/s": false, "lbs-ns/vert": false, "cpu-ns/bone": false} {
		if isRatio(u) != want {
			t.Errorf("isRatio(%q) = %v", u, !want)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct{ name, group, variant string }{
		{"EmptyTask/sched", "EmptyTask", "sched"},
		{"ParallelFor/1M/sched", "ParallelFor/1M", "sched"},
		{"PeersFib/waitgroup/p2", "PeersFib/p2", "waitgroup"},
		{"PeersFib/sched-inplace/p1", "PeersFib/p1", "sched-inplace"},
		{"TaskflowShapes/wavefront/graph", "TaskflowShapes/wavefront", "graph"},
		{"GraphReplay/dag/graph", "GraphReplay/dag", "graph"},
		{"Sample/uniform-cm=0.01/seek/goroutines=1", "Sample/seek/goroutines=1", "uniform-cm=0.01"},
		{"Lone", "Lone", ""},
		{"PeersParallelForMix/1M", "PeersParallelForMix/1M", ""},
		{"PeersEmptyMix", "PeersEmptyMix", ""},
	} {
		g, v, _ := split(c.name)
		if g != c.group || v != c.variant {
			t.Errorf("split(%q) = %q, %q; want %q, %q", c.name, g, v, c.group, c.variant)
		}
	}
}

func TestGroup(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	bs := group(module, rs)
	if len(bs) != 7 {
		t.Fatalf("%d groups, want 7: %+v", len(bs), bs)
	}
	if m := find(t, bs, "PeersParallelForMix/64K"); len(m.Variants) != 1 || m.Variants[0].metric("sched/goroutines").Median != 0.98 {
		t.Errorf("PeersParallelForMix/64K: %+v", m)
	}
	e := find(t, bs, "EmptyTask")
	if e.Area != "sched" || e.Reference != "sched" || e.RatioUnit != "ns/op" {
		t.Errorf("EmptyTask: %+v", e)
	}
	s := variant(t, e, "sched").metric("ns/op")
	if s.Spread != (Spread{Median: 120, Min: 100, Max: 500}) || len(s.Values) != 3 {
		t.Errorf("sched ns/op: %+v", s)
	}
	// Per round: 300/100, 360/120, 330/500.
	if r := variant(t, e, "waitgroup").Ratio; r == nil || r.Median != 3 || r.Min != 0.66 || r.Max != 3 {
		t.Errorf("waitgroup ratio: %+v", r)
	}
	if r := variant(t, find(t, bs, "ParallelFor/1M"), "serial").Ratio; r == nil || r.Median != 2 {
		t.Errorf("serial / sched: %+v", r) // to sched, not to the first
	}
	if f := find(t, bs, "PeersFib/p1"); f.Reference != "sched" || variant(t, f, "waitgroup").Ratio.Median != 9 {
		t.Errorf("PeersFib/p1: %+v", f)
	}
	if m := find(t, bs, "MergeSort"); m.Area != "render" || m.Reference != "merge-n-sort" {
		t.Errorf("MergeSort: %+v", m)
	}
	a := find(t, bs, "Sample/seek/goroutines=1")
	if a.Area != "anim" || a.Reference != "cm=0.01" || a.RatioUnit != "cpu-ns/bone" {
		t.Errorf("Sample: %+v", a)
	}
	if r := variant(t, a, "uniform-cm=0.01").Ratio; r == nil || r.Median != 0.01 {
		t.Errorf("uniform / curve: %+v", r)
	}
}

func testResults(t *testing.T) *Results {
	t.Helper()
	rs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	r := &Results{Schema: schemaVersion, Commit: "0123456789abcdef0123", Date: time.Date(2026, 11, 27, 19, 30, 0, 0, time.UTC),
		Seconds: 200, Machine: Machine{CPU: "Test CPU", LogicalCPUs: 2, MemoryGiB: 23.5, Kernel: "Linux 6.18"},
		Go: "go1.26.8 linux/amd64", LoadBefore: []float64{1, 2, 3}, LoadAfter: []float64{4, 5, 6},
		Command: "make benchmarks COUNT=3", Count: 3, Benchmarks: group(module, rs)}
	st, err := parseSet("./sched/ 200ms rounds BenchmarkEmptyTask,BenchmarkTaskflowShapes")
	if err != nil {
		t.Fatal(err)
	}
	st.missing(module, r.Benchmarks)
	r.Sets = []Set{st}
	return r
}

func TestResultsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	r := testResults(t)
	if want := []string{"BenchmarkTaskflowShapes"}; !reflect.DeepEqual(r.Sets[0].Missing, want) {
		t.Errorf("missing %v, want %v", r.Sets[0].Missing, want)
	}
	p, err := writeResults(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p) != "2026-11-27T193000Z-0123456789ab.json" {
		t.Errorf("file name %s", p)
	}
	back, err := readResults(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", back, r)
	}
	// Another schema is refused, not misread.
	os.WriteFile(p, []byte(`{"schema": 99}`), 0o644)
	if _, err := readResults(p); err == nil {
		t.Error("schema 99 accepted")
	}
}

func TestRecord(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "raw.txt")
	os.WriteFile(in, []byte(sample), 0o644)
	out := filepath.Join(dir, "results")
	err := record([]string{"-in", in, "-dir", out, "-commit", "abc", "-start", "2026-11-27T19:00:00Z",
		"-load-before", "1.5 2 3", "-load-after", "4 5 6", "-count", "3", "-dirty", "-dirty-path", "sched/x.go",
		"-set", "./sched/ 200ms rounds BenchmarkEmptyTask,BenchmarkNope", "-set", "./anim/offline/ 300ms once BenchmarkSample/^(cm=0.01|uniform-cm=0.01)$/^seek$"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := readResults(filepath.Join(out, "2026-11-27T190000Z-abc-dirty.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Dirty || r.DirtyPaths[0] != "sched/x.go" || r.LoadBefore[0] != 1.5 || r.Count != 3 || r.Machine.LogicalCPUs == 0 {
		t.Errorf("results: %+v", r)
	}
	if len(r.Sets) != 2 || !reflect.DeepEqual(r.Sets[0].Missing, []string{"BenchmarkNope"}) || r.Sets[1].Missing != nil {
		t.Errorf("sets: %+v", r.Sets)
	}
	os.WriteFile(in, []byte("PASS\n"), 0o644)
	if err := record([]string{"-in", in, "-dir", out, "-commit", "abc"}); err == nil || !strings.Contains(err.Error(), "no benchmark results") {
		t.Errorf("empty input: %v", err)
	}
}

const template = "# Benchmarks\n\nThe block between `<!-- begin generated run -->` and its end is generated.\n\n" +
	"<!-- begin generated run -->\nold\n<!-- end generated run -->\n\n" +
	"## sched\n\nMethod: hand-written.\n\n<!-- begin generated sched -->\nold sched\n<!-- end generated sched -->\n\n" +
	"## kbench\n\nhand-written, kept\n"

func TestRenderFromLatestClean(t *testing.T) {
	dir := t.TempDir()
	clean := testResults(t)
	if _, err := writeResults(dir, clean); err != nil {
		t.Fatal(err)
	}
	// A later dirty run must not be used.
	dirty := testResults(t)
	dirty.Dirty, dirty.Date, dirty.Commit = true, clean.Date.Add(time.Hour), "feedfacefeedface"
	if _, err := writeResults(dir, dirty); err != nil {
		t.Fatal(err)
	}
	// An earlier clean run must not be used either.
	early := testResults(t)
	early.Date, early.Commit = clean.Date.Add(-time.Hour), "0000000000000000"
	if _, err := writeResults(dir, early); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "BENCHMARKS.md")
	os.WriteFile(md, []byte(template), 0o644)
	if err := writeMD(md, dir, ""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(md)
	got := string(b)
	for _, want := range []string{
		"| commit | 0123456789ab |",
		"| load average (1, 5, 15 min) | 1.00 2.00 3.00 before, 4.00 5.00 6.00 after |",
		"| not in this commit | BenchmarkTaskflowShapes |",
		"Method: hand-written.\n\n<!-- begin generated sched -->\n`BenchmarkEmptyTask` in ./sched/, 3 runs:",
		"| variant | ns/op: median (min-max) | allocs/op | time / sched: median (min-max) |",
		"| sched | 120 (100-500) | 0 | 1.00x |",
		"| waitgroup | 330 (300-360) | 2 | 3.00x (0.66-3.00) |",
		"| case | variant | ns/op: median (min-max) | allocs/op | time / sched: median (min-max) |",
		"| 1M | serial | 11000000 | 0 | 2.00x |",
		"`BenchmarkPeersFib` in ./sched/, 3 runs:",
		"| case | variant | ns/task: median (min-max) | allocs/op | time / sched: median (min-max) |",
		"| p1 | waitgroup | 450 | - | 9.00x |",
		"## kbench\n\nhand-written, kept\n",
		"<!-- begin generated render -->\n`BenchmarkMergeSort` in ./render/, 1 run:",
		"`BenchmarkSample` in ./anim/offline/, 1 run:",
		"| case | variant | cpu-ns/bone: median (min-max) | allocs/op | cpu-ns/bone / cm=0.01: median (min-max) |",
		"| seek/goroutines=1 | uniform-cm=0.01 | 19.1 | 0 | 0.010x |",
		"| benchmark | ratio | median (min-max) |\n|---|---|---:|\n| PeersEmptyMix | sched/chanpool | 1.40 |\n| PeersEmptyMix | sched/pond | 0.90 |\n| PeersParallelForMix/64K | sched/goroutines | 0.98 |\n<!-- end generated sched -->",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("BENCHMARKS.md lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "feedface") || strings.Contains(got, "old sched") {
		t.Errorf("dirty run or old block in BENCHMARKS.md:\n%s", got)
	}
	// Regenerating again changes nothing.
	if err := writeMD(md, dir, ""); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(md); string(b2) != got {
		t.Errorf("second run changed the file:\n%s", b2)
	}
}

func TestRefusesDirtyResults(t *testing.T) {
	dir := t.TempDir()
	r := testResults(t)
	r.Dirty = true
	p, err := writeResults(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "BENCHMARKS.md")
	os.WriteFile(md, []byte(template), 0o644)
	if err := writeMD(md, dir, p); !errors.Is(err, errDirty) {
		t.Errorf("dirty results file named: %v", err)
	}
	if b, _ := os.ReadFile(md); string(b) != template {
		t.Errorf("BENCHMARKS.md changed after a refusal:\n%s", b)
	}
	// With only dirty files, the blocks say there is no clean run.
	if err := writeMD(md, dir, ""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(md)
	if strings.Contains(string(b), "0123456789ab") || strings.Count(string(b), noRun) != 2 {
		t.Errorf("dirty figures used:\n%s", b)
	}
}

func TestSpliceKeepsSections(t *testing.T) {
	md := "# Benchmarks\n\nThe block between `" + beginMarker("run") + "` and `" + endMarker("run") + "` is generated.\n\n" + beginMarker("run") + "\nold figures\n" + endMarker("run") + "\n\n<!-- begin sched -->\n## sched\nhand-written\n<!-- end sched -->\n"
	out, err := splice([]byte(md), "run", "new figures\n")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(md, "old figures", "new figures", 1)
	if string(out) != want {
		t.Errorf("splice:\n%s\nwant:\n%s", out, want)
	}
	out2, err := splice(out, "run", "new figures\n")
	if err != nil || string(out2) != want {
		t.Errorf("second splice: %v\n%s", err, out2)
	}
}

func TestSpliceAppendsAndRefuses(t *testing.T) {
	out, err := splice([]byte("# Benchmarks\n\n<!-- begin anim -->\na\n<!-- end anim -->\n"), "anim", "x\n")
	if err != nil || !strings.HasSuffix(string(out), "<!-- end anim -->\n\n"+beginMarker("anim")+"\nx\n"+endMarker("anim")+"\n") {
		t.Errorf("append: %v\n%q", err, out)
	}
	b, e := beginMarker("run")+"\n", endMarker("run")+"\n"
	for _, bad := range []string{b, b + e + b + e, e + b} {
		if _, err := splice([]byte(bad), "run", "x\n"); err == nil {
			t.Errorf("splice accepted %q", bad)
		}
	}
	if _, err := render([]byte(b+e+b+e), "", nil); err == nil {
		t.Error("render accepted a block twice")
	}
}
