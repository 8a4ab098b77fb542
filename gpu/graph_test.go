package gpu

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// TestGraphGPUSegmentOneSubmit: a frame graph whose CPU node readies
// eight GPU nodes (a segment), replayed: each run sends the segment in
// one command buffer, the CPU node after the segment sees every GPU
// result, and re-pointed parameters reach the GPU on the next run.
func TestGraphGPUSegmentOneSubmit(t *testing.T) {
	reg := testRegistry(t)
	const kPre, kPost sched.KernelID = 120, 121
	const n, width = 8, 256
	var pre, post int
	must(t, reg.Register(kPre, sched.Kernel{Name: "pre", CPU: func(*sched.Ctx, *sched.TaskData) error { pre++; return nil }}))
	ys := make([][]float32, n)
	x := ramp(width, 1, 0)
	yIn := ramp(width, 1, 1)
	var sumErr error
	var a float32 = 2
	must(t, reg.Register(kPost, sched.Kernel{Name: "post", CPU: func(*sched.Ctx, *sched.TaskData) error {
		post++
		for i, y := range ys {
			for j := range y {
				if want := a*x[j] + yIn[j]; y[j] != want {
					sumErr = fmt.Errorf("run %d: node %d element %d = %v, want %v", post, i, j, y[j], want)
					return sumErr
				}
			}
		}
		return nil
	}}))
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	warm := saxpyTask(1, x, yIn, make([]float32, width))
	must(t, e.main.Wait(e.add(t, warm))) // the pipeline exists before counting

	g := e.s.NewGraph()
	p, err := g.Add(&sched.Task{Kernel: kPre})
	must(t, err)
	q, err := g.Add(&sched.Task{Kernel: kPost})
	must(t, err)
	var nodes []sched.GraphNode
	for i := range ys {
		ys[i] = make([]float32, width)
		tk := saxpyTask(a, x, yIn, ys[i])
		nd, err := g.Add(&tk)
		must(t, err)
		must(t, g.Precede(p, nd))
		must(t, g.Precede(nd, q))
		nodes = append(nodes, nd)
	}
	for run := 1; run <= 4; run++ {
		if run == 3 {
			a = 5 // re-point the parameter of every GPU node
			for _, nd := range nodes {
				g.Params(nd)[0] = math.Float32bits(a)
			}
		}
		for i := range ys {
			clear(ys[i])
		}
		st0 := e.exec.Stats()
		must(t, g.RunCtx(e.main))
		st := e.exec.Stats()
		if sumErr != nil {
			t.Fatal(sumErr)
		}
		if got := st.Submits - st0.Submits; got != 1 {
			t.Errorf("run %d: %d submits for the segment of %d GPU nodes, want 1", run, got, n)
		}
		if got := st.Tasks - st0.Tasks; got != n {
			t.Errorf("run %d: %d GPU tasks completed, want %d", run, got, n)
		}
	}
	if pre != 4 || post != 4 {
		t.Fatalf("pre ran %d times, post %d; want 4 each", pre, post)
	}
}

// segGraph is a frame graph of one CPU node that readies n saxpy GPU nodes
// (one segment: they share their predecessor) over host streams; z[i] is
// node i's output.
type segGraph struct {
	g     *sched.Graph
	nodes []sched.GraphNode
	x, y  []float32
	z     [][]float32
}

func newSegGraph(t *testing.T, e *env, n, width int) *segGraph {
	t.Helper()
	sg := &segGraph{g: e.s.NewGraph(), x: ramp(width, 1, 0), y: ramp(width, 0.5, 1)}
	pre, err := sg.g.Add(&sched.Task{})
	must(t, err)
	for range n {
		z := make([]float32, width)
		tk := saxpyTask(2, sg.x, sg.y, z)
		nd, err := sg.g.Add(&tk)
		must(t, err)
		must(t, sg.g.Precede(pre, nd))
		sg.nodes = append(sg.nodes, nd)
		sg.z = append(sg.z, z)
	}
	return sg
}

// run runs the graph once and returns the executor's counts of it.
func (sg *segGraph) run(t *testing.T, e *env) ExecStats {
	t.Helper()
	st0 := e.exec.Stats()
	must(t, sg.g.RunCtx(e.main))
	st := e.exec.Stats()
	return ExecStats{Submits: st.Submits - st0.Submits, Records: st.Records - st0.Records,
		Replays: st.Replays - st0.Replays, Tasks: st.Tasks - st0.Tasks, Failed: st.Failed - st0.Failed}
}

// want checks out = a*x + y.
func (sg *segGraph) want(t *testing.T, what string, a float32, out []float32) {
	t.Helper()
	for j := range out {
		if w := a*sg.x[j] + sg.y[j]; out[j] != w {
			t.Fatalf("%s: element %d = %v, want %v", what, j, out[j], w)
		}
	}
}

// counts checks a run's submissions, recordings and replays.
func counts(t *testing.T, what string, st ExecStats, submits, records, replays, tasks uint64) {
	t.Helper()
	if st.Submits != submits || st.Records != records || st.Replays != replays || st.Tasks != tasks || st.Failed != 0 {
		t.Fatalf("%s: %d submits, %d recordings, %d replays, %d tasks, %d failed; want %d, %d, %d, %d, 0",
			what, st.Submits, st.Records, st.Replays, st.Tasks, st.Failed, submits, records, replays, tasks)
	}
}

// TestGraphSegmentRecordedOnce: a replayed graph's GPU segment is recorded
// at its first run and then resubmitted as it is, one vkQueueSubmit a run
// and no recording, while its host inputs change (they are copied in at
// each run) and its results stay right; it is recorded again exactly when
// what it records changed: Params (push constants), an output re-pointed
// to a GPU buffer, a Release. A host output re-pointed to other memory of
// the same size, or SetData with the same bindings, records nothing.
func TestGraphSegmentRecordedOnce(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		const n, width = 8, 300
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Workers: 1})
		sg := newSegGraph(t, e, n, width)
		var a float32 = 2
		run := func(what string, records, replays uint64) {
			t.Helper()
			for i := range sg.z {
				clear(sg.z[i])
			}
			counts(t, what, sg.run(t, e), 1, records, replays, n)
			for i := range sg.z {
				sg.want(t, fmt.Sprintf("%s: node %d", what, i), a, sg.z[i])
			}
		}
		run("first run", 1, 0)
		for r := range 12 {
			for j := range sg.x {
				sg.x[j] = float32(r*7 + j) // new host input each run
			}
			run(fmt.Sprintf("replay %d", r), 0, 1)
		}

		a = 3
		for _, nd := range sg.nodes {
			sg.g.Params(nd)[0] = math.Float32bits(a)
		}
		run("Params changed", 1, 0)
		run("after the Params change", 0, 1)

		// Node 0's output to other host memory of the same size: read at
		// each run, no binding changes.
		old := sg.z[0]
		clear(old)
		sg.z[0] = make([]float32, width)
		tk := saxpyTask(a, sg.x, sg.y, sg.z[0])
		must(t, sg.g.SetData(sg.nodes[0], &tk.Data))
		run("host output re-pointed", 0, 1)
		for j, v := range old {
			if v != 0 {
				t.Fatalf("the old output of node 0 was written after SetData re-pointed it: [%d] = %v", j, v)
			}
		}
		must(t, sg.g.SetData(sg.nodes[0], &tk.Data))
		run("SetData with the same bindings", 0, 1)

		// Node 1's output to a GPU buffer: a new binding.
		buf, err := dev.NewBuffer(4 * width)
		must(t, err)
		defer buf.Close()
		tk = saxpyTask(a, sg.x, sg.y, sg.z[1])
		tk.Data.Out[0] = buf.Stream(4, width, 0)
		must(t, sg.g.SetData(sg.nodes[1], &tk.Data))
		for r := range 3 {
			rec, rep := uint64(0), uint64(1)
			if r == 0 {
				rec, rep = 1, 0
			}
			st := sg.run(t, e)
			counts(t, fmt.Sprintf("output in a GPU buffer, run %d", r), st, 1, rec, rep, n)
			got := make([]byte, 4*width)
			must(t, buf.Read(0, got))
			sg.want(t, "node 1's GPU buffer", a, sched.View[float32](sched.Stream{Bytes: got, Stride: 4, Count: width}))
		}

		tk = saxpyTask(a, sg.x, sg.y, sg.z[1]) // back to host memory
		must(t, sg.g.SetData(sg.nodes[1], &tk.Data))
		run("output back in host memory", 1, 0)
		must(t, sg.g.Release())
		run("after Release", 1, 0)
		run("replay after Release", 0, 1)
	})
}

// TestGraphSegmentRunAllocatesNothing: a replayed graph run with a GPU
// segment (host uploads and read-backs included) allocates nothing.
func TestGraphSegmentRunAllocatesNothing(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Workers: 1})
	sg := newSegGraph(t, e, 8, 256)
	for range 3 {
		sg.run(t, e)
	}
	allocs := testing.AllocsPerRun(50, func() {
		if err := sg.g.RunCtx(e.main); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run of a replayed graph with a GPU segment, want 0", allocs)
	}
	sg.want(t, "node 7", 2, sg.z[7])
}

// TestGraphSegmentChainOfLevels: GPU nodes in a chain through a GPU buffer
// (level 1 writes it, level 2 reads it) are two segments, two submissions
// a run in order, both replayed; level 2 sees level 1's output.
func TestGraphSegmentChainOfLevels(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		const width = 512
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Workers: 1})
		mid, err := dev.NewBuffer(4 * width)
		must(t, err)
		defer mid.Close()
		x, y := ramp(width, 1, 0), ramp(width, 1, 3)
		out := make([]float32, width)
		g := e.s.NewGraph()
		t1 := saxpyTask(2, x, y, make([]float32, width))
		t1.Data.Out[0] = mid.Stream(4, width, 0)
		n1, err := g.Add(&t1)
		must(t, err)
		t2 := saxpyTask(10, x, y, out)
		t2.Data.In[0] = mid.Stream(4, width, 0) // out = 10*(2x+y) + y
		n2, err := g.Add(&t2)
		must(t, err)
		must(t, g.Precede(n1, n2))
		for r := range 6 {
			clear(out)
			st0 := e.exec.Stats()
			must(t, g.RunCtx(e.main))
			st := e.exec.Stats()
			wantRec, wantRep := uint64(0), uint64(2)
			if r == 0 {
				wantRec, wantRep = 2, 0
			}
			if st.Submits-st0.Submits != 2 || st.Records-st0.Records != wantRec || st.Replays-st0.Replays != wantRep {
				t.Fatalf("run %d: %d submits, %d recordings, %d replays; want 2, %d, %d", r,
					st.Submits-st0.Submits, st.Records-st0.Records, st.Replays-st0.Replays, wantRec, wantRep)
			}
			for j := range out {
				if w := 10*(2*x[j]+y[j]) + y[j]; out[j] != w {
					t.Fatalf("run %d: out[%d] = %v, want %v", r, j, out[j], w)
				}
			}
		}
	})
}

// TestGraphSegmentClosedBuffer: a buffer that a recorded segment binds is
// closed between runs: the next run fails with ErrBadStream naming the
// node, without touching the freed buffer; re-pointing the node to a live
// buffer makes the graph run again.
func TestGraphSegmentClosedBuffer(t *testing.T) {
	dev := device(t, false)
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Workers: 1})
	sg := newSegGraph(t, e, 3, 128)
	b1, err := dev.NewBuffer(4 * 128)
	must(t, err)
	tk := saxpyTask(2, sg.x, sg.y, sg.z[2])
	tk.Data.Out[0] = b1.Stream(4, 128, 0)
	must(t, sg.g.SetData(sg.nodes[2], &tk.Data))
	sg.run(t, e)
	sg.run(t, e)
	must(t, b1.Close())
	err = sg.g.RunCtx(e.main)
	if !errors.Is(err, ErrBadStream) || !strings.Contains(err.Error(), fmt.Sprintf("graph node %d", sg.nodes[2])) {
		t.Fatalf("run after closing a bound buffer: err = %v, want ErrBadStream naming graph node %d", err, sg.nodes[2])
	}
	b2, err := dev.NewBuffer(4 * 128)
	must(t, err)
	defer b2.Close()
	tk.Data.Out[0] = b2.Stream(4, 128, 0)
	must(t, sg.g.SetData(sg.nodes[2], &tk.Data))
	counts(t, "re-pointed to a live buffer", sg.run(t, e), 1, 1, 0, 3)
	counts(t, "replay", sg.run(t, e), 1, 0, 1, 3)
	got := make([]byte, 4*128)
	must(t, b2.Read(0, got))
	sg.want(t, "node 2's new buffer", 2, sched.View[float32](sched.Stream{Bytes: got, Stride: 4, Count: 128}))
}

// TestGraphSegmentAfterExecutorClose: the executor's Close frees the
// segments it recorded; a later run fails its GPU segment with ErrClosed,
// and Release afterwards is harmless.
func TestGraphSegmentAfterExecutorClose(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Workers: 1})
	sg := newSegGraph(t, e, 4, 64)
	sg.run(t, e)
	sg.run(t, e)
	must(t, e.exec.Close())
	if err := sg.g.RunCtx(e.main); !errors.Is(err, ErrClosed) {
		t.Fatalf("run after the executor's Close: err = %v, want ErrClosed", err)
	}
	must(t, sg.g.Release())
}

// TestGraphSegmentDeviceLost: a device lost at a segment's submission
// fails that run with ErrDeviceLost, and the next runs fail at once.
func TestGraphSegmentDeviceLost(t *testing.T) {
	dev := openTestDevice(t, Options{})
	t.Cleanup(func() { // after newEnv's cleanup closed the scheduler
		must(t, dev.Close())
		if err := dev.ValidationErr(); err != nil {
			t.Error(err)
		}
	})
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Workers: 1})
	sg := newSegGraph(t, e, 4, 64)
	sg.run(t, e)
	sg.run(t, e)
	must(t, dev.InjectFault(FaultSubmitDeviceLost))
	if err := sg.g.RunCtx(e.main); !errors.Is(err, ErrDeviceLost) {
		t.Fatalf("run with a lost submission: err = %v, want ErrDeviceLost", err)
	}
	for range 3 {
		if err := sg.g.RunCtx(e.main); !errors.Is(err, ErrDeviceLost) {
			t.Fatalf("run after the loss: err = %v, want ErrDeviceLost", err)
		}
	}
}

// TestGraphSegmentFenceTimeout: a segment's run that cannot complete
// (FaultStall) fails with ErrTimeout; a run while it is still on the GPU
// fails at once instead of resubmitting a pending command buffer; once it
// completes, the graph runs again (recording anew: the stalled recording
// was for one run) and then replays.
func TestGraphSegmentFenceTimeout(t *testing.T) {
	dev := device(t, false)
	e := newEnv(t, dev, ExecutorOptions{FenceTimeout: 300 * time.Millisecond, HungAfter: 1 << 20}, sched.Config{Workers: 1})
	sg := newSegGraph(t, e, 2, 64)
	sg.run(t, e)
	sg.run(t, e)
	must(t, dev.InjectFault(FaultStall))
	released := false
	defer func() {
		if !released {
			must(t, dev.ReleaseStall())
		}
	}()
	sg.g.Params(sg.nodes[0])[1] = 1 // records again, and so waits for the stall
	if err := sg.g.RunCtx(e.main); !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "vkWaitForFences") {
		t.Fatalf("stalled run: err = %v, want ErrTimeout from vkWaitForFences", err)
	}
	if err := sg.g.RunCtx(e.main); !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "previous run is still on the GPU") {
		t.Fatalf("run while the stalled one is pending: err = %v, want ErrTimeout naming the pending run", err)
	}
	must(t, dev.ReleaseStall())
	released = true
	deadline := time.Now().Add(20 * time.Second)
	for {
		for i := range sg.z {
			clear(sg.z[i])
		}
		st0 := e.exec.Stats()
		err := sg.g.RunCtx(e.main)
		if err == nil {
			if st := e.exec.Stats(); st.Records-st0.Records != 1 {
				t.Fatalf("first run after the stall: %d recordings, want 1", st.Records-st0.Records)
			}
			break
		}
		if !errors.Is(err, ErrTimeout) || time.Now().After(deadline) {
			t.Fatalf("run after ReleaseStall: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sg.want(t, "node 1 after the stall", 2, sg.z[1])
	counts(t, "replay after the stall", sg.run(t, e), 1, 0, 1, 2)
}

// TestGraphSegmentReportsNodes: each run of a replayed segment reports
// every node to the Observer (as a GPU run of the segment's task, with the
// node's kernel and items) and to the executor's per-kernel statistics,
// host copies included.
func TestGraphSegmentReportsNodes(t *testing.T) {
	rec := &recorder{}
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Workers: 1, Observer: rec})
	const n, width, runs = 4, 1000, 3
	sg := newSegGraph(t, e, n, width)
	ks0 := e.exec.KernelStats(kSaxpy)
	before := sched.Nanotime()
	for range runs {
		sg.run(t, e)
	}
	after := sched.Nanotime()
	ks := e.exec.KernelStats(kSaxpy)
	if ks.Tasks-ks0.Tasks != n*runs || ks.Items-ks0.Items != n*runs*width || ks.Submits-ks0.Submits != runs {
		t.Fatalf("kernel stats: %d tasks, %d items, %d submits; want %d, %d, %d",
			ks.Tasks-ks0.Tasks, ks.Items-ks0.Items, ks.Submits-ks0.Submits, n*runs, n*runs*width, runs)
	}
	if ks.Upload <= ks0.Upload || ks.Readback <= ks0.Readback || ks.Dispatch <= ks0.Dispatch || ks.Latency <= ks0.Latency {
		t.Fatalf("kernel stats %+v after %+v: upload, read-back, dispatch and latency must grow", ks, ks0)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.evs) != n*runs {
		t.Fatalf("%d GPU events, want %d", len(rec.evs), n*runs)
	}
	for _, ev := range rec.evs {
		if ev.Thread != -1 || ev.Kernel != kSaxpy || ev.Begin != 0 || ev.End != width || ev.Err != nil ||
			ev.Start < before || ev.Stop > after || ev.Stop < ev.Start {
			t.Fatalf("event %+v (runs within [%d, %d])", ev, before, after)
		}
	}
}
