package spu

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// waitWithin waits for task id on m, failing the test if it has not
// completed after d (a lost job must fail the test, not hang it).
func waitWithin(t *testing.T, m *sched.Ctx, id sched.TaskID, d time.Duration) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- m.Scheduler().Wait(id) }()
	select {
	case err := <-res:
		return err
	case <-time.After(d):
		t.Fatalf("task %v did not complete within %v", id, d)
		return nil
	}
}

// doubleKernel registers a streaming kernel out[i] = 2*in[i] (+ hook).
func doubleKernel(t *testing.T, reg *sched.Registry, id sched.KernelID, hook func(d *sched.TaskData)) {
	t.Helper()
	f4 := []sched.StreamSpec{{Name: "x", Stride: 4}}
	must(t, reg.Register(id, sched.Kernel{Name: fmt.Sprintf("double%d", id), Kind: sched.Streaming, In: f4, Out: f4,
		CPU: func(_ *sched.Ctx, d *sched.TaskData) error {
			if hook != nil {
				hook(d)
			}
			in, out := sched.View[uint32](d.In[0]), sched.View[uint32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				out[i] = 2 * in[i]
			}
			return nil
		}}))
}

func doubleTask(id sched.KernelID, n int) (sched.Task, []uint32) {
	in, out := make([]uint32, n), make([]uint32, n)
	for i := range in {
		in[i] = uint32(i)
	}
	task := sched.Task{Kernel: id, Affinity: sched.SPU}
	task.Data.Elements = uint32(n)
	task.Data.In[0], task.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)
	return task, out
}

// TestSPUKernelGoexitFailsTask: sched's rule for kernels, that a
// runtime.Goexit in one (testing's FailNow or Fatal called from a kernel)
// fails the task with ErrKernelPanic, holds on the SPU executor too: the
// job is Done, and the executor goes on running later jobs.
func TestSPUKernelGoexitFailsTask(t *testing.T) {
	reg := sched.NewRegistry()
	var exit atomic.Bool
	doubleKernel(t, reg, 40, func(*sched.TaskData) {
		if exit.Load() {
			runtime.Goexit()
		}
	})
	must(t, reg.Register(41, sched.Kernel{Name: "simple-exit", CPU: func(*sched.Ctx, *sched.TaskData) error {
		runtime.Goexit()
		return nil
	}}))
	// Not spuSched: a lost job would hang its Close in the cleanup.
	x, err := New(Options{LocalStore: 4096})
	must(t, err)
	s, err := sched.New(sched.Config{Kernels: reg})
	must(t, err)
	must(t, s.AttachExecutor(sched.ExecSPU, x))
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			return // a job may be lost: Close would wait for it
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	exit.Store(true)
	task, _ := doubleTask(40, 3000) // several chunks
	id, err := m.Add(&task)
	must(t, err)
	if err := waitWithin(t, m, id, 10*time.Second); !errors.Is(err, sched.ErrKernelPanic) {
		t.Fatalf("streaming kernel's Goexit: Wait = %v, want ErrKernelPanic", err)
	}
	simple := sched.Task{Kernel: 41, Affinity: sched.SPU}
	id, err = m.Add(&simple)
	must(t, err)
	if err := waitWithin(t, m, id, 10*time.Second); !errors.Is(err, sched.ErrKernelPanic) {
		t.Fatalf("simple kernel's Goexit: Wait = %v, want ErrKernelPanic", err)
	}
	exit.Store(false)
	task, out := doubleTask(40, 3000)
	id, err = m.Add(&task)
	must(t, err)
	if err := waitWithin(t, m, id, 10*time.Second); err != nil {
		t.Fatalf("task after the Goexits: %v", err)
	}
	for i, v := range out {
		if v != 2*uint32(i) {
			t.Fatalf("out[%d] = %d after the Goexits", i, v)
		}
	}
	if st := x.Stats(); st.Failed != 2 || st.Jobs != 1 {
		t.Fatalf("stats %+v: want 2 failed, 1 job", st)
	}
}

// TestSPUCloseDuringWork: the executor closed (directly, then by the
// scheduler) while units are busy and jobs queued: every task completes,
// either run correctly or failed with ErrClosed, and Close returns.
func TestSPUCloseDuringWork(t *testing.T) {
	reg := sched.NewRegistry()
	doubleKernel(t, reg, 40, func(*sched.TaskData) { time.Sleep(200 * time.Microsecond) })
	x, m := spuSched(t, reg, Options{LocalStore: 8192, Units: 2}, nil)
	const tasks = 40
	var ids []sched.TaskID
	var outs [][]uint32
	for range tasks {
		task, out := doubleTask(40, 1500)
		id, err := m.Add(&task)
		must(t, err)
		ids, outs = append(ids, id), append(outs, out)
	}
	closed := make(chan error, 2)
	go func() {
		closed <- x.Close()
		closed <- x.Close() // twice: nil at once
	}()
	// Tasks added while (or after) it closes fail with ErrClosed.
	var late []sched.TaskID
	for range 10 {
		task, _ := doubleTask(40, 100)
		id, err := m.Add(&task)
		must(t, err)
		late = append(late, id)
	}
	for i, id := range ids {
		err := waitWithin(t, m, id, 10*time.Second)
		if err != nil {
			t.Fatalf("task %d queued before Close: %v (Close lets queued jobs finish)", i, err)
		}
		for j, v := range outs[i] {
			if v != 2*uint32(j) {
				t.Fatalf("task %d: out[%d] = %d", i, j, v)
			}
		}
	}
	for i := range 2 {
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close %d: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return")
		}
	}
	for _, id := range late {
		if err := waitWithin(t, m, id, 10*time.Second); err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("task added during Close: %v, want nil or ErrClosed", err)
		}
	}
	task, _ := doubleTask(40, 10)
	id, err := m.Add(&task)
	must(t, err)
	if err := waitWithin(t, m, id, 10*time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("task after Close: %v, want ErrClosed", err)
	}
}

// TestSPUOptionsShapes: zero, negative and too small option values.
func TestSPUOptionsShapes(t *testing.T) {
	for _, ls := range []int{-1, 1, 4095} {
		if x, err := New(Options{LocalStore: ls}); err == nil {
			x.Close()
			t.Errorf("New(LocalStore %d) accepted", ls)
		} else if !strings.Contains(err.Error(), fmt.Sprint(ls)) {
			t.Errorf("New(LocalStore %d): %v does not name the size", ls, err)
		}
	}
	if x, err := New(Options{Units: -2}); err == nil {
		x.Close()
		t.Errorf("New(Units -2) accepted")
	} else if !strings.Contains(err.Error(), "-2") {
		t.Errorf("New(Units -2): %v does not name the count", err)
	}
	x, err := New(Options{LocalStore: 4096})
	must(t, err)
	if x.LocalStore() != 4096 {
		t.Fatalf("LocalStore() = %d", x.LocalStore())
	}
	must(t, x.Close())
	x, err = New(Options{})
	must(t, err)
	if x.LocalStore() != DefaultLocalStore {
		t.Fatalf("default LocalStore() = %d", x.LocalStore())
	}
	must(t, x.Close())
}

// TestSPUZeroAndOneItem: empty and one-item tasks, and a task whose one
// item just fits a single buffer.
func TestSPUZeroAndOneItem(t *testing.T) {
	reg := sched.NewRegistry()
	doubleKernel(t, reg, 40, nil)
	wide := sched.StreamSpec{Name: "w", Stride: 2032}
	must(t, reg.Register(41, sched.Kernel{Name: "wide", Kind: sched.Streaming, In: []sched.StreamSpec{wide}, Out: []sched.StreamSpec{wide},
		CPU: func(_ *sched.Ctx, d *sched.TaskData) error {
			for i := d.Begin; i < d.End; i++ {
				in := d.In[0].Bytes[i*2032 : (i+1)*2032]
				out := d.Out[0].Bytes[i*2032 : (i+1)*2032]
				for j := range in {
					out[j] = in[j] ^ 0x5a
				}
			}
			return nil
		}}))
	x, m := spuSched(t, reg, Options{LocalStore: 4096}, nil)
	for _, n := range []int{0, 1} {
		task, out := doubleTask(40, n)
		must(t, runTask(t, m, task))
		for i, v := range out {
			if v != 2*uint32(i) {
				t.Fatalf("%d items: out[%d] = %d", n, i, v)
			}
		}
	}
	// 2 x 2032 bytes + 2 x 16 padding = 4096: one item, single-buffered.
	in, out := make([]byte, 2*2032), make([]byte, 2*2032)
	for i := range in {
		in[i] = byte(i)
	}
	task := sched.Task{Kernel: 41, Affinity: sched.SPU}
	task.Data.Elements = 2
	task.Data.In[0] = sched.Stream{Bytes: in, Stride: 2032, Count: 2}
	task.Data.Out[0] = sched.Stream{Bytes: out, Stride: 2032, Count: 2}
	before := x.Stats()
	must(t, runTask(t, m, task))
	for i := range out {
		if out[i] != in[i]^0x5a {
			t.Fatalf("wide: out[%d] = %d", i, out[i])
		}
	}
	if st := x.Stats(); st.SingleBuffered-before.SingleBuffered != 1 || st.Chunks-before.Chunks != 2 {
		t.Fatalf("wide: %+v, want single-buffered in 2 chunks", st)
	}
}

// TestSPUConcurrentUnits: four units, tasks added from several
// goroutines, every output correct (run with -race).
func TestSPUConcurrentUnits(t *testing.T) {
	reg := sched.NewRegistry()
	doubleKernel(t, reg, 40, nil)
	x, m := spuSched(t, reg, Options{LocalStore: 4096, Units: 4}, nil)
	s := m.Scheduler()
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20 {
				task, out := doubleTask(40, 100+37*k+g)
				id, err := s.Add(&task)
				if err == nil {
					err = s.Wait(id)
				}
				if err != nil {
					errc <- err
					return
				}
				for i, v := range out {
					if v != 2*uint32(i) {
						errc <- fmt.Errorf("goroutine %d task %d: out[%d] = %d", g, k, i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if st := x.Stats(); st.Jobs != 80 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSPUKernelErrorKeepsEarlierChunks: a kernel failing at a later chunk
// fails the task, names the chunk's items, and the executor's later jobs
// are not disturbed by the chunks left in flight.
func TestSPUKernelErrorKeepsEarlierChunks(t *testing.T) {
	reg := sched.NewRegistry()
	var fail atomic.Int32
	fail.Store(-1)
	var chunk atomic.Int32
	doubleKernel(t, reg, 40, func(*sched.TaskData) {
		if chunk.Add(1)-1 == fail.Load() {
			panic("chunk failed")
		}
	})
	_, m := spuSched(t, reg, Options{LocalStore: 4096}, nil)
	for _, at := range []int32{0, 1, 2, 5} {
		chunk.Store(0)
		fail.Store(at)
		task, _ := doubleTask(40, 3000)
		err := runTask(t, m, task)
		if !errors.Is(err, sched.ErrKernelPanic) || !strings.Contains(err.Error(), "staged as [0, ") {
			t.Fatalf("failing at chunk %d: %v", at, err)
		}
		fail.Store(-1)
		task, out := doubleTask(40, 3000)
		must(t, runTask(t, m, task))
		for i, v := range out {
			if v != 2*uint32(i) {
				t.Fatalf("after a failure at chunk %d: out[%d] = %d", at, i, v)
			}
		}
	}
}

// TestSPUFitsShapes: Fits agrees with running the task.
func TestSPUFitsShapes(t *testing.T) {
	reg := sched.NewRegistry()
	doubleKernel(t, reg, 40, nil)
	page := sched.StreamSpec{Name: "page", Stride: 4096}
	must(t, reg.Register(41, sched.Kernel{Name: "pages", Kind: sched.Streaming, In: []sched.StreamSpec{page},
		CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}))
	x, m := spuSched(t, reg, Options{LocalStore: 4096}, nil)
	k40 := reg.Lookup(40)
	k41 := reg.Lookup(41)
	small, _ := doubleTask(40, 10)
	if !x.Fits(k40, &small.Data) {
		t.Fatal("a 10-item double task does not fit 4 KiB")
	}
	pt := sched.Task{Kernel: 41, Affinity: sched.SPU}
	pt.Data.Elements = 1
	pt.Data.In[0] = sched.Stream{Bytes: make([]byte, 4096), Stride: 4096, Count: 1}
	if x.Fits(k41, &pt.Data) {
		t.Fatal("a 4096-byte item fits a 4096-byte store beside its padding")
	}
	if err := runTask(t, m, pt); !errors.Is(err, ErrMisfit) {
		t.Fatalf("running the misfit: %v", err)
	}
	if a := testing.AllocsPerRun(100, func() { x.Fits(k40, &small.Data) }); a != 0 {
		t.Fatalf("Fits allocates %v", a)
	}
}

// TestSPUQueueNeverDrained: a producer that keeps jobs queued behind the
// running one (the queue never empties) must not grow the queue with
// every job: in steady state it holds the few jobs waiting and allocates
// nothing.
func TestSPUQueueNeverDrained(t *testing.T) {
	reg := sched.NewRegistry()
	// A sleeping kernel keeps the unit busy far longer than the producer
	// takes to wait and add, so the queue never empties.
	doubleKernel(t, reg, 40, func(*sched.TaskData) { time.Sleep(50 * time.Microsecond) })
	x, m := spuSched(t, reg, Options{LocalStore: 4096}, nil)
	const depth = 16 // tasks in flight: one running, the rest queued
	// Each place of the ring writes its own output: tasks in flight
	// together must not share one (make test checks races between tasks).
	var tasks [depth]sched.Task
	for i := range tasks {
		tasks[i], _ = doubleTask(40, 64)
	}
	var ring [depth]sched.TaskID
	for i := range ring {
		id, err := m.Add(&tasks[i])
		must(t, err)
		ring[i] = id
	}
	i := 0
	step := func() {
		must(t, m.Wait(ring[i%depth]))
		id, err := m.Add(&tasks[i%depth])
		must(t, err)
		ring[i%depth] = id
		i++
	}
	for range 100 {
		step()
	}
	allocs := testing.AllocsPerRun(400, step)
	x.mu.Lock()
	qcap := cap(x.queue)
	x.mu.Unlock()
	for _, id := range ring {
		must(t, m.Wait(id))
	}
	if qcap > 256 || allocs != 0 { // 16 waiting jobs; the compaction leaves room for some more
		t.Fatalf("after 500 jobs never drained: queue capacity %d, %v allocations per job", qcap, allocs)
	}
}
