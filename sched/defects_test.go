package sched

import (
	"sync/atomic"
	"testing"
)

// spinWork burns a little CPU per element, so a thief has time to steal.
func spinWork(n uint32) uint32 {
	x := n
	for i := 0; i < 20; i++ {
		x = x*1664525 + 1013904223
	}
	return x
}

// A streaming task pinned to a registered thread runs every range of it on
// that thread (it used to be split into pieces that workers stole).
func TestPinnedStreamingStaysOnThread(t *testing.T) {
	const kPinnedRange KernelID = 40
	var off, ranges, items atomic.Int64
	var sink atomic.Uint32
	reg := NewRegistry()
	var mainIndex atomic.Int32
	must(t, reg.Register(kPinnedRange, Kernel{Name: "pinned_range", Kind: Streaming, Grain: 64,
		CPU: func(c *Ctx, d *TaskData) error {
			if int32(c.Index()) != mainIndex.Load() {
				off.Add(1)
			}
			ranges.Add(1)
			items.Add(int64(d.End - d.Begin))
			var x uint32
			for i := d.Begin; i < d.End; i++ {
				x += spinWork(i)
			}
			sink.Add(x)
			return nil
		}}))
	for _, workers := range []int{1, 3} {
		s, err := New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		mainIndex.Store(int32(m.Index()))
		off.Store(0)
		ranges.Store(0)
		items.Store(0)
		const reps, n = 20, 1 << 14
		for range reps {
			tk := Task{Kernel: kPinnedRange, Affinity: OnThread(0)}
			tk.Data.Elements = n
			id, err := m.Add(&tk)
			must(t, err)
			must(t, m.Wait(id))
		}
		must(t, s.Close())
		if off.Load() != 0 {
			t.Errorf("workers %d: %d of %d ranges of a task pinned to thread(0) ran on a worker", workers, off.Load(), ranges.Load())
		}
		if items.Load() != reps*n {
			t.Errorf("workers %d: %d items ran, want %d", workers, items.Load(), reps*n)
		}
	}
}

// Element counts up to the type's limit are split (the piece count used to
// overflow for Elements > 2^32 - Grain, and the task ran as one call).
func TestHugeElementCountSplits(t *testing.T) {
	const kHuge KernelID = 41
	var calls, items atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kHuge, Kernel{Name: "huge", Kind: Streaming,
		CPU: func(c *Ctx, d *TaskData) error {
			calls.Add(1)
			items.Add(int64(d.End - d.Begin))
			if d.End < d.Begin {
				t.Errorf("range [%d, %d)", d.Begin, d.End)
			}
			return nil
		}}))
	s, err := New(Config{Kernels: reg, Workers: 2})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	for _, c := range []struct{ n, grain uint32 }{
		{1<<32 - 1, 1 << 26},
		{1<<32 - 1, 1<<32 - 1},
		{1<<32 - 1, 1 << 31},
		{1<<32 - 5, 1<<31 + 1},
		{1<<32 - 100, 1 << 24},
	} {
		calls.Store(0)
		items.Store(0)
		tk := Task{Kernel: kHuge}
		tk.Data.Elements, tk.Data.Grain = c.n, c.grain
		id, err := m.Add(&tk)
		must(t, err)
		must(t, m.Wait(id))
		if items.Load() != int64(c.n) {
			t.Errorf("elements %d grain %d: %d items ran", c.n, c.grain, items.Load())
		}
		want := int64(2) // at least two pieces when the count exceeds the grain
		if c.n <= c.grain {
			want = 1
		}
		if calls.Load() < want {
			t.Errorf("elements %d grain %d: %d calls, want at least %d", c.n, c.grain, calls.Load(), want)
		}
	}
}
