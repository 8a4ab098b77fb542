package gpu

import (
	"fmt"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/internal/xmath"
	"github.com/vkjobs/vkjobs/sched"
)

// plannedJob is a job planned into a slot (plan): what recording its
// dispatch and completing it need. It lives in slot.jobs from plan until
// the slot is cleared after Done (see the job states in submit.go).
type plannedJob struct {
	job        // the job, as enqueued
	kid        sched.KernelID
	pipe       *pipeline
	set        uint64
	params     [8]uint32
	begin, end uint32
	upNS       int64 // host copies into the arena
	rbNS       int64 // host copies out of the arena
	upBytes    uint64
	downBytes  uint64
	rb0, rb1   int   // sl.readbacks range
	ac0, ac1   int   // sl.access range
	start      int64 // GPU start and stop, sched.Nanotime scale
	stop       int64
	node       int // a graph segment's: the index of its node in segment.nodes
}

type copyOp struct {
	src, dst vk.Buffer
	r        vk.BufferCopy
}

type readback struct{ dst, src []byte }

// access is a use of a persistent buffer's bytes by a dispatch.
type access struct {
	id     sched.BufferID
	lo, hi uint64
	write  bool
}

// slotMark is how far a slot's per-job state reached: a job that fails
// half-way through plan is rolled back to it.
type slotMark struct {
	arena                                          *Arena
	used                                           uint64
	jobs, copyIn, copyOut, readbacks, refs, access int
}

func (sl *slot) mark() slotMark {
	return slotMark{arena: sl.arena, used: sl.arena.used, jobs: len(sl.jobs), copyIn: len(sl.copyIn), copyOut: len(sl.copyOut),
		readbacks: len(sl.readbacks), refs: len(sl.refs), access: len(sl.access)}
}

// rollback drops what was added to sl since m; the references to
// persistent buffers taken since are released.
func (sl *slot) rollback(m slotMark) {
	if sl.arena == m.arena {
		sl.arena.used = m.used
	} else {
		sl.arena.Reset() // grown for this job (growArena): nothing else in it
	}
	clear(sl.jobs[m.jobs:])
	sl.jobs = sl.jobs[:m.jobs]
	sl.copyIn, sl.copyOut = sl.copyIn[:m.copyIn], sl.copyOut[:m.copyOut]
	clear(sl.readbacks[m.readbacks:])
	sl.readbacks = sl.readbacks[:m.readbacks]
	for _, b := range sl.refs[m.refs:] {
		b.release()
	}
	clear(sl.refs[m.refs:])
	sl.refs = sl.refs[:m.refs]
	sl.access = sl.access[:m.access]
}

// plan prepares one job in sl: pipeline, streams, uploads, descriptor set.
// It returns false when the job must wait for the next command buffer (the
// arena is full); a job that fails or has no work is finished here.
func (e *Executor) plan(sl *slot, jb *job) bool {
	kid, k := jb.j.Kernel()
	td := jb.j.Data()
	if jb.j.Abandoned() {
		e.finishEarly(jb, sched.ErrAbandoned) // never run it (sched.Job.Abandoned)
		return true
	}
	if td.End <= td.Begin {
		e.finishEarly(jb, nil) // nothing to dispatch
		return true
	}
	p, err := e.d.pipelineFor(k)
	if err == nil {
		err = itemRange(k, p, td.Begin, td.End)
	}
	if err == nil {
		err = e.admit(k, td)
	}
	if err != nil {
		e.finishEarly(jb, err)
		return true
	}
	a := sl.arena
	need := e.arenaNeed(k, td, a.align+p.maxElem)
	if a.used+need > a.Cap() {
		if len(sl.jobs) > 0 {
			sl.want = max(sl.want, xmath.Pow2(a.used+need))
			return false
		}
		if err := e.growArena(sl, xmath.Pow2(max(need, a.Cap()))); err != nil {
			e.finishEarly(jb, fmt.Errorf("gpu: transient memory for %d bytes of streams: %w", need, err))
			return true
		}
	}
	m := sl.mark() // for rolling back a job that fails half-way
	rec := plannedJob{job: *jb, kid: kid, pipe: p, params: td.Params, begin: td.Begin, end: td.End, rb0: m.readbacks, ac0: m.access}
	nw := 0
	for i := range k.In {
		if sl.writes[nw], err = e.bindStream(sl, k, td, false, i, p, &rec); err != nil {
			break
		}
		nw++
	}
	for i := 0; err == nil && i < len(k.Out); i++ {
		if sl.writes[nw], err = e.bindStream(sl, k, td, true, i, p, &rec); err != nil {
			break
		}
		nw++
	}
	if err == nil {
		err = check("vkAllocateDescriptorSets", Result(e.d.shim.Set(sl.dpool, p.setLayout, sl.writes[:nw], &sl.setOut)))
	}
	if err != nil {
		sl.rollback(m)
		e.finishEarly(jb, err)
		return true
	}
	rec.set = sl.setOut
	rec.rb1, rec.ac1 = len(sl.readbacks), len(sl.access)
	sl.jobs = append(sl.jobs, rec)
	return true
}

// itemRange refuses a range whose last workgroup would reach past item
// 2^32-1: its invocations beyond End number their items modulo 2^32 in a
// shader's 32-bit arithmetic (begin + g*ItemsPerInvocation wraps), so they
// would pass the contract's i >= end test with a small i and redo, or
// overwrite, items near 0. Only a workgroup span that is not a power of
// two can get there (one that is divides 2^32), and only with billions of
// items.
func itemRange(k *sched.Kernel, p *pipeline, begin, end uint32) error {
	n := uint64(end - begin)
	last := uint64(begin) + (n+p.itemsPerGroup-1)/p.itemsPerGroup*p.itemsPerGroup
	if last > 1<<32 {
		return fmt.Errorf("%w: kernel %q: items [%d, %d) in workgroups of %d items (LocalSize x ItemsPerInvocation) run invocations up to item %d, past 2^32-1, where a shader's 32-bit item numbers wrap to 0: use a power of two, or fewer items",
			ErrBadBinding, k.Name, begin, end, p.itemsPerGroup, last-1)
	}
	return nil
}

// streamSpan returns the bytes [lo, hi) of a stream that work items
// [Begin, End) use, and the stream's total size.
func streamSpan(k *sched.Kernel, td *sched.TaskData, out bool, i int) (lo, hi, total uint64) {
	// Inputs and outputs are counted apart: index only the side that
	// stream i belongs to (a kernel may have more outputs than inputs).
	var s *sched.Stream
	var spec sched.StreamSpec
	if out {
		s, spec = &td.Out[i], k.Out[i]
	} else {
		s, spec = &td.In[i], k.In[i]
	}
	total = uint64(s.Count) * uint64(s.Stride)
	if spec.Rate == sched.Whole || k.Kind == sched.Simple {
		return 0, total, total
	}
	f := uint64(1)
	if (!out && k.Kind == sched.Reduce) || (out && k.Kind == sched.Expand) {
		f = uint64(k.Factor)
	}
	hi = min(uint64(td.End)*f*uint64(s.Stride), total)
	lo = min(uint64(td.Begin)*f*uint64(s.Stride), hi)
	return lo, hi, total
}

// arenaNeed bounds the arena bytes a job's streams take (see Arena.window),
// with align bytes of slack per stream (alignment, and the rounding of
// bindStream).
func (e *Executor) arenaNeed(k *sched.Kernel, td *sched.TaskData, align uint64) uint64 {
	var sum, maxLo uint64
	add := func(s *sched.Stream, out bool, i int) {
		lo, hi, _ := streamSpan(k, td, out, i)
		if hi == 0 || (s.Buffer != 0 && len(s.Bytes) == 0) {
			return
		}
		sum += hi - lo + align
		if s.Buffer == 0 {
			maxLo = max(maxLo, lo)
		}
	}
	for i := range k.In {
		add(&td.In[i], false, i)
	}
	for i := range k.Out {
		add(&td.Out[i], true, i)
	}
	return sum + maxLo
}

// growArena replaces sl's arena by one of size bytes (sl is idle).
func (e *Executor) growArena(sl *slot, size uint64) error {
	a, err := e.d.NewArena(size)
	if err != nil {
		return err
	}
	sl.arena.Close()
	sl.arena = a
	return nil
}

// bindStream resolves input or output stream i of a job to a descriptor,
// uploading host bytes into the arena and queueing the copies and
// read-backs it needs.
func (e *Executor) bindStream(sl *slot, k *sched.Kernel, td *sched.TaskData, out bool, i int, p *pipeline, rec *plannedJob) (vk.DescWrite, error) {
	d := e.d
	var s *sched.Stream
	var name, dir string
	var bind uint32
	uniform := false
	if out {
		s, name, bind, dir = &td.Out[i], k.Out[i].Name, uint32(FirstOutBinding+i), "output"
	} else {
		s, name, bind, dir = &td.In[i], k.In[i].Name, uint32(FirstInBinding+i), "input"
		uniform = p.uniform[i]
	}
	// The range spans whole shader elements (see pipeline.elem); the
	// bytes past the stream are scratch, never copied back.
	elem := max(uint64(p.elem[bind]), 1)
	w := vk.DescWrite{Bind: bind, Type: uint32(vk.DescriptorTypeStorageBuffer)}
	maxRange, align, what := d.lim.maxStorageRange, d.lim.storageAlign, "maxStorageBufferRange"
	if uniform {
		w.Type = uint32(vk.DescriptorTypeUniformBuffer)
		maxRange, align, what = d.lim.maxUniformRange, d.lim.uniformAlign, "maxUniformBufferRange"
	}
	lo, hi, total := streamSpan(k, td, out, i)
	if hi == 0 {
		// An absent or empty stream: bind the device's dummy buffer.
		w.Buffer, w.Range = d.dummy.blk.buf, d.dummy.blk.size
		return w, nil
	}
	a := sl.arena
	if s.Buffer == 0 {
		if hi > maxRange {
			return w, fmt.Errorf("%w: %s stream %d (%s): binding %d bytes exceeds the device's %s of %d bytes", ErrBadStream, dir, i, name, hi, what, maxRange)
		}
		hiR := min(alignUp(hi, elem), maxRange)
		base, ok := a.window(lo, hiR)
		if !ok {
			return w, fmt.Errorf("%w: %s stream %d (%s): transient arena overflow", ErrOutOfMemory, dir, i, name)
		}
		w.Buffer, w.Offset, w.Range = a.dev.buf, base, hiR
		r := vk.BufferCopy{Src: base + lo, Dst: base + lo, Size: hi - lo}
		if out {
			if a.Staged() {
				sl.copyOut = append(sl.copyOut, copyOp{a.dev.buf, a.host.buf, r})
			}
			sl.hostOut(s, lo, hi, a.host.mapped[base+lo:base+hi])
			rec.downBytes += hi - lo
		} else {
			sl.hostIn(s, lo, hi, a.host.mapped[base+lo:base+hi], rec)
			rec.upBytes += hi - lo
			if a.Staged() {
				sl.copyIn = append(sl.copyIn, copyOp{a.host.buf, a.dev.buf, r})
			}
		}
		return w, nil
	}
	// A GPU-resident buffer: bind it in place.
	b, err := d.lookupBuffer(s.Buffer)
	if err != nil {
		return w, fmt.Errorf("%s stream %d (%s): %w", dir, i, name, err)
	}
	sl.refs = append(sl.refs, b)
	size := b.blk.size
	switch {
	case s.Offset%align != 0:
		return w, fmt.Errorf("%w: %s stream %d (%s): offset %d in buffer %d is not a multiple of the device's binding alignment %d", ErrBadStream, dir, i, name, s.Offset, s.Buffer, align)
	case s.Offset > size || total > size-s.Offset:
		return w, fmt.Errorf("%w: %s stream %d (%s): bytes [%d, %d) lie outside buffer %d of %d bytes", ErrBadStream, dir, i, name, s.Offset, s.Offset+total, s.Buffer, size)
	case total > maxRange:
		return w, fmt.Errorf("%w: %s stream %d (%s): binding %d bytes exceeds the device's %s of %d bytes", ErrBadStream, dir, i, name, total, what, maxRange)
	}
	rng := min(alignUp(total, elem), b.blk.vkSize-s.Offset, maxRange)
	if out && rng > total && s.Offset+total < size {
		// The rounded range would reach bytes of the buffer past the
		// stream, which may be another stream's: the shader's last
		// element would write them. (Past the buffer's end they are
		// newBuffer's padding, which nobody else owns; an input only
		// reads them.)
		return w, fmt.Errorf("%w: %s stream %d (%s): the shader's elements are %d bytes and the stream's %d bytes end inside buffer %d (at byte %d of %d): its last element would write the buffer's bytes after it; size the stream to whole shader elements, or place it at the buffer's end", ErrBadStream, dir, i, name, elem, total, s.Buffer, s.Offset+total, size)
	}
	w.Buffer, w.Offset, w.Range = b.blk.buf, s.Offset, rng
	sl.access = append(sl.access, access{id: s.Buffer, lo: s.Offset + lo, hi: s.Offset + hi, write: out})
	inPlace := b.blk.mapped != nil && len(s.Bytes) > 0 && s.Offset < uint64(len(b.blk.mapped)) && &s.Bytes[0] == &b.blk.mapped[s.Offset]
	if len(s.Bytes) == 0 || hi == lo || inPlace {
		return w, nil
	}
	// A host mirror: inputs are copied into the buffer before the
	// dispatch, outputs copied back to the host after it.
	base, ok := a.window(0, hi-lo)
	if !ok {
		return w, fmt.Errorf("%w: %s stream %d (%s): transient arena overflow", ErrOutOfMemory, dir, i, name)
	}
	if out {
		sl.copyOut = append(sl.copyOut, copyOp{b.blk.buf, a.host.buf, vk.BufferCopy{Src: s.Offset + lo, Dst: base, Size: hi - lo}})
		sl.hostOut(s, lo, hi, a.host.mapped[base:base+hi-lo])
		rec.downBytes += hi - lo
	} else {
		sl.hostIn(s, lo, hi, a.host.mapped[base:base+hi-lo], rec)
		rec.upBytes += hi - lo
		sl.copyIn = append(sl.copyIn, copyOp{a.host.buf, b.blk.buf, vk.BufferCopy{Src: base, Dst: s.Offset + lo, Size: hi - lo}})
	}
	return w, nil
}

// hostIn moves host stream s's bytes [lo, hi) into m, transient memory the
// command buffer reads: now for a batch; for a segment, at each of its runs
// (hostIO), since its command buffer outlives the bytes it read first.
func (sl *slot) hostIn(s *sched.Stream, lo, hi uint64, m []byte, rec *plannedJob) {
	if sl.seg != nil {
		sl.seg.ups = append(sl.seg.ups, hostIO{s: s, lo: lo, hi: hi, m: m})
		return
	}
	t0 := sched.Nanotime()
	copy(m, s.Bytes[lo:hi])
	rec.upNS += sched.Nanotime() - t0
}

// hostOut arranges for m, which the command buffer writes, to be copied
// back to host stream s's bytes [lo, hi) after it completed: once for a
// batch (readback), at each run for a segment (hostIO).
func (sl *slot) hostOut(s *sched.Stream, lo, hi uint64, m []byte) {
	if sl.seg != nil {
		sl.seg.downs = append(sl.seg.downs, hostIO{s: s, lo: lo, hi: hi, m: m})
		return
	}
	sl.readbacks = append(sl.readbacks, readback{dst: s.Bytes[lo:hi], src: m})
}

// Pipeline stages and access masks used by record.
const (
	stCompute  = vk.PipelineStageComputeShaderBit
	stTransfer = vk.PipelineStageTransferBit
	stHost     = vk.PipelineStageHostBit
	acSRead    = vk.AccessShaderReadBit
	acSWrite   = vk.AccessShaderWriteBit
	acURead    = vk.AccessUniformReadBit
	acTRead    = vk.AccessTransferReadBit
	acTWrite   = vk.AccessTransferWriteBit
	acHRead    = vk.AccessHostReadBit
)

// record records sl's jobs:
//
//	reset queries
//	barrier   (earlier command buffers' writes of persistent buffers)
//	copy-in   (staging -> device, host mirror -> persistent buffer)
//	barrier   transfer -> compute
//	dispatch  per job, timestamps around it; a barrier before a job
//	          whose persistent-buffer bytes overlap an earlier job's write
//	barrier   compute -> transfer; copy-out (device -> staging)
//	barrier   -> host reads
func (e *Executor) record(sl *slot) error {
	s, cb := e.d.shim, sl.cb
	e.records.Add(1)
	var r0 vk.Result
	if sl.seg != nil {
		r0 = s.BeginReuse(cb) // submitted again at each run of the graph
	} else {
		r0 = s.Begin(cb)
	}
	if err := check("vkBeginCommandBuffer", Result(r0)); err != nil {
		return err
	}
	ev := e.d.stallEvent()
	if ev != 0 {
		s.WaitEvent(cb, ev) // FaultStall
	}
	sl.stalled = ev != 0
	n := uint32(len(sl.jobs))
	sl.copyTS = sl.ts && len(sl.copyIn)+len(sl.copyOut) > 0
	if sl.ts {
		nq := 2 * n
		if sl.copyTS {
			nq += 4
		}
		s.ResetQueries(cb, sl.qpool, 0, nq)
	}
	if len(sl.refs) > 0 {
		s.Barrier(cb, stCompute|stTransfer, stCompute|stTransfer, acSWrite|acTWrite, acSRead|acSWrite|acURead|acTRead|acTWrite)
	}
	if sl.copyTS {
		s.Timestamp(cb, e.d.tsEnd, sl.qpool, 2*n)
	}
	if len(sl.copyIn) > 0 {
		sl.upBytes = e.emitCopies(sl, sl.copyIn)
		s.Barrier(cb, stTransfer, stCompute, acTWrite, acSRead|acURead|acSWrite)
	}
	if sl.copyTS {
		s.Timestamp(cb, e.d.tsEnd, sl.qpool, 2*n+1)
	}
	since := 0
	for i := range sl.jobs {
		r := &sl.jobs[i]
		if hazard(sl.access[since:r.ac0], sl.access[r.ac0:r.ac1]) {
			s.Barrier(cb, stCompute, stCompute, acSWrite, acSRead|acSWrite|acURead)
			since = r.ac0
		}
		q := int32(-1)
		if sl.ts {
			q = int32(2 * i)
		}
		sl.params = r.params
		s.Dispatch(cb, r.pipe.pipe, r.pipe.layout, r.set, &sl.params, r.begin, r.end, r.pipe.itemsPerGroup,
			e.d.lim.maxGroupCount, sl.qpool, q, e.d.tsBegin, e.d.tsEnd)
	}
	if sl.copyTS {
		s.Timestamp(cb, e.d.tsEnd, sl.qpool, 2*n+2)
	}
	if len(sl.copyOut) > 0 {
		s.Barrier(cb, stCompute, stTransfer, acSWrite, acTRead)
		sl.downBytes = e.emitCopies(sl, sl.copyOut)
	}
	if sl.copyTS {
		s.Timestamp(cb, e.d.tsEnd, sl.qpool, 2*n+3)
	}
	s.Barrier(cb, stCompute|stTransfer, stHost, acSWrite|acTWrite, acHRead)
	r := Result(s.End(cb))
	if r == ErrorValidationFailedEXT {
		// The layer reported an error on this thread since slotReset: the
		// command buffer is not submitted (see shim.go).
		if n, msg := vk.Captured(); n > 0 {
			return fmt.Errorf("%w: %d error message(s) while recording the command buffer of %d tasks; the first: %s", ErrValidation, n, len(sl.jobs), msg)
		}
	}
	return check("vkEndCommandBuffer", r)
}

// hazard reports whether any access of cur overlaps one of prev with at
// least one of the two writing.
func hazard(prev, cur []access) bool {
	for _, c := range cur {
		for _, p := range prev {
			if p.id == c.id && p.lo < c.hi && c.lo < p.hi && (p.write || c.write) {
				return true
			}
		}
	}
	return false
}

// emitCopies records ops, one vkCmdCopyBuffer per run of equal (src, dst),
// and returns the bytes copied.
func (e *Executor) emitCopies(sl *slot, ops []copyOp) uint64 {
	var total uint64
	for i := 0; i < len(ops); {
		j := i
		sl.regions = sl.regions[:0]
		for ; j < len(ops) && ops[j].src == ops[i].src && ops[j].dst == ops[i].dst; j++ {
			sl.regions = append(sl.regions, ops[j].r)
			total += ops[j].r.Size
		}
		e.d.shim.Copy(sl.cb, ops[i].src, ops[i].dst, sl.regions)
		i = j
	}
	return total
}
