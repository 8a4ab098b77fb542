package spu

import (
	"errors"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// panickingObserver panics in TaskRan for every task.
type panickingObserver struct{}

func (panickingObserver) TaskRan(*sched.RunEvent) { panic("observer boom") }

// TestObserverPanicFailsSPUTask: a panic in Config.Observer's TaskRan,
// called on an SPU unit's goroutine when its job completes, fails that
// task with sched.ErrObserverPanic, as it does a CPU task's, instead of
// ending the process; the unit goes on and runs the next task.
func TestObserverPanicFailsSPUTask(t *testing.T) {
	_, m := spuSched(t, kernelRegistry(t), Options{Units: 1}, panickingObserver{})
	r := rng(3)
	for i := range 2 {
		task, _ := saxpyTask(r, 1000)
		task.Affinity = sched.SPU
		id, err := m.Add(&task)
		must(t, err)
		hang := time.AfterFunc(10*time.Second, func() { panic("Wait for an SPU task did not return within 10 s") })
		err = m.Wait(id)
		hang.Stop()
		if !errors.Is(err, sched.ErrObserverPanic) {
			t.Fatalf("task %d: Wait = %v, want sched.ErrObserverPanic", i, err)
		}
	}
}
