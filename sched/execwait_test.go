package sched

import (
	"testing"
	"time"
)

// handExec is an executor that hands each job to the test, which
// completes it from a goroutine of its own, as a GPU executor's
// completion goroutine does.
type handExec struct{ jobs chan Job }

func (e *handExec) Enqueue(j Job) { e.jobs <- j }
func (e *handExec) Close() error  { return nil }

// completeWhenAsleep completes the next job handed to e once c sleeps in
// its wait (or fails the test after a minute).
func completeWhenAsleep(t *testing.T, e *handExec, c *Ctx) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		j := <-e.jobs
		for deadline := time.Now().Add(time.Minute); !c.waiting.Load(); time.Sleep(50 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Errorf("the waiter never went to sleep")
				break
			}
		}
		j.Done(nil)
	}()
	return done
}

// TestWaitOnExecutorSleepsAtOnce: a Wait for a task that an executor runs
// sleeps without spinning (a spinning waiter takes the CPU the device
// driver needs); a Wait for a CPU task still spins Config.SpinRounds
// rounds before it sleeps. Counted in idle rounds (Ctx.spun), not time.
func TestWaitOnExecutorSleepsAtOnce(t *testing.T) {
	const kWork KernelID = 1
	reg := NewRegistry()
	started, release := make(chan struct{}), make(chan struct{})
	must(t, reg.Register(kWork, Kernel{Name: "work", CPU: func(c *Ctx, d *TaskData) error {
		if d.Params[0] == 1 {
			close(started)
			<-release
		}
		return nil
	}}))
	const spin = 512
	s, err := New(Config{Workers: 1, MainThreads: 1, Kernels: reg, SpinRounds: spin})
	must(t, err)
	defer s.Close()
	gpu, spu := &handExec{jobs: make(chan Job, 4)}, &handExec{jobs: make(chan Job, 4)}
	must(t, s.AttachExecutor(ExecGPU, gpu))
	must(t, s.AttachExecutor(ExecSPU, spu))
	m, err := s.RegisterThread("main")
	must(t, err)

	for _, c := range []struct {
		name string
		aff  Affinity
		e    *handExec
	}{{"GPU", GPU, gpu}, {"SPU", SPU, spu}} {
		done := completeWhenAsleep(t, c.e, m)
		id, err := m.Add(&Task{Kernel: kWork, Affinity: c.aff})
		must(t, err)
		before := m.spun
		must(t, m.Wait(id))
		<-done
		if n := m.spun - before; n != 0 {
			t.Errorf("%s task: the waiter spun %d idle rounds before it slept, want 0", c.name, n)
		}
	}

	// A CPU task that runs on the worker until the waiter sleeps: the
	// waiter spun first. (Added from this goroutine as a registered
	// thread, the task would go to its own deque and run in its Wait.)
	id, err := s.Add(&Task{Kernel: kWork, Affinity: AnyWorker, Data: TaskData{Params: [8]uint32{1}}})
	must(t, err)
	<-started
	go func() {
		for !m.waiting.Load() {
			time.Sleep(50 * time.Microsecond)
		}
		close(release)
	}()
	before := m.spun
	must(t, m.Wait(id))
	if n := m.spun - before; n < spin-1 {
		t.Errorf("CPU task: the waiter spun %d idle rounds before it slept, want at least %d", n, spin-1)
	}
}
