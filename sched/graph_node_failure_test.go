package sched

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGraphDynamicNodeErrorNamesNode: a node that takes the dynamic path
// (a streaming node larger than its grain, which the scheduler splits; a
// node pinned to a registered thread) and fails: Run's error names the
// graph node and its kernel, as it does for a node run in place (the
// design's step 5), so that a graph with many nodes of one kernel tells
// which one failed.
func TestGraphDynamicNodeErrorNamesNode(t *testing.T) {
	boom := errors.New("boom")
	reg := NewRegistry()
	if err := reg.Register(1, Kernel{Name: "split", Kind: Streaming, Grain: 16,
		Out: []StreamSpec{{Name: "o", Stride: 4}},
		CPU: func(_ *Ctx, d *TaskData) error {
			if d.Begin <= 40 && 40 < d.End {
				return boom
			}
			return nil
		}}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(2, Kernel{Name: "ok", CPU: func(*Ctx, *TaskData) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(3, Kernel{Name: "pinned", CPU: func(*Ctx, *TaskData) error { return boom }}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Kernels: reg, Workers: 1, MainThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := s.RegisterThread("main")
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range []string{"split", "pinned"} {
		g := s.NewGraph()
		for range 3 { // nodes of the same kernel before the failing one
			if _, err := g.Add(&Task{Kernel: 2}); err != nil {
				t.Fatal(err)
			}
		}
		tk := Task{Kernel: 1}
		out := make([]float32, 64)
		tk.Data.Elements = 64
		tk.Data.Out[0] = StreamOf(out)
		if shape == "pinned" {
			tk = Task{Kernel: 3, Affinity: OnThread(0)}
		}
		n, err := g.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		within(t, 10*time.Second, "Run", func() { err = g.RunCtx(m) })
		t.Logf("%s: %v", shape, err)
		if !errors.Is(err, boom) {
			t.Fatalf("%s: err = %v, want boom", shape, err)
		}
		if want := "graph node 3"; n != 3 || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to name %q", shape, err, want)
		}
	}
}

// failNodeExec is a SegmentExecutor that runs a segment's nodes (their
// Params[0] marks them ran) on a goroutine and fails member fail-1 alone
// (Job.FailNode); whole makes the next job fail entirely.
type failNodeExec struct {
	ran   []atomic.Int32
	fail  atomic.Int32
	whole atomic.Bool
}

type failNodeSeg struct{ nodes []SegmentNode }

func (s *failNodeSeg) Changed(int) {}
func (s *failNodeSeg) Close()      {}

func (e *failNodeExec) NewSegment(nodes []SegmentNode) (Segment, error) {
	return &failNodeSeg{nodes: append([]SegmentNode(nil), nodes...)}, nil
}

func (e *failNodeExec) Enqueue(j Job) {
	sg, ok := j.Segment().(*failNodeSeg)
	if !ok {
		go j.Done(errors.New("not a segment"))
		return
	}
	go func() {
		if e.whole.Swap(false) {
			j.FailNode(0, fmt.Errorf("member 0 too: %w", errSegment)) // then the whole segment fails
			j.Done(errSegment)
			return
		}
		f := int(e.fail.Load()) - 1
		for i, n := range sg.nodes {
			if i == f {
				j.FailNode(i, fmt.Errorf("graph node %d: %w", n.Node, errSegment))
				continue
			}
			e.ran[n.Data.Params[0]].Add(1)
		}
		j.Done(nil)
	}()
}

func (e *failNodeExec) Close() error { return nil }

// TestGraphSegmentMemberFailsAlone: a segment of three GPU nodes, each
// with a CPU successor, one joint CPU successor; the executor fails the
// middle member alone: Run returns its error, the other members'
// successors run, its own and the joint one do not; the next run, without
// a failure, runs everything; a failure of the whole segment stops every
// successor; and the same through Start, whose join fails.
func TestGraphSegmentMemberFailsAlone(t *testing.T) {
	ex := &failNodeExec{ran: make([]atomic.Int32, 3)}
	succ := make([]atomic.Int32, 4)
	reg := NewRegistry()
	must(t, reg.Register(1, Kernel{Name: "gpu", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(2, Kernel{Name: "after", CPU: func(_ *Ctx, d *TaskData) error { succ[d.Params[0]].Add(1); return nil }}))
	s, m := gpuExecSched(t, reg, 2, ex)
	var err error
	g := s.NewGraph()
	var gpus [3]GraphNode
	for i := range gpus {
		tk := Task{Kernel: 1, Affinity: GPU}
		tk.Data.Params[0] = uint32(i)
		gpus[i], err = g.Add(&tk)
		must(t, err)
		a := Task{Kernel: 2}
		a.Data.Params[0] = uint32(i)
		n, err := g.Add(&a)
		must(t, err)
		must(t, g.Precede(gpus[i], n))
	}
	joint := Task{Kernel: 2}
	joint.Data.Params[0] = 3
	jn, err := g.Add(&joint)
	must(t, err)
	for _, n := range gpus {
		must(t, g.Precede(n, jn))
	}
	check := func(what string, want [4]int32) {
		t.Helper()
		for i := range succ {
			if got := succ[i].Swap(0); got != want[i] {
				t.Errorf("%s: successor %d ran %d times, want %d", what, i, got, want[i])
			}
		}
	}
	for r := range 3 {
		ex.fail.Store(2)
		err := g.RunCtx(m)
		if !errors.Is(err, errSegment) || !strings.Contains(err.Error(), fmt.Sprintf("graph node %d", gpus[1])) {
			t.Fatalf("run %d: err = %v, want the failed member's error", r, err)
		}
		check(fmt.Sprintf("run %d, member 1 failed", r), [4]int32{1, 0, 1, 0})
		ex.fail.Store(0)
		must(t, g.RunCtx(m))
		check(fmt.Sprintf("run %d, no failure", r), [4]int32{1, 1, 1, 1})
	}
	ex.whole.Store(true)
	if err := g.RunCtx(m); !errors.Is(err, errSegment) {
		t.Fatalf("whole segment failed: %v", err)
	}
	check("whole segment failed", [4]int32{})
	must(t, g.RunCtx(m))
	check("after the whole failure", [4]int32{1, 1, 1, 1})

	ex.fail.Store(3)
	j, err := g.Start(m)
	must(t, err)
	if err := m.Wait(j); !errors.Is(err, errSegment) {
		t.Fatalf("started run with member 2 failed: join err = %v", err)
	}
	check("started, member 2 failed", [4]int32{1, 1, 0, 0})
	ex.fail.Store(0)
	must(t, g.RunCtx(m))
	check("after the started run", [4]int32{1, 1, 1, 1})
}

// TestGraphRunningAfterAbandon: Running is false before and after runs,
// true while a started run is in flight, and, once its join is abandoned
// after WaitFor timed out, true until the node's kernel returned; then
// the graph runs again.
func TestGraphRunningAfterAbandon(t *testing.T) {
	release := make(chan struct{})
	var block atomic.Bool
	reg := NewRegistry()
	must(t, reg.Register(1, Kernel{Name: "maybe-block", CPU: func(*Ctx, *TaskData) error {
		if block.Load() {
			<-release
		}
		return nil
	}}))
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	g := s.NewGraph()
	_, err = g.Add(&Task{Kernel: 1})
	must(t, err)
	if g.Running() {
		t.Fatal("Running before any run")
	}
	must(t, g.RunCtx(m))
	if g.Running() {
		t.Fatal("Running after Run returned")
	}
	block.Store(true)
	j, err := g.Start(m)
	must(t, err)
	if !g.Running() {
		t.Fatal("not Running while a started run is in flight")
	}
	if err := m.WaitFor(j, 50*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitFor: %v", err)
	}
	must(t, s.Abandon(j, nil))
	if !g.Running() {
		t.Fatal("not Running while the abandoned run's node still runs")
	}
	block.Store(false)
	close(release)
	within(t, 10*time.Second, "the abandoned run's end", func() {
		for g.Running() {
			time.Sleep(time.Millisecond)
		}
	})
	must(t, g.RunCtx(m))
}

// gpuExecSched makes a scheduler of reg's kernels with the given workers,
// ex attached as its GPU executor and a registered main thread; it is
// closed when the test ends.
func gpuExecSched(t *testing.T, reg *Registry, workers int, ex Executor) (*Scheduler, *Ctx) {
	t.Helper()
	s, err := New(Config{Kernels: reg, Workers: workers})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	must(t, s.AttachExecutor(ExecGPU, ex))
	m, err := s.RegisterThread("main")
	must(t, err)
	return s, m
}
