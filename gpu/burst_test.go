package gpu

// The executor as a sched.Burster: a burst the scheduler begins always
// ends, even when a Placer panics in the middle of the release.

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

const (
	kBurstOuter sched.KernelID = 100 + iota
	kBurstNop
)

// panicOncePlacer panics once, for kBurstNop tasks, after arm.
type panicOncePlacer struct{ armed atomic.Bool }

func (p *panicOncePlacer) Place(id sched.KernelID, k *sched.Kernel, d *sched.TaskData) (sched.Affinity, uint32) {
	if id == kBurstNop && p.armed.CompareAndSwap(true, false) {
		panic("placer bug")
	}
	return sched.AnyWorker, 0
}

// A Placer that panics inside a release (a kernel runs an empty task
// inline via Ctx.Run, whose completion releases three Auto dependents):
// the task being placed fails with sched.ErrPlacerPanic, the other two
// run, the kernel goes on, and the executor's burst count is back at 0.
// Before, the panic unwound through the release: the kernel failed with
// ErrKernelPanic, the dependents after the first were never readied (their
// waiters slept for ever), and the burst count stayed at 1, so every later
// GPU task waited for ever.
func TestBurstPlacerPanicHoldsNothing(t *testing.T) {
	reg := testRegistry(t)
	pl := &panicOncePlacer{}
	var deps [3]sched.TaskID
	must(t, reg.Register(kBurstNop, sched.Kernel{Name: "nop", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}))
	must(t, reg.Register(kBurstOuter, sched.Kernel{Name: "outer", CPU: func(c *sched.Ctx, _ *sched.TaskData) error {
		gate, err := c.Create(&sched.Task{})
		if err != nil {
			return err
		}
		for i := range deps {
			if deps[i], err = c.Add(&sched.Task{Kernel: kBurstNop, Affinity: sched.Auto, Dependency: gate}); err != nil {
				return err
			}
		}
		pl.armed.Store(true)
		return c.Run(gate) // the empty gate completes here, releasing all three
	}}))
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Placer: pl, Workers: 2})
	// A GPU task first: the executor works.
	x, y := ramp(64, 1, 0), ramp(64, 1, 1)
	must(t, e.main.WaitFor(e.add(t, saxpyTask(2, x, y, make([]float32, 64))), time.Minute))
	outer := e.add(t, sched.Task{Kernel: kBurstOuter})
	must(t, e.main.WaitFor(outer, time.Minute))
	failed := 0
	for _, id := range deps {
		err := e.main.WaitFor(id, time.Minute)
		switch {
		case errors.Is(err, sched.ErrPlacerPanic):
			failed++
		case err != nil:
			t.Errorf("dependent %v: %v", id, err)
		}
	}
	if failed != 1 {
		t.Errorf("%d dependents failed with ErrPlacerPanic, want 1", failed)
	}
	e.exec.mu.Lock()
	burst := e.exec.burst
	e.exec.mu.Unlock()
	if burst != 0 {
		t.Errorf("executor burst count after the panic: %d, want 0", burst)
	}
	id := e.add(t, saxpyTask(3, x, y, make([]float32, 64)))
	if err := e.main.WaitFor(id, time.Minute); err != nil {
		t.Errorf("an unrelated GPU task after the panic: %v (burst=%d)", err, burst)
	}
}
