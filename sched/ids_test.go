package sched

import (
	"errors"
	"fmt"
	"testing"
)

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

func TestStaleIDs(t *testing.T) {
	s, m := start(t, Config{Workers: 1, PoolSize: 16}, newRecorder(1), nil)
	id, err := m.Add(rec(0))
	must(t, err)
	must(t, m.Wait(id))
	// Reuse every slot many times.
	for i := 0; i < 1000; i++ {
		x, err := m.Add(rec(0))
		must(t, err)
		must(t, m.Wait(x))
	}
	if !s.IsFinished(id) {
		t.Fatal("stale ID reports unfinished")
	}
	if err := m.Wait(id); err != nil {
		t.Fatalf("Wait on stale ID: %v", err)
	}
	// A dependency on a finished task is satisfied.
	tk := rec(0)
	tk.Dependency = id
	x, err := m.Add(tk)
	must(t, err)
	must(t, m.Wait(x))
}
