package sched

// Programs over the public API that mix in-place runs, full pools,
// stall limits, Abandon in nested waits, Close from kernels and pinned
// tasks.

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunInPlaceKernelAddsOnFullPool: Config.PoolSize says a kernel's Add
// of a plain CPU child runs the child in place when every slot is in use.
// A kernel run with RunInPlace from a registered thread is a kernel too:
// with the pool full of held tasks (gates the thread Runs later), its
// child should run, not fail with ErrPoolDeadlock.
func TestRunInPlaceKernelAddsOnFullPool(t *testing.T) {
	s, err := New(Config{Workers: 1, PoolSize: 16, PoolStallLimit: 100 * time.Millisecond})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	var childRan atomic.Int32
	kchild := kernelOf(t, s, "child", func(c *Ctx, d *TaskData) error { childRan.Add(1); return nil })
	kparent := kernelOf(t, s, "parent", func(c *Ctx, d *TaskData) error {
		id, err := c.Add(&Task{Kernel: kchild})
		if err != nil {
			return err
		}
		return c.Wait(id)
	})
	var held []TaskID
	for {
		id, err := m.Create(&Task{})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, id)
		if s.Pending() >= 16 {
			break
		}
	}
	within(t, 10*time.Second, "RunInPlace on a full pool", func() {
		tk := Task{Kernel: kparent}
		err := m.RunInPlace(&tk)
		if err != nil {
			t.Errorf("RunInPlace of a kernel that adds a child, pool full of held gates: %v", err)
		}
		// The same from a Join half on the registered thread.
		err = m.Join(&Call{Kernel: kparent}, &Call{Kernel: kparent})
		if err != nil {
			t.Errorf("Join of kernels that add a child, pool full of held gates: %v", err)
		}
		for _, id := range held {
			must(t, m.Run(id))
		}
		for _, id := range held {
			must(t, m.Wait(id))
		}
	})
}

// TestPoolStallLimitNegativeWaitsForLateRun: with PoolStallLimit < 0 an
// Add on a pool full of held tasks waits until another goroutine Runs
// them, long after the default limit.
func TestPoolStallLimitNegativeWaitsForLateRun(t *testing.T) {
	s, err := New(Config{Workers: 1, PoolSize: 8, PoolStallLimit: -1})
	must(t, err)
	defer s.Close()
	var held []TaskID
	for s.Pending() < 8 {
		id, err := s.Create(&Task{})
		must(t, err)
		held = append(held, id)
	}
	within(t, 10*time.Second, "Add waits for a late Run", func() {
		go func() {
			time.Sleep(700 * time.Millisecond)
			for _, id := range held {
				if err := s.Run(id); err != nil {
					t.Error(err)
				}
			}
		}()
		id, err := s.Add(&Task{})
		if err != nil {
			t.Fatalf("Add with PoolStallLimit < 0: %v", err)
		}
		must(t, s.Wait(id))
	})
}

// TestRunInPlaceFibSmallPool: the Add-and-RunInPlace recursion run in
// place from a registered thread, with a pool far smaller than the
// recursion: the thread's own spine of in-place kernels adds children
// too. Every run is right and none fails with ErrPoolDeadlock.
func TestRunInPlaceFibSmallPool(t *testing.T) {
	for _, w := range []int{1, 2} {
		s, err := New(Config{Workers: w, PoolSize: 16})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		registerFibInPlace(t, s)
		within(t, 10*time.Second, "fib in place on a small pool", func() {
			for range 10 {
				var res uint32
				tk := Task{Kernel: fibInPlaceID}
				tk.Data.Params[0], tk.Data.Data = 22, &res
				if err := m.RunInPlace(&tk); err != nil {
					t.Fatalf("%d workers: %v", w, err)
				}
				if res != 17711 {
					t.Fatalf("%d workers: fib(22) = %d", w, res)
				}
			}
		})
		s.Close()
	}
}

// TestAbandonInNestedWaits: top waits (Wait) for mid, which waits with
// WaitFor (it runs nothing meanwhile, doc.go) for a grandchild that hangs
// or has not started; a watchdog abandons the grandchild: mid's WaitFor
// returns ErrAbandoned at once, top fails through it, and once the hung
// kernel returns the scheduler carries on and closes.
func TestAbandonInNestedWaits(t *testing.T) {
	for _, w := range []int{1, 2} {
		s, m := joinSched(t, w)
		release := make(chan struct{})
		var grand atomic.Uint64
		added := make(chan struct{})
		hang := kernelOf(t, s, "hang", func(*Ctx, *TaskData) error {
			<-release
			return nil
		})
		var midErr atomic.Pointer[error]
		var midID atomic.Uint64
		mid := kernelOf(t, s, "mid", func(c *Ctx, d *TaskData) error {
			id, err := c.Add(&Task{Kernel: hang})
			if err != nil {
				return err
			}
			grand.Store(uint64(id))
			close(added)
			err = c.WaitFor(id, 20*time.Second)
			midErr.Store(&err)
			return err
		})
		top := kernelOf(t, s, "top", func(c *Ctx, d *TaskData) error {
			id, err := c.Add(&Task{Kernel: mid})
			if err != nil {
				return err
			}
			midID.Store(uint64(id))
			return c.Wait(id)
		})
		within(t, 10*time.Second, "abandon in nested waits", func() {
			id, err := m.Add(&Task{Kernel: top})
			must(t, err)
			<-added
			time.Sleep(time.Millisecond)
			must(t, s.Abandon(TaskID(grand.Load()), errors.New("watchdog")))
			if err := m.WaitFor(id, 5*time.Second); !errors.Is(err, ErrAbandoned) {
				t.Errorf("%d workers: top: %v, want ErrAbandoned through its child", w, err)
			}
			// top may end first: abandoned with hang, if hang ran on
			// its worker while it waited (abandonStranded). Mid's
			// WaitFor sees hang abandoned within its poll.
			_ = m.WaitFor(TaskID(midID.Load()), 5*time.Second)
			if p := midErr.Load(); p == nil || !errors.Is(*p, ErrAbandoned) {
				t.Errorf("%d workers: mid's WaitFor did not end with ErrAbandoned", w)
			}
			// The scheduler still works while the hung kernel runs on.
			var n atomic.Int32
			leaf := kernelOf(t, s, "leaf", func(*Ctx, *TaskData) error { n.Add(1); return nil })
			for range 100 {
				id, err := m.Add(&Task{Kernel: leaf})
				must(t, err)
				must(t, m.WaitFor(id, 5*time.Second))
			}
			close(release)
			must(t, s.Close())
		})
	}
}

// TestCloseFromKernelRunInPlace: Close called by a kernel that a
// registered thread runs in place, outside any task (RunInPlace, or a
// Join's half): it either closes or fails with ErrCloseInKernel, and
// never hangs; the Join still returns.
func TestCloseFromKernelRunInPlace(t *testing.T) {
	for _, how := range []string{"RunInPlace", "Join b", "Join a"} {
		s, m := joinSched(t, 1)
		var closeErr atomic.Pointer[error]
		kc := kernelOf(t, s, "closer", func(*Ctx, *TaskData) error {
			err := s.Close()
			closeErr.Store(&err)
			return nil
		})
		noop := kernelOf(t, s, "noop", func(*Ctx, *TaskData) error { return nil })
		within(t, 10*time.Second, "Close from an in-place kernel", func() {
			var err error
			switch how {
			case "RunInPlace":
				err = m.RunInPlace(&Task{Kernel: kc})
			case "Join b":
				err = m.Join(&Call{Kernel: noop}, &Call{Kernel: kc})
			case "Join a":
				err = m.Join(&Call{Kernel: kc}, &Call{Kernel: noop})
			}
			p := closeErr.Load()
			t.Logf("%s: call: %v; Close: %v", how, err, *p)
			if *p != nil && !errors.Is(*p, ErrCloseInKernel) {
				t.Errorf("%s: Close: %v", how, *p)
			}
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("%s: %v", how, err)
			}
			s.Close()
		})
	}
}

// TestPinnedTaskWaitsForPinnedTask: a task pinned to the registered
// thread adds another task pinned there and waits for it (enkiTS users
// reported this as a hang): the thread's wait runs it; completes.
func TestPinnedTaskWaitsForPinnedTask(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	var innerRan atomic.Int32
	inner := kernelOf(t, s, "inner", func(c *Ctx, _ *TaskData) error {
		if c.Index() != s.Workers() {
			return errors.New("inner pinned task ran on another thread")
		}
		innerRan.Add(1)
		return nil
	})
	outer := kernelOf(t, s, "outer", func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: inner, Affinity: OnThread(0)})
		if err != nil {
			return err
		}
		return c.Wait(id)
	})
	within(t, 10*time.Second, "pinned task waiting for a pinned task", func() {
		for range 50 {
			id, err := m.Add(&Task{Kernel: outer, Affinity: OnThread(0)})
			must(t, err)
			must(t, m.Wait(id))
		}
		// And with the thread serving only by RunPinned, from a
		// worker's task that waits for the pinned one.
		id, err := m.Add(&Task{Kernel: outer})
		must(t, err)
		for !s.IsFinished(id) {
			m.RunPinned()
			runtime.Gosched()
		}
		must(t, m.Wait(id))
	})
	if innerRan.Load() != 51 {
		t.Fatalf("inner ran %d times, want 51", innerRan.Load())
	}
}

// TestAbandonFailsKernelsSuspendedUnderIt: a kernel Waits for its child,
// the wait runs the child on the same goroutine, and the child hangs.
// Abandoning the child fails the parent at once too: its kernel cannot
// return before the child's does, so without that its waiters hung with
// it.
func TestAbandonFailsKernelsSuspendedUnderIt(t *testing.T) {
	s, m := joinSched(t, 1)
	release, started := make(chan struct{}), make(chan struct{})
	var child atomic.Uint64
	hang := kernelOf(t, s, "hang", func(c *Ctx, _ *TaskData) error {
		close(started)
		<-release
		return nil
	})
	top := kernelOf(t, s, "top", func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: hang})
		if err != nil {
			return err
		}
		child.Store(uint64(id))
		return c.Wait(id) // the only worker runs hang here, on top of this kernel
	})
	within(t, 10*time.Second, "abandon a child run under its waiting parent", func() {
		id, err := m.Add(&Task{Kernel: top})
		must(t, err)
		<-started
		must(t, s.Abandon(TaskID(child.Load()), errors.New("watchdog")))
		err = m.WaitFor(id, 5*time.Second)
		if !errors.Is(err, ErrAbandoned) || !strings.Contains(err.Error(), "suspended under the kernel of") {
			t.Errorf("top: %v, want ErrAbandoned: suspended under the abandoned kernel", err)
		}
		if err := s.Abandon(id, nil); err == nil {
			t.Errorf("top abandoned twice")
		}
		close(release)
		must(t, s.Close())
	})
}

// TestAbandonFailsWaitsParkedOnItsWorker: a kernel's Wait on the only
// worker finds an unrelated task, hands the worker to another goroutine
// that runs it, and parks; that task hangs. A parked wait resumes only
// when the worker's goroutine gets back to its loop, so abandoning the
// hung task fails the parked kernel too, rather than leave it (and its
// waiters) hung behind it. The other tasks still run once it returns.
func TestAbandonFailsWaitsParkedOnItsWorker(t *testing.T) {
	s, m := joinSched(t, 1)
	release, hangStarted, topStarted := make(chan struct{}), make(chan struct{}), make(chan struct{})
	hang := kernelOf(t, s, "hang", func(*Ctx, *TaskData) error {
		close(hangStarted)
		<-release
		return nil
	})
	var ran atomic.Int32
	leaf := kernelOf(t, s, "leaf", func(*Ctx, *TaskData) error { ran.Add(1); return nil })
	gate, err := m.Create(&Task{})
	must(t, err)
	var topErr atomic.Pointer[error]
	top := kernelOf(t, s, "top", func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: leaf, Dependency: gate})
		if err != nil {
			return err
		}
		close(topStarted)
		err = c.Wait(id) // finds hang, hands the worker over, parks
		topErr.Store(&err)
		return err
	})
	within(t, 10*time.Second, "abandon the task that holds a parked wait's worker", func() {
		id, err := m.Add(&Task{Kernel: top})
		must(t, err)
		<-topStarted
		h, err := m.Add(&Task{Kernel: hang})
		must(t, err)
		<-hangStarted
		must(t, s.Abandon(h, nil))
		err = m.WaitFor(id, 5*time.Second)
		if !errors.Is(err, ErrAbandoned) || !strings.Contains(err.Error(), "waits to resume on worker 0") {
			t.Errorf("top: %v, want ErrAbandoned: waits to resume on its worker", err)
		}
		must(t, m.Run(gate))
		close(release)
		// The worker gets back to its loop, resumes top's wait, runs
		// the leaf; top's kernel returns, its result discarded.
		for topErr.Load() == nil {
			time.Sleep(time.Millisecond)
		}
		if err := *topErr.Load(); err != nil || ran.Load() != 1 {
			t.Errorf("top's Wait after the release: %v, leaf ran %d times", err, ran.Load())
		}
		must(t, s.Close())
	})
}

// TestErrOfAbandonedTaskAsSoonAsFinished: a task reads as finished the
// moment Abandon marks it, so its error must be there at that moment:
// a poller that saw it finished and read Err got nil, as if it had
// succeeded (the record came after the mark; with no failure retained
// yet, Err's fast path answered nil without looking).
func TestErrOfAbandonedTaskAsSoonAsFinished(t *testing.T) {
	s, m := joinSched(t, 1)
	defer s.Close()
	for i := range 3000 {
		if i%2 == 0 {
			s.ForgetErrors() // the no-failure fast path
		}
		id, err := m.Create(&Task{})
		must(t, err)
		go func() { _ = s.Abandon(id, nil) }()
		for !s.IsFinished(id) {
			runtime.Gosched()
		}
		if err := s.Err(id); !errors.Is(err, ErrAbandoned) {
			t.Fatalf("round %d: finished, Err %v, want ErrAbandoned", i, err)
		}
	}
}

// TestRunOfTaskAbandonedWhileHeldFreesItsSlot: a gate abandoned before
// its Run never runs, but its Run (called once, as for every Create)
// must still end its own work, or its slot stays reserved: a small pool
// ran out after as many rounds as it has slots, and a graph whose join
// was abandoned before its release stayed busy.
func TestRunOfTaskAbandonedWhileHeldFreesItsSlot(t *testing.T) {
	s, err := New(Config{Workers: 1, PoolSize: 16, PoolStallLimit: 200 * time.Millisecond})
	must(t, err)
	defer s.Close()
	var ran atomic.Int32
	k := kernelOf(t, s, "k", func(*Ctx, *TaskData) error { ran.Add(1); return nil })
	within(t, 10*time.Second, "gates abandoned while held", func() {
		for i := range 100 {
			g, err := s.Create(&Task{Kernel: k})
			if err != nil {
				t.Fatalf("round %d: Create: %v", i, err)
			}
			child, err := s.Add(&Task{Kernel: k, Dependency: g})
			must(t, err)
			must(t, s.Abandon(g, nil))
			if err := s.Run(g); err != nil {
				t.Fatalf("round %d: Run of an abandoned gate: %v", i, err)
			}
			if err := s.Wait(child); !errors.Is(err, ErrAbandoned) {
				t.Fatalf("round %d: dependent: %v, want ErrAbandoned", i, err)
			}
			if err := s.Run(g); err == nil {
				t.Fatalf("round %d: a second Run succeeded", i)
			}
		}
	})
	if ran.Load() != 0 {
		t.Fatalf("an abandoned gate or its dependent ran (%d)", ran.Load())
	}
}
