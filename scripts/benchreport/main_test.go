package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/vkjobs/vkjobs/sched
BenchmarkEmptyTask/sched-2    	 1000	     100 ns/op	       0 B/op	       0 allocs/op
BenchmarkEmptyTask/waitgroup-2         	 1000	     300 ns/op	      40 B/op	       2 allocs/op
BenchmarkEmptyTask/sched-2    	 1000	     120 ns/op	       0 B/op	       0 allocs/op
BenchmarkEmptyTask/waitgroup-2         	 1000	     360 ns/op	      40 B/op	       2 allocs/op
BenchmarkEmptyTask/sched-2    	 1000	     500 ns/op	       0 B/op	       0 allocs/op
BenchmarkEmptyTask/waitgroup-2         	 1000	     330 ns/op	      40 B/op	       2 allocs/op
BenchmarkParallelFor/1M/serial-2       	       1	  11000000 ns/op	 762.38 MB/s	       0 B/op	       0 allocs/op
BenchmarkParallelFor/1M/sched-2        	       1	   5500000 ns/op	1351.22 MB/s	       0 B/op	       0 allocs/op
PASS
ok  	github.com/vkjobs/vkjobs/sched	17.455s
pkg: github.com/vkjobs/vkjobs/render
BenchmarkMergeSort/merge-n-sort-2         	       1	   5064975 ns/op	        50.65 ns/packet	       0 B/op	       0 allocs/op
BenchmarkMergeSort/SortStableFunc-2       	       1	  23968244 ns/op	       239.7 ns/packet	       0 B/op	       0 allocs/op
`

func TestBlock(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 6 {
		t.Fatalf("%d results, want 6", len(res))
	}
	got := block("Machine: test", res)
	for _, want := range []string{
		"Machine: test\n",
		"### github.com/vkjobs/vkjobs/sched\n",
		"`EmptyTask`, 3 runs each:",
		"| sched | 120 | 0 | 1.00x |",     // median of 100, 120, 500
		"| waitgroup | 330 | 2 | 2.75x |", // 330 / 120
		"`ParallelFor/1M`, 1 run:",
		"| serial | 11000000 | 0 | 2.00x |", // ratio to sched, not to the first
		"| median ns/packet |",
		"| SortStableFunc | 23968244 | 240 | 0 | 4.73x |", // ratio to the first variant
	} {
		if !strings.Contains(got, want) {
			t.Errorf("block lacks %q:\n%s", want, got)
		}
	}
}

func TestSpliceKeepsSections(t *testing.T) {
	md := "# Benchmarks\n\nThe block between `" + beginMarker + "` and `" + endMarker + "` is generated.\n\n" + beginMarker + "\nold figures\n" + endMarker + "\n\n<!-- begin sched -->\n## sched\nhand-written\n<!-- end sched -->\n"
	out, err := splice([]byte(md), "new figures\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nThe block between `" + beginMarker + "` and `" + endMarker + "` is generated.\n\n" + beginMarker + "\nnew figures\n" + endMarker + "\n\n<!-- begin sched -->\n## sched\nhand-written\n<!-- end sched -->\n"
	if string(out) != want {
		t.Errorf("splice:\n%s\nwant:\n%s", out, want)
	}
	// Regenerating again changes nothing else.
	out2, err := splice(out, "new figures\n")
	if err != nil || string(out2) != want {
		t.Errorf("second splice: %v\n%s", err, out2)
	}
}

func TestSpliceCreatesAndRefuses(t *testing.T) {
	out, err := splice(nil, "x\n")
	if err != nil || string(out) != "# Benchmarks\n\n"+beginMarker+"\nx\n"+endMarker+"\n" {
		t.Errorf("new file: %v\n%q", err, out)
	}
	out, err = splice([]byte("# Benchmarks\n\n<!-- begin anim -->\na\n<!-- end anim -->\n"), "x\n")
	if err != nil || !strings.HasSuffix(string(out), "<!-- end anim -->\n\n"+beginMarker+"\nx\n"+endMarker+"\n") {
		t.Errorf("append: %v\n%q", err, out)
	}
	for _, bad := range []string{
		beginMarker + "\n",
		beginMarker + "\n" + endMarker + "\n" + beginMarker + "\n" + endMarker + "\n",
		endMarker + "\n" + beginMarker + "\n",
	} {
		if _, err := splice([]byte(bad), "x\n"); err == nil {
			t.Errorf("splice accepted %q", bad)
		}
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in, meta, md := filepath.Join(dir, "b.out"), filepath.Join(dir, "meta.md"), filepath.Join(dir, "BENCHMARKS.md")
	os.WriteFile(in, []byte(sample), 0o644)
	os.WriteFile(meta, []byte("Machine: test\n"), 0o644)
	if err := run(in, meta, md); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(md)
	if !strings.HasPrefix(string(b), "# Benchmarks\n\n"+beginMarker+"\nMachine: test\n") {
		t.Errorf("BENCHMARKS.md:\n%s", b)
	}
	os.WriteFile(in, []byte("PASS\n"), 0o644)
	if err := run(in, meta, md); err == nil || !strings.Contains(err.Error(), "no benchmark results") {
		t.Errorf("empty input: %v", err)
	}
}
