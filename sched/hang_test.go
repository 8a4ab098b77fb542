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
