package sched

import (
	"runtime"
	"testing"
	"time"
)

// Scheduler.Wait on a task that has not finished looks up the calling
// goroutine (is it a scheduler thread?): that costs no allocation.
func TestSchedulerWaitAllocatesNothing(t *testing.T) {
	const kSpin KernelID = 57
	reg := NewRegistry()
	must(t, reg.Register(kSpin, Kernel{Name: "spin", CPU: func(*Ctx, *TaskData) error {
		for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
		}
		return nil
	}}))
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	task := Task{Kernel: kSpin}
	if n := testing.AllocsPerRun(200, func() {
		id, err := s.Add(&task)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(id); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Add and Scheduler.Wait: %v allocations", n)
	}
}

func TestWaitHelps(t *testing.T) {
	// With the only worker blocked, Wait on the main thread must run the
	// task itself.
	block := make(chan struct{})
	r := newRecorder(1)
	s, m := start(t, Config{Workers: 1}, r, block)
	wb, err := m.Add(&Task{Kernel: kBlock})
	must(t, err)
	for !workerBusy(s) {
		runtime.Gosched()
	}
	id, err := m.Add(rec(0))
	must(t, err)
	must(t, m.Wait(id))
	if got := r.thread[0].Load(); got != int32(s.Workers()) {
		t.Fatalf("task ran on thread %d, want the waiting main thread %d", got, s.Workers())
	}
	close(block)
	must(t, m.Wait(wb))
}

func TestWaitEventExternal(t *testing.T) {
	r := newRecorder(1)
	s, m := start(t, Config{Workers: 1}, r, nil)
	ev := s.NewEvent()
	go func() {
		time.Sleep(5 * time.Millisecond)
		ev.Signal()
	}()
	id, err := m.Add(rec(0))
	must(t, err)
	m.WaitEvent(ev)
	must(t, m.Wait(id))
	if !ev.IsSet() {
		t.Fatal("event not set")
	}
}
