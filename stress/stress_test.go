package stress

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/affinity/placement"
	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// rig is a scheduler with every executor attached.
type rig struct {
	s      *sched.Scheduler
	main   *sched.Ctx
	render *sched.Ctx
	dev    *gpu.Device
	exec   *gpu.Executor
	spu    *spu.Executor
	placer *placement.Placer
	stop   *sched.Event
	wg     sync.WaitGroup
}

func openDevice(t *testing.T) *gpu.Device {
	t.Helper()
	dev, _ := gputest.Open(t, gpu.Options{})
	return dev
}

func newRig(t *testing.T, dev *gpu.Device, workers int) *rig {
	t.Helper()
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		t.Fatal(err)
	}
	r := &rig{dev: dev}
	r.placer = placement.New(placement.Options{SharedCores: dev.Selection().Chosen.Type == gpu.TypeCPU})
	var err error
	r.s, err = sched.New(sched.Config{Kernels: reg, Workers: workers, MainThreads: 2, Placer: r.placer, Observer: r.placer})
	if err != nil {
		t.Fatal(err)
	}
	if r.exec, err = gpu.NewExecutor(dev, gpu.ExecutorOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.spu, err = spu.New(spu.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := r.s.AttachExecutor(sched.ExecGPU, r.exec); err != nil {
		t.Fatal(err)
	}
	if err := r.s.AttachExecutor(sched.ExecSPU, r.spu); err != nil {
		t.Fatal(err)
	}
	r.placer.Attach(r.s)
	r.main, _ = r.s.RegisterThread("main")
	r.render, _ = r.s.RegisterThread("render")
	r.stop = r.s.NewEvent()
	r.wg.Go(func() { r.render.WaitEvent(r.stop) }) // the render thread serves its pinned tasks
	return r
}

func (r *rig) close(t *testing.T) {
	r.stop.Signal()
	r.wg.Wait()
	if err := r.s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

var affinities = []sched.Affinity{sched.AnyWorker, sched.OnThread(0), sched.OnThread(1), sched.GPU, sched.SPU, sched.Auto}

// chain is a sequence of saxpy steps, each on its own output buffer and
// each reading the previous step's output: out[k] = a[k]*x + out[k-1]. Each
// step depends on the previous one, so a wrong order gives a wrong result.
type chain struct {
	x    []float32
	outs [][]float32
	a    []float32
	ids  []sched.TaskID
	aff  []sched.Affinity
}

func (c *chain) expect() []float32 {
	y := make([]float32, len(c.x))
	for i := range y {
		y[i] = float32(i % 7)
	}
	for k := range c.outs {
		for i := range y {
			y[i] = float32(c.a[k]*c.x[i]) + y[i]
		}
	}
	return y
}

// TestRandomGraphsEveryAffinity builds random graphs of saxpy chains with
// random affinities, sizes, priorities and join parents, runs them and
// checks every result (which proves each step ran, in order, on whatever
// device), that every task finished without error, and that nothing is left
// pending. Rounds: VKJOBS_SOAK (a duration) for a long run.
func TestRandomGraphsEveryAffinity(t *testing.T) {
	dev := openDevice(t)
	defer dev.Close()
	before := runtime.NumGoroutine()
	soak, _ := time.ParseDuration(os.Getenv("VKJOBS_SOAK"))
	began := time.Now()
	tasks := 0
	for round := 0; ; round++ {
		if soak == 0 && round >= 6 || soak > 0 && time.Since(began) > soak {
			break
		}
		r := newRig(t, dev, 1+round%2)
		tasks += runRound(t, r, uint64(round))
		r.close(t)
		if t.Failed() {
			return
		}
	}
	if err := dev.ValidationErr(); err != nil {
		t.Fatalf("validation layer: %v", err)
	}
	waitGoroutines(t, before)
	t.Logf("%d tasks over every affinity in %v", tasks, time.Since(began).Round(time.Millisecond))
}

func runRound(t *testing.T, r *rig, seed uint64) int {
	rng := rand.New(rand.NewPCG(seed, 7))
	const chains = 24
	var cs []*chain
	tasks := 0
	join, err := r.main.Create(&sched.Task{})
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < chains; c++ {
		n := []int{1, 7, 300, 4096, 70000}[rng.IntN(5)]
		ch := &chain{x: make([]float32, n)}
		y0 := make([]float32, n)
		for i := range ch.x {
			ch.x[i] = float32(i%13) * 0.25
			y0[i] = float32(i % 7)
		}
		prevOut, prev := y0, sched.NoTask
		steps := 1 + rng.IntN(5)
		for k := 0; k < steps; k++ {
			out := make([]float32, n)
			a := float32(rng.IntN(8)) * 0.5
			var tk sched.Task
			tk.Kernel = kernels.Saxpy
			tk.Priority = sched.Priority(rng.IntN(3) - 1) // low, normal or high
			tk.Affinity = affinities[rng.IntN(len(affinities))]
			tk.Dependency = prev
			if k == steps-1 {
				tk.Parent = join
			}
			tk.Data.Params[0] = math.Float32bits(a)
			tk.Data.Elements = uint32(n)
			tk.Data.In[0], tk.Data.In[1] = sched.StreamOf(ch.x), sched.StreamOf(prevOut)
			tk.Data.Out[0] = sched.StreamOf(out)
			id, err := r.main.Add(&tk)
			if err != nil {
				t.Fatalf("chain %d step %d (%v): %v", c, k, tk.Affinity, err)
			}
			ch.outs, ch.a, ch.ids, ch.aff = append(ch.outs, out), append(ch.a, a), append(ch.ids, id), append(ch.aff, tk.Affinity)
			prevOut, prev = out, id
			tasks++
		}
		cs = append(cs, ch)
	}
	if err := r.main.Run(join); err != nil {
		t.Fatal(err)
	}
	if err := r.main.Wait(join); err != nil {
		t.Fatalf("round %d: %v", seed, err)
	}
	for c, ch := range cs {
		want := ch.expect()
		got := ch.outs[len(ch.outs)-1]
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*math.Max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("round %d chain %d (affinities %v): out[%d] = %v, want %v", seed, c, ch.aff, i, got[i], want[i])
			}
		}
		for _, id := range ch.ids {
			if !r.s.IsFinished(id) || r.s.Err(id) != nil {
				t.Fatalf("chain %d task %v: finished=%v err=%v", c, id, r.s.IsFinished(id), r.s.Err(id))
			}
		}
	}
	if p := r.s.Pending(); p != 0 {
		t.Fatalf("%d tasks pending after the join", p)
	}
	return tasks
}

// TestCloseWithWorkQueuedEverywhere queues chains on every affinity and
// closes the scheduler at once: every task must end finished (run or failed
// with an error that says why), none twice, and no goroutine may be left.
func TestCloseWithWorkQueuedEverywhere(t *testing.T) {
	dev := openDevice(t)
	defer dev.Close()
	before := runtime.NumGoroutine()
	r := newRig(t, dev, 1)
	var ids []sched.TaskID
	x := make([]float32, 50000)
	for c := 0; c < 60; c++ {
		prev := sched.NoTask
		for k := 0; k < 3; k++ {
			var tk sched.Task
			tk.Kernel = kernels.Saxpy
			tk.Affinity = affinities[(c+k)%len(affinities)]
			tk.Dependency = prev
			tk.Data.Elements = uint32(len(x))
			tk.Data.In[0], tk.Data.In[1] = sched.StreamOf(x), sched.StreamOf(x)
			tk.Data.Out[0] = sched.StreamOf(make([]float32, len(x)))
			id, err := r.main.Add(&tk)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			prev = id
		}
	}
	r.stop.Signal() // the render thread stops serving: its queued tasks must fail, not hang
	r.wg.Wait()
	if err := r.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ran, failed := 0, 0
	for _, id := range ids {
		if !r.s.IsFinished(id) {
			t.Fatalf("task %v not finished after Close", id)
		}
		if err := r.s.Err(id); err != nil {
			if !errors.Is(err, sched.ErrClosed) && !errors.Is(err, sched.ErrDepFailed) {
				t.Fatalf("task %v failed with %v, want ErrClosed or a failed dependency", id, err)
			}
			failed++
		} else {
			ran++
		}
	}
	if _, err := r.main.Add(&sched.Task{}); !errors.Is(err, sched.ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := dev.ValidationErr(); err != nil {
		t.Fatalf("validation layer: %v", err)
	}
	waitGoroutines(t, before)
	t.Logf("Close with %d tasks queued on every affinity: %d ran, %d failed with ErrClosed", len(ids), ran, failed)
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left, want %d:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
