package sched_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// TestUserCloseWhileWaiting: goroutines waiting on held tasks, pinned tasks
// of a thread that never serves, and ordinary tasks all return from Wait
// when Close runs, with ErrClosed for what could not run. Close twice gives
// the same result; Add after Close fails with ErrClosed.
func TestUserCloseWhileWaiting(t *testing.T) {
	reg := sched.NewRegistry()
	var ran atomic.Int32
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2, MainThreads: 2})
	main, _ := s.RegisterThread("main")
	held, _ := main.Create(&sched.Task{})
	child, _ := main.Add(&sched.Task{Kernel: uRecord, Parent: held})
	dependent, _ := main.Add(&sched.Task{Kernel: uRecord, Dependency: held})
	pinned, err := main.Add(&sched.Task{Kernel: uRecord, Affinity: sched.OnThread(1)}) // thread 1 never registers
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, id := range []sched.TaskID{held, child, dependent, pinned} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Wait(id) }()
	}
	time.Sleep(20 * time.Millisecond) // let the waiters block (not required for correctness)
	closeErr := watchdog(t, hangLimit, "Close", s.Close)
	watchdog(t, hangLimit, "waiters after Close", func() error { wg.Wait(); return nil })
	if child != 0 && errs[1] != nil {
		t.Errorf("child of a held parent: %v (it could run)", errs[1])
	}
	for i, name := range []string{"held", "", "dependent", "pinned"} {
		if name != "" && !errors.Is(errs[i], sched.ErrClosed) && !errors.Is(errs[i], sched.ErrDepFailed) {
			t.Errorf("%s task after Close: %v, want ErrClosed", name, errs[i])
		}
	}
	if again := s.Close(); fmt.Sprint(again) != fmt.Sprint(closeErr) {
		t.Errorf("second Close: %v, first: %v", again, closeErr)
	}
	if _, err := s.Add(&sched.Task{Kernel: uRecord}); !errors.Is(err, sched.ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if _, err := main.Add(&sched.Task{Kernel: uRecord}); !errors.Is(err, sched.ErrClosed) {
		t.Errorf("Ctx.Add after Close: %v", err)
	}
	if err := watchdog(t, hangLimit, "Wait after Close", func() error { return main.Wait(held) }); !errors.Is(err, sched.ErrClosed) {
		t.Errorf("Wait(held) after Close: %v", err)
	}
	if _, err := s.RegisterThread("late"); err == nil {
		t.Errorf("RegisterThread after Close accepted")
	}
}
