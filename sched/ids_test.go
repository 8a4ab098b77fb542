package sched

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
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

// TestIDCheckDuringFailedCompletion: a failing task held between its last
// decrement and its generation bump (recording its error waits for the
// error table's lock, held here) was issued: checking its ID says so
// while the completion is held, and Wait then returns the task's error.
func TestIDCheckDuringFailedCompletion(t *testing.T) {
	reg := NewRegistry()
	errKept := errors.New("kept")
	fail, err := reg.RegisterNext(Kernel{Name: "fail", CPU: func(*Ctx, *TaskData) error { return errKept }})
	must(t, err)
	s, err := New(Config{Kernels: reg, Workers: 1, PoolSize: 16})
	must(t, err)
	defer s.Close()

	s.failMu.Lock()
	id, err := s.Add(&Task{Kernel: fail})
	if err != nil {
		s.failMu.Unlock()
		t.Fatal(err)
	}
	sl := &s.slots[id.index()]
	deadline := time.Now().Add(20 * time.Second)
	for atomic.LoadInt32(&sl.open) != 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	open, gen := atomic.LoadInt32(&sl.open), sl.genLoad()
	checkErr := s.checkID(id, "check")
	s.failMu.Unlock()
	if open != 0 || gen != id.gen() {
		t.Fatalf("the task is not held in its completion (open %d, generation %d, ID's %d)", open, gen, id.gen())
	}
	if checkErr != nil {
		t.Errorf("checking the ID of a task in its completion: %v", checkErr)
	}
	if err := s.Wait(id); !errors.Is(err, errKept) {
		t.Errorf("Wait = %v, want the task's error", err)
	}
}

// TestIDCheckDuringSuccessfulCompletion: a task that succeeded, held
// between its last decrement and its generation bump for longer than any
// bounded wait (the race check's bookkeeping in complete waits for the
// checker's lock, held here), was issued: checking its ID says so at
// once, and Wait then returns nil. A free slot's ID of the same shape is
// still refused as never issued.
func TestIDCheckDuringSuccessfulCompletion(t *testing.T) {
	reg := NewRegistry()
	release := make(chan struct{})
	var started atomic.Bool
	gate, err := reg.RegisterNext(Kernel{Name: "gate", CPU: func(*Ctx, *TaskData) error {
		started.Store(true)
		<-release
		return nil
	}})
	must(t, err)
	s, err := New(Config{Kernels: reg, Workers: 1, PoolSize: 16, CheckRaces: true})
	must(t, err)
	defer s.Close()

	id, err := s.Add(&Task{Kernel: gate})
	must(t, err)
	waitUntil(t, 20*time.Second, "the task runs", started.Load)
	r := s.raceChecker()
	r.mu.Lock()
	close(release)
	sl := &s.slots[id.index()]
	deadline := time.Now().Add(20 * time.Second)
	for atomic.LoadInt32(&sl.open) != 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(300 * time.Millisecond) // the completing thread stays stalled
	open, gen := atomic.LoadInt32(&sl.open), sl.genLoad()
	checkErr := s.checkID(id, "check")
	// A never-issued ID: the next slot's generation, its slot free.
	free := makeID(s.id, s.slots[14].genLoad(), 14)
	freeErr := s.checkID(free, "check")
	r.mu.Unlock()
	if open != 0 || gen != id.gen() {
		t.Fatalf("the task is not held in its completion (open %d, generation %d, ID's %d)", open, gen, id.gen())
	}
	if checkErr != nil {
		t.Errorf("checking the ID of a task in its completion: %v", checkErr)
	}
	if !errors.Is(freeErr, ErrNotIssued) {
		t.Errorf("checking a free slot's ID: %v, want ErrNotIssued", freeErr)
	}
	if err := s.Wait(id); err != nil {
		t.Errorf("Wait = %v", err)
	}
}

// BenchmarkCheckID: checkID of a live task's ID (the slot holds it) and
// of a finished one (the slot moved on), the answers Add's checks of a
// parent and a dependency give most.
func BenchmarkCheckID(b *testing.B) {
	s, err := New(Config{Workers: 1, PoolSize: 64})
	must(b, err)
	defer s.Close()
	live, err := s.Create(&Task{})
	must(b, err)
	done, err := s.Add(&Task{})
	must(b, err)
	must(b, s.Wait(done))
	for _, c := range []struct {
		name string
		id   TaskID
	}{{"live", live}, {"finished", done}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := s.checkID(c.id, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	must(b, s.Run(live))
}
