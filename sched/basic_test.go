package sched

import (
	"sync/atomic"
	"testing"
	"unsafe"
)

const kCount KernelID = 1
const kScale KernelID = 2

func newTestSched(t testing.TB, cfg Config) (*Scheduler, *Ctx, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kCount, Kernel{Name: "count", CPU: func(c *Ctx, d *TaskData) error { n.Add(1); return nil }}))
	must(t, reg.Register(kScale, Kernel{Name: "scale", Kind: Streaming, Grain: 64,
		In: []StreamSpec{{Name: "x", Stride: 4}}, Out: []StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *Ctx, d *TaskData) error {
			x, y := View[float32](d.In[0]), View[float32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				y[i] = 2 * x[i]
			}
			return nil
		}}))
	cfg.Kernels = reg
	s, err := New(cfg)
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s, m, &n
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestSmoke(t *testing.T) {
	_, m, n := newTestSched(t, Config{})
	root, err := m.Create(&Task{})
	must(t, err)
	for i := 0; i < 1000; i++ {
		_, err := m.Add(&Task{Kernel: kCount, Parent: root})
		must(t, err)
	}
	must(t, m.Run(root))
	must(t, m.Wait(root))
	if n.Load() != 1000 {
		t.Fatalf("ran %d", n.Load())
	}
	x := make([]float32, 10000)
	y := make([]float32, 10000)
	for i := range x {
		x[i] = float32(i)
	}
	var td Task
	td.Kernel = kScale
	td.Data.Elements = uint32(len(x))
	td.Data.In[0] = StreamOf(x)
	td.Data.Out[0] = StreamOf(y)
	id, err := m.Add(&td)
	must(t, err)
	must(t, m.Wait(id))
	for i := range y {
		if y[i] != 2*x[i] {
			t.Fatalf("y[%d]=%v", i, y[i])
		}
	}
}

func TestSlotSize(t *testing.T) {
	if sz := unsafe.Sizeof(slot{}); sz%cacheLine != 0 {
		t.Fatalf("slot is %d bytes, not a multiple of the %d-byte cache line", sz, cacheLine)
	}
	// touchSlots prefetches the lines Add writes for a simple task.
	var sl slot
	if end := unsafe.Offsetof(sl.task) + unsafe.Offsetof(sl.task.Data) + unsafe.Offsetof(sl.task.Data.End) + 4; end > slotHotLines*cacheLine {
		t.Fatalf("a simple task's fields end at byte %d, beyond the %d prefetched lines", end, slotHotLines)
	}
	// The default pool is a large allocation, so page-aligned: a slot's
	// lines are its own.
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if a := uintptr(unsafe.Pointer(&s.slots[0])) % cacheLine; a != 0 {
		t.Fatalf("slots start %d bytes into a cache line", a)
	}
}

// TestSchedulerLayout checks that the groups of Scheduler fields that
// threads write often (the free list; the queues; the idle list and
// counters) share no cache line with the read-mostly fields every Add
// reads, nor with each other.
func TestSchedulerLayout(t *testing.T) {
	var s Scheduler
	groups := []struct {
		name       string
		start, end uintptr
	}{
		{"read-mostly", unsafe.Offsetof(s.id), unsafe.Offsetof(s.execs) + unsafe.Sizeof(s.execs)},
		{"free list", unsafe.Offsetof(s.freeMu), unsafe.Offsetof(s.nfree) + unsafe.Sizeof(s.nfree)},
		{"queues", unsafe.Offsetof(s.inject), unsafe.Offsetof(s.queued) + unsafe.Sizeof(s.queued)},
		{"idle", unsafe.Offsetof(s.execJobs), unsafe.Offsetof(s.poolWait) + unsafe.Sizeof(s.poolWait)},
	}
	for i := 1; i < len(groups); i++ {
		if gap := groups[i].start - groups[i-1].end; groups[i].start < groups[i-1].end || gap < cacheLine {
			t.Errorf("%s (bytes %d-%d) and %s (from %d) are %d bytes apart: they may share a cache line",
				groups[i-1].name, groups[i-1].start, groups[i-1].end, groups[i].name, groups[i].start, gap)
		}
	}
}

// TestTouchSlotsBothWays runs tasks with slot prefetching by PREFETCHW
// (where the CPU has it) and by writing the lines (the fallback), with
// streaming tasks in between so that slots alternate between simple and
// full copies: every task runs once, every result is right.
func TestTouchSlotsBothWays(t *testing.T) {
	saved := havePrefetchW
	defer func() { havePrefetchW = saved }()
	for _, pf := range []bool{saved, false} {
		havePrefetchW = pf
		s, m, n := newTestSched(t, Config{PoolSize: 256})
		x := make([]float32, 1000)
		for i := range x {
			x[i] = float32(i)
		}
		y := make([]float32, len(x))
		const rounds, per = 50, 200
		for r := 0; r < rounds; r++ {
			root, err := m.Create(&Task{})
			must(t, err)
			for i := 0; i < per; i++ {
				if _, err := m.Add(&Task{Kernel: kCount, Parent: root, Data: TaskData{Params: Params{uint32(i)}}}); err != nil {
					t.Fatal(err)
				}
			}
			clear(y)
			if _, err := m.Add(&Task{Kernel: kScale, Parent: root, Data: TaskData{Elements: uint32(len(x)),
				In: [MaxStreams]Stream{StreamOf(x)}, Out: [MaxStreams]Stream{StreamOf(y)}}}); err != nil {
				t.Fatal(err)
			}
			must(t, m.Run(root))
			must(t, m.Wait(root))
			for i := range y {
				if y[i] != 2*x[i] {
					t.Fatalf("prefetchw %v: round %d: y[%d] = %v, want %v", pf, r, i, y[i], 2*x[i])
				}
			}
		}
		if got := n.Load(); got != rounds*per {
			t.Fatalf("prefetchw %v: %d tasks ran, want %d", pf, got, rounds*per)
		}
		must(t, s.Close())
	}
}
