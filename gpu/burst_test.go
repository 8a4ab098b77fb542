package gpu

// The executor as a sched.Burster: a burst the scheduler begins always
// ends, even when a Placer panics in the middle of the release.

import (
	"errors"
	"fmt"
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

// TestBurstOfOneGoesInline: a release whose only GPU dependent is one of
// several (the others run on CPU workers) submits that job on the
// releasing thread, as a lone Enqueue does, instead of handing it to the
// submitter goroutine; a lone GPU task is inline too; a burst of eight is
// not (it goes to the submitter as one command buffer).
func TestBurstOfOneGoesInline(t *testing.T) {
	reg := testRegistry(t)
	must(t, reg.Register(kBurstNop, sched.Kernel{Name: "nop", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}))
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg})
	x, y := ramp(64, 1, 0), ramp(64, 1, 1)
	must(t, e.main.WaitFor(e.add(t, saxpyTask(2, x, y, make([]float32, 64))), time.Minute)) // pipeline ready
	release := func(gpuTasks, cpuTasks int) (inline, submits uint64) {
		t.Helper()
		st0 := e.exec.Stats()
		gate, err := e.main.Create(&sched.Task{})
		must(t, err)
		var ids []sched.TaskID
		for range gpuTasks {
			task := saxpyTask(3, x, y, make([]float32, 64))
			task.Dependency = gate
			ids = append(ids, e.add(t, task))
		}
		for range cpuTasks {
			ids = append(ids, e.add(t, sched.Task{Kernel: kBurstNop, Dependency: gate}))
		}
		must(t, e.main.Run(gate))
		for _, id := range ids {
			must(t, e.main.WaitFor(id, time.Minute))
		}
		st := e.exec.Stats()
		return st.Inline - st0.Inline, st.Submits - st0.Submits
	}
	for _, c := range []struct {
		gpu, cpu int
		inline   uint64
	}{{1, 3, 1}, {1, 1, 1}, {1, 0, 1}, {8, 2, 0}} {
		inline, submits := release(c.gpu, c.cpu)
		if inline != c.inline || submits != 1 {
			t.Errorf("a release of %d GPU and %d CPU tasks: %d inline, %d submits; want %d inline, 1 submit", c.gpu, c.cpu, inline, submits, c.inline)
		}
	}
}

// TestEndBurstAfterLossSubmitsNothing: a job held by a burst when the
// device is lost fails with ErrDeviceLost at EndBurst without being
// submitted, as an Enqueue after the loss does (EndBurst's inline path
// submitted it first).
func TestEndBurstAfterLossSubmitsNothing(t *testing.T) {
	dev := openTestDevice(t, Options{})
	t.Cleanup(func() { must(t, dev.Close()) }) // after newEnv's cleanup closed the scheduler
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{})
	x, y := ramp(64, 1, 0), ramp(64, 1, 1)
	must(t, e.main.WaitFor(e.add(t, saxpyTask(2, x, y, make([]float32, 64))), time.Minute))
	e.exec.BeginBurst()
	id := e.add(t, saxpyTask(2, x, y, make([]float32, 64)))
	dev.markLost(fmt.Errorf("%w: injected by the test", ErrDeviceLost))
	st0 := e.exec.Stats()
	e.exec.EndBurst()
	if err := e.main.WaitFor(id, time.Minute); !errors.Is(err, ErrDeviceLost) {
		t.Errorf("the held job after the loss: %v, want ErrDeviceLost", err)
	}
	if st := e.exec.Stats(); st.Submits != st0.Submits || st.Inline != st0.Inline {
		t.Errorf("after the loss: %d submits, %d inline, want none", st.Submits-st0.Submits, st.Inline-st0.Inline)
	}
}
