package sched

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
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
	st := &fibStacks[c.Index()]
	sp := st.sp
	if sp+2 > len(st.cells) {
		panic("fib: cell stack overflow")
	}
	st.sp = sp + 2
	var t Task
	t.Kernel = fibInPlaceID
	t.Data.Params[0], t.Data.Data = n-2, &st.cells[sp+1]
	ib, err := c.Add(&t)
	if err != nil {
		return err
	}
	t.Data.Params[0], t.Data.Data = n-1, &st.cells[sp]
	if err := c.RunInPlace(&t); err != nil {
		return err
	}
	if err := c.Wait(ib); err != nil {
		return err
	}
	*out = st.cells[sp] + st.cells[sp+1]
	st.sp = sp
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
		run()
		if a := testing.AllocsPerRun(5, run); a != 0 {
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
