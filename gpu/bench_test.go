package gpu

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/internal/xmath"
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
	return benchEnvConfig(b, eo, sched.Config{})
}

func benchEnvConfig(b *testing.B, eo ExecutorOptions, cfg sched.Config) *env {
	b.Helper()
	benchOnce.Do(func() { benchDev, benchErr = Open(Options{}) })
	if errors.Is(benchErr, ErrNoDevice) && os.Getenv("CI") != "true" {
		b.Skipf("skipping: no Vulkan device (with CI=true this fails): %v", benchErr)
	}
	must(b, benchErr)
	dev := benchDev
	cfg.Kernels = testRegistry(b)
	e := newEnv(b, dev, eo, cfg)
	// Compile the pipelines outside the timed loops.
	x := ramp(64, 1, 0)
	must(b, e.main.Wait(e.add(b, saxpyTask(1, x, x, make([]float32, 64)))))
	return e
}

// BenchmarkGPURoundTrip: add one tiny GPU task (saxpy over 64 elements,
// host streams) and wait for it, with and without timestamp queries; and
// "raw", the floor for the executor's no-timestamps case: the same
// dispatch with no scheduler and no executor (copy the inputs into mapped
// device memory, reset the fence and the command pool, record the
// dispatch and a barrier to the host, submit, wait for the fence, copy the
// output back), with its descriptor set written once, outside the loop;
// "no-timestamps-handoff", the executor without Enqueue's inline
// submission (every task through the submitter goroutine);
// "no-timestamps-sleep", with a scheduler whose idle threads all sleep at
// once (SpinRounds 1; a Wait for a GPU task sleeps at once anyway, see
// sched.Ctx.Wait); and "ratio", raw and no-timestamps in alternating
// blocks, which reports the executor's cost as the ratio of their
// medians (BENCHMARKS.md).
func BenchmarkGPURoundTrip(b *testing.B) {
	b.Run("raw", benchRawRoundTrip)
	b.Run("ratio", benchRoundTripRatio)
	for _, c := range []struct {
		name               string
		ts, handoff, sleep bool
	}{
		{"timestamps", true, false, false},
		{"no-timestamps", false, false, false},
		{"no-timestamps-handoff", false, true, false},
		{"no-timestamps-sleep", false, false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var cfg sched.Config
			if c.sleep {
				cfg.SpinRounds = 1 // Wait sleeps at once instead of spinning
			}
			e := benchEnvConfig(b, ExecutorOptions{NoTimestamps: !c.ts, CPUTimestamps: c.ts}, cfg)
			e.exec.noInline = c.handoff // every task through the submitter goroutine
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

func benchRawRoundTrip(b *testing.B) {
	e := benchEnv(b, ExecutorOptions{NoTimestamps: true})
	step := newRawRoundTrip(b, e)
	runtime.LockOSThread() // as the executor's submitter
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := step(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/task")
}

// benchRoundTripRatio alternates blocks of ratioBlock raw round trips
// and ratioBlock through the executor (no timestamps, default
// scheduler), timing each, and reports the medians and their ratio: on a
// loaded machine, load that comes and goes falls on both alike, where
// separate runs of the two cases each meet a different load. (Alternating
// single round trips slows the raw ones several times over: lavapipe's
// threads and the OS scheduler settle into a steady pattern only over a
// run of them.) b.N is rounded up to whole pairs of blocks.
func benchRoundTripRatio(b *testing.B) {
	e := benchEnv(b, ExecutorOptions{NoTimestamps: true})
	raw := newRawRoundTrip(b, e)
	x, y, z := ramp(64, 1, 0), ramp(64, 1, 1), make([]float32, 64)
	task := saxpyTask(2, x, y, z)
	var rawNS, execNS []int64
	b.ResetTimer()
	for b.Loop() {
		runtime.LockOSThread() // as the executor's submitter
		for range ratioBlock {
			t0 := sched.Nanotime()
			if err := raw(); err != nil {
				b.Fatal(err)
			}
			rawNS = append(rawNS, sched.Nanotime()-t0)
		}
		runtime.UnlockOSThread()
		for range ratioBlock {
			t0 := sched.Nanotime()
			id, err := e.main.Add(&task)
			if err == nil {
				err = e.main.Wait(id)
			}
			if err != nil {
				b.Fatal(err)
			}
			execNS = append(execNS, sched.Nanotime()-t0)
		}
	}
	b.StopTimer()
	r, ex := xmath.Median(rawNS), xmath.Median(execNS)
	b.ReportMetric(float64(r)/1e3, "raw-µs")
	b.ReportMetric(float64(ex)/1e3, "exec-µs")
	b.ReportMetric(float64(ex)/float64(r), "x-raw")
}

// ratioBlock is how many round trips of one kind benchRoundTripRatio
// runs in a row.
const ratioBlock = 50

// newRawRoundTrip returns one raw round trip (see BenchmarkGPURoundTrip)
// on e's device, its Vulkan objects freed by b's cleanup. The caller
// locks its OS thread, as the executor's submitter does.
func newRawRoundTrip(b *testing.B, e *env) func() error {
	d, sh := e.dev, e.dev.shim
	if !d.direct {
		b.Skip("raw round trip: written for devices with directly mapped memory")
	}
	k := testRegistry(b).Lookup(kSaxpy)
	p, err := d.pipelineFor(k)
	must(b, err)
	pool, cb, err := d.newCommandPool()
	must(b, err)
	fence, err := d.newFence()
	must(b, err)
	b.Cleanup(func() {
		sh.DestroyFence(fence)
		sh.DestroyCommandPool(pool)
	})
	dp, r := sh.CreateDescriptorPool(1, []vk.DescriptorPoolSize{{Type: vk.DescriptorTypeStorageBuffer, Count: 3}})
	must(b, check("vkCreateDescriptorPool", Result(r)))
	b.Cleanup(func() { sh.DestroyDescriptorPool(dp) })
	const n = 64
	var bufs [3]*Buffer
	var writes [3]vk.DescWrite
	for i := range bufs {
		bufs[i], err = d.NewBuffer(4 * n)
		must(b, err)
		b.Cleanup(func() { bufs[i].Close() })
		bind := uint32(FirstInBinding + i)
		if i == 2 {
			bind = FirstOutBinding
		}
		writes[i] = vk.DescWrite{Buffer: bufs[i].blk.buf, Range: 4 * n, Bind: bind, Type: uint32(vk.DescriptorTypeStorageBuffer)}
	}
	var set uint64
	must(b, check("vkAllocateDescriptorSets", Result(sh.Set(dp, p.setLayout, writes[:], &set))))
	x, y, z := ramp(n, 1, 0), ramp(n, 1, 1), make([]float32, n)
	xb, yb, zb := sched.StreamOf(x).Bytes, sched.StreamOf(y).Bytes, sched.StreamOf(z).Bytes
	var params [8]uint32
	params[0] = math.Float32bits(2)
	return func() error {
		copy(bufs[0].Mapped(), xb)
		copy(bufs[1].Mapped(), yb)
		if err := check("vkResetFences/vkResetCommandPool", Result(sh.SlotReset(fence, pool, 0))); err != nil {
			return err
		}
		if err := check("vkBeginCommandBuffer", Result(sh.Begin(cb))); err != nil {
			return err
		}
		sh.Dispatch(cb, p.pipe, p.layout, set, &params, 0, n, p.itemsPerGroup, d.lim.maxGroupCount, 0, -1, d.tsBegin, d.tsEnd)
		sh.Barrier(cb, stCompute, stHost, acSWrite, acHRead)
		if err := check("vkEndCommandBuffer", Result(sh.End(cb))); err != nil {
			return err
		}
		if err := d.submit(cb, fence); err != nil {
			return err
		}
		if err := check("vkWaitForFences", Result(sh.Wait(fence, uint64(10*time.Second)))); err != nil {
			return err
		}
		copy(zb, bufs[2].Mapped())
		if z[n-1] != 2*x[n-1]+y[n-1] {
			return fmt.Errorf("raw round trip: z[%d] = %v, want %v", n-1, z[n-1], 2*x[n-1]+y[n-1])
		}
		return nil
	}
}
