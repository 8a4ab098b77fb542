package gpu

import (
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// panicObserver panics in TaskRan for every task.
type panicObserver struct{}

func (panicObserver) TaskRan(*sched.RunEvent) { panic("observer boom") }

// A panic in Config.Observer's TaskRan, which the executor calls on its
// own goroutine after it completed the task, neither ends the process nor
// changes the task's outcome: the task succeeded with its output written,
// and the panic is kept as an error message of the device, naming the
// task. (sched.Observer's doc says so for executors' tasks; a task that a
// scheduler thread ran fails with sched.ErrObserverPanic instead.)
func TestObserverPanicOnGPUTaskKeepsOutcome(t *testing.T) {
	dev := openTestDevice(t, Options{})
	exec, err := NewExecutor(dev, ExecutorOptions{})
	must(t, err)
	s, err := sched.New(sched.Config{Kernels: testRegistry(t), Workers: 1, Observer: panicObserver{}})
	if err != nil {
		exec.Close()
		dev.Close()
		t.Fatal(err)
	}
	defer dev.Close()
	defer s.Close()
	must(t, s.AttachExecutor(sched.ExecGPU, exec))
	m, err := s.RegisterThread("main")
	must(t, err)
	const n = 256
	x, y, z := ramp(n, 1, 0), ramp(n, 0.5, 1), make([]float32, n)
	tk := saxpyTask(2, x, y, z)
	id, err := m.Add(&tk)
	must(t, err)
	hang := time.AfterFunc(10*time.Second, func() { panic("Wait for a GPU task whose Observer panics did not return within 10 s") })
	err = m.Wait(id)
	hang.Stop()
	if err != nil {
		t.Fatalf("Wait = %v, want nil: the executor's report of a run does not change its outcome", err)
	}
	for i := range z {
		if want := 2*x[i] + y[i]; z[i] != want {
			t.Fatalf("element %d = %v, want %v", i, z[i], want)
		}
	}
	// The executor reports a run after the task's Done (Wait may return
	// first), so the message may come a little after Wait: poll for it.
	var msgs []Message
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); {
		msgs, _ = dev.Messages()
		for _, msg := range msgs {
			if msg.Severity == SeverityError && strings.Contains(msg.Text, "Observer panicked") && strings.Contains(msg.Text, id.String()) {
				found = true
			}
		}
		if !found {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !found {
		t.Errorf("no device error message names the Observer's panic for %v: %v", id, msgs)
	}
}
