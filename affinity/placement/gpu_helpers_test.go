package placement

import (
	_ "embed"
	"math"
	"os"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/sched"
)

// chain.spv is testdata/chain.comp compiled by testdata/gen.sh.
//
//go:embed testdata/chain.spv
var chainSPV []byte

// kChain is a compute-bound float kernel: out[i] = f^Params[0](in[i]) with
// f(s) = s*a + b. A SIMD device runs many items at once while the Go twin
// runs one at a time, so on lavapipe the "GPU" wins large tasks of it and
// loses small ones (its ~100 us submission latency): a kernel with a real
// crossover for the placement tests. Its ID is a fixed one of the tests'
// own: the last below the handed-out range (package kernels' are the
// first fixed IDs).
const kChain = sched.FirstHandedID - 1

func chainCPU(_ *sched.Ctx, d *sched.TaskData) error {
	v, o := sched.View[float32](d.In[0]), sched.View[float32](d.Out[0])
	a, b := math.Float32frombits(d.Params[1]), math.Float32frombits(d.Params[2])
	for i := d.Begin; i < d.End; i++ {
		s := v[i]
		for range d.Params[0] {
			s = float32(s*a) + b
		}
		o[i] = s
	}
	return nil
}

const chainIters = 256

func chainTask(r interface{ Float64() float64 }, n int) (sched.Task, []float32) {
	in, out := make([]float32, n), make([]float32, n)
	for i := range in {
		in[i] = float32(r.Float64())
	}
	t := sched.Task{Kernel: kChain}
	t.Data.Elements = uint32(n)
	t.Data.Params[0] = chainIters
	t.Data.Params[1], t.Data.Params[2] = math.Float32bits(0.999), math.Float32bits(0.001)
	t.Data.In[0], t.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
	return t, out
}

// gpuRegistry is kernelRegistry plus kChain.
func gpuRegistry(t testing.TB) *sched.Registry {
	reg := kernelRegistry(t)
	f4 := []sched.StreamSpec{{Name: "x", Stride: 4}}
	must(t, reg.Register(kChain, sched.Kernel{Name: "chain", Kind: sched.Streaming, Grain: 1024,
		In: f4, Out: f4, CPU: chainCPU, GPU: &gpu.Binding{SPIRV: chainSPV, LocalSize: 64}}))
	return reg
}

// The shared devices: tests use one with validation (TestMain fails the run
// on any validation message); benchmarks one without, so that they time
// the driver rather than the layer. Without any Vulkan device the tests
// skip, unless CI=true, where they fail: CI must run them.
var shared gputest.Shared

func device(t testing.TB, validation bool) *gpu.Device {
	t.Helper()
	if validation {
		d, _ := shared.Get(t, "validated", gpu.Options{}, nil)
		return d
	}
	d, _ := shared.GetUnvalidated(t, "bench", gpu.Options{}, nil)
	return d
}

func TestMain(m *testing.M) { os.Exit(gputest.Main(m, &shared)) }

// gpuEnv is a scheduler with a GPU executor, a Placer as placer and
// observer, and its main thread.
type gpuEnv struct {
	dev  *gpu.Device
	exec *gpu.Executor
	s    *sched.Scheduler
	m    *sched.Ctx
	p    *Placer
	last lastPlace
}

// lastPlace wraps the Placer to record its latest decision (Place runs
// synchronously in Add for a task without dependency).
type lastPlace struct {
	p     sched.Placer
	where sched.Affinity
	split uint32
}

func (l *lastPlace) Place(id sched.KernelID, k *sched.Kernel, d *sched.TaskData) (sched.Affinity, uint32) {
	l.where, l.split = l.p.Place(id, k, d)
	return l.where, l.split
}

func newGPUEnv(t testing.TB, validation bool, opts Options) *gpuEnv {
	t.Helper()
	dev := device(t, validation)
	_, errs0 := dev.Messages()
	reg := gpuRegistry(t)
	must(t, dev.PreparePipelines(reg)) // the first compilation costs 65-100 ms
	exec, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{})
	must(t, err)
	e := &gpuEnv{dev: dev, exec: exec, p: New(opts)}
	e.last.p = e.p
	s, err := sched.New(sched.Config{Kernels: reg, Placer: &e.last, Observer: e.p})
	if err != nil {
		exec.Close()
		t.Fatal(err)
	}
	must(t, s.AttachExecutor(sched.ExecGPU, exec))
	e.p.Attach(s)
	e.s = s
	e.m, err = s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("sched Close: %v", err)
		}
		if msgs, errs := dev.Messages(); errs > errs0 {
			for _, m := range msgs {
				if m.Severity == gpu.SeverityError {
					t.Errorf("validation: %v", m)
				}
			}
		}
	})
	return e
}
