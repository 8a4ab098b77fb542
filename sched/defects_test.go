package sched

import (
	"errors"
	"fmt"
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

// A TaskID of another scheduler is refused however many schedulers the
// process made: the tag in an ID used to be 8 bits and wrapped, so the
// 256th scheduler took the first one's live tasks for its own.
func TestForeignIDsAfterManySchedulers(t *testing.T) {
	first, err := New(Config{Workers: 1, PoolSize: 16})
	must(t, err)
	defer first.Close()
	held, err := first.Create(&Task{})
	must(t, err)
	defer first.Run(held)
	check := func(s *Scheduler, id TaskID, what string) {
		t.Helper()
		if _, err := s.Add(&Task{Dependency: id}); !errors.Is(err, ErrForeignTask) {
			t.Fatalf("%s: Add with a foreign dependency %v: %v, want ErrForeignTask", what, id, err)
		}
		if _, err := s.Add(&Task{Parent: id}); !errors.Is(err, ErrForeignTask) {
			t.Fatalf("%s: Add with a foreign parent %v: %v, want ErrForeignTask", what, id, err)
		}
		if err := s.Wait(id); !errors.Is(err, ErrForeignTask) {
			t.Fatalf("%s: Wait on a foreign %v: %v, want ErrForeignTask", what, id, err)
		}
	}
	// Many schedulers open at once, and many made and closed in turn.
	var open []*Scheduler
	for i := range 300 {
		s, err := New(Config{Workers: 1, PoolSize: 16})
		must(t, err)
		check(s, held, fmt.Sprintf("open scheduler %d", i+2))
		open = append(open, s)
	}
	for _, s := range open {
		must(t, s.Close())
	}
	for i := range 300 {
		s, err := New(Config{Workers: 1, PoolSize: 16})
		must(t, err)
		check(s, held, fmt.Sprintf("scheduler %d made after 300 closed", i+1))
		must(t, s.Close())
	}

	// A closed scheduler's tag, given out again, refuses the old IDs
	// (live and finished ones of the closed scheduler alike).
	old, err := New(Config{Workers: 1, PoolSize: 16})
	must(t, err)
	m, err := old.RegisterThread("main")
	must(t, err)
	var ids []TaskID
	for range 100 {
		id, err := m.Add(&Task{})
		must(t, err)
		must(t, m.Wait(id))
		ids = append(ids, id)
	}
	stuck, err := old.Create(&Task{})
	must(t, err)
	ids = append(ids, stuck)
	old.Close() // fails the held task: its ID is the newest generation of its slot
	tags.mu.Lock()
	tags.last = old.id - 1 // the next New takes old's tag
	tags.mu.Unlock()
	reuse, err := New(Config{Workers: 1, PoolSize: 16})
	must(t, err)
	defer reuse.Close()
	if reuse.id != old.id {
		t.Fatalf("tag %d not reused (got %d)", old.id, reuse.id)
	}
	for _, id := range ids {
		check(reuse, id, "scheduler on a reused tag")
	}
	// And its own IDs are not mistaken for foreign ones.
	rm, err := reuse.RegisterThread("main")
	must(t, err)
	for range 100 {
		id, err := rm.Add(&Task{})
		must(t, err)
		must(t, rm.Wait(id))
		if _, err := rm.Add(&Task{Dependency: id}); err != nil {
			t.Fatal(err)
		}
	}
}
