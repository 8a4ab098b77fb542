package trace

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

const kLeaf, kSpawn sched.KernelID = 1, 2

func runGraph(t testing.TB, obs sched.Observer, rec *Recorder) (*sched.Scheduler, sched.TaskID) {
	reg := sched.NewRegistry()
	reg.Register(kLeaf, sched.Kernel{Name: "leaf", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		x := 0
		for i := 0; i < 2000; i++ {
			x += i
		}
		d.Params[7] = uint32(x)
		return nil
	}})
	reg.Register(kSpawn, sched.Kernel{Name: "spawn", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		var ids [4]sched.TaskID
		for i := range ids {
			id, err := c.Add(&sched.Task{Kernel: kLeaf})
			if err != nil {
				return err
			}
			ids[i] = id
		}
		for _, id := range ids {
			if err := c.Wait(id); err != nil { // nested scopes on this thread
				return err
			}
		}
		return nil
	}})
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 2, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.RegisterThread("main")
	if rec != nil {
		rec.SetKernelNames(NamesFromRegistry(reg))
		rec.Frame(0)
	}
	var last sched.TaskID
	for f := 0; f < 3; f++ {
		if rec != nil && f > 0 {
			rec.Frame(f)
		}
		root, _ := m.Create(&sched.Task{})
		a, _ := m.Add(&sched.Task{Kernel: kSpawn, Parent: root})
		last, _ = m.Add(&sched.Task{Kernel: kLeaf, Parent: root, Dependency: a})
		m.Run(root)
		if err := m.Wait(root); err != nil {
			t.Fatal(err)
		}
	}
	return s, last
}

func TestChromeTraceParsesAndNests(t *testing.T) {
	rec := New(3, 4096)
	s, _ := runGraph(t, rec, rec)
	s.Close()
	var buf bytes.Buffer
	if err := rec.WriteChrome(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Ts   float64        `json:"ts"`
			Dur  float64        `json:"dur"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("trace is not valid JSON: %v", err)
	}
	byTid := map[int][][2]float64{}
	var tasks, frames, flows int
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "X":
			tasks++
			if e.Args["task"] == nil || e.Args["kernel"] == nil {
				t.Fatalf("task scope without task/kernel args: %+v", e)
			}
			byTid[e.Tid] = append(byTid[e.Tid], [2]float64{e.Ts, e.Ts + e.Dur})
		case "i":
			frames++
		case "s", "f":
			flows++
		}
	}
	// 3 frames x (spawn + 4 leaves + dependent leaf).
	if tasks != 18 || frames != 3 || flows != 6 {
		t.Fatalf("got %d task scopes, %d frame markers, %d flow events; want 18, 3, 6", tasks, frames, flows)
	}
	// Scopes on one thread nest: any two either are disjoint or one
	// contains the other.
	for tid, iv := range byTid {
		sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
		var stack [][2]float64
		for _, s := range iv {
			for len(stack) > 0 && stack[len(stack)-1][1] <= s[0] {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && s[1] > stack[len(stack)-1][1]+0.001 {
				t.Fatalf("thread %d: scope %v overlaps %v without nesting", tid, s, stack[len(stack)-1])
			}
			stack = append(stack, s)
		}
	}
}

func TestTimelineSVG(t *testing.T) {
	rec := New(3, 4096)
	s, _ := runGraph(t, rec, rec)
	s.Close()
	var buf bytes.Buffer
	if err := rec.WriteTimelineSVG(&buf, 1); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "leaf") || !strings.Contains(svg, "GPU") {
		t.Fatalf("timeline lacks rows or kernels:\n%.400s", svg)
	}
	if err := rec.WriteTimelineSVG(&buf, 99); err == nil {
		t.Fatal("timeline of an unrecorded frame succeeded")
	}
}

func TestOverflowDropsAndCounts(t *testing.T) {
	rec := New(1, 2)
	ev := sched.RunEvent{Thread: 0}
	for i := 0; i < 5; i++ {
		rec.TaskRan(&ev)
	}
	if rec.Dropped() != 3 || len(rec.Events()) != 2 {
		t.Fatalf("dropped %d, kept %d; want 3, 2", rec.Dropped(), len(rec.Events()))
	}
}

func TestRecordingAllocatesNothing(t *testing.T) {
	rec := New(1, 1<<20)
	ev := sched.RunEvent{Thread: 0, Kernel: 3}
	if a := testing.AllocsPerRun(1000, func() { rec.TaskRan(&ev) }); a != 0 {
		t.Fatalf("TaskRan allocates %.1f", a)
	}
	gev := sched.RunEvent{Thread: -1, Where: sched.GPU}
	if a := testing.AllocsPerRun(1000, func() { rec.TaskRan(&gev) }); a != 0 {
		t.Fatalf("GPU TaskRan allocates %.1f", a)
	}
}

// BenchmarkObserver measures what recording costs per task: no observer,
// a disabled recorder, and an enabled one, in one process.
func BenchmarkObserver(b *testing.B) {
	for _, mode := range []string{"off", "disabled", "on"} {
		b.Run(mode, func(b *testing.B) {
			var obs sched.Observer
			rec := New(3, 1<<16)
			switch mode {
			case "disabled":
				rec.SetEnabled(false)
				obs = rec
			case "on":
				obs = rec
			}
			reg := sched.NewRegistry()
			reg.Register(kLeaf, sched.Kernel{Name: "leaf", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
			s, _ := sched.New(sched.Config{Kernels: reg, Observer: obs})
			defer s.Close()
			m, _ := s.RegisterThread("main")
			b.ReportAllocs()
			for i := 0; i < b.N; {
				rec.Reset()
				root, _ := m.Create(&sched.Task{})
				for j := 0; j < 1000 && i < b.N; j++ {
					m.Add(&sched.Task{Kernel: kLeaf, Parent: root})
					i++
				}
				m.Run(root)
				m.Wait(root)
			}
		})
	}
}

// TestGPUOverlapGetsLanes: the GPU executor reports tasks of two command
// buffers in flight, which partly overlap (as in a crowd run with
// -offload gpu). Written on one track they would be invalid; WriteChrome
// gives the track a second lane, and CheckChrome accepts the result.
func TestGPUOverlapGetsLanes(t *testing.T) {
	rec := New(2, 1024)
	ms := int64(1_000_000)
	gpu := func(task uint32, start, stop int64) {
		rec.TaskRan(&sched.RunEvent{Thread: -1, Where: sched.GPU, Task: sched.TaskID(task), Kernel: 1, Start: start, Stop: stop})
	}
	// Batch A [0, 1.6 ms): tasks spread over it; batch B [0.5, 2 ms)
	// overlaps it partly; batch C nests inside nothing and follows.
	gpu(1, 0, 8*ms/10)
	gpu(2, 8*ms/10, 16*ms/10)
	gpu(3, 5*ms/10, 2*ms)
	gpu(4, 3*ms, 4*ms)
	// A CPU thread's nested scopes stay on one lane.
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 10, Start: 0, Stop: 10 * ms})
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 11, Start: 2 * ms, Stop: 3 * ms})
	var buf bytes.Buffer
	if err := rec.WriteChrome(&buf); err != nil {
		t.Fatal(err)
	}
	if err := CheckChrome(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("WriteChrome wrote overlapping slices: %v", err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	names := map[int]string{}
	tids := map[string]map[int]bool{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" {
			names[e.Tid] = e.Args["name"].(string)
		}
	}
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			w := e.Args["where"].(string)
			if tids[w] == nil {
				tids[w] = map[int]bool{}
			}
			tids[w][e.Tid] = true
		}
	}
	if len(tids["gpu"]) != 2 || len(tids["cpu"]) != 1 {
		t.Fatalf("tracks by placement: %v (names %v); want 2 GPU lanes and 1 CPU lane", tids, names)
	}
	for tid := range tids["gpu"] {
		if n := names[tid]; n != "GPU" && n != "GPU #2" {
			t.Errorf("GPU lane %d is named %q", tid, n)
		}
	}
}

// TestCheckChromeFindsOverlap: the checker refuses a partial overlap on
// one track and accepts the same slices on two tracks, or nested.
func TestCheckChromeFindsOverlap(t *testing.T) {
	for _, c := range []struct {
		trace string
		bad   bool
	}{
		{`[{"name":"a","ph":"X","ts":0,"dur":1615,"pid":1,"tid":5},{"name":"b","ph":"X","ts":1000,"dur":473,"pid":1,"tid":5},{"name":"c","ph":"X","ts":1500,"dur":473,"pid":1,"tid":5}]`, true},
		{`{"traceEvents":[{"name":"a","ph":"X","ts":0,"dur":1615,"pid":1,"tid":5},{"name":"c","ph":"X","ts":1500,"dur":473,"pid":1,"tid":6}]}`, false},
		{`{"traceEvents":[{"name":"a","ph":"X","ts":0,"dur":1615,"pid":1,"tid":5},{"name":"b","ph":"X","ts":1000,"dur":615,"pid":1,"tid":5},{"name":"c","ph":"X","ts":1615,"dur":1,"pid":1,"tid":5}]}`, false},
		{`{"traceEvents":[{"name":"a","ph":"X","ts":0,"pid":1,"tid":5}]}`, true},
		{`not json`, true},
	} {
		err := CheckChrome(strings.NewReader(c.trace))
		if (err != nil) != c.bad {
			t.Errorf("%s: err = %v, want bad=%v", c.trace, err, c.bad)
		}
	}
	err := CheckChrome(strings.NewReader(`[{"name":"a","ph":"X","ts":0,"dur":1615,"pid":1,"tid":5},{"name":"b","ph":"X","ts":1000,"dur":1000,"pid":1,"tid":5}]`))
	if err == nil || !strings.Contains(err.Error(), `1 of 2 complete slices`) || !strings.Contains(err.Error(), `slice "b"`) {
		t.Errorf("err = %v, want it to count and name the overlap", err)
	}
}
