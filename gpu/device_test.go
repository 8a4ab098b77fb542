package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/sched"
)

// noDriver hides every Vulkan driver from the loader.
func noDriver(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no_icd.json")
	t.Setenv("VK_ICD_FILENAMES", missing)
	t.Setenv("VK_DRIVER_FILES", missing)
}

func TestNoDriverSaysWhatToInstall(t *testing.T) {
	device(t, false) // skip (or fail under CI) without Vulkan at all
	noDriver(t)
	d, err := Open(Options{})
	if err == nil {
		d.Close()
		t.Fatal("Open succeeded without a driver")
	}
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "mesa-vulkan-drivers libvulkan1 libvulkan-dev") {
		t.Fatalf("err = %v, want ErrNoDevice saying what to install", err)
	}
}

// tbStub records the test helper's verdict instead of ending the test.
type tbStub struct {
	testing.TB
	verdict string
}

func (s *tbStub) Helper() {}
func (s *tbStub) Fatalf(f string, a ...any) {
	s.verdict = "fatal: " + fmt.Sprintf(f, a...)
	panic(s)
}
func (s *tbStub) Skipf(f string, a ...any) {
	s.verdict = "skip: " + fmt.Sprintf(f, a...)
	panic(s)
}
func (s *tbStub) Fatal(a ...any) { s.Fatalf("%s", fmt.Sprint(a...)) }

func helperVerdict(t *testing.T) string {
	stub := &tbStub{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != any(stub) {
				panic(r)
			}
		}()
		d := openTestDevice(stub, Options{})
		d.Close()
		stub.verdict = "opened"
	}()
	return stub.verdict
}

// TestNoDevicePolicy: without a device the tests skip, but fail when
// CI=true.
func TestNoDevicePolicy(t *testing.T) {
	device(t, false)
	noDriver(t)
	t.Setenv("CI", "true")
	if v := helperVerdict(t); !strings.HasPrefix(v, "fatal: no Vulkan device") {
		t.Errorf("CI=true: %q, want a failure", v)
	}
	t.Setenv("CI", "")
	if v := helperVerdict(t); !strings.HasPrefix(v, "skip: ") {
		t.Errorf("without CI: %q, want a skip", v)
	}
}

func TestDeviceOverride(t *testing.T) {
	name := device(t, false).Name()
	t.Setenv(EnvDevice, strings.ToUpper(name[:4]))
	d, err := Open(Options{})
	must(t, err)
	if sel := d.Selection(); sel.Chosen.Name != name || !strings.Contains(sel.Reason, EnvDevice) {
		t.Errorf("selection %v", sel)
	}
	d.Close()
	for _, bad := range []string{"no-such-gpu", "99"} {
		t.Setenv(EnvDevice, bad)
		if _, err := Open(Options{}); !errors.Is(err, ErrDeviceOverride) || errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), bad) {
			t.Fatalf("%s=%s: err = %v, want ErrDeviceOverride (not ErrNoDevice) naming it", EnvDevice, bad, err)
		}
	}
	t.Run("no driver", func(t *testing.T) {
		// Without a driver, a named device is still an override error.
		noDriver(t)
		if _, err := Open(Options{}); !errors.Is(err, ErrDeviceOverride) || errors.Is(err, ErrNoDevice) {
			t.Fatalf("%s=99 without a driver: err = %v, want ErrDeviceOverride", EnvDevice, err)
		}
	})
	d, err = Open(Options{Device: "0"}) // the option wins over the variable
	must(t, err)
	if sel := d.Selection(); !strings.Contains(sel.Reason, "Options.Device") {
		t.Errorf("selection %v", sel)
	}
	d.Close()
	devs, err := Devices()
	must(t, err)
	if len(devs) == 0 || devs[0].Name == "" {
		t.Fatalf("Devices() = %v", devs)
	}
}

// TestValidationLayerCatchesErrors proves that the tests' validation check
// is not vacuous: a deliberate misuse is reported.
func TestValidationLayerCatchesErrors(t *testing.T) {
	d := openTestDevice(t, Options{})
	b, _, _, r := d.shim.CreateBuffer(0, vk.BufferUsageStorageBufferBit)
	if r == vk.Success && b != 0 {
		d.shim.DestroyBuffer(b)
	}
	must(t, d.Close())
	err := d.ValidationErr()
	if !errors.Is(err, ErrValidation) || !strings.Contains(err.Error(), "VUID-VkBufferCreateInfo-size-00912") {
		t.Fatalf("ValidationErr() = %v, want the size-0 buffer reported", err)
	}
}

func TestValidationRequiresLayer(t *testing.T) {
	device(t, false)
	t.Setenv("VK_LAYER_PATH", t.TempDir())
	t.Setenv("VK_ADD_LAYER_PATH", "")
	if !vk.HasInstanceLayer(validationLayer) {
		_, err := Open(Options{Validation: true})
		if err == nil || !strings.Contains(err.Error(), "vulkan-validationlayers") {
			t.Fatalf("Open with validation but no layer: %v", err)
		}
	} else {
		t.Log("the validation layer is still visible (installed in a system path)")
	}
}

func TestPipelineCacheFile(t *testing.T) {
	device(t, false)
	file := filepath.Join(t.TempDir(), "pipelines.bin")
	d, err := Open(Options{PipelineCacheFile: file, Validation: true})
	must(t, err)
	reg := sched.NewRegistry()
	must(t, reg.Register(kSaxpy, sched.Kernel{Name: "saxpy", Kind: sched.Streaming,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}, {Name: "y", Stride: 4}}, Out: f4,
		CPU: saxpyCPU, GPU: &Binding{SPIRV: saxpySPV}}))
	must(t, d.PreparePipelines(reg))
	must(t, d.Close())
	must(t, d.ValidationErr())
	if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		t.Fatalf("pipeline cache file: %v %v", st, err)
	}
	d, err = Open(Options{PipelineCacheFile: file, Validation: true}) // seeded from the file
	must(t, err)
	data, err := os.ReadFile(file)
	must(t, err)
	if !cacheMatches(data, d.sel.Chosen.VendorID, d.sel.Chosen.DeviceID, d.cacheUUID) {
		t.Errorf("the device's own cache file does not match its header (%x)", data[:min(32, len(data))])
	}
	must(t, d.PreparePipelines(reg))
	must(t, d.Close())
	must(t, d.ValidationErr())

	// Another device's (or driver version's) cache, or garbage, is
	// ignored rather than handed to the driver.
	other := append([]byte(nil), data...)
	other[16] ^= 0xff // pipelineCacheUUID
	if cacheMatches(other, d.sel.Chosen.VendorID, d.sel.Chosen.DeviceID, d.cacheUUID) || cacheMatches(data[:20], d.sel.Chosen.VendorID, d.sel.Chosen.DeviceID, d.cacheUUID) {
		t.Error("a foreign or truncated cache header matches")
	}
	for _, bad := range [][]byte{other, []byte("not a pipeline cache at all, just some bytes")} {
		must(t, os.WriteFile(file, bad, 0o644))
		d, err = Open(Options{PipelineCacheFile: file, Validation: true})
		must(t, err)
		must(t, d.PreparePipelines(reg))
		must(t, d.Close())
		must(t, d.ValidationErr())
	}
}

func TestChunkedDispatch(t *testing.T) {
	dev := device(t, false)
	n := int(dev.lim.maxGroupCount) + 1000
	if n > 1<<22 {
		t.Skipf("maxComputeWorkGroupCount[0] = %d: too many items to exceed it", dev.lim.maxGroupCount)
	}
	reg := testRegistry(t)
	const kSaxpy1 = 100
	must(t, reg.Register(kSaxpy1, sched.Kernel{Name: "saxpy-ls1", Kind: sched.Streaming, Grain: 1 << 30,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}, {Name: "y", Stride: 4}}, Out: f4,
		CPU: saxpyCPU, GPU: &Binding{SPIRV: saxpySPV, LocalSize: 1}}))
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg})
	x, y, z := ramp(n, 1, 0), ramp(n, 2, 0), make([]float32, n)
	task := saxpyTask(1, x, y, z)
	task.Kernel = kSaxpy1
	must(t, e.main.Wait(e.add(t, task)))
	for i := range z {
		if z[i] != x[i]+y[i] {
			t.Fatalf("z[%d] = %v, want %v (%d items in workgroups of 1, over the %d-group limit)", i, z[i], x[i]+y[i], n, dev.lim.maxGroupCount)
		}
	}
}

// TestRoundTripAllocs: a GPU task's round trip allocates nothing in steady
// state (scheduler, executor, cgo calls included).
func TestRoundTripAllocs(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{})
	x, y, z := ramp(64, 1, 0), ramp(64, 1, 1), make([]float32, 64)
	task := saxpyTask(2, x, y, z)
	run := func() {
		id, err := e.main.Add(&task)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.main.Wait(id); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		run()
	}
	if a := testing.AllocsPerRun(200, run); a > 0.05 {
		t.Fatalf("%.2f allocations per GPU round trip, want 0", a)
	}
}
