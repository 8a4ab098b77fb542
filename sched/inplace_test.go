package sched

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fibInPlaceID is the in-place fib kernel's ID in the registry it was
// last registered with (RegisterNext hands it out).
var fibInPlaceID KernelID

// fibInPlaceKernel: fib with a task per call, sharing fib(n-2) through
// Add and running fib(n-1) in place (Rayon's join).
func fibInPlaceKernel(c *Ctx, d *TaskData) error {
	n := d.Params[0]
	out := d.Data.(*uint32)
	if n < 2 {
		*out = n
		return nil
	}
	cells := fibCells(c, n)
	var t Task
	t.Kernel = fibInPlaceID
	t.Data.Params[0], t.Data.Data = n-2, &cells[1]
	ib, err := c.Add(&t)
	if err != nil {
		return err
	}
	t.Data.Params[0], t.Data.Data = n-1, &cells[0]
	if err := c.RunInPlace(&t); err != nil {
		return err
	}
	if err := c.Wait(ib); err != nil {
		return err
	}
	*out = cells[0] + cells[1]
	return nil
}

func registerFibInPlace(t testing.TB, s *Scheduler) {
	t.Helper()
	id, err := s.Kernels().RegisterNext(Kernel{Name: "fib-in-place", CPU: fibInPlaceKernel})
	must(t, err)
	fibInPlaceID = id
}

// TestRunInPlaceFib: fib(20) with one child in place at every level gives
// the right answer on 1, 2 and 4 workers, allocating nothing.
func TestRunInPlaceFib(t *testing.T) {
	for _, w := range []int{1, 2, 4} {
		s, err := New(Config{Workers: w})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		registerFibInPlace(t, s)
		var res uint32
		run := func() {
			tk := Task{Kernel: fibInPlaceID}
			tk.Data.Params[0], tk.Data.Data = 20, &res
			if err := m.RunInPlace(&tk); err != nil {
				t.Fatal(err)
			}
			if res != 6765 {
				t.Fatalf("%d workers: fib(20) = %d", w, res)
			}
		}
		// A wait that hands its thread over makes the goroutine that
		// takes it the first time a nest of waits is that deep
		// (handoff.go), a handful of allocations now and then; later
		// hand-offs reuse it. Counted over 50 runs (AllocsPerRun
		// truncates the mean), those read as none, while one allocation
		// per task (21891 per run) or per call would not.
		run()
		if a := testing.AllocsPerRun(50, run); a != 0 {
			t.Fatalf("%d workers: %.1f allocations per fib(20)", w, a)
		}
		s.Close()
	}
}

// TestRunInPlaceRefusals: what cannot run in place is refused, naming
// the kernel; a panic becomes ErrKernelPanic; a dependency is waited for.
func TestRunInPlaceRefusals(t *testing.T) {
	reg := NewRegistry()
	var ran atomic.Int32
	must(t, reg.Register(1, Kernel{Name: "count", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return nil }}))
	must(t, reg.Register(2, Kernel{Name: "boom", CPU: func(*Ctx, *TaskData) error { panic("boom") }}))
	must(t, reg.Register(3, Kernel{Name: "sum", Kind: Streaming, In: []StreamSpec{{Name: "x", Stride: 4}}, Out: []StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(_ *Ctx, d *TaskData) error {
			x, y := View[uint32](d.In[0]), View[uint32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				y[i] = x[i] + 1
			}
			return nil
		}}))
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)

	parent, err := m.Create(&Task{})
	must(t, err)
	cases := []struct {
		name string
		t    Task
		want string
	}{
		{"parent", Task{Kernel: 1, Parent: parent}, `kernel 1 "count": a task run in place completes inside the call and has no Parent`},
		{"gpu", Task{Kernel: 1, Affinity: GPU}, `affinity gpu is not served by this thread`},
		{"other thread", Task{Kernel: 1, Affinity: OnThread(1)}, `is not served by this thread`},
		{"unknown", Task{Kernel: 9}, "unknown kernel"},
		{"short stream", Task{Kernel: 3, Data: TaskData{Elements: 4, In: [MaxStreams]Stream{StreamOf(make([]uint32, 2))}, Out: [MaxStreams]Stream{StreamOf(make([]uint32, 4))}}}, `kernel 3 "sum"`},
	}
	for _, c := range cases {
		err := m.RunInPlace(&c.t)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: RunInPlace = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if ran.Load() != 0 {
		t.Fatalf("a refused kernel ran %d times", ran.Load())
	}
	must(t, m.Run(parent))
	must(t, m.Wait(parent))

	if err := m.RunInPlace(&Task{Kernel: 2}); !errors.Is(err, ErrKernelPanic) || !strings.Contains(err.Error(), `"boom"`) {
		t.Fatalf("panic: %v", err)
	}
	// OnThread of this registered thread is served here.
	must(t, m.RunInPlace(&Task{Kernel: 1, Affinity: OnThread(0)}))
	// A dependency is waited for; a failed one fails the call unrun.
	dep, err := m.Add(&Task{Kernel: 1})
	must(t, err)
	must(t, m.RunInPlace(&Task{Kernel: 1, Dependency: dep}))
	bad, err := m.Add(&Task{Kernel: 2})
	must(t, err)
	if err := m.RunInPlace(&Task{Kernel: 1, Dependency: bad}); err == nil || !strings.Contains(err.Error(), "dependency") {
		t.Fatalf("failed dependency: %v", err)
	}
	if got := ran.Load(); got != 3 {
		t.Fatalf("count ran %d times, want 3", got)
	}
	x, y := []uint32{1, 2, 3}, make([]uint32, 3)
	st := Task{Kernel: 3, Data: TaskData{Elements: 3}}
	st.Data.In[0], st.Data.Out[0] = StreamOf(x), StreamOf(y)
	must(t, m.RunInPlace(&st))
	if y[0] != 2 || y[2] != 4 {
		t.Fatalf("streaming in place: %v", y)
	}
}

// fibFullArena holds the results of fibFullKernel: a node's two cells
// are taken with an atomic counter (in-place runs share Current, so cells
// cannot be keyed by the task's slot).
var (
	fibFullArena [1 << 17]uint32
	fibFullNext  atomic.Int32
	fibFullIn    atomic.Int32 // children Add ran in place (their ID's slot is inPlaceSlot)
)

// Modes of fibFullKernel (Params[1]). Only nodes near the root (n >=
// fibSpecialFrom) add such children: each needs a slot of its own, and
// deep in a recursion longer than the pool every slot may hold a kernel
// waiting below it, with none left for it (a true dead end, reported as
// ErrPoolDeadlock).
const (
	fibPin     = 1 << iota // fib(n-2) runs on registered thread 0 only
	fibDepends             // fib(n-2) depends on its sibling fib(n-1)

	fibSpecialFrom = 17
)

// fibFullKernel: fib adding both children (Parent: the caller) through
// Ctx.Add and waiting for both, so a deep recursion keeps a chain of
// waiting kernels, each holding a slot; some children are pinned or
// depend on their sibling, so cannot run in place.
func fibFullKernel(c *Ctx, d *TaskData) error {
	n, mode := d.Params[0], d.Params[1]
	out := d.Data.(*uint32)
	if n < 2 {
		*out = n
		return nil
	}
	cell := int(fibFullNext.Add(2)) - 2
	ra, rb := &fibFullArena[cell], &fibFullArena[cell+1]
	a := Task{Kernel: fibFullID, Parent: c.Current()}
	a.Data.Params = Params{n - 1, mode}
	a.Data.Data = ra
	b := a
	b.Data.Params[0], b.Data.Data = n-2, rb
	special := n >= fibSpecialFrom
	if mode&fibPin != 0 && special {
		b.Affinity = OnThread(0)
	}
	ia, err := c.Add(&a)
	if err != nil {
		return err
	}
	if mode&fibDepends != 0 && special {
		b.Dependency = ia
	}
	ib, err := c.Add(&b)
	if err != nil {
		return err
	}
	for _, id := range [2]TaskID{ia, ib} {
		if id.index() == c.s.inPlaceSlot() {
			fibFullIn.Add(1)
		}
	}
	if err := c.Wait(ib); err != nil {
		return err
	}
	if err := c.Wait(ia); err != nil {
		return err
	}
	*out = *ra + *rb
	return nil
}

var fibFullID KernelID

// TestAddRunsChildInPlaceWhenPoolFull: a deep recursive fib in a pool of
// 16 slots, with more tasks live at once than that (a chain of waiting
// kernels and their queued siblings, 2 per level of the recursion, per
// worker), completes with the
// right result on 1 to 4 workers: a kernel's Add of a plain CPU child
// into the full pool runs the child in place. Children pinned to the
// main thread or depending on their sibling (near the root) cannot run
// in place: they wait for slots, which the in-place children free.
// Back-pressure alone ended in ErrPoolDeadlock.
func TestAddRunsChildInPlaceWhenPoolFull(t *testing.T) {
	const n, want = 20, 6765
	for _, mode := range []uint32{0, fibPin, fibDepends, fibPin | fibDepends} {
		for _, w := range []int{1, 2, 4} {
			reg := NewRegistry()
			id, err := reg.RegisterNext(Kernel{Name: "fib-full", CPU: fibFullKernel})
			must(t, err)
			fibFullID = id
			s, err := New(Config{Kernels: reg, Workers: w, PoolSize: 16})
			must(t, err)
			m, err := s.RegisterThread("main")
			must(t, err)
			fibFullNext.Store(0)
			fibFullIn.Store(0)
			var res uint32
			within(t, 60*time.Second, fmt.Sprintf("fib(%d), mode %d, %d workers, pool 16", n, mode, w), func() {
				root := Task{Kernel: fibFullID}
				root.Data.Params = Params{n, mode}
				root.Data.Data = &res
				rid, err := m.Add(&root)
				must(t, err)
				if err := m.Wait(rid); err != nil {
					t.Fatalf("mode %d, %d workers: %v", mode, w, err)
				}
			})
			if res != want {
				t.Errorf("mode %d, %d workers: fib(%d) = %d, want %d", mode, w, n, res, want)
			}
			if fibFullIn.Load() == 0 {
				t.Errorf("mode %d, %d workers: no child ran in place (the pool never filled?)", mode, w)
			}
			if mode == 0 && w == 1 && !t.Failed() {
				// Running in place allocates nothing: counted over 20
				// runs, as in TestRunInPlaceFib (a hand-off's first
				// goroutine at a new depth reads as none), where one
				// allocation per in-place child would not.
				run := func() {
					fibFullNext.Store(0)
					root := Task{Kernel: fibFullID}
					root.Data.Params = Params{n, mode}
					root.Data.Data = &res
					rid, err := m.Add(&root)
					if err == nil {
						err = m.Wait(rid)
					}
					if err != nil || res != want {
						t.Fatalf("fib(%d) = %d, %v", n, res, err)
					}
				}
				fibFullIn.Store(0)
				if a := testing.AllocsPerRun(20, run); a != 0 {
					t.Errorf("%.1f allocations per fib(%d) with %d children run in place", a, n, fibFullIn.Load()/21)
				}
			}
			must(t, s.Close())
		}
	}
}

// TestAddInPlaceIDsAndRefusals: with the pool full of held tasks, a
// kernel's Add of a plain child runs it in place and returns an ID that
// reads as finished and carries the child's error (Wait, Err, as a
// Dependency), while what cannot run in place (a child pinned to another
// thread, one whose dependency is unfinished, one made with Create) gets
// back-pressure's ErrPoolDeadlock, and so do Adds from outside a kernel.
func TestAddInPlaceIDsAndRefusals(t *testing.T) {
	const pool = 16
	errChild := errors.New("child failed")
	reg := NewRegistry()
	var ran atomic.Int32
	okK, err := reg.RegisterNext(Kernel{Name: "ok", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return nil }})
	must(t, err)
	failK, err := reg.RegisterNext(Kernel{Name: "fail", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return errChild }})
	must(t, err)
	var s *Scheduler
	var held TaskID
	report := make(chan string, 16)
	checkK, err := reg.RegisterNext(Kernel{Name: "check", CPU: func(c *Ctx, _ *TaskData) error {
		defer close(report)
		// A plain child succeeds in place.
		ok, err := c.Add(&Task{Kernel: okK, Parent: c.Current()})
		if err != nil {
			report <- fmt.Sprintf("plain child: %v", err)
			return nil
		}
		if ok.index() != s.inPlaceSlot() || !s.IsFinished(ok) || s.Err(ok) != nil || c.Wait(ok) != nil {
			report <- fmt.Sprintf("plain child %v: finished %v, Err %v", ok, s.IsFinished(ok), s.Err(ok))
		}
		// A failing child's error is kept under its ID, with no parent.
		bad, err := s.Add(&Task{Kernel: failK}) // Scheduler.Add from a kernel too
		if err != nil {
			report <- fmt.Sprintf("failing child: %v", err)
			return nil
		}
		if bad == ok || !errors.Is(c.Wait(bad), errChild) || !errors.Is(s.Err(bad), errChild) {
			report <- fmt.Sprintf("failing child %v (after %v): Wait %v", bad, ok, c.Wait(bad))
		}
		if err := s.checkID(bad, "check"); err != nil {
			report <- fmt.Sprintf("checking an in-place ID: %v", err)
		}
		// As a dependency: satisfied, or failing the dependent unrun.
		dep, err := c.Add(&Task{Kernel: okK, Dependency: ok})
		if err != nil || c.Wait(dep) != nil {
			report <- fmt.Sprintf("dependent of a succeeded in-place child: %v %v", err, c.Wait(dep))
		}
		before := ran.Load()
		dep, err = c.Add(&Task{Kernel: okK, Dependency: bad})
		if err != nil || !errors.Is(c.Wait(dep), ErrDepFailed) || ran.Load() != before {
			report <- fmt.Sprintf("dependent of a failed in-place child: %v %v (ran %d)", err, c.Wait(dep), ran.Load()-before)
		}
		// What cannot run in place waits for a slot that only a Run of
		// the held tasks could free: the dead end is reported. (This kernel
		// runs on registered thread 0, which Wait runs it on.)
		for name, tk := range map[string]Task{
			"pinned":                {Kernel: okK, Affinity: OnThread(1)},
			"unfinished dependency": {Kernel: okK, Dependency: held},
		} {
			if _, err := c.Add(&tk); !errors.Is(err, ErrPoolDeadlock) {
				report <- fmt.Sprintf("%s child: %v, want ErrPoolDeadlock", name, err)
			}
		}
		if _, err := c.Create(&Task{Kernel: okK}); !errors.Is(err, ErrPoolDeadlock) {
			report <- fmt.Sprintf("held child: %v, want ErrPoolDeadlock", err)
		}
		// The failed child had a parent: it fails with ErrChildFailed.
		if _, err := c.Add(&Task{Kernel: failK, Parent: c.Current()}); err != nil {
			report <- fmt.Sprintf("failing child with a parent: %v", err)
		}
		return nil
	}})
	must(t, err)
	s, err = New(Config{Kernels: reg, Workers: 1, MainThreads: 2, PoolSize: pool})
	must(t, err)
	defer s.Close()
	var holds []TaskID
	for range pool - 1 { // and one for the kernel
		h, err := s.Create(&Task{})
		must(t, err)
		holds = append(holds, h)
	}
	held = holds[0]
	var m *Ctx
	within(t, 30*time.Second, "kernel adding into a full pool", func() {
		// Registered here: Scheduler.Add from the kernel, run on this
		// thread by its Wait, finds the thread by its goroutine.
		var err error
		m, err = s.RegisterThread("main")
		must(t, err)
		id, err := m.Add(&Task{Kernel: checkK})
		must(t, err)
		if err := m.Wait(id); !errors.Is(err, ErrChildFailed) || !errors.Is(err, errChild) {
			t.Errorf("kernel task with a failed in-place child: %v, want ErrChildFailed wrapping the child's error", err)
		}
	})
	for r := range report {
		t.Error(r)
	}
	// From outside a kernel, a full pool is back-pressure: no run in place.
	last, err := m.Create(&Task{}) // the kernel's slot, free again (in m's cache)
	must(t, err)
	holds = append(holds, last)
	within(t, 30*time.Second, "Adds from outside a kernel into a full pool", func() {
		before := ran.Load()
		if _, err := s.Add(&Task{Kernel: okK}); !errors.Is(err, ErrPoolDeadlock) {
			t.Errorf("external goroutine's Add: %v, want ErrPoolDeadlock", err)
		}
		if _, err := m.Add(&Task{Kernel: okK}); !errors.Is(err, ErrPoolDeadlock) {
			t.Errorf("registered thread's Add outside a kernel: %v, want ErrPoolDeadlock", err)
		}
		if ran.Load() != before {
			t.Errorf("a task added to a full pool from outside a kernel ran in place")
		}
	})
	for _, h := range holds {
		must(t, s.Run(h))
	}
}
