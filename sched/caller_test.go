package sched

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// atDepth calls f under n more frames.
func atDepth(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	atDepth(n-1, f)
	runtime.KeepAlive(n)
}

// callerByGoid is callerCtx by goroutine ID alone (its fallback), for the
// comparison in BenchmarkCallerCtx.
func (s *Scheduler) callerByGoid() *Ctx {
	g := goid()
	for _, t := range s.threads {
		if t.goid.Load() == g {
			return t
		}
	}
	return nil
}

// callerSched runs f in a kernel on the one worker of a new scheduler,
// with the scheduler and the worker's Ctx.
func callerSched(t testing.TB, f func(s *Scheduler, c *Ctx)) {
	const kRun KernelID = 86
	reg := NewRegistry()
	var s *Scheduler
	must(t, reg.Register(kRun, Kernel{Name: "run", CPU: func(c *Ctx, _ *TaskData) error {
		f(s, c)
		return nil
	}}))
	var err error
	s, err = New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	id, err := s.Add(&Task{Kernel: kRun})
	must(t, err)
	must(t, s.Wait(id))
}

// callerCtx finds the thread a goroutine is: a worker from its kernel, a
// registered thread from the goroutine that registered it, nothing from
// other goroutines, including those that may reuse the g of a registering
// goroutine that exited.
func TestCallerCtx(t *testing.T) {
	callerSched(t, func(s *Scheduler, c *Ctx) {
		if got := s.callerCtx(); got != c {
			t.Errorf("callerCtx in a kernel: %p, want the worker %p", got, c)
		}
		done := make(chan *Ctx)
		go func() { done <- s.callerCtx() }()
		if got := <-done; got != nil {
			t.Errorf("callerCtx from a goroutine the kernel started: thread %d, want none", got.index)
		}
	})
	s, err := New(Config{Workers: 1, MainThreads: 1})
	must(t, err)
	defer s.Close()
	if got := s.callerCtx(); got != nil {
		t.Errorf("callerCtx from the test goroutine: thread %d, want none", got.index)
	}
	reg := make(chan *Ctx)
	go func() {
		m, err := s.RegisterThread("main")
		if err != nil {
			t.Error(err)
		}
		if got := s.callerCtx(); got != m {
			t.Errorf("callerCtx from the registering goroutine: %p, want %p", got, m)
		}
		reg <- m
	}()
	<-reg
	// The registering goroutine has exited: goroutines started now may
	// get its g, and must not pass for the registered thread.
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if got := s.callerCtx(); got != nil {
				t.Errorf("callerCtx from a new goroutine: thread %d (%q), want none", got.index, got.name)
			}
		})
		wg.Wait()
	}
}

// Scheduler.Wait, Add's back-pressure and Close look up the calling
// goroutine (callerCtx). From a worker's kernel that took a stack trace
// (goroutine ID), whose cost grows with the stack's depth: about 8 µs
// near its bottom, 115 µs under 100 frames. It must cost little at any
// depth (amd64, where the goroutine's g is read directly).
func TestCallerCtxCost(t *testing.T) {
	if getg() == 0 {
		t.Skip("no getg on " + runtime.GOARCH + ": callerCtx goes by goroutine ID")
	}
	callerSched(t, func(s *Scheduler, c *Ctx) {
		atDepth(100, func() {
			// The best of 20 rounds: a round the OS preempts is slow.
			const rounds, n = 20, 100
			best := time.Hour
			for range rounds {
				start := time.Now()
				for range n {
					if s.callerCtx() != c {
						t.Error("callerCtx did not find the worker")
						return
					}
				}
				best = min(best, time.Since(start)/n)
			}
			if best > 2*time.Microsecond {
				t.Errorf("callerCtx in a kernel under 100 frames: %v per call, want under 2 µs", best)
			}
		})
	})
}

// BenchmarkCallerCtx compares the look-up of the calling thread in a
// worker's kernel by goroutine ID (a stack trace) with callerCtx (the
// goroutine's g), at two stack depths.
func BenchmarkCallerCtx(b *testing.B) {
	for _, depth := range []int{0, 100} {
		for _, way := range []string{"goid", "callerCtx"} {
			b.Run(fmt.Sprintf("%s/depth%d", way, depth), func(b *testing.B) {
				callerSched(b, func(s *Scheduler, c *Ctx) {
					atDepth(depth, func() {
						b.ResetTimer()
						for range b.N {
							var got *Ctx
							if way == "goid" {
								got = s.callerByGoid()
							} else {
								got = s.callerCtx()
							}
							if got != c {
								b.Error("wrong thread")
								return
							}
						}
						b.StopTimer() // not Close
					})
				})
			})
		}
	}
}

// Kernels that spawn and wait recursively through the Scheduler (no Ctx
// at hand: Scheduler.Wait finds the calling thread and helps), on 1, 2
// and 4 workers: every node runs once. Scheduler.Add queues on the shared
// FIFO, so such a tree runs breadth first: a pool smaller than a level of
// it fills up, and the children then run in place (inplace.go); Ctx.Add
// runs it depth first.
func TestAdversarialRecursiveSchedulerCalls(t *testing.T) {
	const kNode KernelID = 100
	var s *Scheduler
	var runs atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kNode, Kernel{Name: "node", CPU: func(_ *Ctx, d *TaskData) error {
		runs.Add(1)
		depth := d.Params[0]
		if depth == 0 {
			return nil
		}
		var ids [3]TaskID
		for i := range ids {
			id, err := s.Add(&Task{Kernel: kNode, Data: TaskData{Params: Params{depth - 1}}})
			if err != nil {
				return err
			}
			ids[i] = id
		}
		for _, id := range ids {
			if err := s.Wait(id); err != nil {
				return err
			}
		}
		return nil
	}}))
	const depth = 7 // 3^0 + ... + 3^7 = 3280 nodes, each waiting on the way down
	want := int64(0)
	for p := int64(1); p <= 2187; p *= 3 {
		want += p
	}
	for _, workers := range []int{1, 2, 4} {
		var err error
		s, err = New(Config{Kernels: reg, Workers: workers, PoolSize: 4096})
		must(t, err)
		runs.Store(0)
		within(t, 60*time.Second, fmt.Sprintf("recursive tree on %d workers", workers), func() {
			root, err := s.Add(&Task{Kernel: kNode, Data: TaskData{Params: Params{depth}}})
			must(t, err)
			if err := s.Wait(root); err != nil {
				t.Errorf("%d workers: %v", workers, err)
			} else if runs.Load() != want {
				t.Errorf("%d workers: %d nodes ran, want %d", workers, runs.Load(), want)
			}
			must(t, s.Close())
		})
	}
}

// Scheduler.Wait and Scheduler.Add's back-pressure called from a kernel
// on the only worker: they used to block the one thread that could run
// what they waited for. Now they run tasks meanwhile, as Ctx's do.
func TestSchedulerCallsFromKernel(t *testing.T) {
	const kInner, kWaiter, kAdder KernelID = 46, 47, 48
	var s *Scheduler
	var inner atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kInner, Kernel{Name: "inner", CPU: func(*Ctx, *TaskData) error { inner.Add(1); return nil }}))
	must(t, reg.Register(kWaiter, Kernel{Name: "waiter", CPU: func(*Ctx, *TaskData) error {
		id, err := s.Add(&Task{Kernel: kInner})
		if err != nil {
			return err
		}
		return s.Wait(id) // no Ctx used: the scheduler finds the thread
	}}))
	must(t, reg.Register(kAdder, Kernel{Name: "adder", CPU: func(*Ctx, *TaskData) error {
		for range 100 { // far more than the pool holds
			if _, err := s.Add(&Task{Kernel: kInner}); err != nil {
				return err
			}
		}
		return nil
	}}))
	var err error
	s, err = New(Config{Kernels: reg, Workers: 1, PoolSize: 16})
	must(t, err)
	defer s.Close()
	for _, k := range []KernelID{kWaiter, kAdder} {
		inner.Store(0)
		within(t, 20*time.Second, s.reg.Lookup(k).Name, func() {
			id, err := s.Add(&Task{Kernel: k})
			must(t, err)
			must(t, s.Wait(id))
		})
	}
	within(t, 20*time.Second, "Close", func() { must(t, s.Close()) })
}
