package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// taskTime is the simulated time of the task that w.run just placed on
// where with split: a split task takes as long as its slower part.
func (w *world) taskTime(n uint32, where sched.Affinity, split uint32) time.Duration {
	switch {
	case split > 0:
		return max(w.gpu(split), w.cpu(n-split))
	case where == sched.GPU:
		return w.gpu(n)
	case w.oneCore && w.cpu1 != nil:
		return w.cpu1(n)
	}
	return w.cpu(n)
}

// budgetRun runs tasks tasks of random sizes (seeded) through a world
// whose GPU is k times slower than the CPU workers and whose one core wins
// the smallest size, and returns Auto's simulated time, the oracle's (the
// fastest device for every task) and the kernel's model.
func budgetRun(t *testing.T, k float64, budget float64, tasks int) (auto, oracle time.Duration, km KernelModel, w *world) {
	t.Helper()
	w = newWorld(Options{OneCore: true, CPUThreads: 2, SharedCores: true, ExploreBudget: budget})
	w.pieces = 2
	w.cpu = lin(10*time.Microsecond, 2)
	w.cpu1 = lin(time.Microsecond, 3.2) // faster below 7500 items
	w.gpu = lin(time.Duration(k*float64(10*time.Microsecond)), 2*k)
	sizes := []uint32{4096, 1 << 16, 1 << 20}
	r := rand.New(rand.NewPCG(3, uint64(k)))
	for range tasks {
		n := sizes[r.IntN(len(sizes))]
		where, split := w.run(n)
		auto += w.taskTime(n, where, split)
		oracle += min(w.cpu(n), w.cpu1(n), w.gpu(n))
	}
	km, ok := w.p.Snapshot().Model(w.id)
	if !ok {
		t.Fatal("no model of the kernel")
	}
	return auto, oracle, km, w
}

// TestExploreBudgetBoundsRegret: with a GPU 30 to 700 times slower than
// the CPU workers, what exploring costs stays within the budget of the
// kernel's run time plus the runs that nothing could predict (the first
// ones of each device, a constant), so Auto's regret against the oracle
// tends to the budget as the sequence grows.
func TestExploreBudgetBoundsRegret(t *testing.T) {
	freezeClock(t)
	const budget = 0.02
	for _, k := range []float64{30, 300, 700} {
		t.Run(fmt.Sprintf("gpu_%gx", k), func(t *testing.T) {
			var last float64
			for _, tasks := range []int{1000, 4000} {
				auto, oracle, km, w := budgetRun(t, k, budget, tasks)
				regret := float64(auto-oracle) / float64(oracle)
				// The Placer's own account: what it charged (measured, an
				// unidentified device's up to its lower bound) within the
				// budget of its run time; a known exploration's
				// prediction is exact here, so the bound holds after each
				// completion as it did at each decision.
				if float64(km.ExploreCost) > budget*float64(km.RunTime)*1.001 {
					t.Fatalf("%d tasks: exploration charged %v > %g x run time %v\n%s", tasks, km.ExploreCost, budget, km.RunTime, dump(w.p))
				}
				// The runs nothing predicted: at most the GPU's first
				// three (its warm-up slice and the slices in two size
				// classes that identify its line) and one core's.
				var worst time.Duration
				for _, n := range []uint32{4096, 1 << 16, 1 << 20} {
					best := min(w.cpu(n), w.cpu1(n))
					worst = max(worst, w.gpu(max(n/sliceFirst, 1))-best, w.cpu1(n)-best, w.cpu(n)-best)
				}
				if km.SurpriseCost > 6*worst {
					t.Fatalf("%d tasks: unpredicted exploration cost %v, more than six of the worst first runs (%v)\n%s", tasks, km.SurpriseCost, 6*worst, dump(w.p))
				}
				// Auto's regret in simulated time, which the Placer never
				// sees: the budget, the unpredicted runs, and the tasks
				// run on the workers while one core, unexplored in a class
				// for lack of budget, would have been faster.
				bound := budget + float64(km.SurpriseCost)/float64(oracle) + 0.01
				if regret > bound {
					t.Fatalf("%d tasks: regret %.2f%% > %.2f%%\n%s", tasks, 100*regret, 100*bound, dump(w.p))
				}
				if tasks == 4000 && regret > last {
					t.Fatalf("regret grew from %.2f%% to %.2f%% with 4x the tasks", 100*last, 100*regret)
				}
				last = regret
				t.Logf("%d tasks: regret %.2f%%, exploration %v of run time %v, unpredicted %v", tasks, 100*regret, km.ExploreCost, km.RunTime, km.SurpriseCost)
			}
		})
	}
}

// TestExploreBudgetDefersSlowDevice: a device whose exploration the
// budget cannot pay for yet is explored later, once the kernel's run time
// has grown enough: the budget spaces its explorations out, it does not
// forbid them.
func TestExploreBudgetDefersSlowDevice(t *testing.T) {
	freezeClock(t)
	w := newWorld(Options{NoCoExec: true, TrackEvery: 1, ExploreBudget: 0.02, ReprobeEvery: -1})
	// The GPU is 3x slower: each exploration of it costs 2 CPU tasks.
	w.cpu, w.gpu = lin(0, 10), lin(0, 30)
	const n = 4096
	var gpuAt []int
	for i := range 2000 {
		if where, _ := w.run(n); where == sched.GPU {
			gpuAt = append(gpuAt, i)
		}
	}
	// The warm-up run comes second, when nothing has a prediction to
	// price it against (it is charged nothing). The next two, priced
	// at 2 CPU tasks each (the first from the device's fastest run so
	// far, a lower bound; the second from its sample), wait until 2% of
	// the run time pays for each: about 2 / 0.02 = 100 tasks apart.
	if len(gpuAt) != 3 {
		t.Fatalf("GPU explored at tasks %v, want 3 explorations\n%s", gpuAt, dump(w.p))
	}
	if gpuAt[0] > 5 || gpuAt[1] < 95 || gpuAt[1] > 110 || gpuAt[2] < 195 || gpuAt[2] > 215 {
		t.Fatalf("GPU explored at tasks %v: want the first within 5 tasks, the next at about 100 and 200", gpuAt)
	}
	if km, _ := w.p.Snapshot().Model(w.id); km.SurpriseCost != 0 || km.ExploreCost != 4*w.cpu(n) {
		t.Fatalf("exploration cost %v, unpredicted %v: want 2 explorations of 2 CPU tasks (%v), none unpredicted",
			km.ExploreCost, km.SurpriseCost, 4*w.cpu(n))
	}
}

// TestExploreBudgetPacesReprobes: with a budget, a device close to the
// best is re-probed as often as the budget affords ((r-1)/budget
// decisions, here 10) instead of every ReprobeEvery (100) decisions, so
// the workers, once they become faster than one core, win within a few
// tens of tasks; what the probes cost stays within the budget.
func TestExploreBudgetPacesReprobes(t *testing.T) {
	freezeClock(t)
	for _, budget := range []float64{0.02, -1} {
		w := newWorld(Options{OneCore: true, CPUThreads: 2, NoCoExec: true, TrackEvery: 1, ExploreBudget: budget})
		w.pieces = 2
		w.cpu, w.cpu1, w.gpu = lin(0, 12), lin(0, 10), lin(time.Millisecond, 100) // workers 1.2x one core
		const n = 4096
		for range 300 {
			w.run(n)
		}
		if w.run(n); !w.oneCore {
			t.Fatalf("budget %g: not on one core before the change\n%s", budget, dump(w.p))
		}
		probes := 0
		for _, d := range w.p.Snapshot().Decisions { // the last 256
			if d.Reason == "probe" {
				probes++
			}
		}
		if budget < 0 {
			// The ReprobeEvery schedule alone: every 100 decisions.
			if probes > 3 {
				t.Fatalf("without a budget: %d probes in 256 decisions, want at most 3", probes)
			}
			continue
		}
		if probes < 15 || probes > 26 {
			t.Fatalf("with a budget: %d probes in 256 decisions, want about 25 (every 10)\n%s", probes, dump(w.p))
		}
		w.cpu = lin(0, 8) // the workers now 0.8x one core
		switched := -1
		for i := range 300 {
			if w.run(n); !w.oneCore {
				if w.run(n); !w.oneCore {
					switched = i
					break
				}
			}
		}
		if switched < 0 || switched > 25 {
			t.Fatalf("on the workers after %d tasks, want at most 25\n%s", switched, dump(w.p))
		}
		if km, _ := w.p.Snapshot().Model(w.id); float64(km.ExploreCost) > budget*float64(km.RunTime)*1.001 {
			t.Fatalf("probes cost %v, over %g of the run time %v", km.ExploreCost, budget, km.RunTime)
		}
	}
}

// TestExploreBudgetPricesFirstRunByDeviceLatency: a kernel's first runs
// on a device are priced at the shortest time the device took for any
// kernel (its fixed latency is every kernel's): once one kernel has shown
// the GPU takes 1 ms at the least, a second kernel whose tasks take
// 20 us on the CPU does not try it until its budget pays for a
// millisecond, while the first kernel, which had nothing to go by, paid
// for its first runs at once.
func TestExploreBudgetPricesFirstRunByDeviceLatency(t *testing.T) {
	freezeClock(t)
	w := newWorld(Options{TrackEvery: 1, SharedCores: true, ExploreBudget: 0.02, ReprobeEvery: -1})
	w.cpu, w.gpu = lin(0, 5), lin(time.Millisecond, 50)
	const n = 4096 // CPU 20 us, GPU 1.2 ms; a 64-item slice 1 ms
	gpuTasks := func(w *world, tasks int) (first int, count int) {
		first = -1
		for i := range tasks {
			if where, _ := w.run(n); where == sched.GPU {
				count++
				if first < 0 {
					first = i
				}
			}
		}
		return first, count
	}
	if first, _ := gpuTasks(w, 100); first < 0 || first > 10 {
		t.Fatalf("first kernel: GPU first tried at task %d, want within 10 (nothing to price it by)\n%s", first, dump(w.p))
	}
	w2 := *w
	w2.id, w2.k.Name = 8, "sim2"
	// 1 ms at 2% of 20 us tasks: about 2500 tasks before the first try.
	if first, count := gpuTasks(&w2, 2000); count != 0 {
		t.Fatalf("second kernel: GPU tried at task %d (%d times) within 2000 tasks of 20 us\n%s", first, count, dump(w.p))
	}
	if first, _ := gpuTasks(&w2, 1000); first < 0 {
		t.Fatalf("second kernel: GPU never tried in 3000 tasks\n%s", dump(w.p))
	}
}
