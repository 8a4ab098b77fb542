package sched

// Frame graphs as users drive them: runs after an abandoned join,
// failures at Start, Goexit in a node, bad places at Add, Close and
// nesting.

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGraphStartAfterAbandonedJoin: a started run whose join was
// abandoned (WaitFor timed out, then Abandon: the documented way out of a
// slow frame) still has runners in flight; the graph must not accept a
// new run (or change) until they are done, or the old runners decrement
// the new run's counters and a node runs before its predecessors.
//
// Graph: A -> C, B -> C. Run 1: A is slow (blocks until released), B
// finishes; the join is abandoned; run 2 then starts at once.
func TestGraphStartAfterAbandonedJoin(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	release := make(chan struct{})
	var aCalls, aDone, run, lastA, lastB atomic.Int32
	var bad atomic.Pointer[string]
	ka := kernelOf(t, s, "A", func(c *Ctx, d *TaskData) error {
		if aCalls.Add(1) == 1 {
			<-release // run 1's A is slow
			aDone.Add(1)
			return nil // and records nothing: its run was abandoned
		}
		time.Sleep(20 * time.Millisecond)
		lastA.Store(run.Load())
		aDone.Add(1)
		return nil
	})
	kb := kernelOf(t, s, "B", func(c *Ctx, d *TaskData) error {
		lastB.Store(run.Load())
		return nil
	})
	var cRuns atomic.Int32
	kc := kernelOf(t, s, "C", func(c *Ctx, d *TaskData) error {
		cRuns.Add(1)
		r := run.Load()
		if a, b := lastA.Load(), lastB.Load(); r > 2 && (a != r || b != r) {
			msg := "C ran before its predecessors in run " + strconv.Itoa(int(r)) + ": A last finished in run " + strconv.Itoa(int(a)) + ", B in run " + strconv.Itoa(int(b))
			bad.CompareAndSwap(nil, &msg)
		}
		return nil
	})
	g := s.NewGraph()
	b, err := g.Add(&Task{Kernel: kb}) // first: one runner runs B, then A
	must(t, err)
	a, err := g.Add(&Task{Kernel: ka})
	must(t, err)
	c, err := g.Add(&Task{Kernel: kc})
	must(t, err)
	must(t, g.Precede(a, c))
	must(t, g.Precede(b, c))

	within(t, 10*time.Second, "graph runs after an abandoned run", func() {
		run.Store(1)
		j1, err := g.Start(m)
		must(t, err)
		if err := m.WaitFor(j1, 50*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Errorf("WaitFor run 1: %v, want ErrTimeout", err)
		}
		must(t, s.Abandon(j1, nil))
		// A user moves on to the next frame. Start must refuse
		// (ErrGraphRunning) while run 1's runners are in flight, or the
		// runs must stay correct.
		j2, err := g.Start(m)
		refused := errors.Is(err, ErrGraphRunning)
		if refused {
			close(release) // run 1 can end now: its C runs (run 1's own)
			for cRuns.Load() < 1 {
				time.Sleep(time.Millisecond)
			}
			run.Store(2)
			for j2, err = g.Start(m); errors.Is(err, ErrGraphRunning); j2, err = g.Start(m) {
				time.Sleep(time.Millisecond)
			}
		}
		must(t, err)
		run.Store(2) // run 2 is not checked: its B may have run already
		must(t, m.Wait(j2))
		if !refused {
			close(release)
		}
		// Let run 1's A return and release its successor.
		for aDone.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
		for i := 0; i < 3; i++ {
			run.Store(int32(3 + i))
			j, err := g.Start(m)
			for errors.Is(err, ErrGraphRunning) {
				time.Sleep(time.Millisecond)
				j, err = g.Start(m)
			}
			must(t, err)
			must(t, m.Wait(j))
		}
	})
	if p := bad.Load(); p != nil {
		t.Fatal(*p)
	}
}

// TestGraphNodesJoin: the nodes of a frame graph split their work with
// Join; every run is right.
func TestGraphNodesJoin(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	registerFibJoin(t, s)
	const nodes = 8
	cells := make([][]uint32, nodes)
	g := s.NewGraph()
	var prev GraphNode = -1
	for i := range cells {
		cells[i] = make([]uint32, fibSizes[15])
		n, err := g.Add(&Task{Kernel: fibJoinID, Data: TaskData{Params: Params{15}, Data: &cells[i]}})
		must(t, err)
		if i%2 == 1 {
			must(t, g.Precede(prev, n))
		}
		prev = n
	}
	within(t, 10*time.Second, "graph of Join nodes", func() {
		for range 20 {
			for i := range cells {
				clear(cells[i])
			}
			must(t, g.RunCtx(m))
			for i := range cells {
				if cells[i][0] != 610 {
					t.Fatalf("node %d: fib(15) = %d", i, cells[i][0])
				}
			}
		}
	})
}

// TestCloseDuringGraphRun: Close from another goroutine while a graph run
// is in progress (a wide fan-out, nodes slow enough that Close lands in
// the middle): Run returns, nothing hangs.
func TestCloseDuringGraphRun(t *testing.T) {
	for range 5 {
		s, err := New(Config{Workers: 2})
		must(t, err)
		var ran atomic.Int32
		k := kernelOf(t, s, "slowish", func(c *Ctx, d *TaskData) error {
			time.Sleep(50 * time.Microsecond)
			ran.Add(1)
			return nil
		})
		g := s.NewGraph()
		root, err := g.Add(&Task{Kernel: k})
		must(t, err)
		for range 2000 {
			n, err := g.Add(&Task{Kernel: k})
			must(t, err)
			must(t, g.Precede(root, n))
		}
		within(t, 10*time.Second, "graph Run with Close in flight", func() {
			done := make(chan error, 1)
			go func() { done <- g.Run() }()
			for ran.Load() < 10 {
				runtime.Gosched()
			}
			must(t, s.Close())
			err := <-done
			t.Logf("Run after Close: %d nodes ran, err %v", ran.Load(), err)
		})
	}
}

// TestNestedGraphRunFromNode: a node of one graph runs another graph
// (RunCtx with the node's Ctx) on one and two workers.
func TestNestedGraphRunFromNode(t *testing.T) {
	for _, w := range []int{1, 2} {
		s, m := joinSched(t, w)
		var inner atomic.Int32
		kin := kernelOf(t, s, "inner", func(c *Ctx, d *TaskData) error { inner.Add(1); return nil })
		gi := s.NewGraph()
		var prev GraphNode = -1
		for i := range 50 {
			n, err := gi.Add(&Task{Kernel: kin})
			must(t, err)
			if i%3 != 0 && prev >= 0 {
				must(t, gi.Precede(prev, n))
			}
			prev = n
		}
		kout := kernelOf(t, s, "outer", func(c *Ctx, d *TaskData) error {
			return gi.RunCtx(c)
		})
		// The outer graph: one node that runs the inner graph, then
		// a chain of cheap nodes.
		go_ := s.NewGraph()
		o, err := go_.Add(&Task{Kernel: kout})
		must(t, err)
		for range 10 {
			n, err := go_.Add(&Task{Kernel: kin})
			must(t, err)
			must(t, go_.Precede(o, n))
		}
		within(t, 10*time.Second, "nested graph run", func() {
			for range 20 {
				must(t, go_.RunCtx(m))
			}
		})
		if got := inner.Load(); got != 20*60 {
			t.Errorf("%d workers: inner kernel ran %d times, want %d", w, got, 20*60)
		}
		s.Close()
	}
}

// TestGraphAddRefusesBadPlaces: Graph.Add refuses what the task's own
// Add refuses whatever is attached later (a registered thread that does
// not exist, an invalid priority), naming it; a node for an executor not
// attached yet is accepted, and each run then fails it with an error
// naming the node, without a hang.
func TestGraphAddRefusesBadPlaces(t *testing.T) {
	s, m := joinSched(t, 1)
	defer s.Close()
	k := kernelOf(t, s, "k", func(*Ctx, *TaskData) error { return nil })
	for _, tc := range []struct {
		name string
		task Task
		want error
	}{
		{"unregistered thread", Task{Kernel: k, Affinity: OnThread(3)}, ErrBadAffinity},
		{"bad priority", Task{Kernel: k, Priority: Priority(100)}, ErrBadPriority},
		{"bad priority, pinned", Task{Kernel: k, Affinity: OnThread(0), Priority: Priority(-7)}, ErrBadPriority},
	} {
		g := s.NewGraph()
		if _, err := g.Add(&tc.task); !errors.Is(err, tc.want) {
			t.Errorf("%s: Graph.Add: %v, want %v", tc.name, err, tc.want)
		}
		if _, err := m.Add(&tc.task); !errors.Is(err, tc.want) {
			t.Errorf("%s: Add: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, a := range []Affinity{GPU, SPU} {
		g := s.NewGraph()
		first, err := g.Add(&Task{Kernel: k})
		must(t, err)
		n, err := g.Add(&Task{Kernel: k, Affinity: a})
		must(t, err)
		must(t, g.Precede(first, n))
		within(t, 10*time.Second, "a run with a node for no executor", func() {
			for range 2 {
				if err := g.RunCtx(m); !errors.Is(err, ErrNoExecutor) || !strings.Contains(err.Error(), "graph node 1") {
					t.Errorf("%v node without executor: Run: %v", a, err)
				}
			}
		})
	}
}

// TestGraphOnClosedScheduler: Run and Start after Close return an error,
// promptly.
func TestGraphOnClosedScheduler(t *testing.T) {
	s, m := joinSched(t, 1)
	k := kernelOf(t, s, "k", func(*Ctx, *TaskData) error { return nil })
	g := s.NewGraph()
	_, err := g.Add(&Task{Kernel: k})
	must(t, err)
	must(t, g.RunCtx(m))
	must(t, s.Close())
	within(t, 10*time.Second, "graph runs after Close", func() {
		if err := g.Run(); !errors.Is(err, ErrClosed) {
			t.Errorf("Run after Close: %v, want ErrClosed", err)
		}
		if err := g.RunCtx(m); !errors.Is(err, ErrClosed) {
			t.Errorf("RunCtx after Close: %v, want ErrClosed", err)
		}
		if _, err := g.Start(nil); !errors.Is(err, ErrClosed) {
			t.Errorf("Start after Close: %v, want ErrClosed", err)
		}
		// And again: the failed attempts left the graph usable (not
		// "running").
		if err := g.Run(); !errors.Is(err, ErrClosed) {
			t.Errorf("second Run after Close: %v, want ErrClosed", err)
		}
	})
}

// TestEmptyGraphRunsAndStarts: a graph with no nodes runs, starts (its
// join finishes) and starts again.
func TestEmptyGraphRunsAndStarts(t *testing.T) {
	s, m := joinSched(t, 1)
	defer s.Close()
	g := s.NewGraph()
	within(t, 10*time.Second, "empty graph", func() {
		must(t, g.RunCtx(m))
		must(t, g.Run())
		for range 3 {
			j, err := g.Start(m)
			must(t, err)
			must(t, m.Wait(j))
		}
	})
}

// TestGraphCloseWithRunsWaitingOnOthers: runs that cannot finish by
// themselves when Close comes (a started run after a gate nobody Runs; a
// run from another goroutine whose node is pinned to a registered thread
// that is not serving) end with ErrClosed, and Close returns.
func TestGraphCloseWithRunsWaitingOnOthers(t *testing.T) {
	s, m := joinSched(t, 2)
	var ran atomic.Int32
	k := kernelOf(t, s, "k", func(*Ctx, *TaskData) error { ran.Add(1); return nil })
	g1 := s.NewGraph()
	_, err := g1.Add(&Task{Kernel: k})
	must(t, err)
	g2 := s.NewGraph()
	a, err := g2.Add(&Task{Kernel: k})
	must(t, err)
	p, err := g2.Add(&Task{Kernel: k, Affinity: OnThread(0)})
	must(t, err)
	must(t, g2.Precede(a, p))
	gate, err := m.Create(&Task{})
	must(t, err)
	within(t, 10*time.Second, "Close with graph runs that wait for others", func() {
		j1, err := g1.Start(m, gate)
		must(t, err)
		run2 := make(chan error, 1)
		go func() { run2 <- g2.Run() }()
		for ran.Load() < 1 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		must(t, s.Close())
		if err := s.Wait(j1); !errors.Is(err, ErrClosed) {
			t.Errorf("started run after a gate never Run: %v, want ErrClosed", err)
		}
		if err := <-run2; !errors.Is(err, ErrClosed) {
			t.Errorf("run with a node pinned to an idle thread: %v, want ErrClosed", err)
		}
	})
	if n := ran.Load(); n != 1 {
		t.Errorf("%d nodes ran, want 1 (g2's first)", n)
	}
}

// TestGraphPinnedNodesFromTheirThread: a graph whose nodes alternate
// between any worker and the registered thread runs from that thread
// (its wait runs its pinned nodes), many times, in order.
func TestGraphPinnedNodesFromTheirThread(t *testing.T) {
	o := &graphOrder{}
	s, m := newGraphSched(t, 2, o)
	defer s.Close()
	g := s.NewGraph()
	const n = 40
	o.done = make([]atomic.Uint32, n)
	o.count = make([]atomic.Int32, n)
	o.preds = make([][]int, n)
	for i := range n {
		aff := AnyWorker
		if i%3 == 1 {
			aff = OnThread(0)
		}
		nd, err := g.Add(&Task{Kernel: kgOrder, Affinity: aff, Data: TaskData{Params: Params{uint32(i)}}})
		must(t, err)
		if i >= 2 {
			must(t, g.Precede(nd-2, nd))
			o.preds[i] = append(o.preds[i], i-2)
		}
		if i >= 3 && i%5 == 0 {
			must(t, g.Precede(nd-3, nd))
			o.preds[i] = append(o.preds[i], i-3)
		}
	}
	within(t, 10*time.Second, "graph with pinned nodes", func() {
		for r := 1; r <= 30; r++ {
			o.run.Store(uint32(r))
			must(t, g.RunCtx(m))
			for i := range n {
				if c := o.count[i].Load(); c != int32(r) {
					t.Fatalf("run %d: node %d ran %d times in all", r, i, c)
				}
			}
		}
	})
	if p := o.first.Load(); p != nil {
		t.Fatal(*p)
	}
}

// TestGraphNodeGoexit: a node's kernel that calls runtime.Goexit (a
// test's FailNow in a kernel) fails the run with ErrKernelPanic, as a
// panic does; its successor never runs, the nodes that do not depend on
// it still run (graph.go, step 5: "the rest of the graph runs"), those
// its runner held too, and the next run is whole.
//
// Graph: roots 0..7 (one runner runs them in turn, 0 first: the others
// are still its own when 0 calls Goexit); 8 follows 0; 9 and 10 follow 1.
func TestGraphNodeGoexit(t *testing.T) {
	for _, w := range []int{1, 2} {
		s, err := New(Config{Workers: w})
		must(t, err)
		var exit atomic.Bool
		var ran [11]atomic.Int32
		k := kernelOf(t, s, "node", func(_ *Ctx, d *TaskData) error {
			i := d.Params[0]
			if i == 0 && exit.Load() {
				runtime.Goexit()
			}
			ran[i].Add(1)
			return nil
		})
		g := s.NewGraph()
		for i := range uint32(11) {
			_, err := g.Add(&Task{Kernel: k, Data: TaskData{Params: Params{i}}})
			must(t, err)
		}
		must(t, g.Precede(0, 8))
		must(t, g.Precede(1, 9))
		must(t, g.Precede(1, 10))
		// From a goroutine that is no thread: its wait runs nothing, so
		// the Goexit unwinds a worker's goroutine, not the caller's.
		run := func() error {
			res := make(chan error)
			go func() { res <- g.Run() }()
			return <-res
		}
		within(t, 10*time.Second, "graph with a node that calls Goexit", func() {
			exit.Store(true)
			if err := run(); !errors.Is(err, ErrKernelPanic) {
				t.Errorf("%d workers: run with a Goexit node: %v, want ErrKernelPanic", w, err)
			}
			for i := range ran {
				want := int32(1)
				if i == 0 || i == 8 {
					want = 0
				}
				if got := ran[i].Load(); got != want {
					t.Errorf("%d workers: node %d ran %d times in the run that failed, want %d", w, i, got, want)
				}
			}
			exit.Store(false)
			must(t, run())
			for i := range ran {
				want := int32(2)
				if i == 0 || i == 8 {
					want = 1
				}
				if got := ran[i].Load(); got != want {
					t.Errorf("%d workers: node %d ran %d times after the next run, want %d", w, i, got, want)
				}
			}
		})
		must(t, s.Close())
	}
}

// joinSeen is an Observer that keeps the Parent of the last event: for a
// graph node run in place, the run's join.
type joinSeen struct{ parent atomic.Uint64 }

func (o *joinSeen) TaskRan(ev *RunEvent) { o.parent.Store(uint64(ev.Parent)) }

// TestGraphRunAfterItsJoinAbandoned: a synchronous Run whose join a
// watchdog abandoned (the ID an Observer sees as a node's Parent) returns
// ErrAbandoned at once; while the run's slow node still runs, the graph
// refuses another run (ErrGraphRunning), and once it returned, the next
// runs are whole and in order.
func TestGraphRunAfterItsJoinAbandoned(t *testing.T) {
	obs := &joinSeen{}
	s, err := New(Config{Workers: 2, Observer: obs})
	must(t, err)
	defer s.Close()
	release := make(chan struct{})
	var slowCalls, slowDone, fastDone, afterRuns, bad atomic.Int32
	slow := kernelOf(t, s, "slow", func(*Ctx, *TaskData) error {
		if slowCalls.Add(1) == 1 {
			<-release
		}
		slowDone.Add(1)
		return nil
	})
	fast := kernelOf(t, s, "fast", func(*Ctx, *TaskData) error { fastDone.Add(1); return nil })
	after := kernelOf(t, s, "after", func(*Ctx, *TaskData) error {
		if r := afterRuns.Add(1); slowDone.Load() < r || fastDone.Load() < r {
			bad.Add(1)
		}
		return nil
	})
	g := s.NewGraph()
	f, err := g.Add(&Task{Kernel: fast}) // first: the runner runs it, then slow
	must(t, err)
	sl, err := g.Add(&Task{Kernel: slow})
	must(t, err)
	a, err := g.Add(&Task{Kernel: after})
	must(t, err)
	must(t, g.Precede(f, a))
	must(t, g.Precede(sl, a))
	within(t, 10*time.Second, "a Run whose join was abandoned", func() {
		go func() {
			for obs.parent.Load() == 0 || slowCalls.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			if err := s.Abandon(TaskID(obs.parent.Load()), errors.New("watchdog")); err != nil {
				t.Error(err)
			}
		}()
		res := make(chan error)
		go func() { res <- g.Run() }()
		if err := <-res; !errors.Is(err, ErrAbandoned) {
			t.Errorf("Run whose join was abandoned: %v, want ErrAbandoned", err)
		}
		if err := g.Run(); !errors.Is(err, ErrGraphRunning) {
			t.Errorf("Run while the abandoned run's node still runs: %v, want ErrGraphRunning", err)
		}
		close(release)
		for {
			err := g.Run()
			if errors.Is(err, ErrGraphRunning) {
				time.Sleep(time.Millisecond)
				continue
			}
			must(t, err)
			break
		}
		for range 5 {
			must(t, g.Run())
		}
	})
	if bad.Load() != 0 {
		t.Fatalf("the node after both ran before them %d times", bad.Load())
	}
}

// TestGraphStartAfterFailsWithoutLeak: a Start whose afters must be
// joined, on a pool too full to join them, fails (ErrPoolDeadlock) and
// leaves nothing behind: once the gates run, the pool is empty again.
func TestGraphStartAfterFailsWithoutLeak(t *testing.T) {
	const pool = 8
	s, err := New(Config{Workers: 1, PoolSize: pool, PoolStallLimit: 20 * time.Millisecond})
	must(t, err)
	defer s.Close()
	k := kernelOf(t, s, "k", func(*Ctx, *TaskData) error { return nil })
	g := s.NewGraph()
	_, err = g.Add(&Task{Kernel: k})
	must(t, err)
	must(t, g.Run())
	var gates []TaskID
	for s.Pending() < pool-1 {
		id, err := s.Create(&Task{})
		must(t, err)
		gates = append(gates, id)
	}
	within(t, 10*time.Second, "Start on a full pool", func() {
		_, err := g.Start(nil, gates[0], gates[1])
		if !errors.Is(err, ErrPoolDeadlock) {
			t.Errorf("Start after two gates, one slot free: %v, want ErrPoolDeadlock", err)
		}
		for _, id := range gates {
			must(t, s.Run(id))
		}
		for _, id := range gates {
			must(t, s.Wait(id))
		}
		deadline := time.Now().Add(5 * time.Second)
		for s.Pending() != 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := s.Pending(); n != 0 {
			t.Errorf("%d tasks left in the pool after the failed Start and the gates", n)
		}
		must(t, g.Run())
	})
}

// TestGraphDynamicNodesAllocateNothing: graph.go promises that a run
// allocates nothing; with dynamic nodes too (a node pinned to the
// registered thread, a streaming node larger than its grain), run from
// that thread and from a goroutine that is no thread.
func TestGraphDynamicNodesAllocateNothing(t *testing.T) {
	o := &graphOrder{}
	s, m := newGraphSched(t, 2, o)
	defer s.Close()
	g := s.NewGraph()
	const n = 4096
	x, y := make([]uint32, n), make([]uint32, n)
	e0, err := g.Add(&Task{Kernel: kgEmpty})
	must(t, err)
	p, err := g.Add(&Task{Kernel: kgEmpty, Affinity: OnThread(0)})
	must(t, err)
	st, err := g.Add(&Task{Kernel: kgStream, Data: TaskData{Elements: n,
		In: [MaxStreams]Stream{StreamOf(x)}, Out: [MaxStreams]Stream{StreamOf(y)}}})
	must(t, err)
	e1, err := g.Add(&Task{Kernel: kgEmpty})
	must(t, err)
	must(t, g.Precede(e0, p))
	must(t, g.Precede(e0, st))
	must(t, g.Precede(p, e1))
	must(t, g.Precede(st, e1))
	must(t, g.RunCtx(m))
	if a := testing.AllocsPerRun(100, func() { must(t, g.RunCtx(m)) }); a != 0 {
		t.Errorf("RunCtx with dynamic nodes: %.2f allocations per run", a)
	}
	// The pinned node needs its thread: serve it while a goroutine runs.
	g2 := s.NewGraph()
	_, err = g2.Add(&Task{Kernel: kgStream, Data: TaskData{Elements: n,
		In: [MaxStreams]Stream{StreamOf(x)}, Out: [MaxStreams]Stream{StreamOf(y)}}})
	must(t, err)
	must(t, g2.Run())
	if a := testing.AllocsPerRun(100, func() { must(t, g2.Run()) }); a != 0 {
		t.Errorf("Run with a split streaming node: %.2f allocations per run", a)
	}
}
