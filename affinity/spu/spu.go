package spu

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// DefaultLocalStore is the SPU executor's default local store size: 256
// KiB, a Cell SPU's.
const DefaultLocalStore = 256 << 10

// Bounds of Options, checked by New. New allocates every unit's local
// store at once, and an allocation the Go runtime cannot satisfy ends the
// process (it is not a panic that can be recovered), so a corrupt
// configuration or an overflowed computation must fail in New with an
// error instead.
// The bounds are far beyond what the executor models: a local store stands
// for memory next to one core, cache-sized (a Cell's was 256 KiB), and a
// unit for one core.
const (
	// MaxLocalStore bounds the local stores of all units together, in
	// bytes (1 GiB): Options.LocalStore and Options.Units × LocalStore.
	// A bound on the total rather than only per unit, because either
	// field alone within its bound can still ask for terabytes.
	MaxLocalStore = 1 << 30
	// MaxUnits bounds Options.Units (4096). A unit models one core, and
	// units beyond the machine's cores add goroutines, not parallelism;
	// 4096 is more cores than machines have, and MaxUnits units of the
	// default local store take exactly MaxLocalStore.
	MaxUnits = MaxLocalStore / DefaultLocalStore
)

// Errors of the SPU executor (wrapped; test with errors.Is).
var (
	// ErrMisfit: a task's streams cannot fit the local store, even one
	// work item per stream beside its Whole streams.
	ErrMisfit = errors.New("does not fit the local store")
	// ErrStream: a stream the SPU executor cannot stage (device-only
	// memory, too short for an item-indexed Whole stream).
	ErrStream = errors.New("stream not usable by the SPU executor")
	// ErrClosed: the job arrived after Close.
	ErrClosed = errors.New("spu: executor closed")
)

// Binding adjusts how the SPU executor stages a kernel; a kernel opts in
// by storing one (value or pointer) in sched.Kernel.SPU. Without one the
// executor stages the declared streams as declared.
type Binding struct {
	// ItemIn marks Whole-rate inputs that the kernel actually indexes by
	// work item (element i for item i), such as the bind-pose vertices of
	// skinning with one vertex per item (kernels.SkinLBS with Params[0] =
	// 0): they are streamed in chunks like PerItem inputs instead of being
	// copied whole. Such a stream must hold at least End elements.
	ItemIn [sched.MaxStreams]bool
	// UseBase makes the executor write each chunk's absolute first work
	// item into Params[BaseParam], for kernels whose results depend on the
	// item number itself (not only through indexing).
	UseBase   bool
	BaseParam int
}

// Options configures an SPU executor. The zero value gives defaults.
type Options struct {
	// LocalStore is each unit's local store size in bytes (default
	// DefaultLocalStore; at least 4 KiB; at most MaxLocalStore for all
	// units together).
	LocalStore int
	// Units is the number of SPUs: each is a compute goroutine with its
	// own local store and DMA goroutine (default 1; at most MaxUnits;
	// negative is an error).
	Units int
}

// Stats are an SPU executor's totals since it was created.
type Stats struct {
	Jobs   uint64 // completed without error
	Failed uint64
	Chunks uint64 // chunks computed
	// SingleBuffered counts jobs whose chunks were too large for two
	// buffers, so copies could not overlap computation.
	SingleBuffered uint64
	BytesIn        uint64 // copied into local stores (Whole streams included)
	BytesOut       uint64 // copied out of local stores
	// Compute is the time spent in kernels, DMA the time the DMA
	// goroutines spent copying, and Stall the time compute goroutines
	// waited for a copy: what double buffering did not hide.
	Compute time.Duration
	DMA     time.Duration
	Stall   time.Duration
}

// Executor is a sched.Executor that runs streaming tasks the way a Cell SPU
// did: each unit owns a fixed-size local store; a task's per-item streams
// are copied into it chunk by chunk, the kernel runs on the local copy, and
// the outputs are copied back, with two buffers so that a DMA goroutine
// copies chunk i+1 in (and chunk i-1 out) while the kernel computes chunk
// i. A kernel therefore sees only the memory its task declared, and the
// cost of that discipline is measured (Stats). Attach it with
//
//	x, _ := spu.New(spu.Options{})
//	s.AttachExecutor(sched.ExecSPU, x) // s.Close closes it
//
// and give tasks sched.SPU affinity (or Auto, with placement.Options.SPU set).
// See the package documentation for the rules a kernel must follow to run
// here (in short: index streams from TaskData.Begin, which is 0, and do not
// otherwise depend on the absolute item number).
type Executor struct {
	opts   Options
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []sched.Job
	head   int
	closed bool
	units  []*spuUnit
	wg     sync.WaitGroup
	once   sync.Once

	jobs, failed, chunks, single atomic.Uint64
	bytesIn, bytesOut            atomic.Uint64
	computeNS, dmaNS, stallNS    atomic.Int64
}

// stream kinds in a job layout
const (
	stNone = iota
	stWhole
	stItem
)

type spuStream struct {
	kind  uint8
	out   bool
	per   uint64 // bytes per work item (stItem)
	off   int    // offset in the local store (stWhole) or in each buffer (stItem)
	size  int    // bytes (stWhole)
	count uint32 // elements per work item (stItem) or total (stWhole)
}

// spuUnit is one SPU: a local store, a compute goroutine and a DMA goroutine.
type spuUnit struct {
	x     *Executor
	ls    []byte
	cmds  chan dmaCmd
	ready [2]chan struct{}
	fence chan struct{}

	// The job being staged: written by the compute goroutine before it
	// sends commands (the channel send orders it before the DMA's reads).
	src   *sched.TaskData
	plan  spuPlan
	local sched.TaskData
	ev    sched.RunEvent // observer scratch: reused, so reporting allocates nothing
	// streaming: the job's DMA commands may be in flight (between the
	// first get and quiesce); read by runJob when a kernel's Goexit
	// unwinds stream.
	streaming bool
}

type dmaCmd struct {
	op     uint8
	buf    uint8
	c0, c1 uint32 // absolute work items
}

const (
	dmaGet = iota
	dmaPut
	dmaFence
)

// New creates an SPU executor and starts its goroutines. Options out of
// their bounds (see Options, MaxLocalStore and MaxUnits) are refused with
// an error naming the field and the bound, before anything is allocated.
func New(opts Options) (*Executor, error) {
	if opts.LocalStore == 0 {
		opts.LocalStore = DefaultLocalStore
	}
	if opts.LocalStore < 4096 {
		return nil, fmt.Errorf("spu: New: Options.LocalStore of %d bytes; at least 4096", opts.LocalStore)
	}
	if opts.LocalStore > MaxLocalStore {
		return nil, fmt.Errorf("spu: New: Options.LocalStore of %d bytes; at most spu.MaxLocalStore, %d", opts.LocalStore, MaxLocalStore)
	}
	if opts.Units < 0 {
		return nil, fmt.Errorf("spu: New: Options.Units %d; want 1 or more (0: the default, 1)", opts.Units)
	}
	if opts.Units > MaxUnits {
		return nil, fmt.Errorf("spu: New: Options.Units %d; at most spu.MaxUnits, %d", opts.Units, MaxUnits)
	}
	if opts.Units == 0 {
		opts.Units = 1
	}
	// Both factors are bounded, but their product may not fit a 32-bit int.
	if opts.LocalStore > MaxLocalStore/opts.Units {
		return nil, fmt.Errorf("spu: New: Options.Units %d × Options.LocalStore %d bytes = %d bytes of local store; at most spu.MaxLocalStore, %d, in all",
			opts.Units, opts.LocalStore, int64(opts.Units)*int64(opts.LocalStore), MaxLocalStore)
	}
	x := &Executor{opts: opts}
	x.cond = sync.NewCond(&x.mu)
	for range opts.Units {
		// 16-byte aligned: std430 vec4 and any Go element type.
		mem := make([]uint64, (opts.LocalStore+15)/8+2)
		base := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)*8)
		skip := int((16 - uintptr(unsafe.Pointer(unsafe.SliceData(base)))%16) % 16)
		u := &spuUnit{x: x, ls: base[skip : skip+opts.LocalStore : skip+opts.LocalStore],
			cmds: make(chan dmaCmd, 8), fence: make(chan struct{}, 1)}
		u.ready[0], u.ready[1] = make(chan struct{}, 1), make(chan struct{}, 1)
		x.units = append(x.units, u)
		x.wg.Add(2)
		go u.dma()
		go u.run()
	}
	return x, nil
}

// LocalStore returns the local store size of each unit in bytes.
func (x *Executor) LocalStore() int { return x.opts.LocalStore }

// Enqueue implements sched.Executor: it queues the job for the next free
// unit and returns at once. After Close the job fails with ErrClosed.
func (x *Executor) Enqueue(j sched.Job) {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		x.failed.Add(1)
		if obs := j.Scheduler().Observer(); obs != nil {
			id, _ := j.Kernel()
			d := j.Data()
			now := sched.Nanotime()
			ev := sched.RunEvent{Thread: -1, Where: sched.SPU, Task: j.ID(), Parent: j.Parent(),
				Dependency: j.Dependency(), Kernel: id, Begin: d.Begin, End: d.End, Start: now, Stop: now, Err: ErrClosed}
			if oerr := observe(obs, &ev); oerr != nil {
				j.Done(errors.Join(ErrClosed, oerr))
				return
			}
		}
		j.Done(ErrClosed)
		return
	}
	x.queue = append(x.queue, j)
	x.mu.Unlock()
	x.cond.Signal()
}

// Close implements sched.Executor: it stops accepting jobs, lets the units
// finish every job already queued, and returns when all of the executor's
// goroutines have exited. Scheduler.Close calls it. Calling it again
// returns nil at once.
func (x *Executor) Close() error {
	x.once.Do(func() {
		x.mu.Lock()
		x.closed = true
		x.mu.Unlock()
		x.cond.Broadcast()
		x.wg.Wait()
	})
	return nil
}

// Stats returns the executor's totals.
func (x *Executor) Stats() Stats {
	return Stats{
		Jobs: x.jobs.Load(), Failed: x.failed.Load(), Chunks: x.chunks.Load(),
		SingleBuffered: x.single.Load(),
		BytesIn:        x.bytesIn.Load(), BytesOut: x.bytesOut.Load(),
		Compute: time.Duration(x.computeNS.Load()), DMA: time.Duration(x.dmaNS.Load()),
		Stall: time.Duration(x.stallNS.Load()),
	}
}

// next takes a job, waiting; ok is false once closed and drained.
func (x *Executor) next() (sched.Job, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for x.head == len(x.queue) && !x.closed {
		x.cond.Wait()
	}
	if x.head == len(x.queue) {
		return sched.Job{}, false
	}
	j := x.queue[x.head]
	x.queue[x.head] = sched.Job{}
	x.head++
	switch {
	case x.head == len(x.queue):
		x.head, x.queue = 0, x.queue[:0]
	case x.head >= 32 && 2*x.head >= len(x.queue):
		// Never drained (a producer keeps jobs queued behind the running
		// ones): move the waiting jobs to the front, so that the slice
		// holds what waits, not every job since the queue was last empty.
		// Half the slice was taken since the last move: each job is
		// copied about once.
		n := copy(x.queue, x.queue[x.head:])
		clear(x.queue[n:])
		x.head, x.queue = 0, x.queue[:n]
	}
	return j, true
}

func (u *spuUnit) run() {
	exited := true // until the loop ends: a kernel called runtime.Goexit
	defer func() {
		if exited {
			// runJob completed the job as the goroutine unwound; the unit
			// goes on on a new goroutine, which inherits this one's count
			// in the wait group and the DMA goroutine.
			go u.run()
			return
		}
		close(u.cmds) // stops the DMA goroutine
		u.x.wg.Done()
	}()
	for {
		j, ok := u.x.next()
		if !ok {
			exited = false
			return
		}
		u.runJob(j)
	}
}

// runJob stages, runs and completes one job. A runtime.Goexit in the
// kernel (testing's FailNow or Fatal) cannot be stopped: the job fails
// with sched.ErrKernelPanic as the goroutine unwinds, after the DMA
// goroutine finished the commands it was given, and run replaces the
// goroutine.
func (u *spuUnit) runJob(j sched.Job) {
	id, k := j.Kernel()
	d := j.Data()
	begin, end := d.Begin, d.End
	start := sched.Nanotime()
	finished := false
	defer func() {
		if finished {
			return
		}
		if u.streaming {
			u.quiesce(d)
		}
		u.complete(j, id, begin, end, start, fmt.Errorf("%w: kernel %d %q: runtime.Goexit", sched.ErrKernelPanic, id, k.Name))
	}()
	var err error
	if k.Kind == sched.Simple {
		// No streams to stage: the kernel data is all it may see.
		err = u.call(k, d)
	} else {
		if err = planSPU(len(u.ls), id, k, d, &u.plan, true); err == nil {
			u.src = d
			err = u.stream(k, d, u.plan.chunk, u.plan.double)
		}
	}
	finished = true
	u.complete(j, id, begin, end, start, err)
}

// complete counts, reports and finishes job j (items [begin, end) of
// kernel id, started at start) with err.
func (u *spuUnit) complete(j sched.Job, id sched.KernelID, begin, end uint32, start int64, err error) {
	x := u.x
	stop := sched.Nanotime()
	if err != nil {
		err = fmt.Errorf("SPU: %w", err)
		x.failed.Add(1)
	} else {
		x.jobs.Add(1)
	}
	if obs := j.Scheduler().Observer(); obs != nil {
		u.ev = sched.RunEvent{Thread: -1, Where: sched.SPU, Task: j.ID(), Parent: j.Parent(),
			Dependency: j.Dependency(), Kernel: id, Begin: begin, End: end, Start: start, Stop: stop, Err: err}
		if oerr := observe(obs, &u.ev); oerr != nil {
			err = errors.Join(err, oerr)
		}
	}
	u.src = nil
	u.local = sched.TaskData{}
	j.Done(err)
}

// observe calls obs.TaskRan(ev) and returns an error wrapping
// sched.ErrObserverPanic if it panicked: the task fails with it, as a
// task that a scheduler thread ran does (sched.Observer), instead of the
// panic ending the process from the unit's goroutine.
func observe(obs sched.Observer, ev *sched.RunEvent) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("SPU: %v (kernel %d): %w: %v", ev.Task, ev.Kernel, sched.ErrObserverPanic, r)
		}
	}()
	obs.TaskRan(ev)
	return nil
}

// call runs the kernel on td, turning a panic into an error. Kernels get a
// nil *sched.Ctx: an SPU cannot add tasks or wait.
func (u *spuUnit) call(k *sched.Kernel, td *sched.TaskData) (err error) {
	t0 := sched.Nanotime()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", sched.ErrKernelPanic, r)
		}
		u.x.computeNS.Add(sched.Nanotime() - t0)
	}()
	return k.CPU(nil, td)
}

func align16(n int) int { return (n + 15) &^ 15 }

// spuPlan is the local-store layout of one task.
type spuPlan struct {
	streams [2 * sched.MaxStreams]spuStream // In 0..3, Out 0..3
	buf     [2]int                          // offsets of the two buffers
	chunk   uint32                          // work items per chunk
	double  bool                            // two buffers
	bind    Binding
	whole   int    // bytes of Whole streams
	perItem uint64 // bytes of per-item streams per work item
	pad     int    // bytes a buffer may lose to aligning its per-item streams
}

// need is the smallest local store that holds the plan's task: its Whole
// streams and one buffer of one work item of every per-item stream,
// aligned. planSPU refuses a store smaller than need and plans at least
// one item in one buffer in a store of need bytes, so the misfit error's
// figure is exact.
func (pl *spuPlan) need() uint64 {
	if pl.perItem == 0 {
		return uint64(pl.whole)
	}
	return uint64(pl.whole) + uint64(pl.pad) + pl.perItem
}

// errNoFit is planSPU's error when not asked to explain (no allocation).
var errNoFit = errors.New("spu: cannot run the task")

// planSPU plans a local store of ls bytes for task d of kernel k: Whole
// streams at the start, then two buffers (one if two do not fit) holding a
// chunk of every per-item stream. With explain false its errors are
// errNoFit and it allocates nothing.
func planSPU(ls int, id sched.KernelID, k *sched.Kernel, d *sched.TaskData, pl *spuPlan, explain bool) error {
	fail := func(err func() error) error {
		if !explain {
			return errNoFit
		}
		return err()
	}
	var bind Binding
	switch b := k.SPU.(type) {
	case nil:
	case Binding:
		bind = b
	case *Binding:
		if b != nil {
			bind = *b
		}
	default:
		return fail(func() error {
			return fmt.Errorf("kernel %d %q: sched.Kernel.SPU holds a %T, not a spu.Binding", id, k.Name, k.SPU)
		})
	}
	if bind.UseBase && (bind.BaseParam < 0 || bind.BaseParam >= len(d.Params)) {
		return fail(func() error {
			return fmt.Errorf("kernel %d %q: Binding.BaseParam %d out of range", id, k.Name, bind.BaseParam)
		})
	}
	pl.bind = bind
	whole, perItem, nItem := 0, uint64(0), 0
	for i := range pl.streams {
		out := i >= sched.MaxStreams
		si := i % sched.MaxStreams
		specs, s := k.In, &d.In[si]
		if out {
			specs, s = k.Out, &d.Out[si]
		}
		st := &pl.streams[i]
		*st = spuStream{out: out}
		if si >= len(specs) || (s.Count == 0 && s.Bytes == nil) {
			continue
		}
		if s.Bytes == nil {
			return fail(func() error {
				return fmt.Errorf("kernel %d %q: %s stream %d (%s) is device buffer %d without host bytes: %w", id, k.Name, dirName(out), si, specs[si].Name, s.Buffer, ErrStream)
			})
		}
		rate := specs[si].Rate
		factor := uint32(1)
		if (k.Kind == sched.Reduce && !out) || (k.Kind == sched.Expand && out) {
			factor = k.Factor
		}
		if rate == sched.Whole && !out && bind.ItemIn[si] {
			rate, factor = sched.PerItem, 1
			if s.Count < d.End {
				return fail(func() error {
					return fmt.Errorf("kernel %d %q: input stream %d (%s) is streamed per item but holds %d elements, fewer than the range end %d: %w", id, k.Name, si, specs[si].Name, s.Count, d.End, ErrStream)
				})
			}
		}
		if rate == sched.Whole {
			st.kind, st.size, st.count, st.off = stWhole, int(uint64(s.Count)*uint64(s.Stride)), s.Count, whole
			whole = align16(whole + st.size)
		} else {
			st.kind, st.count, st.per = stItem, factor, uint64(s.Stride)*uint64(factor)
			perItem += st.per
			nItem++
		}
	}
	// Each per-item stream's offset in a buffer is rounded up to 16
	// bytes: a buffer may lose up to 15 bytes per stream, counted as 16.
	pl.whole, pl.perItem, pl.pad = whole, perItem, 16*nItem
	n := d.End - d.Begin
	if uint64(ls) < pl.need() {
		return fail(func() error { return misfit(ls, id, k, d, pl) })
	}
	if perItem == 0 {
		pl.chunk, pl.double = max(n, 1), false
		return nil
	}
	// ls >= need: one buffer holds at least one item.
	avail, pad := ls-whole, pl.pad
	double := true
	var chunk uint64
	if half := avail/2 - pad; half > 0 {
		chunk = uint64(half) / perItem
	}
	if chunk == 0 {
		double = false
		chunk = uint64(avail-pad) / perItem
	}
	chunk = min(chunk, uint64(max(n, 1)))
	// Offsets of each per-item stream inside a buffer, then the buffers.
	off := 0
	for i := range pl.streams {
		if st := &pl.streams[i]; st.kind == stItem {
			st.off = off
			off = align16(off + int(chunk*st.per))
		}
	}
	pl.buf[0] = whole
	pl.buf[1] = whole + off
	pl.chunk, pl.double = uint32(chunk), double
	return nil
}

func dirName(out bool) string {
	if out {
		return "output"
	}
	return "input"
}

// misfit explains why a task does not fit a local store of ls bytes.
func misfit(ls int, id sched.KernelID, k *sched.Kernel, d *sched.TaskData, pl *spuPlan) error {
	var desc strings.Builder
	for i, st := range pl.streams {
		si := i % sched.MaxStreams
		specs := k.In
		if st.out {
			specs = k.Out
		}
		switch st.kind {
		case stWhole:
			fmt.Fprintf(&desc, ", %s %d (%s) whole %d B", dirName(st.out), si, specs[si].Name, st.size)
		case stItem:
			fmt.Fprintf(&desc, ", %s %d (%s) %d B/item", dirName(st.out), si, specs[si].Name, st.per)
		}
	}
	return fmt.Errorf("kernel %d %q %w of %d bytes: Whole streams take %d bytes and one work item of the per-item streams %d (need at least %d)%s",
		id, k.Name, ErrMisfit, ls, pl.whole, pl.perItem, pl.need(), desc.String())
}

// Fits reports whether the executor can run task d of kernel k: a
// streaming, reduce or expand kernel whose streams have host bytes and fit
// the local store (at least one work item beside the Whole streams).
// Simple kernels fit. It allocates nothing; the Placer calls it before
// choosing the SPU for an Auto task.
func (x *Executor) Fits(k *sched.Kernel, d *sched.TaskData) bool {
	if k.Kind == sched.Simple {
		return true
	}
	var pl spuPlan
	return planSPU(x.opts.LocalStore, 0, k, d, &pl, false) == nil
}

// stream runs the chunks of the planned job, double-buffered when double.
func (u *spuUnit) stream(k *sched.Kernel, d *sched.TaskData, chunk uint32, double bool) error {
	x := u.x
	n := d.End - d.Begin
	if n == 0 {
		return nil
	}
	if !double {
		x.single.Add(1)
	}
	u.streaming = true // commands in flight until quiesce
	nChunks := (n + chunk - 1) / chunk
	rng := func(i uint32) (uint32, uint32) {
		c0 := d.Begin + i*chunk
		return c0, min(c0+chunk, d.End)
	}
	send := func(op uint8, i uint32, b int) {
		c0, c1 := rng(i)
		u.cmds <- dmaCmd{op: op, buf: uint8(b), c0: c0, c1: c1}
	}
	send(dmaGet, 0, 0)
	if double && nChunks > 1 {
		send(dmaGet, 1, 1)
	}
	var err error
	for i := uint32(0); i < nChunks; i++ {
		b := 0
		if double {
			b = int(i % 2)
		} else if i > 0 {
			send(dmaGet, i, 0) // after the previous put: the buffer is free
		}
		u.wait(u.ready[b])
		c0, c1 := rng(i)
		u.setLocal(d, b, c0, c1)
		if err = u.call(k, &u.local); err != nil {
			err = fmt.Errorf("items [%d, %d) staged as [0, %d): %w", c0, c1, c1-c0, err)
			break
		}
		x.chunks.Add(1)
		send(dmaPut, i, b)
		if double && i+2 < nChunks {
			send(dmaGet, i+2, b)
		}
	}
	u.quiesce(d)
	return err
}

// quiesce waits until the DMA goroutine completed every command of the
// job of d (a fence, which copies Whole outputs back) and drops the ready
// signals of chunks not computed (after an error or a Goexit), so that
// the next job starts with idle buffers.
func (u *spuUnit) quiesce(d *sched.TaskData) {
	u.cmds <- dmaCmd{op: dmaFence, c0: d.Begin, c1: d.End}
	u.wait(u.fence)
	for b := range u.ready {
		select {
		case <-u.ready[b]:
		default:
		}
	}
	u.streaming = false
}

// wait blocks on ch, counting the time as stall.
func (u *spuUnit) wait(ch chan struct{}) {
	select {
	case <-ch:
		return
	default:
	}
	t0 := sched.Nanotime()
	<-ch
	u.x.stallNS.Add(sched.Nanotime() - t0)
}

// setLocal points u.local at buffer b holding items [c0, c1): Begin 0,
// End c1-c0, every stream rebased to the local store.
func (u *spuUnit) setLocal(d *sched.TaskData, b int, c0, c1 uint32) {
	m := c1 - c0
	l := &u.local
	l.Params, l.Data = d.Params, d.Data
	if u.plan.bind.UseBase {
		l.Params[u.plan.bind.BaseParam] = c0
	}
	l.Elements, l.Grain, l.Begin, l.End = m, 0, 0, m
	for i := range u.plan.streams {
		st := &u.plan.streams[i]
		si := i % sched.MaxStreams
		src, dst := &d.In[si], &l.In[si]
		if st.out {
			src, dst = &d.Out[si], &l.Out[si]
		}
		switch st.kind {
		case stNone:
			*dst = sched.Stream{}
		case stWhole:
			*dst = sched.Stream{Bytes: u.ls[st.off : st.off+st.size : st.off+st.size], Stride: src.Stride, Count: src.Count}
		case stItem:
			lo := u.plan.buf[b] + st.off
			sz := int(uint64(m) * st.per)
			*dst = sched.Stream{Bytes: u.ls[lo : lo+sz : lo+sz], Stride: src.Stride, Count: m * st.count}
		}
	}
}

// dma is the unit's DMA engine: it executes commands in order, so a put of
// a buffer always completes before a later get into it.
func (u *spuUnit) dma() {
	x := u.x
	defer x.wg.Done()
	for c := range u.cmds {
		t0 := sched.Nanotime()
		d := u.src
		var in, out uint64
		switch c.op {
		case dmaGet:
			if c.c0 == d.Begin {
				// First chunk: the Whole streams too.
				for i := range u.plan.streams {
					if st := &u.plan.streams[i]; st.kind == stWhole {
						src := streamOf(d, i)
						copy(u.ls[st.off:st.off+st.size], src.Bytes[:st.size])
						in += uint64(st.size)
					}
				}
			}
			for i := range u.plan.streams {
				st := &u.plan.streams[i]
				if st.kind != stItem {
					continue
				}
				lo := u.plan.buf[c.buf] + st.off
				sz := int(uint64(c.c1-c.c0) * st.per)
				if st.out {
					clear(u.ls[lo : lo+sz]) // outputs start zeroed, never stale
					continue
				}
				s0 := uint64(c.c0) * st.per
				copy(u.ls[lo:lo+sz], streamOf(d, i).Bytes[s0:s0+uint64(sz)])
				in += uint64(sz)
			}
		case dmaPut:
			for i := range u.plan.streams {
				st := &u.plan.streams[i]
				if st.kind != stItem || !st.out {
					continue
				}
				lo := u.plan.buf[c.buf] + st.off
				sz := int(uint64(c.c1-c.c0) * st.per)
				s0 := uint64(c.c0) * st.per
				copy(streamOf(d, i).Bytes[s0:s0+uint64(sz)], u.ls[lo:lo+sz])
				out += uint64(sz)
			}
		case dmaFence:
			// Whole outputs go back once, after the last chunk.
			for i := range u.plan.streams {
				if st := &u.plan.streams[i]; st.kind == stWhole && st.out {
					copy(streamOf(d, i).Bytes[:st.size], u.ls[st.off:st.off+st.size])
					out += uint64(st.size)
				}
			}
		}
		x.bytesIn.Add(in)
		x.bytesOut.Add(out)
		x.dmaNS.Add(sched.Nanotime() - t0)
		switch c.op {
		case dmaGet:
			u.ready[c.buf] <- struct{}{}
		case dmaFence:
			u.fence <- struct{}{}
		}
	}
}

// streamOf returns stream i of d (0..3 inputs, 4..7 outputs).
func streamOf(d *sched.TaskData, i int) *sched.Stream {
	if i >= sched.MaxStreams {
		return &d.Out[i-sched.MaxStreams]
	}
	return &d.In[i]
}
