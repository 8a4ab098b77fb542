package sched_test

// Tests written the way a user of the package builds things, through the
// public API only: the README's taste code with awkward element counts and
// grains, bad streams, panicking kernels, odd IDs, Close while waiting,
// double registration and invalid affinities. Every bad input must give an
// error (never a panic, a hang or a silent wrong answer); every wait runs
// under a watchdog so a hang fails the test instead of the whole run.

import (
	"fmt"
	"runtime"
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
