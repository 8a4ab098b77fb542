package sched_test

import (
	"errors"
	"fmt"

	"github.com/vkjobs/vkjobs/sched"
)

const kScale sched.KernelID = 1

// A streaming kernel over a range: the scheduler splits the task over every
// thread and the kernel sees only its own [Begin, End).
func Example() {
	reg := sched.NewRegistry()
	reg.Register(kScale, sched.Kernel{
		Name: "scale", Kind: sched.Streaming, Grain: 256,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			x, y := sched.View[float32](d.In[0]), sched.View[float32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				y[i] = 2 * x[i]
			}
			return nil
		},
	})
	s, err := sched.New(sched.Config{Kernels: reg})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	main, _ := s.RegisterThread("main")

	x := make([]float32, 10000)
	y := make([]float32, len(x))
	for i := range x {
		x[i] = float32(i)
	}
	t := sched.Task{Kernel: kScale}
	t.Data.Elements = uint32(len(x))
	t.Data.In[0], t.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
	id, err := main.Add(&t)
	if err != nil {
		panic(err)
	}
	if err := main.Wait(id); err != nil { // Wait runs tasks while it waits
		panic(err)
	}
	fmt.Println(y[0], y[1], y[9999])
	// Output: 0 2 19998
}

// Parents, joins and dependencies: the three "load" tasks are children of
// an empty join task; "combine" depends on the join, so it runs after all
// three finished.
func Example_join() {
	reg := sched.NewRegistry()
	results := make([]int, 4)
	const kLoad, kCombine sched.KernelID = 1, 2
	reg.Register(kLoad, sched.Kernel{Name: "load", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		results[d.Params[0]] = int(d.Params[0]) * 10
		return nil
	}})
	reg.Register(kCombine, sched.Kernel{Name: "combine", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		results[3] = results[0] + results[1] + results[2]
		return nil
	}})
	s, _ := sched.New(sched.Config{Kernels: reg})
	defer s.Close()
	main, _ := s.RegisterThread("main")

	join, _ := main.Create(&sched.Task{}) // held until Run: children can't race its completion
	for i := 0; i < 3; i++ {
		t := sched.Task{Kernel: kLoad, Parent: join}
		t.Data.Params[0] = uint32(i)
		main.Add(&t)
	}
	combine, _ := main.Add(&sched.Task{Kernel: kCombine, Dependency: join})
	main.Run(join)
	main.Wait(combine)
	fmt.Println(results[3])
	// Output: 30
}

// A failing kernel fails its dependents (they never run) and its parent.
func Example_errors() {
	reg := sched.NewRegistry()
	const kFail, kNext sched.KernelID = 1, 2
	reg.Register(kFail, sched.Kernel{Name: "fail", CPU: func(*sched.Ctx, *sched.TaskData) error {
		return fmt.Errorf("disk on fire")
	}})
	reg.Register(kNext, sched.Kernel{Name: "next", CPU: func(*sched.Ctx, *sched.TaskData) error {
		fmt.Println("never printed")
		return nil
	}})
	s, _ := sched.New(sched.Config{Kernels: reg})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	bad, _ := main.Add(&sched.Task{Kernel: kFail})
	next, _ := main.Add(&sched.Task{Kernel: kNext, Dependency: bad})
	fmt.Println(main.Wait(next) != nil)
	var te *sched.TaskError
	fmt.Println(errors.As(main.Wait(bad), &te), te.Name)
	// Output:
	// true
	// true fail
}

// Recursive parallelism with Ctx.Join: a sum over a slice split in halves
// down to 1,024 elements. Each Join runs its second half here at once and
// offers the first to the other threads; a split nobody takes costs a
// push and a pop of this thread's deque. Each call finds its range and
// its result cell in Params (node i of the split tree has children 2i+1
// and 2i+2), so halves on different threads share nothing and no call
// allocates.
func ExampleCtx_Join() {
	type sum struct {
		x     []float32
		nodes []float64 // each node's partial sum
	}
	const kSum sched.KernelID = 1
	reg := sched.NewRegistry()
	reg.Register(kSum, sched.Kernel{Name: "sum", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		w := d.Data.(*sum)
		node, lo, hi := d.Params[0], d.Params[1], d.Params[2]
		if hi-lo <= 1024 {
			t := 0.0
			for _, v := range w.x[lo:hi] {
				t += float64(v)
			}
			w.nodes[node] = t
			return nil
		}
		mid := lo + (hi-lo)/2
		if err := c.Join(
			&sched.Call{Kernel: kSum, Params: sched.Params{2*node + 1, lo, mid}, Data: d.Data},
			&sched.Call{Kernel: kSum, Params: sched.Params{2*node + 2, mid, hi}, Data: d.Data},
		); err != nil {
			return err
		}
		w.nodes[node] = w.nodes[2*node+1] + w.nodes[2*node+2]
		return nil
	}})
	s, _ := sched.New(sched.Config{Kernels: reg})
	defer s.Close()
	main, _ := s.RegisterThread("main")

	w := &sum{x: make([]float32, 1<<16), nodes: make([]float64, 2*(1<<16)/1024)}
	for i := range w.x {
		w.x[i] = 1
	}
	t := sched.Task{Kernel: kSum}
	t.Data.Params = sched.Params{0, 0, uint32(len(w.x))}
	t.Data.Data = w
	if err := main.RunInPlace(&t); err != nil { // the root, on this thread
		panic(err)
	}
	fmt.Println(w.nodes[0])
	// Output: 65536
}
