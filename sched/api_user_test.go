package sched_test

// Tests written the way a user of the package builds things, through the
// public API only: the README's taste code with awkward element counts and
// grains, bad streams, panicking kernels, odd IDs, Close while waiting,
// double registration and invalid affinities. Every bad input must give an
// error (never a panic, a hang or a silent wrong answer); every wait runs
// under a watchdog so a hang fails the test instead of the whole run.

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// watchdog runs f and fails the test if it has not returned within d
// (generous: the machine may be loaded). It returns f's error.
func watchdog(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("%s did not return within %v (hang)\n%s", what, d, buf[:n])
		return nil
	}
}

const hangLimit = 20 * time.Second

const (
	uScale sched.KernelID = 1 + iota
	uPanic
	uFail
	uRecord
	uSum
	uDup
)

// readmeRegistry registers the README's "scale" kernel, plus a counter of
// how many times each element was visited.
func readmeRegistry(t *testing.T, grain uint32, visits *[]atomic.Int32) *sched.Registry {
	t.Helper()
	reg := sched.NewRegistry()
	err := reg.Register(uScale, sched.Kernel{
		Name: "scale", Kind: sched.Streaming, Grain: grain,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			x, y := sched.View[float32](d.In[0]), sched.View[float32](d.Out[0])
			if d.Begin > d.End || d.End > d.Elements {
				return fmt.Errorf("range [%d,%d) outside %d elements", d.Begin, d.End, d.Elements)
			}
			for i := d.Begin; i < d.End; i++ { // this invocation's range
				y[i] = 2 * x[i]
				if visits != nil {
					(*visits)[i].Add(1)
				}
			}
			return nil
		},
	})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	return reg
}

// TestUserReadmeTasteOddShapes runs the README's code verbatim over element
// counts and grains a user meets: 0, 1, grain larger than the count, counts
// not a multiple of the grain, grain 1. Each element must be processed
// exactly once and y = 2x everywhere.
func TestUserReadmeTasteOddShapes(t *testing.T) {
	for _, kernelGrain := range []uint32{0, 1, 7, 4096} {
		for _, workers := range []int{1, 3} {
			var visits []atomic.Int32
			reg := readmeRegistry(t, kernelGrain, &visits)
			s, err := sched.New(sched.Config{Kernels: reg, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			main, err := s.RegisterThread("main")
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, 2, 3, 7, 1023, 1025, 4095, 4097, 10007} {
				for _, taskGrain := range []uint32{0, 1, 3, 1 << 20} {
					if taskGrain == 1 && n > 2000 {
						continue // keep it quick
					}
					x := make([]float32, n)
					y := make([]float32, n)
					visits = make([]atomic.Int32, n)
					for i := range x {
						x[i] = float32(i) + 0.5
						y[i] = -1
					}
					tk := sched.Task{Kernel: uScale}
					tk.Data.Elements = uint32(len(x))
					tk.Data.Grain = taskGrain
					tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
					id, err := main.Add(&tk)
					if err != nil {
						t.Fatalf("n=%d grain=%d/%d: Add: %v", n, kernelGrain, taskGrain, err)
					}
					if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
						t.Fatalf("n=%d grain=%d/%d: Wait: %v", n, kernelGrain, taskGrain, err)
					}
					for i := range x {
						if y[i] != 2*x[i] || visits[i].Load() != 1 {
							t.Fatalf("workers=%d n=%d grain=%d/%d: element %d: y=%v want %v, visited %d times",
								workers, n, kernelGrain, taskGrain, i, y[i], 2*x[i], visits[i].Load())
						}
					}
				}
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
	}
}

// TestUserBadStreamsRefused: the streams a user gets wrong are refused by
// Add with an error naming the stream, and nothing runs.
func TestUserBadStreamsRefused(t *testing.T) {
	reg := readmeRegistry(t, 0, nil)
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	main, _ := s.RegisterThread("main")

	x := make([]float32, 100)
	y := make([]float32, 100)
	short := make([]float32, 99)
	f64 := make([]float64, 100)
	cases := []struct {
		name   string
		in     sched.Stream
		out    sched.Stream
		n      uint32
		inName string
	}{
		{"nil input", sched.Stream{}, sched.StreamOf(y), 100, "x"},
		{"nil output", sched.StreamOf(x), sched.Stream{}, 100, "y"},
		{"StreamOf(nil) input", sched.StreamOf[float32](nil), sched.StreamOf(y), 100, "x"},
		{"short input", sched.StreamOf(short), sched.StreamOf(y), 100, "x"},
		{"short output", sched.StreamOf(x), sched.StreamOf(short), 100, "y"},
		{"stride 8 input", sched.StreamOf(f64), sched.StreamOf(y), 100, "x"},
		{"stride 8 output", sched.StreamOf(x), sched.StreamOf(f64), 100, "y"},
		{"count beyond bytes", sched.Stream{Bytes: make([]byte, 16), Stride: 4, Count: 100}, sched.StreamOf(y), 100, "x"},
		{"zero stride", sched.Stream{Bytes: make([]byte, 400), Stride: 0, Count: 100}, sched.StreamOf(y), 100, "x"},
	}
	for _, c := range cases {
		tk := sched.Task{Kernel: uScale}
		tk.Data.Elements = c.n
		tk.Data.In[0], tk.Data.Out[0] = c.in, c.out
		before := s.Pending()
		id, err := main.Add(&tk)
		if err == nil {
			werr := main.Wait(id)
			t.Errorf("%s: Add accepted it (Wait: %v)", c.name, werr)
			continue
		}
		if !strings.Contains(err.Error(), c.inName) && !strings.Contains(err.Error(), "stream") {
			t.Errorf("%s: error does not name the stream: %v", c.name, err)
		}
		if s.Pending() != before {
			t.Errorf("%s: refused Add left %d tasks pending (was %d)", c.name, s.Pending(), before)
		}
	}
	// Streams on a kernel that takes none, and extra streams beyond the
	// declaration, are refused too.
	tk := sched.Task{Kernel: uScale}
	tk.Data.Elements = 100
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
	tk.Data.In[1] = sched.StreamOf(x)
	if _, err := main.Add(&tk); err == nil {
		t.Errorf("an undeclared second input stream was accepted")
	}
	tk = sched.Task{Kernel: sched.KernelNone}
	tk.Data.In[0] = sched.StreamOf(x)
	if _, err := main.Add(&tk); err == nil {
		t.Errorf("streams on an empty (KernelNone) task were accepted")
	}
}

// TestUserRegistrationErrors: registering twice, without CPU code, with a
// zero-stride stream of a declared stride, or kernel 0 must fail.
func TestUserRegistrationErrors(t *testing.T) {
	reg := sched.NewRegistry()
	ok := sched.Kernel{Name: "a", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}
	if err := reg.Register(uDup, ok); err != nil {
		t.Fatal(err)
	}
	other := ok
	other.Name = "b"
	if err := reg.Register(uDup, other); err == nil {
		t.Errorf("the same kernel ID registered twice without an error")
	}
	if got := reg.Lookup(uDup); got == nil || got.Name != "a" {
		t.Errorf("second registration replaced the first: %+v", got)
	}
	if err := reg.Register(sched.KernelNone, ok); err == nil {
		t.Errorf("registering over KernelNone accepted")
	}
	if err := reg.Register(uDup+1, sched.Kernel{Name: "nocpu"}); err == nil {
		t.Errorf("a kernel without CPU code accepted")
	}
	if err := reg.Register(uDup+2, sched.Kernel{Name: "simple-with-streams", Kind: sched.Simple,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}}, CPU: ok.CPU}); err == nil {
		t.Errorf("a Simple kernel declaring streams accepted")
	}
	five := make([]sched.StreamSpec, sched.MaxStreams+1)
	if err := reg.Register(uDup+3, sched.Kernel{Name: "too-many", Kind: sched.Streaming,
		In: five, CPU: ok.CPU}); err == nil {
		t.Errorf("a kernel with %d inputs accepted (max %d)", len(five), sched.MaxStreams)
	}
	if err := reg.Register(uDup+4, sched.Kernel{Name: "reduce0", Kind: sched.Reduce, Factor: 0,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}}, Out: []sched.StreamSpec{{Name: "y", Stride: 4}}, CPU: ok.CPU}); err == nil {
		t.Errorf("a Reduce kernel with Factor 0 accepted")
	}
	if err := reg.Register(uDup+5, sched.Kernel{Name: "badkind", Kind: sched.Kind(9), CPU: ok.CPU}); err == nil {
		t.Errorf("kind 9 accepted")
	}
	// An unregistered kernel ID is refused by Add with ErrUnknownKernel.
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Add(&sched.Task{Kernel: 999}); !errors.Is(err, sched.ErrUnknownKernel) {
		t.Errorf("Add of kernel 999: %v, want ErrUnknownKernel", err)
	}
}

// TestUserInvalidAffinityAndPriority: invalid values are refused by Add.
func TestUserInvalidAffinityAndPriority(t *testing.T) {
	reg := sched.NewRegistry()
	var ran atomic.Int32
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1, MainThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	main, _ := s.RegisterThread("main")
	for _, a := range []sched.Affinity{sched.OnThread(2), sched.OnThread(100), sched.OnThread(-1), sched.Affinity(12345), sched.GPU, sched.SPU, sched.Affinity(0xffffffff)} {
		id, err := main.Add(&sched.Task{Kernel: uRecord, Affinity: a})
		if err == nil {
			werr := watchdog(t, hangLimit, "Wait", func() error { return main.WaitFor(id, 2*time.Second) })
			t.Errorf("affinity %v (%#x) accepted (wait: %v)", a, uint32(a), werr)
		}
	}
	// OnThread(1) is valid (two main threads) but nobody registered it yet:
	// it must be accepted and run once thread 1 registers and serves.
	id, err := main.Add(&sched.Task{Kernel: uRecord, Affinity: sched.OnThread(1)})
	if err != nil {
		t.Fatalf("OnThread(1) with MainThreads 2: %v", err)
	}
	done := make(chan int, 1)
	go func() {
		c, err := s.RegisterThread("render")
		if err != nil {
			done <- -1
			return
		}
		n := 0
		for !s.IsFinished(id) {
			n += c.RunPinned()
			runtime.Gosched()
		}
		done <- n
	}()
	if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
		t.Errorf("OnThread(1): %v", err)
	}
	if n := <-done; n != 1 {
		t.Errorf("render thread ran %d pinned tasks, want 1", n)
	}
	if _, err := s.RegisterThread("third"); !errors.Is(err, sched.ErrThreadsTaken) {
		t.Errorf("third RegisterThread with MainThreads 2: %v, want ErrThreadsTaken", err)
	}
	for _, p := range []sched.Priority{2, -2, 100, -128} {
		if _, err := main.Add(&sched.Task{Kernel: uRecord, Priority: p}); !errors.Is(err, sched.ErrBadPriority) {
			t.Errorf("priority %d: %v, want ErrBadPriority", p, err)
		}
	}
}

// TestUserPanicsAndErrors: a panicking kernel fails its task with
// ErrKernelPanic naming the kernel, its dependents fail with ErrDepFailed,
// its parent with ErrChildFailed, and the scheduler goes on working.
func TestUserPanicsAndErrors(t *testing.T) {
	reg := sched.NewRegistry()
	var ran atomic.Int32
	reg.Register(uPanic, sched.Kernel{Name: "boom", CPU: func(*sched.Ctx, *sched.TaskData) error {
		var p *sched.TaskData
		_ = p.Elements // nil pointer dereference
		return nil
	}})
	reg.Register(uFail, sched.Kernel{Name: "fail", CPU: func(*sched.Ctx, *sched.TaskData) error { return errors.New("user failure 42") }})
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
	reg.Register(uSum, sched.Kernel{Name: "panic-stream", Kind: sched.Streaming, Grain: 10,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			if d.Begin <= 55 && 55 < d.End {
				panic("element 55")
			}
			return nil
		}})
	for _, workers := range []int{1, 2} {
		s, err := sched.New(sched.Config{Kernels: reg, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		main, _ := s.RegisterThread("main")
		parent, _ := main.Create(&sched.Task{})
		boom, _ := main.Add(&sched.Task{Kernel: uPanic, Parent: parent})
		dep, err := main.Add(&sched.Task{Kernel: uRecord, Dependency: boom})
		if err != nil {
			t.Fatal(err)
		}
		main.Run(parent)
		err = watchdog(t, hangLimit, "Wait", func() error { return main.Wait(boom) })
		var te *sched.TaskError
		if !errors.Is(err, sched.ErrKernelPanic) || !errors.As(err, &te) || te.Name != "boom" {
			t.Errorf("panicking kernel: %v, want ErrKernelPanic naming boom", err)
		}
		if err := main.Wait(dep); !errors.Is(err, sched.ErrDepFailed) {
			t.Errorf("dependent of a panic: %v, want ErrDepFailed", err)
		}
		if err := main.Wait(parent); !errors.Is(err, sched.ErrChildFailed) {
			t.Errorf("parent of a panic: %v, want ErrChildFailed", err)
		}
		if ran.Load() != 0 {
			t.Errorf("dependent of a failed task ran")
		}
		fail, _ := main.Add(&sched.Task{Kernel: uFail})
		if err := main.Wait(fail); err == nil || !strings.Contains(err.Error(), "user failure 42") {
			t.Errorf("failing kernel: %v", err)
		}
		// A streaming task whose one range panics fails as a whole.
		x := make([]float32, 100)
		st := sched.Task{Kernel: uSum}
		st.Data.Elements = 100
		st.Data.In[0] = sched.StreamOf(x)
		sid, _ := main.Add(&st)
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(sid) }); !errors.Is(err, sched.ErrKernelPanic) {
			t.Errorf("streaming task with a panicking range: %v", err)
		}
		// Workers survive: many tasks still run.
		var ids []sched.TaskID
		for i := 0; i < 200; i++ {
			id, err := main.Add(&sched.Task{Kernel: uRecord})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
				t.Fatal(err)
			}
		}
		if ran.Load() != 200 {
			t.Errorf("ran %d of 200 after panics", ran.Load())
		}
		ran.Store(0)
		if err := s.Close(); err != nil {
			t.Errorf("Close after panics: %v", err)
		}
	}
}

// TestUserOddIDs: waiting on the zero ID, a stale ID, a forged ID and an ID of
// another scheduler returns at once (nil, the kept error, or a refusal).
func TestUserOddIDs(t *testing.T) {
	reg := sched.NewRegistry()
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	reg.Register(uFail, sched.Kernel{Name: "fail", CPU: func(*sched.Ctx, *sched.TaskData) error { return errors.New("kept") }})
	s1, _ := sched.New(sched.Config{Kernels: reg, Workers: 1, PoolSize: 64})
	defer s1.Close()
	s2, _ := sched.New(sched.Config{Kernels: reg, Workers: 1, PoolSize: 64})
	defer s2.Close()
	m1, _ := s1.RegisterThread("m1")

	if err := watchdog(t, hangLimit, "Wait(NoTask)", func() error { return m1.Wait(sched.NoTask) }); err != nil {
		t.Errorf("Wait(NoTask): %v", err)
	}
	if err := watchdog(t, hangLimit, "Scheduler.Wait(NoTask)", func() error { return s1.Wait(sched.NoTask) }); err != nil {
		t.Errorf("Scheduler.Wait(NoTask): %v", err)
	}
	failed, _ := m1.Add(&sched.Task{Kernel: uFail})
	if err := m1.Wait(failed); err == nil {
		t.Fatal("failing task reported nil")
	}
	ok, _ := m1.Add(&sched.Task{Kernel: uRecord})
	m1.Wait(ok)
	// Make both IDs stale: run many tasks through the 64-slot pool.
	for i := 0; i < 500; i++ {
		id, err := m1.Add(&sched.Task{Kernel: uRecord})
		if err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			m1.Wait(id)
		}
	}
	if err := watchdog(t, hangLimit, "Wait(stale failed)", func() error { return m1.Wait(failed) }); err == nil || !strings.Contains(err.Error(), "kept") {
		t.Errorf("stale failed ID: %v, want the kept error", err)
	}
	if err := watchdog(t, hangLimit, "Wait(stale ok)", func() error { return m1.Wait(ok) }); err != nil {
		t.Errorf("stale successful ID: %v", err)
	}
	// Foreign: an ID of s1 given to s2, pending or finished.
	held, _ := m1.Create(&sched.Task{})
	for _, id := range []sched.TaskID{held, ok, failed} {
		if err := watchdog(t, hangLimit, "foreign Wait", func() error { return s2.Wait(id) }); !errors.Is(err, sched.ErrForeignTask) {
			t.Errorf("s2.Wait(%v of s1): %v, want ErrForeignTask", id, err)
		}
		if _, err := s2.Add(&sched.Task{Kernel: uRecord, Dependency: id}); !errors.Is(err, sched.ErrForeignTask) {
			t.Errorf("s2 dependency on %v of s1: %v, want ErrForeignTask", id, err)
		}
		if _, err := s2.Add(&sched.Task{Kernel: uRecord, Parent: id}); !errors.Is(err, sched.ErrForeignTask) {
			t.Errorf("s2 parent %v of s1: %v, want ErrForeignTask", id, err)
		}
		if err := s2.Abandon(id, errors.New("x")); err == nil {
			t.Errorf("s2.Abandon(%v of s1) accepted", id)
		}
	}
	if err := s2.Run(held); err == nil {
		t.Errorf("s2.Run(held task of s1) accepted")
	}
	// Forged IDs: every bit pattern must give an answer, never a hang or panic.
	for _, id := range []sched.TaskID{1, 63, 64, 1 << 20, held | 0xfffff, held + 1<<20, ^sched.TaskID(0), held &^ (0xfff << 52)} {
		err := watchdog(t, hangLimit, "Wait(forged)", func() error { return m1.WaitFor(id, 5*time.Second) })
		if errors.Is(err, sched.ErrTimeout) {
			t.Errorf("Wait(forged %#x) waited for the time-out", uint64(id))
		}
		_ = s1.IsFinished(id)
		_ = s1.Err(id)
	}
	if err := m1.Run(held); err != nil {
		t.Errorf("Run(held): %v", err)
	}
	if err := m1.Run(held); err == nil {
		t.Errorf("second Run of the same held task accepted")
	}
	if err := m1.Run(ok); err == nil {
		t.Errorf("Run of a task that was never Created (stale) accepted")
	}
}

// TestUserCloseWhileWaiting: goroutines waiting on held tasks, pinned tasks
// of a thread that never serves, and ordinary tasks all return from Wait
// when Close runs, with ErrClosed for what could not run. Close twice gives
// the same result; Add after Close fails with ErrClosed.
func TestUserCloseWhileWaiting(t *testing.T) {
	reg := sched.NewRegistry()
	var ran atomic.Int32
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2, MainThreads: 2})
	main, _ := s.RegisterThread("main")
	held, _ := main.Create(&sched.Task{})
	child, _ := main.Add(&sched.Task{Kernel: uRecord, Parent: held})
	dependent, _ := main.Add(&sched.Task{Kernel: uRecord, Dependency: held})
	pinned, err := main.Add(&sched.Task{Kernel: uRecord, Affinity: sched.OnThread(1)}) // thread 1 never registers
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, id := range []sched.TaskID{held, child, dependent, pinned} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Wait(id) }()
	}
	time.Sleep(20 * time.Millisecond) // let the waiters block (not required for correctness)
	closeErr := watchdog(t, hangLimit, "Close", s.Close)
	watchdog(t, hangLimit, "waiters after Close", func() error { wg.Wait(); return nil })
	if child != 0 && errs[1] != nil {
		t.Errorf("child of a held parent: %v (it could run)", errs[1])
	}
	for i, name := range []string{"held", "", "dependent", "pinned"} {
		if name != "" && !errors.Is(errs[i], sched.ErrClosed) && !errors.Is(errs[i], sched.ErrDepFailed) {
			t.Errorf("%s task after Close: %v, want ErrClosed", name, errs[i])
		}
	}
	if again := s.Close(); fmt.Sprint(again) != fmt.Sprint(closeErr) {
		t.Errorf("second Close: %v, first: %v", again, closeErr)
	}
	if _, err := s.Add(&sched.Task{Kernel: uRecord}); !errors.Is(err, sched.ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if _, err := main.Add(&sched.Task{Kernel: uRecord}); !errors.Is(err, sched.ErrClosed) {
		t.Errorf("Ctx.Add after Close: %v", err)
	}
	if err := watchdog(t, hangLimit, "Wait after Close", func() error { return main.Wait(held) }); !errors.Is(err, sched.ErrClosed) {
		t.Errorf("Wait(held) after Close: %v", err)
	}
	if _, err := s.RegisterThread("late"); err == nil {
		t.Errorf("RegisterThread after Close accepted")
	}
}

// TestUserTreeAndDependencies builds what a frame looks like: a held root
// with children that add grandchildren from their kernels (with Ctx.Current
// as parent), and a chain of dependencies. Order is checked with sequence
// numbers.
func TestUserTreeAndDependencies(t *testing.T) {
	reg := sched.NewRegistry()
	var seq atomic.Int64
	stamp := make([]int64, 4096)
	const kLeaf, kNode sched.KernelID = 10, 11
	reg.Register(kLeaf, sched.Kernel{Name: "leaf", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		stamp[d.Params[0]] = seq.Add(1)
		return nil
	}})
	reg.Register(kNode, sched.Kernel{Name: "node", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		for j := uint32(0); j < 8; j++ {
			tk := sched.Task{Kernel: kLeaf, Parent: c.Current()}
			tk.Data.Params[0] = d.Params[0]*8 + j + 100
			if _, err := c.Add(&tk); err != nil {
				return err
			}
		}
		return nil
	}})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	for round := 0; round < 20; round++ {
		clear(stamp)
		root, _ := main.Create(&sched.Task{})
		for i := uint32(0); i < 10; i++ {
			tk := sched.Task{Kernel: kNode, Parent: root}
			tk.Data.Params[0] = i
			if _, err := main.Add(&tk); err != nil {
				t.Fatal(err)
			}
		}
		after := sched.Task{Kernel: kLeaf, Dependency: root}
		after.Data.Params[0] = 1
		afterID, _ := main.Add(&after)
		// A chain: 2 -> 3 -> ... -> 40.
		prev := afterID
		for i := uint32(2); i <= 40; i++ {
			tk := sched.Task{Kernel: kLeaf, Dependency: prev}
			tk.Data.Params[0] = i
			prev, _ = main.Add(&tk)
		}
		main.Run(root)
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(prev) }); err != nil {
			t.Fatal(err)
		}
		for i := 100; i < 180; i++ {
			if stamp[i] == 0 || stamp[i] > stamp[1] {
				t.Fatalf("round %d: grandchild %d ran at %d, dependent of root at %d", round, i, stamp[i], stamp[1])
			}
		}
		for i := 2; i <= 40; i++ {
			if stamp[i] <= stamp[i-1] {
				t.Fatalf("round %d: chain %d ran at %d before %d at %d", round, i, stamp[i], i-1, stamp[i-1])
			}
		}
	}
}

// TestUserPinnedStreaming: a streaming task pinned to a registered thread
// runs every range on that thread, whatever its grain.
func TestUserPinnedStreaming(t *testing.T) {
	reg := sched.NewRegistry()
	var off atomic.Int32
	var mainIdx atomic.Int32
	reg.Register(uScale, sched.Kernel{Name: "pinned", Kind: sched.Streaming, Grain: 1,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			if int32(c.Index()) != mainIdx.Load() {
				off.Add(1)
			}
			return nil
		}})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	mainIdx.Store(int32(main.Index()))
	x := make([]float32, 5000)
	for _, g := range []uint32{0, 1, 3, 7000} {
		tk := sched.Task{Kernel: uScale, Affinity: sched.OnThread(0)}
		tk.Data.Elements = uint32(len(x))
		tk.Data.Grain = g
		tk.Data.In[0] = sched.StreamOf(x)
		id, err := main.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
			t.Fatal(err)
		}
	}
	if off.Load() != 0 {
		t.Errorf("%d ranges of a pinned task ran off its thread", off.Load())
	}
}

// TestUserSchedulerWaitInKernel: a kernel without a Ctx at hand uses
// Scheduler.Add and Scheduler.Wait; with one worker that must not hang.
func TestUserSchedulerWaitInKernel(t *testing.T) {
	reg := sched.NewRegistry()
	var s *sched.Scheduler
	var ran atomic.Int32
	reg.Register(uRecord, sched.Kernel{Name: "leaf", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
	reg.Register(uSum, sched.Kernel{Name: "outer", CPU: func(*sched.Ctx, *sched.TaskData) error {
		id, err := s.Add(&sched.Task{Kernel: uRecord})
		if err != nil {
			return err
		}
		return s.Wait(id)
	}})
	s, _ = sched.New(sched.Config{Kernels: reg, Workers: 1})
	defer s.Close()
	id, _ := s.Add(&sched.Task{Kernel: uSum})
	if err := watchdog(t, hangLimit, "Scheduler.Wait", func() error { return s.Wait(id) }); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 {
		t.Errorf("inner ran %d times", ran.Load())
	}
}

// TestUserWaitOwnTask: a kernel waiting for itself gets an error, not a hang.
func TestUserWaitOwnTask(t *testing.T) {
	reg := sched.NewRegistry()
	reg.Register(uRecord, sched.Kernel{Name: "self", CPU: func(c *sched.Ctx, _ *sched.TaskData) error {
		return c.Wait(c.Current())
	}})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1})
	defer s.Close()
	id, _ := s.Add(&sched.Task{Kernel: uRecord})
	if err := watchdog(t, hangLimit, "Wait", func() error { return s.Wait(id) }); err == nil {
		t.Errorf("a kernel waiting for its own task succeeded")
	}
}

// TestUserSelfDependency: dependency on oneself as parent, and on an ancestor.
func TestUserSelfDependency(t *testing.T) {
	reg := sched.NewRegistry()
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	root, _ := main.Create(&sched.Task{})
	mid, _ := main.Create(&sched.Task{Parent: root})
	if _, err := main.Add(&sched.Task{Kernel: uRecord, Parent: mid, Dependency: root}); !errors.Is(err, sched.ErrSelfDepend) {
		t.Errorf("dependency on a grandparent: %v, want ErrSelfDepend", err)
	}
	if _, err := main.Add(&sched.Task{Kernel: uRecord, Parent: mid, Dependency: mid}); !errors.Is(err, sched.ErrSelfDepend) {
		t.Errorf("dependency on the parent: %v, want ErrSelfDepend", err)
	}
	main.Run(mid)
	main.Run(root)
	if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(root) }); err != nil {
		t.Fatal(err)
	}
	// A finished parent is refused.
	if _, err := main.Add(&sched.Task{Kernel: uRecord, Parent: root}); err == nil {
		t.Errorf("child of a finished parent accepted")
	}
}

// TestUserReduceExpandOddCounts: Reduce (Factor inputs per output) and Expand
// (Factor outputs per input) over counts and grains that do not divide, each
// output written exactly once with the right value.
func TestUserReduceExpandOddCounts(t *testing.T) {
	const kRed, kExp sched.KernelID = 20, 21
	reg := sched.NewRegistry()
	if err := reg.Register(kRed, sched.Kernel{Name: "avg3", Kind: sched.Reduce, Factor: 3, Grain: 5,
		In:  []sched.StreamSpec{{Name: "in", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "out", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			in, out := sched.View[int32](d.In[0]), sched.View[int32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				out[i] += in[3*i] + in[3*i+1] + in[3*i+2]
			}
			return nil
		}}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(kExp, sched.Kernel{Name: "x4", Kind: sched.Expand, Factor: 4, Grain: 3,
		In:  []sched.StreamSpec{{Name: "in", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "out", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			in, out := sched.View[int32](d.In[0]), sched.View[int32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				for j := uint32(0); j < 4; j++ {
					out[4*i+j] += in[i] + int32(j)
				}
			}
			return nil
		}}); err != nil {
		t.Fatal(err)
	}
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	for _, n := range []int{0, 1, 2, 4, 5, 6, 11, 1001} {
		for _, g := range []uint32{0, 1, 2, 7, 1 << 16} {
			in := make([]int32, 3*n)
			for i := range in {
				in[i] = int32(i)
			}
			out := make([]int32, n)
			tk := sched.Task{Kernel: kRed}
			tk.Data.Elements, tk.Data.Grain = uint32(n), g
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
			id, err := main.Add(&tk)
			if err != nil {
				t.Fatalf("reduce n=%d g=%d: %v", n, g, err)
			}
			if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
				t.Fatal(err)
			}
			for i := range out {
				if want := int32(9*i + 3); out[i] != want {
					t.Fatalf("reduce n=%d g=%d: out[%d]=%d want %d", n, g, i, out[i], want)
				}
			}
			// Expand.
			ein := make([]int32, n)
			for i := range ein {
				ein[i] = int32(10 * i)
			}
			eout := make([]int32, 4*n)
			tk = sched.Task{Kernel: kExp}
			tk.Data.Elements, tk.Data.Grain = uint32(n), g
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(ein), sched.StreamOf(eout)
			id, err = main.Add(&tk)
			if err != nil {
				t.Fatalf("expand n=%d g=%d: %v", n, g, err)
			}
			if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
				t.Fatal(err)
			}
			for i := range eout {
				if want := int32(10*(i/4) + i%4); eout[i] != want {
					t.Fatalf("expand n=%d g=%d: out[%d]=%d want %d", n, g, i, eout[i], want)
				}
			}
		}
	}
	// The wrong ratio between the streams is refused, naming the stream.
	in := make([]int32, 10)
	out := make([]int32, 4)
	tk := sched.Task{Kernel: kRed}
	tk.Data.Elements = 4
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
	if _, err := main.Add(&tk); err == nil || !strings.Contains(err.Error(), "in") {
		t.Errorf("reduce with 10 inputs for 4 outputs (factor 3): %v", err)
	}
}

// TestUserPriorities: with one thread, a batch of runnable tasks added while
// it was busy runs high before normal before low.
func TestUserPriorities(t *testing.T) {
	reg := sched.NewRegistry()
	var mu sync.Mutex
	var order []sched.Priority
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		mu.Lock()
		order = append(order, sched.Priority(int8(d.Params[0])))
		mu.Unlock()
		return nil
	}})
	// The only thread runs the tasks, so the order is the scheduler's choice.
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1, MainThreads: 1})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	gate, _ := main.Create(&sched.Task{})
	var ids []sched.TaskID
	for i := 0; i < 30; i++ {
		p := []sched.Priority{sched.PriorityLow, sched.PriorityNormal, sched.PriorityHigh}[i%3]
		tk := sched.Task{Kernel: uRecord, Priority: p, Affinity: sched.OnThread(0), Dependency: gate}
		tk.Data.Params[0] = uint32(uint8(p))
		id, err := main.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	main.Run(gate)
	for _, id := range ids {
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i] > order[i-1] {
			t.Fatalf("priority %v ran after %v: %v", order[i], order[i-1], order)
		}
	}
}

// TestUserManyGoroutinesAdd: foreign goroutines add and wait concurrently
// (a loader thread, a network thread...) into a small pool: back-pressure,
// no lost task.
func TestUserManyGoroutinesAdd(t *testing.T) {
	reg := sched.NewRegistry()
	var ran atomic.Int64
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2, PoolSize: 32})
	defer s.Close()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last sched.TaskID
			for i := 0; i < 500; i++ {
				id, err := s.Add(&sched.Task{Kernel: uRecord, Dependency: last})
				if err != nil {
					errc <- err
					return
				}
				if i%7 == 0 {
					last = id
				}
			}
			errc <- s.Wait(last)
		}()
	}
	watchdog(t, hangLimit, "adders", func() error { wg.Wait(); return nil })
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	watchdog(t, hangLimit, "drain", func() error {
		for s.Pending() != 0 {
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if ran.Load() != 8*500 {
		t.Errorf("ran %d of %d", ran.Load(), 8*500)
	}
}

// TestUserHugeElementCount: a task of MaxUint32 work items is split into
// disjoint ranges that cover it exactly.
func TestUserHugeElementCount(t *testing.T) {
	reg := sched.NewRegistry()
	var mu sync.Mutex
	var total uint64
	var calls int
	var maxEnd uint32
	reg.Register(uScale, sched.Kernel{Name: "count", Kind: sched.Streaming, CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		mu.Lock()
		total += uint64(d.End - d.Begin)
		calls++
		maxEnd = max(maxEnd, d.End)
		mu.Unlock()
		return nil
	}})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	for _, n := range []uint32{^uint32(0), ^uint32(0) - 1, 1<<32 - 1<<26 + 5} {
		total, calls, maxEnd = 0, 0, 0
		tk := sched.Task{Kernel: uScale}
		tk.Data.Elements = n
		tk.Data.Grain = 1 << 26
		id, err := main.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
			t.Fatal(err)
		}
		if total != uint64(n) || maxEnd != n || calls < 2 {
			t.Errorf("Elements %d: covered %d items in %d calls, last end %d", n, total, calls, maxEnd)
		}
	}
}

// TestUserHangShapes: the shapes that used to hang without a word (issue
// reports of a helping wait cycle, back-pressure with no way out, a cycle
// through a parent) each end with an error.
func TestUserHangShapes(t *testing.T) {
	t.Run("back-pressure", func(t *testing.T) {
		reg := sched.NewRegistry()
		reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
		s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1, PoolSize: 16})
		defer s.Close()
		held, _ := s.Create(&sched.Task{})
		var last error
		watchdog(t, hangLimit, "Add with a full pool", func() error {
			for i := 0; i < 40; i++ {
				if _, err := s.Add(&sched.Task{Kernel: uRecord, Dependency: held}); err != nil {
					last = err
					return nil
				}
			}
			return nil
		})
		if !errors.Is(last, sched.ErrPoolDeadlock) {
			t.Errorf("40 dependents of a held task in a pool of 16: %v, want ErrPoolDeadlock", last)
		}
		s.Run(held)
	})
	t.Run("cycle through a parent", func(t *testing.T) {
		reg := sched.NewRegistry()
		reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
		s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1})
		defer s.Close()
		main, _ := s.RegisterThread("main")
		x, _ := main.Create(&sched.Task{})
		d, _ := main.Create(&sched.Task{Dependency: x})
		if _, err := main.Add(&sched.Task{Kernel: uRecord, Parent: x, Dependency: d}); !errors.Is(err, sched.ErrCycle) {
			t.Errorf("X -> child C -> D -> X: %v, want ErrCycle", err)
		}
		main.Run(d)
		main.Run(x)
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(d) }); err != nil {
			t.Error(err)
		}
	})
	t.Run("helping wait cycle", func(t *testing.T) {
		// A waits for its child B; the waiting thread helps and picks up C;
		// C waits for D; D depends on A.
		const kA, kB, kC sched.KernelID = 30, 31, 32
		reg := sched.NewRegistry()
		var s *sched.Scheduler
		var cID, dID atomic.Uint64
		release := make(chan struct{})
		reg.Register(kB, sched.Kernel{Name: "B", CPU: func(*sched.Ctx, *sched.TaskData) error { <-release; return nil }})
		reg.Register(kC, sched.Kernel{Name: "C", CPU: func(c *sched.Ctx, _ *sched.TaskData) error {
			return c.Wait(sched.TaskID(dID.Load()))
		}})
		reg.Register(kA, sched.Kernel{Name: "A", CPU: func(c *sched.Ctx, _ *sched.TaskData) error {
			b, err := c.Add(&sched.Task{Kernel: kB, Parent: c.Current(), Affinity: sched.OnThread(0)})
			if err != nil {
				return err
			}
			d, err := c.Add(&sched.Task{Dependency: c.Current()})
			if err != nil {
				return err
			}
			dID.Store(uint64(d))
			id, err := c.Add(&sched.Task{Kernel: kC})
			if err != nil {
				return err
			}
			cID.Store(uint64(id))
			close(release)
			return c.Wait(b)
		}})
		s, _ = sched.New(sched.Config{Kernels: reg, Workers: 1, MainThreads: 1})
		defer s.Close()
		main, _ := s.RegisterThread("main")
		a, _ := main.Add(&sched.Task{Kernel: kA})
		// Wait, not WaitFor: B is pinned to this thread, and WaitFor runs
		// no tasks (the watchdog turns a hang into a failure).
		err := watchdog(t, hangLimit, "Wait(A)", func() error {
			if errA := main.Wait(a); errA != nil {
				return errA
			}
			return main.Wait(sched.TaskID(cID.Load()))
		})
		// Whether the cycle forms depends on which thread runs A, B and C
		// first; when it does, C's wait fails naming it.
		if err != nil && !errors.Is(err, sched.ErrDeadlock) {
			t.Errorf("helping wait cycle: C: %v, want nil or ErrDeadlock", err)
		}
	})
	t.Run("abandon a hung kernel", func(t *testing.T) {
		reg := sched.NewRegistry()
		stuck := make(chan struct{})
		started := make(chan struct{})
		var ran atomic.Int32
		reg.Register(uRecord, sched.Kernel{Name: "hang", CPU: func(*sched.Ctx, *sched.TaskData) error { close(started); <-stuck; return nil }})
		reg.Register(uSum, sched.Kernel{Name: "after", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
		s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2, MainThreads: 1})
		// Waits from a goroutine that is not a scheduler thread: a thread
		// that helps while it waits could pick up the hanging kernel itself.
		h, _ := s.Add(&sched.Task{Kernel: uRecord})
		dep, _ := s.Add(&sched.Task{Kernel: uSum, Dependency: h})
		watchdog(t, hangLimit, "kernel start", func() error { <-started; return nil })
		main := s
		if err := s.Abandon(h, errors.New("frame budget")); err != nil {
			t.Fatal(err)
		}
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(h) }); !errors.Is(err, sched.ErrAbandoned) {
			t.Errorf("Wait on an abandoned task: %v", err)
		}
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(dep) }); !errors.Is(err, sched.ErrDepFailed) {
			t.Errorf("dependent of an abandoned task: %v", err)
		}
		if err := s.Abandon(h, errors.New("again")); err == nil {
			t.Errorf("second Abandon accepted")
		}
		close(stuck)
		watchdog(t, hangLimit, "Close", s.Close)
		if ran.Load() != 0 {
			t.Errorf("dependent of an abandoned task ran")
		}
	})
}

// TestUserManySchedulers: a tool that makes hundreds of schedulers in turn;
// an ID of the first is foreign to every later one.
func TestUserManySchedulers(t *testing.T) {
	reg := sched.NewRegistry()
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	first, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	held, _ := first.Create(&sched.Task{})
	for i := 0; i < 300; i++ {
		s, err := sched.New(sched.Config{Kernels: reg, Workers: 1, PoolSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(&sched.Task{Kernel: uRecord, Dependency: held}); !errors.Is(err, sched.ErrForeignTask) {
			t.Fatalf("scheduler %d accepted a dependency on another scheduler's task: %v", i+2, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	first.Run(held)
}
