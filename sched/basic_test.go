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
}
