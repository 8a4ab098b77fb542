package sched_test

import (
	"sync/atomic"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestUserSchedulerWaitInKernel: a kernel without a Ctx at hand uses
// Scheduler.Add and Scheduler.Wait; with one worker that must not hang.
func TestUserSchedulerWaitInKernel(t *testing.T) {
	reg := sched.NewRegistry()
	var s *sched.Scheduler
	var ran atomic.Int32
	reg.Register(uRecord, sched.Kernel{Name: "leaf", CPU: func(*sched.Ctx, *sched.TaskData) error { ran.Add(1); return nil }})
	reg.Register(uSum, sched.Kernel{Name: "outer", CPU: func(*sched.Ctx, *sched.TaskData) error {
		id, err := s.Add(&sched.Task{Kernel: uRecord})
		if err != nil {
			return err
		}
		return s.Wait(id)
	}})
	s, _ = sched.New(sched.Config{Kernels: reg, Workers: 1})
	defer s.Close()
	id, _ := s.Add(&sched.Task{Kernel: uSum})
	if err := watchdog(t, hangLimit, "Scheduler.Wait", func() error { return s.Wait(id) }); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 {
		t.Errorf("inner ran %d times", ran.Load())
	}
}
