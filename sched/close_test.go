package sched

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A task that depends on a kernel parked in WaitEvent is not in a cycle:
// Close makes the kernel return (nothing else can run, so nothing would
// signal it), and the task then runs. Close used to fail it with ErrCycle
// ("could never run") before it let the kernel return.
func TestCloseWaitEventKernelIsNoCycle(t *testing.T) {
	const kK, kX KernelID = 82, 83
	var xRan atomic.Bool
	parked := make(chan struct{})
	reg := NewRegistry()
	var ev *Event
	must(t, reg.Register(kK, Kernel{Name: "K", CPU: func(c *Ctx, _ *TaskData) error {
		close(parked)
		c.WaitEvent(ev) // never signalled
		return nil
	}}))
	must(t, reg.Register(kX, Kernel{Name: "X", CPU: func(*Ctx, *TaskData) error { xRan.Store(true); return nil }}))
	s, err := New(Config{Kernels: reg, Workers: 2, SpinRounds: 64})
	must(t, err)
	ev = s.NewEvent()
	k, err := s.Add(&Task{Kernel: kK})
	must(t, err)
	x, err := s.Add(&Task{Kernel: kX, Dependency: k})
	must(t, err)
	<-parked
	within(t, 20*time.Second, "Close", func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v, want nil (X waits for K, whose kernel returns at Close)", err)
		}
	})
	if err := s.Wait(k); err != nil {
		t.Errorf("K: %v", err)
	}
	if err := s.Wait(x); err != nil || !xRan.Load() {
		t.Errorf("X: %v (ran %v), want nil and ran", err, xRan.Load())
	}
}

// Once Close began, a running kernel may still add children (the docs of
// Close), through its Ctx or through the Scheduler alike; Scheduler.Add
// used to refuse (ErrClosed) what Ctx.Add accepted.
func TestCloseKernelMayAddThroughScheduler(t *testing.T) {
	const kK KernelID = 84
	started := make(chan struct{})
	proceed := make(chan struct{})
	var ctxErr, schedErr error
	var ids [2]TaskID
	reg := NewRegistry()
	var s *Scheduler
	must(t, reg.Register(kK, Kernel{Name: "K", CPU: func(c *Ctx, _ *TaskData) error {
		close(started)
		<-proceed
		ids[0], ctxErr = c.Add(&Task{Parent: c.Current()})
		ids[1], schedErr = s.Add(&Task{Parent: c.Current()})
		return nil
	}}))
	var err error
	s, err = New(Config{Kernels: reg, Workers: 2, SpinRounds: 64})
	must(t, err)
	k, err := s.Add(&Task{Kernel: kK})
	must(t, err)
	<-started
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	waitUntil(t, 5*time.Second, "Close began", s.closing.Load)
	if _, err := s.Add(&Task{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add from outside during Close: %v, want ErrClosed", err)
	}
	close(proceed)
	within(t, 20*time.Second, "Close", func() { must(t, <-closed) })
	if ctxErr != nil || schedErr != nil {
		t.Errorf("a running kernel's Adds during Close: Ctx.Add %v, Scheduler.Add %v; want both accepted", ctxErr, schedErr)
	}
	for _, id := range append(ids[:], k) {
		if id != NoTask {
			if err := s.Wait(id); err != nil {
				t.Errorf("Wait %v: %v", id, err)
			}
		}
	}
}

// closeObserver calls Close from TaskRan, on the thread that ran the kernel.
type closeObserver struct {
	s    *Scheduler
	once sync.Once
	err  chan error
}

func (o *closeObserver) TaskRan(*RunEvent) {
	o.once.Do(func() { o.err <- o.s.Close() })
}

// Close called from Config.Observer's TaskRan would wait for the thread
// it runs on: it fails with ErrCloseInKernel and closes nothing, as from a
// kernel. It used to never return.
func TestCloseFromObserver(t *testing.T) {
	const kK KernelID = 85
	reg := NewRegistry()
	must(t, reg.Register(kK, Kernel{Name: "K", CPU: func(*Ctx, *TaskData) error { return nil }}))
	obs := &closeObserver{err: make(chan error, 1)}
	s, err := New(Config{Kernels: reg, Workers: 1, Observer: obs})
	must(t, err)
	obs.s = s
	var k TaskID
	within(t, 20*time.Second, "a task whose Observer calls Close", func() {
		k, err = s.Add(&Task{Kernel: kK})
		must(t, err)
		if err := <-obs.err; !errors.Is(err, ErrCloseInKernel) {
			t.Errorf("Close from TaskRan: %v, want ErrCloseInKernel", err)
		}
		must(t, s.Wait(k))
	})
	// Nothing was closed.
	k, err = s.Add(&Task{Kernel: kK})
	must(t, err)
	must(t, s.Wait(k))
	within(t, 20*time.Second, "Close", func() { must(t, s.Close()) })
}
