package main

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/internal/xmath"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// The devices (columns) kbench measures.
const (
	devCPU1     = "cpu-1"        // the CPU kernel on one goroutine, called directly
	devCPUAll   = "cpu-all"      // the scheduler: every worker plus the main thread helping in Wait
	devSPU      = "spu"          // the SPU-style local-store executor (spu.Executor), one unit
	devGPU      = "gpu-dispatch" // GPU-resident buffers, dispatch time from the executor's timestamps
	devGPUXfer  = "gpu+xfer"     // host streams: upload, dispatch, read-back, wall clock
	devCopyName = "copy"         // the memory-copy bound
)

// timing is a measurement: the median seconds per run, the fastest
// sample, the samples, and for gpu-dispatch the median wall-clock round
// trip of the same runs.
type timing struct {
	median  float64
	best    float64
	samples []float64
	wall    float64
}

// op is one measured operation. run runs it once and reports the time to
// count (its wall time, or the GPU's dispatch time) and its wall time.
type op struct {
	name string
	run  func() (counted, wall time.Duration, err error)
}

// measureAll measures ops, which the caller has each run once already
// (warm-up: caches, page faults, lavapipe's shader compilation at the
// first dispatch). One timed run per op picks how many runs make a sample
// last at least minSample; then reps rounds take one sample of every op in
// turn. Interleaving the ops makes load from other processes on the
// machine hit every column alike, rather than one column's samples.
func measureAll(ops []op, reps int, minSample time.Duration) ([]timing, error) {
	ks := make([]int, len(ops))
	for i, o := range ops {
		_, w, err := o.run()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.name, err)
		}
		ks[i] = 1
		if w < minSample {
			ks[i] = int(min(int64(minSample/max(w, time.Microsecond))+1, 1<<20))
		}
	}
	ts := make([]timing, len(ops))
	walls := make([][]float64, len(ops))
	for range reps {
		for i, o := range ops {
			var sum, wsum time.Duration
			for range ks[i] {
				c, w, err := o.run()
				if err != nil {
					return nil, fmt.Errorf("%s: %w", o.name, err)
				}
				sum += c
				wsum += w
			}
			ts[i].samples = append(ts[i].samples, sum.Seconds()/float64(ks[i]))
			walls[i] = append(walls[i], wsum.Seconds()/float64(ks[i]))
		}
	}
	for i := range ts {
		ts[i].median = xmath.Median(ts[i].samples)
		ts[i].best = slices.Min(ts[i].samples)
		ts[i].wall = xmath.Median(walls[i])
	}
	return ts, nil
}

// wallOp wraps a function as a wall-clock timed op.
func wallOp(f func() error) func() (time.Duration, time.Duration, error) {
	return func() (time.Duration, time.Duration, error) {
		t0 := time.Now()
		err := f()
		d := time.Since(t0)
		return d, d, err
	}
}

// copyCap bounds the bytes the copy-bound ops really copy: beyond 256 MB
// read and written, a copy runs at DRAM bandwidth whatever its size, so
// the bound is extrapolated linearly from a copy of that size (which keeps
// kbench's memory use down at 1e7 elements).
const copyCap = 256 << 20

// copyOps returns the ops that measure the memory-copy bound of a kernel
// that reads and writes n bytes in total: copy() of n/2 bytes reads and
// writes as many, on one goroutine and on GOMAXPROCS goroutines (each
// copying its share). Their counted times are scaled to n bytes. Each has
// run once (page faults).
func copyOps(n int64) []op {
	m := min(n, copyCap)
	scale := float64(n) / float64(m)
	half := max(m/2, 64)
	src, dst := make([]byte, half), make([]byte, half)
	for i := range src {
		src[i] = byte(i)
	}
	scaled := func(f func()) func() (time.Duration, time.Duration, error) {
		return func() (time.Duration, time.Duration, error) {
			t0 := time.Now()
			f()
			d := time.Since(t0)
			return time.Duration(float64(d) * scale), d, nil
		}
	}
	p := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	ops := []op{
		{"copy, one goroutine", scaled(func() { copy(dst, src) })},
		{"copy, all goroutines", scaled(func() {
			for i := range p {
				lo, hi := int(half)*i/p, int(half)*(i+1)/p
				wg.Go(func() { copy(dst[lo:hi], src[lo:hi]) })
			}
			wg.Wait()
		})},
	}
	for _, o := range ops {
		o.run()
	}
	return ops
}

// gpuObserver counts the GPU tasks the executor reported and sums their
// dispatch times (timestamps). The executor reports a task after its
// Done, so a caller that waited for its tasks calls wait to see them all.
type gpuObserver struct {
	mu       sync.Mutex
	cond     *sync.Cond
	n        int64
	dispatch time.Duration
	err      error
}

func newGPUObserver() *gpuObserver {
	o := &gpuObserver{}
	o.cond = sync.NewCond(&o.mu)
	return o
}

func (o *gpuObserver) TaskRan(ev *sched.RunEvent) {
	if ev.Where != sched.GPU {
		return
	}
	o.mu.Lock()
	o.n++
	o.dispatch += time.Duration(ev.Stop - ev.Start)
	if ev.Err != nil && o.err == nil {
		o.err = ev.Err
	}
	o.mu.Unlock()
	o.cond.Broadcast()
}

// wait blocks until n GPU tasks have been reported in total and returns
// the total dispatch time so far.
func (o *gpuObserver) wait(n int64) (time.Duration, error) {
	timer := time.AfterFunc(30*time.Second, o.cond.Broadcast)
	defer timer.Stop()
	deadline := time.Now().Add(30 * time.Second)
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.n < n {
		if time.Now().After(deadline) {
			return o.dispatch, fmt.Errorf("only %d of %d GPU tasks reported their timestamps after 30 s", o.n, n)
		}
		o.cond.Wait()
	}
	return o.dispatch, o.err
}

// bench holds what the measurements run on.
type bench struct {
	reg  *sched.Registry
	s    *sched.Scheduler
	main *sched.Ctx
	dev  *gpu.Device   // nil: CPU only
	exec *gpu.Executor // nil: CPU only
	spu  *spu.Executor
	obs  *gpuObserver
	sent int64 // GPU tasks added so far

	ids []sched.TaskID // scratch
}

// runTasks adds one task per chunk with the given affinity and streams,
// then waits for all of them.
func (b *bench) runTasks(w *workload, a sched.Affinity, bufs []sched.BufferID) error {
	b.ids = b.ids[:0]
	var firstErr error
	for c := range w.chunks() {
		t := sched.Task{Kernel: w.id, Affinity: a, Data: w.task(c, bufs)}
		id, err := b.main.Add(&t)
		if err != nil {
			firstErr = err
			break
		}
		if a == sched.GPU {
			b.sent++
		}
		b.ids = append(b.ids, id)
	}
	for _, id := range b.ids {
		if err := b.main.Wait(id); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// spuBinding returns how the SPU-style executor stages kernel id, when it
// needs more than the declaration: the skinning kernels' bind-pose
// vertices are a Whole stream, but with Params[0] = 0 (kbench's
// workloads) vertex i belongs to item i, so they are streamed per item
// instead of being copied whole into the local store.
func spuBinding(id sched.KernelID) (spu.Binding, bool) {
	switch id {
	case kernels.SkinLBS, kernels.SkinLBSUniform, kernels.SkinDQS, kernels.SkinDQSUniform:
		return spu.Binding{ItemIn: [sched.MaxStreams]bool{0: true}}, true
	}
	return spu.Binding{}, false
}

// spuFits returns why the SPU-style executor cannot run w's tasks of
// chunk items (0: w's chunks), or "" when it can.
func (b *bench) spuFits(w *workload, chunk int) string {
	if w.id == kernels.ScanDownsweepU32 {
		// Its values are a Whole stream read at 256 x the absolute work
		// item, which a chunk staged from item 0 of the local store
		// cannot rebase (package spu's rule: index streams from Begin).
		return "not run: its Whole input is indexed by the absolute work item"
	}
	// Every task has the same streams per item: the first decides.
	d := w.taskRange(0, w.spuItems(chunk), nil)
	if !b.spu.Fits(w.kern, &d) {
		return fmt.Sprintf("not run: does not fit a local store of %d bytes", b.spu.LocalStore())
	}
	return ""
}

// spuItems is the number of work items per SPU task.
func (w *workload) spuItems(chunk int) int {
	if chunk <= 0 {
		return w.chunk
	}
	return min(chunk, w.chunk)
}

// runSPU adds one SPU task per chunk items (w's chunks when 0) and waits
// for all of them.
func (b *bench) runSPU(w *workload, chunk int) error {
	b.ids = b.ids[:0]
	var firstErr error
	n := w.spuItems(chunk)
	for lo := 0; lo < w.items; lo += n {
		t := sched.Task{Kernel: w.id, Affinity: sched.SPU, Data: w.taskRange(lo, min(lo+n, w.items), nil)}
		id, err := b.main.Add(&t)
		if err != nil {
			firstErr = err
			break
		}
		b.ids = append(b.ids, id)
	}
	for _, id := range b.ids {
		if err := b.main.Wait(id); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// runCPU1 runs every chunk through the kernel's CPU function on the
// calling goroutine.
func (b *bench) runCPU1(w *workload) error {
	for c := range w.chunks() {
		d := w.task(c, nil)
		if err := w.kern.CPU(nil, &d); err != nil {
			return fmt.Errorf("kernel %d %q: %w", w.id, w.kern.Name, err)
		}
	}
	return nil
}

// residentSet is a workload's arrays copied into GPU buffers.
type residentSet struct {
	bufs []*gpu.Buffer
	ids  []sched.BufferID
}

// resident copies the workload's arrays into GPU buffers (outputs are
// allocated, not written).
func (b *bench) resident(w *workload) (*residentSet, error) {
	r := &residentSet{}
	for _, a := range w.arrays {
		buf, err := b.dev.NewBuffer(uint64(len(a.data)))
		if err != nil {
			r.close()
			return nil, fmt.Errorf("GPU buffer of %d bytes for stream %q: %w", len(a.data), a.name, err)
		}
		r.bufs = append(r.bufs, buf)
		r.ids = append(r.ids, buf.ID())
		if !a.out {
			if err := buf.Write(0, a.data); err != nil {
				r.close()
				return nil, err
			}
		}
	}
	return r, nil
}

// compare checks the output buffers against want (see compare), reading
// them back a piece at a time.
func (r *residentSet) compare(w *workload, dev string, want [][]byte) error {
	const piece = 16 << 20 // a multiple of every element size
	got := make([][]byte, len(w.arrays))
	part := make([][]byte, len(w.arrays))
	buf := make([]byte, piece)
	for i, a := range w.arrays {
		if !a.out {
			continue
		}
		for off := 0; off < len(a.data); off += piece {
			n := min(piece, len(a.data)-off)
			if err := r.bufs[i].Read(uint64(off), buf[:n]); err != nil {
				return err
			}
			clear(got)
			clear(part)
			got[i], part[i] = buf[:n], want[i][off:off+n]
			if err := compareAt(w, dev, part, got, off); err != nil {
				return fmt.Errorf("%w (in the piece at byte %d)", err, off)
			}
		}
	}
	return nil
}

func (r *residentSet) close() {
	for _, b := range r.bufs {
		b.Close()
	}
}
