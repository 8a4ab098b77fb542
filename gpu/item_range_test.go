package gpu_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

// Each invocation counts the items it is given (ItemsPerInvocation in
// params[0]) into one counter: the sum must be the element count, up to
// 2^32-1 items in one task (dispatch chunking, item arithmetic near 2^32).
const countGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 4) buffer Out0 { uint n[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint ipi = pc.params[0];
    uint lo = pc.begin + gl_GlobalInvocationID.x * ipi;
    if (lo >= pc.end) { return; }
    uint c = min(ipi, pc.end - lo);
    atomicAdd(n[0], c);
    atomicAdd(n[1], 1u);
}
`

func TestItemCountNear2To32(t *testing.T) {
	spv := glslc.Compile(t, "comp", countGLSL)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	t.Logf("limits %+v", dev.Limits())
	for _, c := range []struct {
		local, ipi uint32
		n          uint32
	}{
		{64, 1 << 16, 0xffffffff},
		{1024, 1 << 12, 0xfffffff1},
		{1, 1 << 16, 1<<31 + 12345},
		{7, 65521, 0xfffffffe},
	} {
		reg := sched.NewRegistry()
		if err := reg.Register(1, sched.Kernel{Name: "count", Kind: sched.Streaming, Grain: 0xffffffff,
			Out: []sched.StreamSpec{{Name: "n", Stride: 8, Rate: sched.Whole}},
			CPU: func(*sched.Ctx, *sched.TaskData) error { return nil },
			GPU: &bind.Binding{SPIRV: spv, LocalSize: c.local, ItemsPerInvocation: c.ipi}}); err != nil {
			t.Fatal(err)
		}
		func() {
			_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
			b, err := dev.NewBuffer(8)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Write(0, make([]byte, 8)); err != nil {
				t.Fatal(err)
			}
			tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
			tk.Data.Elements = c.n
			tk.Data.Params[0] = c.ipi
			tk.Data.Out[0] = b.Stream(8, 1, 0)
			span := uint64(c.local) * uint64(c.ipi)
			if (uint64(c.n)+span-1)/span*span > 1<<32 {
				// The last workgroup's item numbers would wrap past 2^32-1.
				err := runOne(t, m, tk)
				if !errors.Is(err, gpu.ErrBadBinding) || !strings.Contains(err.Error(), "2^32") {
					t.Errorf("%+v: err = %v, want ErrBadBinding naming the 2^32 item limit", c, err)
				}
				return
			}
			if err := runOne(t, m, tk); err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			got := make([]byte, 8)
			if err := b.Read(0, got); err != nil {
				t.Fatal(err)
			}
			items, inv := binary.LittleEndian.Uint32(got), binary.LittleEndian.Uint32(got[4:])
			wantInv := uint32((uint64(c.n) + uint64(c.ipi) - 1) / uint64(c.ipi))
			if items != c.n || inv != wantInv {
				t.Errorf("%+v: %d items in %d invocations, want %d in %d", c, items, inv, c.n, wantInv)
			}
		}()
	}
}
