package gpu

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// Frame graphs with GPU nodes, as an engine programmer would write them
// from the docs of sched (Graph) and gpu (recorded segments).

func simpleK(t testing.TB, reg *sched.Registry, id sched.KernelID, name string, fn func() error) {
	t.Helper()
	must(t, reg.Register(id, sched.Kernel{Name: name, CPU: func(*sched.Ctx, *sched.TaskData) error { return fn() }}))
}

func gAdd(t testing.TB, g *sched.Graph, tk sched.Task, preds ...sched.GraphNode) sched.GraphNode {
	t.Helper()
	n, err := g.Add(&tk)
	must(t, err)
	for _, p := range preds {
		must(t, g.Precede(p, n))
	}
	return n
}

// saxpyRef checks z = a*x + y exactly (the shader is `precise`).
func saxpyRef(what string, a float32, x, y, z []float32) error {
	if len(z) != len(x) || len(z) != len(y) {
		return fmt.Errorf("%s: lengths %d %d %d", what, len(x), len(y), len(z))
	}
	for i := range z {
		if w := a*x[i] + y[i]; z[i] != w {
			return fmt.Errorf("%s: [%d] = %v, want %v", what, i, z[i], w)
		}
	}
	return nil
}

func nanFill(z []float32) {
	for i := range z {
		z[i] = float32(math.NaN())
	}
}

func deltas(a, b ExecStats) ExecStats {
	return ExecStats{Submits: b.Submits - a.Submits, Records: b.Records - a.Records, Replays: b.Replays - a.Replays,
		Tasks: b.Tasks - a.Tasks, Failed: b.Failed - a.Failed}
}

// TestGraphGPUNodesAmongCPUNodes: CPU -> GPU -> CPU with fan-out and
// fan-in across the boundary and three segments (GPU roots, GPU nodes
// after A, a GPU node after A and B): every run the CPU successors see the
// GPU results of this run's CPU inputs, one submission per segment, and
// recording only when Params changed.
func TestGraphGPUNodesAmongCPUNodes(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		reg := testRegistry(t)
		const w = 500
		x0, y1, c := make([]float32, w), make([]float32, w), ramp(w, 0.25, 3)
		z := [4][]float32{make([]float32, w), make([]float32, w), make([]float32, w), make([]float32, w)}
		a := [4]float32{2, 3, 4, 5}
		run := 0
		var errD, errE, errF error
		var ranD, ranE, ranF int
		simpleK(t, reg, 140, "genA", func() error {
			for i := range x0 {
				x0[i] = float32(run*3 + i%17)
			}
			return nil
		})
		simpleK(t, reg, 141, "genB", func() error {
			for i := range y1 {
				y1[i] = float32(run - i%5)
			}
			return nil
		})
		simpleK(t, reg, 142, "checkD", func() error {
			ranD++
			errD = errors.Join(saxpyRef("z1", a[1], x0, c, z[1]), saxpyRef("z2", a[2], x0, c, z[2]), saxpyRef("z3", a[3], x0, y1, z[3]))
			return nil
		})
		simpleK(t, reg, 143, "checkE", func() error {
			ranE++
			errE = saxpyRef("z2 from E", a[2], x0, c, z[2])
			return nil
		})
		simpleK(t, reg, 144, "checkF", func() error {
			ranF++
			errF = saxpyRef("z0", a[0], c, c, z[0])
			return nil
		})
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
		g := e.s.NewGraph()
		g0 := gAdd(t, g, saxpyTask(a[0], c, c, z[0]))
		A := gAdd(t, g, sched.Task{Kernel: 140})
		B := gAdd(t, g, sched.Task{Kernel: 141})
		g1 := gAdd(t, g, saxpyTask(a[1], x0, c, z[1]), A)
		g2 := gAdd(t, g, saxpyTask(a[2], x0, c, z[2]), A)
		g3 := gAdd(t, g, saxpyTask(a[3], x0, y1, z[3]), A, B)
		gAdd(t, g, sched.Task{Kernel: 142}, g1, g2, g3)
		gAdd(t, g, sched.Task{Kernel: 143}, g2)
		gAdd(t, g, sched.Task{Kernel: 144}, g0)
		gpuNodes := []sched.GraphNode{g0, g1, g2, g3}
		for run = 0; run < 30; run++ {
			wantRec := uint64(0)
			switch run {
			case 0, 10:
				wantRec = 3
				if run == 10 {
					for i, n := range gpuNodes {
						a[i] += 1.5
						g.Params(n)[0] = math.Float32bits(a[i])
					}
				}
			case 20:
				wantRec = 1
				a[2] = -7
				g.Params(g2)[0] = math.Float32bits(a[2])
			}
			for i := range z {
				nanFill(z[i])
			}
			st0 := e.exec.Stats()
			must(t, g.RunCtx(e.main))
			st := deltas(st0, e.exec.Stats())
			if err := errors.Join(errD, errE, errF); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			if ranD != run+1 || ranE != run+1 || ranF != run+1 {
				t.Fatalf("run %d: D ran %d times, E %d, F %d", run, ranD, ranE, ranF)
			}
			if st.Submits != 3 || st.Records != wantRec || st.Tasks != 4 || st.Failed != 0 {
				t.Fatalf("run %d: %+v; want 3 submits (one per segment), %d recordings, 4 tasks", run, st, wantRec)
			}
		}
	})
}

// TestGraphGPUNodeRepointedEveryRun: one GPU node after a CPU node whose
// streams are re-pointed before every run: new host slices of another
// length (including 0 and 1), a GPU buffer of another length, the same
// data again, a host mirror of a buffer; Params change every run. Each
// run's result matches the CPU reference.
func TestGraphGPUNodeRepointedEveryRun(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		reg := testRegistry(t)
		var x, y []float32
		run := 0
		simpleK(t, reg, 145, "gen", func() error {
			for i := range x {
				x[i] = float32(run + i%31)
			}
			return nil
		})
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
		bufs := map[int]*Buffer{}
		defer func() {
			for _, b := range bufs {
				b.Close()
			}
		}()
		buf := func(n int) *Buffer {
			if b := bufs[n]; b != nil {
				return b
			}
			b, err := dev.NewBuffer(uint64(4 * max(n, 1)))
			must(t, err)
			bufs[n] = b
			return b
		}
		sizes := []int{300, 1, 4096, 0, 257, 64, 1000}
		g := e.s.NewGraph()
		P := gAdd(t, g, sched.Task{Kernel: 145})
		x, y = make([]float32, 8), make([]float32, 8)
		N := gAdd(t, g, saxpyTask(1, x, y, make([]float32, 8)), P)
		var tk sched.Task
		var z []float32
		var zb *Buffer
		n := 0
		for run = 0; run < 40; run++ {
			mode := run % 4
			if mode != 2 {
				n = sizes[run%len(sizes)]
			}
			a := float32(run%7) + 0.5
			if mode != 2 {
				x, y, z = make([]float32, n), ramp(n, 0.5, float32(run)), make([]float32, n)
				tk = saxpyTask(a, x, y, z)
				zb = nil
				switch mode {
				case 1:
					zb = buf(n)
					tk.Data.Out[0] = zb.Stream(4, uint32(n), 0)
				case 3:
					zb = buf(n)
					tk.Data.Out[0].Buffer = zb.ID() // a host mirror of zb
				}
			}
			must(t, g.SetData(N, &tk.Data))
			g.Params(N)[0] = math.Float32bits(a)
			nanFill(z)
			if err := g.RunCtx(e.main); err != nil {
				t.Fatalf("run %d (%d elements, mode %d): %v", run, n, mode, err)
			}
			got := z
			if mode == 1 || (mode == 2 && (run-1)%4 == 1) {
				got = make([]float32, n)
				if n > 0 {
					must(t, zb.Read(0, unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 4*n)))
				}
			}
			if err := saxpyRef(fmt.Sprintf("run %d (%d elements, mode %d)", run, n, mode), a, x, y, got); err != nil {
				t.Fatal(err)
			}
			if mode == 3 && n > 0 {
				back := make([]float32, n)
				must(t, zb.Read(0, unsafe.Slice((*byte)(unsafe.Pointer(&back[0])), 4*n)))
				if err := saxpyRef("the mirrored buffer", a, x, y, back); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Host slices that moved, same lengths, same Params: nothing to
		// record, and the new bytes are read.
		for r := range 3 {
			x, y, z = ramp(n, 2, float32(r)), ramp(n, 3, 1), make([]float32, n)
			tk = saxpyTask(1.5, x, y, z)
			g.Params(N)[0] = math.Float32bits(1.5)
			must(t, g.SetData(N, &tk.Data))
			nanFill(z)
			st0 := e.exec.Stats()
			must(t, g.RunCtx(e.main))
			st := deltas(st0, e.exec.Stats())
			if err := saxpyRef(fmt.Sprintf("moved slices %d", r), 1.5, x, y, z); err != nil {
				t.Fatal(err)
			}
			if r > 0 && st.Records != 0 {
				t.Fatalf("moved host slices of the same length: %+v, want no recording", st)
			}
		}
	})
}

// TestGraphGPUNodeZeroElements: GPU nodes with no work items, alone in a
// segment, beside a node with work, re-pointed from and to zero, and as a
// dynamic task: each run succeeds, and the other node's result is right.
func TestGraphGPUNodeZeroElements(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Workers: 1})
	none := []float32{}
	empty := saxpyTask(2, none, none, none)
	must(t, e.main.Wait(e.add(t, empty)))

	g := e.s.NewGraph()
	gAdd(t, g, empty)
	for r := range 3 {
		if err := g.RunCtx(e.main); err != nil {
			t.Fatalf("graph of one empty GPU node, run %d: %v", r, err)
		}
	}

	g2 := e.s.NewGraph()
	E := gAdd(t, g2, empty)
	x, y, z := ramp(100, 1, 0), ramp(100, 1, 1), make([]float32, 100)
	gAdd(t, g2, saxpyTask(3, x, y, z))
	for r := range 6 {
		nanFill(z)
		switch r {
		case 2: // from 0 to 100 elements
			tk := saxpyTask(2, x, y, make([]float32, 100))
			must(t, g2.SetData(E, &tk.Data))
		case 4: // and back
			must(t, g2.SetData(E, &empty.Data))
		}
		st0 := e.exec.Stats()
		if err := g2.RunCtx(e.main); err != nil {
			t.Fatalf("empty GPU node beside another, run %d: %v", r, err)
		}
		if st := deltas(st0, e.exec.Stats()); st.Submits != 1 || st.Tasks != 2 {
			t.Fatalf("run %d: %+v, want 1 submit and 2 tasks", r, st)
		}
		if err := saxpyRef(fmt.Sprintf("run %d", r), 3, x, y, z); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGraphGPUReplayedTenThousandTimes: a CPU -> GPU -> CPU graph replayed
// 10,000 times records nothing after its first run, submits once a run,
// checks every run's GPU results on the CPU, and grows neither the Go heap
// nor the device's memory.
func TestGraphGPUReplayedTenThousandTimes(t *testing.T) {
	reg := testRegistry(t)
	const w = 64
	x, y := make([]float32, w), ramp(w, 1, 2)
	z1, z2 := make([]float32, w), make([]float32, w)
	run := 0
	var bad error
	simpleK(t, reg, 146, "gen", func() error {
		for i := range x {
			x[i] = float32((run + i) % 251)
		}
		return nil
	})
	simpleK(t, reg, 147, "check", func() error {
		if bad == nil {
			if err := saxpyRef("z1", 2, x, y, z1); err != nil {
				bad = fmt.Errorf("run %d: %w", run, err)
			} else if err := saxpyRef("z2", 3, x, y, z2); err != nil {
				bad = fmt.Errorf("run %d: %w", run, err)
			}
		}
		return nil
	})
	dev := device(t, false)
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	g := e.s.NewGraph()
	A := gAdd(t, g, sched.Task{Kernel: 146})
	G1 := gAdd(t, g, saxpyTask(2, x, y, z1), A)
	G2 := gAdd(t, g, saxpyTask(3, x, y, z2), A)
	gAdd(t, g, sched.Task{Kernel: 147}, G1, G2)
	for run = 0; run < 10; run++ {
		must(t, g.RunCtx(e.main))
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	mem0 := dev.Limits().DeviceMemoryUsed
	gor0 := runtime.NumGoroutine()
	st0 := e.exec.Stats()
	const runs = 10000
	start := time.Now()
	for run = 10; run < 10+runs; run++ {
		if err := g.RunCtx(e.main); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if bad != nil {
			t.Fatal(bad)
		}
	}
	el := time.Since(start)
	st := deltas(st0, e.exec.Stats())
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	t.Logf("%d runs in %v (%v a run); heap %d -> %d, mallocs %d", runs, el, el/runs, ms0.HeapAlloc, ms1.HeapAlloc, ms1.Mallocs-ms0.Mallocs)
	if st.Records != 0 || st.Submits != runs || st.Replays != runs || st.Tasks != 2*runs || st.Failed != 0 {
		t.Fatalf("%d runs: %+v; want no recording, one submit and replay a run, 2 tasks a run", runs, st)
	}
	if mem := dev.Limits().DeviceMemoryUsed; mem != mem0 {
		t.Fatalf("device memory %d -> %d over %d runs", mem0, mem, runs)
	}
	if ms1.HeapAlloc > ms0.HeapAlloc+1<<20 {
		t.Fatalf("Go heap grew from %d to %d over %d runs", ms0.HeapAlloc, ms1.HeapAlloc, runs)
	}
	if n := runtime.NumGoroutine(); n > gor0+2 {
		t.Fatalf("goroutines %d -> %d", gor0, n)
	}
}

// TestGraphGPUAllocsMixed: runs of a CPU -> two GPU segments -> CPU graph
// allocate nothing once replayed.
func TestGraphGPUAllocsMixed(t *testing.T) {
	reg := testRegistry(t)
	simpleK(t, reg, 148, "cpu", func() error { return nil })
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const w = 128
	x, y := ramp(w, 1, 0), ramp(w, 1, 1)
	g := e.s.NewGraph()
	A := gAdd(t, g, sched.Task{Kernel: 148})
	B := gAdd(t, g, sched.Task{Kernel: 148})
	G1 := gAdd(t, g, saxpyTask(2, x, y, make([]float32, w)), A)
	G2 := gAdd(t, g, saxpyTask(2, x, y, make([]float32, w)), A, B)
	gAdd(t, g, sched.Task{Kernel: 148}, G1, G2)
	for range 3 {
		must(t, g.RunCtx(e.main))
	}
	if a := testing.AllocsPerRun(50, func() { must(t, g.RunCtx(e.main)) }); a != 0 {
		t.Fatalf("%v allocations per run", a)
	}
}

// TestGraphGPURunWhileInFlight: while a started run with a GPU segment is
// in flight, Run, Start and every change of the graph are refused with
// ErrGraphRunning; after its join finished, the graph runs again.
func TestGraphGPURunWhileInFlight(t *testing.T) {
	dev := device(t, false)
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Workers: 1})
	sg := newSegGraph(t, e, 2, 256)
	sg.run(t, e)
	must(t, dev.InjectFault(FaultStall))
	released := false
	defer func() {
		if !released {
			dev.ReleaseStall()
		}
	}()
	sg.g.Params(sg.nodes[0])[1] = 1 // records again: waits for the stall
	join, err := sg.g.Start(e.main)
	must(t, err)
	time.Sleep(20 * time.Millisecond)
	if err := sg.g.RunCtx(e.main); !errors.Is(err, sched.ErrGraphRunning) {
		t.Fatalf("Run while started: %v", err)
	}
	if _, err := sg.g.Start(e.main); !errors.Is(err, sched.ErrGraphRunning) {
		t.Fatalf("Start while started: %v", err)
	}
	tk := saxpyTask(2, sg.x, sg.y, sg.z[0])
	if err := sg.g.SetData(sg.nodes[0], &tk.Data); !errors.Is(err, sched.ErrGraphRunning) {
		t.Fatalf("SetData while started: %v", err)
	}
	if _, err := sg.g.Add(&tk); !errors.Is(err, sched.ErrGraphRunning) {
		t.Fatalf("Add while started: %v", err)
	}
	if err := sg.g.Precede(sg.nodes[0], sg.nodes[1]); !errors.Is(err, sched.ErrGraphRunning) {
		t.Fatalf("Precede while started: %v", err)
	}
	if err := sg.g.Release(); !errors.Is(err, sched.ErrGraphRunning) {
		t.Fatalf("Release while started: %v", err)
	}
	must(t, dev.ReleaseStall())
	released = true
	if err := e.main.WaitFor(join, 10*time.Second); err != nil {
		t.Fatalf("the started run: %v", err)
	}
	for i := range sg.z {
		nanFill(sg.z[i])
	}
	must(t, sg.g.RunCtx(e.main))
	for i := range sg.z {
		sg.want(t, fmt.Sprintf("node %d", i), 2, sg.z[i])
	}
}

// TestGraphGPUAbandonedRun: a started run whose GPU segment cannot finish
// (FaultStall) times out in WaitFor and is abandoned: the graph refuses a
// new run while the segment is on the GPU, and runs right once it is done.
func TestGraphGPUAbandonedRun(t *testing.T) {
	dev := device(t, false)
	reg := testRegistry(t)
	after := 0
	simpleK(t, reg, 149, "after", func() error { after++; return nil })
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	sg := newSegGraph(t, e, 3, 200)
	gAdd(t, sg.g, sched.Task{Kernel: 149}, sg.nodes...)
	sg.run(t, e)
	must(t, dev.InjectFault(FaultStall))
	released := false
	defer func() {
		if !released {
			dev.ReleaseStall()
		}
	}()
	sg.g.Params(sg.nodes[1])[1] = 7
	join, err := sg.g.Start(e.main)
	must(t, err)
	if err := e.main.WaitFor(join, 200*time.Millisecond); !errors.Is(err, sched.ErrTimeout) {
		t.Fatalf("WaitFor a stalled run: %v", err)
	}
	must(t, e.s.Abandon(join, errors.New("frame late")))
	if err := e.main.Wait(join); !errors.Is(err, sched.ErrAbandoned) {
		t.Fatalf("Wait of the abandoned join: %v", err)
	}
	if err := sg.g.RunCtx(e.main); !errors.Is(err, sched.ErrGraphRunning) {
		t.Fatalf("Run while the abandoned run's segment is on the GPU: %v", err)
	}
	if !sg.g.Running() {
		t.Fatal("Running is false while the abandoned run's segment is on the GPU")
	}
	must(t, dev.ReleaseStall())
	released = true
	// The abandoned run's segment copies its host outputs back when it
	// completes: the outputs are the graph's until Running is false.
	deadline := time.Now().Add(10 * time.Second)
	for sg.g.Running() {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned run still runs 10 s after the stall's release")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range sg.z {
		nanFill(sg.z[i])
	}
	must(t, sg.g.RunCtx(e.main))
	for i := range sg.z {
		sg.want(t, fmt.Sprintf("node %d after the abandoned run", i), 2, sg.z[i])
	}
	if after < 2 {
		t.Fatalf("the CPU successor ran %d times, want at least 2", after)
	}
}

// TestGraphGPUCloseDuringRun: the scheduler's Close while a started run's
// GPU segment is on the GPU, and while the CPU node before it runs:
// Close returns, the run ends (with an error or not), and later runs and
// Release return errors, not panics.
func TestGraphGPUCloseDuringRun(t *testing.T) {
	for _, during := range []string{"gpu", "cpu"} {
		t.Run(during, func(t *testing.T) {
			reg := testRegistry(t)
			simpleK(t, reg, 150, "slow", func() error {
				if during == "cpu" {
					time.Sleep(100 * time.Millisecond)
				}
				return nil
			})
			e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
			const w = 1 << 14
			in, out := make([]uint32, w), make([]uint32, w)
			for i := range in {
				in[i] = uint32(i)
			}
			g := e.s.NewGraph()
			pre := gAdd(t, g, sched.Task{Kernel: 150})
			sp := sched.Task{Kernel: kSpin, Affinity: sched.GPU}
			sp.Data.Elements = w
			sp.Data.Params[0] = 2000
			sp.Data.In[0], sp.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
			gAdd(t, g, sp, pre)
			must(t, g.RunCtx(e.main))
			sub0 := e.exec.Stats().Submits
			clear(out)
			join, err := g.Start(e.main)
			must(t, err)
			if during == "cpu" {
				time.Sleep(20 * time.Millisecond)
			} else {
				for e.exec.Stats().Submits == sub0 { // the segment is on the GPU
					time.Sleep(50 * time.Microsecond)
				}
			}
			done := make(chan error, 1)
			go func() { done <- e.s.Close() }()
			select {
			case err := <-done:
				t.Logf("Close: %v; the run's join: %v", err, e.s.Err(join))
			case <-time.After(15 * time.Second):
				t.Fatal("Close did not return")
			}
			if during == "gpu" {
				// Close waits for the command buffer and finishes its job.
				if err := e.s.Err(join); err != nil {
					t.Fatalf("the run whose segment was on the GPU at Close: %v", err)
				}
				for i := range out {
					if want := lcg(in[i], 2000); out[i] != want {
						t.Fatalf("out[%d] = %d, want %d", i, out[i], want)
					}
				}
			}
			err = g.Run()
			t.Logf("Run after Close: %v", err)
			if err == nil {
				t.Fatal("Run after Close succeeded")
			}
			if err := g.Release(); err != nil && !errors.Is(err, sched.ErrGraphRunning) {
				t.Fatalf("Release after Close: %v", err)
			}
		})
	}
}

// TestGraphGPUFailingNode: a GPU node whose kernel cannot run (invalid
// SPIR-V) in a segment beside a good node: the run fails naming the bad
// node; the good node's own CPU successor still runs (the rest of the
// graph runs, sched/graph.go step 5), as it does on the dynamic path.
func TestGraphGPUFailingNode(t *testing.T) {
	reg := testRegistry(t)
	ranGood, ranBad := 0, 0
	simpleK(t, reg, 151, "afterGood", func() error { ranGood++; return nil })
	simpleK(t, reg, 152, "afterBad", func() error { ranBad++; return nil })
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const w = 64
	x, y, z := ramp(w, 1, 0), ramp(w, 1, 1), make([]float32, w)
	in, out := make([]uint32, w), make([]uint32, w)
	g := e.s.NewGraph()
	good := gAdd(t, g, saxpyTask(2, x, y, z))
	bt := sched.Task{Kernel: kBad, Affinity: sched.GPU}
	bt.Data.Elements = w
	bt.Data.In[0], bt.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
	bad := gAdd(t, g, bt)
	gAdd(t, g, sched.Task{Kernel: 151}, good)
	gAdd(t, g, sched.Task{Kernel: 152}, bad)
	for r := range 2 {
		nanFill(z)
		err := g.RunCtx(e.main)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("graph node %d", bad)) || !strings.Contains(err.Error(), `"bad"`) {
			t.Fatalf("run %d: err = %v, want an error naming graph node %d, kernel \"bad\"", r, err, bad)
		}
		t.Logf("run %d: %v", r, err)
		if ranBad != 0 {
			t.Fatalf("run %d: the failed node's successor ran", r)
		}
		if ranGood != r+1 {
			t.Errorf("run %d: the successor of the good GPU node %d ran %d times, want %d: a failing node of its segment stops the successors of every member", r, good, ranGood, r+1)
		}
		if err := saxpyRef("good node's output", 2, x, y, z); err != nil {
			t.Errorf("run %d: %v", r, err)
		}
	}
}

// TestGraphGPUFailingNodeOwnSegment: the same graph with the bad node in a
// segment of its own (another predecessor): the good node's successor
// runs.
func TestGraphGPUFailingNodeOwnSegment(t *testing.T) {
	reg := testRegistry(t)
	ranGood := 0
	simpleK(t, reg, 151, "afterGood", func() error { ranGood++; return nil })
	simpleK(t, reg, 153, "pre", func() error { return nil })
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const w = 64
	x, y, z := ramp(w, 1, 0), ramp(w, 1, 1), make([]float32, w)
	in, out := make([]uint32, w), make([]uint32, w)
	g := e.s.NewGraph()
	p := gAdd(t, g, sched.Task{Kernel: 153})
	good := gAdd(t, g, saxpyTask(2, x, y, z))
	bt := sched.Task{Kernel: kBad, Affinity: sched.GPU}
	bt.Data.Elements = w
	bt.Data.In[0], bt.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
	gAdd(t, g, bt, p)
	gAdd(t, g, sched.Task{Kernel: 151}, good)
	if err := g.RunCtx(e.main); err == nil {
		t.Fatal("no error")
	}
	if ranGood != 1 {
		t.Fatalf("good successor ran %d times", ranGood)
	}
}

// TestGraphGPUBadInput: input that cannot run is refused at Add or SetData
// with an error naming the node and stream, and the graph keeps its old
// data; a GPU node whose kernel has no GPU code fails at the run, naming
// the node and kernel.
func TestGraphGPUBadInput(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Workers: 1})
	x, y, z := ramp(10, 1, 0), ramp(10, 1, 1), make([]float32, 10)
	g := e.s.NewGraph()
	n := gAdd(t, g, saxpyTask(2, x, y, z))
	bad := saxpyTask(2, x, y, z)
	bad.Data.Elements = 11
	if _, err := g.Add(&bad); err == nil || !strings.Contains(err.Error(), "graph node 1") {
		t.Fatalf("Add with a short stream: %v", err)
	} else {
		t.Logf("Add: %v", err)
	}
	if err := g.SetData(n, &bad.Data); err == nil || !strings.Contains(err.Error(), "graph node 0") {
		t.Fatalf("SetData with a short stream: %v", err)
	}
	nanFill(z)
	must(t, g.RunCtx(e.main))
	if err := saxpyRef("after the refused SetData", 2, x, y, z); err != nil {
		t.Fatal(err)
	}

	// A CPU-only kernel with GPU affinity.
	g2 := e.s.NewGraph()
	ft := sched.Task{Kernel: kFill, Affinity: sched.GPU}
	ft.Data.Elements = 10
	ft.Data.Out[0] = sched.StreamOf(make([]float32, 10))
	fn, err := g2.Add(&ft)
	if err != nil {
		t.Logf("Add of a GPU node without GPU code: %v", err)
		return
	}
	err = g2.RunCtx(e.main)
	t.Logf("run of a GPU node without GPU code: %v", err)
	if err == nil || !strings.Contains(err.Error(), `"fill"`) || !strings.Contains(err.Error(), fmt.Sprintf("graph node %d", fn)) {
		t.Fatalf("run of a GPU node without GPU code: %v, want an error naming node %d and kernel fill", err, fn)
	}
}

// TestGraphsShareGPUKernel: two graphs of the same GPU kernel over
// different data, run in turn and both in flight at once: each run's
// results are right and neither records in steady state.
func TestGraphsShareGPUKernel(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Workers: 1})
	s1 := newSegGraph(t, e, 2, 300)
	s2 := newSegGraph(t, e, 3, 500)
	for i := range s2.x {
		s2.x[i] = float32(i) * 3
	}
	s2.g.Params(s2.nodes[2])[0] = math.Float32bits(5)
	check := func(what string) {
		t.Helper()
		for i := range s1.z {
			s1.want(t, fmt.Sprintf("%s: graph 1 node %d", what, i), 2, s1.z[i])
		}
		for i := range s2.z {
			a := float32(2)
			if i == 2 {
				a = 5
			}
			s2.want(t, fmt.Sprintf("%s: graph 2 node %d", what, i), a, s2.z[i])
		}
	}
	clearAll := func() {
		for _, z := range append(append([][]float32{}, s1.z...), s2.z...) {
			nanFill(z)
		}
	}
	for r := range 4 {
		clearAll()
		s1.run(t, e)
		s2.run(t, e)
		check(fmt.Sprintf("in turn %d", r))
	}
	st0 := e.exec.Stats()
	for r := range 20 {
		clearAll()
		j1, err := s1.g.Start(e.main)
		must(t, err)
		j2, err := s2.g.Start(e.main)
		must(t, err)
		must(t, e.main.Wait(j1))
		must(t, e.main.Wait(j2))
		check(fmt.Sprintf("both in flight %d", r))
	}
	if st := deltas(st0, e.exec.Stats()); st.Records != 0 || st.Submits != 40 || st.Tasks != 100 {
		t.Fatalf("%+v: want no recording, 40 submits, 100 tasks", st)
	}
}

// TestGraphGPUWithoutExecutor: a graph with a GPU node on a scheduler with
// no GPU executor fails its run with ErrNoExecutor naming the node; its
// CPU nodes that do not depend on it still run.
func TestGraphGPUWithoutExecutor(t *testing.T) {
	reg := testRegistry(t)
	ran := 0
	simpleK(t, reg, 154, "cpu", func() error { ran++; return nil })
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	x, y, z := ramp(10, 1, 0), ramp(10, 1, 1), make([]float32, 10)
	g := s.NewGraph()
	n, err := g.Add(&sched.Task{Kernel: kSaxpy, Affinity: sched.GPU, Data: saxpyTask(2, x, y, z).Data})
	must(t, err)
	gAdd(t, g, sched.Task{Kernel: 154})
	err = g.Run()
	t.Logf("run without a GPU executor: %v", err)
	if !errors.Is(err, sched.ErrNoExecutor) || !strings.Contains(err.Error(), fmt.Sprintf("graph node %d", n)) {
		t.Fatalf("run without a GPU executor: %v, want ErrNoExecutor naming node %d", err, n)
	}
	if ran != 1 {
		t.Fatalf("the independent CPU node ran %d times", ran)
	}
}

// TestGraphGPUExecutorAttachedAfterSeal: the executor attached after the
// graph's first run (sealed without one): the GPU node runs, and is
// recorded again at each run (it takes the dynamic path).
func TestGraphGPUExecutorAttachedAfterSeal(t *testing.T) {
	reg := testRegistry(t)
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	x, y, z := ramp(10, 1, 0), ramp(10, 1, 1), make([]float32, 10)
	g := s.NewGraph()
	gAdd(t, g, saxpyTask(2, x, y, z))
	if err := g.Run(); !errors.Is(err, sched.ErrNoExecutor) {
		t.Fatalf("run without a GPU executor: %v", err)
	}
	exec, err := NewExecutor(device(t, false), ExecutorOptions{})
	must(t, err)
	must(t, s.AttachExecutor(sched.ExecGPU, exec))
	for r := range 3 {
		nanFill(z)
		st0 := exec.Stats()
		must(t, g.Run())
		if err := saxpyRef("after attach", 2, x, y, z); err != nil {
			t.Fatal(err)
		}
		t.Logf("run %d after attach: %+v", r, deltas(st0, exec.Stats()))
	}
}

// TestGraphGPUSegmentRunTimeBadStream: a GPU node whose buffer stream lies
// outside its buffer (not checkable at Add: the scheduler does not know
// buffer sizes) in a segment beside a good node: the run names the bad
// node; the good node's successor runs and its output is right.
func TestGraphGPUSegmentRunTimeBadStream(t *testing.T) {
	forDevices(t, testGraphGPUSegmentRunTimeBadStream)
}

func testGraphGPUSegmentRunTimeBadStream(t *testing.T, dev *Device) {
	reg := testRegistry(t)
	ranGood := 0
	simpleK(t, reg, 155, "afterGood", func() error { ranGood++; return nil })
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	small, err := dev.NewBuffer(64)
	must(t, err)
	defer small.Close()
	const w = 64
	x, y, z := ramp(w, 1, 0), ramp(w, 1, 1), make([]float32, w)
	g := e.s.NewGraph()
	good := gAdd(t, g, saxpyTask(2, x, y, z))
	bt := saxpyTask(2, x, y, make([]float32, w))
	bt.Data.Out[0] = small.Stream(4, w, 0) // 256 bytes in a 64-byte buffer
	bad := gAdd(t, g, bt)
	gAdd(t, g, sched.Task{Kernel: 155}, good)
	for r := range 2 {
		nanFill(z)
		st0 := e.exec.Stats()
		err = g.RunCtx(e.main)
		t.Logf("run %d: %v", r, err)
		if !errors.Is(err, ErrBadStream) || !strings.Contains(err.Error(), fmt.Sprintf("graph node %d", bad)) {
			t.Fatalf("run %d: err = %v, want ErrBadStream naming graph node %d", r, err, bad)
		}
		if ranGood != r+1 {
			t.Errorf("run %d: the successor of the good GPU node ran %d times, want %d", r, ranGood, r+1)
		}
		if err := saxpyRef("good node's output", 2, x, y, z); err != nil {
			t.Error(err)
		}
		if st := deltas(st0, e.exec.Stats()); st.Submits != 1 || st.Tasks != 1 || st.Failed != 1 {
			t.Errorf("run %d: %+v, want 1 submit, 1 task, 1 failed", r, st)
		}
	}
	big, err := dev.NewBuffer(4 * w)
	must(t, err)
	defer big.Close()
	bt.Data.Out[0] = big.Stream(4, w, 0)
	must(t, g.SetData(bad, &bt.Data))
	for r := range 3 {
		nanFill(z)
		st0 := e.exec.Stats()
		must(t, g.RunCtx(e.main))
		if err := saxpyRef("good node's output after the fix", 2, x, y, z); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, w)
		must(t, big.Read(0, unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 4*w)))
		if err := saxpyRef("re-pointed node's output", 2, x, y, got); err != nil {
			t.Fatal(err)
		}
		if st, rec := deltas(st0, e.exec.Stats()), boolU(r == 0); st.Records != rec || st.Tasks != 2 {
			t.Fatalf("run %d after the fix: %+v, want %d recordings, 2 tasks", r, st, rec)
		}
	}
	if ranGood != 5 {
		t.Fatalf("the good node's successor ran %d times, want 5", ranGood)
	}
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// TestGraphGPUSegmentRace: two unordered GPU nodes of one segment that
// write the same host output are refused before the run (CheckRaces), and
// so is a SetData that makes them overlap after clean runs.
func TestGraphGPUSegmentRace(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Workers: 1, CheckRaces: true})
	x, y, z1, z2 := ramp(64, 1, 0), ramp(64, 1, 1), make([]float32, 64), make([]float32, 64)
	g := e.s.NewGraph()
	gAdd(t, g, saxpyTask(2, x, y, z1))
	n2 := gAdd(t, g, saxpyTask(3, x, y, z2))
	must(t, g.RunCtx(e.main))
	must(t, g.RunCtx(e.main))
	tk := saxpyTask(3, x, y, z1)
	must(t, g.SetData(n2, &tk.Data))
	var re *sched.RaceError
	if err := g.RunCtx(e.main); !errors.As(err, &re) {
		t.Fatalf("run with two GPU nodes writing one output: %v, want a *sched.RaceError", err)
	} else {
		t.Logf("refused: %v", err)
	}
}

// TestGraphGPUPipelineOfGraphs: two graphs chained with Start's after, the
// first's GPU node writing a GPU buffer that the second's GPU node reads,
// several frames in flight: every frame's result is right.
func TestGraphGPUPipelineOfGraphs(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Workers: 1})
		const w = 1000
		mid, err := dev.NewBuffer(4 * w)
		must(t, err)
		defer mid.Close()
		x, y, out := ramp(w, 1, 0), ramp(w, 1, 3), make([]float32, w)
		g1, g2 := e.s.NewGraph(), e.s.NewGraph()
		t1 := saxpyTask(2, x, y, make([]float32, w))
		t1.Data.Out[0] = mid.Stream(4, w, 0)
		n1 := gAdd(t, g1, t1)
		t2 := saxpyTask(10, x, y, out)
		t2.Data.In[0] = mid.Stream(4, w, 0)
		gAdd(t, g2, t2)
		prev := sched.NoTask
		for f := range 20 {
			a := float32(f%5 + 1)
			g1.Params(n1)[0] = math.Float32bits(a)
			nanFill(out)
			j1, err := g1.Start(e.main, prev)
			must(t, err)
			j2, err := g2.Start(e.main, j1)
			must(t, err)
			must(t, e.main.Wait(j2))
			for i := range out {
				if want := 10*(a*x[i]+y[i]) + y[i]; out[i] != want {
					t.Fatalf("frame %d: out[%d] = %v, want %v", f, i, out[i], want)
				}
			}
			prev = j2
		}
	})
}

// TestGraphGPUWideSegmentAndHostChain: a segment of 300 GPU nodes leaves
// in one submission; a GPU node reading another's host output (two
// levels) sees this run's values; an input that is a host mirror of a GPU
// buffer, written by a CPU node each run, reaches the GPU each run.
func TestGraphGPUWideSegmentAndHostChain(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		reg := testRegistry(t)
		const w, wide = 96, 300
		run := 0
		x, y := make([]float32, w), ramp(w, 1, 1)
		simpleK(t, reg, 156, "gen", func() error {
			for i := range x {
				x[i] = float32(run*5 + i)
			}
			return nil
		})
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
		mb, err := dev.NewBuffer(4 * w)
		must(t, err)
		defer mb.Close()
		g := e.s.NewGraph()
		A := gAdd(t, g, sched.Task{Kernel: 156})
		zs := make([][]float32, wide)
		for i := range zs {
			zs[i] = make([]float32, w)
			tk := saxpyTask(float32(i%9), x, y, zs[i])
			tk.Data.In[0].Buffer = mb.ID() // x is a host mirror of mb
			gAdd(t, g, tk, A)
		}
		// Level 2 reads level 1's host output zs[0].
		z2 := make([]float32, w)
		l2 := gAdd(t, g, saxpyTask(3, zs[0], y, z2))
		must(t, g.Precede(1, l2))
		for run = 0; run < 5; run++ {
			for i := range zs {
				nanFill(zs[i])
			}
			nanFill(z2)
			st0 := e.exec.Stats()
			must(t, g.RunCtx(e.main))
			st := deltas(st0, e.exec.Stats())
			for i := range zs {
				if err := saxpyRef(fmt.Sprintf("run %d node %d", run, i+1), float32(i%9), x, y, zs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := saxpyRef(fmt.Sprintf("run %d level 2", run), 3, zs[0], y, z2); err != nil {
				t.Fatal(err)
			}
			if st.Submits != 2 || st.Tasks != wide+1 {
				t.Fatalf("run %d: %+v, want 2 submits, %d tasks", run, st, wide+1)
			}
		}
	})
}
