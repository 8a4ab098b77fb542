package spu_test

import (
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

func saxpyTask(n int) (sched.Task, []float32) {
	x, y, out := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), 1
	}
	t := sched.Task{Kernel: kernels.Saxpy}
	t.Data.Elements = uint32(n)
	t.Data.Params[0] = math.Float32bits(2)
	t.Data.In[0], t.Data.In[1], t.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y), sched.StreamOf(out)
	return t, out
}

// Running saxpy through a local store: chunks are copied in, computed and
// copied out, double-buffered.
func ExampleNew() {
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		panic(err)
	}
	x, err := spu.New(spu.Options{}) // one unit, 256 KiB
	if err != nil {
		panic(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg})
	if err != nil {
		panic(err)
	}
	if err := s.AttachExecutor(sched.ExecSPU, x); err != nil {
		panic(err)
	}
	main, err := s.RegisterThread("main")
	if err != nil {
		panic(err)
	}
	task, out := saxpyTask(100_000)
	task.Affinity = sched.SPU
	id, err := main.Add(&task)
	if err != nil {
		panic(err)
	}
	if err := main.Wait(id); err != nil {
		panic(err)
	}
	if err := s.Close(); err != nil { // closes the SPU executor too
		panic(err)
	}
	st := x.Stats()
	fmt.Println(out[:3], out[len(out)-1])
	fmt.Println("chunks:", st.Chunks, "bytes in:", st.BytesIn, "bytes out:", st.BytesOut)
	// Output:
	// [1 3 5] 199999
	// chunks: 10 bytes in: 800000 bytes out: 400000
}
