package sched_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// TestUserOddIDs: waiting on the zero ID, a stale ID, a forged ID and an ID of
// another scheduler returns at once (nil, the kept error, or a refusal).
func TestUserOddIDs(t *testing.T) {
	reg := sched.NewRegistry()
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	reg.Register(uFail, sched.Kernel{Name: "fail", CPU: func(*sched.Ctx, *sched.TaskData) error { return errors.New("kept") }})
	s1, _ := sched.New(sched.Config{Kernels: reg, Workers: 1, PoolSize: 64})
	defer s1.Close()
	s2, _ := sched.New(sched.Config{Kernels: reg, Workers: 1, PoolSize: 64})
	defer s2.Close()
	m1, _ := s1.RegisterThread("m1")

	if err := watchdog(t, hangLimit, "Wait(NoTask)", func() error { return m1.Wait(sched.NoTask) }); err != nil {
		t.Errorf("Wait(NoTask): %v", err)
	}
	if err := watchdog(t, hangLimit, "Scheduler.Wait(NoTask)", func() error { return s1.Wait(sched.NoTask) }); err != nil {
		t.Errorf("Scheduler.Wait(NoTask): %v", err)
	}
	failed, _ := m1.Add(&sched.Task{Kernel: uFail})
	if err := m1.Wait(failed); err == nil {
		t.Fatal("failing task reported nil")
	}
	ok, _ := m1.Add(&sched.Task{Kernel: uRecord})
	m1.Wait(ok)
	// Make both IDs stale: run many tasks through the 64-slot pool.
	for i := 0; i < 500; i++ {
		id, err := m1.Add(&sched.Task{Kernel: uRecord})
		if err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			m1.Wait(id)
		}
	}
	if err := watchdog(t, hangLimit, "Wait(stale failed)", func() error { return m1.Wait(failed) }); err == nil || !strings.Contains(err.Error(), "kept") {
		t.Errorf("stale failed ID: %v, want the kept error", err)
	}
	if err := watchdog(t, hangLimit, "Wait(stale ok)", func() error { return m1.Wait(ok) }); err != nil {
		t.Errorf("stale successful ID: %v", err)
	}
	// Foreign: an ID of s1 given to s2, pending or finished.
	held, _ := m1.Create(&sched.Task{})
	for _, id := range []sched.TaskID{held, ok, failed} {
		if err := watchdog(t, hangLimit, "foreign Wait", func() error { return s2.Wait(id) }); !errors.Is(err, sched.ErrForeignTask) {
			t.Errorf("s2.Wait(%v of s1): %v, want ErrForeignTask", id, err)
		}
		if _, err := s2.Add(&sched.Task{Kernel: uRecord, Dependency: id}); !errors.Is(err, sched.ErrForeignTask) {
			t.Errorf("s2 dependency on %v of s1: %v, want ErrForeignTask", id, err)
		}
		if _, err := s2.Add(&sched.Task{Kernel: uRecord, Parent: id}); !errors.Is(err, sched.ErrForeignTask) {
			t.Errorf("s2 parent %v of s1: %v, want ErrForeignTask", id, err)
		}
		if err := s2.Abandon(id, errors.New("x")); err == nil {
			t.Errorf("s2.Abandon(%v of s1) accepted", id)
		}
	}
	if err := s2.Run(held); err == nil {
		t.Errorf("s2.Run(held task of s1) accepted")
	}
	// Forged IDs: every bit pattern must give an answer, never a hang or panic.
	for _, id := range []sched.TaskID{1, 63, 64, 1 << 20, held | 0xfffff, held + 1<<20, ^sched.TaskID(0), held &^ (0xfff << 52)} {
		err := watchdog(t, hangLimit, "Wait(forged)", func() error { return m1.WaitFor(id, 5*time.Second) })
		if errors.Is(err, sched.ErrTimeout) {
			t.Errorf("Wait(forged %#x) waited for the time-out", uint64(id))
		}
		_ = s1.IsFinished(id)
		_ = s1.Err(id)
	}
	if err := m1.Run(held); err != nil {
		t.Errorf("Run(held): %v", err)
	}
	if err := m1.Run(held); err == nil {
		t.Errorf("second Run of the same held task accepted")
	}
	if err := m1.Run(ok); err == nil {
		t.Errorf("Run of a task that was never Created (stale) accepted")
	}
}

// TestUserManySchedulers: a tool that makes hundreds of schedulers in turn;
// an ID of the first is foreign to every later one.
func TestUserManySchedulers(t *testing.T) {
	reg := sched.NewRegistry()
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	first, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	held, _ := first.Create(&sched.Task{})
	for i := 0; i < 300; i++ {
		s, err := sched.New(sched.Config{Kernels: reg, Workers: 1, PoolSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(&sched.Task{Kernel: uRecord, Dependency: held}); !errors.Is(err, sched.ErrForeignTask) {
			t.Fatalf("scheduler %d accepted a dependency on another scheduler's task: %v", i+2, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	first.Run(held)
}

// TestIDCheckWhileTasksFinish: tasks, half of them failing, finish while
// other goroutines Wait for their IDs, and more goroutines than there are
// processors keep the Go scheduler busy, so a completing thread can be
// descheduled anywhere in its completion, for long. No Wait may call an
// ID that Add returned never issued (ErrNotIssued): each returns the
// task's own result.
func TestIDCheckWhileTasksFinish(t *testing.T) {
	reg := sched.NewRegistry()
	okID, err := reg.RegisterNext(sched.Kernel{Name: "ok", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	errKept := errors.New("kept")
	failID, err := reg.RegisterNext(sched.Kernel{Name: "fail", CPU: func(*sched.Ctx, *sched.TaskData) error { return errKept }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 2, PoolSize: 256, MaxRetainedErrors: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const adders, waitersPerAdder = 4, 4
	perAdder := 3000
	if testing.Short() {
		perAdder = 500
	}
	stop := make(chan struct{})
	var burners sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		burners.Go(func() {
			for x := 0; ; x++ {
				select {
				case <-stop:
					return
				default:
				}
				if x%4096 == 0 {
					s.Err(sched.NoTask) // nothing to find: keeps the call in the loop
				}
			}
		})
	}
	var misreports, wrong atomic.Int64
	var wg sync.WaitGroup
	for a := range adders {
		ids := make(chan sched.TaskID, 64)
		for range waitersPerAdder {
			wg.Go(func() {
				for id := range ids {
					err := s.Wait(id)
					if errors.Is(err, sched.ErrNotIssued) {
						misreports.Add(1)
					} else if err != nil && !errors.Is(err, errKept) {
						wrong.Add(1)
					}
				}
			})
		}
		wg.Go(func() {
			defer close(ids)
			for i := range perAdder {
				k := okID
				if (i+a)%2 == 0 {
					k = failID
				}
				id, err := s.Add(&sched.Task{Kernel: k})
				if err != nil {
					t.Error(err)
					return
				}
				ids <- id
				ids <- id // two waiters per task: one may start as it finishes
			}
		})
	}
	wg.Wait()
	close(stop)
	burners.Wait()
	if n := misreports.Load(); n > 0 {
		t.Errorf("%d Waits of %d reported an ID that Add returned as never issued", n, 2*adders*perAdder)
	}
	if n := wrong.Load(); n > 0 {
		t.Errorf("%d Waits returned an error other than the task's", n)
	}
}
