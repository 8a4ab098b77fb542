package gpu

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

//go:embed testdata/misbound.spv
var misboundSPV []byte

// scaleKernel is the README's kernel (y = 2x) with the given shader.
func scaleKernel(spv []byte) sched.Kernel {
	return sched.Kernel{Name: "scale", Kind: sched.Streaming,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			x, y := sched.View[float32](d.In[0]), sched.View[float32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				y[i] = 2 * x[i]
			}
			return nil
		},
		GPU: &Binding{SPIRV: spv},
	}
}

// TestMisboundShaderRefused: the reported case. A user's kernel registered
// the README way with its output at binding 1 instead of 4 printed zeros
// (and crashed the validation layer); Register now refuses it and names
// the binding and the streams.
func TestMisboundShaderRefused(t *testing.T) {
	reg := sched.NewRegistry()
	err := reg.Register(100, scaleKernel(misboundSPV))
	if !errors.Is(err, ErrBadBinding) {
		t.Fatalf("Register: err = %v, want ErrBadBinding", err)
	}
	for _, want := range []string{`"scale"`, `shader binding 1 reads input stream 1, but the kernel declares 1 inputs ("x")`,
		`binding 4 (output stream 0 "y") is never stored to`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if reg.Lookup(100) != nil {
		t.Fatal("the refused kernel is registered")
	}
	t.Logf("the user sees: %v", err)

	// The other mismatches Register catches, on the test kernels.
	for _, c := range []struct {
		name string
		k    sched.Kernel
		want string
	}{
		{"element size", func() sched.Kernel {
			k := scaleKernel(saxpySPV)
			k.In = []sched.StreamSpec{{Name: "x", Stride: 6}, {Name: "y", Stride: 4}}
			return k
		}(), `binding 0 (input stream 0 "x") indexes elements of 4 bytes, but the stream's stride is 6 bytes`},
		{"uniform vs storage", sched.Kernel{Name: "poly", Kind: sched.Streaming, CPU: polyCPU,
			In:  []sched.StreamSpec{{Name: "x", Stride: 4}, {Name: "coef", Stride: 16, Rate: sched.Whole}},
			Out: f4, GPU: &Binding{SPIRV: polySPV}},
			`binding 1 (input "coef") is a uniform block in the shader, but Binding.UniformIn[1] = false says storage buffer`},
		{"workgroup size", func() sched.Kernel {
			k := scaleKernel(saxpySPV)
			k.GPU.(*Binding).LocalSize = 4096
			return k
		}(), "LocalSize 4096 exceeds 1024"},
		{"bad module", func() sched.Kernel {
			k := scaleKernel([]byte("#version 450\nvoid main() {}\n"))
			return k
		}(), "bad magic number"},
	} {
		err := reg.Register(101, c.k)
		if !errors.Is(err, ErrBadBinding) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrBadBinding with %q", c.name, err, c.want)
		}
	}
}

// TestValidationMessageBecomesError creates the misbound pipeline without
// the registration check: the validation layer objects
// (VUID-VkComputePipelineCreateInfo-layout-00703), and the creation fails
// with ErrValidation instead of leaving a pipeline on which the layer would
// crash in vkCmdDispatch. It uses a device of its own, since its
// validation messages are expected.
func TestValidationMessageBecomesError(t *testing.T) {
	d := openTestDevice(t, Options{})
	defer d.Close()
	k := scaleKernel(misboundSPV)
	b, err := bindingOf(&k)
	must(t, err)
	p := &pipeline{ready: make(chan struct{})}
	err = d.createPipeline(p, &k, &b, false)
	p.destroy(d)
	if !errors.Is(err, ErrValidation) || !errors.Is(err, ErrBadBinding) || !strings.Contains(err.Error(), "00703") {
		t.Fatalf("err = %v, want ErrValidation about VUID-VkComputePipelineCreateInfo-layout-00703", err)
	}
	if _, n := d.Messages(); n == 0 {
		t.Fatal("the device kept no error message")
	}
	// A panicking OnMessage is recovered: the panic cannot unwind
	// through the layer's C frames.
	d2 := openTestDevice(t, Options{OnMessage: func(m Message) { panic("user callback: " + m.Text[:10]) }})
	defer d2.Close()
	p = &pipeline{ready: make(chan struct{})}
	err = d2.createPipeline(p, &k, &b, false)
	p.destroy(d2)
	if !errors.Is(err, ErrValidation) {
		t.Fatalf("with a panicking OnMessage: err = %v, want ErrValidation", err)
	}
	if err := d2.ValidationErr(); err == nil || !strings.Contains(err.Error(), "OnMessage panicked") {
		t.Fatalf("the panic is not kept as a message: %v", err)
	}
	// With the check, the same creation fails before any Vulkan call.
	p = &pipeline{ready: make(chan struct{})}
	err = d.createPipeline(p, &k, &b, true)
	p.destroy(d)
	if !errors.Is(err, ErrBadBinding) || errors.Is(err, ErrValidation) {
		t.Fatalf("checked creation: err = %v, want ErrBadBinding from the check", err)
	}
}

// TestHeapBudget: the device counts what it allocates per heap and refuses,
// with the figures, an allocation that would take a heap past its size
// (a crowd too large for the device fails at its setup, not in a frame).
func TestHeapBudget(t *testing.T) {
	d := device(t, false)
	l0 := d.Limits()
	if l0.DeviceMemory == 0 || l0.MaxStorageBufferRange == 0 || l0.MaxComputeWorkGroupCount == 0 {
		t.Fatalf("limits %+v", l0)
	}
	b, err := d.NewBuffer(1 << 20)
	must(t, err)
	if l := d.Limits(); l.DeviceMemoryUsed < l0.DeviceMemoryUsed+1<<20 {
		t.Errorf("after a 1 MiB buffer: %d bytes used, before %d", l.DeviceMemoryUsed, l0.DeviceMemoryUsed)
	}
	b.Close()
	if l := d.Limits(); l.DeviceMemoryUsed != l0.DeviceMemoryUsed {
		t.Errorf("after Close: %d bytes used, before %d", l.DeviceMemoryUsed, l0.DeviceMemoryUsed)
	}
	// A request for what is left plus one byte is refused without reaching
	// the driver (testing it through NewBuffer would allocate the rest).
	h := -1
	for i, size := range d.heaps {
		if size == l0.DeviceMemory {
			h = i
		}
	}
	err = d.reserve(h, l0.DeviceMemory-l0.DeviceMemoryUsed+1)
	if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "past its") {
		t.Fatalf("err = %v, want ErrOutOfMemory with the heap's figures", err)
	}
	if l := d.Limits(); l.DeviceMemoryUsed != l0.DeviceMemoryUsed {
		t.Errorf("a refused reservation counted: %d bytes used, before %d", l.DeviceMemoryUsed, l0.DeviceMemoryUsed)
	}
}

// TestInlineAndSubmitterMix adds small tasks (which Enqueue may submit
// itself) and large ones (over inlineBytes: always the submitter's) from
// several goroutines at once, and checks every result: the two paths share
// the command buffers, the completion order and Close.
func TestInlineAndSubmitterMix(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{})
	const goroutines, each = 4, 40
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			for i := range each {
				n := 64
				if (g+i)%3 == 0 {
					n = 32 << 10 // 3 x 128 KiB of host streams
				}
				x, y, z := ramp(n, 1, float32(g)), ramp(n, 2, float32(i)), make([]float32, n)
				task := saxpyTask(3, x, y, z)
				id, err := e.s.Add(&task)
				if err == nil {
					err = e.s.Wait(id)
				}
				if err == nil && (z[n-1] != 3*x[n-1]+y[n-1] || z[0] != 3*x[0]+y[0]) {
					err = fmt.Errorf("goroutine %d task %d (%d items): z[%d] = %v, want %v", g, i, n, n-1, z[n-1], 3*x[n-1]+y[n-1])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		must(t, <-errs)
	}
}
