package sched

import (
	"errors"
	"fmt"
	"runtime"
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

// Close while many goroutines wait: for held tasks (never Run), for
// dependents of held tasks, for running kernels that wait in turn, and for
// tasks pinned to a registered thread that never serves. Every Wait
// returns; the held and pinned ones and their dependents fail with
// ErrClosed (or ErrDepFailed), the rest succeed.
func TestAdversarialCloseWithPendingWaits(t *testing.T) {
	const kSlow, kWaiter KernelID = 103, 104
	reg := NewRegistry()
	must(t, reg.Register(kSlow, Kernel{Name: "slow", CPU: func(*Ctx, *TaskData) error {
		time.Sleep(time.Millisecond)
		return nil
	}}))
	must(t, reg.Register(kWaiter, Kernel{Name: "waiter", CPU: func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: kSlow})
		if err != nil {
			return err
		}
		return c.Wait(id)
	}}))
	for round := range 5 {
		s, err := New(Config{Kernels: reg, Workers: 2, MainThreads: 2})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		type waited struct {
			id       TaskID
			mustFail bool
		}
		var ids []waited
		for i := range 40 {
			switch i % 4 {
			case 0:
				h, err := m.Create(&Task{Kernel: kSlow})
				must(t, err)
				d, err := m.Add(&Task{Kernel: kSlow, Dependency: h})
				must(t, err)
				ids = append(ids, waited{h, true}, waited{d, true})
			case 1:
				id, err := m.Add(&Task{Kernel: kWaiter})
				must(t, err)
				ids = append(ids, waited{id, false})
			case 2:
				id, err := m.Add(&Task{Kernel: kSlow, Affinity: OnThread(1)}) // thread 1 never registers
				must(t, err)
				ids = append(ids, waited{id, true})
			case 3:
				id, err := m.Add(&Task{Kernel: kSlow})
				must(t, err)
				ids = append(ids, waited{id, false})
			}
		}
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, w := range ids {
			wg.Go(func() { errs[i] = s.Wait(w.id) })
		}
		within(t, 20*time.Second, fmt.Sprintf("round %d: Close with %d waiters", round, len(ids)), func() {
			var cwg sync.WaitGroup
			for range 3 { // Close from several goroutines at once
				cwg.Go(func() { s.Close() })
			}
			cwg.Wait()
			wg.Wait()
		})
		for i, w := range ids {
			if w.mustFail && !errors.Is(errs[i], ErrClosed) && !errors.Is(errs[i], ErrDepFailed) {
				t.Errorf("round %d: Wait %v (held, pinned or dependent): %v, want ErrClosed", round, w.id, errs[i])
			}
			if !w.mustFail && errs[i] != nil {
				t.Errorf("round %d: Wait %v: %v", round, w.id, errs[i])
			}
		}
	}
}

// Close called from a kernel used to wait for ever for that very kernel to
// return. It fails with ErrCloseInKernel and closes nothing; Close from
// outside then works.
func TestAdversarialCloseFromKernel(t *testing.T) {
	const kCloser KernelID = 108
	var s *Scheduler
	res := make(chan error, 1)
	reg := NewRegistry()
	must(t, reg.Register(kCloser, Kernel{Name: "closer", CPU: func(*Ctx, *TaskData) error {
		err := s.Close()
		res <- err
		return err
	}}))
	for _, workers := range []int{1, 2} {
		var err error
		s, err = New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		id, err := s.Add(&Task{Kernel: kCloser})
		must(t, err)
		within(t, 20*time.Second, "Close from a kernel", func() {
			if err := <-res; !errors.Is(err, ErrCloseInKernel) {
				t.Errorf("Close from a kernel: %v, want ErrCloseInKernel", err)
			}
			if err := s.Wait(id); !errors.Is(err, ErrCloseInKernel) {
				t.Errorf("the closer task: %v", err)
			}
			// Still open: more work runs, then Close from outside.
			id, err := s.Add(&Task{})
			must(t, err)
			must(t, s.Wait(id))
			must(t, s.Close())
		})
	}
}

// Close while a kernel and a registered thread wait for an Event that
// nobody signals: Close used to wait for ever for that kernel (whose
// thread spun, its sleep returning at once once the workers stopped).
// WaitEvent now returns once Close has run everything that can run.
func TestCloseWithUnsignalledEvent(t *testing.T) {
	const kEv KernelID = 112
	var e *Event
	started := make(chan struct{}, 1)
	reg := NewRegistry()
	must(t, reg.Register(kEv, Kernel{Name: "waits for an event", CPU: func(c *Ctx, _ *TaskData) error {
		started <- struct{}{}
		c.WaitEvent(e)
		if e.IsSet() {
			return errors.New("event set")
		}
		return nil
	}}))
	for _, workers := range []int{1, 2} {
		s, err := New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		e = s.NewEvent()
		id, err := s.Add(&Task{Kernel: kEv})
		must(t, err)
		<-started
		mainDone := make(chan struct{})
		go func() {
			defer close(mainDone)
			m, err := s.RegisterThread("main")
			if err != nil {
				return // Close came first
			}
			m.WaitEvent(e)
		}()
		within(t, 20*time.Second, fmt.Sprintf("Close with an unsignalled event (%d workers)", workers), func() {
			must(t, s.Close())
			<-mainDone
			must(t, s.Wait(id))
		})
	}
}

// blockingPlacer holds the first Place call until release is closed: it
// stands for an Add from outside that is preempted between Add's check
// for Close and the queueing of its task.
type blockingPlacer struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (p *blockingPlacer) Place(KernelID, *Kernel, *TaskData) (Affinity, uint32) {
	p.once.Do(func() {
		close(p.entered)
		<-p.release
	})
	return AnyWorker, 0
}

// An Add that raced with Close (it passed the closed check, Close found
// the scheduler idle and stopped its workers, and only then the task was
// queued) used to leave the task queued for ever: its Wait hung. Now the
// late Add fails it with ErrClosed.
func TestAddRacingClose(t *testing.T) {
	const kLate KernelID = 49
	reg := NewRegistry()
	must(t, reg.Register(kLate, Kernel{Name: "late", CPU: func(*Ctx, *TaskData) error { return nil }}))
	p := &blockingPlacer{entered: make(chan struct{}), release: make(chan struct{})}
	s, err := New(Config{Kernels: reg, Workers: 1, Placer: p})
	must(t, err)
	added := make(chan TaskID, 1)
	go func() {
		id, err := s.Add(&Task{Kernel: kLate, Affinity: Auto})
		if err != nil {
			t.Error(err)
		}
		added <- id
	}()
	<-p.entered
	within(t, 20*time.Second, "Close", func() { must(t, s.Close()) })
	close(p.release)
	id := <-added
	within(t, 20*time.Second, "Wait for a task added as Close finished", func() {
		if err := s.Wait(id); !errors.Is(err, ErrClosed) {
			t.Errorf("Wait: %v, want ErrClosed", err)
		}
	})
	// The same for a held task: Create racing with Close.
	p2 := &blockingPlacer{entered: make(chan struct{}), release: make(chan struct{})}
	s2, err := New(Config{Kernels: reg, Workers: 1, Placer: p2})
	must(t, err)
	held, err := s2.Create(&Task{Kernel: kLate, Affinity: Auto})
	must(t, err)
	ran := make(chan error, 1)
	go func() { ran <- s2.Run(held) }()
	<-p2.entered
	within(t, 20*time.Second, "Close", func() { must(t, s2.Close()) })
	close(p2.release)
	must(t, <-ran)
	within(t, 20*time.Second, "Wait for a task Run as Close finished", func() {
		if err := s2.Wait(held); !errors.Is(err, ErrClosed) {
			t.Errorf("Wait: %v, want ErrClosed", err)
		}
	})
}

func TestCloseWithPendingWork(t *testing.T) {
	before := runtime.NumGoroutine()
	const n = 3000
	r := newRecorder(n + 2)
	reg := testRegistry(t, r, nil)
	s, err := New(Config{Kernels: reg, Workers: 3, MainThreads: 2})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	var ids []TaskID
	var prev TaskID
	for i := 0; i < n; i++ {
		tk := rec(i)
		if i%3 == 0 {
			tk.Dependency = prev
		}
		id, err := m.Add(tk)
		must(t, err)
		prev = id
		ids = append(ids, id)
	}
	// A task pinned to a registered thread that never runs it.
	pinned := rec(n)
	pinned.Affinity = OnThread(1)
	pid, err := m.Add(pinned)
	must(t, err)
	must(t, s.Close())
	for i, id := range ids {
		if !s.IsFinished(id) {
			t.Fatalf("task %d not finished after Close", i)
		}
		if r.runs[i].Load() != 1 {
			t.Fatalf("task %d ran %d times", i, r.runs[i].Load())
		}
	}
	if err := s.Err(pid); !errors.Is(err, ErrClosed) {
		t.Fatalf("pinned task: %v, want ErrClosed", err)
	}
	waitGoroutines(t, before)
}
