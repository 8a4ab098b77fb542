package sched

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A kernel that calls runtime.Goexit (testing's t.Fatal in a kernel does)
// used to end its thread's goroutine with the task unfinished: every Wait
// on it, its dependents and Close hung. Now the task fails with
// ErrKernelPanic saying Goexit, kernels suspended under it on that
// goroutine fail too, a worker is replaced, and the scheduler goes on.
func TestKernelGoexit(t *testing.T) {
	const kExit, kOuter, kOK KernelID = 109, 110, 111
	var ran atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kExit, Kernel{Name: "exit", CPU: func(*Ctx, *TaskData) error { runtime.Goexit(); return nil }}))
	must(t, reg.Register(kOK, Kernel{Name: "ok", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return nil }}))
	must(t, reg.Register(kOuter, Kernel{Name: "outer", CPU: func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: kExit, Parent: c.Current()})
		if err != nil {
			return err
		}
		return c.Wait(id) // runs it here (one worker): the goroutine exits under this kernel
	}}))
	isGoexit := func(err error) bool {
		return errors.Is(err, ErrKernelPanic) && strings.Contains(err.Error(), "Goexit")
	}
	s, err := New(Config{Kernels: reg, Workers: 1, MainThreads: 1})
	must(t, err)
	within(t, 20*time.Second, "Goexit in kernels", func() {
		for round := range 3 {
			x, err := s.Add(&Task{Kernel: kExit})
			must(t, err)
			dep, err := s.Add(&Task{Kernel: kOK, Dependency: x})
			must(t, err)
			if err := s.Wait(x); !isGoexit(err) {
				t.Errorf("round %d: a kernel that called Goexit: %v, want ErrKernelPanic naming Goexit", round, err)
			}
			if err := s.Wait(dep); !errors.Is(err, ErrDepFailed) {
				t.Errorf("round %d: its dependent: %v, want ErrDepFailed", round, err)
			}
			o, err := s.Add(&Task{Kernel: kOuter})
			must(t, err)
			if err := s.Wait(o); !isGoexit(err) {
				t.Errorf("round %d: a kernel suspended under the Goexit: %v, want ErrKernelPanic naming Goexit", round, err)
			}
			// The replaced worker runs what comes next.
			ok, err := s.Add(&Task{Kernel: kOK})
			must(t, err)
			must(t, s.Wait(ok))
		}
		// A registered thread whose goroutine runs such a kernel in Wait:
		// that goroutine ends, the task fails, others see it.
		p, err := s.Add(&Task{Kernel: kExit, Affinity: OnThread(0)}) // the first thread to register
		must(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := s.RegisterThread("doomed")
			if err != nil {
				t.Error(err)
				return
			}
			c.Wait(p)
			t.Error("Wait returned on a goroutine that should have exited")
		}()
		<-done
		if err := s.Wait(p); !isGoexit(err) {
			t.Errorf("pinned kernel that called Goexit: %v", err)
		}
		must(t, s.Close())
	})
	if ran.Load() != 3 {
		t.Errorf("%d tasks ran after the Goexits, want 3", ran.Load())
	}
}

// A streaming task pinned to a registered thread runs every range of it on
// that thread (it used to be split into pieces that workers stole).
func TestPinnedStreamingStaysOnThread(t *testing.T) {
	const kPinnedRange KernelID = 40
	var off, ranges, items atomic.Int64
	var sink atomic.Uint32
	reg := NewRegistry()
	var mainIndex atomic.Int32
	must(t, reg.Register(kPinnedRange, Kernel{Name: "pinned_range", Kind: Streaming, Grain: 64,
		CPU: func(c *Ctx, d *TaskData) error {
			if int32(c.Index()) != mainIndex.Load() {
				off.Add(1)
			}
			ranges.Add(1)
			items.Add(int64(d.End - d.Begin))
			var x uint32
			for i := d.Begin; i < d.End; i++ {
				x += spinWork(i)
			}
			sink.Add(x)
			return nil
		}}))
	for _, workers := range []int{1, 3} {
		s, err := New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		mainIndex.Store(int32(m.Index()))
		off.Store(0)
		ranges.Store(0)
		items.Store(0)
		const reps, n = 20, 1 << 14
		for range reps {
			tk := Task{Kernel: kPinnedRange, Affinity: OnThread(0)}
			tk.Data.Elements = n
			id, err := m.Add(&tk)
			must(t, err)
			must(t, m.Wait(id))
		}
		must(t, s.Close())
		if off.Load() != 0 {
			t.Errorf("workers %d: %d of %d ranges of a task pinned to thread(0) ran on a worker", workers, off.Load(), ranges.Load())
		}
		if items.Load() != reps*n {
			t.Errorf("workers %d: %d items ran, want %d", workers, items.Load(), reps*n)
		}
	}
}

// Element counts up to the type's limit are split (the piece count used to
// overflow for Elements > 2^32 - Grain, and the task ran as one call).
func TestHugeElementCountSplits(t *testing.T) {
	const kHuge KernelID = 41
	var calls, items atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kHuge, Kernel{Name: "huge", Kind: Streaming,
		CPU: func(c *Ctx, d *TaskData) error {
			calls.Add(1)
			items.Add(int64(d.End - d.Begin))
			if d.End < d.Begin {
				t.Errorf("range [%d, %d)", d.Begin, d.End)
			}
			return nil
		}}))
	s, err := New(Config{Kernels: reg, Workers: 2})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	for _, c := range []struct{ n, grain uint32 }{
		{1<<32 - 1, 1 << 26},
		{1<<32 - 1, 1<<32 - 1},
		{1<<32 - 1, 1 << 31},
		{1<<32 - 5, 1<<31 + 1},
		{1<<32 - 100, 1 << 24},
	} {
		calls.Store(0)
		items.Store(0)
		tk := Task{Kernel: kHuge}
		tk.Data.Elements, tk.Data.Grain = c.n, c.grain
		id, err := m.Add(&tk)
		must(t, err)
		must(t, m.Wait(id))
		if items.Load() != int64(c.n) {
			t.Errorf("elements %d grain %d: %d items ran", c.n, c.grain, items.Load())
		}
		want := int64(2) // at least two pieces when the count exceeds the grain
		if c.n <= c.grain {
			want = 1
		}
		if calls.Load() < want {
			t.Errorf("elements %d grain %d: %d calls, want at least %d", c.n, c.grain, calls.Load(), want)
		}
	}
}

// Priorities compare as they rank, the zero value is Normal, and values
// outside Low..High are refused.
func TestPriorityOrder(t *testing.T) {
	if !(PriorityLow < PriorityNormal && PriorityNormal < PriorityHigh) {
		t.Fatalf("low %d, normal %d, high %d: numeric order is not priority order", PriorityLow, PriorityNormal, PriorityHigh)
	}
	if (Task{}).Priority != PriorityNormal {
		t.Fatalf("the zero priority is %v", Task{}.Priority)
	}
	for _, p := range []Priority{PriorityLow, PriorityNormal, PriorityHigh} {
		if p.level() < 0 || p.level() >= numPriorities || (p < PriorityHigh && p.level() <= (p+1).level()) {
			t.Fatalf("%v has queue level %d", p, p.level())
		}
	}
	s, err := New(Config{Workers: 1})
	must(t, err)
	defer s.Close()
	for _, p := range []Priority{PriorityLow - 1, PriorityHigh + 1, 9} {
		if _, err := s.Add(&Task{Priority: p}); !errors.Is(err, ErrBadPriority) {
			t.Errorf("priority %d: %v, want ErrBadPriority", p, err)
		}
	}
}

func TestPriorities(t *testing.T) {
	// One worker, blocked: everything queues; then the main thread runs
	// the queue by waiting and must take high before normal before low.
	block := make(chan struct{})
	r := newRecorder(30)
	s, m := start(t, Config{Workers: 1}, r, block)
	b, err := m.Add(&Task{Kernel: kBlock, Affinity: OnThread(0)})
	must(t, err)
	_ = b
	// Keep the worker busy so only main runs the recorded tasks.
	wb, err := s.Add(&Task{Kernel: kBlock})
	must(t, err)
	for s.Pending() > 0 && !workerBusy(s) {
		runtime.Gosched()
	}
	root, err := m.Create(&Task{})
	must(t, err)
	prios := []Priority{PriorityLow, PriorityNormal, PriorityHigh}
	for i := 0; i < 30; i++ {
		tk := rec(i)
		tk.Priority = prios[i%3]
		tk.Parent = root
		tk.Affinity = OnThread(0)
		_, err := m.Add(tk)
		must(t, err)
	}
	must(t, m.Run(root))
	close(block)
	must(t, m.Wait(root))
	must(t, m.Wait(wb))
	r.mu.Lock()
	defer r.mu.Unlock()
	rank := func(i uint32) int { return prios[i%3].level() }
	for j := 1; j < len(r.order); j++ {
		if rank(r.order[j]) < rank(r.order[j-1]) {
			t.Fatalf("priority order violated: %v", r.order)
		}
	}
}

func TestThreadAffinity(t *testing.T) {
	const n = 200
	r := newRecorder(n)
	reg := testRegistry(t, r, nil)
	s, err := New(Config{Kernels: reg, MainThreads: 2, Workers: 2})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	render, err := s.RegisterThread("render")
	must(t, err)
	if _, err := s.RegisterThread("third"); !errors.Is(err, ErrThreadsTaken) {
		t.Fatalf("third registration: %v", err)
	}
	var wg sync.WaitGroup
	done := s.NewEvent()
	wg.Go(func() { render.WaitEvent(done) }) // the render thread serves its tasks
	root, err := m.Create(&Task{})
	must(t, err)
	for i := 0; i < n; i++ {
		tk := rec(i)
		tk.Parent = root
		tk.Affinity = OnThread(i % 2)
		_, err := m.Add(tk)
		must(t, err)
	}
	must(t, m.Run(root))
	must(t, m.Wait(root))
	done.Signal()
	wg.Wait()
	for i := 0; i < n; i++ {
		want := int32(s.Workers() + i%2)
		if got := r.thread[i].Load(); got != want {
			t.Fatalf("task %d with affinity thread(%d) ran on thread %d, want %d", i, i%2, got, want)
		}
	}
}

func TestStreamingSplit(t *testing.T) {
	for _, w := range []int{1, 3} {
		for _, n := range []int{1, 7, 100, 10000} {
			t.Run(fmt.Sprint(w, "/", n), func(t *testing.T) {
				r := newRecorder(0)
				_, m := start(t, Config{Workers: w}, r, nil)
				in := make([]uint32, n)
				out := make([]uint32, n)
				for i := range in {
					in[i] = uint32(i)
				}
				var tk Task
				tk.Kernel = kRange
				tk.Data.Elements = uint32(n)
				tk.Data.Grain = 1
				tk.Data.In[0], tk.Data.Out[0] = StreamOf(in), StreamOf(out)
				id, err := m.Add(&tk)
				must(t, err)
				must(t, m.Wait(id))
				for i := range out {
					if out[i] != uint32(i)+1 {
						t.Fatalf("out[%d]=%d (element skipped or run twice)", i, out[i])
					}
				}
			})
		}
	}
	// 7 items over 4 threads split 2,2,2,1 with grain 2 (binary split
	// stops at pieces below 2 grains).
	r := newRecorder(0)
	_, m := start(t, Config{Workers: 3}, r, nil)
	in, out := make([]uint32, 7), make([]uint32, 7)
	var tk Task
	tk.Kernel = kRange
	tk.Data.Elements, tk.Data.Grain = 7, 2
	tk.Data.In[0], tk.Data.Out[0] = StreamOf(in), StreamOf(out)
	id, err := m.Add(&tk)
	must(t, err)
	must(t, m.Wait(id))
	r.mu.Lock()
	sizes := slices.Clone(r.order)
	r.mu.Unlock()
	slices.Sort(sizes)
	if !slices.Equal(sizes, []uint32{1, 2, 2, 2}) {
		t.Fatalf("7 over 4 threads split into %v, want [1 2 2 2]", sizes)
	}
}

func TestReduceExpand(t *testing.T) {
	_, m := start(t, Config{Workers: 2}, nil, nil)
	in := make([]float32, 32*100)
	for i := range in {
		in[i] = float32(i)
	}
	avg := make([]float32, 100)
	var tk Task
	tk.Kernel = kAvg32
	tk.Data.Elements = 100
	tk.Data.Grain = 7
	tk.Data.In[0], tk.Data.Out[0] = StreamOf(in), StreamOf(avg)
	id, err := m.Add(&tk)
	must(t, err)
	must(t, m.Wait(id))
	for i, v := range avg {
		if want := float32(32*i) + 15.5; v != want {
			t.Fatalf("avg[%d]=%v want %v", i, v, want)
		}
	}
	out := make([]float32, 200)
	tk = Task{Kernel: kExpand2}
	tk.Data.Elements = 100
	tk.Data.In[0], tk.Data.Out[0] = StreamOf(avg), StreamOf(out)
	id, err = m.Add(&tk)
	must(t, err)
	must(t, m.Wait(id))
	for i := range avg {
		if out[2*i] != avg[i] || out[2*i+1] != -avg[i] {
			t.Fatalf("expand %d: %v %v", i, out[2*i], out[2*i+1])
		}
	}
}
