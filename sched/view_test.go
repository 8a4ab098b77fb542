package sched

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

func TestViewChecks(t *testing.T) {
	xs := make([]float32, 8)
	good := StreamOf(xs)
	if v := View[float32](good); len(v) != 8 || &v[0] != &xs[0] {
		t.Fatalf("View of a good stream: len %d", len(v))
	}
	rows := Stream{Stride: 16, Count: 2, Bytes: good.Bytes}
	if v, err := ViewOf[float32](rows, 4); err != nil || len(v) != 8 {
		t.Fatalf("ViewOf per 4: len %d, %v", len(v), err)
	}
	if v := View[float32](rows); len(v) != 8 {
		t.Fatalf("View of 2 rows of 4 floats: len %d", len(v))
	}
	if v, err := ViewOf[float32](rows, 1); v != nil || err == nil {
		t.Fatalf("ViewOf per 1 of 16-byte rows: len %d, %v", len(v), err)
	}
	if v, err := ViewOf[float32](Stream{Stride: 4}, 1); v != nil || err != nil {
		t.Fatalf("empty stream: %v, %v", v, err)
	}
	odd := unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), 32)[1:]
	for _, c := range []struct {
		name string
		s    Stream
		want string
	}{
		{"stride", Stream{Bytes: good.Bytes, Stride: 6, Count: 4}, "stride 6 bytes, want 4"},
		{"short", Stream{Bytes: good.Bytes, Stride: 4, Count: 9}, "fewer than 9 elements"},
		{"device", Stream{Stride: 4, Count: 2, Buffer: 3}, "no host memory (device buffer 3"},
		{"align", Stream{Bytes: odd, Stride: 4, Count: 2}, "not 4-byte aligned"},
	} {
		if v := View[float32](c.s); v != nil {
			t.Errorf("%s: View gave %d values, want nil", c.name, len(v))
		}
		v, err := ViewOf[float32](c.s, 1)
		if v != nil || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ViewOf gave %d values, error %v; want %q", c.name, len(v), err, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ViewOf[float32](good, 1) }); n != 0 {
		t.Errorf("ViewOf of a good stream: %v allocations, want 0", n)
	}
}

// uncheckedView is View as it was before it checked Stride, Count and
// alignment; BenchmarkViewKernel compares the hot-path cost.
func uncheckedView[T any](s Stream) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(s.Bytes) == 0 || size == 0 || len(s.Bytes)%size != 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s.Bytes))), len(s.Bytes)/size)
}

// BenchmarkViewKernel: the compute kernel's body (two views, then
// computeRange) over ranges of 64 items and of 1, where the views' cost
// shows most.
func BenchmarkViewKernel(b *testing.B) {
	const n = 1 << 16
	var d TaskData
	d.In[0], d.Out[0] = StreamOf(make([]float32, n)), StreamOf(make([]float32, n))
	for _, c := range []struct {
		name string
		run  func(d *TaskData)
	}{
		{"unchecked", func(d *TaskData) {
			computeRange(uncheckedView[float32](d.In[0]), uncheckedView[float32](d.Out[0]), int(d.Begin), int(d.End))
		}},
		{"View", func(d *TaskData) {
			computeRange(View[float32](d.In[0]), View[float32](d.Out[0]), int(d.Begin), int(d.End))
		}},
		{"ViewOf", func(d *TaskData) {
			x, err := ViewOf[float32](d.In[0], 1)
			if err != nil {
				b.Fatal(err)
			}
			y, err := ViewOf[float32](d.Out[0], 1)
			if err != nil {
				b.Fatal(err)
			}
			computeRange(x, y, int(d.Begin), int(d.End))
		}},
	} {
		for _, grain := range []int{64, 1} {
			b.Run(fmt.Sprintf("%s/grain=%d", c.name, grain), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					d.Begin = uint32(i*grain) % n
					d.End = d.Begin + uint32(grain)
					c.run(&d)
				}
			})
		}
	}
}
