package sched_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestUserPinnedStreaming: a streaming task pinned to a registered thread
// runs every range on that thread, whatever its grain.
func TestUserPinnedStreaming(t *testing.T) {
	reg := sched.NewRegistry()
	var off atomic.Int32
	var mainIdx atomic.Int32
	reg.Register(uScale, sched.Kernel{Name: "pinned", Kind: sched.Streaming, Grain: 1,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			if int32(c.Index()) != mainIdx.Load() {
				off.Add(1)
			}
			return nil
		}})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	mainIdx.Store(int32(main.Index()))
	x := make([]float32, 5000)
	for _, g := range []uint32{0, 1, 3, 7000} {
		tk := sched.Task{Kernel: uScale, Affinity: sched.OnThread(0)}
		tk.Data.Elements = uint32(len(x))
		tk.Data.Grain = g
		tk.Data.In[0] = sched.StreamOf(x)
		id, err := main.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
			t.Fatal(err)
		}
	}
	if off.Load() != 0 {
		t.Errorf("%d ranges of a pinned task ran off its thread", off.Load())
	}
}

// TestUserReduceExpandOddCounts: Reduce (Factor inputs per output) and Expand
// (Factor outputs per input) over counts and grains that do not divide, each
// output written exactly once with the right value.
func TestUserReduceExpandOddCounts(t *testing.T) {
	const kRed, kExp sched.KernelID = 20, 21
	reg := sched.NewRegistry()
	if err := reg.Register(kRed, sched.Kernel{Name: "avg3", Kind: sched.Reduce, Factor: 3, Grain: 5,
		In:  []sched.StreamSpec{{Name: "in", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "out", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			in, out := sched.View[int32](d.In[0]), sched.View[int32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				out[i] += in[3*i] + in[3*i+1] + in[3*i+2]
			}
			return nil
		}}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(kExp, sched.Kernel{Name: "x4", Kind: sched.Expand, Factor: 4, Grain: 3,
		In:  []sched.StreamSpec{{Name: "in", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "out", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			in, out := sched.View[int32](d.In[0]), sched.View[int32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				for j := uint32(0); j < 4; j++ {
					out[4*i+j] += in[i] + int32(j)
				}
			}
			return nil
		}}); err != nil {
		t.Fatal(err)
	}
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	for _, n := range []int{0, 1, 2, 4, 5, 6, 11, 1001} {
		for _, g := range []uint32{0, 1, 2, 7, 1 << 16} {
			in := make([]int32, 3*n)
			for i := range in {
				in[i] = int32(i)
			}
			out := make([]int32, n)
			tk := sched.Task{Kernel: kRed}
			tk.Data.Elements, tk.Data.Grain = uint32(n), g
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
			id, err := main.Add(&tk)
			if err != nil {
				t.Fatalf("reduce n=%d g=%d: %v", n, g, err)
			}
			if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
				t.Fatal(err)
			}
			for i := range out {
				if want := int32(9*i + 3); out[i] != want {
					t.Fatalf("reduce n=%d g=%d: out[%d]=%d want %d", n, g, i, out[i], want)
				}
			}
			// Expand.
			ein := make([]int32, n)
			for i := range ein {
				ein[i] = int32(10 * i)
			}
			eout := make([]int32, 4*n)
			tk = sched.Task{Kernel: kExp}
			tk.Data.Elements, tk.Data.Grain = uint32(n), g
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(ein), sched.StreamOf(eout)
			id, err = main.Add(&tk)
			if err != nil {
				t.Fatalf("expand n=%d g=%d: %v", n, g, err)
			}
			if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
				t.Fatal(err)
			}
			for i := range eout {
				if want := int32(10*(i/4) + i%4); eout[i] != want {
					t.Fatalf("expand n=%d g=%d: out[%d]=%d want %d", n, g, i, eout[i], want)
				}
			}
		}
	}
	// The wrong ratio between the streams is refused, naming the stream.
	in := make([]int32, 10)
	out := make([]int32, 4)
	tk := sched.Task{Kernel: kRed}
	tk.Data.Elements = 4
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
	if _, err := main.Add(&tk); err == nil || !strings.Contains(err.Error(), "in") {
		t.Errorf("reduce with 10 inputs for 4 outputs (factor 3): %v", err)
	}
}

// TestUserPriorities: with one thread, a batch of runnable tasks added while
// it was busy runs high before normal before low.
func TestUserPriorities(t *testing.T) {
	reg := sched.NewRegistry()
	var mu sync.Mutex
	var order []sched.Priority
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		mu.Lock()
		order = append(order, sched.Priority(int8(d.Params[0])))
		mu.Unlock()
		return nil
	}})
	// The only thread runs the tasks, so the order is the scheduler's choice.
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1, MainThreads: 1})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	gate, _ := main.Create(&sched.Task{})
	var ids []sched.TaskID
	for i := 0; i < 30; i++ {
		p := []sched.Priority{sched.PriorityLow, sched.PriorityNormal, sched.PriorityHigh}[i%3]
		tk := sched.Task{Kernel: uRecord, Priority: p, Affinity: sched.OnThread(0), Dependency: gate}
		tk.Data.Params[0] = uint32(uint8(p))
		id, err := main.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	main.Run(gate)
	for _, id := range ids {
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i] > order[i-1] {
			t.Fatalf("priority %v ran after %v: %v", order[i], order[i-1], order)
		}
	}
}

// TestUserHugeElementCount: a task of MaxUint32 work items is split into
// disjoint ranges that cover it exactly.
func TestUserHugeElementCount(t *testing.T) {
	reg := sched.NewRegistry()
	var mu sync.Mutex
	var total uint64
	var calls int
	var maxEnd uint32
	reg.Register(uScale, sched.Kernel{Name: "count", Kind: sched.Streaming, CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		mu.Lock()
		total += uint64(d.End - d.Begin)
		calls++
		maxEnd = max(maxEnd, d.End)
		mu.Unlock()
		return nil
	}})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	for _, n := range []uint32{^uint32(0), ^uint32(0) - 1, 1<<32 - 1<<26 + 5} {
		total, calls, maxEnd = 0, 0, 0
		tk := sched.Task{Kernel: uScale}
		tk.Data.Elements = n
		tk.Data.Grain = 1 << 26
		id, err := main.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(id) }); err != nil {
			t.Fatal(err)
		}
		if total != uint64(n) || maxEnd != n || calls < 2 {
			t.Errorf("Elements %d: covered %d items in %d calls, last end %d", n, total, calls, maxEnd)
		}
	}
}
