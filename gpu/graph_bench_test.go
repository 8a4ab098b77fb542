package gpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/internal/xmath"
	"github.com/vkjobs/vkjobs/sched"
)

// plainExec hides the executor's SegmentExecutor side: a graph on it sends
// its GPU nodes one job each (in one burst) and they are recorded at each
// run, as before segments. It does not own the executor (Close does
// nothing: the other scheduler's Close closes it).
type plainExec struct{ e *Executor }

func (p plainExec) Enqueue(j sched.Job) { p.e.Enqueue(j) }
func (p plainExec) BeginBurst()         { p.e.BeginBurst() }
func (p plainExec) EndBurst()           { p.e.EndBurst() }
func (p plainExec) Close() error        { return nil }

// BenchmarkGraphSegment: the CPU cost of a GPU node, for n saxpy nodes of
// 64 elements over host streams that one CPU node readies, four ways in
// alternating blocks of one process (run it with -cpu 1): "dynamic", the
// same tasks added as children of a held join; "rerecord", a frame graph on
// an executor that is no SegmentExecutor (plainExec: one job per node, all
// in one burst, recorded at each run); "replay", the frame graph whose
// segment is recorded once; "floor", that segment's command buffer
// submitted and waited for by the benchmark's goroutine, with no scheduler
// and no executor goroutine (host copies in, vkQueueSubmit, vkWaitForFences,
// copies out): what lavapipe itself costs. It reports each one's median
// wall time and process CPU time (all threads, lavapipe's included) per
// node, each variant's CPU time over the floor's (the scheduler's and the
// executor's part), and replay's ratios to dynamic and to rerecord.
// lavapipe's own cost per dispatch varies with the load and dwarfs the
// rest; LP_NUM_THREADS=0 (dispatches run on the submitting thread, no
// hand-offs to llvmpipe's pool) makes it smaller and steadier.
func BenchmarkGraphSegment(b *testing.B) {
	for _, n := range []int{8, 32} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchGraphSegment(b, n) })
	}
}

func benchGraphSegment(b *testing.B, n int) {
	// Threads that find nothing to run sleep at once (SpinRounds 1): a
	// spinning thread's CPU time would measure the wait for lavapipe, not
	// the work.
	e := benchEnvConfig(b, ExecutorOptions{}, sched.Config{Workers: 1, SpinRounds: 1})
	s2, err := sched.New(sched.Config{Kernels: testRegistry(b), Workers: 1, SpinRounds: 1})
	must(b, err)
	b.Cleanup(func() { s2.Close() })
	must(b, s2.AttachExecutor(sched.ExecGPU, plainExec{e.exec}))
	m2, err := s2.RegisterThread("main")
	must(b, err)

	const width = 64
	x, y := ramp(width, 1, 0), ramp(width, 1, 1)
	tasks := make([]sched.Task, n)
	for i := range tasks {
		tasks[i] = saxpyTask(2, x, y, make([]float32, width))
		tasks[i].Data.End = width // as a graph's copy has it (the floor's segment reads these)
	}
	build := func(s *sched.Scheduler) *sched.Graph {
		g := s.NewGraph()
		pre, err := g.Add(&sched.Task{})
		must(b, err)
		for i := range tasks {
			nd, err := g.Add(&tasks[i])
			must(b, err)
			must(b, g.Precede(pre, nd))
		}
		return g
	}
	replay, rerecord := build(e.s), build(s2)
	dynamic := func() error {
		join, err := e.main.Create(&sched.Task{})
		if err != nil {
			return err
		}
		for i := range tasks {
			t := tasks[i]
			t.Parent = join
			if _, err := e.main.Add(&t); err != nil {
				return err
			}
		}
		if err := e.main.Run(join); err != nil {
			return err
		}
		return e.main.Wait(join)
	}
	// The floor: a segment of the same nodes, run by hand.
	nodes := make([]sched.SegmentNode, n)
	k := testRegistry(b).Lookup(kSaxpy)
	for i := range nodes {
		nodes[i] = sched.SegmentNode{Node: sched.GraphNode(i), Kernel: kSaxpy, K: k, Data: &tasks[i].Data}
	}
	h, err := e.exec.NewSegment(nodes)
	must(b, err)
	b.Cleanup(h.Close)
	seg := h.(*segment)
	floor := func() error {
		if err := e.exec.submitSegment(seg, &job{}); err != nil {
			return err
		}
		if err := check("vkWaitForFences", Result(e.dev.shim.Wait(seg.sl.fence, uint64(e.exec.opts.FenceTimeout)))); err != nil {
			return err
		}
		for i := range seg.downs {
			o := &seg.downs[i]
			copy(o.s.Bytes[o.lo:o.hi], o.m)
		}
		return nil
	}
	variants := []struct {
		name string
		run  func() error
	}{
		{"dynamic", dynamic},
		{"rerecord", func() error { return rerecord.RunCtx(m2) }},
		{"replay", func() error { return replay.RunCtx(e.main) }},
		{"floor", floor},
	}
	wall := make([][]int64, len(variants))
	cpu := make([][]int64, len(variants))
	for _, v := range variants { // warm: pipelines, recordings, arenas
		for range 5 {
			must(b, v.run())
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for k, v := range variants {
			c0 := processCPU()
			for range graphBlock {
				t0 := sched.Nanotime()
				if err := v.run(); err != nil {
					b.Fatal(err)
				}
				wall[k] = append(wall[k], sched.Nanotime()-t0)
			}
			cpu[k] = append(cpu[k], (processCPU()-c0)/graphBlock)
		}
	}
	b.StopTimer()
	for i := range tasks {
		z := sched.View[float32](tasks[i].Data.Out[0])
		if z[width-1] != 2*x[width-1]+y[width-1] {
			b.Fatalf("node %d: z[%d] = %v, want %v", i, width-1, z[width-1], 2*x[width-1]+y[width-1])
		}
	}
	var wm, cm [4]float64
	for k, v := range variants {
		wm[k] = float64(xmath.Median(wall[k])) / float64(n)
		cm[k] = float64(xmath.Median(cpu[k])) / float64(n)
		b.ReportMetric(wm[k], v.name+"-ns/node")
		b.ReportMetric(cm[k], v.name+"-cpu-ns/node")
	}
	b.ReportMetric(cm[2]/cm[0], "cpu-replay/dynamic")
	// Each variant's CPU time over the floor's in the same round (blocks
	// next to each other in time), median over the rounds.
	over := func(k int) float64 {
		d := make([]int64, len(cpu[k]))
		for r := range d {
			d[r] = cpu[k][r] - cpu[3][r]
		}
		return float64(xmath.Median(d)) / float64(n)
	}
	od, or, op := over(0), over(1), over(2)
	b.ReportMetric(od, "dynamic-over-floor-cpu-ns/node")
	b.ReportMetric(or, "rerecord-over-floor-cpu-ns/node")
	b.ReportMetric(op, "replay-over-floor-cpu-ns/node")
	b.ReportMetric(op/od, "cpu-over-floor-replay/dynamic")
	b.ReportMetric(op/or, "cpu-over-floor-replay/rerecord")
}

// graphBlock is how many graph runs of one kind benchGraphSegment runs in
// a row.
const graphBlock = 20

// processCPU is the CPU time of the process's threads in ns, from
// /proc/self/task/*/schedstat (getrusage counts in clock ticks on some
// kernels, too coarse for a block of runs); 0 where it is missing.
func processCPU() int64 {
	var sum int64
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += ns
		}
	}
	return sum
}
