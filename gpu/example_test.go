package gpu_test

import (
	_ "embed"
	"errors"
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/sched"
)

// saxpy.spv is testdata/saxpy.comp compiled by testdata/gen.sh:
// out[i] = a*x[i] + y[i] with a = Params[0] as float bits.
//
//go:embed testdata/saxpy.spv
var saxpySPIRV []byte

const kSaxpy sched.KernelID = 1

// saxpy is the kernel's CPU twin: the same work for CPU workers.
func saxpy(_ *sched.Ctx, d *sched.TaskData) error {
	a := math.Float32frombits(d.Params[0])
	x, y, z := sched.View[float32](d.In[0]), sched.View[float32](d.In[1]), sched.View[float32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		z[i] = a*x[i] + y[i]
	}
	return nil
}

// Two chained GPU tasks: the first writes a GPU-resident buffer, the
// second reads it in place and writes host memory; no data goes through Go
// memory in between.
func Example() {
	dev, err := gpu.Open(gpu.Options{})
	if errors.Is(err, gpu.ErrNoDevice) {
		fmt.Println("no Vulkan device: run everything on CPU workers:", err)
		return
	}
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	// fmt.Println(dev.Selection()) says which device and why.

	reg := sched.NewRegistry()
	f32 := sched.StreamSpec{Stride: 4}
	err = reg.Register(kSaxpy, sched.Kernel{
		Name: "saxpy", Kind: sched.Streaming,
		In:  []sched.StreamSpec{f32, f32},
		Out: []sched.StreamSpec{f32},
		CPU: saxpy,
		GPU: &gpu.Binding{SPIRV: saxpySPIRV, LocalSize: 256},
	})
	if err != nil {
		panic(err)
	}
	exec, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{})
	if err != nil {
		panic(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg})
	if err != nil {
		panic(err)
	}
	defer s.Close() // closes the executor too
	if err := s.AttachExecutor(sched.ExecGPU, exec); err != nil {
		panic(err)
	}
	main, err := s.RegisterThread("main")
	if err != nil {
		panic(err)
	}

	const n = 1000
	x, y, out := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), 1
	}
	tmp, err := dev.NewBuffer(4 * n) // GPU-resident
	if err != nil {
		panic(err)
	}
	defer tmp.Close()

	first := sched.Task{Kernel: kSaxpy, Affinity: sched.GPU}
	first.Data.Params[0] = math.Float32bits(2)
	first.Data.Elements = n
	first.Data.In[0], first.Data.In[1] = sched.StreamOf(x), sched.StreamOf(y)
	first.Data.Out[0] = tmp.Stream(4, n, 0) // tmp = 2x + 1
	id1, err := main.Add(&first)
	if err != nil {
		panic(err)
	}

	second := first
	second.Dependency = id1
	second.Data.Params[0] = math.Float32bits(10)
	second.Data.In[0] = tmp.Stream(4, n, 0) // out = 10*tmp + 1
	second.Data.Out[0] = sched.StreamOf(out)
	id2, err := main.Add(&second)
	if err != nil {
		panic(err)
	}
	if err := main.Wait(id2); err != nil {
		panic(err)
	}
	fmt.Println(out[:4], out[n-1])
	st := exec.Stats()
	fmt.Println("tasks:", st.Tasks, "bytes read back:", st.BytesDown)
	// Output:
	// [11 31 51 71] 19991
	// tasks: 2 bytes read back: 4000
}
