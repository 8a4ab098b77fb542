package sched

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitUntil polls cond every 100 µs and fails the test if it is not true
// within d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, d)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// A wait whose target can still finish must not fail with ErrDeadlock
// because the wait-for walk went through an abandoned task: abandoning it
// released its parent and its dependents, so its links are stale. Kernel
// A waits for P, whose only remaining need is Q, held and Run 50 ms later
// from outside (P then fails: a child was abandoned). Once, P's other child D depends on A and was abandoned
// (the walk went A -> D -> P); once, P's child X was abandoned, and X's
// child Y depends on A (A -> Y -> X -> P). Both used to fail A's wait.
func TestWaitThroughAbandonedTask(t *testing.T) {
	const kA KernelID = 80
	var aID atomic.Uint64
	started := make(chan struct{}, 1)
	proceed := make(chan TaskID, 1)
	waitErr := make(chan error, 1)
	reg := NewRegistry()
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: func(c *Ctx, _ *TaskData) error {
		aID.Store(uint64(c.Current()))
		started <- struct{}{}
		waitErr <- c.Wait(<-proceed)
		return nil
	}}))
	for _, viaParent := range []bool{false, true} {
		s, err := New(Config{Kernels: reg, Workers: 2, SpinRounds: 64})
		must(t, err)
		a, err := s.Add(&Task{Kernel: kA})
		must(t, err)
		<-started
		p, err := s.Create(&Task{})
		must(t, err)
		q, err := s.Create(&Task{Parent: p})
		must(t, err)
		var gone TaskID
		if !viaParent {
			gone, err = s.Add(&Task{Parent: p, Dependency: a}) // D
			must(t, err)
		} else {
			gone, err = s.Add(&Task{Parent: p, Dependency: q}) // X
			must(t, err)
			_, err = s.Add(&Task{Parent: gone, Dependency: a}) // Y
			must(t, err)
		}
		must(t, s.Abandon(gone, nil))
		must(t, s.Run(p))
		proceed <- p
		time.Sleep(50 * time.Millisecond) // A's wait sleeps and looks for a cycle
		must(t, s.Run(q))
		var werr error
		within(t, 20*time.Second, "A's wait for P", func() { werr = <-waitErr })
		// P fails (a child was abandoned), but only once Q ran.
		if errors.Is(werr, ErrDeadlock) || !errors.Is(werr, ErrChildFailed) || !errors.Is(werr, ErrAbandoned) {
			t.Errorf("via an abandoned parent %v: A's Wait for P: %v, want P's own error (ErrChildFailed, ErrAbandoned) once Q ran", viaParent, werr)
		}
		must(t, s.Wait(a))
		must(t, s.Close())
	}
}

// Abandoning a running kernel K releases its parent P, which completes,
// and P's slot goes to K's child C: the slots' parent links then loop
// (K's names P's slot, now C's). The walks up the parents must see that
// K's link is stale. They did not: an Add with parent C and a dependency
// spun for ever in the cycle check, an Add of a child of K depending on
// its sibling C was refused as depending on an ancestor, and K's Wait for
// its own child C failed with ErrDeadlock.
func TestAbandonedKernelParentSlotReused(t *testing.T) {
	const kK KernelID = 81
	type result struct {
		c          TaskID
		sibling    error
		waitResult error
	}
	started := make(chan struct{})
	proceed := make(chan struct{})
	made := make(chan TaskID, 1)
	done := make(chan result, 1)
	reg := NewRegistry()
	var s *Scheduler
	must(t, reg.Register(kK, Kernel{Name: "K", CPU: func(x *Ctx, _ *TaskData) error {
		close(started)
		<-proceed
		var r result
		var err error
		// Scheduler.Create takes the slot on top of the shared free
		// list: P's, just freed by Abandon.
		if r.c, err = s.Create(&Task{Parent: x.Current()}); err != nil {
			return err
		}
		_, r.sibling = x.Add(&Task{Parent: x.Current(), Dependency: r.c})
		made <- r.c
		r.waitResult = x.Wait(r.c)
		done <- r
		return nil
	}}))
	var err error
	s, err = New(Config{Kernels: reg, Workers: 2, SpinRounds: 64})
	must(t, err)
	p, err := s.Create(&Task{})
	must(t, err)
	k, err := s.Add(&Task{Kernel: kK, Parent: p})
	must(t, err)
	must(t, s.Run(p))
	<-started
	// P's own part done: only K keeps it open.
	waitUntil(t, 5*time.Second, "P's own part", func() bool { return atomic.LoadInt32(&s.slots[p.index()].open) == 1 })
	must(t, s.Abandon(k, nil))
	if !s.IsFinished(p) {
		t.Fatalf("P did not finish when its only child was abandoned")
	}
	close(proceed)
	c := <-made
	if c.index() != p.index() {
		t.Fatalf("test setup: K's child %v did not reuse P's slot (%v)", c, p)
	}
	h, err := s.Create(&Task{})
	must(t, err)
	within(t, 10*time.Second, "Add with parent C and a dependency (the cycle check)", func() {
		_, err = s.Add(&Task{Parent: c, Dependency: h})
	})
	if err != nil {
		t.Errorf("Add with parent %v and dependency %v: %v", c, h, err)
	}
	time.Sleep(20 * time.Millisecond) // K's wait for C sleeps and looks for a cycle
	must(t, s.Run(h))
	must(t, s.Run(c))
	var r result
	within(t, 20*time.Second, "K's wait for its child C", func() { r = <-done })
	if r.sibling != nil {
		t.Errorf("Add of K's child depending on its sibling %v: %v", c, r.sibling)
	}
	if r.waitResult != nil {
		t.Errorf("K's Wait for its child %v: %v", c, r.waitResult)
	}
	if err := s.Wait(k); !errors.Is(err, ErrAbandoned) {
		t.Errorf("Wait K: %v, want ErrAbandoned", err)
	}
	must(t, s.Close())
}

// Cancellation mid-graph: while a graph of chains runs on 1, 2 and 4
// workers, Abandon hits random tasks (queued, running, waiting for a
// dependency). Every Wait returns; an abandoned task's dependents fail
// with ErrDepFailed; no task runs twice; Close succeeds.
func TestAdversarialAbandonMidGraph(t *testing.T) {
	const kStep KernelID = 107
	const chains, length = 64, 20
	var hits [chains * length]atomic.Int32
	reg := NewRegistry()
	must(t, reg.Register(kStep, Kernel{Name: "step", CPU: func(_ *Ctx, d *TaskData) error {
		if spinWork(d.Params[0]) == 0 { // burn a little CPU, and use the result
			time.Sleep(time.Microsecond)
		}
		hits[d.Params[0]].Add(1)
		time.Sleep(20 * time.Microsecond)
		return nil
	}}))
	for _, workers := range []int{1, 2, 4} {
		for i := range hits {
			hits[i].Store(0)
		}
		s, err := New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		ids := make([]TaskID, chains*length)
		for c := range chains {
			prev := NoTask
			for l := range length {
				i := c*length + l
				ids[i], err = m.Add(&Task{Kernel: kStep, Dependency: prev, Data: TaskData{Params: Params{uint32(i)}}})
				must(t, err)
				prev = ids[i]
			}
		}
		abandoned := make(map[int]bool)
		rng := uint32(workers)
		for range 40 {
			rng = rng*1664525 + 1013904223
			i := int(rng>>8) % len(ids)
			if s.Abandon(ids[i], errors.New("cancelled")) == nil {
				abandoned[i] = true
			}
			time.Sleep(50 * time.Microsecond)
		}
		within(t, 20*time.Second, fmt.Sprintf("abandoned graph on %d workers", workers), func() {
			for c := range chains {
				failed := false
				for l := range length {
					i := c*length + l
					err := m.Wait(ids[i])
					switch {
					case abandoned[i]:
						if !errors.Is(err, ErrAbandoned) {
							t.Errorf("abandoned %v: %v", ids[i], err)
						}
						failed = true
					case failed:
						if !errors.Is(err, ErrDepFailed) {
							t.Errorf("dependent %v of an abandoned task: %v", ids[i], err)
						}
					case err != nil:
						t.Errorf("%v: %v", ids[i], err)
					}
					if failed && !abandoned[i] && hits[i].Load() != 0 {
						t.Errorf("%v ran after its dependency was abandoned", ids[i])
					}
				}
			}
			must(t, s.Close())
		})
		for i := range hits {
			if h := hits[i].Load(); h > 1 {
				t.Errorf("task %d ran %d times", i, h)
			}
		}
	}
}

func TestHungKernelTimeoutAndAbandon(t *testing.T) {
	block := make(chan struct{})
	started := make(chan int, 1)
	r := newRecorder(4)
	reg := testRegistry(t, r, block)
	const kHang KernelID = 70
	must(t, reg.Register(kHang, Kernel{Name: "hang", CPU: func(c *Ctx, d *TaskData) error {
		started <- c.Index()
		<-block
		return nil
	}}))
	s, m := start(t, Config{Workers: 2, Kernels: reg}, r, block)
	parent, err := m.Create(&Task{})
	must(t, err)
	// The hung kernel must run on a worker, not on the waiting main thread:
	// add it from a foreign goroutine and wait until a worker started it.
	hung, err := s.Add(&Task{Kernel: kHang, Parent: parent})
	must(t, err)
	if w := <-started; w >= s.Workers() {
		t.Fatalf("hung kernel started on thread %d, not a worker", w)
	}
	dep := rec(0)
	dep.Dependency = hung
	depID, err := m.Add(dep)
	must(t, err)
	must(t, m.Run(parent))
	if err := m.WaitFor(hung, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitFor a hung kernel: %v, want ErrTimeout", err)
	}
	must(t, s.Abandon(hung, errors.New("watchdog")))
	if err := s.Abandon(hung, nil); err == nil {
		t.Fatal("second Abandon accepted")
	}
	if err := m.Wait(hung); !errors.Is(err, ErrAbandoned) || !strings.Contains(err.Error(), "watchdog") {
		t.Fatalf("Wait on abandoned task: %v", err)
	}
	if err := m.Wait(depID); !errors.Is(err, ErrDepFailed) {
		t.Fatalf("dependent of abandoned task: %v", err)
	}
	if err := m.Wait(parent); !errors.Is(err, ErrChildFailed) {
		t.Fatalf("parent of abandoned task: %v", err)
	}
	// A dependent added after the abandon fails at once.
	late := rec(1)
	late.Dependency = hung
	lateID, err := m.Add(late)
	must(t, err)
	if err := m.Wait(lateID); !errors.Is(err, ErrDepFailed) {
		t.Fatalf("late dependent: %v", err)
	}
	if r.runs[0].Load() != 0 || r.runs[1].Load() != 0 {
		t.Fatal("a dependent of an abandoned task ran")
	}
	// The other worker keeps the scheduler usable while one is stuck.
	ok, err := m.Add(rec(2))
	must(t, err)
	must(t, m.Wait(ok))
	// A queued task abandoned before it runs never runs.
	q := rec(3)
	q.Affinity = OnThread(0)
	qid, err := m.Add(q)
	must(t, err)
	must(t, s.Abandon(qid, nil))
	m.RunPinned()
	if r.runs[3].Load() != 0 {
		t.Fatal("abandoned queued task ran")
	}
	close(block) // the hung kernel returns; its slot is then reused
	must(t, s.Close())
}

// TestAbandonWithSiblingsDone: a thread runs a child of P to completion,
// then hangs in another child of P. Abandoning the hung child fails P at
// once: completions the stuck thread has not yet reported to P (its
// deferred parent decrements) must not keep P open.
func TestAbandonWithSiblingsDone(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	hungID := make(chan TaskID, 1)
	r := newRecorder(4)
	reg := testRegistry(t, r, block)
	const kHang, kFirst KernelID = 71, 72
	must(t, reg.Register(kHang, Kernel{Name: "hang", CPU: func(c *Ctx, d *TaskData) error {
		<-block
		return nil
	}}))
	var parent TaskID
	must(t, reg.Register(kFirst, Kernel{Name: "first", CPU: func(c *Ctx, d *TaskData) error {
		// The sibling that hangs runs next on this very thread.
		id, err := c.Add(&Task{Kernel: kHang, Parent: parent, Affinity: OnThread(1)})
		hungID <- id
		return err
	}}))
	s, m := start(t, Config{Workers: 1, MainThreads: 2, Kernels: reg}, r, block)
	runner, err := s.RegisterThread("runner")
	must(t, err)
	parent, err = m.Create(&Task{})
	must(t, err)
	first, err := m.Add(&Task{Kernel: kFirst, Parent: parent, Affinity: OnThread(1)}) // the runner
	must(t, err)
	must(t, m.Run(parent))
	go runner.RunPinned() // runs first, then hangs in its sibling
	hung := <-hungID
	if err := m.Wait(first); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(hung, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitFor the hung child: %v, want ErrTimeout", err)
	}
	must(t, s.Abandon(hung, errors.New("watchdog")))
	if err := m.WaitFor(parent, 2*time.Second); !errors.Is(err, ErrChildFailed) {
		t.Fatalf("parent after its last open child was abandoned: %v, want ErrChildFailed at once", err)
	}
}

// TestAbandonParentOfReusedSlot: the abandoned kernel returns while
// Abandon is still failing its many dependents, so its slot is freed and
// reused at once by a child of another task Q. Abandon must fail its own
// task's parent, not Q.
func TestAbandonParentOfReusedSlot(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	reg := testRegistry(t, nil, nil)
	const kHang2, kAddChild KernelID = 81, 82
	var q TaskID
	must(t, reg.Register(kHang2, Kernel{Name: "hang2", CPU: func(c *Ctx, d *TaskData) error {
		close(started)
		<-release
		return nil
	}}))
	must(t, reg.Register(kAddChild, Kernel{Name: "addchild", CPU: func(c *Ctx, d *TaskData) error {
		_, err := c.Add(&Task{Parent: q})
		return err
	}}))
	s, m := start(t, Config{Workers: 1, PoolSize: 1 << 17, Kernels: reg}, nil, nil)
	var err error
	q, err = m.Create(&Task{})
	must(t, err)
	p, err := m.Create(&Task{})
	must(t, err)
	x, err := m.Add(&Task{Kernel: kHang2, Parent: p})
	must(t, err)
	must(t, m.Run(p))
	<-started
	const nd = 60000
	var last TaskID
	for range nd {
		last, err = m.Add(&Task{Dependency: x})
		must(t, err)
	}
	_, err = m.Add(&Task{Kernel: kAddChild}) // the worker takes it once x returns
	must(t, err)
	done := make(chan struct{})
	go func() { s.Abandon(x, errors.New("watchdog")); close(done) }()
	s.Wait(last) // Abandon has begun failing the dependents
	close(release)
	<-done
	if err := m.WaitFor(p, 5*time.Second); !errors.Is(err, ErrChildFailed) {
		t.Errorf("parent of the abandoned task: %v, want ErrChildFailed", err)
	}
	if err := s.slots[q.index()].err.Load(); err != nil {
		t.Errorf("Q, whose child never failed, got the error %v", err)
	}
	must(t, m.Run(q))
	must(t, m.Wait(q))
}
