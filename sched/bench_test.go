package sched

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"
)

const kEmpty KernelID = 10
const kFib KernelID = 11
const kCompute KernelID = 12

func benchSched(b *testing.B) (*Scheduler, *Ctx) {
	return newBenchSched(b, kEmpty, kFib, kCompute, fibKernel)
}

// newBenchSched makes a scheduler with the default thread count and the
// registered main thread, and three kernels under the IDs given: an empty
// one, fib (the benchmark's own version) and a streaming compute kernel
// (computeRange over x into y, grain 4096). It is closed when b ends.
func newBenchSched(b *testing.B, empty, fibID, compute KernelID, fib KernelFunc) (*Scheduler, *Ctx) {
	reg := NewRegistry()
	must(b, reg.Register(empty, Kernel{Name: "empty", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(b, reg.Register(fibID, Kernel{Name: "fib", CPU: fib}))
	must(b, reg.Register(compute, Kernel{Name: "compute", Kind: Streaming, Grain: 4096,
		In: []StreamSpec{{Name: "x", Stride: 4}}, Out: []StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *Ctx, d *TaskData) error {
			computeRange(View[float32](d.In[0]), View[float32](d.Out[0]), int(d.Begin), int(d.End))
			return nil
		}}))
	s, err := New(Config{Kernels: reg})
	must(b, err)
	m, err := s.RegisterThread("main")
	must(b, err)
	b.Cleanup(func() { s.Close() })
	return s, m
}

// BenchmarkEmptyTask: many empty tasks added and waited for, one task per op.
func BenchmarkEmptyTask(b *testing.B) {
	const batch = 1024
	b.Run("sched", func(b *testing.B) {
		_, m := benchSched(b)
		b.ReportAllocs()
		b.ResetTimer()
		task := Task{Kernel: kEmpty}
		for i := 0; i < b.N; {
			root, _ := m.Create(&Task{})
			task.Parent = root
			for j := 0; j < batch && i < b.N; j++ {
				if _, err := m.Add(&task); err != nil {
					b.Fatal(err)
				}
				i++
			}
			m.Run(root)
			m.Wait(root)
		}
	})
	b.Run("waitgroup", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; {
			var wg sync.WaitGroup
			for j := 0; j < batch && i < b.N; j++ {
				wg.Go(func() {})
				i++
			}
			wg.Wait()
		}
	})
	b.Run("errgroup", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; {
			g, _ := errgroup.WithContext(context.Background())
			for j := 0; j < batch && i < b.N; j++ {
				g.Go(func() error { return nil })
				i++
			}
			g.Wait()
		}
	})
	b.Run("chanpool", func(b *testing.B) {
		b.ReportAllocs()
		ch := make(chan func(), batch)
		var wg sync.WaitGroup
		var done sync.WaitGroup
		for w := 0; w < 2; w++ {
			done.Add(1)
			go func() {
				defer done.Done()
				for f := range ch {
					f()
					wg.Done()
				}
			}()
		}
		f := func() {}
		for i := 0; i < b.N; {
			for j := 0; j < batch && i < b.N; j++ {
				wg.Add(1)
				ch <- f
				i++
			}
			wg.Wait()
		}
		close(ch)
		done.Wait()
	})
}

// computeRange is not inlined, so that every variant runs the same machine
// code: inlined into each caller, the copies' placement alone made them
// differ by up to 3x (serial 10.5 ms against hand-split goroutines 3.5 ms
// per 1M on two threads, in one binary).
//
//go:noinline
func computeRange(x, y []float32, begin, end int) {
	for i := begin; i < end; i++ {
		v := x[i]
		for k := 0; k < 16; k++ {
			v = v*0.999 + 0.5
		}
		y[i] = v
	}
}

// BenchmarkParallelFor: a compute-bound kernel over a range.
func BenchmarkParallelFor(b *testing.B) {
	for _, n := range []int{1 << 20, 64 << 10} {
		x := make([]float32, n)
		y := make([]float32, n)
		name := "1M"
		if n < 1<<20 {
			name = "64K"
		}
		b.Run(name+"/serial", func(b *testing.B) {
			b.SetBytes(int64(n * 8))
			b.ReportAllocs()
			for range b.N {
				computeRange(x, y, 0, n)
			}
		})
		b.Run(name+"/sched", func(b *testing.B) {
			_, m := benchSched(b)
			b.SetBytes(int64(n * 8))
			b.ReportAllocs()
			t := Task{Kernel: kCompute}
			t.Data.Elements = uint32(n)
			// The kernel's grain (4096 elements): pieces small enough that
			// the last ones balance the threads. With n/16 (64K elements,
			// ~0.5 ms each at 1M) a thread that ran out of pieces while
			// the other still had most of one idled up to a piece, and
			// fell asleep (wake-up 0.1-2 ms on this VM): 1.18x goroutines
			// at 1M, against 0.97-1.01x with the kernel's grain.
			t.Data.In[0] = StreamOf(x)
			t.Data.Out[0] = StreamOf(y)
			b.ResetTimer()
			for range b.N {
				id, err := m.Add(&t)
				if err != nil {
					b.Fatal(err)
				}
				m.Wait(id)
			}
		})
		b.Run(name+"/goroutines", func(b *testing.B) {
			b.SetBytes(int64(n * 8))
			b.ReportAllocs()
			p := 2
			for range b.N {
				var wg sync.WaitGroup
				for w := 0; w < p; w++ {
					lo, hi := n*w/p, n*(w+1)/p
					wg.Go(func() { computeRange(x, y, lo, hi) })
				}
				wg.Wait()
			}
		})
	}
}

// fibArena holds fib results: a kernel's output is a cell taken with an
// atomic counter, so the benchmark itself allocates nothing.
var (
	fibArena [1 << 16]uint32
	fibNext  atomic.Int32
)

func fibCell() *uint32 { return &fibArena[fibNext.Add(1)&(1<<16-1)] }

func fibKernel(c *Ctx, d *TaskData) error {
	n := d.Params[0]
	out := d.Data.(*uint32)
	if n < 12 { // serial cut-off, as any real task system would use
		*out = fibSerial(n)
		return nil
	}
	var a, b Task
	a.Kernel, b.Kernel = kFib, kFib
	a.Data.Params[0], b.Data.Params[0] = n-1, n-2
	ra, rb := fibCell(), fibCell()
	a.Data.Data, b.Data.Data = ra, rb
	ia, err := c.Add(&a)
	if err != nil {
		return err
	}
	ib, err := c.Add(&b)
	if err != nil {
		return err
	}
	if err := c.Wait(ia); err != nil {
		return err
	}
	if err := c.Wait(ib); err != nil {
		return err
	}
	*out = *ra + *rb
	return nil
}

func fibSerial(n uint32) uint32 {
	if n < 2 {
		return n
	}
	return fibSerial(n-1) + fibSerial(n-2)
}

// BenchmarkFib: recursive spawn and wait.
func BenchmarkFib(b *testing.B) {
	const n = 25
	b.Run("sched", func(b *testing.B) {
		_, m := benchSched(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			var t Task
			res := fibCell()
			t.Kernel = kFib
			t.Data.Params[0] = n
			t.Data.Data = res
			id, _ := m.Add(&t)
			if err := m.Wait(id); err != nil {
				b.Fatal(err)
			}
			if *res != 75025 {
				b.Fatalf("fib(25) = %d", *res)
			}
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if r := fibGo(n); r != 75025 {
				b.Fatalf("fib(25) = %d", r)
			}
		}
	})
}

func fibGo(n uint32) uint32 {
	if n < 12 {
		return fibSerial(n)
	}
	var x, y uint32
	var wg sync.WaitGroup
	wg.Go(func() { x = fibGo(n - 1) })
	y = fibGo(n - 2)
	wg.Wait()
	return x + y
}

const kWork KernelID = 13

func smallWork(n uint32) uint32 {
	x := n
	for i := 0; i < 100; i++ {
		x = x*1664525 + 1013904223
	}
	return x
}

// BenchmarkGraph: a level-synchronous DAG of small tasks: each level's
// tasks are children of a join, and the next level's tasks depend on that
// join (64 levels x 64 tasks, ~0.1 µs of work each). ns/op is per task.
func BenchmarkGraph(b *testing.B) {
	const levels, width = 64, 64
	b.Run("sched", func(b *testing.B) {
		s, m := benchSched(b)
		must(b, s.Kernels().Register(kWork, Kernel{Name: "work", CPU: func(c *Ctx, d *TaskData) error {
			d.Params[1] = smallWork(d.Params[0])
			return nil
		}}))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += levels * width {
			prev := NoTask
			for l := 0; l < levels; l++ {
				join, _ := m.Create(&Task{})
				t := Task{Kernel: kWork, Parent: join, Dependency: prev}
				for w := 0; w < width; w++ {
					t.Data.Params[0] = uint32(w)
					if _, err := m.Add(&t); err != nil {
						b.Fatal(err)
					}
				}
				m.Run(join)
				prev = join
			}
			if err := m.Wait(prev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		b.ReportAllocs()
		var sink [width]uint32
		for i := 0; i < b.N; i += levels * width {
			for l := 0; l < levels; l++ {
				var wg sync.WaitGroup
				for w := 0; w < width; w++ {
					wg.Go(func() { sink[w] = smallWork(uint32(w)) })
				}
				wg.Wait()
			}
		}
	})
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		var sink uint32
		for i := 0; i < b.N; i += levels * width {
			for l := 0; l < levels*width; l++ {
				sink += smallWork(uint32(l))
			}
		}
		_ = sink
	})
}
