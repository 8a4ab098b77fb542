package sched

import (
	"errors"
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
