package sched

import (
	"errors"
	"strings"
	"testing"
)

// panicPlacer panics placing every task.
type panicPlacer struct{}

func (panicPlacer) Place(KernelID, *Kernel, *TaskData) (Affinity, uint32) { panic("placer bug") }

// TestPlacerPanicFailsTheTask: a Placer that panics fails the task it was
// placing with ErrPlacerPanic (naming the panic), wherever the placement
// runs: in Add (a task with no dependency), on a worker releasing the
// dependents of a CPU task (outside any kernel: the panic ended the
// process), and for every dependent of one release. Other tasks are not
// affected.
func TestPlacerPanicFailsTheTask(t *testing.T) {
	const kWork KernelID = 1
	reg := NewRegistry()
	must(t, reg.Register(kWork, Kernel{Name: "work", CPU: func(c *Ctx, d *TaskData) error { return nil }}))
	s, err := New(Config{Workers: 2, MainThreads: 1, Kernels: reg, Placer: panicPlacer{}})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)

	lone, err := m.Add(&Task{Kernel: kWork, Affinity: Auto})
	must(t, err)
	if err := m.Wait(lone); !errors.Is(err, ErrPlacerPanic) || !strings.Contains(err.Error(), "placer bug") || !strings.Contains(err.Error(), `"work"`) {
		t.Errorf("Auto task, Placer panics in Add: %v, want ErrPlacerPanic naming the kernel and the panic", err)
	}
	// A CPU task on a worker releases five Auto dependents and one
	// AnyWorker one.
	first, err := s.Add(&Task{Kernel: kWork})
	must(t, err)
	var auto []TaskID
	for range 5 {
		id, err := s.Add(&Task{Kernel: kWork, Affinity: Auto, Dependency: first})
		must(t, err)
		auto = append(auto, id)
	}
	cpu, err := s.Add(&Task{Kernel: kWork, Dependency: first})
	must(t, err)
	must(t, m.Wait(first))
	for _, id := range auto {
		if err := m.Wait(id); !errors.Is(err, ErrPlacerPanic) {
			t.Errorf("Auto dependent %v: %v, want ErrPlacerPanic", id, err)
		}
	}
	must(t, m.Wait(cpu))
	// The scheduler still runs work.
	id, err := m.Add(&Task{Kernel: kWork})
	must(t, err)
	must(t, m.Wait(id))
}
