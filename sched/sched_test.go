package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testKernels registers kernels that record what ran where.
type recorder struct {
	mu    sync.Mutex
	order []uint32 // Params[0] of tasks in completion-of-kernel order
	runs  []atomic.Int32
	// thread index that ran each task (by Params[0])
	thread []atomic.Int32
}

const (
	kRecord KernelID = 20 + iota
	kFail
	kPanic
	kBlock
	kRange
	kAvg32
	kExpand2
)

func newRecorder(n int) *recorder {
	return &recorder{runs: make([]atomic.Int32, n), thread: make([]atomic.Int32, n)}
}

func testRegistry(t testing.TB, r *recorder, block chan struct{}) *Registry {
	reg := NewRegistry()
	must(t, reg.Register(kRecord, Kernel{Name: "record", CPU: func(c *Ctx, d *TaskData) error {
		i := d.Params[0]
		r.runs[i].Add(1)
		r.thread[i].Store(int32(c.Index()))
		r.mu.Lock()
		r.order = append(r.order, i)
		r.mu.Unlock()
		return nil
	}}))
	must(t, reg.Register(kFail, Kernel{Name: "fail", CPU: func(c *Ctx, d *TaskData) error {
		return fmt.Errorf("boom %d", d.Params[0])
	}}))
	must(t, reg.Register(kPanic, Kernel{Name: "panic", CPU: func(c *Ctx, d *TaskData) error {
		var s []int
		s[d.Params[0]] = 1 // index out of range: a runtime panic, as a kernel's bug would be
		return nil
	}}))
	must(t, reg.Register(kBlock, Kernel{Name: "block", CPU: func(c *Ctx, d *TaskData) error {
		<-block
		return nil
	}}))
	must(t, reg.Register(kRange, Kernel{Name: "range", Kind: Streaming, Grain: 1,
		In: []StreamSpec{{Name: "in", Stride: 4}}, Out: []StreamSpec{{Name: "out", Stride: 4}},
		CPU: func(c *Ctx, d *TaskData) error {
			in, out := View[uint32](d.In[0]), View[uint32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				out[i] += in[i] + 1 // += catches double execution
			}
			if r != nil {
				r.mu.Lock()
				r.order = append(r.order, d.End-d.Begin)
				r.mu.Unlock()
			}
			return nil
		}}))
	must(t, reg.Register(kAvg32, Kernel{Name: "avg32", Kind: Reduce, Factor: 32,
		In: []StreamSpec{{Name: "in", Stride: 4}}, Out: []StreamSpec{{Name: "avg", Stride: 4}},
		CPU: func(c *Ctx, d *TaskData) error {
			in, out := View[float32](d.In[0]), View[float32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				var s float32
				for _, v := range in[i*32 : i*32+32] {
					s += v
				}
				out[i] = s / 32
			}
			return nil
		}}))
	must(t, reg.Register(kExpand2, Kernel{Name: "expand2", Kind: Expand, Factor: 2,
		In: []StreamSpec{{Name: "in", Stride: 4}}, Out: []StreamSpec{{Name: "out", Stride: 4}},
		CPU: func(c *Ctx, d *TaskData) error {
			in, out := View[float32](d.In[0]), View[float32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				out[2*i], out[2*i+1] = in[i], -in[i]
			}
			return nil
		}}))
	return reg
}

func start(t testing.TB, cfg Config, r *recorder, block chan struct{}) (*Scheduler, *Ctx) {
	t.Helper()
	if cfg.Kernels == nil {
		cfg.Kernels = testRegistry(t, r, block)
	}
	s, err := New(cfg)
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s, m
}

func rec(i int) *Task {
	t := &Task{Kernel: kRecord}
	t.Data.Params[0] = uint32(i)
	return t
}

// Each primitive runs with several worker counts (marl's habit).
var workerCounts = []int{1, 2, 4, 8}

func TestExactlyOnceAndHierarchy(t *testing.T) {
	for _, w := range workerCounts {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			const n = 2000
			r := newRecorder(n + 1)
			s, m := start(t, Config{Workers: w}, r, nil)
			root, err := m.Create(&Task{})
			must(t, err)
			// A parent whose kernel adds children while it runs.
			p := rec(n)
			p.Parent = root
			for i := 0; i < n; i++ {
				c := rec(i)
				c.Parent = root
				_, err := m.Add(c)
				must(t, err)
			}
			must(t, m.Run(root))
			must(t, m.Wait(root))
			for i := 0; i < n; i++ {
				if got := r.runs[i].Load(); got != 1 {
					t.Fatalf("task %d ran %d times", i, got)
				}
			}
			if !s.IsFinished(root) {
				t.Fatal("root not finished after Wait")
			}
			if s.Pending() != 0 {
				t.Fatalf("%d tasks still pending", s.Pending())
			}
		})
	}
}

func TestChildrenAddedWhileParentRuns(t *testing.T) {
	const kSpawn KernelID = 50
	reg := NewRegistry()
	var leaves atomic.Int32
	var parentDoneBeforeChildren atomic.Bool
	must(t, reg.Register(kSpawn, Kernel{Name: "spawn", CPU: func(c *Ctx, d *TaskData) error {
		if d.Params[0] == 0 {
			leaves.Add(1)
			time.Sleep(time.Microsecond)
			return nil
		}
		for i := 0; i < 3; i++ {
			var ch Task
			ch.Kernel = kSpawn
			ch.Parent = c.Current()
			ch.Data.Params[0] = d.Params[0] - 1
			if _, err := c.Add(&ch); err != nil {
				return err
			}
		}
		return nil
	}}))
	s, m := start(t, Config{Kernels: reg, Workers: 2}, nil, nil)
	var root Task
	root.Kernel = kSpawn
	root.Data.Params[0] = 5
	id, err := m.Add(&root)
	must(t, err)
	must(t, m.Wait(id))
	if got := leaves.Load(); got != 243 {
		t.Fatalf("leaves %d, want 3^5=243", got)
	}
	if parentDoneBeforeChildren.Load() || s.Pending() != 0 {
		t.Fatal("parent completed before its children")
	}
}

func TestDependencyOrdering(t *testing.T) {
	for _, w := range workerCounts {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			const n = 500
			r := newRecorder(n)
			_, m := start(t, Config{Workers: w}, r, nil)
			// A chain: i depends on i-1.
			var prev TaskID
			for i := 0; i < n; i++ {
				tk := rec(i)
				tk.Dependency = prev
				id, err := m.Add(tk)
				must(t, err)
				prev = id
			}
			must(t, m.Wait(prev))
			r.mu.Lock()
			defer r.mu.Unlock()
			if !slices.IsSorted(r.order) || len(r.order) != n {
				t.Fatalf("chain ran out of order: %v", r.order[:min(20, len(r.order))])
			}
		})
	}
}

func TestJoin(t *testing.T) {
	const n = 64
	r := newRecorder(n + 1)
	_, m := start(t, Config{Workers: 3}, r, nil)
	join, err := m.Create(&Task{})
	must(t, err)
	for i := 0; i < n; i++ {
		tk := rec(i)
		tk.Parent = join
		_, err := m.Add(tk)
		must(t, err)
	}
	after := rec(n)
	after.Dependency = join
	last, err := m.Add(after)
	must(t, err)
	must(t, m.Run(join))
	must(t, m.Wait(last))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.order[len(r.order)-1] != n || len(r.order) != n+1 {
		t.Fatalf("task after the join did not run last: %v", r.order)
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

// workerBusy reports whether some worker is running a kernel.
func workerBusy(s *Scheduler) bool {
	return s.live() > 0 && s.nIdle.Load() == 0
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

func TestWaitHelps(t *testing.T) {
	// With the only worker blocked, Wait on the main thread must run the
	// task itself.
	block := make(chan struct{})
	r := newRecorder(1)
	s, m := start(t, Config{Workers: 1}, r, block)
	wb, err := m.Add(&Task{Kernel: kBlock})
	must(t, err)
	for !workerBusy(s) {
		runtime.Gosched()
	}
	id, err := m.Add(rec(0))
	must(t, err)
	must(t, m.Wait(id))
	if got := r.thread[0].Load(); got != int32(s.Workers()) {
		t.Fatalf("task ran on thread %d, want the waiting main thread %d", got, s.Workers())
	}
	close(block)
	must(t, m.Wait(wb))
}

func TestStaleIDs(t *testing.T) {
	s, m := start(t, Config{Workers: 1, PoolSize: 16}, newRecorder(1), nil)
	id, err := m.Add(rec(0))
	must(t, err)
	must(t, m.Wait(id))
	// Reuse every slot many times.
	for i := 0; i < 1000; i++ {
		x, err := m.Add(rec(0))
		must(t, err)
		must(t, m.Wait(x))
	}
	if !s.IsFinished(id) {
		t.Fatal("stale ID reports unfinished")
	}
	if err := m.Wait(id); err != nil {
		t.Fatalf("Wait on stale ID: %v", err)
	}
	// A dependency on a finished task is satisfied.
	tk := rec(0)
	tk.Dependency = id
	x, err := m.Add(tk)
	must(t, err)
	must(t, m.Wait(x))
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

func TestErrorPropagation(t *testing.T) {
	for _, kern := range []KernelID{kFail, kPanic} {
		t.Run(fmt.Sprint(kern), func(t *testing.T) {
			r := newRecorder(4)
			s, m := start(t, Config{Workers: 2}, r, nil)
			parent, err := m.Create(&Task{})
			must(t, err)
			bad := &Task{Kernel: kern, Parent: parent}
			bad.Data.Params[0] = 7
			badID, err := m.Add(bad)
			must(t, err)
			dep := rec(0)
			dep.Dependency = badID
			depID, err := m.Add(dep)
			must(t, err)
			dep2 := rec(1)
			dep2.Dependency = depID
			dep2ID, err := m.Add(dep2)
			must(t, err)
			must(t, m.Run(parent))

			err = m.Wait(badID)
			var te *TaskError
			if !errors.As(err, &te) || te.Task != badID || te.Kernel != kern {
				t.Fatalf("bad task error %v does not name task %v kernel %d", err, badID, kern)
			}
			if kern == kPanic && !errors.Is(err, ErrKernelPanic) {
				t.Fatalf("panic error %v", err)
			}
			if kern == kFail && !strings.Contains(err.Error(), "boom 7") {
				t.Fatalf("error %v lost the kernel's message", err)
			}
			for _, id := range []TaskID{depID, dep2ID} {
				if err := m.Wait(id); !errors.Is(err, ErrDepFailed) {
					t.Fatalf("dependent %v: %v, want ErrDepFailed", id, err)
				}
			}
			if r.runs[0].Load() != 0 || r.runs[1].Load() != 0 {
				t.Fatal("a dependent of a failed task ran")
			}
			if err := m.Wait(parent); !errors.Is(err, ErrChildFailed) {
				t.Fatalf("parent: %v, want ErrChildFailed", err)
			}
			// A dependency added after the failure fails at once.
			late := rec(2)
			late.Dependency = badID
			lateID, err := m.Add(late)
			must(t, err)
			if err := m.Wait(lateID); !errors.Is(err, ErrDepFailed) {
				t.Fatalf("late dependent: %v", err)
			}
			// The scheduler stays usable.
			ok, err := m.Add(rec(3))
			must(t, err)
			must(t, m.Wait(ok))
			if r.runs[3].Load() != 1 {
				t.Fatal("scheduler unusable after a failure")
			}
			_ = s
		})
	}
}

func TestBadInput(t *testing.T) {
	s, m := start(t, Config{Workers: 1}, newRecorder(1), nil)
	other, om := start(t, Config{Workers: 1}, newRecorder(1), nil)
	_ = other
	foreign, err := om.Create(&Task{})
	must(t, err)
	x := make([]uint32, 10)
	y := make([]uint32, 9)
	held, err := m.Create(&Task{})
	must(t, err)
	cases := []struct {
		name string
		task Task
		want error
	}{
		{"unknown kernel", Task{Kernel: 999}, ErrUnknownKernel},
		{"foreign parent", Task{Parent: foreign}, ErrForeignTask},
		{"foreign dependency", Task{Dependency: foreign}, ErrForeignTask},
		{"never issued", Task{Dependency: makeID(s.id, 77, 5)}, ErrNotIssued},
		{"depends on parent", Task{Parent: held, Dependency: held}, ErrSelfDepend},
		{"bad affinity", Task{Affinity: OnThread(3)}, ErrBadAffinity},
		{"no gpu", Task{Affinity: GPU}, ErrNoExecutor},
		{"bad priority", Task{Priority: 9}, ErrBadPriority},
	}
	for _, c := range cases {
		if _, err := m.Add(&c.task); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// Stream shape mismatches name the stream.
	bad := []Task{
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{StreamOf(x)}, Out: [4]Stream{StreamOf(y)}}},
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{StreamOf(x)}}},
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{{Bytes: make([]byte, 8), Stride: 4, Count: 10}}, Out: [4]Stream{StreamOf(x)}}},
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{StreamOf(make([]uint16, 10))}, Out: [4]Stream{StreamOf(x)}}},
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{StreamOf(x), StreamOf(x)}, Out: [4]Stream{StreamOf(x)}}},
		{Kernel: kAvg32, Data: TaskData{Elements: 2, In: [4]Stream{StreamOf(make([]float32, 63))}, Out: [4]Stream{StreamOf(make([]float32, 2))}}},
	}
	for i, b := range bad {
		if _, err := m.Add(&b); err == nil || !strings.Contains(err.Error(), "stream") {
			t.Errorf("bad streams %d: %v", i, err)
		}
	}
	if err := m.Run(held); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(held); err == nil {
		t.Error("second Run accepted")
	}
	must(t, m.Wait(held))
	// Registry misuse.
	reg := NewRegistry()
	if err := reg.Register(0, Kernel{Name: "x", CPU: func(*Ctx, *TaskData) error { return nil }}); err == nil {
		t.Error("registered kernel 0")
	}
	if err := reg.Register(1, Kernel{Name: "x"}); err == nil {
		t.Error("registered kernel without CPU")
	}
	if err := reg.Register(1, Kernel{Name: "x", Kind: Reduce, CPU: func(*Ctx, *TaskData) error { return nil }}); err == nil {
		t.Error("registered reduce kernel without factor")
	}
	// After Close.
	s2, m2 := start(t, Config{Workers: 1}, newRecorder(1), nil)
	must(t, s2.Close())
	if _, err := m2.Add(rec(0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if _, err := s2.Add(rec(0)); !errors.Is(err, ErrClosed) {
		t.Errorf("foreign Add after Close: %v", err)
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

func TestWaitEventExternal(t *testing.T) {
	r := newRecorder(1)
	s, m := start(t, Config{Workers: 1}, r, nil)
	ev := s.NewEvent()
	go func() {
		time.Sleep(5 * time.Millisecond)
		ev.Signal()
	}()
	id, err := m.Add(rec(0))
	must(t, err)
	m.WaitEvent(ev)
	must(t, m.Wait(id))
	if !ev.IsSet() {
		t.Fatal("event not set")
	}
}

func TestCloseWithPendingWork(t *testing.T) {
	before := runtime.NumGoroutine()
	const n = 3000
	r := newRecorder(n + 2)
	reg := testRegistry(t, r, nil)
	s, err := New(Config{Kernels: reg, Workers: 3, MainThreads: 2})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	var ids []TaskID
	var prev TaskID
	for i := 0; i < n; i++ {
		tk := rec(i)
		if i%3 == 0 {
			tk.Dependency = prev
		}
		id, err := m.Add(tk)
		must(t, err)
		prev = id
		ids = append(ids, id)
	}
	// A task pinned to a registered thread that never runs it.
	pinned := rec(n)
	pinned.Affinity = OnThread(1)
	pid, err := m.Add(pinned)
	must(t, err)
	must(t, s.Close())
	for i, id := range ids {
		if !s.IsFinished(id) {
			t.Fatalf("task %d not finished after Close", i)
		}
		if r.runs[i].Load() != 1 {
			t.Fatalf("task %d ran %d times", i, r.runs[i].Load())
		}
	}
	if err := s.Err(pid); !errors.Is(err, ErrClosed) {
		t.Fatalf("pinned task: %v, want ErrClosed", err)
	}
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left, want %d:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
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

const kEmptyTest KernelID = 60

// TestStress runs large random task graphs (nested parents, children added
// from running kernels, dependencies, joins, priorities, registered-thread
// affinity, streaming splits, failing kernels) and checks that every task ran
// exactly once or, if an ancestor of its dependency chain failed, never; that
// no task started before its dependency ended; that no parent completed
// before its children; and that each task's error is what propagation
// predicts. VKJOBS_SOAK=3m (make soak) runs rounds for that long.
func TestStress(t *testing.T) {
	soak, _ := time.ParseDuration(os.Getenv("VKJOBS_SOAK"))
	rounds, n := 8, 2000
	if testing.Short() {
		rounds = 2
	}
	start := time.Now()
	var tasks int64
	for round := 0; ; round++ {
		if soak == 0 && round >= rounds || soak > 0 && time.Since(start) > soak {
			break
		}
		if soak > 0 {
			n = 20000
		}
		tasks += int64(stressRound(t, uint64(round), n))
		if t.Failed() {
			return
		}
	}
	if soak > 0 {
		t.Logf("soak: %d tasks in %v (%.0f tasks/s), goroutines now %d", tasks, time.Since(start).Round(time.Second),
			float64(tasks)/time.Since(start).Seconds(), runtime.NumGoroutine())
	}
}

type stressNode struct {
	parent, dep    int // -1 for none
	fails          bool
	held           bool // a parent: created held, run after its static children
	spawn          int  // children it adds while running (indices spawnBase...)
	spawnBase      int
	start, end     atomic.Int64
	runs           atomic.Int32
	id             TaskID
	witness        int // node that depends on this parent (checks completion order), -1
	isWitnessFor   int
	dynamicChildOf int
}

func stressRound(t *testing.T, seed uint64, n int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	var clock atomic.Int64
	// Static nodes 0..n-1, then dynamic children.
	nodes := make([]*stressNode, n)
	for i := range nodes {
		nodes[i] = &stressNode{parent: -1, dep: -1, witness: -1, isWitnessFor: -1, dynamicChildOf: -1}
	}
	var heldIdx []int
	// out[x] lists the nodes that cannot complete before x completes
	// (x's dependents, x's parent). A dependency d for node i with
	// parent p closes a cycle, a deadlock by construction, if p already
	// reaches d: such dependencies are not generated.
	out := make([][]int, n)
	for i := 0; i < n; i++ {
		nd := nodes[i]
		if i > 0 && rng.IntN(3) == 0 && len(heldIdx) > 0 {
			nd.parent = heldIdx[rng.IntN(len(heldIdx))]
		}
		if i > 0 && rng.IntN(3) == 0 {
			d := rng.IntN(i)
			if nd.parent < 0 || !reaches(out, nd.parent, d) {
				nd.dep = d
			}
		}
		if nd.dep >= 0 {
			out[nd.dep] = append(out[nd.dep], i)
		}
		if nd.parent >= 0 {
			out[i] = append(out[i], nd.parent)
		}
		nd.fails = rng.IntN(200) == 0
		if rng.IntN(10) == 0 {
			nd.held = true
			heldIdx = append(heldIdx, i)
		}
		if rng.IntN(20) == 0 {
			nd.spawn = 1 + rng.IntN(4)
		}
	}
	// Dynamic children and witnesses get indices after the static nodes.
	for i := 0; i < n; i++ {
		if nodes[i].spawn > 0 {
			nodes[i].spawnBase = len(nodes)
			for k := 0; k < nodes[i].spawn; k++ {
				nodes = append(nodes, &stressNode{parent: i, dep: -1, witness: -1, isWitnessFor: -1, dynamicChildOf: i})
			}
		}
	}
	for _, p := range heldIdx {
		w := len(nodes)
		nodes = append(nodes, &stressNode{parent: -1, dep: p, witness: -1, isWitnessFor: p, dynamicChildOf: -1})
		nodes[p].witness = w
	}
	reg := NewRegistry()
	const kS KernelID = 1
	must(t, reg.Register(kS, Kernel{Name: "stress", CPU: func(c *Ctx, d *TaskData) error {
		nd := nodes[d.Params[0]]
		nd.start.Store(clock.Add(1))
		nd.runs.Add(1)
		for i := 0; i < int(d.Params[1]); i++ {
			runtime.Gosched()
		}
		for k := 0; k < nd.spawn; k++ {
			var ch Task
			ch.Kernel = kS
			ch.Parent = c.Current()
			ch.Data.Params[0] = uint32(nd.spawnBase + k)
			if _, err := c.Add(&ch); err != nil {
				return err
			}
		}
		nd.end.Store(clock.Add(1))
		if nd.fails {
			return errors.New("injected failure")
		}
		return nil
	}}))
	s, err := New(Config{Kernels: reg, Workers: 1 + int(seed%4), MainThreads: 2, PoolSize: 2 * n})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	other, err := s.RegisterThread("render")
	must(t, err)
	done := s.NewEvent()
	var wg sync.WaitGroup
	wg.Go(func() { other.WaitEvent(done) })
	add := func(i int) {
		nd := nodes[i]
		var tk Task
		tk.Kernel = kS
		tk.Data.Params[0] = uint32(i)
		tk.Data.Params[1] = uint32(rng.IntN(3))
		tk.Priority = Priority(rng.IntN(3) - 1)
		switch rng.IntN(8) {
		case 0:
			tk.Affinity = OnThread(0)
		case 1:
			tk.Affinity = OnThread(1)
		}
		if nd.parent >= 0 {
			tk.Parent = nodes[nd.parent].id
		}
		if nd.dep >= 0 {
			tk.Dependency = nodes[nd.dep].id
		}
		var id TaskID
		var err error
		if nd.held {
			id, err = m.Create(&tk)
		} else {
			id, err = m.Add(&tk)
		}
		must(t, err)
		nd.id = id
	}
	staticN := n
	for i := 0; i < staticN; i++ {
		add(i)
	}
	for i := staticN; i < len(nodes); i++ {
		if nodes[i].isWitnessFor >= 0 {
			add(i)
		}
	}
	// Start the held parents (children first: reverse order of creation).
	for k := len(heldIdx) - 1; k >= 0; k-- {
		must(t, m.Run(nodes[heldIdx[k]].id))
	}
	for i := range nodes {
		if nodes[i].dynamicChildOf < 0 {
			m.Wait(nodes[i].id)
		}
	}
	done.Signal()
	wg.Wait()
	// Expected failures: own failure, failed dependency, failed child.
	var fail func(i int) bool
	memo := make([]int8, len(nodes))
	fail = func(i int) bool {
		if memo[i] != 0 {
			return memo[i] > 0
		}
		memo[i] = -1
		nd := nodes[i]
		f := nd.dep >= 0 && fail(nd.dep)
		if !f && nd.fails {
			f = true
		}
		if !f {
			for j := range nodes {
				if nodes[j].parent == i && fail(j) {
					f = true
					break
				}
			}
		}
		if f {
			memo[i] = 1
		}
		return f
	}
	for i, nd := range nodes {
		depFailed := nd.dep >= 0 && fail(nd.dep)
		parentGone := nd.dynamicChildOf >= 0 && nodes[nd.dynamicChildOf].runs.Load() == 0
		want := int32(1)
		if depFailed || parentGone {
			want = 0
		}
		if r := nd.runs.Load(); r != want {
			t.Fatalf("seed %d: node %d ran %d times, want %d", seed, i, r, want)
		}
		if want == 0 {
			continue
		}
		if nd.dep >= 0 && nd.start.Load() < nodes[nd.dep].end.Load() {
			t.Fatalf("seed %d: node %d started before its dependency %d ended", seed, i, nd.dep)
		}
		if p := nd.isWitnessFor; p >= 0 {
			for j := range nodes {
				if nodes[j].parent == p && nodes[j].runs.Load() > 0 && nodes[j].end.Load() > nd.start.Load() {
					t.Fatalf("seed %d: parent %d completed before its child %d ended", seed, p, j)
				}
			}
		}
		if nd.dynamicChildOf < 0 {
			got := s.Err(nd.id) != nil
			if got != fail(i) {
				t.Fatalf("seed %d: node %d error %v, want failure=%v", seed, i, s.Err(nd.id), fail(i))
			}
		}
	}
	must(t, s.Close())
	return len(nodes)
}

func reaches(out [][]int, from, to int) bool {
	seen := map[int]bool{from: true}
	stack := []int{from}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == to {
			return true
		}
		for _, y := range out[x] {
			if !seen[y] {
				seen[y] = true
				stack = append(stack, y)
			}
		}
	}
	return false
}

func TestHungKernelTimeoutAndAbandon(t *testing.T) {
	block := make(chan struct{})
	started := make(chan int, 1)
	r := newRecorder(4)
	reg := testRegistry(t, r, block)
	const kHang KernelID = 70
	must(t, reg.Register(kHang, Kernel{Name: "hang", CPU: func(c *Ctx, d *TaskData) error {
		started <- c.Index()
		<-block
		return nil
	}}))
	s, m := start(t, Config{Workers: 2, Kernels: reg}, r, block)
	parent, err := m.Create(&Task{})
	must(t, err)
	// The hung kernel must run on a worker, not on the waiting main thread:
	// add it from a foreign goroutine and wait until a worker started it.
	hung, err := s.Add(&Task{Kernel: kHang, Parent: parent})
	must(t, err)
	if w := <-started; w >= s.Workers() {
		t.Fatalf("hung kernel started on thread %d, not a worker", w)
	}
	dep := rec(0)
	dep.Dependency = hung
	depID, err := m.Add(dep)
	must(t, err)
	must(t, m.Run(parent))
	if err := m.WaitFor(hung, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitFor a hung kernel: %v, want ErrTimeout", err)
	}
	must(t, s.Abandon(hung, errors.New("watchdog")))
	if err := s.Abandon(hung, nil); err == nil {
		t.Fatal("second Abandon accepted")
	}
	if err := m.Wait(hung); !errors.Is(err, ErrAbandoned) || !strings.Contains(err.Error(), "watchdog") {
		t.Fatalf("Wait on abandoned task: %v", err)
	}
	if err := m.Wait(depID); !errors.Is(err, ErrDepFailed) {
		t.Fatalf("dependent of abandoned task: %v", err)
	}
	if err := m.Wait(parent); !errors.Is(err, ErrChildFailed) {
		t.Fatalf("parent of abandoned task: %v", err)
	}
	// A dependent added after the abandon fails at once.
	late := rec(1)
	late.Dependency = hung
	lateID, err := m.Add(late)
	must(t, err)
	if err := m.Wait(lateID); !errors.Is(err, ErrDepFailed) {
		t.Fatalf("late dependent: %v", err)
	}
	if r.runs[0].Load() != 0 || r.runs[1].Load() != 0 {
		t.Fatal("a dependent of an abandoned task ran")
	}
	// The other worker keeps the scheduler usable while one is stuck.
	ok, err := m.Add(rec(2))
	must(t, err)
	must(t, m.Wait(ok))
	// A queued task abandoned before it runs never runs.
	q := rec(3)
	q.Affinity = OnThread(0)
	qid, err := m.Add(q)
	must(t, err)
	must(t, s.Abandon(qid, nil))
	m.RunPinned()
	if r.runs[3].Load() != 0 {
		t.Fatal("abandoned queued task ran")
	}
	close(block) // the hung kernel returns; its slot is then reused
	must(t, s.Close())
}

// TestAbandonWithSiblingsDone: a thread runs a child of P to completion,
// then hangs in another child of P. Abandoning the hung child fails P at
// once: completions the stuck thread has not yet reported to P (its
// deferred parent decrements) must not keep P open.
func TestAbandonWithSiblingsDone(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	hungID := make(chan TaskID, 1)
	r := newRecorder(4)
	reg := testRegistry(t, r, block)
	const kHang, kFirst KernelID = 71, 72
	must(t, reg.Register(kHang, Kernel{Name: "hang", CPU: func(c *Ctx, d *TaskData) error {
		<-block
		return nil
	}}))
	var parent TaskID
	must(t, reg.Register(kFirst, Kernel{Name: "first", CPU: func(c *Ctx, d *TaskData) error {
		// The sibling that hangs runs next on this very thread.
		id, err := c.Add(&Task{Kernel: kHang, Parent: parent, Affinity: OnThread(1)})
		hungID <- id
		return err
	}}))
	s, m := start(t, Config{Workers: 1, MainThreads: 2, Kernels: reg}, r, block)
	runner, err := s.RegisterThread("runner")
	must(t, err)
	parent, err = m.Create(&Task{})
	must(t, err)
	first, err := m.Add(&Task{Kernel: kFirst, Parent: parent, Affinity: OnThread(1)}) // the runner
	must(t, err)
	must(t, m.Run(parent))
	go runner.RunPinned() // runs first, then hangs in its sibling
	hung := <-hungID
	if err := m.Wait(first); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(hung, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitFor the hung child: %v, want ErrTimeout", err)
	}
	must(t, s.Abandon(hung, errors.New("watchdog")))
	if err := m.WaitFor(parent, 2*time.Second); !errors.Is(err, ErrChildFailed) {
		t.Fatalf("parent after its last open child was abandoned: %v, want ErrChildFailed at once", err)
	}
}

// TestRunPinnedRunsReadiedDependents: P's children and a dependent of P
// are all pinned to this thread; one RunPinned runs the children, which
// complete P, and then the dependent (a deferred parent decrement must not
// leave it for the next call).
func TestRunPinnedRunsReadiedDependents(t *testing.T) {
	r := newRecorder(16)
	s, m := start(t, Config{Workers: 1}, r, nil)
	p, err := m.Create(&Task{})
	must(t, err)
	for i := range 3 {
		tk := rec(i)
		tk.Parent = p
		tk.Affinity = OnThread(0)
		_, err := m.Add(tk)
		must(t, err)
	}
	d := rec(5)
	d.Dependency = p
	d.Affinity = OnThread(0)
	did, err := m.Add(d)
	must(t, err)
	must(t, m.Run(p))
	// Let the worker run P's own (empty) work: only the pinned children keep it open.
	for atomic.LoadInt32(&s.slots[p.index()].open) != 3 {
		time.Sleep(time.Millisecond)
	}
	if n := m.RunPinned(); n != 4 || !s.IsFinished(did) {
		t.Errorf("RunPinned ran %d tasks, want 4 (3 children, then the dependent P's completion readied); dependent finished: %v", n, s.IsFinished(did))
	}
}

// TestAbandonParentOfReusedSlot: the abandoned kernel returns while
// Abandon is still failing its many dependents, so its slot is freed and
// reused at once by a child of another task Q. Abandon must fail its own
// task's parent, not Q.
func TestAbandonParentOfReusedSlot(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	reg := testRegistry(t, nil, nil)
	const kHang2, kAddChild KernelID = 81, 82
	var q TaskID
	must(t, reg.Register(kHang2, Kernel{Name: "hang2", CPU: func(c *Ctx, d *TaskData) error {
		close(started)
		<-release
		return nil
	}}))
	must(t, reg.Register(kAddChild, Kernel{Name: "addchild", CPU: func(c *Ctx, d *TaskData) error {
		_, err := c.Add(&Task{Parent: q})
		return err
	}}))
	s, m := start(t, Config{Workers: 1, PoolSize: 1 << 17, Kernels: reg}, nil, nil)
	var err error
	q, err = m.Create(&Task{})
	must(t, err)
	p, err := m.Create(&Task{})
	must(t, err)
	x, err := m.Add(&Task{Kernel: kHang2, Parent: p})
	must(t, err)
	must(t, m.Run(p))
	<-started
	const nd = 60000
	var last TaskID
	for range nd {
		last, err = m.Add(&Task{Dependency: x})
		must(t, err)
	}
	_, err = m.Add(&Task{Kernel: kAddChild}) // the worker takes it once x returns
	must(t, err)
	done := make(chan struct{})
	go func() { s.Abandon(x, errors.New("watchdog")); close(done) }()
	s.Wait(last) // Abandon has begun failing the dependents
	close(release)
	<-done
	if err := m.WaitFor(p, 5*time.Second); !errors.Is(err, ErrChildFailed) {
		t.Errorf("parent of the abandoned task: %v, want ErrChildFailed", err)
	}
	if err := s.slots[q.index()].err.Load(); err != nil {
		t.Errorf("Q, whose child never failed, got the error %v", err)
	}
	must(t, m.Run(q))
	must(t, m.Wait(q))
}

// TestLostWakeUpRecovered: a task reaches a deque without the wake-up a
// push normally sends (what the unfenced push can cause on x86, forced
// here), while the only worker sleeps and the registered thread that
// queued it never helps. The worker's periodic recheck runs it anyway.
//
// The rechecks cover the moments after the worker went to sleep (up to
// recheckLast), where such a push can happen; later pushes see it idle and
// wake it. So the forced push must come soon after the worker sleeps: one
// spin round (SpinRounds 1) and a poll without sleeps get it there; if a
// loaded machine still delayed this goroutine past the window, the test
// wakes the worker and skips rather than fail on the machine's timing.
func TestLostWakeUpRecovered(t *testing.T) {
	r := newRecorder(4)
	s, m := start(t, Config{Workers: 1, SpinRounds: 1}, r, nil)
	for deadline := time.Now().Add(time.Minute); s.nIdle.Load() < 1; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the worker never went to sleep")
		}
	}
	seen := time.Now()
	id, err := m.Create(rec(0))
	must(t, err)
	sl := &s.slots[id.index()]
	if !sl.held.CompareAndSwap(true, false) {
		t.Fatal("task not held")
	}
	if !m.dq[1].push(id.index()) { // queued without pushCPU's wake-up
		t.Fatal("push failed")
	}
	gap := time.Since(seen)
	done := make(chan error, 1)
	go func() { done <- s.Wait(id) }() // a foreign goroutine: does not help
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		if gap > recheckLast/2 {
			s.wakeAll()
			<-done
			t.Skipf("the push came %v after the worker was seen asleep, past the rechecks' window (%v): the machine delayed this goroutine", gap, recheckLast)
		}
		t.Fatalf("a task queued without a wake-up %v after the worker slept was not run within 10 s by the sleeping worker", gap)
	}
	if r.runs[0].Load() != 1 {
		t.Fatalf("ran %d times", r.runs[0].Load())
	}
}
