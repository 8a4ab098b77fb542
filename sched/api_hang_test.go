package sched_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestUserWaitOwnTask: a kernel waiting for itself gets an error, not a hang.
func TestUserWaitOwnTask(t *testing.T) {
	reg := sched.NewRegistry()
	reg.Register(uRecord, sched.Kernel{Name: "self", CPU: func(c *sched.Ctx, _ *sched.TaskData) error {
		return c.Wait(c.Current())
	}})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1})
	defer s.Close()
	id, _ := s.Add(&sched.Task{Kernel: uRecord})
	if err := watchdog(t, hangLimit, "Wait", func() error { return s.Wait(id) }); err == nil {
		t.Errorf("a kernel waiting for its own task succeeded")
	}
}

// TestUserSelfDependency: dependency on oneself as parent, and on an ancestor.
func TestUserSelfDependency(t *testing.T) {
	reg := sched.NewRegistry()
	reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1})
	defer s.Close()
	main, _ := s.RegisterThread("main")
	root, _ := main.Create(&sched.Task{})
	mid, _ := main.Create(&sched.Task{Parent: root})
	if _, err := main.Add(&sched.Task{Kernel: uRecord, Parent: mid, Dependency: root}); !errors.Is(err, sched.ErrSelfDepend) {
		t.Errorf("dependency on a grandparent: %v, want ErrSelfDepend", err)
	}
	if _, err := main.Add(&sched.Task{Kernel: uRecord, Parent: mid, Dependency: mid}); !errors.Is(err, sched.ErrSelfDepend) {
		t.Errorf("dependency on the parent: %v, want ErrSelfDepend", err)
	}
	main.Run(mid)
	main.Run(root)
	if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(root) }); err != nil {
		t.Fatal(err)
	}
	// A finished parent is refused.
	if _, err := main.Add(&sched.Task{Kernel: uRecord, Parent: root}); err == nil {
		t.Errorf("child of a finished parent accepted")
	}
}

// TestUserHangShapes: the shapes that used to hang without a word (issue
// reports of a helping wait cycle, back-pressure with no way out, a cycle
// through a parent) each end with an error.
func TestUserHangShapes(t *testing.T) {
	t.Run("back-pressure", func(t *testing.T) {
		reg := sched.NewRegistry()
		reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
		s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1, PoolSize: 16})
		defer s.Close()
		held, _ := s.Create(&sched.Task{})
		var last error
		watchdog(t, hangLimit, "Add with a full pool", func() error {
			for i := 0; i < 40; i++ {
				if _, err := s.Add(&sched.Task{Kernel: uRecord, Dependency: held}); err != nil {
					last = err
					return nil
				}
			}
			return nil
		})
		if !errors.Is(last, sched.ErrPoolDeadlock) {
			t.Errorf("40 dependents of a held task in a pool of 16: %v, want ErrPoolDeadlock", last)
		}
		s.Run(held)
	})
	t.Run("cycle through a parent", func(t *testing.T) {
		reg := sched.NewRegistry()
		reg.Register(uRecord, sched.Kernel{Name: "rec", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
		s, _ := sched.New(sched.Config{Kernels: reg, Workers: 1})
		defer s.Close()
		main, _ := s.RegisterThread("main")
		x, _ := main.Create(&sched.Task{})
		d, _ := main.Create(&sched.Task{Dependency: x})
		if _, err := main.Add(&sched.Task{Kernel: uRecord, Parent: x, Dependency: d}); !errors.Is(err, sched.ErrCycle) {
			t.Errorf("X -> child C -> D -> X: %v, want ErrCycle", err)
		}
		main.Run(d)
		main.Run(x)
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(d) }); err != nil {
			t.Error(err)
		}
	})
	t.Run("helping wait cycle", func(t *testing.T) {
		// A waits for its child B; the waiting thread helps and picks up C;
		// C waits for D; D depends on A.
		const kA, kB, kC sched.KernelID = 30, 31, 32
		reg := sched.NewRegistry()
		var s *sched.Scheduler
		var cID, dID atomic.Uint64
		release := make(chan struct{})
		reg.Register(kB, sched.Kernel{Name: "B", CPU: func(*sched.Ctx, *sched.TaskData) error { <-release; return nil }})
		reg.Register(kC, sched.Kernel{Name: "C", CPU: func(c *sched.Ctx, _ *sched.TaskData) error {
			return c.Wait(sched.TaskID(dID.Load()))
		}})
		reg.Register(kA, sched.Kernel{Name: "A", CPU: func(c *sched.Ctx, _ *sched.TaskData) error {
			b, err := c.Add(&sched.Task{Kernel: kB, Parent: c.Current(), Affinity: sched.OnThread(0)})
			if err != nil {
				return err
			}
			d, err := c.Add(&sched.Task{Dependency: c.Current()})
			if err != nil {
				return err
			}
			dID.Store(uint64(d))
			id, err := c.Add(&sched.Task{Kernel: kC})
			if err != nil {
				return err
			}
			cID.Store(uint64(id))
			close(release)
			return c.Wait(b)
		}})
		s, _ = sched.New(sched.Config{Kernels: reg, Workers: 1, MainThreads: 1})
		defer s.Close()
		main, _ := s.RegisterThread("main")
		a, _ := main.Add(&sched.Task{Kernel: kA})
		// Wait, not WaitFor: B is pinned to this thread, and WaitFor runs
		// no tasks (the watchdog turns a hang into a failure).
		err := watchdog(t, hangLimit, "Wait(A)", func() error {
			if errA := main.Wait(a); errA != nil {
				return errA
			}
			return main.Wait(sched.TaskID(cID.Load()))
		})
		// Whether the cycle forms depends on which thread runs A, B and C
		// first; when it does, C's wait fails naming it.
		if err != nil && !errors.Is(err, sched.ErrDeadlock) {
			t.Errorf("helping wait cycle: C: %v, want nil or ErrDeadlock", err)
		}
	})
	t.Run("abandon a hung kernel", func(t *testing.T) {
		reg := sched.NewRegistry()
		stuck := make(chan struct{})
		started := make(chan struct{})
		var ran atomic.Int32
		reg.Register(uRecord, sched.Kernel{Name: "hang", CPU: func(*sched.Ctx, *sched.TaskData) error { close(started); <-stuck; return nil }})
		reg.Register(uSum, sched.Kernel{Name: "after", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
		s, _ := sched.New(sched.Config{Kernels: reg, Workers: 2, MainThreads: 1})
		// Waits from a goroutine that is not a scheduler thread: a thread
		// that helps while it waits could pick up the hanging kernel itself.
		h, _ := s.Add(&sched.Task{Kernel: uRecord})
		dep, _ := s.Add(&sched.Task{Kernel: uSum, Dependency: h})
		watchdog(t, hangLimit, "kernel start", func() error { <-started; return nil })
		main := s
		if err := s.Abandon(h, errors.New("frame budget")); err != nil {
			t.Fatal(err)
		}
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(h) }); !errors.Is(err, sched.ErrAbandoned) {
			t.Errorf("Wait on an abandoned task: %v", err)
		}
		if err := watchdog(t, hangLimit, "Wait", func() error { return main.Wait(dep) }); !errors.Is(err, sched.ErrDepFailed) {
			t.Errorf("dependent of an abandoned task: %v", err)
		}
		if err := s.Abandon(h, errors.New("again")); err == nil {
			t.Errorf("second Abandon accepted")
		}
		close(stuck)
		watchdog(t, hangLimit, "Close", s.Close)
		if ran.Load() != 0 {
			t.Errorf("dependent of an abandoned task ran")
		}
	})
}
