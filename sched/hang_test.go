package sched

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A cycle through parents and dependencies is refused by Add where it is
// cheap to see, and one that Add cannot see no longer hangs its waiters:
// Close fails its tasks (ErrCycle) and every Wait returns.
func TestCycles(t *testing.T) {
	s, err := New(Config{Workers: 2})
	must(t, err)
	defer s.Close()
	// X -> child C -> D -> X: D depends on X, C (X's child) on D.
	x, err := s.Create(&Task{})
	must(t, err)
	d, err := s.Add(&Task{Dependency: x})
	must(t, err)
	if _, err := s.Add(&Task{Parent: x, Dependency: d}); !errors.Is(err, ErrCycle) {
		t.Fatalf("Add closing the cycle X -> C -> D -> X: %v, want ErrCycle", err)
	}
	if _, err := s.Add(&Task{Parent: x, Dependency: x}); !errors.Is(err, ErrSelfDepend) {
		t.Fatalf("Add depending on its parent: %v, want ErrSelfDepend", err)
	}
	must(t, s.Run(x))
	must(t, s.Wait(x))
	must(t, s.Wait(d))

	// One step longer (X -> child C -> D -> E -> X): Add does not see it.
	x, err = s.Create(&Task{})
	must(t, err)
	e, err := s.Add(&Task{Dependency: x})
	must(t, err)
	d, err = s.Add(&Task{Dependency: e})
	must(t, err)
	c, err := s.Add(&Task{Parent: x, Dependency: d})
	must(t, err)
	must(t, s.Run(x))
	ids := []TaskID{x, c, d, e}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = s.Wait(id) })
	}
	within(t, 20*time.Second, "Close with a cycle", func() {
		if err := s.Close(); !errors.Is(err, ErrCycle) {
			t.Errorf("Close: %v, want an error naming the cycle", err)
		}
	})
	within(t, 20*time.Second, "Wait on the tasks of a cycle", wg.Wait)
	for i, id := range ids {
		if !errors.Is(errs[i], ErrCycle) && !errors.Is(errs[i], ErrClosed) {
			t.Errorf("Wait %v during Close: %v, want ErrCycle or ErrClosed", id, errs[i])
		}
		within(t, 20*time.Second, "Wait after Close", func() {
			if err := s.Wait(id); err == nil {
				t.Errorf("Wait %v after Close: nil, want an error", id)
			}
		})
	}
}

// The deadlock helping can make, built exactly: A waits for its child B;
// the waiting thread runs C meanwhile; C waits for D; D depends on A. The
// wait in C must fail (ErrDeadlock, naming the tasks) instead of sleeping
// forever; A then finishes, and D runs after it.
func TestHelpingWaitDeadlock(t *testing.T) {
	const kA, kB, kC, kD KernelID = 42, 43, 44, 45
	var a, c, d atomic.Uint64
	var cErr error
	var dRan atomic.Bool
	reg := NewRegistry()
	must(t, reg.Register(kB, Kernel{Name: "B", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kD, Kernel{Name: "D", CPU: func(*Ctx, *TaskData) error { dRan.Store(true); return nil }}))
	must(t, reg.Register(kC, Kernel{Name: "C", CPU: func(x *Ctx, _ *TaskData) error {
		id, err := x.Add(&Task{Kernel: kD, Dependency: TaskID(a.Load())})
		if err != nil {
			return err
		}
		d.Store(uint64(id))
		cErr = x.Wait(id)
		return cErr
	}}))
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: func(x *Ctx, _ *TaskData) error {
		a.Store(uint64(x.Current()))
		// Both pinned to this thread, C first: the wait for B runs C.
		id, err := x.Add(&Task{Kernel: kC, Affinity: OnThread(0)})
		if err != nil {
			return err
		}
		c.Store(uint64(id))
		b, err := x.Add(&Task{Kernel: kB, Affinity: OnThread(0), Parent: x.Current()})
		if err != nil {
			return err
		}
		return x.Wait(b)
	}}))
	for _, workers := range []int{1, 2} {
		s, err := New(Config{Kernels: reg, Workers: workers, SpinRounds: 64})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		dRan.Store(false)
		cErr = nil
		within(t, 20*time.Second, "A, C and D", func() {
			ida, err := m.Add(&Task{Kernel: kA, Affinity: OnThread(0)})
			must(t, err)
			if err := m.Wait(ida); err != nil {
				t.Errorf("A: %v", err)
			}
			if err := m.Wait(TaskID(c.Load())); !errors.Is(err, ErrDeadlock) {
				t.Errorf("C: %v, want ErrDeadlock", err)
			}
			if err := m.Wait(TaskID(d.Load())); err != nil || !dRan.Load() {
				t.Errorf("D: %v (ran %v)", err, dRan.Load())
			}
		})
		for _, id := range []TaskID{TaskID(a.Load()), TaskID(c.Load()), TaskID(d.Load())} {
			if cErr == nil || !strings.Contains(cErr.Error(), id.String()) {
				t.Errorf("the error does not name %v: %v", id, cErr)
			}
		}
		t.Log(cErr)
		must(t, s.Close())
	}
}

// The same deadlock across two threads: on thread 0, A waits for its child
// B and the thread runs C, which waits for D; on thread 1, E waits for its
// child F and the thread runs G, which waits for H. D depends on E and H on
// A: each thread's inner wait needs the kernel suspended on the other.
// Whichever thread goes to sleep last sees the other asleep and fails its
// wait with ErrDeadlock; everything then finishes.
func TestHelpingWaitDeadlockTwoThreads(t *testing.T) {
	const kA, kB, kC, kE, kG, kLeaf KernelID = 50, 51, 52, 53, 54, 55
	var a, e atomic.Uint64
	var cErr, gErr error
	reg := NewRegistry()
	leaf := func(*Ctx, *TaskData) error { return nil }
	must(t, reg.Register(kLeaf, Kernel{Name: "leaf", CPU: leaf}))
	must(t, reg.Register(kB, Kernel{Name: "B", CPU: leaf}))
	waiter := func(dep *atomic.Uint64, res *error) KernelFunc {
		return func(x *Ctx, _ *TaskData) error {
			id, err := x.Add(&Task{Kernel: kLeaf, Dependency: TaskID(dep.Load())})
			if err != nil {
				return err
			}
			*res = x.Wait(id)
			return *res
		}
	}
	must(t, reg.Register(kC, Kernel{Name: "C", CPU: waiter(&e, &cErr)})) // D depends on E
	must(t, reg.Register(kG, Kernel{Name: "G", CPU: waiter(&a, &gErr)})) // H depends on A
	outer := func(thread int, helper KernelID) KernelFunc {
		return func(x *Ctx, _ *TaskData) error {
			if _, err := x.Add(&Task{Kernel: helper, Affinity: OnThread(thread)}); err != nil {
				return err
			}
			b, err := x.Add(&Task{Kernel: kB, Affinity: OnThread(thread), Parent: x.Current()})
			if err != nil {
				return err
			}
			return x.Wait(b)
		}
	}
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: outer(0, kC)}))
	must(t, reg.Register(kE, Kernel{Name: "E", CPU: outer(1, kG)}))
	s, err := New(Config{Kernels: reg, Workers: 1, MainThreads: 2, SpinRounds: 64})
	must(t, err)
	ida, err := s.Add(&Task{Kernel: kA, Affinity: OnThread(0)})
	must(t, err)
	ide, err := s.Add(&Task{Kernel: kE, Affinity: OnThread(1)})
	must(t, err)
	a.Store(uint64(ida))
	e.Store(uint64(ide))
	within(t, 20*time.Second, "two threads each waiting on the other's suspended kernel", func() {
		var wg sync.WaitGroup
		for i, id := range []TaskID{ida, ide} {
			wg.Go(func() {
				c, err := s.RegisterThread(fmt.Sprint("thread", i))
				if err != nil {
					t.Error(err)
					return
				}
				if c.Index() != s.Workers()+i {
					t.Errorf("registered as thread %d", c.Index()-s.Workers())
				}
				if err := c.Wait(id); err != nil {
					t.Errorf("thread %d: %v", i, err)
				}
			})
			// Register in order: thread 0 first.
			for s.nreg.Load() <= int32(i) {
				time.Sleep(time.Millisecond)
			}
		}
		wg.Wait()
	})
	if !errors.Is(cErr, ErrDeadlock) && !errors.Is(gErr, ErrDeadlock) {
		t.Errorf("C: %v; G: %v; want ErrDeadlock from one of them", cErr, gErr)
	}
	t.Log(cErr, gErr)
	must(t, s.Close())
}

// The wait-for cycles that go through a task's children, which are not
// recorded: kernel A adds C and a child B of A that depends on C, and waits
// for B. C (run by A's thread while it helps, or by another thread) builds
// a held chain P -> P2 -> ... -> Q of children, Q depending through a chain
// of dependencies on A (or on A's parent R), and waits for P. P needs Q,
// Q needs A (or R, which needs its child A), and A's kernel cannot return
// before B, B before C, C before P. On one thread A is suspended under C's
// wait; on several, A's thread sleeps waiting for B. Each shape, 1 to 3
// levels of children and of dependencies, on 1, 2 and 4 workers plus the
// helping main thread, must end with a wait failing with ErrDeadlock and
// naming the tasks, and then every task must finish: no hang.
func TestDeadlockThroughChildren(t *testing.T) {
	const kA, kC, kLeaf KernelID = 90, 91, 92
	type shape struct {
		children, deps int
		onRoot         bool // the dependency chain starts at A's parent
	}
	var cur shape
	var aID, rID atomic.Uint64
	type result struct {
		who  string
		err  error
		path []TaskID // C's: P's chain, Q, the dependency chain
	}
	results := make(chan result, 4)
	reg := NewRegistry()
	leaf := func(*Ctx, *TaskData) error { return nil }
	must(t, reg.Register(kLeaf, Kernel{Name: "leaf", CPU: leaf}))
	must(t, reg.Register(kC, Kernel{Name: "C", CPU: func(x *Ctx, _ *TaskData) error {
		var path []TaskID
		dep := TaskID(aID.Load())
		if cur.onRoot {
			dep = TaskID(rID.Load())
		}
		for i := 1; i < cur.deps; i++ {
			d, err := x.Add(&Task{Kernel: kLeaf, Dependency: dep})
			if err != nil {
				return err
			}
			path = append(path, d)
			dep = d
		}
		var held []TaskID
		parent := NoTask
		for i := 0; i < cur.children; i++ {
			p, err := x.Create(&Task{Parent: parent})
			if err != nil {
				return err
			}
			held = append(held, p)
			parent = p
		}
		q, err := x.Add(&Task{Kernel: kLeaf, Parent: parent, Dependency: dep})
		if err != nil {
			return err
		}
		for i := len(held) - 1; i >= 0; i-- {
			if err := x.Run(held[i]); err != nil {
				return err
			}
		}
		path = append(append(held, q), path...)
		err = x.Wait(held[0])
		results <- result{"C", err, path}
		return err
	}}))
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: func(x *Ctx, _ *TaskData) error {
		aID.Store(uint64(x.Current()))
		c, err := x.Add(&Task{Kernel: kC})
		if err != nil {
			return err
		}
		b, err := x.Add(&Task{Kernel: kLeaf, Parent: x.Current(), Dependency: c})
		if err != nil {
			return err
		}
		err = x.Wait(b)
		results <- result{"A", err, nil}
		return err
	}}))
	for _, workers := range []int{1, 2, 4} {
		for _, sh := range []shape{{1, 1, false}, {2, 1, false}, {1, 2, false}, {2, 2, false}, {3, 3, false}, {1, 1, true}, {3, 2, true}} {
			name := fmt.Sprintf("workers=%d/children=%d/deps=%d/onRoot=%v", workers, sh.children, sh.deps, sh.onRoot)
			cur = sh
			s, err := New(Config{Kernels: reg, Workers: workers, SpinRounds: 64})
			must(t, err)
			m, err := s.RegisterThread("main")
			must(t, err)
			within(t, 20*time.Second, name, func() {
				r, err := m.Create(&Task{})
				must(t, err)
				rID.Store(uint64(r))
				a, err := m.Add(&Task{Kernel: kA, Parent: r})
				must(t, err)
				must(t, m.Run(r))
				if err := m.Wait(r); err == nil {
					t.Errorf("%s: R succeeded; its child A should have failed", name)
				}
				var dead *result
				var c result
				for range 2 {
					res := <-results
					if errors.Is(res.err, ErrDeadlock) && dead == nil {
						dead = &res
					}
					if res.who == "C" {
						c = res
					}
				}
				if dead == nil {
					t.Errorf("%s: no wait failed with ErrDeadlock", name)
					return
				}
				for _, id := range append([]TaskID{a}, c.path...) {
					if !strings.Contains(dead.err.Error(), id.String()) {
						t.Errorf("%s: the error does not name %v: %v", name, id, dead.err)
					}
				}
				for _, id := range c.path {
					m.Wait(id) // every task finishes (most fail)
				}
				if testing.Verbose() {
					t.Logf("%s: %s: %v", name, dead.who, dead.err)
				}
			})
			within(t, 20*time.Second, name+": Close", func() { must(t, s.Close()) })
		}
	}
}

// WaitFor's time-out holds even when the awaited work never returns: a
// waiting thread used to help, could pick up a kernel that blocks for
// ever, and then never looked at its deadline again. Shapes: a registered
// thread waiting for a task in its own deque while the only worker is
// stuck; the same task pinned to the waiting thread; a kernel that waits
// for its hung child. Each WaitFor of 50 ms must return ErrTimeout within
// a generous bound while other goroutines keep the CPUs busy.
func TestWaitForTimeoutHolds(t *testing.T) {
	const kHang, kWaiter KernelID = 93, 94
	stuck := make(chan struct{})
	started := make(chan struct{}, 16)
	reg := NewRegistry()
	must(t, reg.Register(kHang, Kernel{Name: "hang", CPU: func(*Ctx, *TaskData) error {
		started <- struct{}{}
		<-stuck
		return nil
	}}))
	waited := make(chan error, 1)
	must(t, reg.Register(kWaiter, Kernel{Name: "waiter", CPU: func(x *Ctx, _ *TaskData) error {
		h, err := x.Add(&Task{Kernel: kHang, Parent: x.Current()})
		if err != nil {
			return err
		}
		t0 := time.Now()
		err = x.WaitFor(h, 50*time.Millisecond)
		if el := time.Since(t0); el > 5*time.Second {
			err = fmt.Errorf("returned after %v: %w", el, err)
		}
		waited <- err
		return nil
	}}))
	// Load: the time-out must hold on a busy machine too.
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopLoad := func() { stopOnce.Do(func() { close(stop) }) }
	t.Cleanup(stopLoad) // also when the test fails early
	var sink atomic.Uint32
	for range 4 {
		go func() {
			for x := uint32(1); ; x = spinWork(x) {
				select {
				case <-stop:
					sink.Add(x)
					return
				default:
				}
			}
		}()
	}
	waitFor := func(name string, m *Ctx, id TaskID) {
		t.Helper()
		within(t, 20*time.Second, name, func() {
			t0 := time.Now()
			err := m.WaitFor(id, 50*time.Millisecond)
			if el := time.Since(t0); !errors.Is(err, ErrTimeout) || el > 5*time.Second {
				t.Errorf("%s: WaitFor(50ms): %v after %v, want ErrTimeout within 5s", name, err, el)
			}
		})
	}
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	// The only worker hangs first.
	_, err = s.Add(&Task{Kernel: kHang})
	must(t, err)
	<-started
	h, err := m.Add(&Task{Kernel: kHang}) // in main's own deque
	must(t, err)
	waitFor("own deque", m, h)
	p, err := m.Add(&Task{Kernel: kHang, Affinity: OnThread(0)})
	must(t, err)
	waitFor("pinned to the waiting thread", m, p)
	must(t, s.Abandon(h, nil))
	must(t, s.Abandon(p, nil))

	// A kernel waiting for its hung child; another worker runs the child.
	s2, err := New(Config{Kernels: reg, Workers: 2})
	must(t, err)
	_, err = s2.Add(&Task{Kernel: kWaiter})
	must(t, err)
	within(t, 20*time.Second, "a kernel's WaitFor", func() {
		if err := <-waited; !errors.Is(err, ErrTimeout) {
			t.Errorf("a kernel's WaitFor(50ms) for its hung child: %v, want ErrTimeout within 5s", err)
		}
	})
	stopLoad()   // the load ends
	close(stuck) // the hung kernels return
	within(t, 20*time.Second, "Close", func() {
		must(t, s.Close())
		must(t, s2.Close())
	})
}
