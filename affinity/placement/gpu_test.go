package placement

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// TestChainKernel: the test kernel's shader agrees with its Go twin.
func TestChainKernel(t *testing.T) {
	e := newGPUEnv(t, true, Options{})
	task, out := chainTask(rng(1), 1000)
	want := reference(t, e.s.Kernels(), task)
	task.Affinity = sched.GPU
	must(t, runTask(t, e.m, task))
	got := sched.View[float32](sched.StreamOf(out))
	for i, w := range sched.View[float32](sched.Stream{Bytes: want, Stride: 4, Count: uint32(len(want) / 4)}) {
		if math.Abs(float64(got[i]-w)) > 1e-6*math.Max(1, math.Abs(float64(w))) {
			t.Fatalf("chain[%d]: GPU %v, CPU %v", i, got[i], w)
		}
	}
}

// TestSPIRVCurrent: testdata/*.spv are what testdata/gen.sh makes of
// the sources.
func TestSPIRVCurrent(t *testing.T) {
	glslc, err := exec.LookPath("glslc")
	if err != nil {
		t.Skip("glslc not installed (Debian package glslc)")
	}
	out := t.TempDir() + "/chain.spv"
	if b, err := exec.Command(glslc, "--target-env=vulkan1.0", "-O", "-o", out, "testdata/chain.comp").CombinedOutput(); err != nil {
		t.Fatalf("glslc: %v\n%s", err, b)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, chainSPV) {
		t.Fatal("testdata/chain.spv is stale: run sh testdata/gen.sh")
	}
}

// placeCase is a (kernel, size) of the placement test.
type placeCase struct {
	name string
	task sched.Task
	// measured wall times (Add to Wait) of direct CPU and GPU runs, and
	// where Auto placed it
	cpu, gpu []time.Duration
	auto     []sched.Affinity
}

// TestAutoPlacementLavapipe: after warm-up, Auto placement picks the
// device that direct measurements in the same test show faster. Each round
// runs every case three ways (CPU workers, GPU, Auto) in a shuffled order,
// so that load from other processes on this shared machine hits all three
// alike. Only cases with a clear winner count (medians 1.5x apart, middle
// halves of the runs apart); across them at least 95% of the Auto
// decisions must be the faster device, and at least half of all
// decisions must count.
func TestAutoPlacementLavapipe(t *testing.T) {
	r := rng(7)
	var cases []*placeCase
	for _, n := range []int{16, 64, 4096, 16384, 65536} {
		task, _ := chainTask(r, n)
		cases = append(cases, &placeCase{name: fmt.Sprintf("chain/%d", n), task: task})
	}
	for _, n := range []int{1024, 65536, 1 << 20} {
		task, _ := saxpyTask(r, n)
		cases = append(cases, &placeCase{name: fmt.Sprintf("saxpy/%d", n), task: task})
	}
	// The race detector slows instrumented Go code 5-20x, unevenly (the
	// memory-bound saxpy most), which moves the crossovers near the
	// measured sizes and makes close calls flip: there the test runs fewer
	// rounds for the race check and wants 90%.
	rounds, want := 12, 0.95
	if raceEnabled {
		rounds, want = 8, 0.90
	}
	// The criterion is statistical and this machine is shared: other
	// processes' load can flip a close size class for a while. A failing
	// attempt is measured again (up to three attempts in all) before the
	// test fails. Each attempt starts from a new Placer and warms it up:
	// a model learned during a load spike (43 ms predicted for a case that
	// ran in 2 ms) would survive into the next attempt, since a Placer
	// re-checks a device only every ReprobeEvery decisions of its own.
	for attempt := 1; ; attempt++ {
		e := newGPUEnv(t, true, Options{NoCoExec: true, SharedCores: true})
		if attempt == 1 {
			t.Logf("device: %v", e.dev.Selection())
		}
		run := func(c *placeCase, a sched.Affinity) time.Duration {
			task := c.task
			task.Affinity = a
			t0 := time.Now()
			must(t, runTask(t, e.m, task))
			return time.Since(t0)
		}
		// Warm-up: until no case is explored any more.
		for round := 0; round < 12; round++ {
			for _, i := range r.Perm(len(cases)) {
				run(cases[i], sched.Auto)
			}
			if round >= 2 && !exploring(e.p, 2*len(cases)) {
				break
			}
		}
		for _, c := range cases {
			c.cpu, c.gpu, c.auto = c.cpu[:0], c.gpu[:0], c.auto[:0]
		}
		failure := measurePlacement(t, e, r, cases, rounds, want, run)
		if failure == "" {
			break
		}
		if attempt == 3 {
			t.Fatal(failure)
		}
		t.Logf("attempt %d: %s; measuring again", attempt, failure)
	}
}

// measurePlacement runs the rounds and returns "" if Auto chose the faster
// device often enough, else why not.
func measurePlacement(t *testing.T, e *gpuEnv, r *rand.Rand, cases []*placeCase, rounds int, want float64, run func(*placeCase, sched.Affinity) time.Duration) string {
	for range rounds {
		for _, i := range r.Perm(len(cases)) {
			c := cases[i]
			for _, w := range r.Perm(3) {
				switch w {
				case 0:
					c.cpu = append(c.cpu, run(c, sched.AnyWorker))
				case 1:
					c.gpu = append(c.gpu, run(c, sched.GPU))
				case 2:
					run(c, sched.Auto)
					c.auto = append(c.auto, e.last.where)
				}
			}
		}
	}
	right, counted, gpuWins := 0, 0, 0
	for _, c := range cases {
		mc, mg := medianDur(c.cpu), medianDur(c.gpu)
		faster, ratio := sched.AnyWorker, float64(mg)/float64(mc)
		if mg < mc {
			faster, ratio = sched.GPU, float64(mc)/float64(mg)
		}
		ok := 0
		for _, a := range c.auto {
			if a == faster {
				ok++
			}
		}
		// A clear winner: 1.5x apart in the medians, and the runs do not
		// overlap in their middle halves (the faster device's upper
		// quartile below the slower one's lower quartile). Under load,
		// lavapipe's times for one case spread over 0.4-3 ms around a CPU
		// time of 1.3 ms; such a case has no faster device to choose.
		fast, slow := c.cpu, c.gpu
		if faster == sched.GPU {
			fast, slow = c.gpu, c.cpu
		}
		decisive := ratio >= 1.5 && quantileDur(fast, 3) < quantileDur(slow, 1)
		t.Logf("%-13s cpu %9v gpu %9v: %v faster by %5.1fx; auto chose it %2d/%d%s", c.name, mc, mg, Affinity(faster), ratio, ok, len(c.auto),
			map[bool]string{true: "", false: " (not counted: too close or overlapping)"}[decisive])
		if decisive {
			right += ok
			counted += len(c.auto)
			if faster == sched.GPU {
				gpuWins++
			}
		}
	}
	var b bytes.Buffer
	e.p.Snapshot().WriteTo(&b)

	t.Logf("model:\n%s", firstLines(b.String(), 14))
	if counted < len(cases)*rounds/2 {
		return fmt.Sprintf("only %d decisions in cases with a clear winner", counted)
	}
	if frac := float64(right) / float64(counted); frac < want {
		for _, d := range e.p.Snapshot().Decisions {
			t.Logf("%5d %6d %v %-7s predicted %v measured %v", d.Kernel, d.Items, Affinity(d.Where), d.Reason, d.Predicted, d.Measured)
		}
		return fmt.Sprintf("Auto chose the faster device in %d of %d decisions (%.1f%%), want %.0f%%", right, counted, 100*frac, 100*want)
	}
	if gpuWins == 0 {
		t.Logf("note: the GPU was not clearly faster for any case on this device")
	}
	return ""
}

// exploring reports whether any of the last n decisions explored.
func exploring(p *Placer, n int) bool {
	d := p.Snapshot().Decisions
	for _, x := range d[max(0, len(d)-n):] {
		if x.Reason == "explore" {
			return true
		}
	}
	return false
}

func medianDur(d []time.Duration) time.Duration { return quantileDur(d, 2) }

// quantileDur returns the q-th quartile of d (q 1-3).
func quantileDur(d []time.Duration, q int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*q/4]
}

func firstLines(s string, n int) string {
	lines := bytes.SplitN([]byte(s), []byte("\n"), n+1)
	return string(bytes.Join(lines[:min(n, len(lines))], []byte("\n")))
}

// TestAutoWithoutGPU: with no GPU executor attached, Auto tasks run on CPU
// workers (also kernels that have a GPU binding), untracked, with correct
// results; without Attach too (the scheduler falls back).
func TestAutoWithoutGPU(t *testing.T) {
	for _, attach := range []bool{true, false} {
		reg := kernelRegistry(t)
		p := New(Options{})
		var ran [numDevices]atomic.Int32
		obs := observerFunc(func(ev *sched.RunEvent) {
			if d, ok := devOf(ev.Where); ok {
				ran[d].Add(1)
			}
		})
		s, err := sched.New(sched.Config{Kernels: reg, Placer: p, Observer: Observers(p, obs), Workers: 1})
		must(t, err)
		if attach {
			p.Attach(s)
		}
		m, err := s.RegisterThread("main")
		must(t, err)
		r := rng(3)
		for _, n := range []int{100, 10_000, 300_000} {
			for range 5 {
				task, out := saxpyTask(r, n)
				want := reference(t, reg, task)
				task.Affinity = sched.Auto
				must(t, runTask(t, m, task))
				if !bytes.Equal(sched.StreamOf(out).Bytes, want) {
					t.Fatalf("saxpy %d: wrong result", n)
				}
			}
		}
		must(t, s.Close())
		if ran[devGPU].Load() != 0 || ran[devSPU].Load() != 0 || ran[devCPU].Load() < 15 {
			t.Fatalf("attach=%v: ran cpu %d gpu %d spu %d times", attach, ran[devCPU].Load(), ran[devGPU].Load(), ran[devSPU].Load())
		}
		if snap := p.Snapshot(); attach && snap.Placed != 0 {
			t.Fatalf("without a GPU %d placements were tracked", snap.Placed)
		}
	}
}

// TestCoExecLavapipe: a skinning task split between the GPU and the CPU
// workers (by a fixed split and by the Placer) gives the CPU kernel's
// result within the kernels' GPU tolerance, and the Placer learns the
// co-execution's real efficiency.
func TestCoExecLavapipe(t *testing.T) {
	e := newGPUEnv(t, true, Options{CoExecMin: 4096, ReprobeEvery: -1})
	task, out := instancedSkinTask(rng(5), 16, 1024, 90) // 16384 vertices
	ref := reference(t, e.s.Kernels(), task)
	want := sched.View[kernels.SkinnedVertex](sched.Stream{Bytes: ref, Stride: 24, Count: uint32(len(ref) / 24)})
	check := func(what string) {
		t.Helper()
		for i := range want {
			for c := range 3 {
				for _, pair := range [][2]float32{{out[i].Pos[c], want[i].Pos[c]}, {out[i].Normal[c], want[i].Normal[c]}} {
					if d := math.Abs(float64(pair[0] - pair[1])); d > 2e-5*math.Max(1, math.Abs(float64(pair[1]))) {
						t.Fatalf("%s: vertex %d differs: %v vs %v", what, i, out[i], want[i])
					}
				}
			}
		}
		clear(out)
	}
	// A fixed split: the first third on the GPU.
	e.last.p = fixedSplit{uint32(len(out) / 3)}
	task.Affinity = sched.Auto
	must(t, runTask(t, e.m, task))
	check("fixed split")
	st := e.exec.KernelStats(kernels.SkinLBS)
	if st.Tasks != 1 || st.Items != uint64(len(out)/3) {
		t.Fatalf("GPU ran %d tasks of %d items, want 1 of %d", st.Tasks, st.Items, len(out)/3)
	}
	// The Placer: explore, then co-execute when its model says so.
	e.last.p = e.p
	split := 0
	for range 14 {
		must(t, runTask(t, e.m, task))
		check("auto")
		if e.last.split > 0 {
			split++
		}
	}
	km, _ := e.p.Snapshot().Model(kernels.SkinLBS)
	t.Logf("co-executed %d of 14 tasks; co-execution efficiency %.2f over %d samples (1 = as predicted)", split, km.CoExecEfficiency, km.CoExecSamples)
}

type fixedSplit struct{ n uint32 }

func (f fixedSplit) Place(sched.KernelID, *sched.Kernel, *sched.TaskData) (sched.Affinity, uint32) {
	return sched.GPU, f.n
}
