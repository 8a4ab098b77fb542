package sched

// Join as users call it: from registered threads, inside graph nodes,
// deeper than its stack, beside Close, under mixed recursive shapes.

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestJoinFromRegisteredThreadOutsideTask: a registered thread calls
// Join directly (no task of its own: Current is NoTask), with a fib
// recursion below; the result is right, again and again.
func TestJoinFromRegisteredThreadOutsideTask(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	registerFibJoin(t, s)
	cells := make([]uint32, fibSizes[18])
	within(t, 10*time.Second, "Join from a registered thread", func() {
		for range 20 {
			clear(cells)
			// fib(18) = fib(16) + fib(17): the two halves as calls.
			a := Call{Kernel: fibJoinID, Params: Params{16, 1 + fibSizes[17]}, Data: &cells}
			b := Call{Kernel: fibJoinID, Params: Params{17, 1}, Data: &cells}
			must(t, m.Join(&a, &b))
			if got := cells[1] + cells[1+fibSizes[17]]; got != 2584 {
				t.Fatalf("fib(18) from m.Join = %d", got)
			}
		}
	})
}

// TestCloseDuringJoinOnRegisteredThread: a registered thread is inside a
// Join (b blocked outside the scheduler) when another goroutine calls
// Close; once b goes on, the Join returns (a ran, or failed with
// ErrClosed) and Close returns.
func TestCloseDuringJoinOnRegisteredThread(t *testing.T) {
	for i := range 10 {
		s, m := joinSched(t, 1)
		inB := make(chan struct{})
		goOn := make(chan struct{})
		var aRan atomic.Bool
		ka := kernelOf(t, s, "a", func(c *Ctx, d *TaskData) error { aRan.Store(true); return nil })
		kb := kernelOf(t, s, "b", func(c *Ctx, d *TaskData) error {
			close(inB)
			<-goOn
			return nil
		})
		within(t, 10*time.Second, "Join with Close in flight", func() {
			closed := make(chan error, 1)
			joined := make(chan error, 1)
			go func() {
				<-inB
				closed <- s.Close()
			}()
			go func() {
				if i%2 == 0 {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(5 * time.Millisecond)
				close(goOn)
			}()
			joined <- m.Join(&Call{Kernel: ka}, &Call{Kernel: kb})
			err := <-joined
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("Join: %v", err)
			}
			if err == nil && !aRan.Load() {
				t.Errorf("Join returned nil but a never ran")
			}
			if err := <-closed; err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// TestJoinHalfWaitsForPinnedTask: a registered thread Joins; the half a
// worker takes adds a task pinned to that thread and waits for it. The
// thread's wait for the half runs the pinned task (WaitEvent serves its
// pinned queue), so the Join completes.
func TestJoinHalfWaitsForPinnedTask(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	var pinnedRan atomic.Bool
	pinned := kernelOf(t, s, "pinned", func(*Ctx, *TaskData) error { pinnedRan.Store(true); return nil })
	var aStarted atomic.Bool
	ka := kernelOf(t, s, "a", func(c *Ctx, d *TaskData) error {
		aStarted.Store(true)
		id, err := c.Add(&Task{Kernel: pinned, Affinity: OnThread(0)})
		if err != nil {
			return err
		}
		return c.Wait(id)
	})
	kb := kernelOf(t, s, "b", func(c *Ctx, d *TaskData) error {
		// Hold the thread until a worker took a.
		for deadline := time.Now().Add(5 * time.Second); !aStarted.Load() && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		return nil
	})
	within(t, 10*time.Second, "Join whose half waits for a pinned task", func() {
		for range 20 {
			aStarted.Store(false)
			pinnedRan.Store(false)
			must(t, m.Join(&Call{Kernel: ka}, &Call{Kernel: kb}))
			if !pinnedRan.Load() {
				t.Fatal("pinned task did not run")
			}
		}
	})
}

// mixShape is the kernel of TestJoinMixedShapesStress: a recursion whose
// levels split with Join, JoinTasks or Add plus RunInPlace, and whose
// leaves wait in every way the API offers (a child's Wait, an event a
// child or the sibling half sets, a pinned task of the registered thread).
type mixShape struct {
	id     KernelID
	pinned KernelID
	leaf   KernelID
	count  atomic.Int64
	s      *Scheduler
}

func (ms *mixShape) kernel(c *Ctx, d *TaskData) error {
	depth, seed := d.Params[0], d.Params[1]
	ms.count.Add(1)
	if d.Params[2] == 2 { // b of a meeting Join: wait for a's signal first
		c.WaitEvent(d.Data.(*Event))
	}
	if d.Params[2] == 1 { // a of a meeting Join: signal when done
		defer d.Data.(*Event).Signal()
	}
	next := func(i uint32) Params { return Params{depth - 1, seed*2654435761 + i*40503 + 1} }
	if depth == 0 {
		switch seed % 5 {
		case 0:
			id, err := c.Add(&Task{Kernel: ms.leaf})
			if err != nil {
				return err
			}
			return c.Wait(id)
		case 1:
			// A child that signals an event the kernel waits for.
			ev := ms.s.NewEvent()
			if _, err := c.Add(&Task{Kernel: ms.leaf, Data: TaskData{Data: ev}}); err != nil {
				return err
			}
			c.WaitEvent(ev)
			return nil
		case 2:
			if seed%3 == 0 {
				id, err := c.Add(&Task{Kernel: ms.pinned, Affinity: OnThread(0)})
				if err != nil {
					return err
				}
				return c.Wait(id)
			}
		}
		return nil
	}
	switch seed % 4 {
	case 0:
		return c.Join(&Call{Kernel: ms.id, Params: next(0)}, &Call{Kernel: ms.id, Params: next(1)})
	case 1:
		a, b := Task{Kernel: ms.id}, Task{Kernel: ms.id}
		a.Data.Params, b.Data.Params = next(0), next(1)
		return c.JoinTasks(&a, &b)
	case 2:
		a, b := Task{Kernel: ms.id}, Task{Kernel: ms.id}
		a.Data.Params, b.Data.Params = next(0), next(1)
		id, err := c.Add(&a)
		if err != nil {
			return err
		}
		err = c.RunInPlace(&b)
		return joinErrs(c.Wait(id), err)
	default:
		// Halves that meet: b waits for an event a sets.
		ev := ms.s.NewEvent()
		pa, pb := next(0), next(1)
		pa[2], pb[2] = 1, 2
		ka := Call{Kernel: ms.id, Params: pa, Data: ev}
		kb := Call{Kernel: ms.id, Params: pb, Data: ev}
		if err := c.Join(&ka, &kb); err != nil {
			return err
		}
		return nil
	}
}

// TestJoinMixedShapesStress: the mixed recursion from a registered thread
// and from tasks, on one to three workers: no hang, no error, every call
// made once.
func TestJoinMixedShapesStress(t *testing.T) {
	for _, w := range []int{1, 2, 3} {
		s, m := joinSched(t, w)
		ms := &mixShape{s: s}
		ms.leaf = kernelOf(t, s, "leaf", func(_ *Ctx, d *TaskData) error {
			if ev, ok := d.Data.(*Event); ok {
				ev.Signal()
			}
			return nil
		})
		ms.pinned = kernelOf(t, s, "pinned", func(*Ctx, *TaskData) error { return nil })
		ms.id = kernelOf(t, s, "mix", ms.kernel)
		const depth = 9
		within(t, 30*time.Second, "mixed Join shapes", func() {
			for seed := uint32(1); seed <= 12; seed++ {
				ms.count.Store(0)
				var ids []TaskID
				for j := range uint32(3) {
					id, err := m.Add(&Task{Kernel: ms.id, Data: TaskData{Params: Params{depth, seed*7 + j}}})
					must(t, err)
					ids = append(ids, id)
				}
				tk := Task{Kernel: ms.id, Data: TaskData{Params: Params{depth, seed}}}
				if err := m.RunInPlace(&tk); err != nil {
					t.Fatalf("%d workers, seed %d: %v", w, seed, err)
				}
				for _, id := range ids {
					if err := m.Wait(id); err != nil {
						t.Fatalf("%d workers, seed %d: %v", w, seed, err)
					}
				}
				if got, want := ms.count.Load(), int64(4*(1<<(depth+1)-1)); got != want {
					t.Fatalf("%d workers, seed %d: %d calls, want %d", w, seed, got, want)
				}
			}
		})
		must(t, s.Close())
	}
}

// TestJoinDeepHalfWaitsForTheOther: the Rayon shape doc.go lists as
// completing (b waits in WaitEvent for an event a sets) at the bottom of
// a recursion of Joins deeper than the in-place stack (64): there a runs
// in turn after b, so b's wait can never end. Run from a registered
// thread and from a task.
func TestJoinDeepHalfWaitsForTheOther(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	signal := kernelOf(t, s, "signal", func(_ *Ctx, d *TaskData) error {
		d.Data.(*Event).Signal()
		return nil
	})
	await := kernelOf(t, s, "await", func(c *Ctx, d *TaskData) error {
		c.WaitEvent(d.Data.(*Event))
		return nil
	})
	noop := kernelOf(t, s, "noop", func(*Ctx, *TaskData) error { return nil })
	var deep KernelID
	deep = kernelOf(t, s, "deep", func(c *Ctx, d *TaskData) error {
		if n := d.Params[0]; n > 0 {
			return c.Join(&Call{Kernel: noop}, &Call{Kernel: deep, Params: Params{n - 1, d.Params[1]}})
		}
		ev := s.NewEvent()
		if d.Params[1] == 1 {
			a, b := Task{Kernel: signal}, Task{Kernel: await}
			a.Data.Data, b.Data.Data = ev, ev
			return c.JoinTasks(&a, &b)
		}
		return c.Join(&Call{Kernel: signal, Data: ev}, &Call{Kernel: await, Data: ev})
	})
	for _, depth := range []uint32{10, 80, 10 | 1<<8, 80 | 1<<8} {
		within(t, 10*time.Second, "a Join deeper than its stack whose b waits for a", func() {
			tk := Task{Kernel: deep, Data: TaskData{Params: Params{depth & 0xff, depth >> 8}}}
			if err := m.RunInPlace(&tk); err != nil {
				t.Errorf("depth %d from a registered thread: %v", depth, err)
			}
			id, err := m.Add(&tk)
			must(t, err)
			if err := m.Wait(id); err != nil {
				t.Errorf("depth %d as a task: %v", depth, err)
			}
		})
	}
}

// TestJoinFibSmallDeque: with deques of a few entries, Joins find the
// deque full and share a another way; the result is right from a
// registered thread and from a task, on one and two workers.
func TestJoinFibSmallDeque(t *testing.T) {
	for _, w := range []int{1, 2} {
		for _, dq := range []int{2, 8} {
			s, err := New(Config{Workers: w, DequeSize: dq})
			must(t, err)
			m, err := s.RegisterThread("main")
			must(t, err)
			registerFibJoin(t, s)
			cells := make([]uint32, fibSizes[18])
			within(t, 10*time.Second, "Join fib with a small deque", func() {
				for range 5 {
					clear(cells)
					if got := runFibJoin(t, m, 18, &cells); got != 2584 {
						t.Fatalf("%d workers, deque %d: fib(18) = %d", w, dq, got)
					}
					tk := Task{Kernel: fibJoinID}
					tk.Data.Params[0], tk.Data.Data = 18, &cells
					id, err := m.Add(&tk)
					must(t, err)
					must(t, m.Wait(id))
					if cells[0] != 2584 {
						t.Fatalf("%d workers, deque %d: fib(18) as a task = %d", w, dq, cells[0])
					}
				}
			})
			must(t, s.Close())
		}
	}
}
