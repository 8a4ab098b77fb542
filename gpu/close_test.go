package gpu_test

// Closing devices, executors and schedulers, through the public API:
// Close twice, every call after Close, an Arena left open at Close or
// closed after it, a fault injected into a closed device, GPU tasks sent
// to an executor whose device was closed, and Close of the scheduler or of
// the device while hundreds of GPU tasks are in flight. Each gives an
// error that says what was closed (and wraps gpu.ErrClosed, and
// sched.ErrClosed), never a crash, a hang, or a validation message about
// leaked objects.

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/sched"
)

// wantClosed checks that err reports a closed object in words of its own.
func wantClosed(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s after Close: no error", what)
	case !errors.Is(err, gpu.ErrClosed) || !errors.Is(err, sched.ErrClosed):
		t.Errorf("%s after Close: %v does not wrap gpu.ErrClosed and sched.ErrClosed", what, err)
	case strings.Contains(err.Error(), "scheduler"):
		t.Errorf("%s after Close: %q blames a scheduler; the device was closed", what, err)
	}
}

func TestUseAfterClose(t *testing.T) {
	dev, _ := gputest.Open(t, gpu.Options{})
	arena, err := dev.NewArena(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	closedArena, err := dev.NewArena(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	closedArena.Close()
	closedArena.Close() // idempotent
	buf, err := dev.NewBuffer(1024)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := dev.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The arena left open was freed by Close: the validation layer saw no
	// leaked VkBuffer or VkDeviceMemory when the device was destroyed.
	if msgs, n := dev.Messages(); n > 0 {
		t.Errorf("%d validation errors at Close: %v", n, msgs)
	}
	wantClosed(t, "Buffer.Write", buf.Write(0, []byte{1, 2, 3, 4}))
	wantClosed(t, "Buffer.Read", buf.Read(0, make([]byte, 4)))
	if err := buf.Close(); err != nil {
		t.Errorf("Buffer.Close after Device.Close: %v", err)
	}
	_, err = dev.NewBuffer(64)
	wantClosed(t, "NewBuffer", err)
	_, err = dev.NewArena(64)
	wantClosed(t, "NewArena", err)
	_, err = gpu.NewExecutor(dev, gpu.ExecutorOptions{})
	wantClosed(t, "NewExecutor", err)
	wantClosed(t, "InjectFault(FaultStall)", dev.InjectFault(gpu.FaultStall))
	wantClosed(t, "InjectFault(FaultAllocation)", dev.InjectFault(gpu.FaultAllocation))
	if err := dev.ReleaseStall(); err != nil {
		t.Errorf("ReleaseStall after Close: %v", err)
	}
	_, err = arena.Alloc(16)
	wantClosed(t, "Arena.Alloc", err)
	_, err = closedArena.Alloc(16)
	wantClosed(t, "Arena.Alloc after Arena.Close", err)
	arena.Close() // after the device's Close: nothing left to free, no crash
}

func TestInjectUnknownFault(t *testing.T) {
	dev, _ := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	if err := dev.InjectFault(gpu.Fault(99)); err == nil || !strings.Contains(err.Error(), "unknown fault 99") {
		t.Errorf("InjectFault(99) = %v, want an error naming the unknown fault", err)
	}
}

// TestGPUTaskAfterDeviceClose: a scheduler whose executor's device was
// closed under it fails GPU tasks with an error; CPU tasks go on.
func TestGPUTaskAfterDeviceClose(t *testing.T) {
	reg := axpoRegistry(t, userSPIRV(t, axpoGLSL), 64, 1, 1<<31)
	dev, _ := gputest.Open(t, gpu.Options{})
	exec, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AttachExecutor(sched.ExecGPU, exec); err != nil {
		t.Fatal(err)
	}
	m, err := s.RegisterThread("main")
	if err != nil {
		t.Fatal(err)
	}
	run := func(aff sched.Affinity) ([]float32, []float32, error) {
		x, y := make([]float32, 1000), make([]float32, 1000)
		for i := range x {
			x[i] = float32(i)
		}
		tk := axpoTask(aff, 3, 1, x, y)
		id, err := m.Add(&tk)
		if err != nil {
			return nil, nil, err
		}
		return x, y, waitMinute(t, m, id)
	}
	x, y, err := run(sched.GPU)
	if err != nil {
		t.Fatalf("GPU task before Close: %v", err)
	}
	checkAxpo(t, "GPU task before Close", 3, x, y)
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if _, n := dev.Messages(); n > 0 {
		t.Errorf("validation errors at Close")
	}
	_, _, err = run(sched.GPU)
	wantClosed(t, "a GPU task", err)
	x, y, err = run(sched.AnyWorker)
	if err != nil {
		t.Fatalf("CPU task after the device's Close: %v", err)
	}
	checkAxpo(t, "CPU task after the device's Close", 3, x, y)
}

// TestCloseWithGPUWorkInFlight: 300 GPU tasks added, then the
// scheduler (or the device) closed from another goroutine while they run:
// every wait returns, and each task either succeeded with the right
// answer or failed with an error; nothing hangs or crashes.
func TestCloseWithGPUWorkInFlight(t *testing.T) {
	spv := userSPIRV(t, axpoGLSL)
	for _, closeDevice := range []bool{false, true} {
		dev, _ := gputest.Open(t, gpu.Options{})
		exec, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := sched.New(sched.Config{Kernels: axpoRegistry(t, spv, 16, 1, 1<<31), Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AttachExecutor(sched.ExecGPU, exec); err != nil {
			t.Fatal(err)
		}
		m, err := s.RegisterThread("main")
		if err != nil {
			t.Fatal(err)
		}
		type job struct {
			id   sched.TaskID
			x, y []float32
		}
		var jobs []job
		for range 300 {
			x, y := make([]float32, 5000), make([]float32, 5000)
			for i := range x {
				x[i] = float32(i % 10)
			}
			tk := axpoTask(sched.GPU, 3, 1, x, y)
			id, err := m.Add(&tk)
			if err != nil {
				break // already closed: fine
			}
			jobs = append(jobs, job{id, x, y})
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if closeDevice {
				if err := dev.Close(); err != nil {
					t.Errorf("device Close: %v", err)
				}
			} else if err := s.Close(); err != nil {
				t.Errorf("scheduler Close: %v", err)
			}
		}()
		for _, j := range jobs {
			if err := m.WaitFor(j.id, time.Minute); errors.Is(err, sched.ErrTimeout) {
				t.Fatalf("closeDevice=%v: a task did not finish in a minute", closeDevice)
			} else if err == nil {
				checkAxpo(t, "in flight at Close", 3, j.x, j.y)
			}
		}
		wg.Wait()
		s.Close()
		dev.Close()
		if _, n := dev.Messages(); n > 0 {
			msgs, _ := dev.Messages()
			t.Errorf("closeDevice=%v: %d validation errors: %v", closeDevice, n, msgs)
		}
	}
}
