package gpu

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// Kernels whose tasks the panic tests make the executor panic on: saxpy
// under another ID, one with a name and one without.
const (
	kDoomed       sched.KernelID = 110
	kDoomedNoName sched.KernelID = 111
)

// doomedEnv is an env whose executor panics (testHook) at the point at
// (hookPlan or hookComplete) on the tasks of kDoomed and kDoomedNoName;
// noInline makes every job go through the submitter goroutine.
func doomedEnv(t *testing.T, at string, noInline bool) *env {
	t.Helper()
	dev := device(t, false)
	reg := testRegistry(t)
	saxpy := *reg.Lookup(kSaxpy)
	saxpy.Name = "saxpy-doomed"
	must(t, reg.Register(kDoomed, saxpy))
	saxpy.Name = ""
	must(t, reg.Register(kDoomedNoName, saxpy))
	// Ready pipelines, so that Enqueue may submit inline. The error is
	// kBad's, whose module is broken on purpose (testRegistry).
	_ = dev.PreparePipelines(reg)
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg})
	e.exec.noInline = noInline
	e.exec.testHook = func(where string, kid sched.KernelID) {
		if where == at && (kid == kDoomed || kid == kDoomedNoName) {
			panic(fmt.Sprintf("injected panic at %s", at))
		}
	}
	return e
}

// checkPanicErr checks that err is the failure of a task of kernel kid
// that the executor panicked on at stage.
func checkPanicErr(t *testing.T, err error, kid sched.KernelID, stage string) {
	t.Helper()
	if err == nil {
		t.Fatalf("kernel %d: the task succeeded; want it failed by the executor's panic", kid)
	}
	name := fmt.Sprintf("task of kernel %d:", kid)
	if kid == kDoomed {
		name = fmt.Sprintf("task of kernel %d %q:", kid, "saxpy-doomed")
	}
	msg := err.Error()
	if !errors.Is(err, ErrExecutorPanic) || !strings.Contains(msg, name) || !strings.Contains(msg, "injected panic") ||
		!strings.Contains(msg, stage) {
		t.Fatalf("error %q: want ErrExecutorPanic naming %q, the panic and %q", firstLine(msg), name, stage)
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// runSaxpy runs a good saxpy task of n items and checks its result.
func runSaxpy(t *testing.T, e *env, n int) {
	t.Helper()
	x, y, z := ramp(n, 1, 0), ramp(n, 2, 1), make([]float32, n)
	must(t, e.main.Wait(e.add(t, saxpyTask(3, x, y, z))))
	want := make([]float32, n)
	for i := range want {
		want[i] = 3*x[i] + y[i]
	}
	closeTo(t, "saxpy after the executor's panic", z, want)
}

func doomedTask(kid sched.KernelID, n int) sched.Task {
	task := saxpyTask(3, ramp(n, 1, 0), ramp(n, 2, 1), make([]float32, n))
	task.Kernel = kid
	return task
}

// TestExecutorPanicFailsTaskNotProcess: a panic of the executor's own code
// while it plans a job (inline on the caller's goroutine, or on the
// submitter goroutine) or completes one (on the completion goroutine)
// fails that task with ErrExecutorPanic naming its kernel, and the
// executor goes on running the next tasks.
func TestExecutorPanicFailsTaskNotProcess(t *testing.T) {
	t.Run("plan/inline", func(t *testing.T) {
		e := doomedEnv(t, hookPlan, false)
		inline := 0
		for i := range 20 {
			kid := []sched.KernelID{kDoomed, kDoomedNoName}[i%2]
			err := e.main.Wait(e.add(t, doomedTask(kid, 100)))
			// Usually submitted inline; when the completion goroutine
			// still holds the command buffers, by the submitter.
			checkPanicErr(t, err, kid, "planning the task")
			if strings.Contains(err.Error(), "inline submission") {
				inline++
			}
			runSaxpy(t, e, 1000)
		}
		if inline == 0 {
			t.Fatal("no doomed task was planned inline (Enqueue's own submission): the inline path went untested")
		}
		if st := e.exec.Stats(); st.Failed != 20 || st.Tasks != 20 {
			t.Fatalf("stats %+v: want 20 tasks failed and 20 completed", st)
		}
	})
	t.Run("plan/submitter", func(t *testing.T) {
		e := doomedEnv(t, hookPlan, true)
		err := e.main.Wait(e.add(t, doomedTask(kDoomed, 100)))
		checkPanicErr(t, err, kDoomed, "on the submitter goroutine")
		t.Logf("the failed task's error: %s", firstLine(err.Error()))
		runSaxpy(t, e, 1000)
		// In one batch with good tasks: only the doomed one fails, and
		// the others, planned before and after it, run.
		for range 5 {
			var ids []sched.TaskID
			var outs [][]float32
			for i := range 7 {
				if i == 3 {
					ids = append(ids, e.add(t, doomedTask(kDoomedNoName, 64)))
					outs = append(outs, nil)
					continue
				}
				x, y, z := ramp(64+i, 1, float32(i)), ramp(64+i, 2, 0), make([]float32, 64+i)
				ids = append(ids, e.add(t, saxpyTask(2, x, y, z)))
				outs = append(outs, z)
			}
			for i, id := range ids {
				err := e.main.Wait(id)
				if i == 3 {
					checkPanicErr(t, err, kDoomedNoName, "planning the task on the submitter goroutine")
					continue
				}
				must(t, err)
				x, y := ramp(64+i, 1, float32(i)), ramp(64+i, 2, 0)
				want := make([]float32, len(x))
				for k := range x {
					want[k] = 2*x[k] + y[k]
				}
				closeTo(t, fmt.Sprintf("task %d of the batch", i), outs[i], want)
			}
		}
	})
	t.Run("complete", func(t *testing.T) {
		e := doomedEnv(t, hookComplete, false)
		for i := range 10 {
			kid := []sched.KernelID{kDoomed, kDoomedNoName}[i%2]
			err := e.main.Wait(e.add(t, doomedTask(kid, 1000)))
			checkPanicErr(t, err, kid, "on the completion goroutine")
			if i == 0 {
				t.Logf("the failed task's error: %s", firstLine(err.Error()))
			}
			runSaxpy(t, e, 100_003)
		}
		if err := e.dev.Lost(); err != nil {
			t.Fatalf("device lost after the recovered panics: %v", err)
		}
	})
}
