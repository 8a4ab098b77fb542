package gpu_test

// What Device.LoopBudget and docs/gpu-kernels.md ("Loop limits") say of
// lavapipe's loop passes, through a user's own shader: one budget per
// invocation (per SIMD vector of invocations run together) for all of a
// shader's loops together, after which later loops stop early silently,
// and a loop that no lane of the vector reaches takes none of it.

import (
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/sched"
)

// twoLoopsGLSL: an invocation whose sel[i] is not zero first runs loop A
// (params[0] passes); every invocation then runs loop B (params[1]
// passes of an LCG from seed[i]) and writes its state. The LCG keeps the
// compiler from folding either loop.
const twoLoopsGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint seed[]; };
layout(set = 0, binding = 1) readonly buffer In1 { uint sel[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint o[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    uint s = seed[i];
    if (sel[i] != 0u) {
        for (uint k = 0u; k < pc.params[0]; k++) { s = s * 1664525u + 1013904223u; }
    }
    for (uint k = 0u; k < pc.params[1]; k++) { s = s * 22695477u + 1u; }
    o[i] = s;
}
`

func twoLoopsCPU(_ *sched.Ctx, d *sched.TaskData) error {
	seed, sel, o := sched.View[uint32](d.In[0]), sched.View[uint32](d.In[1]), sched.View[uint32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		s := seed[i]
		if sel[i] != 0 {
			for range d.Params[0] {
				s = s*1664525 + 1013904223
			}
		}
		for range d.Params[1] {
			s = s*22695477 + 1
		}
		o[i] = s
	}
	return nil
}

func TestLavapipeLoopBudgetIsSharedByLoopsAndLanes(t *testing.T) {
	spv := userSPIRV(t, twoLoopsGLSL)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	budget := dev.LoopBudget()
	if budget == 0 {
		t.Skipf("%s reports no loop budget", dev.Name())
	}
	if budget != gpu.LavapipeLoopBudget {
		t.Fatalf("LoopBudget %d on %s, want LavapipeLoopBudget %d", budget, dev.Name(), gpu.LavapipeLoopBudget)
	}
	reg := sched.NewRegistry()
	if err := reg.Register(1, sched.Kernel{Name: "two_loops", Kind: sched.Streaming, Grain: 1 << 31,
		In:  []sched.StreamSpec{{Name: "seed", Stride: 4}, {Name: "sel", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "o", Stride: 4}},
		CPU: twoLoopsCPU, GPU: &bind.Binding{SPIRV: spv, LocalSize: 64}}); err != nil {
		t.Fatal(err)
	}
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
	const n = 128 // two workgroups of 64: items 64.. share no vector with item 0
	seed := make([]uint32, n)
	for i := range seed {
		seed[i] = uint32(i)*2654435761 + 7
	}
	// run returns, for each item, whether the GPU matched the CPU.
	run := func(a, b uint32, sel []uint32) []bool {
		t.Helper()
		gpuOut, cpuOut := make([]uint32, n), make([]uint32, n)
		for _, c := range []struct {
			aff sched.Affinity
			out []uint32
		}{{sched.GPU, gpuOut}, {sched.AnyWorker, cpuOut}} {
			tk := sched.Task{Kernel: 1, Affinity: c.aff}
			tk.Data.Params[0], tk.Data.Params[1] = a, b
			tk.Data.Elements = n
			tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = sched.StreamOf(seed), sched.StreamOf(sel), sched.StreamOf(c.out)
			id, err := m.Add(&tk)
			if err != nil {
				t.Fatal(err)
			}
			if err := waitMinute(t, m, id); err != nil {
				t.Fatal(err)
			}
		}
		ok := make([]bool, n)
		for i := range ok {
			ok[i] = gpuOut[i] == cpuOut[i]
		}
		return ok
	}
	count := func(ok []bool) (good int) {
		for _, g := range ok {
			if g {
				good++
			}
		}
		return good
	}
	none, all, first := make([]uint32, n), make([]uint32, n), make([]uint32, n)
	for i := range all {
		all[i] = 1
	}
	first[0] = 1
	half := budget/2 + budget/8 // each loop alone well within the budget, both together over it

	// The budget's edge: loop bodies run budget-1 times in all, in one
	// loop or two, are exact; budget times are not. (A pass that only
	// tests a loop's exit took none of it here, optimised or not: a bound
	// that counts them too is safe, one that leaves them out exact.)
	for _, c := range []struct {
		a, b  uint32
		exact bool
	}{{0, budget - 1, true}, {0, budget, false}, {100, budget - 101, true}, {100, budget - 100, false}} {
		ok := run(c.a, c.b, all)
		if got := count(ok); (got == n) != c.exact || (got != 0 && !c.exact) {
			t.Errorf("loop A %d passes, loop B %d (%d in all, budget %d): %d of %d items exact, want all: %v", c.a, c.b, c.a+c.b, budget, got, n, c.exact)
		}
	}
	// One loop a little under the budget: exact.
	if ok := run(0, budget-64, none); count(ok) != n {
		t.Errorf("one loop of %d passes: %d of %d items exact, want all", budget-64, count(ok), n)
	}
	// Two loops each under the budget but over it together: loop B stops
	// early, silently. Were the budget per loop, all would be exact.
	if ok := run(half, half, all); count(ok) != 0 {
		t.Errorf("two loops of %d passes each (budget %d): %d of %d items exact, want none (one budget for all loops)", half, budget, count(ok), n)
	}
	// Loop A reached by no lane: it takes none of the budget.
	if ok := run(half, half, none); count(ok) != n {
		t.Errorf("loop A reached by no lane, loop B %d passes: %d of %d items exact, want all", half, count(ok), n)
	}
	// Loop A reached by item 0 alone: the lanes run with it (item 1 at
	// least) spend the budget with it, items of the other workgroup do not.
	ok := run(half, half, first)
	if ok[0] || ok[1] {
		t.Errorf("loop A reached by item 0 only: item 0 exact %v, item 1 exact %v; want both wrong (one budget per SIMD vector)", ok[0], ok[1])
	}
	if good := count(ok[64:]); good != n-64 {
		t.Errorf("loop A reached by item 0 only: %d of the other workgroup's %d items exact, want all", good, n-64)
	}
	t.Logf("loop A reached by item 0 only: %d of the first workgroup's 64 items wrong (its SIMD vector)", 64-count(ok[:64]))
}
