package placement

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// freezeClock stops the Placer's clock (and the simulated world's) for
// the test: the simulated durations are then exactly what the Placer
// measures, however long the test's goroutine is descheduled between a
// placement and its events on a loaded machine.
func freezeClock(t *testing.T) {
	now := sched.Nanotime()
	placerClock = func() int64 { return now }
	t.Cleanup(func() { placerClock = sched.Nanotime })
}

// countPlacements counts a snapshot's decisions: slice probes (split
// tasks explored by "explore-slice"), whole tasks on the GPU and one-core
// tasks.
func countPlacements(t *testing.T, p *Placer) (slices, wholeGPU, oneCore int) {
	t.Helper()
	for _, d := range p.Snapshot().Decisions {
		switch {
		case d.Where == sched.GPU && d.Split > 0:
			if d.Reason != "explore-slice" {
				t.Fatalf("split task with reason %q: %+v", d.Reason, d)
			}
			slices++
		case d.Where == sched.GPU:
			wholeGPU++
		case d.OneCore:
			oneCore++
		}
	}
	return slices, wholeGPU, oneCore
}

// TestSliceProbeRulesOutSlowDevice: a GPU 100x slower per item than the
// CPU workers is explored with a slice of a task, not a whole task, and
// the slice's time (longer than the CPU's whole task) rules it out: the
// exploration costs a small fraction of one whole GPU task.
func TestSliceProbeRulesOutSlowDevice(t *testing.T) {
	freezeClock(t)
	for _, shared := range []bool{false, true} {
		w := newWorld(Options{TrackEvery: 1, SharedCores: shared})
		w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1000)
		const n = 1 << 16 // CPU 657 us, GPU 65.6 ms
		for range 60 {
			w.run(n)
		}
		slices, whole, _ := countPlacements(t, w.p)
		if whole > 0 {
			t.Fatalf("shared %v: %d whole tasks on a GPU 100x slower\n%s", shared, whole, dump(w.p))
		}
		// The device's first run (a warm-up, not learned from) and one
		// slice of 1/64 of the task; with SharedCores, where a slice
		// must take twice the CPU's whole task, one of 1/16 too.
		want, limit := 2, w.gpu(n)/16
		if shared {
			want, limit = 3, w.gpu(n)/8
		}
		if slices != want {
			t.Fatalf("shared %v: %d slice probes, want %d\n%s", shared, slices, want, dump(w.p))
		}
		if w.gpuBusy > limit {
			t.Fatalf("shared %v: exploring the GPU took %v of its time, want at most %v", shared, w.gpuBusy, limit)
		}
		if where, split := w.run(n); where != sched.AnyWorker || split != 0 {
			t.Fatalf("shared %v: after exploring, placed on %v/%d", shared, where, split)
		}
	}
}

// TestSliceProbeGrowsToWholeTasks: a slice that finishes before the
// best device's whole task, but whose time scaled up to the whole task
// does not, is followed by one 4x larger (1/64, 1/16, 1/4 of the task),
// then whole tasks are explored there and it wins; meanwhile its line
// (latency and time per item, from the slices' sizes) never sends a
// whole task there early. A slice whose scaled-up time already wins (an
// upper bound on the whole task's time: latency does not grow with the
// items) sends the next task there whole.
func TestSliceProbeGrowsToWholeTasks(t *testing.T) {
	freezeClock(t)
	const n = 1 << 20 // CPU 10.5 ms
	for _, c := range []struct {
		name   string
		gpu    func(uint32) time.Duration
		slices []uint32 // warm-up first
		lat    time.Duration
	}{
		// 3 ms + 5 ns per item: 8.2 ms whole; a 1/64 slice takes 3.08
		// ms, 197 ms scaled up; a 1/4 slice 4.3 ms, 17 ms scaled up.
		{"latency", lin(3*time.Millisecond, 5), []uint32{n / 64, n / 64, n / 16, n / 4}, 3 * time.Millisecond},
		// 100 us + 1 ns per item: 1.15 ms whole; a 1/64 slice scaled
		// up takes 7.5 ms.
		{"fast", lin(100*time.Microsecond, 1), []uint32{n / 64, n / 64}, 0},
	} {
		// SharedCores: no co-execution, which would win here.
		w := newWorld(Options{TrackEvery: 1, SharedCores: true})
		w.cpu, w.gpu = lin(2*time.Microsecond, 10), c.gpu
		var sizes []uint32
		for range 20 {
			if where, split := w.run(n); where == sched.GPU && split > 0 {
				sizes = append(sizes, split)
			}
		}
		if !slices.Equal(sizes, c.slices) {
			t.Fatalf("%s: slices %v, want %v\n%s", c.name, sizes, c.slices, dump(w.p))
		}
		if c.lat > 0 {
			km, _ := w.p.Snapshot().Model(w.id)
			gm, _ := km.Device("gpu")
			if d := gm.Latency - c.lat; d < -c.lat/10 || d > c.lat/10 {
				t.Fatalf("%s: GPU model %+v, want latency %v", c.name, gm, c.lat)
			}
		}
		for range 10 {
			if where, split := w.run(n); where != sched.GPU || split != 0 {
				t.Fatalf("%s: after slices %v, placed on %v/%d\n%s", c.name, sizes, where, split, dump(w.p))
			}
		}
	}
}

// TestSliceProbeNeedsSplittableTask: Simple kernels, tiny tasks and
// NoSliceProbe or NoCoExec explore whole tasks.
func TestSliceProbeNeedsSplittableTask(t *testing.T) {
	freezeClock(t)
	for _, c := range []struct {
		name   string
		opts   Options
		simple bool
		n      uint32
	}{
		{"simple", Options{}, true, 1 << 16},
		{"tiny", Options{}, false, sliceMin - 1},
		{"no-slice-probe", Options{NoSliceProbe: true}, false, 1 << 16},
		{"no-coexec", Options{NoCoExec: true}, false, 1 << 16},
	} {
		c.opts.TrackEvery = 1
		w := newWorld(c.opts)
		if c.simple {
			w.k.Kind = sched.Simple
		}
		w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1000)
		for range 20 {
			w.run(c.n)
		}
		if slices, whole, _ := countPlacements(t, w.p); slices != 0 || whole == 0 {
			t.Errorf("%s: %d slice probes, %d whole GPU tasks; want none, some", c.name, slices, whole)
		}
	}
}

// TestOneCoreChosenWhereFaster: with OneCore, a task runs unsplit (its
// Grain raised to its size) where one core beats the fanned-out workers,
// here below about 9300 items, and on the workers above.
func TestOneCoreChosenWhereFaster(t *testing.T) {
	freezeClock(t)
	w := newWorld(Options{OneCore: true, CPUThreads: 2, NoCoExec: true, TrackEvery: 1})
	w.pieces = 2
	// The workers: 30 us of hand-offs plus 5 ns per item; one core: 2 us
	// plus 8 ns per item. A GPU far behind both.
	w.cpu, w.cpu1, w.gpu = lin(30*time.Microsecond, 5), lin(2*time.Microsecond, 8), lin(time.Millisecond, 100)
	sizes := []uint32{4096, 1 << 16}
	w.warm(sizes...)
	for range 20 {
		for _, n := range sizes {
			where, split := w.run(n)
			one := w.oneCore
			wantOne := w.cpu1(n) < w.cpu(n)
			if where != sched.AnyWorker || split != 0 || one != wantOne {
				t.Fatalf("%d items: %v/%d, one core %v; want the CPU, one core %v\n%s", n, where, split, one, wantOne, dump(w.p))
			}
		}
	}
	_, _, one := countPlacements(t, w.p)
	if one == 0 {
		t.Fatal("no one-core decision in the snapshot")
	}
	for _, d := range w.p.Snapshot().Decisions {
		if d.OneCore && d.Trace().Device != "cpu1" {
			t.Fatalf("one-core decision traced as %q", d.Trace().Device)
		}
	}
	if s := w.p.Snapshot(); len(s.Available) != 3 || s.Available[2] != "cpu1" {
		t.Fatalf("available devices %v", s.Available)
	}

	// Without OneCore, the task's grain is left alone.
	w2 := newWorld(Options{CPUThreads: 2, NoCoExec: true})
	w2.cpu, w2.gpu = w.cpu, w.gpu
	for range 20 {
		var d sched.TaskData
		d.Begin, d.End = 0, 4096
		w2.p.Place(w2.id, &w2.k, &d)
		if d.Grain != 0 {
			t.Fatalf("Grain set to %d without OneCore", d.Grain)
		}
	}
}

// TestReprobeEveryCandidate: each device other than the best is re-probed
// on its own schedule, so a GPU that became fast is found although one
// core, closer to the workers, is the runner-up.
func TestReprobeEveryCandidate(t *testing.T) {
	freezeClock(t)
	const reprobe = 10
	w := newWorld(Options{OneCore: true, CPUThreads: 2, NoCoExec: true, TrackEvery: 1, ReprobeEvery: reprobe})
	w.pieces = 2
	w.cpu, w.cpu1, w.gpu = lin(10*time.Microsecond, 10), lin(10*time.Microsecond, 11), lin(100*time.Microsecond, 30)
	const n = 1 << 16 // workers 665 us, one core 731 us, GPU 2 ms
	w.warm(n)
	if where, _ := w.run(n); where != sched.AnyWorker {
		t.Fatalf("not on the CPU before the change\n%s", dump(w.p))
	}
	w.gpu = lin(100*time.Microsecond, 1) // 166 us
	probed, back := -1, -1
	for i := range 100 {
		if where, _ := w.run(n); where == sched.GPU {
			if probed < 0 {
				probed = i + 1
			}
			if where2, _ := w.run(n); where2 == sched.GPU {
				back = i + 1
				break
			}
		}
	}
	// The GPU, predicted 3.1x slower, is probed after reprobe*(3.1-1)
	// decisions; each probe moves its estimate half way, and the probes
	// come sooner as it nears the workers'.
	if probed < 0 || probed > 2*reprobe+4 || back < 0 || back > 6*reprobe {
		t.Fatalf("GPU first probed after %d tasks (want at most %d), back after %d (want at most %d)\n%s",
			probed, 2*reprobe+4, back, 6*reprobe, dump(w.p))
	}
}

// TestPlaceAllocsOneCore: with one core and slice probes as candidates,
// Place and TaskRan still allocate nothing once a kernel has been seen.
func TestPlaceAllocsOneCore(t *testing.T) {
	w := newWorld(Options{OneCore: true, CPUThreads: 2})
	w.pieces = 2
	w.cpu, w.cpu1, w.gpu = lin(30*time.Microsecond, 5), lin(2*time.Microsecond, 8), lin(100*time.Microsecond, 1)
	sizes := []uint32{64, 4096, 1 << 20, 100000}
	w.warm(sizes...)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		w.run(sizes[i%len(sizes)])
		i++
	})
	if allocs != 0 {
		t.Fatalf("Place+TaskRan: %v allocations per task", allocs)
	}
}

// pieceCounter counts the kernel invocations of each task (its own, or
// its pieces').
type pieceCounter struct {
	mu sync.Mutex
	n  map[sched.TaskID]int
}

func (c *pieceCounter) TaskRan(ev *sched.RunEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := ev.Task
	if ev.Parent != sched.NoTask {
		id = ev.Parent
	}
	c.n[id]++
}

// TestOneCoreRunsUnsplitOnScheduler: on a real scheduler with two CPU
// threads, a task the Placer puts on one core (by raising its Grain) runs
// as one kernel invocation, and a task it leaves to the workers runs in
// pieces.
func TestOneCoreRunsUnsplitOnScheduler(t *testing.T) {
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		t.Fatal(err)
	}
	p := New(Options{OneCore: true, CPUThreads: 2, TrackEvery: 1})
	pc := &pieceCounter{n: map[sched.TaskID]int{}}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1, Placer: p, Observer: Observers(p, pc)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p.Attach(s)
	main, err := s.RegisterThread("main")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 15
	x, y, out := make([]float32, n), make([]float32, n), make([]float32, n)
	one, many := 0, 0
	for range 40 {
		task := sched.Task{Kernel: kernels.Saxpy, Affinity: sched.Auto}
		task.Data.Elements, task.Data.Grain = n, 1024
		task.Data.In[0], task.Data.In[1], task.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y), sched.StreamOf(out)
		before := len(p.Snapshot().Decisions)
		id, err := main.Add(&task)
		if err != nil {
			t.Fatal(err)
		}
		if err := main.Wait(id); err != nil {
			t.Fatal(err)
		}
		snap := p.Snapshot()
		if len(snap.Decisions) != before+1 {
			t.Fatalf("%d decisions for one task", len(snap.Decisions)-before)
		}
		d := snap.Decisions[len(snap.Decisions)-1]
		pc.mu.Lock()
		pieces := pc.n[id]
		pc.mu.Unlock()
		switch {
		case d.OneCore && pieces != 1:
			t.Fatalf("one-core task ran as %d pieces", pieces)
		case !d.OneCore && pieces < 2:
			t.Fatalf("task on the workers ran as %d pieces, want several", pieces)
		case d.OneCore:
			one++
		default:
			many++
		}
	}
	if one == 0 || many == 0 {
		t.Fatalf("%d one-core and %d worker tasks: the Placer explores both", one, many)
	}
}

// TestSliceProbeDroppedIsRetried: a slice probe that never reports (its
// executor vanished) expires after StaleAfter, and the next task of the
// class probes again instead of leaving the device unexplored for good
// (its class stayed marked busy).
func TestSliceProbeDroppedIsRetried(t *testing.T) {
	var now atomic.Int64
	now.Store(sched.Nanotime())
	placerClock = now.Load
	t.Cleanup(func() { placerClock = sched.Nanotime })
	w := newWorld(Options{TrackEvery: 1, StaleAfter: time.Millisecond})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1000)
	const n = 1 << 16
	for range 3 {
		w.run(n) // the CPU's exploration
	}
	var d sched.TaskData
	d.End = n
	if where, split := w.p.Place(w.id, &w.k, &d); where != sched.GPU || split == 0 {
		t.Fatalf("no slice probe: %v/%d\n%s", where, split, dump(w.p))
	}
	// Never completed; meanwhile the class is not probed twice.
	if _, split := w.run(n); split != 0 {
		t.Fatal("a second slice probe while the first is in flight")
	}
	// The next placement expires it (after deciding), the one after
	// probes again.
	now.Add(int64(2 * time.Millisecond))
	w.run(n)
	if where, split := w.run(n); where != sched.GPU || split == 0 {
		t.Fatalf("after the probe expired: %v/%d, want another slice probe\n%s", where, split, dump(w.p))
	}
}
