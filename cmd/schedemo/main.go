// Command schedemo is a small, honest demonstration of the task scheduler:
// a frame-like task graph over every core, timed against serial code and
// against one goroutine per task, all measured in this process.
//
//	go run ./cmd/schedemo [-frames 200] [-n 1000000]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/vkjobs/vkjobs/internal/version"
	"github.com/vkjobs/vkjobs/sched"
)

const (
	kIntegrate sched.KernelID = 1 + iota
	kAvg32
	kEmpty
)

type particle struct{ X, Y, VX, VY float32 }

func integrate(c *sched.Ctx, d *sched.TaskData) error {
	p := sched.View[particle](d.In[0])
	out := sched.View[particle](d.Out[0])
	dt := math.Float32frombits(d.Params[0])
	for i := d.Begin; i < d.End; i++ {
		q := p[i]
		for k := 0; k < 8; k++ { // a few sub-steps: compute-bound work
			q.VY -= 9.81 * dt / 8
			q.X += q.VX * dt / 8
			q.Y += q.VY * dt / 8
			if q.Y < 0 {
				q.Y, q.VY = -q.Y, -q.VY*0.9
			}
		}
		out[i] = q
	}
	return nil
}

func avg32(c *sched.Ctx, d *sched.TaskData) error {
	p := sched.View[particle](d.In[0])
	out := sched.View[float32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		var s float32
		for _, q := range p[i*32 : i*32+32] {
			s += q.Y
		}
		out[i] = s / 32
	}
	return nil
}

// maxParticles bounds -n: the two particle arrays take 32 bytes per
// particle (4 GiB at this bound), and a task's element count is a uint32,
// so a larger -n would either exhaust memory or be cut short silently.
const maxParticles = 1 << 27

const usageText = `usage: schedemo [flags]

The task scheduler alone, without Vulkan. A frame integrates n particles
(a streaming kernel split over every core), then averages them 32 at a time
(a reduction that depends on it), beside 256 small tasks under one root.
schedemo times the frame as serial code and on the scheduler, then the cost
of an empty task on the scheduler against one goroutine per task, all in
this process, and prints medians, 95th percentiles and ratios.

Flags:
`

func main() {
	frames := flag.Int("frames", 200, "frames to simulate")
	n := flag.Int("n", 1<<20, "particles (a positive multiple of 32)")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), usageText)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("schedemo"))
		return
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "schedemo: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *n < 32 || *n%32 != 0 || *n > maxParticles {
		fmt.Fprintf(os.Stderr, "schedemo: -n %d: want a positive multiple of 32, at most %d\n", *n, maxParticles)
		os.Exit(2)
	}
	if *frames < 1 {
		fmt.Fprintf(os.Stderr, "schedemo: -frames %d: want at least 1\n", *frames)
		os.Exit(2)
	}
	// The figures are the command's result: failing to write them (a
	// full disk, a closed pipe) is a failure, not an exit 0.
	stdout := &errWriter{w: os.Stdout}
	reg := sched.NewRegistry()
	for _, k := range []struct {
		id sched.KernelID
		k  sched.Kernel
	}{
		{kIntegrate, sched.Kernel{Name: "integrate", Kind: sched.Streaming, Grain: 8192,
			In: []sched.StreamSpec{{Name: "p", Stride: 16}}, Out: []sched.StreamSpec{{Name: "p'", Stride: 16}}, CPU: integrate}},
		{kAvg32, sched.Kernel{Name: "avg32", Kind: sched.Reduce, Factor: 32, Grain: 1024,
			In: []sched.StreamSpec{{Name: "p", Stride: 16}}, Out: []sched.StreamSpec{{Name: "avg", Stride: 4}}, CPU: avg32}},
		{kEmpty, sched.Kernel{Name: "empty", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}},
	} {
		if err := reg.Register(k.id, k.k); err != nil {
			fmt.Fprintln(os.Stderr, "schedemo:", err)
			os.Exit(1)
		}
	}
	s, err := sched.New(sched.Config{Kernels: reg})
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedemo:", err)
		os.Exit(1)
	}
	defer s.Close()
	main, err := s.RegisterThread("main")
	check(err)
	fmt.Fprintf(stdout, "schedemo: %d CPUs, %d workers + 1 main thread, %d particles, %d frames\n",
		runtime.NumCPU(), s.Workers(), *n, *frames)

	a := make([]particle, *n)
	b := make([]particle, *n)
	avg := make([]float32, *n/32)
	for i := range a {
		a[i] = particle{X: float32(i), Y: float32(i%100) + 1, VX: 1, VY: 0}
	}
	dt := math.Float32bits(1.0 / 60)

	// One frame: integrate (split over all cores) -> average every 32
	// (depends on integrate), with 256 small bookkeeping tasks as children
	// of a frame root.
	frame := func(src, dst []particle) {
		root, err := main.Create(&sched.Task{})
		check(err)
		var t sched.Task
		t.Kernel, t.Parent = kIntegrate, root
		t.Data.Params[0] = dt
		t.Data.Elements = uint32(len(src))
		t.Data.In[0], t.Data.Out[0] = sched.StreamOf(src), sched.StreamOf(dst)
		integ, err := main.Add(&t)
		check(err)
		var r sched.Task
		r.Kernel, r.Parent, r.Dependency = kAvg32, root, integ
		r.Data.Elements = uint32(len(avg))
		r.Data.In[0], r.Data.Out[0] = sched.StreamOf(dst), sched.StreamOf(avg)
		_, err = main.Add(&r)
		check(err)
		e := sched.Task{Kernel: kEmpty, Parent: root}
		for i := 0; i < 256; i++ {
			_, err = main.Add(&e)
			check(err)
		}
		check(main.Run(root))
		check(main.Wait(root))
	}
	serialFrame := func(src, dst []particle) {
		var d sched.TaskData
		d.Params[0] = dt
		d.In[0], d.Out[0] = sched.StreamOf(src), sched.StreamOf(dst)
		d.Begin, d.End = 0, uint32(len(src))
		integrate(nil, &d)
		d.In[0], d.Out[0] = sched.StreamOf(dst), sched.StreamOf(avg)
		d.Begin, d.End = 0, uint32(len(avg))
		avg32(nil, &d)
	}
	run := func(name string, f func(src, dst []particle)) []time.Duration {
		ts := make([]time.Duration, *frames)
		for i := range ts {
			t0 := time.Now()
			if i%2 == 0 {
				f(a, b)
			} else {
				f(b, a)
			}
			ts[i] = time.Since(t0)
		}
		slices.Sort(ts)
		fmt.Fprintf(stdout, "  %-28s median %8.3f ms   p95 %8.3f ms\n", name, ms(ts[len(ts)/2]), ms(ts[len(ts)*95/100]))
		return ts
	}
	fmt.Fprintln(stdout, "frame = integrate (split) -> avg32 (dependency) + 256 small tasks:")
	ser := run("serial (1 core)", serialFrame)
	par := run("scheduler (all cores)", frame)
	fmt.Fprintf(stdout, "  speed-up: %.2fx on %d threads\n", float64(ser[len(ser)/2])/float64(par[len(par)/2]), s.Threads())

	// Per-task overhead: empty tasks, scheduler vs one goroutine per task.
	const tasks = 200000
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	t0 := time.Now()
	for i := 0; i < tasks; i += 1000 {
		root, err := main.Create(&sched.Task{})
		check(err)
		e := sched.Task{Kernel: kEmpty, Parent: root}
		for j := 0; j < 1000; j++ {
			_, err := main.Add(&e)
			check(err)
		}
		check(main.Run(root))
		check(main.Wait(root))
	}
	st := time.Since(t0)
	runtime.ReadMemStats(&ms1)
	schedAllocs := float64(ms1.Mallocs-ms0.Mallocs) / tasks
	t0 = time.Now()
	for i := 0; i < tasks; i += 1000 {
		var wg sync.WaitGroup
		for j := 0; j < 1000; j++ {
			wg.Go(func() {})
		}
		wg.Wait()
	}
	wt := time.Since(t0)
	fmt.Fprintf(stdout, "empty tasks: scheduler %.0f ns/task (%.3f allocs/task), WaitGroup.Go %.0f ns/task: ratio %.2f\n",
		float64(st.Nanoseconds())/tasks, schedAllocs, float64(wt.Nanoseconds())/tasks, float64(st)/float64(wt))
	if stdout.err != nil {
		s.Close()
		fmt.Fprintln(os.Stderr, "schedemo: writing the results:", stdout.err)
		os.Exit(1)
	}
}

// errWriter passes writes on to w until one fails, and keeps that error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedemo:", err)
		os.Exit(1)
	}
}
