package sched

import (
	"context"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"
)

const kEmpty KernelID = 10
const kFib KernelID = 11
const kCompute KernelID = 12

func benchSched(b *testing.B) (*Scheduler, *Ctx) {
	reg := NewRegistry()
	must(b, reg.Register(kEmpty, Kernel{Name: "empty", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(b, reg.Register(kFib, Kernel{Name: "fib", CPU: fibKernel}))
	must(b, reg.Register(kCompute, Kernel{Name: "compute", Kind: Streaming, Grain: 4096,
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
			t.Data.Grain = uint32(n / 16)
			t.Data.In[0] = StreamOf(x)
			t.Data.Out[0] = StreamOf(y)
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

func fibKernel(c *Ctx, d *TaskData) error {
	n := d.Params[0]
	if n < 2 {
		d.Params[1] = n
		return nil
	}
	if n < 12 { // serial cut-off, as any real task system would use
		d.Params[1] = fibSerial(n)
		return nil
	}
	var a, b Task
	a.Kernel, b.Kernel = kFib, kFib
	a.Data.Params[0], b.Data.Params[0] = n-1, n-2
	ra, rb := new(uint32), new(uint32)
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
		for range b.N {
			var t Task
			t.Kernel = kFib
			t.Data.Params[0] = n
			id, _ := m.Add(&t)
			if err := m.Wait(id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			fibGo(n)
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
