package gpu

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// forDevices runs f on the direct (host-visible) device and on the one
// forced to use staging copies.
func forDevices(t *testing.T, f func(t *testing.T, dev *Device)) {
	for _, staging := range []bool{false, true} {
		name := "direct"
		if staging {
			name = "staging"
		}
		t.Run(name, func(t *testing.T) {
			dev := device(t, staging)
			if dev.HostVisible() == staging {
				t.Fatalf("HostVisible() = %v with ForceStaging %v", dev.HostVisible(), staging)
			}
			f(t, dev)
		})
	}
}

func TestOpenReportsSelection(t *testing.T) {
	dev := device(t, false)
	sel := dev.Selection()
	if sel.Chosen.Name == "" || sel.Reason == "" || len(sel.Candidates) == 0 || !sel.Chosen.Compute {
		t.Fatalf("selection %+v", sel)
	}
	if !strings.Contains(sel.String(), sel.Chosen.Name) {
		t.Fatalf("Selection.String() = %q lacks the device name", sel)
	}
	t.Log(sel)
	// lavapipe has robustBufferAccess; Open enables it where it exists.
	if strings.Contains(sel.Chosen.Name, "llvmpipe") && !dev.RobustBufferAccess() {
		t.Error("robustBufferAccess not enabled on lavapipe, which supports it")
	}
}

func TestSaxpyMatchesCPU(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{})
		for _, n := range []int{1, 63, 64, 1000, 100_003} {
			x, y := ramp(n, 0.5, 1), ramp(n, -0.25, 3)
			gpu, cpu := make([]float32, n), make([]float32, n)
			id := e.add(t, saxpyTask(1.5, x, y, gpu))
			ct := saxpyTask(1.5, x, y, cpu)
			ct.Affinity = sched.AnyWorker
			cid := e.add(t, ct)
			must(t, e.main.Wait(id))
			must(t, e.main.Wait(cid))
			closeTo(t, "saxpy", gpu, cpu)
		}
		// In place: the output aliases input y.
		x, y := ramp(5000, 1, 0), ramp(5000, 2, 1)
		want := make([]float32, len(x))
		for i := range x {
			want[i] = 3*x[i] + y[i]
		}
		must(t, e.main.Wait(e.add(t, saxpyTask(3, x, y, y))))
		closeTo(t, "saxpy in place", y, want)
		if st := e.exec.Stats(); st.Tasks != 6 || st.Failed != 0 || st.Items != 1+63+64+1000+100_003+5000 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestReduceUniformAndItemsPerInvocation(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{})
		const n = 10_001
		v := make([]uint32, 4*n)
		for i := range v {
			v[i] = uint32(i * 7)
		}
		got, want := make([]uint32, n), make([]uint32, n)
		task := sched.Task{Kernel: kSum4, Affinity: sched.GPU}
		task.Data.Elements = n
		task.Data.In[0], task.Data.Out[0] = sched.StreamOf(v), sched.StreamOf(got)
		id := e.add(t, task)
		task.Affinity, task.Data.Out[0] = sched.AnyWorker, sched.StreamOf(want)
		must(t, e.main.Wait(e.add(t, task)))
		must(t, e.main.Wait(id))
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("sum4[%d] = %d, want %d", i, got[i], want[i])
			}
		}

		x := ramp(n, 0.25, 0)
		coef := [][4]float32{{2, -3, 0, 0}}
		pz, cz := make([]float32, n), make([]float32, n)
		pt := sched.Task{Kernel: kPoly, Affinity: sched.GPU}
		pt.Data.Elements = n
		pt.Data.In[0], pt.Data.In[1], pt.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(coef), sched.StreamOf(pz)
		id = e.add(t, pt)
		pt.Affinity, pt.Data.Out[0] = sched.AnyWorker, sched.StreamOf(cz)
		must(t, e.main.Wait(e.add(t, pt)))
		must(t, e.main.Wait(id))
		closeTo(t, "poly", pz, cz)
	})
}

func TestChainCPUGPUCPU(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{})
	const n = 50_000
	x, y, z := make([]float32, n), ramp(n, 1, 0), make([]float32, n)
	fill := sched.Task{Kernel: kFill}
	fill.Data.Elements = n
	fill.Data.Out[0] = sched.StreamOf(x)
	fid := e.add(t, fill)
	g := saxpyTask(2, x, y, z)
	g.Dependency = fid
	gid := e.add(t, g)
	args := &totalArgs{x: z}
	sum := sched.Task{Kernel: kTotal, Dependency: gid}
	sum.Data.Data = args
	must(t, e.main.Wait(e.add(t, sum)))
	total := args.sum
	var want float64
	for i := range z {
		want += float64(2*float32(i) + y[i])
	}
	if math.Abs(total-want) > 1e-9*want {
		t.Fatalf("CPU->GPU->CPU total %v, want %v", total, want)
	}
}

func TestChainGPUResident(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{})
		const n = 40_000
		buf, err := dev.NewBuffer(4 * n)
		must(t, err)
		defer buf.Close()
		x, y, y2, z := ramp(n, 1, 0), ramp(n, 0.5, 1), ramp(n, -1, 2), make([]float32, n)

		// t1: buf = 2x + y, kept on the GPU; t2 (after t1): z = 3*buf + y2,
		// reading buf in place; t3 (after t2): the first half of buf = y2.
		t1 := saxpyTask(2, x, y, nil)
		t1.Data.Out[0] = buf.Stream(4, n, 0)
		id1 := e.add(t, t1)
		t2 := saxpyTask(3, nil, y2, z)
		t2.Data.In[0] = buf.Stream(4, n, 0)
		t2.Data.Elements = n
		t2.Dependency = id1
		id2 := e.add(t, t2)
		t3 := saxpyTask(0, x[:n/2], y2[:n/2], nil)
		t3.Data.Out[0] = buf.Stream(4, n/2, 0)
		t3.Dependency = id2
		must(t, e.main.Wait(e.add(t, t3)))
		for i := range z {
			want := 3*(2*x[i]+y[i]) + y2[i]
			if math.Abs(float64(z[i]-want)) > 1e-5*math.Max(1, math.Abs(float64(want))) {
				t.Fatalf("z[%d] = %v, want %v", i, z[i], want)
			}
		}
		if st := e.exec.Stats(); st.BytesDown != 4*n || st.BytesUp != 4*n*2+4*n+2*4*n/2 {
			t.Fatalf("copied %d bytes down and %d up; want only the host streams (%d, %d): %+v", st.BytesDown, st.BytesUp, 4*n, 16*n, st)
		}
		got := make([]float32, n)
		must(t, buf.Read(0, unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 4*n)))
		for i := range got {
			want := 2*x[i] + y[i]
			if i < n/2 {
				want = y2[i]
			}
			if got[i] != want {
				t.Fatalf("buf[%d] = %v, want %v", i, got[i], want)
			}
		}
	})
}

func TestHostMirrorStreams(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{})
		const n = 3000
		buf, err := dev.NewBuffer(4 * n)
		must(t, err)
		defer buf.Close()
		x, y, mirror := ramp(n, 1, 0), ramp(n, 2, 0), make([]float32, n)
		// Output with a host mirror: result in buf and in mirror.
		t1 := saxpyTask(1, x, y, mirror)
		t1.Data.Out[0].Buffer = buf.ID()
		must(t, e.main.Wait(e.add(t, t1)))
		// Input with a host mirror: the host bytes are copied into buf.
		in := ramp(n, 5, 5)
		z := make([]float32, n)
		t2 := saxpyTask(1, in, y, z)
		t2.Data.In[0].Buffer = buf.ID()
		must(t, e.main.Wait(e.add(t, t2)))
		got := make([]float32, n)
		must(t, buf.Read(0, unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 4*n)))
		for i := range x {
			if mirror[i] != x[i]+y[i] || got[i] != in[i] || z[i] != in[i]+y[i] {
				t.Fatalf("[%d]: mirror %v want %v, buf %v want %v, z %v want %v", i, mirror[i], x[i]+y[i], got[i], in[i], z[i], in[i]+y[i])
			}
		}
		if m := buf.Mapped(); m != nil {
			// A stream over the buffer's own mapping is used in place.
			st0 := e.exec.Stats()
			view := unsafe.Slice((*float32)(unsafe.Pointer(&m[0])), n)
			t3 := saxpyTask(2, view, y, z)
			t3.Data.In[0].Buffer = buf.ID()
			must(t, e.main.Wait(e.add(t, t3)))
			if st := e.exec.Stats(); st.BytesUp-st0.BytesUp != 4*n {
				t.Fatalf("in-place stream was copied: %d bytes up", st.BytesUp-st0.BytesUp)
			}
			for i := range z {
				if z[i] != 2*in[i]+y[i] {
					t.Fatalf("z[%d] = %v", i, z[i])
				}
			}
		}
	})
}

// splitPlacer sends the first half of every Auto task to the GPU.
type splitPlacer struct{}

func (splitPlacer) Place(_ sched.KernelID, _ *sched.Kernel, d *sched.TaskData) (sched.Affinity, uint32) {
	return sched.GPU, (d.End - d.Begin) / 2
}

func TestCoExecutionSubRange(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		e := newEnv(t, dev, ExecutorOptions{ArenaSize: 4096}, sched.Config{Placer: splitPlacer{}})
		const n = 100_001
		x, y, z := ramp(n, 1, 0), ramp(n, 3, 1), make([]float32, n)
		for i := range z {
			z[i] = -1
		}
		task := saxpyTask(0.5, x, y, z)
		task.Affinity = sched.Auto
		must(t, e.main.Wait(e.add(t, task)))
		for i := range z {
			if want := 0.5*x[i] + y[i]; z[i] != want {
				t.Fatalf("z[%d] = %v, want %v", i, z[i], want)
			}
		}
		st := e.exec.Stats()
		if st.Tasks != 1 || st.Items != n/2 || st.BytesDown != 4*(n/2) {
			t.Fatalf("the GPU did not get exactly the first half: %+v", st)
		}
	})
}

// spinIters is the spin kernel's loop count: below lavapipe's budget of
// loop passes per invocation, LavapipeLoopBudget for all loops together
// (see testdata/spin.comp). Run time is scaled with the number of items
// instead.
const spinIters = 60_000

var spinCal struct {
	once    sync.Once
	perItem time.Duration
	err     error
}

// spinItems returns how many items make a spin task take about d on the
// GPU, calibrated once on an executor with default options.
func spinItems(t *testing.T, d time.Duration) int {
	t.Helper()
	spinCal.once.Do(func() {
		e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{})
		for n := 1024; ; n *= 4 {
			in, out := make([]uint32, n), make([]uint32, n)
			t0 := time.Now()
			if spinCal.err = e.main.Wait(e.add(t, spinTask(in, out))); spinCal.err != nil {
				return
			}
			if el := time.Since(t0); el > 40*time.Millisecond || n > 1<<24 {
				spinCal.perItem = el / time.Duration(n)
				return
			}
		}
	})
	must(t, spinCal.err)
	return int(min(d/max(spinCal.perItem, 1), 1<<24))
}

func spinTask(in, out []uint32) sched.Task {
	task := sched.Task{Kernel: kSpin, Affinity: sched.GPU}
	task.Data.Params[0] = spinIters
	task.Data.Elements = uint32(len(in))
	task.Data.In[0], task.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
	return task
}

func TestCPUTasksRunWhileGPUBusy(t *testing.T) {
	n := spinItems(t, 400*time.Millisecond)
	rec := &recorder{}
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Observer: rec})
	in, out := make([]uint32, n), make([]uint32, n)
	for i := range in {
		in[i] = uint32(i)
	}
	added := sched.Nanotime()
	gid := e.add(t, spinTask(in, out))
	// CPU tasks added from a foreign goroutine and waited for with
	// Scheduler.Wait (which runs nothing itself): only workers run them.
	for range 50 {
		ct := saxpyTask(1, ramp(1000, 1, 0), ramp(1000, 1, 0), make([]float32, 1000))
		ct.Affinity = sched.AnyWorker
		id, err := e.s.Add(&ct)
		must(t, err)
		must(t, e.s.Wait(id))
	}
	if e.s.IsFinished(gid) {
		t.Skipf("the GPU task (%d items) finished before 50 CPU tasks; machine too slow to tell", n)
	}
	must(t, e.main.Wait(gid))
	wall := sched.Nanotime() - added
	// The GPU timestamps bracket the dispatch: most of the wall time.
	ev := rec.wait(t, gid)
	if d := ev.Stop - ev.Start; d < wall/3 || d > wall {
		t.Errorf("GPU time %v for a task that took %v from Add to Wait", time.Duration(d), time.Duration(wall))
	}
	for i := 0; i < n; i += 97 {
		if want := lcg(in[i], spinIters); out[i] != want {
			t.Fatalf("spin[%d] = %d, want %d", i, out[i], want)
		}
	}
}

func TestManySmallTasksAreBatched(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{})
	const tasks, n = 256, 64
	// A held gate: every GPU task depends on it, so all become runnable at
	// once when it runs.
	gate, err := e.main.Create(&sched.Task{})
	must(t, err)
	zs := make([][]float32, tasks)
	x, y := ramp(n, 1, 0), ramp(n, 1, 1)
	ids := make([]sched.TaskID, tasks)
	for i := range zs {
		zs[i] = make([]float32, n)
		task := saxpyTask(float32(i), x, y, zs[i])
		task.Dependency = gate
		ids[i] = e.add(t, task)
	}
	st0 := e.exec.Stats()
	must(t, e.main.Run(gate))
	for _, id := range ids {
		must(t, e.main.Wait(id))
	}
	st := e.exec.Stats()
	submits := st.Submits - st0.Submits
	t.Logf("%d tasks in %d submits (largest batch %d)", tasks, submits, st.MaxBatch)
	// The gate's completion releases all 256 in one burst (sched.Burster),
	// so the count holds however slowly the releasing thread runs: 4
	// command buffers of MaxBatch 64. One more is allowed for a submitter
	// that was still busy with an earlier job when the burst began.
	if limit := uint64(tasks/64 + 1); submits > limit {
		t.Fatalf("%d tasks took %d submits, want at most %d", tasks, submits, limit)
	}
	for i, z := range zs {
		for j := range z {
			if want := float32(i)*x[j] + y[j]; z[j] != want {
				t.Fatalf("task %d [%d] = %v, want %v", i, j, z[j], want)
			}
		}
	}
	if ks := e.exec.KernelStats(kSaxpy); ks.Tasks != tasks || ks.Submits != submits || ks.MeanLatency() <= 0 {
		t.Fatalf("kernel stats %+v", ks)
	}
}

// recorder is an Observer keeping GPU events.
type recorder struct {
	mu  sync.Mutex
	evs []sched.RunEvent
}

// wait returns the event of task id, waiting for it a little: GPU events
// are reported just after the task completes.
func (r *recorder) wait(t *testing.T, id sched.TaskID) sched.RunEvent {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		r.mu.Lock()
		for _, ev := range r.evs {
			if ev.Task == id {
				r.mu.Unlock()
				return ev
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no GPU event for %v", id)
		}
	}
}

func (r *recorder) TaskRan(ev *sched.RunEvent) {
	if ev.Where != sched.GPU {
		return
	}
	r.mu.Lock()
	r.evs = append(r.evs, *ev)
	r.mu.Unlock()
}

func TestObserverGetsGPUTimes(t *testing.T) {
	rec := &recorder{}
	// CPUTimestamps: exercise the timestamp path on lavapipe too (it is
	// off there by default).
	e := newEnv(t, device(t, false), ExecutorOptions{CPUTimestamps: true}, sched.Config{Observer: rec})
	if !e.dev.Timestamps() {
		t.Log("device without timestamps: times are submission to completion")
	}
	const n = 200_000
	x, y, z := ramp(n, 1, 0), ramp(n, 1, 0), make([]float32, n)
	before := sched.Nanotime()
	id := e.add(t, saxpyTask(1, x, y, z))
	must(t, e.main.Wait(id))
	after := sched.Nanotime()
	rec.wait(t, id)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.evs) != 1 {
		t.Fatalf("%d GPU events, want 1", len(rec.evs))
	}
	ev := rec.evs[0]
	if ev.Thread != -1 || ev.Task != id || ev.Kernel != kSaxpy || ev.Begin != 0 || ev.End != n || ev.Err != nil {
		t.Fatalf("event %+v", ev)
	}
	if ev.Start < before || ev.Stop > after+int64(time.Millisecond) || ev.Stop < ev.Start {
		t.Fatalf("event times [%d, %d] outside the task's lifetime [%d, %d]", ev.Start, ev.Stop, before, after)
	}
	ks := e.exec.KernelStats(kSaxpy) // GPU times are in: the event came after them
	if ks.Dispatch <= 0 || ks.Dispatch != time.Duration(ev.Stop-ev.Start) || ks.Upload <= 0 || ks.Readback <= 0 {
		t.Fatalf("kernel stats %+v, event %v ns", ks, ev.Stop-ev.Start)
	}
	t.Logf("dispatch %v (%v/item), upload %v, readback %v, latency %v", ks.Dispatch, ks.DispatchPerItem(), ks.Upload, ks.Readback, ks.Latency)
}

func TestInvalidSPIRVFailsTask(t *testing.T) {
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{})
	in, out := make([]uint32, 100), make([]uint32, 100)
	task := spinTask(in, out)
	task.Kernel = kBad
	bad := e.add(t, task)
	// A dependent fails too; an unrelated GPU task still runs.
	dep := saxpyTask(1, ramp(10, 1, 0), ramp(10, 1, 0), make([]float32, 10))
	dep.Dependency = bad
	did := e.add(t, dep)
	err := e.main.Wait(bad)
	if !errors.Is(err, ErrBadBinding) || !strings.Contains(err.Error(), "magic") {
		t.Fatalf("invalid module: err = %v, want ErrBadBinding about the magic number", err)
	}
	if err := e.main.Wait(did); !errors.Is(err, sched.ErrDepFailed) {
		t.Fatalf("dependent: err = %v, want ErrDepFailed", err)
	}
	z := make([]float32, 10)
	must(t, e.main.Wait(e.add(t, saxpyTask(1, ramp(10, 1, 0), ramp(10, 1, 0), z))))
	if z[9] != 18 {
		t.Fatalf("after the failure: z[9] = %v", z[9])
	}
	// The failure is cached: the second task fails the same way, fast.
	if err := e.main.Wait(e.add(t, task)); !errors.Is(err, ErrBadBinding) {
		t.Fatalf("second task: %v", err)
	}
}

func TestTooLargeAndOutOfMemory(t *testing.T) {
	dev := device(t, false)
	if _, err := dev.NewBuffer(1 << 50); !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("NewBuffer(1 PiB): err = %v, want ErrOutOfMemory", err)
	}
	e := newEnv(t, dev, ExecutorOptions{ArenaSize: 4096}, sched.Config{})
	const n = 100_000
	x, y, z := ramp(n, 1, 0), ramp(n, 1, 0), make([]float32, n)

	// A stream beyond its buffer.
	small, err := dev.NewBuffer(1024)
	must(t, err)
	defer small.Close()
	task := saxpyTask(1, x, y, z)
	task.Data.Out[0] = small.Stream(4, n, 0)
	if err := e.main.Wait(e.add(t, task)); !errors.Is(err, ErrBadStream) {
		t.Fatalf("stream beyond its buffer: err = %v, want ErrBadStream", err)
	}
	// A closed buffer.
	closed, err := dev.NewBuffer(4 * n)
	must(t, err)
	closed.Close()
	task.Data.Out[0] = closed.Stream(4, n, 0)
	if err := e.main.Wait(e.add(t, task)); !errors.Is(err, ErrBadStream) {
		t.Fatalf("closed buffer: err = %v, want ErrBadStream", err)
	}

	// An allocation failure while a fresh executor's arena must grow.
	e = newEnv(t, dev, ExecutorOptions{ArenaSize: 4096}, sched.Config{})
	dev.InjectFault(FaultAllocation)
	task = saxpyTask(1, x, y, z)
	if err := e.main.Wait(e.add(t, task)); !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "vkAllocateMemory") {
		t.Fatalf("injected allocation failure: err = %v, want ErrOutOfMemory from vkAllocateMemory", err)
	}
	// Then everything works again.
	must(t, e.main.Wait(e.add(t, task)))
	if z[n-1] != x[n-1]+y[n-1] {
		t.Fatalf("after OOM: z = %v", z[n-1])
	}
}

func TestDeviceLostFailsFast(t *testing.T) {
	dev := openTestDevice(t, Options{})
	t.Cleanup(func() { // runs after newEnv's cleanup closed the scheduler
		must(t, dev.Close())
		if err := dev.ValidationErr(); err != nil {
			t.Error(err)
		}
	})
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{})
	x, y, z := ramp(100, 1, 0), ramp(100, 1, 0), make([]float32, 100)
	must(t, e.main.Wait(e.add(t, saxpyTask(1, x, y, z))))

	dev.InjectFault(FaultSubmitDeviceLost)
	lostID := e.add(t, saxpyTask(1, x, y, z))
	dep := saxpyTask(1, x, y, z)
	dep.Dependency = lostID
	depID := e.add(t, dep)
	if err := e.main.Wait(lostID); !errors.Is(err, ErrDeviceLost) || !strings.Contains(err.Error(), "vkQueueSubmit") {
		t.Fatalf("err = %v, want ErrDeviceLost from vkQueueSubmit", err)
	}
	if err := e.main.Wait(depID); !errors.Is(err, ErrDeviceLost) {
		t.Fatalf("dependent: err = %v", err)
	}
	if dev.Lost() == nil {
		t.Fatal("device not marked lost")
	}
	// Later GPU tasks fail at once; CPU tasks still run.
	t0 := time.Now()
	for range 20 {
		if err := e.main.Wait(e.add(t, saxpyTask(1, x, y, z))); !errors.Is(err, ErrDeviceLost) {
			t.Fatalf("after the loss: err = %v", err)
		}
	}
	if el := time.Since(t0); el > time.Second {
		t.Fatalf("20 GPU tasks took %v to fail after the loss", el)
	}
	ct := saxpyTask(2, x, y, z)
	ct.Affinity = sched.AnyWorker
	must(t, e.main.Wait(e.add(t, ct)))
	if z[99] != 2*x[99]+y[99] {
		t.Fatal("CPU task after device loss computed nothing")
	}
	if _, err := dev.NewBuffer(16); !errors.Is(err, ErrDeviceLost) {
		t.Fatalf("NewBuffer after loss: %v", err)
	}
}

// TestFenceTimeout: a command buffer that waits for an event the host has
// not set (FaultStall) cannot complete, however fast or loaded the
// machine, so its tasks fail with ErrTimeout; once the event is set the
// executor reuses the late command buffer and goes on.
func TestFenceTimeout(t *testing.T) {
	dev := device(t, false)
	// 500 ms: the stalled command buffer never completes whatever the
	// time-out, and the saxpy after ReleaseStall must not time out when
	// lavapipe's queue thread is starved on a loaded machine.
	e := newEnv(t, dev, ExecutorOptions{FenceTimeout: 500 * time.Millisecond, HungAfter: 1 << 20}, sched.Config{})
	must(t, dev.InjectFault(FaultStall))
	released := false
	defer func() {
		if !released {
			must(t, dev.ReleaseStall())
		}
	}()
	in, out := ramp32(1000), make([]uint32, 1000)
	err := e.main.Wait(e.add(t, spinTask(in, out)))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "vkWaitForFences") {
		t.Fatalf("err = %v, want ErrTimeout from vkWaitForFences", err)
	}
	must(t, dev.ReleaseStall())
	released = true
	// The executor keeps working once the late command buffer completes.
	z := make([]float32, 10)
	must(t, e.main.Wait(e.add(t, saxpyTask(1, ramp(10, 1, 0), ramp(10, 1, 0), z))))
	if z[9] != 18 || e.dev.Lost() != nil {
		t.Fatalf("after the time-out: z[9] = %v, lost %v", z[9], e.dev.Lost())
	}
}

func ramp32(n int) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(i)
	}
	return s
}

func TestCloseFinishesJobsAndLeavesNoGoroutine(t *testing.T) {
	dev := device(t, false)
	g0 := runtime.NumGoroutine()
	reg := testRegistry(t)
	exec, err := NewExecutor(dev, ExecutorOptions{})
	must(t, err)
	s, err := sched.New(sched.Config{Kernels: reg})
	must(t, err)
	must(t, s.AttachExecutor(sched.ExecGPU, exec))
	const n = 20
	zs := make([][]float32, n)
	ids := make([]sched.TaskID, n)
	for i := range zs {
		zs[i] = make([]float32, 1000)
		task := saxpyTask(1, ramp(1000, 1, 0), ramp(1000, 1, 0), zs[i])
		ids[i], err = s.Add(&task)
		must(t, err)
	}
	must(t, s.Close()) // closes the executor: every job finishes
	for i, id := range ids {
		if !s.IsFinished(id) {
			t.Fatalf("task %d not finished after Close", i)
		}
		if err := s.Err(id); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if zs[i][999] != 2*ramp(1000, 1, 0)[999] {
			t.Fatalf("task %d did not run", i)
		}
	}
	// Enqueue after Close fails the job at once (through a second
	// scheduler sharing the closed executor).
	s2, err := sched.New(sched.Config{Kernels: reg})
	must(t, err)
	must(t, s2.AttachExecutor(sched.ExecGPU, exec))
	task := saxpyTask(1, ramp(10, 1, 0), ramp(10, 1, 0), make([]float32, 10))
	id, err := s2.Add(&task)
	must(t, err)
	if err := s2.Wait(id); !errors.Is(err, ErrClosed) || !errors.Is(err, sched.ErrClosed) {
		t.Fatalf("Enqueue after Close: err = %v, want ErrClosed", err)
	}
	must(t, s2.Close())
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > g0 {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left, %d before:\n%s", g, g0, buf[:runtime.Stack(buf, true)])
	}
}

func TestBufferWriteRead(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		b, err := dev.NewBuffer(1 << 16)
		must(t, err)
		defer b.Close()
		if (b.Mapped() != nil) != dev.HostVisible() {
			t.Fatalf("Mapped() %v on a device with HostVisible() %v", b.Mapped() != nil, dev.HostVisible())
		}
		src := make([]byte, 5000)
		for i := range src {
			src[i] = byte(i * 13)
		}
		must(t, b.Write(1000, src))
		got := make([]byte, 5000)
		must(t, b.Read(1000, got))
		if string(got) != string(src) {
			t.Fatal("read back differs")
		}
		if err := b.Write(1<<16-10, src); !errors.Is(err, ErrBadStream) {
			t.Fatalf("write past the end: %v", err)
		}
		b.Close()
		if err := b.Read(0, got); !errors.Is(err, ErrClosed) {
			t.Fatalf("read after close: %v", err)
		}
	})
}

func TestArena(t *testing.T) {
	forDevices(t, func(t *testing.T, dev *Device) {
		a, err := dev.NewArena(1024)
		must(t, err)
		defer a.Close()
		if a.Staged() == dev.HostVisible() {
			t.Fatalf("Staged() %v on HostVisible() %v", a.Staged(), dev.HostVisible())
		}
		s1, err := a.Alloc(10)
		must(t, err)
		s2, err := a.Alloc(100)
		must(t, err)
		if s1.Offset != 0 || s2.Offset%dev.lim.storageAlign != 0 || s2.Offset < 10 || len(s2.Host) != 100 {
			t.Fatalf("spans %+v %+v", s1.Offset, s2.Offset)
		}
		if _, err := a.Alloc(1024); !errors.Is(err, ErrArenaFull) {
			t.Fatalf("overflow: %v", err)
		}
		a.Reset()
		if s, err := a.Alloc(1024); err != nil || s.Offset != 0 {
			t.Fatalf("after Reset: %+v %v", s, err)
		}
	})
}

func TestPreparePipelines(t *testing.T) {
	dev := device(t, false)
	err := dev.PreparePipelines(testRegistry(t))
	if !errors.Is(err, ErrBadBinding) || !strings.Contains(err.Error(), `"bad"`) || strings.Contains(err.Error(), "saxpy") {
		t.Fatalf("PreparePipelines: %v, want only the invalid kernel reported", err)
	}
}
