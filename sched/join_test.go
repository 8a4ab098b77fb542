package sched

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// joinSched makes a scheduler with w workers and a registered thread.
func joinSched(t testing.TB, w int) (*Scheduler, *Ctx) {
	t.Helper()
	s, err := New(Config{Workers: w})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	return s, m
}

// kernelOf registers f as a simple kernel named name in s's registry.
func kernelOf(t testing.TB, s *Scheduler, name string, f KernelFunc) KernelID {
	t.Helper()
	id, err := s.Kernels().RegisterNext(Kernel{Name: name, CPU: f})
	must(t, err)
	return id
}

// fibJoinID is the Join fib kernel's ID in the registry it was last
// registered with.
var fibJoinID KernelID

// fibSizes[n] is the number of calls fib(n) makes, itself included: the
// size of its subtree in the call tree.
var fibSizes = func() (t [48]uint32) {
	t[0], t[1] = 1, 1
	for n := 2; n < len(t); n++ {
		t[n] = 1 + t[n-1] + t[n-2]
	}
	return t
}()

// fibJoinKernel: fib with a call per task, splitting with Join. Each call
// writes its result in the cell of its place in the call tree (Params[1],
// its preorder index: fib(n-1) right after it, fib(n-2) after fib(n-1)'s
// subtree), so halves that run on different threads share nothing and
// nothing is allocated.
func fibJoinKernel(c *Ctx, d *TaskData) error {
	n, i := d.Params[0], d.Params[1]
	res := *d.Data.(*[]uint32)
	if n < 2 {
		res[i] = n
		return nil
	}
	if err := c.Join(
		&Call{Kernel: fibJoinID, Params: Params{n - 2, i + 1 + fibSizes[n-1]}, Data: d.Data},
		&Call{Kernel: fibJoinID, Params: Params{n - 1, i + 1}, Data: d.Data},
	); err != nil {
		return err
	}
	res[i] = res[i+1] + res[i+1+fibSizes[n-1]]
	return nil
}

func registerFibJoin(t testing.TB, s *Scheduler) {
	t.Helper()
	id, err := s.Kernels().RegisterNext(Kernel{Name: "fib-join", CPU: fibJoinKernel})
	must(t, err)
	fibJoinID = id
}

// runFibJoin computes fib(n) from thread m with Join at every level.
func runFibJoin(t testing.TB, m *Ctx, n uint32, cells *[]uint32) uint32 {
	t.Helper()
	tk := Task{Kernel: fibJoinID}
	tk.Data.Params[0], tk.Data.Data = n, cells
	if err := m.RunInPlace(&tk); err != nil {
		t.Fatal(err)
	}
	return (*cells)[0]
}

// TestJoinFib: fib(20) split with Join at every level is right on 1, 2 and
// 4 workers, from a registered thread and from a task, and allocates
// nothing.
func TestJoinFib(t *testing.T) {
	for _, w := range []int{1, 2, 4} {
		s, m := joinSched(t, w)
		registerFibJoin(t, s)
		cells := make([]uint32, fibSizes[20])
		run := func() {
			if got := runFibJoin(t, m, 20, &cells); got != 6765 {
				t.Fatalf("%d workers: fib(20) = %d", w, got)
			}
		}
		run()
		// A Join whose half was taken hands its worker over while it
		// waits, and the goroutine that takes it over is made once.
		if a := testing.AllocsPerRun(50, run); a != 0 {
			t.Fatalf("%d workers: %.1f allocations per fib(20)", w, a)
		}
		// From a task: the halves belong to it.
		tk := Task{Kernel: fibJoinID}
		tk.Data.Params[0], tk.Data.Data = 18, &cells
		id, err := m.Add(&tk)
		must(t, err)
		must(t, m.Wait(id))
		if cells[0] != 2584 {
			t.Fatalf("%d workers: fib(18) as a task = %d", w, cells[0])
		}
		s.Close()
	}
}

// TestJoinSharedHalfRunsElsewhere: while b holds the calling thread, a
// worker takes a, runs it as part of the caller's task (Current), and
// Join returns after both; a's error comes back.
func TestJoinSharedHalfRunsElsewhere(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	var aThread, bThread atomic.Int32
	var aStarted atomic.Bool
	var aCurrent atomic.Uint64
	errA := errors.New("a failed")
	ka := kernelOf(t, s, "half-a", func(c *Ctx, d *TaskData) error {
		aThread.Store(int32(c.Index()))
		aCurrent.Store(uint64(c.Current()))
		aStarted.Store(true)
		return errA
	})
	kb := kernelOf(t, s, "half-b", func(c *Ctx, d *TaskData) error {
		bThread.Store(int32(c.Index()))
		for deadline := time.Now().Add(10 * time.Second); !aStarted.Load() && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		return nil
	})
	kp := kernelOf(t, s, "joiner", func(c *Ctx, d *TaskData) error {
		err := c.Join(&Call{Kernel: ka}, &Call{Kernel: kb})
		if !errors.Is(err, errA) {
			t.Errorf("Join: %v, want a's error", err)
		}
		if !aStarted.Load() {
			t.Error("Join returned before a ran")
		}
		return nil
	})
	var p TaskID
	within(t, 20*time.Second, "join with a stolen half", func() {
		var err error
		p, err = m.Add(&Task{Kernel: kp})
		must(t, err)
		must(t, m.Wait(p))
	})
	if aThread.Load() == bThread.Load() {
		t.Fatalf("a and b both ran on thread %d: nobody took the shared half while b held the thread", aThread.Load())
	}
	if TaskID(aCurrent.Load()) != p {
		t.Fatalf("a ran with Current %v, want the joining task %v", TaskID(aCurrent.Load()), p)
	}
}

// TestJoinErrors: each half's error comes back, both joined; a panic in
// either half, run in place or elsewhere, is ErrKernelPanic naming the
// kernel, joined with the other half's error; bad tasks are refused
// naming what is wrong.
func TestJoinErrors(t *testing.T) {
	s, m, _ := newTestSched(t, Config{Workers: 1})
	e1, e2 := errors.New("first"), errors.New("second")
	fail := func(e error) KernelID {
		id, err := s.Kernels().RegisterNext(Kernel{Name: "fail-" + e.Error(), CPU: func(*Ctx, *TaskData) error { return e }})
		must(t, err)
		return id
	}
	k1, k2 := fail(e1), fail(e2)
	ok := kernelOf(t, s, "ok", func(*Ctx, *TaskData) error { return nil })
	boom := kernelOf(t, s, "boom", func(*Ctx, *TaskData) error { panic("boom") })

	for _, tasks := range []bool{false, true} {
		join := func(a, b KernelID) error { return m.Join(&Call{Kernel: a}, &Call{Kernel: b}) }
		if tasks {
			join = func(a, b KernelID) error { return m.JoinTasks(&Task{Kernel: a}, &Task{Kernel: b}) }
		}
		if err := join(k1, ok); !errors.Is(err, e1) {
			t.Errorf("tasks %v: a fails: %v", tasks, err)
		}
		if err := join(ok, k2); !errors.Is(err, e2) {
			t.Errorf("tasks %v: b fails: %v", tasks, err)
		}
		if err := join(k1, k2); !errors.Is(err, e1) || !errors.Is(err, e2) {
			t.Errorf("tasks %v: both fail: %v", tasks, err)
		}
		for _, c := range []struct{ a, b KernelID }{{boom, ok}, {ok, boom}} {
			err := join(c.a, c.b)
			if !errors.Is(err, ErrKernelPanic) || !strings.Contains(err.Error(), `"boom"`) {
				t.Errorf("tasks %v: panic in a half: %v", tasks, err)
			}
		}
		// A panic in one half, an error in the other: both come back.
		for _, c := range []struct {
			a, b KernelID
			want error
		}{{boom, k2, e2}, {k1, boom, e1}} {
			if err := join(c.a, c.b); !errors.Is(err, ErrKernelPanic) || !errors.Is(err, c.want) {
				t.Errorf("tasks %v: a panic and %v: %v", tasks, c.want, err)
			}
		}
		if err := join(ok, ok); err != nil {
			t.Errorf("tasks %v: after the failures: %v", tasks, err)
		}
		if err := join(KernelNone, KernelNone); err != nil {
			t.Errorf("tasks %v: KernelNone halves: %v", tasks, err)
		}
		if err := join(999, ok); err == nil || !strings.Contains(err.Error(), "kernel 999") || !errors.Is(err, ErrUnknownKernel) {
			t.Errorf("tasks %v: unknown kernel: %v", tasks, err)
		}
	}
	if err := m.Join(nil, &Call{Kernel: ok}); err == nil || !strings.Contains(err.Error(), "nil *Call (a true, b false)") {
		t.Errorf("a nil Call: %v, want an error naming it", err)
	}
	if err := m.Join(&Call{Kernel: kScale}, &Call{Kernel: ok}); err == nil || !strings.Contains(err.Error(), "Simple") {
		t.Errorf("a streaming kernel in a Call: %v, want an error naming Simple kernels", err)
	}
	bad := []struct {
		name string
		a, b Task
		want string
	}{
		{"a parent", Task{Kernel: ok, Parent: TaskID(1)}, Task{Kernel: ok}, "no Parent"},
		{"another thread's affinity", Task{Kernel: ok}, Task{Kernel: ok, Affinity: OnThread(5)}, "not served by this thread"},
	}
	for _, c := range bad {
		err := m.JoinTasks(&c.a, &c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "join") {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestJoinWhenHalfLeavesTasks: b adds children to the caller's task and
// leaves them queued, on top of a's entry; Join still runs a exactly once
// and the children all run.
func TestJoinWhenHalfLeavesTasks(t *testing.T) {
	for _, w := range []int{1, 3} {
		s, m := joinSched(t, w)
		var aRuns, kids atomic.Int32
		kid := kernelOf(t, s, "kid", func(*Ctx, *TaskData) error { kids.Add(1); return nil })
		ka := kernelOf(t, s, "a", func(*Ctx, *TaskData) error { aRuns.Add(1); return nil })
		kb := kernelOf(t, s, "b", func(c *Ctx, d *TaskData) error {
			for range 5 {
				if _, err := c.Add(&Task{Kernel: kid, Parent: c.Current()}); err != nil {
					return err
				}
			}
			return nil
		})
		kp := kernelOf(t, s, "parent", func(c *Ctx, d *TaskData) error {
			for range 20 {
				if err := c.Join(&Call{Kernel: ka}, &Call{Kernel: kb}); err != nil {
					return err
				}
			}
			return nil
		})
		within(t, 20*time.Second, "join under queued children", func() {
			id, err := m.Add(&Task{Kernel: kp})
			must(t, err)
			must(t, m.Wait(id))
		})
		if aRuns.Load() != 20 || kids.Load() != 100 {
			t.Fatalf("%d workers: a ran %d times (want 20), children %d (want 100)", w, aRuns.Load(), kids.Load())
		}
		s.Close()
	}
}

// TestJoinHalfThatWaits: b waits for a task (its wait may hand the worker
// to another goroutine, whose loop then takes a's entry); the join still
// completes with both halves run once.
func TestJoinHalfThatWaits(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	var aRuns, slow atomic.Int32
	ks := kernelOf(t, s, "slow", func(*Ctx, *TaskData) error {
		time.Sleep(time.Millisecond)
		slow.Add(1)
		return nil
	})
	ka := kernelOf(t, s, "a", func(*Ctx, *TaskData) error { aRuns.Add(1); return nil })
	kb := kernelOf(t, s, "b", func(c *Ctx, d *TaskData) error {
		// An unrelated task added first, then the one b waits for: the
		// wait finds the unrelated one and hands the worker over.
		if _, err := c.Add(&Task{Kernel: ks}); err != nil {
			return err
		}
		id, err := c.Add(&Task{Kernel: ks})
		if err != nil {
			return err
		}
		return c.Wait(id)
	})
	kp := kernelOf(t, s, "parent", func(c *Ctx, d *TaskData) error {
		return c.Join(&Call{Kernel: ka}, &Call{Kernel: kb})
	})
	within(t, 20*time.Second, "joins whose half waits", func() {
		ids := make([]TaskID, 50)
		for i := range ids {
			id, err := m.Add(&Task{Kernel: kp})
			must(t, err)
			ids[i] = id
		}
		for _, id := range ids {
			must(t, m.Wait(id))
		}
		for slow.Load() != 100 { // the unrelated tasks have no waiter
			time.Sleep(time.Millisecond)
		}
	})
	if aRuns.Load() != 50 || slow.Load() != 100 {
		t.Fatalf("a ran %d times (want 50), slow %d (want 100)", aRuns.Load(), slow.Load())
	}
}

// TestJoinDeeperThanItsStack: Joins nested past joinDepth run their
// deeper halves in turn, with the same result.
func TestJoinDeeperThanItsStack(t *testing.T) {
	s, m := joinSched(t, 2)
	defer s.Close()
	var leaves atomic.Int32
	var kd KernelID
	kd = kernelOf(t, s, "deep", func(c *Ctx, d *TaskData) error {
		n := d.Params[0]
		if n == 0 {
			leaves.Add(1)
			return nil
		}
		// a is a leaf, b goes on down
		return c.Join(&Call{Kernel: kd}, &Call{Kernel: kd, Params: Params{n - 1}})
	})
	depth := uint32(3 * joinDepth)
	tk := Task{Kernel: kd}
	tk.Data.Params[0] = depth
	must(t, m.RunInPlace(&tk))
	if got := leaves.Load(); got != int32(depth)+1 {
		t.Fatalf("%d leaves ran, want %d", got, depth+1)
	}
}

// TestJoinReadsCallsFirst: Join reads both Calls before either half
// runs, so b's kernel changing the caller's Call for a does not change
// what a runs, whether a is shared as a record or, the Join nested in
// RunInPlace calls that fill the in-place stack, added as a task.
func TestJoinReadsCallsFirst(t *testing.T) {
	s, m := joinSched(t, 1)
	defer s.Close()
	var got atomic.Int32
	ka := kernelOf(t, s, "a", func(_ *Ctx, d *TaskData) error {
		got.Store(int32(d.Params[0]))
		return nil
	})
	kb := kernelOf(t, s, "b", func(_ *Ctx, d *TaskData) error {
		d.Data.(*Call).Params[0] = 2
		return nil
	})
	var kd KernelID
	kd = kernelOf(t, s, "nest", func(c *Ctx, d *TaskData) error {
		if n := d.Params[0]; n > 0 {
			return c.RunInPlace(&Task{Kernel: kd, Data: TaskData{Params: Params{n - 1}}})
		}
		a := &Call{Kernel: ka, Params: Params{1}}
		return c.Join(a, &Call{Kernel: kb, Data: a})
	})
	for _, depth := range []uint32{0, inPlaceDepth - 1} {
		got.Store(0)
		tk := Task{Kernel: kd}
		tk.Data.Params[0] = depth
		must(t, m.RunInPlace(&tk))
		if g := got.Load(); g != 1 {
			t.Errorf("nested %d deep: a ran with Params[0] = %d, want 1 (its Call as passed)", depth, g)
		}
	}
}

// TestJoinHalfGoexit: runtime.Goexit in a half run in place on a worker
// fails the joining task (ErrKernelPanic), the worker gets a new
// goroutine, and later Joins and tasks run; Close returns. The tasks are
// added and awaited from a goroutine that is no thread, so only the
// worker runs them.
func TestJoinHalfGoexit(t *testing.T) {
	s, err := New(Config{Workers: 1})
	must(t, err)
	registerFibJoin(t, s)
	var aRuns, exits atomic.Int32
	ka := kernelOf(t, s, "a", func(*Ctx, *TaskData) error { aRuns.Add(1); return nil })
	kx := kernelOf(t, s, "exit", func(c *Ctx, d *TaskData) error {
		if c.Index() != 0 {
			t.Errorf("the exiting half ran on thread %d, not the worker", c.Index())
			return nil
		}
		exits.Add(1)
		runtime.Goexit()
		return nil
	})
	kp := kernelOf(t, s, "parent", func(c *Ctx, d *TaskData) error {
		return c.Join(&Call{Kernel: ka}, &Call{Kernel: kx})
	})
	within(t, 20*time.Second, "a join whose half exits its goroutine", func() {
		for range 3 {
			id, err := s.Add(&Task{Kernel: kp})
			must(t, err)
			if err := s.Wait(id); !errors.Is(err, ErrKernelPanic) {
				t.Errorf("joining task: %v, want ErrKernelPanic", err)
			}
		}
		cells := make([]uint32, fibSizes[16])
		tk := Task{Kernel: fibJoinID}
		tk.Data.Params[0], tk.Data.Data = 16, &cells
		id, err := s.Add(&tk)
		must(t, err)
		must(t, s.Wait(id))
		if cells[0] != 987 {
			t.Errorf("fib(16) after the exits = %d", cells[0])
		}
		must(t, s.Close())
	})
	if exits.Load() != 3 {
		t.Fatalf("the exiting half ran %d times, want 3", exits.Load())
	}
	if n := aRuns.Load(); n > 3 {
		t.Fatalf("a ran %d times in 3 joins", n)
	}
}

// TestJoinWithStreamsUnderRaceChecks: with Config.CheckRaces, halves
// that name streams run in turn on the calling thread, with the same
// results.
func TestJoinWithStreamsUnderRaceChecks(t *testing.T) {
	s, m, _ := newTestSched(t, Config{Workers: 2, CheckRaces: true})
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(i)
	}
	y1, y2 := make([]float32, 256), make([]float32, 256)
	a := Task{Kernel: kScale}
	a.Data.Elements = 256
	a.Data.In[0], a.Data.Out[0] = StreamOf(x), StreamOf(y1)
	b := a
	b.Data.Out[0] = StreamOf(y2)
	must(t, m.JoinTasks(&a, &b))
	for i := range x {
		if y1[i] != 2*x[i] || y2[i] != 2*x[i] {
			t.Fatalf("item %d: %v %v, want %v", i, y1[i], y2[i], 2*x[i])
		}
	}
	_ = s
}

// TestJoinHalfWaitsForTheOther: b waits for an event that only a
// signals. a is queued under b, so a join that ran b's wait on top of the
// caller's stack with a behind it would never end (Rayon's join blocks
// for ever on this shape). Here the wait hands the worker over, or on a
// registered thread runs a itself, and the join ends: from a worker's
// task and from a registered thread, with 1 and 2 workers.
func TestJoinHalfWaitsForTheOther(t *testing.T) {
	for _, w := range []int{1, 2} {
		for _, fromTask := range []bool{false, true} {
			s, m := joinSched(t, w)
			ev := s.NewEvent()
			ka := kernelOf(t, s, "signal", func(*Ctx, *TaskData) error {
				ev.Signal()
				return nil
			})
			kb := kernelOf(t, s, "wait", func(c *Ctx, d *TaskData) error {
				c.WaitEvent(ev)
				if !ev.IsSet() {
					return errors.New("WaitEvent returned without the event")
				}
				return nil
			})
			kp := kernelOf(t, s, "joiner", func(c *Ctx, d *TaskData) error {
				return c.Join(&Call{Kernel: ka}, &Call{Kernel: kb})
			})
			within(t, 20*time.Second, "a join whose b waits for a", func() {
				if fromTask {
					id, err := s.Add(&Task{Kernel: kp})
					must(t, err)
					must(t, s.Wait(id))
				} else {
					must(t, m.Join(&Call{Kernel: ka}, &Call{Kernel: kb}))
				}
				must(t, s.Close())
			})
		}
	}
}

// TestJoinUnderAbandonAndClose: the joining task is abandoned while its
// shared half runs on another thread and adds children to it, and Close
// is called while Joins are in flight on every thread: nothing panics or
// hangs, every half that ran once ran only once, and the abandoned
// task's waiters see ErrAbandoned.
func TestJoinUnderAbandonAndClose(t *testing.T) {
	for round := range 20 {
		s, m := joinSched(t, 1+round%4)
		var runs [2]atomic.Int32
		release := make(chan struct{})
		var started atomic.Int32
		leaf := kernelOf(t, s, "leaf", func(*Ctx, *TaskData) error { return nil })
		half := kernelOf(t, s, "half", func(c *Ctx, d *TaskData) error {
			runs[d.Params[0]].Add(1)
			if d.Params[0] == 0 {
				started.Add(1)
				<-release
			}
			// Children of the joining task (abandoned or not by now).
			if id, err := c.Add(&Task{Kernel: leaf, Parent: c.Current()}); err == nil {
				return c.Wait(id)
			}
			return nil
		})
		kp := kernelOf(t, s, "joiner", func(c *Ctx, d *TaskData) error {
			return c.Join(&Call{Kernel: half, Params: Params{0}}, &Call{Kernel: half, Params: Params{1}})
		})
		fib, err := s.Kernels().RegisterNext(Kernel{Name: "fib-join", CPU: fibJoinKernel})
		must(t, err)
		fibJoinID = fib
		within(t, 20*time.Second, "joins under Abandon and Close", func() {
			id, err := m.Add(&Task{Kernel: kp})
			must(t, err)
			// Joins in flight elsewhere while the first one is abandoned.
			cells := make([]uint32, fibSizes[18])
			tk := Task{Kernel: fib}
			tk.Data.Params[0], tk.Data.Data = 18, &cells
			other, err := m.Add(&tk)
			must(t, err)
			for started.Load() == 0 { // a worker runs the joiner
				runtime.Gosched()
			}
			must(t, s.Abandon(id, nil))
			if err := m.Wait(id); !errors.Is(err, ErrAbandoned) {
				t.Errorf("round %d: the abandoned joiner: %v", round, err)
			}
			close(release)
			if round%2 == 0 {
				must(t, m.Wait(other))
				if cells[0] != 2584 {
					t.Errorf("round %d: fib(18) = %d", round, cells[0])
				}
			}
			must(t, s.Close()) // with the other Joins maybe still in flight
		})
		for i := range runs {
			if n := runs[i].Load(); n > 1 {
				t.Fatalf("round %d: half %d ran %d times", round, i, n)
			}
		}
	}
}

// TestJoinHalfBlockedOutsideScheduler: b blocks on a Go channel (outside
// the scheduler: no wait hands anything over) until a sends on it. a is
// on the deque from the start, so another worker takes it and the join
// ends; a join that published its shared half only on demand, at the
// owner's next Join, would hang here.
func TestJoinHalfBlockedOutsideScheduler(t *testing.T) {
	s, err := New(Config{Workers: 2})
	must(t, err)
	defer s.Close()
	ch := make(chan struct{})
	ka := kernelOf(t, s, "send", func(*Ctx, *TaskData) error {
		ch <- struct{}{}
		return nil
	})
	kb := kernelOf(t, s, "receive", func(*Ctx, *TaskData) error {
		<-ch
		return nil
	})
	kp := kernelOf(t, s, "joiner", func(c *Ctx, d *TaskData) error {
		return c.Join(&Call{Kernel: ka}, &Call{Kernel: kb})
	})
	within(t, 20*time.Second, "a join whose b blocks on a channel for a", func() {
		for range 20 {
			id, err := s.Add(&Task{Kernel: kp})
			must(t, err)
			must(t, s.Wait(id))
		}
	})
}

// TestJoinCloseWhileHalfParkedOnSameWorker: the joiner (runner G1)
// waits in joinWait for its half a, which runs on G2, a runner of the
// same worker, parked in a WaitEvent nobody signals. Close drains and
// sets drained, so WaitEvent returns at once: joinWait must resume the
// ready G2 (its WaitEvent ends at the drain) rather than spin holding the
// worker, or a never ends and Close waits for ever.
func TestJoinCloseWhileHalfParkedOnSameWorker(t *testing.T) {
	s, err := New(Config{Workers: 1})
	must(t, err)
	ea, eb := s.NewEvent(), s.NewEvent()
	var aIn, bOut atomic.Bool
	ka := kernelOf(t, s, "a", func(c *Ctx, d *TaskData) error {
		aIn.Store(true)
		c.WaitEvent(ea) // never signalled: returns at Close (drained)
		return nil
	})
	kb := kernelOf(t, s, "b", func(c *Ctx, d *TaskData) error {
		c.WaitEvent(eb) // finds a's entry: hands the worker (and a) to G2
		bOut.Store(true)
		return nil
	})
	kp := kernelOf(t, s, "joiner", func(c *Ctx, d *TaskData) error {
		return c.Join(&Call{Kernel: ka}, &Call{Kernel: kb})
	})
	if _, err := s.Add(&Task{Kernel: kp}); err != nil {
		t.Fatal(err)
	}
	wait := func(f *atomic.Bool, what string) {
		for deadline := time.Now().Add(5 * time.Second); !f.Load(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened", what)
			}
		}
	}
	wait(&aIn, "a started")
	time.Sleep(20 * time.Millisecond) // G2 sleeps in a's WaitEvent
	eb.Signal()                       // G2 swaps with G1: b returns, G1 waits for a
	wait(&bOut, "b returned")
	time.Sleep(20 * time.Millisecond) // G1 sleeps in joinWait: the scheduler is quiescent
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs: the joiner spins in joinWait while its half's runner, parked on the same worker, is never resumed")
	}
}

// TestJoinGoexitOnRegisteredThread: a kernel on a registered thread
// whose Join's b calls runtime.Goexit fails its task; the record's entry
// stays on the thread's deque, and the worker that later takes it must
// skip it (the stack is dead), not run a as part of a task that already
// failed.
func TestJoinGoexitOnRegisteredThread(t *testing.T) {
	s, err := New(Config{Workers: 1, MainThreads: 1})
	must(t, err)
	release := make(chan struct{})
	blockerRunning := make(chan struct{})
	kblock := kernelOf(t, s, "block-worker", func(*Ctx, *TaskData) error {
		close(blockerRunning)
		<-release
		return nil
	})
	var aRuns atomic.Int32
	var aAfterFinish atomic.Bool
	ka := kernelOf(t, s, "a", func(c *Ctx, d *TaskData) error {
		aRuns.Add(1)
		if s.IsFinished(c.Current()) {
			aAfterFinish.Store(true)
		}
		return nil
	})
	kx := kernelOf(t, s, "exit", func(c *Ctx, d *TaskData) error {
		runtime.Goexit()
		return nil
	})
	kp := kernelOf(t, s, "parent", func(c *Ctx, d *TaskData) error {
		return c.Join(&Call{Kernel: ka}, &Call{Kernel: kx})
	})
	// Keep the only worker busy so that it cannot steal a before b exits.
	if _, err := s.Add(&Task{Kernel: kblock}); err != nil {
		t.Fatal(err)
	}
	<-blockerRunning
	var pid TaskID
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		m, err := s.RegisterThread("main")
		if err != nil {
			t.Error(err)
			return
		}
		pid, err = m.Add(&Task{Kernel: kp, Affinity: OnThread(0)})
		if err != nil {
			t.Error(err)
			return
		}
		m.RunPinned() // the kernel Goexits this goroutine
	}()
	<-gone
	if err := s.Wait(pid); !errors.Is(err, ErrKernelPanic) {
		t.Fatalf("joining task: %v, want ErrKernelPanic", err)
	}
	close(release) // the worker is free: it finds the entry left behind
	time.Sleep(200 * time.Millisecond)
	s.Close()
	if aAfterFinish.Load() {
		t.Fatalf("a ran %d time(s) after its Join's task had failed (Current names a finished task)", aRuns.Load())
	}
}

// TestJoinRecordSeqWrap: a record's done mark is compared with a 32-bit
// sequence number that wraps; a use whose seq equals a mark left by an
// earlier use (here the initial 0, after 2^32 uses nobody stole) must
// not let the owner's joinWait return before the thief has run a.
func TestJoinRecordSeqWrap(t *testing.T) {
	s, m := joinSched(t, 1)
	defer s.Close()
	var aDone, aStarted atomic.Bool
	ka := kernelOf(t, s, "a", func(*Ctx, *TaskData) error {
		aStarted.Store(true)
		time.Sleep(100 * time.Millisecond)
		aDone.Store(true)
		return nil
	})
	kb := kernelOf(t, s, "b", func(*Ctx, *TaskData) error {
		for deadline := time.Now().Add(5 * time.Second); !aStarted.Load() && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		return nil
	})
	ok := kernelOf(t, s, "ok", func(*Ctx, *TaskData) error { return nil })
	must(t, m.Join(&Call{Kernel: ok}, &Call{Kernel: ok})) // makes the records
	st := m.inPlaceStack()
	st.joins[0].seq = ^uint32(0) // 2^32-1 uses so far, none stolen: done is still 0
	must(t, m.Join(&Call{Kernel: ka}, &Call{Kernel: kb}))
	if !aStarted.Load() {
		t.Skip("a was not stolen")
	}
	if !aDone.Load() {
		t.Fatal("Join returned while its shared half was still running on another thread")
	}
}
