package affinity_test

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"testing/fstest"

	"github.com/vkjobs/vkjobs/affinity"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// A task's affinity from the command line.
func ExampleMask() {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var where affinity.Mask // zero value: cpu
	fs.Var(&where, "where", "where tasks run: cpu, gpu, spu, auto or thread:N")
	if err := fs.Parse([]string{"-where", "thread:1"}); err != nil {
		panic(err)
	}
	task := sched.Task{Kernel: kernels.Saxpy, Affinity: where.Affinity()}
	fmt.Println(where, task.Affinity == sched.OnThread(1))
	m, err := affinity.ParseMask("auto")
	fmt.Println(m, m.Affinity() == sched.Auto, err)
	_, err = affinity.ParseMask("tpu")
	fmt.Println(err)
	// Output:
	// thread:1 true
	// auto true <nil>
	// affinity: unknown affinity "tpu": want cpu, gpu, spu, auto or thread:N
}

// Spreading workers over physical cores first, on a machine of two cores
// with two hardware threads each (described here by a synthetic sysfs;
// affinity.Discover reads the real one).
func ExamplePlan() {
	sys := fstest.MapFS{"online": {Data: []byte("0-3")}}
	for cpu, sib := range []string{"0,2", "1,3", "0,2", "1,3"} {
		sys[fmt.Sprintf("cpu%d/topology/thread_siblings_list", cpu)] = &fstest.MapFile{Data: []byte(sib)}
		sys[fmt.Sprintf("cpu%d/topology/physical_package_id", cpu)] = &fstest.MapFile{Data: []byte("0")}
	}
	topo := affinity.DiscoverFS(sys, affinity.CPUSet{})
	fmt.Println(topo.NumCPU(), "CPUs,", topo.NumCores(), "cores")
	fmt.Println("2 workers:", affinity.Plan(topo, 2)) // one per core
	fmt.Println("4 workers:", affinity.Plan(topo, 4)) // then the siblings
	// Output:
	// 4 CPUs, 2 cores
	// 2 workers: [0 1]
	// 4 workers: [0 1 2 3]
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

// Running saxpy through a local store: chunks are copied in, computed and
// copied out, double-buffered.
func ExampleNewSPU() {
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		panic(err)
	}
	spu, err := affinity.NewSPU(affinity.SPUOptions{}) // one unit, 256 KiB
	if err != nil {
		panic(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg})
	if err != nil {
		panic(err)
	}
	if err := s.AttachExecutor(sched.ExecSPU, spu); err != nil {
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
	st := spu.Stats()
	fmt.Println(out[:3], out[len(out)-1])
	fmt.Println("chunks:", st.Chunks, "bytes in:", st.BytesIn, "bytes out:", st.BytesOut)
	// Output:
	// [1 3 5] 199999
	// chunks: 10 bytes in: 800000 bytes out: 400000
}

// Enabling Auto placement. Here the candidates are the CPU workers and the
// SPU executor (a GPU executor is attached the same way, as
// sched.ExecGPU); the Placer tries both, then places each task where it
// is predicted to finish first, and its model can be saved for the next
// run.
func ExampleNewPlacer() {
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		panic(err)
	}
	spu, err := affinity.NewSPU(affinity.SPUOptions{})
	if err != nil {
		panic(err)
	}
	p := affinity.NewPlacer(affinity.PlacerOptions{SPU: spu})
	s, err := sched.New(sched.Config{Kernels: reg, Placer: p, Observer: p})
	if err != nil {
		panic(err)
	}
	if err := s.AttachExecutor(sched.ExecSPU, spu); err != nil {
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
	warm := affinity.NewPlacer(affinity.PlacerOptions{})
	fmt.Println("load:", warm.Load(&saved))
	// Output:
	// results ok: true
	// cpu learned: true
	// spu learned: true
	// load: <nil>
}
