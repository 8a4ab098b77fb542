package sched_test

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

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
