package gpu

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

var (
	benchOnce sync.Once
	benchDev  *Device
	benchErr  error
)

// benchEnv runs on a device without validation (the layer costs far more
// than the executor), shared by all benchmarks and closed by TestMain.
// VKJOBS_VALIDATION=1 turns validation on.
func benchEnv(b *testing.B, eo ExecutorOptions) *env {
	b.Helper()
	benchOnce.Do(func() { benchDev, benchErr = Open(Options{}) })
	if errors.Is(benchErr, ErrNoDevice) && os.Getenv("CI") != "true" {
		b.Skipf("skipping: no Vulkan device (with CI=true this fails): %v", benchErr)
	}
	must(b, benchErr)
	dev := benchDev
	reg := testRegistry(b)
	e := newEnv(b, dev, eo, sched.Config{Kernels: reg})
	// Compile the pipelines outside the timed loops.
	x := ramp(64, 1, 0)
	must(b, e.main.Wait(e.add(b, saxpyTask(1, x, x, make([]float32, 64)))))
	return e
}

// BenchmarkGPURoundTrip: add one tiny GPU task (saxpy over 64 elements,
// host streams) and wait for it, with and without timestamp queries.
func BenchmarkGPURoundTrip(b *testing.B) {
	for _, ts := range []bool{true, false} {
		name := "timestamps"
		if !ts {
			name = "no-timestamps"
		}
		b.Run(name, func(b *testing.B) {
			e := benchEnv(b, ExecutorOptions{NoTimestamps: !ts, CPUTimestamps: ts})
			x, y, z := ramp(64, 1, 0), ramp(64, 1, 1), make([]float32, 64)
			task := saxpyTask(2, x, y, z)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				id, err := e.main.Add(&task)
				if err != nil {
					b.Fatal(err)
				}
				if err := e.main.Wait(id); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/task")
		})
	}
}

// BenchmarkGPUBatch: N tiny GPU tasks, each added and waited for separately
// (one submit each) versus all released at once by a gate (batched).
func BenchmarkGPUBatch(b *testing.B) {
	const n = 64
	for _, mode := range []string{"separate", "batched"} {
		b.Run(fmt.Sprintf("%s/N=%d", mode, n), func(b *testing.B) {
			e := benchEnv(b, ExecutorOptions{})
			x, y := ramp(64, 1, 0), ramp(64, 1, 1)
			zs := make([][]float32, n)
			for i := range zs {
				zs[i] = make([]float32, 64)
			}
			ids := make([]sched.TaskID, n)
			st0 := e.exec.Stats()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if mode == "separate" {
					for i := range n {
						task := saxpyTask(2, x, y, zs[i])
						id, err := e.main.Add(&task)
						if err != nil {
							b.Fatal(err)
						}
						if err := e.main.Wait(id); err != nil {
							b.Fatal(err)
						}
					}
					continue
				}
				gate, err := e.main.Create(&sched.Task{})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					task := saxpyTask(2, x, y, zs[i])
					task.Dependency = gate
					if ids[i], err = e.main.Add(&task); err != nil {
						b.Fatal(err)
					}
				}
				if err := e.main.Run(gate); err != nil {
					b.Fatal(err)
				}
				for _, id := range ids {
					if err := e.main.Wait(id); err != nil {
						b.Fatal(err)
					}
				}
			}
			st := e.exec.Stats()
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
			b.ReportMetric(float64(st.Submits-st0.Submits)/float64(b.N), "submits/op")
		})
	}
}

// BenchmarkStreamOffload runs saxpy over n elements on the CPU workers, on
// the GPU with GPU-resident streams (dispatch only), and on the GPU with
// host streams (upload and read-back included).
func BenchmarkStreamOffload(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		for _, where := range []string{"cpu", "gpu-dispatch", "gpu-host"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, where), func(b *testing.B) {
				e := benchEnv(b, ExecutorOptions{})
				x, y, z := ramp(n, 1, 0), ramp(n, 1, 1), make([]float32, n)
				task := saxpyTask(2, x, y, z)
				switch where {
				case "cpu":
					task.Affinity = sched.AnyWorker
				case "gpu-dispatch":
					for i, s := range []*sched.Stream{&task.Data.In[0], &task.Data.In[1], &task.Data.Out[0]} {
						buf, err := e.dev.NewBuffer(uint64(4 * n))
						must(b, err)
						b.Cleanup(func() { buf.Close() })
						if i < 2 {
							must(b, buf.Write(0, s.Bytes))
						}
						*s = buf.Stream(4, uint32(n), 0)
					}
				}
				b.SetBytes(int64(12 * n))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					id, err := e.main.Add(&task)
					if err != nil {
						b.Fatal(err)
					}
					if err := e.main.Wait(id); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
			})
		}
	}
}
