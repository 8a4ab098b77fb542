package sched

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lateFailExec is a SegmentExecutor that runs a segment's nodes on a
// goroutine, completes the job with Done(nil) and keeps the Job, so that a
// test can call FailNode on it after Done, as an executor with a bug (or
// a completion callback that outlived its job) would.
type lateFailExec struct {
	hold chan chan struct{} // when set, a job waits for the channel sent
	mu   sync.Mutex
	last Job
	seg  bool
	ran  atomic.Int32
}

func (e *lateFailExec) NewSegment(nodes []SegmentNode) (Segment, error) {
	return &failNodeSeg{nodes: append([]SegmentNode(nil), nodes...)}, nil
}

func (e *lateFailExec) Enqueue(j Job) {
	e.mu.Lock()
	e.last, e.seg = j, j.Segment() != nil
	e.mu.Unlock()
	var gate chan struct{}
	if e.hold != nil {
		gate = make(chan struct{})
		e.hold <- gate
	}
	go func() {
		if gate != nil {
			<-gate
		}
		e.ran.Add(1)
		j.Done(nil)
	}()
}

func (e *lateFailExec) Close() error { return nil }

// TestJobFailNodeAfterDoneIsIgnored: FailNode on a job whose Done already
// completed it (its slot free, or holding another task) does nothing, as
// the doc says of a job that runs no segment: it must not fail a member
// of the graph's next run, which did nothing wrong.
func TestJobFailNodeAfterDoneIsIgnored(t *testing.T) {
	ex := &lateFailExec{}
	var after atomic.Int32
	reg := NewRegistry()
	must(t, reg.Register(1, Kernel{Name: "gpu", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(2, Kernel{Name: "after", CPU: func(*Ctx, *TaskData) error { after.Add(1); return nil }}))
	s, m := gpuExecSched(t, reg, 1, ex)
	var err error
	g := s.NewGraph()
	var gpus [2]GraphNode
	for i := range gpus {
		gpus[i], err = g.Add(&Task{Kernel: 1, Affinity: GPU})
		must(t, err)
		a, err := g.Add(&Task{Kernel: 2})
		must(t, err)
		must(t, g.Precede(gpus[i], a))
	}
	within(t, 10*time.Second, "first run", func() { must(t, g.RunCtx(m)) })
	if after.Swap(0) != 2 {
		t.Fatal("first run: the successors did not run")
	}
	ex.mu.Lock()
	stale, seg := ex.last, ex.seg
	ex.mu.Unlock()
	if !seg {
		t.Skip("the graph formed no segment")
	}
	stale.FailNode(0, errors.New("late FailNode on a finished job"))
	ex.hold = make(chan chan struct{}, 1)
	for r := range 3 {
		// The next run's job in flight, maybe in the finished job's
		// slot: a late FailNode then must not touch it either.
		j, err := g.Start(m)
		must(t, err)
		var gate chan struct{}
		within(t, 10*time.Second, "the job's Enqueue", func() { gate = <-ex.hold })
		stale.FailNode(0, errors.New("late FailNode on a finished job"))
		close(gate)
		within(t, 10*time.Second, "next run", func() { err = m.Wait(j) })
		if err != nil {
			t.Errorf("run %d after a FailNode on a finished job: %v", r, err)
		}
		if n := after.Swap(0); n != 2 {
			t.Errorf("run %d: %d successors ran, want 2", r, n)
		}
	}
}

// TestEventWaitedByClosedSchedulersNotKept: a long-lived Event (a frame
// fence) waited for by threads of many short-lived schedulers, each
// closed after use: the event must neither keep the closed schedulers
// alive nor grow a list Signal walks for ever.
func TestEventWaitedByClosedSchedulersNotKept(t *testing.T) {
	t.Setenv(EnvCheckRaces, "0")
	owner, err := New(Config{Workers: 1, Kernels: NewRegistry()})
	must(t, err)
	defer owner.Close()
	e := owner.NewEvent()
	e.Signal()
	var freed atomic.Int32
	const n = 16
	for range n {
		s, err := New(Config{Workers: 1, Kernels: NewRegistry()})
		must(t, err)
		runtime.AddCleanup(s, func(p *atomic.Int32) { p.Add(1) }, &freed)
		m, err := s.RegisterThread("main")
		must(t, err)
		within(t, 10*time.Second, "WaitEvent", func() { m.WaitEvent(e) })
		must(t, s.Close())
	}
	for i := 0; i < 50 && freed.Load() < n; i++ {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
	}
	l := 0
	if o := e.others.Load(); o != nil {
		l = len(*o)
	}
	t.Logf("%d of %d closed schedulers collected; the event lists %d", freed.Load(), n, l)
	if freed.Load() < n/2 {
		t.Errorf("%d of %d closed schedulers were collected: the event keeps them", freed.Load(), n)
	}
	if l > 1 {
		t.Errorf("the event lists %d schedulers after they closed", l)
	}
	e.Signal() // drops the last closed scheduler too
	if o := e.others.Load(); o != nil && len(*o) != 0 {
		t.Errorf("the event lists %d closed schedulers after a Signal", len(*o))
	}
}

// TestRaceCheckerNotRemadeAfterClose: a held task that outlived Close (it
// failed with ErrClosed), then Run or Abandoned by the program: the
// closed scheduler's race checker must not come back into the global
// table, where it would keep the scheduler alive (and take the table slot
// of the tag's next owner).
func TestRaceCheckerNotRemadeAfterClose(t *testing.T) {
	for _, how := range []string{"Run", "Abandon"} {
		reg := NewRegistry()
		must(t, reg.Register(kRvCopy, Kernel{Name: "copy", Kind: Streaming,
			Out: []StreamSpec{{Name: "dst", Rate: Whole}}, CPU: func(*Ctx, *TaskData) error { return nil }}))
		s, err := New(Config{Workers: 1, Kernels: reg, CheckRaces: true})
		must(t, err)
		id, err := s.Create(cp(nil, make([]byte, 64), NoTask))
		must(t, err)
		must(t, s.Close())
		if r := raceCheckers[s.id].Load(); r != nil && r.s == s {
			t.Fatalf("%s: the checker is in the table after Close", how)
		}
		var rerr error
		if how == "Run" {
			rerr = s.Run(id)
		} else {
			rerr = s.Abandon(id, nil)
		}
		t.Logf("%s after Close: %v", how, rerr)
		if r := raceCheckers[s.id].Load(); r != nil && r.s == s {
			t.Errorf("%s after Close put the closed scheduler's checker back in the global table", how)
			raceCheckers[s.id].CompareAndSwap(r, nil)
		}
	}
}

// TestObserverWaitForItsTaskDeepNesting: TaskRan waiting for the task it
// is told of, on a thread where that task's kernel ran under more nested
// waits than the wait-for walk keeps per thread: ErrDeadlock, as at depth
// one, not a hang.
func TestObserverWaitForItsTaskDeepNesting(t *testing.T) {
	const depth = maxOuter + 8
	var s *Scheduler
	var deepest atomic.Uint64
	got := make(chan error, 1)
	reg := NewRegistry()
	must(t, reg.Register(1, Kernel{Name: "nest", CPU: func(c *Ctx, d *TaskData) error {
		if d.Params[0] == depth {
			return nil
		}
		ch := Task{Kernel: 1}
		ch.Data.Params[0] = d.Params[0] + 1
		id, err := c.Add(&ch)
		if err != nil {
			return err
		}
		if d.Params[0]+1 == depth {
			deepest.Store(uint64(id))
		}
		return c.Wait(id)
	}}))
	obs := observerFunc(func(ev *RunEvent) {
		if uint64(ev.Task) == deepest.Load() && ev.Task != NoTask {
			got <- s.Wait(ev.Task)
		}
	})
	var err error
	s, err = New(Config{Kernels: reg, Workers: 1, Observer: obs})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	id, err := m.Add(&Task{Kernel: 1})
	must(t, err)
	within(t, 10*time.Second, "the nested run", func() { m.Wait(id) })
	select {
	case err := <-got:
		t.Logf("TaskRan's Wait: %v", err)
		if !errors.Is(err, ErrDeadlock) {
			t.Errorf("TaskRan's Wait for its task, %d waits deep: %v, want ErrDeadlock", depth, err)
		}
	default:
		t.Fatal("the deepest task was not observed")
	}
}

type observerFunc func(*RunEvent)

func (f observerFunc) TaskRan(ev *RunEvent) { f(ev) }

// TestGraphRunningAfterClose: a graph whose started run Close failed or
// finished reads as not running once Close returned, and its methods
// answer without hanging.
func TestGraphRunningAfterClose(t *testing.T) {
	release := make(chan struct{})
	reg := NewRegistry()
	must(t, reg.Register(1, Kernel{Name: "block", CPU: func(*Ctx, *TaskData) error { <-release; return nil }}))
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	g := s.NewGraph()
	for range 3 {
		_, err = g.Add(&Task{Kernel: 1})
		must(t, err)
	}
	j, err := g.Start(m)
	must(t, err)
	if !g.Running() {
		t.Fatal("not Running while started")
	}
	done := make(chan error)
	go func() { done <- s.Close() }()
	time.Sleep(20 * time.Millisecond)
	_ = g.Running() // during Close: must not race or hang
	close(release)
	within(t, 10*time.Second, "Close", func() { <-done })
	if g.Running() {
		t.Errorf("Running after Close returned (join %v finished %v)", j, s.IsFinished(j))
	}
	within(t, 10*time.Second, "Run after Close", func() { err = g.RunCtx(m) })
	t.Logf("Run after Close: %v", err)
	if err == nil {
		t.Error("Run after Close succeeded")
	}
}

// TestEventSignalRacesFirstWait: a thread of another scheduler waits for
// an event for the first time as it is signalled, over and over: every
// wait returns (no wake-up lost between the registration and Signal).
func TestEventSignalRacesFirstWait(t *testing.T) {
	owner, err := New(Config{Workers: 1, Kernels: NewRegistry()})
	must(t, err)
	defer owner.Close()
	s, err := New(Config{Workers: 1, Kernels: NewRegistry(), SpinRounds: 1})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	for i := range 300 {
		e := owner.NewEvent()
		go func() {
			for range i % 7 {
				runtime.Gosched()
			}
			e.Signal()
		}()
		within(t, 10*time.Second, fmt.Sprintf("WaitEvent %d", i), func() { m.WaitEvent(e) })
		if !e.IsSet() {
			t.Fatalf("WaitEvent %d returned unset", i)
		}
	}
}

// TestFailNodeShapes: FailNode twice for one member, out of range and
// with nil err: the run returns the first error, once; nothing panics.
func TestFailNodeShapes(t *testing.T) {
	var mode atomic.Int32
	ex := &shapeFailExec{mode: &mode}
	reg := NewRegistry()
	must(t, reg.Register(1, Kernel{Name: "gpu", CPU: func(*Ctx, *TaskData) error { return nil }}))
	s, m := gpuExecSched(t, reg, 1, ex)
	var err error
	g := s.NewGraph()
	for range 2 {
		_, err = g.Add(&Task{Kernel: 1, Affinity: GPU})
		must(t, err)
	}
	for _, md := range []int32{1, 2, 3, 0} {
		mode.Store(md)
		within(t, 10*time.Second, "run", func() { err = g.RunCtx(m) })
		t.Logf("mode %d: %v", md, err)
		if (md == 1) != (err != nil) {
			t.Errorf("mode %d: err = %v", md, err)
		}
	}
}

type shapeFailExec struct{ mode *atomic.Int32 }

func (e *shapeFailExec) NewSegment(nodes []SegmentNode) (Segment, error) {
	return &failNodeSeg{nodes: append([]SegmentNode(nil), nodes...)}, nil
}

func (e *shapeFailExec) Enqueue(j Job) {
	go func() {
		switch e.mode.Load() {
		case 1:
			j.FailNode(1, errors.New("first"))
			j.FailNode(1, errors.New("second"))
		case 2:
			j.FailNode(-1, errors.New("neg"))
			j.FailNode(2, errors.New("past"))
			j.FailNode(1<<30, errors.New("far"))
		case 3:
			j.FailNode(0, nil)
		}
		j.Done(nil)
	}()
}

func (e *shapeFailExec) Close() error { return nil }

// TestGraphObserverPanicAndWaitInPlace: TaskRan told of a graph node run
// in place: a panic there fails that node (ErrObserverPanic, naming the
// node), its successor does not run, and the graph runs again; a wait
// there for the run's join (the event's Parent) ends with an error, not a
// hang.
func TestGraphObserverPanicAndWaitInPlace(t *testing.T) {
	var mode atomic.Int32
	var succ atomic.Int32
	var s *Scheduler
	waitErr := make(chan error, 8)
	obs := observerFunc(func(ev *RunEvent) {
		if ev.Task != NoTask || ev.Kernel != 1 {
			return
		}
		switch mode.Load() {
		case 1:
			panic("observer bug")
		case 2:
			waitErr <- s.Wait(ev.Parent)
		}
	})
	reg := NewRegistry()
	must(t, reg.Register(1, Kernel{Name: "first", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(2, Kernel{Name: "second", CPU: func(*Ctx, *TaskData) error { succ.Add(1); return nil }}))
	var err error
	s, err = New(Config{Kernels: reg, Workers: 1, Observer: obs})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	g := s.NewGraph()
	a, err := g.Add(&Task{Kernel: 1})
	must(t, err)
	b, err := g.Add(&Task{Kernel: 2})
	must(t, err)
	must(t, g.Precede(a, b))
	for _, md := range []int32{1, 0, 2, 0} {
		mode.Store(md)
		within(t, 10*time.Second, fmt.Sprintf("run, mode %d", md), func() { err = g.RunCtx(m) })
		t.Logf("mode %d: %v", md, err)
		switch md {
		case 1:
			if !errors.Is(err, ErrObserverPanic) || strings.Count(err.Error(), "graph node 0") != 1 {
				t.Errorf("observer panic: Run = %v, want ErrObserverPanic naming graph node 0 once", err)
			}
			if n := succ.Swap(0); n != 0 {
				t.Errorf("observer panic: the successor ran %d times", n)
			}
		case 0:
			if err != nil || succ.Swap(0) != 1 {
				t.Errorf("clean run: %v", err)
			}
		case 2:
			select {
			case werr := <-waitErr:
				t.Logf("TaskRan's Wait for the join: %v", werr)
				if werr == nil {
					t.Error("TaskRan's Wait for the join of the run it is part of returned nil")
				}
			default:
				t.Error("no wait was made")
			}
			succ.Swap(0)
		}
	}
}

// parFailExec fails every member of a segment alone, each from a
// goroutine of its own (an executor that builds members' pipelines in
// parallel), then completes the job once all have reported.
type parFailExec struct{}

func (parFailExec) NewSegment(nodes []SegmentNode) (Segment, error) {
	return &failNodeSeg{nodes: append([]SegmentNode(nil), nodes...)}, nil
}

func (parFailExec) Enqueue(j Job) {
	sg, _ := j.Segment().(*failNodeSeg)
	go func() {
		var wg sync.WaitGroup
		if sg != nil {
			for i, n := range sg.nodes {
				wg.Go(func() { j.FailNode(i, fmt.Errorf("graph node %d: no pipeline", n.Node)) })
			}
		}
		wg.Wait()
		j.Done(nil)
	}()
}

func (parFailExec) Close() error { return nil }

// TestJobFailNodeConcurrent: FailNode for different members of one job
// from several goroutines at once (Job.Done may come from any goroutine;
// nothing says a job's FailNode calls come from one): the run fails with
// one of their errors, and no data race.
func TestJobFailNodeConcurrent(t *testing.T) {
	reg := NewRegistry()
	must(t, reg.Register(1, Kernel{Name: "gpu", CPU: func(*Ctx, *TaskData) error { return nil }}))
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	must(t, s.AttachExecutor(ExecGPU, parFailExec{}))
	m, err := s.RegisterThread("main")
	must(t, err)
	g := s.NewGraph()
	for range 4 {
		_, err = g.Add(&Task{Kernel: 1, Affinity: GPU})
		must(t, err)
	}
	for r := range 20 {
		within(t, 10*time.Second, "run", func() { err = g.RunCtx(m) })
		if err == nil || !strings.Contains(err.Error(), "no pipeline") {
			t.Fatalf("run %d: %v, want a member's error", r, err)
		}
	}
}
