package sched

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Back-pressure with nothing to run: a held task and more dependents than
// the pool holds, added from one goroutine. Add used to sleep until some
// other goroutine called Run; when none will, it now says so.
func TestBackPressureDeadEnd(t *testing.T) {
	for _, fromThread := range []bool{false, true} {
		s, err := New(Config{Workers: 2, PoolSize: 16})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		add, create, run := s.Add, s.Create, s.Run
		if fromThread {
			add, create, run = m.Add, m.Create, m.Run
		}
		root, err := create(&Task{})
		must(t, err)
		var added []TaskID
		within(t, 20*time.Second, "Add into a pool that cannot drain", func() {
			for range 40 {
				id, err := add(&Task{Dependency: root})
				if err != nil {
					if !errors.Is(err, ErrPoolDeadlock) {
						t.Errorf("Add: %v, want ErrPoolDeadlock", err)
					}
					t.Log(err)
					return
				}
				added = append(added, id)
			}
			t.Errorf("40 dependents of a held task added to a pool of 16")
		})
		// Running the held task drains the pool; Add works again.
		must(t, run(root))
		for _, id := range added {
			must(t, m.Wait(id))
		}
		id, err := add(&Task{Dependency: root})
		must(t, err)
		must(t, m.Wait(id))
		must(t, s.Close())
	}
}

// Two kernels on two workers each add dependents of a held task until the
// pool is full: each is blocked in Add, so neither worker is idle, yet
// nothing can run. Both Adds must fail with ErrPoolDeadlock, not hang.
func TestBackPressureDeadEndTwoKernels(t *testing.T) {
	const kFill KernelID = 56
	var started atomic.Int32
	var root atomic.Uint64
	errs := make(chan error, 2)
	reg := NewRegistry()
	must(t, reg.Register(kFill, Kernel{Name: "fill", CPU: func(c *Ctx, _ *TaskData) error {
		started.Add(1)
		for started.Load() < 2 { // both kernels run at once, on two workers
			runtime.Gosched()
		}
		for {
			if _, err := c.Add(&Task{Dependency: TaskID(root.Load())}); err != nil {
				errs <- err
				return nil
			}
		}
	}}))
	s, err := New(Config{Kernels: reg, Workers: 2, PoolSize: 32})
	must(t, err)
	h, err := s.Create(&Task{})
	must(t, err)
	root.Store(uint64(h))
	within(t, 20*time.Second, "two kernels blocked in Add", func() {
		a, err := s.Add(&Task{Kernel: kFill})
		must(t, err)
		b, err := s.Add(&Task{Kernel: kFill})
		must(t, err)
		for range 2 {
			if err := <-errs; !errors.Is(err, ErrPoolDeadlock) {
				t.Errorf("Add: %v, want ErrPoolDeadlock", err)
			}
		}
		must(t, s.Wait(a))
		must(t, s.Wait(b))
		must(t, s.Run(h))
	})
	must(t, s.Close())
}

func TestPoolBackPressure(t *testing.T) {
	const n = 5000
	r := newRecorder(n)
	s, m := start(t, Config{Workers: 2, PoolSize: 32}, r, nil)
	root, err := m.Create(&Task{})
	must(t, err)
	for i := 0; i < n; i++ {
		tk := rec(i)
		tk.Parent = root
		if _, err := m.Add(tk); err != nil {
			t.Fatal(err)
		}
	}
	must(t, m.Run(root))
	must(t, m.Wait(root))
	// From a foreign goroutine too (it sleeps instead of helping).
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for i := 0; i < 200; i++ {
				id, err := s.Add(rec(i))
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.Wait(id); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if r.runs[i].Load() < 1 {
			t.Fatalf("task %d never ran", i)
		}
	}
}

func TestAddCompleteAllocatesNothing(t *testing.T) {
	_, m := start(t, Config{Workers: 1}, newRecorder(1), nil)
	tk := Task{Kernel: kEmptyTest}
	m.s.reg.Register(kEmptyTest, Kernel{Name: "empty", CPU: func(*Ctx, *TaskData) error { return nil }})
	x := make([]uint32, 1000)
	y := make([]uint32, 1000)
	st := Task{Kernel: kRange}
	st.Data.Elements, st.Data.Grain = 1000, 100
	st.Data.In[0], st.Data.Out[0] = StreamOf(x), StreamOf(y)
	allocs := testing.AllocsPerRun(200, func() {
		root, _ := m.Create(&Task{})
		tk.Parent = root
		for i := 0; i < 32; i++ {
			m.Add(&tk)
		}
		m.Run(root)
		m.Wait(root)
		id, _ := m.Add(&st)
		m.Wait(id)
	})
	if allocs != 0 {
		t.Fatalf("add+complete allocates %.1f per run", allocs)
	}
}
