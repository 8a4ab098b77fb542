package sched

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// parkedBehind starts, on the only worker of s, a kernel P that waits for
// a leaf held by a gate, and then a kernel X run by its worker while P's
// wait is parked (P's wait finds X and hands the worker over). x is X's
// body; it is told when it started. It returns P's and X's IDs, the gate,
// and P's Wait result once P's kernel returned.
func parkedBehind(t *testing.T, s *Scheduler, m *Ctx, x func(c *Ctx)) (p, xid, gate TaskID, pDone *atomic.Pointer[error]) {
	t.Helper()
	var ran atomic.Int32
	leaf := kernelOf(t, s, "leaf", func(*Ctx, *TaskData) error { ran.Add(1); return nil })
	gate, err := m.Create(&Task{})
	must(t, err)
	pDone = new(atomic.Pointer[error])
	pStarted, xStarted := make(chan struct{}), make(chan struct{})
	pk := kernelOf(t, s, "parked", func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: leaf, Dependency: gate})
		if err != nil {
			return err
		}
		close(pStarted)
		err = c.Wait(id) // finds X, hands the worker over, parks
		pDone.Store(&err)
		return err
	})
	xk := kernelOf(t, s, "x", func(c *Ctx, _ *TaskData) error {
		close(xStarted)
		x(c)
		return nil
	})
	p, err = m.Add(&Task{Kernel: pk})
	must(t, err)
	<-pStarted
	xid, err = m.Add(&Task{Kernel: xk})
	must(t, err)
	<-xStarted
	return p, xid, gate, pDone
}

// TestAbandonKernelInWaitEventLeavesParkedWaitsOfItsWorker: a kernel that
// never returns because it waits, in WaitEvent, for an event nobody
// signals (a GPU fence that never completes) does not hold its worker:
// the wait hands the worker over with what it finds, and swaps with a
// parked wait that can go on. Abandoning it must not fail the kernels
// parked on that worker: they resume and finish while it still waits.
func TestAbandonKernelInWaitEventLeavesParkedWaitsOfItsWorker(t *testing.T) {
	s, m := joinSched(t, 1)
	ev := s.NewEvent()
	within(t, 10*time.Second, "abandon a kernel in WaitEvent", func() {
		p, x, gate, pDone := parkedBehind(t, s, m, func(c *Ctx) { c.WaitEvent(ev) })
		time.Sleep(20 * time.Millisecond) // X is asleep in WaitEvent
		must(t, s.Abandon(x, errors.New("fence time-out")))
		must(t, m.Run(gate))
		// P's wait resumes while X still waits for its event.
		for pDone.Load() == nil {
			time.Sleep(time.Millisecond)
		}
		if err := *pDone.Load(); err != nil {
			t.Errorf("P's Wait: %v", err)
		}
		if ev.IsSet() {
			t.Fatal("event set")
		}
		if err := m.WaitFor(p, 5*time.Second); err != nil {
			t.Errorf("P finished while X still waited, yet fails: %v", err)
		}
		ev.Signal()
		must(t, s.Close())
	})
}

// TestAbandonKernelInWaitLeavesParkedWaitsOfItsWorker: the same with a
// kernel X that waits (Wait) for a task that nobody runs for a while: a
// worker's Wait that finds nothing to run swaps with a parked wait that
// can go on, so X does not strand the kernels parked on its worker.
func TestAbandonKernelInWaitLeavesParkedWaitsOfItsWorker(t *testing.T) {
	s, m := joinSched(t, 1)
	never, err := m.Create(&Task{})
	must(t, err)
	within(t, 10*time.Second, "abandon a kernel in Wait", func() {
		p, x, gate, pDone := parkedBehind(t, s, m, func(c *Ctx) { _ = c.Wait(never) })
		time.Sleep(20 * time.Millisecond)
		must(t, s.Abandon(x, nil))
		must(t, m.Run(gate))
		for pDone.Load() == nil {
			time.Sleep(time.Millisecond)
		}
		if err := m.WaitFor(p, 5*time.Second); err != nil {
			t.Errorf("P finished while X still waited, yet fails: %v", err)
		}
		must(t, m.Run(never))
		must(t, s.Close())
	})
}

// TestAbandonSlowKernelTakesParkedKernelsOfItsWorker: Abandon takes a
// running kernel for hung, as its documentation says: a kernel P parked on
// the worker of an abandoned kernel X that was only slow fails too, with
// an error naming X and the worker, though P's kernel runs on and its
// wait ends normally once X returns.
func TestAbandonSlowKernelTakesParkedKernelsOfItsWorker(t *testing.T) {
	s, m := joinSched(t, 1)
	release := make(chan struct{})
	within(t, 10*time.Second, "abandon a slow kernel", func() {
		p, x, gate, pDone := parkedBehind(t, s, m, func(*Ctx) { <-release })
		if err := m.WaitFor(x, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Fatalf("WaitFor X: %v", err)
		}
		must(t, s.Abandon(x, nil))
		err := m.WaitFor(p, 5*time.Second)
		if !errors.Is(err, ErrAbandoned) || !strings.Contains(err.Error(), "waits to resume on worker 0") ||
			!strings.Contains(err.Error(), x.String()) {
			t.Errorf("P: %v, want ErrAbandoned naming worker 0 and %v", err, x)
		}
		must(t, m.Run(gate))
		close(release) // X was only slow
		for pDone.Load() == nil {
			time.Sleep(time.Millisecond)
		}
		if err := *pDone.Load(); err != nil {
			t.Errorf("P's Wait after X returned: %v", err)
		}
		must(t, s.Close())
	})
}

// TestAbandonFailsJoinOwnerWhoseHalfIsUnderIt: a kernel O Joins two
// halves; a thief (the other worker) takes the shared half, which Waits
// for a child that the wait runs on the same goroutine, on top of the
// half; the child hangs. The half is part of O (it runs as O's task), and
// O's Join cannot return before the half does: abandoning the child must
// fail O too, as it fails a kernel suspended under it on its goroutine.
func TestAbandonFailsJoinOwnerWhoseHalfIsUnderIt(t *testing.T) {
	s, m := joinSched(t, 2)
	release, hangStarted, aStarted := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var child atomic.Uint64
	hang := kernelOf(t, s, "hang", func(*Ctx, *TaskData) error {
		close(hangStarted)
		<-release
		return nil
	})
	a := kernelOf(t, s, "a", func(c *Ctx, _ *TaskData) error {
		close(aStarted)
		id, err := c.Add(&Task{Kernel: hang})
		if err != nil {
			return err
		}
		child.Store(uint64(id))
		return c.Wait(id) // runs hang here, on top of the half
	})
	b := kernelOf(t, s, "b", func(*Ctx, *TaskData) error {
		<-aStarted // so a thief takes a
		return nil
	})
	o := kernelOf(t, s, "owner", func(c *Ctx, _ *TaskData) error {
		return c.Join(&Call{Kernel: a}, &Call{Kernel: b})
	})
	within(t, 10*time.Second, "abandon a child run under a Join's stolen half", func() {
		id, err := m.Add(&Task{Kernel: o})
		must(t, err)
		<-hangStarted
		must(t, s.Abandon(TaskID(child.Load()), nil))
		err = m.WaitFor(id, 2*time.Second)
		if !errors.Is(err, ErrAbandoned) {
			t.Errorf("owner: %v, want ErrAbandoned: its Join's half is suspended under the abandoned kernel", err)
		}
		close(release)
		must(t, s.Close())
	})
}

// TestAbandonFailsJoinOwnerWhoseHalfIsParkedBehindIt: a Join's shared
// half, taken by the other worker, waits for a task that cannot run yet;
// the wait hands that worker over with an unrelated task X, which hangs.
// The half is parked behind X, and its owner's Join cannot return before
// the half does: abandoning X fails the owner too.
func TestAbandonFailsJoinOwnerWhoseHalfIsParkedBehindIt(t *testing.T) {
	s, m := joinSched(t, 2)
	release, xStarted, aWaits := make(chan struct{}), make(chan struct{}), make(chan struct{})
	gate, err := m.Create(&Task{})
	must(t, err)
	hang := kernelOf(t, s, "x", func(*Ctx, *TaskData) error {
		close(xStarted)
		<-release
		return nil
	})
	a := kernelOf(t, s, "a", func(c *Ctx, _ *TaskData) error {
		close(aWaits)
		return c.Wait(gate) // finds X, hands the thief's worker over, parks
	})
	b := kernelOf(t, s, "b", func(*Ctx, *TaskData) error {
		<-release // holds the owner's worker, so the other one takes a
		return nil
	})
	o := kernelOf(t, s, "owner", func(c *Ctx, _ *TaskData) error {
		return c.Join(&Call{Kernel: a}, &Call{Kernel: b})
	})
	within(t, 10*time.Second, "abandon a kernel a Join's half is parked behind", func() {
		id, err := m.Add(&Task{Kernel: o})
		must(t, err)
		<-aWaits
		x, err := m.Add(&Task{Kernel: hang})
		must(t, err)
		<-xStarted
		must(t, s.Abandon(x, nil))
		err = m.WaitFor(id, 2*time.Second)
		if !errors.Is(err, ErrAbandoned) || !strings.Contains(err.Error(), "waits to resume on worker") {
			t.Errorf("owner: %v, want ErrAbandoned: its Join's half waits to resume behind the abandoned kernel", err)
		}
		must(t, m.Run(gate))
		close(release)
		must(t, s.Close())
	})
}

// TestGraphStaysRunningWhileStrandedRunnerRuns: a graph node waits for a
// child, the wait runs the child on top of the node's runner, and the
// child hangs. Abandoning the child abandons the runner under it (it
// cannot return before the child does), and the run fails; but the node
// is still running, so the graph must stay busy (ErrGraphRunning) until
// it returns, as it does for an abandoned join: a second run would share
// the counters the stranded runner still counts down.
func TestGraphStaysRunningWhileStrandedRunnerRuns(t *testing.T) {
	s, m := joinSched(t, 1)
	release, hangStarted := make(chan struct{}), make(chan struct{})
	var child atomic.Uint64
	var calls, afterRuns atomic.Int32
	hang := kernelOf(t, s, "hang", func(*Ctx, *TaskData) error {
		close(hangStarted)
		<-release
		return nil
	})
	node := kernelOf(t, s, "node", func(c *Ctx, _ *TaskData) error {
		if calls.Add(1) > 1 {
			return nil
		}
		id, err := c.Add(&Task{Kernel: hang})
		if err != nil {
			return err
		}
		child.Store(uint64(id))
		_ = c.Wait(id) // runs hang here, on top of the runner; its error is not the node's
		return nil
	})
	after := kernelOf(t, s, "after", func(*Ctx, *TaskData) error { afterRuns.Add(1); return nil })
	g := s.NewGraph()
	n, err := g.Add(&Task{Kernel: node})
	must(t, err)
	a, err := g.Add(&Task{Kernel: after})
	must(t, err)
	must(t, g.Precede(n, a))
	within(t, 10*time.Second, "a graph whose runner was stranded", func() {
		root, err := g.Start(m)
		must(t, err)
		<-hangStarted
		must(t, s.Abandon(TaskID(child.Load()), nil))
		if err := m.WaitFor(root, 5*time.Second); !errors.Is(err, ErrAbandoned) {
			t.Errorf("the run: %v, want ErrAbandoned (its runner was stranded)", err)
		}
		if err := g.RunCtx(m); !errors.Is(err, ErrGraphRunning) {
			t.Errorf("Run while the stranded runner's node still runs: %v, want ErrGraphRunning", err)
		}
		close(release)
		for {
			err := g.RunCtx(m)
			if errors.Is(err, ErrGraphRunning) {
				time.Sleep(time.Millisecond)
				continue
			}
			must(t, err)
			break
		}
		if got := afterRuns.Load(); got != 2 {
			t.Errorf("after ran %d times over the stranded run and one good run, want 2", got)
		}
		must(t, s.Close())
	})
}

// TestAbandonRacingReturnsFailsNoBystander: Abandon races kernels that
// return at once (a parent whose Wait runs its child on top of it), while
// independent tasks that never wait run beside them and reuse the slots.
// A task that never waits is never under another kernel nor parked, so
// no Abandon of another task may fail it, however the walk meets slots
// reused under it; and every wait ends.
func TestAbandonRacingReturnsFailsNoBystander(t *testing.T) {
	s, m := joinSched(t, 2)
	var spin atomic.Uint32
	leaf := kernelOf(t, s, "leaf", func(*Ctx, *TaskData) error {
		for i := range 200 {
			spin.Add(uint32(i))
		}
		return nil
	})
	var childID atomic.Uint64
	parent := kernelOf(t, s, "parent", func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: leaf})
		if err != nil {
			return err
		}
		childID.Store(uint64(id))
		_ = c.Wait(id)
		return nil
	})
	stop := make(chan struct{})
	abandoned := make(chan struct{})
	go func() {
		defer close(abandoned)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if id := TaskID(childID.Load()); id != NoTask {
				_ = s.Abandon(id, nil)
			}
			runtime.Gosched()
		}
	}()
	within(t, 10*time.Second, "Abandon racing returning kernels", func() {
		for round := range 1000 {
			p, err := m.Add(&Task{Kernel: parent})
			must(t, err)
			var qs [4]TaskID
			for i := range qs {
				qs[i], err = m.Add(&Task{Kernel: leaf})
				must(t, err)
			}
			_ = m.WaitFor(p, 5*time.Second)
			for _, q := range qs {
				if err := m.WaitFor(q, 5*time.Second); err != nil {
					t.Fatalf("round %d: bystander %v: %v", round, q, err)
				}
			}
		}
	})
	close(stop)
	<-abandoned
	must(t, s.Close())
}
