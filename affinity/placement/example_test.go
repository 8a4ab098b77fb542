package placement_test

import (
	"bytes"
	"flag"
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/affinity/placement"
	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// A task's affinity from the command line.
func ExampleAffinity() {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var where placement.Affinity // zero value: cpu
	fs.Var(&where, "where", "where tasks run: cpu, gpu, spu, auto or thread:N")
	if err := fs.Parse([]string{"-where", "thread:1"}); err != nil {
		panic(err)
	}
	task := sched.Task{Kernel: kernels.Saxpy, Affinity: where.Affinity()}
	fmt.Println(where, task.Affinity == sched.OnThread(1))
	m, err := placement.ParseAffinity("auto")
	fmt.Println(m, m.Affinity() == sched.Auto, err)
	_, err = placement.ParseAffinity("tpu")
	fmt.Println(err)
	// Output:
	// thread:1 true
	// auto true <nil>
	// placement: unknown affinity "tpu": want cpu, gpu, spu, auto or thread:N
}

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

// Enabling Auto placement. Here the candidates are the CPU workers and the
// SPU executor (a GPU executor is attached the same way, as
// sched.ExecGPU); the Placer tries both, then places each task where it
// is predicted to finish first, and its model can be saved for the next
// run.
func ExampleNew() {
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		panic(err)
	}
	x, err := spu.New(spu.Options{})
	if err != nil {
		panic(err)
	}
	// A short run: explore every device fully rather than within the
	// default budget of 2% of the kernel's run time.
	p := placement.New(placement.Options{SPU: x, ExploreBudget: -1})
	s, err := sched.New(sched.Config{Kernels: reg, Placer: p, Observer: p})
	if err != nil {
		panic(err)
	}
	if err := s.AttachExecutor(sched.ExecSPU, x); err != nil {
		panic(err)
	}
	p.Attach(s) // after the executors: which devices exist
	main, err := s.RegisterThread("main")
	if err != nil {
		panic(err)
	}
	ok := true
	for i := range 20 {
		task, out := saxpyTask(1000 << (i % 4))
		task.Affinity = sched.Auto
		id, err := main.Add(&task)
		if err != nil {
			panic(err)
		}
		if err := main.Wait(id); err != nil {
			panic(err)
		}
		ok = ok && out[7] == 15
	}
	if err := s.Close(); err != nil {
		panic(err)
	}
	snap := p.Snapshot()
	km, _ := snap.Model(kernels.Saxpy)
	fmt.Println("results ok:", ok)
	for _, d := range km.Devices {
		fmt.Println(d.Device, "learned:", d.Samples > 0)
	}
	// snap.WriteTo(os.Stdout) prints the model and the recent decisions.
	var saved bytes.Buffer
	if err := p.Save(&saved); err != nil {
		panic(err)
	}
	warm := placement.New(placement.Options{})
	fmt.Println("load:", warm.Load(&saved))
	// Output:
	// results ok: true
	// cpu learned: true
	// spu learned: true
	// load: <nil>
}
