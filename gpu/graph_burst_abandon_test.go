package gpu_test

import (
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

func xaReg(t *testing.T) *sched.Registry {
	t.Helper()
	spv := glslc.Assemble(t, baseASM)
	reg := sched.NewRegistry()
	if err := reg.Register(1, sched.Kernel{Name: "xa", Kind: sched.Streaming, Grain: 1 << 20,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}}, Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: xaCPU, GPU: &bind.Binding{SPIRV: spv}}); err != nil {
		t.Fatal(err)
	}
	return reg
}

func u32bytes(v []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// Graph GPU node re-pointed between buffers, host slices and counts across runs.
func TestGraphGPUNodeRepointed(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	s, ex, m := gputest.Sched(t, dev, log, sched.Config{Kernels: xaReg(t), Workers: 1}, gpu.ExecutorOptions{})
	const n = 1000
	mk := func(v uint32) *gpu.Buffer {
		b, err := dev.NewBuffer(4 * 2 * n)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]uint32, 2*n)
		for i := range x {
			x[i] = uint32(i) + v
		}
		if err := b.Write(0, u32bytes(x)); err != nil {
			t.Fatal(err)
		}
		return b
	}
	bA, bB := mk(0), mk(100000)
	out := make([]uint32, 2*n)
	g := s.NewGraph()
	tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
	tk.Data.Elements = n
	tk.Data.Params[0], tk.Data.Params[7] = 1, 0
	tk.Data.In[0], tk.Data.Out[0] = bA.Stream(4, n, 0), sched.StreamOf(out[:n])
	nd, err := g.Add(&tk)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, cnt int, base uint32, off int, p0, p7 uint32) {
		t.Helper()
		for i := range out {
			out[i] = 0xffffffff
		}
		if err := g.RunCtx(m); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i := 0; i < cnt; i++ {
			if want := (uint32(i+off)+base)*p0 + p7; out[i] != want {
				t.Fatalf("%s: out[%d] = %d, want %d (stats %+v)", what, i, out[i], want, ex.Stats())
			}
		}
	}
	check("A", n, 0, 0, 1, 0)
	check("A replay", n, 0, 0, 1, 0)
	tk.Data.In[0] = bB.Stream(4, n, 0)
	if err := g.SetData(nd, &tk.Data); err != nil {
		t.Fatal(err)
	}
	check("B", n, 100000, 0, 1, 0)
	tk.Data.In[0] = bA.Stream(4, n, 4*64)
	if err := g.SetData(nd, &tk.Data); err != nil {
		t.Fatal(err)
	}
	check("A offset 64", n, 0, 64, 1, 0)
	tk.Data.Params[0], tk.Data.Params[7] = 3, 5
	if err := g.SetData(nd, &tk.Data); err != nil {
		t.Fatal(err)
	}
	check("params", n, 0, 64, 3, 5)
	*g.Params(nd) = sched.Params{2, 0, 0, 0, 0, 0, 0, 1}
	check("Params()", n, 0, 64, 2, 1)
	// Element count grows (same buffers).
	tk.Data.Params = sched.Params{2, 0, 0, 0, 0, 0, 0, 1}
	tk.Data.Elements = 2 * n
	tk.Data.In[0], tk.Data.Out[0] = bA.Stream(4, 2*n, 0), sched.StreamOf(out)
	if err := g.SetData(nd, &tk.Data); err != nil {
		t.Fatal(err)
	}
	check("count 2n", 2*n, 0, 0, 2, 1)
	// Host input instead of a buffer.
	hx := make([]uint32, 2*n)
	for i := range hx {
		hx[i] = uint32(i) + 7
	}
	tk.Data.In[0] = sched.StreamOf(hx)
	if err := g.SetData(nd, &tk.Data); err != nil {
		t.Fatal(err)
	}
	check("host input", 2*n, 7, 0, 2, 1)
	// Another host slice of the same size.
	hx2 := make([]uint32, 2*n)
	for i := range hx2 {
		hx2[i] = uint32(i) + 9
	}
	tk.Data.In[0] = sched.StreamOf(hx2)
	if err := g.SetData(nd, &tk.Data); err != nil {
		t.Fatal(err)
	}
	check("host input 2", 2*n, 9, 0, 2, 1)
	// Back to buffer B; then close B, make C (ID may be reused) and re-point.
	tk.Data.In[0] = bB.Stream(4, 2*n, 0)
	if err := g.SetData(nd, &tk.Data); err != nil {
		t.Fatal(err)
	}
	check("B again", 2*n, 100000, 0, 2, 1)
	idB := bB.ID()
	bB.Close()
	bC := mk(500)
	t.Logf("B id %d, C id %d", idB, bC.ID())
	if bC.ID() == idB {
		// Same ID without SetData: must not use B's freed buffer.
		check("C under B's id", 2*n, 500, 0, 2, 1)
	}
	tk.Data.In[0] = bC.Stream(4, 2*n, 0)
	if err := g.SetData(nd, &tk.Data); err != nil {
		t.Fatal(err)
	}
	check("C", 2*n, 500, 0, 2, 1)
	// Output into a buffer, input host mirror of a buffer.
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	bA.Close()
	bC.Close()
}

// Many tasks in one burst, Close with many in flight, and no growth of
// device memory across repeated runs.
func TestBurstAndCloseInFlightFreeEverything(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	reg := xaReg(t)
	used0 := dev.Limits().DeviceMemoryUsed
	var usedAfter []uint64
	for round := 0; round < 4; round++ {
		s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{MaxBatch: 16})
		if err != nil {
			t.Fatal(err)
		}
		s.AttachExecutor(sched.ExecGPU, ex)
		m, _ := s.RegisterThread("main")
		const tasks = 3000
		xs, ys := make([][]uint32, tasks), make([][]uint32, tasks)
		parent, err := m.Create(&sched.Task{})
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < tasks; k++ {
			n := 1 + k%97
			xs[k], ys[k] = make([]uint32, n), make([]uint32, n)
			for i := range xs[k] {
				xs[k][i] = uint32(i + k)
			}
			tk := sched.Task{Kernel: 1, Affinity: sched.GPU, Parent: parent}
			tk.Data.Elements = uint32(n)
			tk.Data.Params[0], tk.Data.Params[7] = 2, uint32(k)
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(xs[k]), sched.StreamOf(ys[k])
			if _, err := m.Add(&tk); err != nil {
				t.Fatal(err)
			}
		}
		if round%2 == 0 {
			if err := m.Run(parent); err != nil {
				t.Fatal(err)
			}
			if err := m.WaitFor(parent, time.Minute); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			for k := range ys {
				for i := range ys[k] {
					if want := uint32(i+k)*2 + uint32(k); ys[k][i] != want {
						t.Fatalf("round %d task %d: y[%d] = %d, want %d", round, k, i, ys[k][i], want)
					}
				}
			}
			t.Logf("round %d stats %+v", round, ex.Stats())
		} else {
			// Close with the burst in flight.
			if err := m.Run(parent); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		go func() { done <- s.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Logf("round %d: Close: %v", round, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("round %d: Close hung", round)
		}
		if round%2 == 1 {
			st := ex.Stats()
			t.Logf("round %d (closed in flight): tasks %d failed %d", round, st.Tasks, st.Failed)
			if st.Tasks+st.Failed != tasks {
				t.Errorf("round %d: %d tasks completed + %d failed, want %d", round, st.Tasks, st.Failed, tasks)
			}
		}
		usedAfter = append(usedAfter, dev.Limits().DeviceMemoryUsed)
	}
	t.Logf("device memory used: before %d, after rounds %v", used0, usedAfter)
	for i, u := range usedAfter {
		if u != used0 {
			t.Errorf("round %d: device memory used %d after Close, %d before", i, u, used0)
		}
	}
	if n := log.Len(); n != 0 {
		t.Errorf("validation messages: %v", log.Since(0))
	}
}

// Abandon of a GPU task that is queued behind a long one, and of one in flight.
func TestAbandonedQueuedGPUTaskNeverRuns(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	s, ex, m := gputest.Sched(t, dev, log, sched.Config{Kernels: loopReg(t), Workers: 1}, gpu.ExecutorOptions{InFlight: 1, MaxBatch: 1})
	n := 1 << 12
	x := make([]uint32, n)
	var ys [][]uint32
	var ids []sched.TaskID
	for k := 0; k < 4; k++ {
		y := make([]uint32, n)
		ys = append(ys, y)
		tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
		tk.Data.Elements = uint32(n)
		tk.Data.Params[0], tk.Data.Params[1], tk.Data.Params[2] = 20000, 1, 1
		tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
		id, err := m.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids[1:3] {
		if err := s.Abandon(id, fmt.Errorf("abandoned by the test")); err != nil {
			t.Logf("Abandon %v: %v", id, err)
		}
	}
	for i, id := range ids {
		err := m.WaitFor(id, time.Minute)
		t.Logf("task %d: %v", i, err)
		if i >= 1 && i < 3 && !errors.Is(err, sched.ErrAbandoned) {
			t.Errorf("task %d: want ErrAbandoned, got %v", i, err)
		}
		if (i == 0 || i == 3) && err != nil {
			t.Errorf("task %d: %v", i, err)
		}
	}
	t.Logf("stats %+v", ex.Stats())
	// Tasks 1 and 2 were abandoned while queued behind task 0 (InFlight 1,
	// MaxBatch 1): "if its kernel has not started it never runs".
	for k := 1; k < 3; k++ {
		for i, v := range ys[k] {
			if v != 0 {
				t.Errorf("abandoned task %d, queued when abandoned, ran anyway and wrote its output after its waiter saw ErrAbandoned: y[%d] = %#x", k, i, v)
				break
			}
		}
	}
	// The scheduler is still usable: another GPU task.
	y := make([]uint32, 4)
	tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
	tk.Data.Elements = 4
	tk.Data.Params[0], tk.Data.Params[1], tk.Data.Params[2] = 0, 0, 0
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x[:4]), sched.StreamOf(y)
	if err := runOne(t, m, tk); err != nil {
		t.Error(err)
	}
}

// A kernel with no outputs and one with no streams at all.
func TestKernelWithoutOutputs(t *testing.T) {
	src := `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint x[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    if (x[i] == 12345u) { barrier(); }
}
`
	spv := glslc.Compile(t, "comp", src)
	reg := sched.NewRegistry()
	err := reg.Register(1, sched.Kernel{Name: "sink", Kind: sched.Streaming,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }, GPU: &bind.Binding{SPIRV: spv}})
	t.Logf("register no-output kernel: %v", err)
	if err != nil {
		return
	}
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
	x := make([]uint32, 100)
	tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
	tk.Data.Elements = 100
	tk.Data.In[0] = sched.StreamOf(x)
	if err := runOne(t, m, tk); err != nil {
		t.Error(err)
	}
}
