package gpu_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

const genGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 4) writeonly buffer Out0 { uint y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = i * pc.params[0] + pc.params[7];
}
`

func genCPU(_ *sched.Ctx, d *sched.TaskData) error {
	y := sched.View[uint32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		y[i] = i*d.Params[0] + d.Params[7]
	}
	return nil
}

func runOne(t *testing.T, m *sched.Ctx, tk sched.Task) error {
	t.Helper()
	id, err := m.Add(&tk)
	if err != nil {
		return fmt.Errorf("Add: %w", err)
	}
	err = m.WaitFor(id, time.Minute)
	if errors.Is(err, sched.ErrTimeout) {
		t.Fatalf("task did not finish in a minute")
	}
	return err
}

func TestCustomKernelGeneratorShapes(t *testing.T) {
	spv := glslc.Compile(t, "comp", genGLSL)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	for _, grain := range []uint32{0, 1, 7, 1 << 31} {
		for _, n := range []int{0, 1, 2, 63, 64, 65, 100003} {
			reg := sched.NewRegistry()
			if err := reg.Register(1, sched.Kernel{Name: "gen", Kind: sched.Streaming, Grain: grain,
				Out: []sched.StreamSpec{{Name: "y", Stride: 4}}, CPU: genCPU,
				GPU: &bind.Binding{SPIRV: spv, LocalSize: 64}}); err != nil {
				t.Fatal(err)
			}
			for _, aff := range []sched.Affinity{sched.GPU, sched.Auto} {
				func() {
					_, ex, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
					_ = ex
					y := make([]uint32, n)
					for i := range y {
						y[i] = 0xdeadbeef
					}
					tk := sched.Task{Kernel: 1, Affinity: aff}
					tk.Data.Elements = uint32(n)
					tk.Data.Params[0], tk.Data.Params[7] = 3, 11
					tk.Data.Out[0] = sched.StreamOf(y)
					start := time.Now()
					if err := runOne(t, m, tk); err != nil {
						t.Fatalf("grain %d n %d: %v", grain, n, err)
					}
					if d := time.Since(start); d > 5*time.Second {
						t.Logf("grain %d n %d aff %v took %v", grain, n, aff, d)
					}
					for i := range y {
						if want := uint32(i)*3 + 11; y[i] != want {
							t.Fatalf("grain %d n %d aff %v: y[%d] = %#x, want %#x", grain, n, aff, i, y[i], want)
						}
					}
				}()
			}
		}
	}
}

const max44GLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint a[]; };
layout(set = 0, binding = 1) readonly buffer In1 { uint b[]; };
layout(set = 0, binding = 2) readonly buffer In2 { uint c[]; };
layout(set = 0, binding = 3) readonly buffer In3 { uint d[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint w[]; };
layout(set = 0, binding = 5) writeonly buffer Out1 { uint x[]; };
layout(set = 0, binding = 6) writeonly buffer Out2 { uint y[]; };
layout(set = 0, binding = 7) writeonly buffer Out3 { uint z[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    w[i] = a[i] * pc.params[0] + pc.params[4];
    x[i] = b[i] * pc.params[1] + pc.params[5];
    y[i] = c[i] * pc.params[2] + pc.params[6];
    z[i] = d[i] * pc.params[3] + pc.params[7];
}
`

func max44CPU(_ *sched.Ctx, d *sched.TaskData) error {
	for j := 0; j < 4; j++ {
		in, out := sched.View[uint32](d.In[j]), sched.View[uint32](d.Out[j])
		for i := d.Begin; i < d.End; i++ {
			out[i] = in[i]*d.Params[j] + d.Params[4+j]
		}
	}
	return nil
}

func TestCustomKernelFourInFourOutAllParams(t *testing.T) {
	u4 := []sched.StreamSpec{{Name: "a", Stride: 4}, {Name: "b", Stride: 4}, {Name: "c", Stride: 4}, {Name: "d", Stride: 4}}
	for _, variant := range []struct {
		name string
		spv  func(t *testing.T) []byte
	}{
		{"O", func(t *testing.T) []byte { return glslc.Compile(t, "comp", max44GLSL) }},
		{"O0", func(t *testing.T) []byte { return glslc.CompileFlags(t, "comp", max44GLSL, "-O0") }},
		{"g", func(t *testing.T) []byte { return glslc.CompileFlags(t, "comp", max44GLSL, "-g") }},
	} {
		for _, staging := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/staging=%v", variant.name, staging), func(t *testing.T) {
				spv := variant.spv(t)
				dev, log := gputest.Open(t, gpu.Options{ForceStaging: staging})
				defer dev.Close()
				reg := sched.NewRegistry()
				if err := reg.Register(1, sched.Kernel{Name: "max44", Kind: sched.Streaming, Grain: 1000,
					In: u4, Out: u4, CPU: max44CPU, GPU: &bind.Binding{SPIRV: spv, LocalSize: 33}}); err != nil {
					t.Fatal(err)
				}
				_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
				for _, n := range []int{0, 1, 33, 34, 77777} {
					var in, out [4][]uint32
					tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
					tk.Data.Elements = uint32(n)
					for j := 0; j < 4; j++ {
						in[j], out[j] = make([]uint32, n), make([]uint32, n)
						for i := range in[j] {
							in[j][i] = uint32(i*7 + j)
						}
						tk.Data.In[j], tk.Data.Out[j] = sched.StreamOf(in[j]), sched.StreamOf(out[j])
					}
					for k := range tk.Data.Params {
						tk.Data.Params[k] = uint32(100*k + 3)
					}
					if err := runOne(t, m, tk); err != nil {
						t.Fatalf("n %d: %v", n, err)
					}
					for j := 0; j < 4; j++ {
						for i := range out[j] {
							if want := in[j][i]*tk.Data.Params[j] + tk.Data.Params[4+j]; out[j][i] != want {
								t.Fatalf("n %d: out%d[%d] = %d, want %d", n, j, i, out[j][i], want)
							}
						}
					}
				}
			})
		}
	}
}

// Byte stream (stride 1) handled 4 items per invocation through a uint array,
// and an odd element count.
const bytesGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint x[]; };
layout(set = 0, binding = 4) buffer Out0 { uint y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x * 4u;
    if (i >= pc.end) { return; }
    y[i / 4u] = x[i / 4u] + 0x01010101u;
}
`

func bytesCPU(_ *sched.Ctx, d *sched.TaskData) error {
	x, y := d.In[0].Bytes, d.Out[0].Bytes
	for i := d.Begin; i < d.End; i++ {
		y[i] = x[i] + 1
	}
	return nil
}

func TestBindingRangeCoversLastShaderElement(t *testing.T) {
	spv := glslc.Compile(t, "comp", bytesGLSL)
	for _, staging := range []bool{false, true} {
		t.Run(fmt.Sprintf("staging=%v", staging), func(t *testing.T) {
			dev, log := gputest.Open(t, gpu.Options{ForceStaging: staging})
			defer dev.Close()
			reg := sched.NewRegistry()
			if err := reg.Register(1, sched.Kernel{Name: "bytes", Kind: sched.Streaming, Grain: 1 << 30,
				In: []sched.StreamSpec{{Name: "x", Stride: 1}}, Out: []sched.StreamSpec{{Name: "y", Stride: 1}},
				CPU: bytesCPU, GPU: &bind.Binding{SPIRV: spv, LocalSize: 64, ItemsPerInvocation: 4}}); err != nil {
				t.Fatal(err)
			}
			_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
			for _, n := range []int{1, 3, 4, 5, 7, 1001} {
				x, y := make([]byte, n), make([]byte, n)
				for i := range x {
					x[i] = byte(i)
				}
				tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
				tk.Data.Elements = uint32(n)
				tk.Data.In[0], tk.Data.Out[0] = sched.Stream{Bytes: x, Stride: 1, Count: uint32(n)}, sched.Stream{Bytes: y, Stride: 1, Count: uint32(n)}
				if err := runOne(t, m, tk); err != nil {
					t.Fatalf("n %d: %v", n, err)
				}
				for i := range y {
					if y[i] != byte(i)+1 {
						t.Errorf("n %d: y[%d] = %d, want %d", n, i, y[i], byte(i)+1)
						break
					}
				}
				// The same through GPU-resident buffers of exactly n bytes.
				bx, err := dev.NewBuffer(uint64(n))
				if err != nil {
					t.Fatal(err)
				}
				by, err := dev.NewBuffer(uint64(n))
				if err != nil {
					t.Fatal(err)
				}
				if err := bx.Write(0, x); err != nil {
					t.Fatal(err)
				}
				tk.Data.In[0], tk.Data.Out[0] = bx.Stream(1, uint32(n), 0), by.Stream(1, uint32(n), 0)
				if err := runOne(t, m, tk); err != nil {
					t.Fatalf("buffers, n %d: %v", n, err)
				}
				got := make([]byte, n)
				if err := by.Read(0, got); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != byte(i)+1 {
						t.Errorf("buffers, n %d: y[%d] = %d, want %d", n, i, got[i], byte(i)+1)
						break
					}
				}
				// An output stream that ends inside a larger buffer: its last
				// shader element would write the bytes after it, which may
				// be another stream's, so a count that is not whole shader
				// elements is refused; a whole one leaves them alone.
				big, err := dev.NewBuffer(uint64(n) + 8)
				if err != nil {
					t.Fatal(err)
				}
				sentinel := []byte{0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5}
				if err := big.Write(uint64(n), sentinel); err != nil {
					t.Fatal(err)
				}
				tk.Data.Out[0] = big.Stream(1, uint32(n), 0)
				err = runOne(t, m, tk)
				switch {
				case n%4 != 0 && !errors.Is(err, gpu.ErrBadStream):
					t.Errorf("inside a buffer, n %d: %v, want ErrBadStream", n, err)
				case n%4 == 0 && err != nil:
					t.Errorf("inside a buffer, n %d: %v", n, err)
				}
				after := make([]byte, 8)
				if err := big.Read(uint64(n), after); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(after, sentinel) {
					t.Errorf("inside a buffer, n %d: the bytes after the stream became %v", n, after)
				}
				big.Close()
				bx.Close()
				by.Close()
			}
		})
	}
}
