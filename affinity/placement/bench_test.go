package placement

import (
	"fmt"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// Benchmarks of placement on lavapipe, all in one process: the same tasks
// run always on CPU workers, always on the GPU, and Auto (the Placer,
// warmed up before the timer starts). The device is opened without
// validation, so that the driver is timed rather than the layer. Run:
//
//	go test -run '^$' -bench 'Placement|CoExec' ./affinity/placement/

// benchEnv returns a GPU environment for benchmarks with the given Placer
// options.
func benchEnv(b *testing.B, opts Options) *gpuEnv {
	return newGPUEnv(b, false, opts)
}

func (e *gpuEnv) run(b *testing.B, task *sched.Task) {
	id, err := e.m.Add(task)
	if err != nil {
		b.Fatal(err)
	}
	if err := e.m.Wait(id); err != nil {
		b.Fatal(err)
	}
}

// GPU last: after GPU work lavapipe's threads linger and slow whatever runs next.
var policies = []sched.Affinity{sched.AnyWorker, sched.Auto, sched.GPU}

// BenchmarkPlacement: one task of one size per operation, for each size
// and policy. Auto should be within 5% of the better fixed policy at
// every size.
func BenchmarkPlacement(b *testing.B) {
	r := rng(11)
	type bcase struct {
		name string
		task sched.Task
	}
	var cases []bcase
	for _, n := range []int{64, 4096, 65536} {
		t, _ := chainTask(r, n)
		cases = append(cases, bcase{fmt.Sprintf("chain-%d", n), t})
	}
	for _, n := range []int{4096, 1 << 20} {
		t, _ := saxpyTask(r, n)
		cases = append(cases, bcase{fmt.Sprintf("saxpy-%d", n), t})
	}
	e := benchEnv(b, Options{NoCoExec: true, SharedCores: true})
	for _, c := range cases {
		for _, pol := range policies {
			b.Run(c.name+"/"+Affinity(pol).String(), func(b *testing.B) {
				task := c.task
				task.Affinity = pol
				if pol == sched.Auto {
					for range 2*e.p.opts.Explore + 2 { // exploration, untimed
						e.run(b, &task)
					}
				}
				gpu := 0
				b.ReportAllocs()
				for b.Loop() {
					e.run(b, &task)
					if e.last.where == sched.GPU {
						gpu++
					}
				}
				if pol == sched.Auto {
					b.ReportMetric(float64(gpu)/float64(b.N), "gpu-share")
				}
			})
		}
	}
}

// BenchmarkPlacementInterleaved: each operation runs the same task three
// ways, CPU workers, GPU and Auto, in a random order, so that the load
// of other processes on this shared machine hits the three alike; it
// reports each policy's median time, auto/best, the ratio of Auto's
// median to the better fixed policy's (goal: at most 1.05), and the same
// ratio of the means (which counts Auto's explorations and probes, but
// also every load spike).
func BenchmarkPlacementInterleaved(b *testing.B) {
	r := rng(11)
	type bcase struct {
		name string
		task sched.Task
	}
	var cases []bcase
	for _, n := range []int{64, 4096, 65536} {
		t, _ := chainTask(r, n)
		cases = append(cases, bcase{fmt.Sprintf("chain-%d", n), t})
	}
	for _, n := range []int{4096, 65536, 1 << 20} {
		t, _ := saxpyTask(r, n)
		cases = append(cases, bcase{fmt.Sprintf("saxpy-%d", n), t})
	}
	e := benchEnv(b, Options{NoCoExec: true, SharedCores: true})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			tasks := [3]sched.Task{c.task, c.task, c.task}
			for i, pol := range policies {
				tasks[i].Affinity = pol
			}
			for range 2*e.p.opts.Explore + 2 { // exploration, untimed
				e.run(b, &tasks[1])
			}
			const keep = 2048
			var times [3][keep]time.Duration
			var sum [3]time.Duration
			var nt, gpu int
			b.ReportAllocs()
			order := [3]int{0, 1, 2}
			for b.Loop() {
				r.Shuffle(3, func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, k := range order {
					t0 := time.Now()
					e.run(b, &tasks[k])
					dt := time.Since(t0)
					sum[k] += dt
					if nt < keep {
						times[k][nt] = dt
					}
					if k == 1 && e.last.where == sched.GPU {
						gpu++
					}

				}
				nt++
			}
			b.ReportMetric(float64(gpu)/float64(nt), "gpu-share")
			var med [3]time.Duration
			for k := range 3 {
				med[k] = medianDur(times[k][:min(nt, keep)])
			}
			b.ReportMetric(float64(med[0].Nanoseconds())/1e3, "cpu-us")
			b.ReportMetric(float64(med[1].Nanoseconds())/1e3, "auto-us")
			b.ReportMetric(float64(med[2].Nanoseconds())/1e3, "gpu-us")
			b.ReportMetric(float64(med[1])/float64(min(med[0], med[2])), "auto/best")
			b.ReportMetric(float64(sum[1])/float64(min(sum[0], sum[2])), "mean-auto/best")
		})
	}
}

// BenchmarkPlacementMixed: one operation is a frame of tasks of mixed
// kernels and sizes, added together under a join and waited for, so that
// Auto also balances queued work.
func BenchmarkPlacementMixed(b *testing.B) {
	r := rng(12)
	var frame []sched.Task
	for range 4 {
		t, _ := chainTask(r, 64)
		frame = append(frame, t)
		t, _ = saxpyTask(r, 65536)
		frame = append(frame, t)
	}
	for range 2 {
		t, _ := chainTask(r, 16384)
		frame = append(frame, t)
	}
	t, _ := saxpyTask(r, 1<<20)
	frame = append(frame, t)
	for _, shared := range []bool{true, false} {
		e := benchEnv(b, Options{NoCoExec: true, SharedCores: shared})
		for _, pol := range policies {
			if !shared && pol != sched.Auto {
				continue
			}
			name := Affinity(pol).String()
			if pol == sched.Auto && !shared {
				name = "auto-unshared"
			}
			b.Run(name, func(b *testing.B) {
				tasks := make([]sched.Task, len(frame))
				copy(tasks, frame)
				runFrame := func() {
					join, err := e.m.Create(&sched.Task{})
					if err != nil {
						b.Fatal(err)
					}
					for i := range tasks {
						tasks[i].Affinity = pol
						tasks[i].Parent = join
						if _, err := e.m.Add(&tasks[i]); err != nil {
							b.Fatal(err)
						}
					}
					must(b, e.m.Run(join))
					must(b, e.m.Wait(join))
				}
				if pol == sched.Auto {
					for range 2*e.p.opts.Explore + 2 {
						runFrame()
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					runFrame()
				}
			})
		}
	}
}

// BenchmarkCoExec: 1M-vertex skinning (the crowd's shape: 256 characters
// of 4096 vertices, 90 bones; kernels.SkinLBS, storage palette), where the
// CPU workers are the faster device, and the chain kernel over 256K items,
// where lavapipe is. Each operation runs the task four ways in a random
// order: on CPU workers, on the GPU, split between both at the ratio of
// their measured rates, and Auto with co-execution allowed (SharedCores
// off, so that the Placer has to learn what co-execution costs). It
// reports the median times, split/best and auto/best (over the better
// single device), and the share of Auto runs that co-executed.
func BenchmarkCoExec(b *testing.B) {
	skin, _ := instancedSkinTask(rng(13), 256, 4096, 90)
	chain, _ := chainTask(rng(14), 1<<18)
	for _, c := range []struct {
		name string
		task sched.Task
	}{{"skin-1M", skin}, {"chain-256K", chain}} {
		b.Run(c.name, func(b *testing.B) {
			e := benchEnv(b, Options{CoExecMin: 1 << 16})
			n := c.task.Data.Elements
			var tasks [4]sched.Task // cpu, gpu, split, auto
			for i, a := range []sched.Affinity{sched.AnyWorker, sched.GPU, sched.Auto, sched.Auto} {
				tasks[i] = c.task
				tasks[i].Affinity = a
			}
			best := func(t *sched.Task) time.Duration {
				d := time.Duration(1 << 62)
				for range 3 {
					t0 := time.Now()
					e.run(b, t)
					d = min(d, time.Since(t0))
				}
				return d
			}
			tc, tg := best(&tasks[0]), best(&tasks[1])
			// The GPU's share of the items in proportion to its rate, so
			// that both parts take the same time if they do not slow each
			// other down.
			split := &fixedSplit{uint32(float64(n)*float64(tc)/float64(tc+tg)) &^ 63}
			for range 2*e.p.opts.Explore + 4 { // Auto's exploration, untimed
				e.run(b, &tasks[3])
			}
			const keep = 512
			var times [4][keep]time.Duration
			var nt, co int
			b.ReportAllocs()
			order := [4]int{0, 1, 2, 3}
			r := rng(15)
			for b.Loop() {
				r.Shuffle(4, func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, k := range order {
					if k == 2 {
						e.last.p = split
					}
					t0 := time.Now()
					e.run(b, &tasks[k])
					if nt < keep {
						times[k][nt] = time.Since(t0)
					}
					e.last.p = e.p
					if k == 3 && e.last.split > 0 {
						co++
					}
				}
				nt++
			}
			var med [4]time.Duration
			for k := range 4 {
				med[k] = medianDur(times[k][:min(nt, keep)])
			}
			single := float64(min(med[0], med[1]))
			b.ReportMetric(float64(med[0].Microseconds()), "cpu-us")
			b.ReportMetric(float64(med[1].Microseconds()), "gpu-us")
			b.ReportMetric(float64(med[2].Microseconds()), "split-us")
			b.ReportMetric(float64(med[3].Microseconds()), "auto-us")
			b.ReportMetric(float64(med[2])/single, "split/best")
			b.ReportMetric(float64(med[3])/single, "auto/best")
			b.ReportMetric(float64(co)/float64(nt), "coexec-share")
			b.ReportMetric(float64(split.n)/float64(n), "gpu-part")
		})
	}
}
