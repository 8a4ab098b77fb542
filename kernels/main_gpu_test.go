package kernels

// Helpers of the GPU tests (*_gpu_test.go): every kernel run on a real
// Vulkan device (lavapipe on these machines) through a real scheduler with
// the real gpu.Executor, with the validation layer on. Any debug-report
// message (warning, performance warning or error) fails the test that was
// running when it arrived; TestMain fails the run on messages that arrive
// while the shared devices close (leaked objects). Without any Vulkan
// device the GPU tests skip, unless CI=true, where they fail; under
// KERNELS_GO=1 (fallback_test.go) they skip.

import (
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/sched"
)

// Shared devices: opening one and compiling the kernels' shaders (slow on
// lavapipe the first time) is paid once per test binary.
var shared gputest.Shared

// openDevice returns the shared validated device; staging forces the
// staging-copy memory path of discrete GPUs. It skips (CI=true: fails)
// when there is no Vulkan device.
func openDevice(t testing.TB, staging bool) (*gpu.Device, *gputest.Log) {
	t.Helper()
	skipOnGoPaths(t)
	return shared.Get(t, fmt.Sprintf("staging=%v", staging), gpu.Options{ForceStaging: staging}, func(d *gpu.Device) error {
		reg := sched.NewRegistry()
		if err := Register(reg); err != nil {
			return err
		}
		t0 := time.Now()
		if err := d.PreparePipelines(reg); err != nil {
			return fmt.Errorf("compiling the kernels' pipelines: %w", err)
		}
		t.Logf("device %q (staging %v): pipelines ready in %v", d.Name(), staging, time.Since(t0).Round(time.Millisecond))
		return nil
	})
}

func TestMain(m *testing.M) { os.Exit(gputest.Main(m, &shared)) }

// gpuCounter is an Observer that counts GPU kernel invocations and sums
// their dispatch times (the executor's timestamps). The executor reports a
// job after its Done, so waiters use wait to see all of them.
type gpuCounter struct {
	mu       sync.Mutex
	cond     *sync.Cond
	n        int
	failed   int
	dispatch time.Duration
}

func newGPUCounter() *gpuCounter {
	c := &gpuCounter{}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *gpuCounter) TaskRan(ev *sched.RunEvent) {
	if ev.Where != sched.GPU {
		return
	}
	c.mu.Lock()
	c.n++
	if ev.Err != nil {
		c.failed++
	}
	c.dispatch += time.Duration(ev.Stop - ev.Start)
	c.mu.Unlock()
	c.cond.Broadcast()
}

// wait blocks until n GPU invocations were reported in total and returns
// their summed dispatch time.
func (c *gpuCounter) wait(t testing.TB, n int) time.Duration {
	t.Helper()
	timer := time.AfterFunc(10*time.Second, func() { c.cond.Broadcast() })
	defer timer.Stop()
	deadline := time.Now().Add(10 * time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d GPU invocations reported after 10 s", c.n, n)
		}
		c.cond.Wait()
	}
	return c.dispatch
}

// gpuEnv is a scheduler with every kernel of the package registered and
// the real GPU executor attached, and its registered main thread.
type gpuEnv struct {
	dev  *gpu.Device
	exec *gpu.Executor
	s    *sched.Scheduler
	main *sched.Ctx
	obs  *gpuCounter
}

// newGPUEnv builds a gpuEnv on the shared device. Cleanup closes the
// scheduler (and so the executor) and fails the test on any debug-report
// message that arrived meanwhile.
func newGPUEnv(t testing.TB, staging bool, eo gpu.ExecutorOptions, cfg sched.Config) *gpuEnv {
	t.Helper()
	dev, log := openDevice(t, staging)
	reg := sched.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	cfg.Kernels = reg
	obs := newGPUCounter()
	cfg.Observer = obs
	s, exec, m := gputest.Sched(t, dev, log, cfg, eo)
	return &gpuEnv{dev: dev, exec: exec, s: s, main: m, obs: obs}
}

// run adds the task and waits for it.
func (e *gpuEnv) run(t testing.TB, task sched.Task) {
	t.Helper()
	id, err := e.main.Add(&task)
	if err != nil {
		t.Fatalf("kernel %d: Add: %v", task.Kernel, err)
	}
	if err := e.main.Wait(id); err != nil {
		t.Fatalf("kernel %d on %v: %v", task.Kernel, task.Affinity, err)
	}
}

// forDevices runs f with the direct (host-visible) memory path and with
// the staging-copy path of discrete GPUs.
func forDevices(t *testing.T, f func(t *testing.T, staging bool)) {
	for _, staging := range []bool{false, true} {
		name := "direct"
		if staging {
			name = "staging"
		}
		t.Run(name, func(t *testing.T) { f(t, staging) })
	}
}

// Tolerances of a GPU result against the CPU kernel's (doc.go, "Tolerances").
const (
	tolSkin = 2e-5 // SkinLBS*, SkinDQS*: |gpu-cpu| <= tol*max(1, |cpu|)
	tolPose = 1e-4 // LocalToModel*: the same, errors grow down the chain
	ulpAvg  = 3    // Avg32F32 partial blocks: Vulkan allows 2.5 ULP for division
)

// tolerance describes how kernel id's GPU output must match the CPU's,
// with the rule written out for failure messages.
func tolerance(id sched.KernelID) (rel float64, rule string) {
	switch id {
	case SkinLBS, SkinLBSUniform, SkinDQS, SkinDQSUniform:
		return tolSkin, "|gpu-cpu| <= 2e-5*max(1,|cpu|)"
	case LocalToModel, LocalToModelSkin:
		return tolPose, "|gpu-cpu| <= 1e-4*max(1,|cpu|)"
	case MinMaxF32:
		return 0, "exact, -0 == +0"
	case Avg32F32:
		return 0, "bit-exact for full blocks, 3 ULP for the partial block"
	}
	return 0, "bit-exact"
}

// compareOutput checks output stream o of kernel id: got (GPU) against want
// (CPU), by the kernel's tolerance. n is the number of work items; for
// Avg32F32, partial is the index of the one partial block (or -1).
func compareOutput(t testing.TB, id sched.KernelID, o int, got, want []byte, partial int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("kernel %d output %d: %d bytes, want %d", id, o, len(got), len(want))
	}
	rel, rule := tolerance(id)
	g, w := f32bytes(got), f32bytes(want)
	bad := func(i int) {
		t.Fatalf("kernel %d output %d, float %d: gpu %v (%#08x), cpu %v (%#08x); tolerance %s",
			id, o, i, g[i], math.Float32bits(g[i]), w[i], math.Float32bits(w[i]), rule)
	}
	switch id {
	case SkinLBS, SkinLBSUniform, SkinDQS, SkinDQSUniform, LocalToModel, LocalToModelSkin:
		for i := range g {
			d := math.Abs(float64(g[i]) - float64(w[i]))
			if !(d <= rel*math.Max(1, math.Abs(float64(w[i])))) {
				bad(i)
			}
		}
	case MinMaxF32:
		for i := range g {
			if g[i] != w[i] && !(g[i] != g[i] && w[i] != w[i]) {
				bad(i)
			}
		}
	case Avg32F32:
		for i := range g {
			if i == partial {
				if ulps(g[i], w[i]) > ulpAvg {
					bad(i)
				}
			} else if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				bad(i)
			}
		}
	default:
		if string(got) != string(want) {
			for i := range g {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					t.Fatalf("kernel %d output %d, word %d: gpu %#08x, cpu %#08x; tolerance %s", id, o, i,
						math.Float32bits(g[i]), math.Float32bits(w[i]), rule)
				}
			}
			t.Fatalf("kernel %d output %d differs; tolerance %s", id, o, rule)
		}
	}
}

// ulps is the distance in units in the last place between two finite
// float32 values of the same sign (a large number otherwise).
func ulps(a, b float32) int64 {
	if (a < 0) != (b < 0) {
		if a == b { // +0 and -0
			return 0
		}
		return math.MaxInt64
	}
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	if d < 0 {
		d = -d
	}
	return d
}
