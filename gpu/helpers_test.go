package gpu

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// Test kernels: GLSL in testdata/*.comp, SPIR-V beside it (testdata/gen.sh).
var (
	//go:embed testdata/saxpy.spv
	saxpySPV []byte
	//go:embed testdata/spin.spv
	spinSPV []byte
	//go:embed testdata/sum4.spv
	sum4SPV []byte
	//go:embed testdata/poly.spv
	polySPV []byte
)

const (
	kSaxpy sched.KernelID = iota + 1
	kSpin
	kSum4
	kPoly
	kFill  // CPU only: x[i] = i
	kTotal // CPU only, simple: sums Data.(*totalArgs).x
	kBad   // invalid SPIR-V
)

func saxpyCPU(_ *sched.Ctx, d *sched.TaskData) error {
	a := math.Float32frombits(d.Params[0])
	x, y, z := sched.View[float32](d.In[0]), sched.View[float32](d.In[1]), sched.View[float32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		z[i] = a*x[i] + y[i]
	}
	return nil
}

func lcg(s, n uint32) uint32 {
	for range n {
		s = s*1664525 + 1013904223
	}
	return s
}

func spinCPU(_ *sched.Ctx, d *sched.TaskData) error {
	v, o := sched.View[uint32](d.In[0]), sched.View[uint32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		o[i] = lcg(v[i], d.Params[0])
	}
	return nil
}

func sum4CPU(_ *sched.Ctx, d *sched.TaskData) error {
	v, o := sched.View[uint32](d.In[0]), sched.View[uint32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		o[i] = v[4*i] + v[4*i+1] + v[4*i+2] + v[4*i+3]
	}
	return nil
}

func polyCPU(_ *sched.Ctx, d *sched.TaskData) error {
	x, c, z := sched.View[float32](d.In[0]), sched.View[[4]float32](d.In[1])[0], sched.View[float32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		z[i] = c[0] + c[1]*x[i]
	}
	return nil
}

func fillCPU(_ *sched.Ctx, d *sched.TaskData) error {
	x := sched.View[float32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		x[i] = float32(i)
	}
	return nil
}

// totalArgs is kTotal's kernel data (simple kernels get no streams).
type totalArgs struct {
	x   []float32
	sum float64
}

func totalCPU(_ *sched.Ctx, d *sched.TaskData) error {
	a := d.Data.(*totalArgs)
	for _, v := range a.x {
		a.sum += float64(v)
	}
	return nil
}

var f4 = []sched.StreamSpec{{Name: "x", Stride: 4}}

func testRegistry(t testing.TB) *sched.Registry {
	reg := sched.NewRegistry()
	must(t, reg.Register(kSaxpy, sched.Kernel{Name: "saxpy", Kind: sched.Streaming, Grain: 4096,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}, {Name: "y", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "z", Stride: 4}},
		CPU: saxpyCPU, GPU: &Binding{SPIRV: saxpySPV, LocalSize: 256}}))
	must(t, reg.Register(kSpin, sched.Kernel{Name: "spin", Kind: sched.Streaming, Grain: 1 << 20,
		In: f4, Out: f4, CPU: spinCPU, GPU: &Binding{SPIRV: spinSPV, LocalSize: 32}}))
	must(t, reg.Register(kSum4, sched.Kernel{Name: "sum4", Kind: sched.Reduce, Factor: 4, Grain: 4096,
		In: f4, Out: f4, CPU: sum4CPU, GPU: &Binding{SPIRV: sum4SPV, LocalSize: 128}}))
	must(t, reg.Register(kPoly, sched.Kernel{Name: "poly", Kind: sched.Streaming, Grain: 4096,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}, {Name: "coef", Stride: 16, Rate: sched.Whole}},
		Out: f4, CPU: polyCPU,
		GPU: &Binding{SPIRV: polySPV, ItemsPerInvocation: 4, UniformIn: [4]bool{false, true}}}))
	must(t, reg.Register(kFill, sched.Kernel{Name: "fill", Kind: sched.Streaming, Out: f4, CPU: fillCPU}))
	must(t, reg.Register(kTotal, sched.Kernel{Name: "total", Kind: sched.Simple, CPU: totalCPU}))
	// kBad's module is broken after registration (Register refuses a bad
	// one), so that its tasks exercise the executor's own check.
	must(t, reg.Register(kBad, sched.Kernel{Name: "bad", Kind: sched.Streaming, In: f4, Out: f4, CPU: spinCPU,
		GPU: &Binding{SPIRV: spinSPV}}))
	bad := append([]byte(nil), spinSPV...)
	bad[0] ^= 0xff // wrong magic
	reg.Lookup(kBad).GPU = &Binding{SPIRV: bad}
	return reg
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// openTestDevice opens a device with validation. Without any Vulkan device
// it skips, unless CI=true, where it fails: CI must run these tests.
func openTestDevice(t testing.TB, opts Options) *Device {
	t.Helper()
	opts.Validation = true
	d, err := Open(opts)
	if errors.Is(err, ErrNoDevice) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Vulkan device, and CI=true requires one: %v", err)
		}
		t.Skipf("skipping: no Vulkan device (with CI=true this fails): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Shared devices (device creation and shader compilation are slow); closed
// in TestMain, which then fails on any validation message, leak reports of
// vkDestroyDevice/vkDestroyInstance included.
var (
	sharedMu   sync.Mutex
	sharedDevs = map[bool]*Device{}
)

// device returns the shared device: staging selects the one with
// ForceStaging (the discrete-GPU memory path).
func device(t testing.TB, staging bool) *Device {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if d := sharedDevs[staging]; d != nil {
		return d
	}
	d := openTestDevice(t, Options{ForceStaging: staging})
	sharedDevs[staging] = d
	return d
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDev != nil {
		if err := benchDev.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "gpu: closing the benchmark device:", err)
			code = 1
		}
	}
	for _, d := range sharedDevs {
		if err := d.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "gpu: closing the shared test device:", err)
			code = 1
		}
		if err := d.ValidationErr(); err != nil {
			fmt.Fprintln(os.Stderr, "gpu: shared test device:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// env is a scheduler with a GPU executor on a device, and its main thread.
type env struct {
	dev  *Device
	exec *Executor
	s    *sched.Scheduler
	main *sched.Ctx
}

// newEnv builds an env; cleanup closes the scheduler (and so the
// executor) and fails the test on new validation errors.
func newEnv(t testing.TB, dev *Device, eo ExecutorOptions, cfg sched.Config) *env {
	t.Helper()
	_, errs0 := dev.Messages()
	if cfg.Kernels == nil {
		cfg.Kernels = testRegistry(t)
	}
	exec, err := NewExecutor(dev, eo)
	must(t, err)
	s, err := sched.New(cfg)
	if err != nil {
		exec.Close()
		t.Fatal(err)
	}
	must(t, s.AttachExecutor(sched.ExecGPU, exec))
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("sched Close: %v", err)
		}
		if msgs, errs := dev.Messages(); errs > errs0 {
			for _, m := range msgs {
				if m.Severity == SeverityError {
					t.Errorf("validation: %v", m)
				}
			}
		}
	})
	return &env{dev: dev, exec: exec, s: s, main: m}
}

func (e *env) add(t testing.TB, task sched.Task) sched.TaskID {
	t.Helper()
	id, err := e.main.Add(&task)
	must(t, err)
	return id
}

func saxpyTask(a float32, x, y, z []float32) sched.Task {
	t := sched.Task{Kernel: kSaxpy, Affinity: sched.GPU}
	t.Data.Params[0] = math.Float32bits(a)
	t.Data.Elements = uint32(len(x))
	t.Data.In[0], t.Data.In[1] = sched.StreamOf(x), sched.StreamOf(y)
	t.Data.Out[0] = sched.StreamOf(z)
	return t
}

func ramp(n int, scale, off float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%1000)*scale + off
	}
	return x
}

// closeTo compares GPU and CPU results within 1e-6 relative (GLSL
// `precise` makes them equal on lavapipe; other drivers may round fused
// operations differently).
func closeTo(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*math.Max(1, math.Abs(float64(want[i]))) {
			t.Fatalf("%s: [%d] = %v, want %v (|diff| %g)", what, i, got[i], want[i], d)
		}
	}
}
