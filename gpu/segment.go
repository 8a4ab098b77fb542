package gpu

// Graph segments: the GPU nodes of a replayed frame graph, recorded once.
//
// A sched.Graph groups its GPU nodes that are readied together into
// segments and hands each to NewSegment once, when it seals (sched/graph.go,
// step 6). A segment owns a slot of its own (command pool and buffer,
// fence, descriptor pool with a set per node, an arena as its staging
// memory, the references to the buffers it binds): the same resources a
// batch uses, kept across runs. Each run of the graph enqueues one job for
// the whole segment; the executor then does only what must happen per run:
//
//	check    each node's Params against the recorded push constants, and
//	         each bound buffer against Buffer.Close (an atomic load each)
//	upload   copy each host input stream into its staging window (the
//	         graph's own TaskData is read at each run, so host bytes that
//	         SetData re-pointed to a slice of the same size need nothing
//	         more), mapped once for the segment's life
//	submit   reset the fence, vkQueueSubmit the command buffer as recorded
//	complete wait for the fence (segmentLoop), copy host outputs back from
//	         staging, count, call the job's Done
//
// The command buffer is recorded without ONE_TIME_SUBMIT, so it is submitted
// again as it is. It is recorded again, keeping the descriptor sets and the
// staging, only when a node's Params differ from those recorded (they are
// push constants, part of the recording); it is planned again (descriptor
// sets, staging layout, buffer references) and recorded when a binding
// changed: SetData gave a node another buffer, offset, stream size, element
// count or host mirror (Changed compares the node's binding key with the
// recorded one, so a SetData that changes no binding costs nothing), a
// bound buffer was closed, or a run failed. A node that the plan cannot
// bind or compile (a closed buffer, a stream outside its buffer, a bad
// pipeline), or that its kernel refuses (bind.Binding.Admit, asked again
// before each run), is left out of the recording and fails alone
// (sched.Job.FailNode, with an error naming it): the other members run,
// and their successors with them, as on the dynamic path, where each node
// is a job; such a segment is planned again at each run. Rejected:
// parameters in a buffer that the run updates, which would spare the
// re-recording when Params change every frame, but changes the shader
// contract of every kernel (a 40-byte push-constant block, checked by
// bind.Binding.Check); and comparing every node's streams at each run
// instead of being told by SetData.
//
// One run of a segment at a time: busy is set from Enqueue until the
// completion, and a job of a busy segment fails (a graph runs once at a
// time, and its run ends only after the segment's Done; a segment whose
// fence timed out stays busy until the fence signals, so that a command
// buffer still pending is never resubmitted). Completions come from
// segmentLoop, a goroutine of the executor started with its first segment
// that waits for the submitted segments in order, as completeLoop does
// for batches: a channel as e.inflight would bound the segments in flight.
// Segments take no timestamps: their nodes' GPU times are the wall time
// from submission to completion, shared evenly.
//
// A segment ends with its Close (the graph sealed again, or Released), the
// executor's Close (which destroys those still open; later runs fail with
// ErrClosed) or the device's loss (runs then fail at Enqueue, as any job).

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/internal/xmath"
	"github.com/vkjobs/vkjobs/sched"
)

// segment is a graph segment kept recorded (sched.Segment). Its fields
// other than those under e.mu belong to the run that holds it (busy), or,
// between runs, to the graph's goroutine (Changed).
type segment struct {
	e     *Executor
	sl    *slot // its own; sl.seg == this
	nodes []segNode
	ups   []hostIO // host inputs, copied in at each run
	downs []hostIO // host outputs, copied back after each run

	planned  bool // sl holds the descriptor sets and staging of the nodes' keys
	recorded bool // sl.cb holds a recording of sl.jobs as they are
	stale    bool // a binding changed, or a run failed: plan again
	jb       job  // the run in flight
	upBytes  uint64
	downB    uint64
	upNS     int64 // this run's host copies into staging
	rbNS     int64 // and out of it

	// Under e.mu.
	busy   bool // a run holds it
	closed bool // Close was called
	gone   bool // its Vulkan objects are destroyed
}

// segNode is one node of a segment.
type segNode struct {
	node  sched.GraphNode
	kid   sched.KernelID
	k     *sched.Kernel
	td    *sched.TaskData // the graph's copy, read at each run
	key   nodeKey         // what the recording binds
	job   int             // its index in sl.jobs; -1: no work items, or failed
	first bool            // the first node of its kernel (KernelStats.Submits)
	fail  error           // why the plan left it out (it fails alone: sched.Job.FailNode)
}

// nodeKey is what a node's recording depends on besides Params: its item
// range and, per stream, where it is bound. A host stream's bytes are not
// part of it (they are read at each run); a host mirror's are (whether
// they are the buffer's own mapping decides whether copies are recorded).
type nodeKey struct {
	begin, end uint32
	s          [2 * sched.MaxStreams]streamKey
}

type streamKey struct {
	buf           sched.BufferID
	off           uint64
	stride, count uint32
	host          bool
	mirror        uintptr // a host mirror's first byte
}

// hostIO is a host stream's bytes [lo, hi) and their staging window m.
type hostIO struct {
	s      *sched.Stream
	lo, hi uint64
	m      []byte
}

func keyOf(k *sched.Kernel, td *sched.TaskData) nodeKey {
	key := nodeKey{begin: td.Begin, end: td.End}
	for i := range k.In {
		key.s[i] = streamKeyOf(&td.In[i])
	}
	for i := range k.Out {
		key.s[sched.MaxStreams+i] = streamKeyOf(&td.Out[i])
	}
	return key
}

func streamKeyOf(s *sched.Stream) streamKey {
	k := streamKey{buf: s.Buffer, off: s.Offset, stride: s.Stride, count: s.Count, host: len(s.Bytes) > 0}
	if s.Buffer != 0 && len(s.Bytes) > 0 {
		k.mirror = uintptr(unsafe.Pointer(&s.Bytes[0]))
	}
	return k
}

// NewSegment prepares a graph segment (sched.SegmentExecutor): a command
// buffer, fence and descriptor pool of its own; the recording and staging
// come with its first run. It fails for a node whose kernel has no GPU
// binding (the graph then leaves the nodes to the dynamic path, where the
// task fails), and after Close or a device loss.
func (e *Executor) NewSegment(nodes []sched.SegmentNode) (sched.Segment, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("gpu: NewSegment: no nodes")
	}
	for _, n := range nodes {
		if n.K == nil || n.Data == nil {
			return nil, fmt.Errorf("gpu: NewSegment: graph node %d: no kernel or data", n.Node)
		}
		if bind.Of(n.K) == nil {
			return nil, fmt.Errorf("gpu: NewSegment: graph node %d (kernel %d %q): %w: the kernel has no GPU binding", n.Node, n.Kernel, n.K.Name, ErrBadBinding)
		}
	}
	if err := e.d.usable(); err != nil {
		return nil, err
	}
	sl, err := e.makeSlot(len(nodes), false, 0)
	if err != nil {
		return nil, err
	}
	sg := &segment{e: e, sl: sl, nodes: make([]segNode, len(nodes))}
	sl.seg = sg
	for i, n := range nodes {
		sg.nodes[i] = segNode{node: n.Node, kid: n.Kernel, k: n.K, td: n.Data, job: -1}
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.destroySlot(sl)
		return nil, fmt.Errorf("%w: NewSegment after the executor's Close", ErrClosed)
	}
	if e.segs == nil {
		e.segs = make(map[*segment]struct{})
	}
	e.segs[sg] = struct{}{}
	if !e.segLoop {
		e.segLoop = true
		e.wg.Add(1)
		go e.segmentLoop()
	}
	e.mu.Unlock()
	return sg, nil
}

// Changed marks the segment for planning again when node i's new data
// binds something else than its recording does.
func (sg *segment) Changed(i int) {
	if i < 0 || i >= len(sg.nodes) {
		return
	}
	n := &sg.nodes[i]
	if !sg.planned || keyOf(n.k, n.td) != n.key {
		sg.stale = true
	}
}

// Close destroys the segment now, or when its run in flight (a timed-out
// one) completes.
func (sg *segment) Close() {
	e := sg.e
	e.mu.Lock()
	if sg.closed {
		e.mu.Unlock()
		return
	}
	sg.closed = true
	now := !sg.busy && !sg.gone
	if now {
		sg.gone = true
		delete(e.segs, sg)
	}
	e.mu.Unlock()
	if now {
		e.destroySegment(sg)
	}
}

func (e *Executor) destroySegment(sg *segment) {
	releaseRefs(sg.sl)
	e.clearSlot(sg.sl)
	e.destroySlot(sg.sl)
	clear(sg.ups)
	clear(sg.downs)
}

// destroySegments destroys the segments left at the executor's Close,
// after its goroutines returned.
func (e *Executor) destroySegments() {
	e.mu.Lock()
	var left []*segment
	for sg := range e.segs {
		sg.gone = true
		left = append(left, sg)
	}
	e.segs = nil
	e.mu.Unlock()
	for _, sg := range left {
		e.destroySegment(sg)
	}
}

func (e *Executor) wakeSegments() {
	select {
	case e.segWake <- struct{}{}:
	default:
	}
}

// nodeErr names node n of a segment in err.
func (n *segNode) err(err error) error {
	return fmt.Errorf("gpu: graph node %d (kernel %d %q): %w", n.node, n.kid, n.k.Name, err)
}

// runSegment runs one job standing for every node of segment h (Enqueue,
// on the caller's goroutine): it prepares the segment when needed, copies
// the host inputs in and submits the command buffer; segmentLoop
// completes it.
func (e *Executor) runSegment(h sched.Segment, jb job) {
	sg, _ := h.(*segment)
	e.mu.Lock()
	var refuse error
	switch {
	case sg == nil || sg.e != e:
		refuse = fmt.Errorf("gpu: a graph segment of another executor (%T)", h)
	case e.closed || sg.closed || sg.gone:
		refuse = fmt.Errorf("%w: graph segment run after the executor's or the segment's Close", ErrClosed)
	case sg.busy:
		refuse = fmt.Errorf("%w: graph segment of node %d: its previous run is still on the GPU", ErrTimeout, sg.nodes[0].node)
	}
	if refuse != nil {
		e.mu.Unlock()
		e.finishEarly(&jb, refuse)
		return
	}
	sg.busy = true
	e.segSub++
	e.mu.Unlock()
	err := e.submitSegmentSafe(sg, &jb)
	e.mu.Lock()
	e.segSub--
	if err == nil {
		e.segQ = append(e.segQ, sg)
	} else {
		sg.busy = false
	}
	closing := e.closed
	e.mu.Unlock()
	if err == nil || closing {
		e.wakeSegments()
	}
	if err != nil {
		e.failSegment(sg, &jb, err)
	}
}

// submitSegmentSafe is submitSegment with a panic turned into the run's
// error (ErrExecutorPanic); the segment is planned again at its next run.
func (e *Executor) submitSegmentSafe(sg *segment, jb *job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			sg.stale = true
			kid, k := jb.j.Kernel()
			err = panicError("running a graph segment in Enqueue, on the caller's goroutine", kid, k, r, debug.Stack())
		}
	}()
	return e.submitSegment(sg, jb)
}

// submitSegment plans and records sg when what it binds changed, records
// it again when only Params did, copies the host inputs into staging and
// submits it.
func (e *Executor) submitSegment(sg *segment, jb *job) error {
	d, sl := e.d, sg.sl
	if sg.planned && !sg.stale {
		for _, b := range sl.refs {
			if b.closed.Load() {
				sg.stale = true // planning again names the node
				break
			}
		}
	}
	// A node its kernel refuses now (bind.Binding.Admit: its Data or
	// Params changed since the plan) is left out by planning again, which
	// fails it alone.
	if sg.planned && !sg.stale {
		for i := range sg.nodes {
			if n := &sg.nodes[i]; n.job >= 0 && e.admit(n.k, n.td) != nil {
				sg.stale = true
				break
			}
		}
	}
	// Params changed (the push constants are recorded), or the recording
	// waits for FaultStall's event, which is for one command buffer.
	again := sl.stalled
	if sg.planned && !sg.stale {
		for i := range sl.jobs {
			r := &sl.jobs[i]
			if p := sg.nodes[r.node].td.Params; r.params != [8]uint32(p) {
				r.params = p
				again = true
			}
		}
	}
	switch {
	case !sg.planned || sg.stale:
		if err := e.planSegment(sg); err != nil {
			return err
		}
	case again || !sg.recorded:
		if err := e.recordSegment(sg, false); err != nil {
			return err
		}
	default:
		if err := check("vkResetFences", Result(d.shim.SlotReset(sl.fence, 0, 0))); err != nil {
			sg.stale = true
			return err
		}
		e.replays.Add(1)
	}
	t0 := sched.Nanotime()
	for i := range sg.ups {
		u := &sg.ups[i]
		if uint64(len(u.s.Bytes)) < u.hi {
			sg.stale = true
			return fmt.Errorf("%w: a host stream of the segment holds %d bytes, its recording reads %d", ErrBadStream, len(u.s.Bytes), u.hi)
		}
		copy(u.m, u.s.Bytes[u.lo:u.hi])
	}
	sg.jb = *jb
	sl.submitAt = sched.Nanotime()
	sg.upNS, sg.rbNS = sl.submitAt-t0, 0
	if err := d.submitQueue(sl.cb, sl.fence, false); err != nil {
		sg.jb = job{}
		sg.stale = true
		return err
	}
	e.submits.Add(1)
	return nil
}

// planSegment lays out sg's staging, descriptor sets, copies and buffer
// references for the nodes' current data, and records it.
func (e *Executor) planSegment(sg *segment) error {
	d, sl := e.d, sg.sl
	sg.planned, sg.recorded, sg.stale = false, false, true
	releaseRefs(sl)
	e.clearSlot(sl)
	clear(sg.ups)
	clear(sg.downs)
	sg.ups, sg.downs = sg.ups[:0], sg.downs[:0]
	if sl.arena == nil {
		a, err := d.NewArena(4096)
		if err != nil {
			return fmt.Errorf("gpu: staging memory of a graph segment: %w", err)
		}
		sl.arena = a
	}
	var need uint64
	for i := range sg.nodes {
		n := &sg.nodes[i]
		if n.td.End > n.td.Begin {
			pad := uint64(0)
			if p, err := d.pipelineFor(n.k); err == nil { // an error fails the node below
				pad = p.maxElem
			}
			need += e.arenaNeed(n.k, n.td, sl.arena.align+pad)
		}
	}
	if need > sl.arena.Cap() {
		if err := e.growArena(sl, xmath.Pow2(need)); err != nil {
			return fmt.Errorf("gpu: staging memory of a graph segment, %d bytes: %w", need, err)
		}
	}
	sl.arena.Reset()
	runtime.LockOSThread() // validation messages count against this recording (see runBatch)
	defer runtime.UnlockOSThread()
	if err := check("vkResetFences/vkResetCommandPool/vkResetDescriptorPool", Result(d.shim.SlotReset(sl.fence, sl.pool, sl.dpool))); err != nil {
		return err
	}
	seen := make(map[sched.KernelID]bool, 4)
	sg.upBytes, sg.downB = 0, 0
	failed := false
	for i := range sg.nodes {
		n := &sg.nodes[i]
		n.key, n.job, n.first, n.fail = keyOf(n.k, n.td), -1, !seen[n.kid], nil
		seen[n.kid] = true
		if n.td.End <= n.td.Begin {
			continue // nothing to dispatch
		}
		// A node that cannot run is left out of the recording and fails
		// alone: the other members run, and their successors too.
		m, ups, downs := sl.mark(), len(sg.ups), len(sg.downs)
		if err := e.planNode(sg, i); err != nil {
			sl.rollback(m)
			clear(sg.ups[ups:])
			clear(sg.downs[downs:])
			sg.ups, sg.downs = sg.ups[:ups], sg.downs[:downs]
			n.fail, failed = n.err(err), true
		}
	}
	sg.planned = true
	if err := e.recordSegment(sg, true); err != nil {
		return err
	}
	// Plan again at the next run: the failure is reported afresh, and a
	// run without it (a buffer re-pointed, say) sees the node come back.
	sg.stale = failed
	return nil
}

// planNode binds node i of sg's streams, allocates its descriptor set and
// appends its dispatch to sg's jobs.
func (e *Executor) planNode(sg *segment, i int) error {
	d, sl, n := e.d, sg.sl, &sg.nodes[i]
	p, err := d.pipelineFor(n.k)
	if err == nil {
		err = itemRange(n.k, p, n.td.Begin, n.td.End)
	}
	if err == nil {
		err = e.admit(n.k, n.td)
	}
	if err != nil {
		return err
	}
	rec := plannedJob{kid: n.kid, pipe: p, params: n.td.Params, begin: n.td.Begin, end: n.td.End, ac0: len(sl.access), node: i}
	nw := 0
	for j := range n.k.In {
		if sl.writes[nw], err = e.bindStream(sl, n.k, n.td, false, j, p, &rec); err != nil {
			return err
		}
		nw++
	}
	for j := range n.k.Out {
		if sl.writes[nw], err = e.bindStream(sl, n.k, n.td, true, j, p, &rec); err != nil {
			return err
		}
		nw++
	}
	if err := check("vkAllocateDescriptorSets", Result(d.shim.Set(sl.dpool, p.setLayout, sl.writes[:nw], &sl.setOut))); err != nil {
		return err
	}
	rec.set, rec.ac1 = sl.setOut, len(sl.access)
	sg.upBytes += rec.upBytes
	sg.downB += rec.downBytes
	n.job = len(sl.jobs)
	sl.jobs = append(sl.jobs, rec)
	return nil
}

// recordSegment records sg's command buffer (reset: its pool was reset
// with the fence already, by planSegment).
func (e *Executor) recordSegment(sg *segment, reset bool) error {
	sl := sg.sl
	if !reset {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := check("vkResetFences/vkResetCommandPool", Result(e.d.shim.SlotReset(sl.fence, sl.pool, 0))); err != nil {
			sg.stale = true
			return err
		}
	}
	sg.recorded = false
	if err := e.record(sl); err != nil {
		sg.stale = true
		return err
	}
	sg.recorded, sg.stale = true, false
	return nil
}

// segmentLoop is the goroutine that completes segments, in the order they
// were submitted; it returns once the executor is closed and no segment
// is in flight or being submitted.
func (e *Executor) segmentLoop() {
	defer e.wg.Done()
	e.mu.Lock()
	for {
		for len(e.segQ) == 0 && (!e.closed || e.segSub > 0) {
			e.mu.Unlock()
			<-e.segWake
			e.mu.Lock()
		}
		if len(e.segQ) == 0 {
			e.mu.Unlock()
			return
		}
		sg := e.segQ[0]
		copy(e.segQ, e.segQ[1:])
		e.segQ[len(e.segQ)-1] = nil
		e.segQ = e.segQ[:len(e.segQ)-1]
		e.mu.Unlock()
		e.completeSegmentSafe(sg)
		e.mu.Lock()
	}
}

// completeSegmentSafe is completeSegment with a panic recovered: the run
// fails with ErrExecutorPanic unless it was finished, and the segment is
// reused once its fence shows that the GPU is done with it.
func (e *Executor) completeSegmentSafe(sg *segment) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		sg.stale = true
		jb := sg.jb
		sg.jb = job{}
		if !jb.done && jb.j != (sched.Job{}) {
			kid, k := jb.j.Kernel()
			defer e.failSegment(sg, &jb, panicError("completing a graph segment on its completion goroutine", kid, k, r, debug.Stack()))
		}
		if res := Result(e.d.shim.Wait(sg.sl.fence, uint64(e.opts.FenceTimeout))); res != Success {
			e.d.markLost(fmt.Errorf("%w: %w completing a graph segment: %v; its fence then gave %w", ErrDeviceLost, ErrExecutorPanic, r, check("vkWaitForFences", res)))
			return
		}
		e.segmentIdle(sg)
	}()
	e.completeSegment(sg)
}

// completeSegment waits for sg's run and finishes its job.
func (e *Executor) completeSegment(sg *segment) {
	d, sl := e.d, sg.sl
	if err := d.Lost(); err != nil {
		// The command buffer may still run: the segment stays busy
		// (Close drains the queue before destroying it).
		jb := sg.jb
		sg.jb, sg.stale = job{}, true
		e.failSegment(sg, &jb, err)
		return
	}
	timeout := uint64(e.opts.FenceTimeout)
	r := Result(d.shim.Wait(sl.fence, timeout))
	if r != Success {
		jb := sg.jb
		sg.jb, sg.stale = job{}, true
		if r != Timeout {
			err := check("vkWaitForFences", r)
			d.markLost(err)
			e.failSegment(sg, &jb, d.Lost())
			return
		}
		e.failSegment(sg, &jb, fmt.Errorf("%w: graph segment of %d nodes not complete after %v (%w)", ErrTimeout, len(sg.nodes), e.opts.FenceTimeout, check("vkWaitForFences", r)))
		for k := 0; k < e.opts.HungAfter && r == Timeout; k++ {
			r = Result(d.shim.Wait(sl.fence, timeout))
		}
		switch r {
		case Success:
			e.segmentIdle(sg) // late, but complete: reuse it
		case Timeout:
			d.markLost(fmt.Errorf("%w: queue hung: a fence stayed unsignalled for %v", ErrDeviceLost, time.Duration(e.opts.HungAfter+1)*e.opts.FenceTimeout))
		default:
			d.markLost(check("vkWaitForFences", r))
		}
		return
	}
	doneAt := sched.Nanotime()
	for i := range sg.downs {
		o := &sg.downs[i]
		copy(o.s.Bytes[o.lo:o.hi], o.m)
	}
	sg.rbNS = sched.Nanotime() - doneAt
	jb := sg.jb
	sg.jb = job{}
	e.accountSegment(sg, &jb, nil, doneAt)
	for i := range sg.nodes {
		if f := sg.nodes[i].fail; f != nil {
			jb.j.FailNode(i, f) // left out by the plan: it fails alone
		}
	}
	e.segmentIdle(sg)
	jb.done = true
	jb.j.Done(nil) // the last use of sg: the graph may run it again at once
}

// segmentIdle ends sg's run (busy), destroying it if it was closed
// meanwhile.
func (e *Executor) segmentIdle(sg *segment) {
	e.mu.Lock()
	sg.busy = false
	now := sg.closed && !sg.gone
	if now {
		sg.gone = true
		delete(e.segs, sg)
	}
	e.mu.Unlock()
	if now {
		e.destroySegment(sg)
	}
}

// failSegment fails a run of sg: each node counts as failed, and the job's
// Done gets err.
func (e *Executor) failSegment(sg *segment, jb *job, err error) {
	if jb.done {
		return
	}
	e.accountSegment(sg, jb, err, sched.Nanotime())
	jb.done = true
	jb.j.Done(err)
}

// accountSegment counts a run of sg's nodes in the statistics, as account
// does a batch's jobs, and reports them to the Observer (with the
// segment's task ID): the run's wall time from submission to completion
// is shared evenly among the nodes that dispatch, its host copies by
// bytes.
func (e *Executor) accountSegment(sg *segment, jb *job, err error, doneAt int64) {
	sl := sg.sl
	var per int64
	if len(sl.jobs) > 0 {
		per = max(doneAt-sl.submitAt, 0) / int64(len(sl.jobs))
	}
	e.smu.Lock()
	e.st.MaxBatch = max(e.st.MaxBatch, len(sl.jobs))
	if err == nil {
		e.st.BytesUp += sg.upBytes
		e.st.BytesDown += sg.downB
	}
	for i := range sg.nodes {
		n := &sg.nodes[i]
		ks := e.kernelLocked(n.kid)
		if n.first {
			ks.Submits++
		}
		if err != nil || n.fail != nil {
			e.st.Failed++
			ks.Failed++
			continue
		}
		items := uint64(n.key.end - n.key.begin)
		e.st.Tasks++
		e.st.Items += items
		ks.Tasks++
		ks.Items += items
		ks.Latency += time.Duration(doneAt - jb.t)
		if n.job >= 0 {
			r := &sl.jobs[n.job]
			up := time.Duration(share(sg.upNS, r.upBytes, sg.upBytes))
			down := time.Duration(share(sg.rbNS, r.downBytes, sg.downB))
			e.st.Dispatch += time.Duration(per)
			e.st.Upload += up
			e.st.Readback += down
			ks.Dispatch += time.Duration(per)
			ks.Upload += up
			ks.Readback += down
		}
	}
	e.smu.Unlock()
	if jb.j == (sched.Job{}) {
		return
	}
	obs := jb.j.Scheduler().Observer()
	if obs == nil {
		return
	}
	for i := range sg.nodes {
		n := &sg.nodes[i]
		sl.ev = sched.RunEvent{Thread: -1, Where: sched.GPU, Task: jb.j.ID(), Kernel: n.kid,
			Begin: n.key.begin, End: n.key.end, Start: sl.submitAt, Stop: doneAt, Err: err}
		if err == nil {
			sl.ev.Err = n.fail
		}
		if n.job >= 0 && err == nil {
			sl.ev.Start = sl.submitAt + int64(n.job)*per
			sl.ev.Stop = sl.ev.Start + per
		}
		e.observe(obs, &sl.ev)
	}
}
