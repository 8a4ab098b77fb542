package sched

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// spinWork burns a little CPU per element, so a thief has time to steal.
func spinWork(n uint32) uint32 {
	x := n
	for i := 0; i < 20; i++ {
		x = x*1664525 + 1013904223
	}
	return x
}

// within runs f and fails the test if it has not returned after d: a hang
// becomes a failure with every goroutine's stack, not a stuck test binary.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		// Exit at once: a deferred Close would block on the same hang.
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "--- FAIL: %s: %s: still blocked after %v\n%s", t.Name(), what, d, buf[:runtime.Stack(buf, true)])
		os.Exit(1)
	}
}

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

// workerBusy reports whether some worker is running a kernel.
func workerBusy(s *Scheduler) bool {
	return s.live() > 0 && s.nIdle.Load() == 0
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

const kEmptyTest KernelID = 60

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
