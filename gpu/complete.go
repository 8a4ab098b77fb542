package gpu

import (
	"fmt"
	"math"
	"runtime/debug"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// completeLoop is the completion goroutine: it waits for each submitted
// command buffer's fence in order, blocking in vkWaitForFences.
func (e *Executor) completeLoop() {
	defer e.wg.Done()
	for sl := range e.inflight {
		e.completeSafe(sl)
	}
}

// completeSafe is complete with a panic recovered: the jobs of sl not yet
// handed to Done fail with ErrExecutorPanic (a panic after all of them
// were is kept as an error message of the device, Device.Messages). The
// slot is reused once its fence shows that the GPU is done with it;
// otherwise the device is marked lost, since a command buffer the
// executor can neither wait for nor reuse would leave it a slot short for
// good.
func (e *Executor) completeSafe(sl *slot) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		stack := debug.Stack()
		stage := fmt.Sprintf("completing a command buffer of %d tasks on the completion goroutine", len(sl.jobs))
		if sl.done < len(sl.jobs) {
			e.failRest(sl, stage, r, stack)
		} else {
			e.d.log.add(Message{Severity: SeverityError, Layer: "vkjobs",
				Text: fmt.Sprintf("%v %s, after its tasks completed: %v\n%s", ErrExecutorPanic, stage, r, stack)})
		}
		d := e.d
		if res := Result(d.shim.Wait(sl.fence, uint64(e.opts.FenceTimeout))); res != Success {
			d.markLost(fmt.Errorf("%w: %w %s: %v; its fence then gave %w", ErrDeviceLost, ErrExecutorPanic, stage, r, check("vkWaitForFences", res)))
			return
		}
		releaseRefs(sl)
		e.clearSlot(sl)
		e.free <- sl
	}()
	e.complete(sl)
}

func (e *Executor) complete(sl *slot) {
	d := e.d
	if err := d.Lost(); err != nil {
		// Fail fast; the command buffer may still run, so the slot is
		// not reused (Close drains the queue before freeing it).
		e.finishSlot(sl, err, 0)
		return
	}
	timeout := uint64(e.opts.FenceTimeout)
	r := Result(d.shim.Wait(sl.fence, timeout))
	if r == Timeout {
		err := fmt.Errorf("%w: command buffer of %d tasks not complete after %v (%w)", ErrTimeout, len(sl.jobs), e.opts.FenceTimeout, check("vkWaitForFences", r))
		e.finishSlot(sl, err, 0)
		for k := 0; k < e.opts.HungAfter && r == Timeout; k++ {
			r = Result(d.shim.Wait(sl.fence, timeout))
		}
		switch r {
		case Success:
			releaseRefs(sl) // late, but complete: reuse it
			e.free <- sl
		case Timeout:
			d.markLost(fmt.Errorf("%w: queue hung: a fence stayed unsignalled for %v", ErrDeviceLost, time.Duration(e.opts.HungAfter+1)*e.opts.FenceTimeout))
		default:
			d.markLost(check("vkWaitForFences", r))
		}
		return
	}
	if r != Success {
		err := check("vkWaitForFences", r)
		d.markLost(err)
		e.finishSlot(sl, d.Lost(), 0)
		return
	}
	e.finishSlot(sl, nil, sched.Nanotime())
	releaseRefs(sl)
	e.free <- sl
}

// finishSlot completes (err == nil) or fails every job of sl and reports
// them to the observer and the statistics. Outputs are copied back and
// the jobs completed first; timestamps are read and reported after that,
// off the critical path (vkGetQueryPoolResults costs microseconds). The
// buffer references stay until releaseRefs: the GPU may still use them
// after a failure.
func (e *Executor) finishSlot(sl *slot, err error, doneAt int64) {
	if len(sl.jobs) == 0 {
		e.clearSlot(sl)
		return
	}
	if h := e.testHook; h != nil {
		for i := range sl.jobs {
			h(hookComplete, sl.jobs[i].kid)
		}
	}
	if err == nil {
		for i := range sl.jobs {
			r := &sl.jobs[i]
			if r.rb1 > r.rb0 {
				t0 := sched.Nanotime()
				for _, rb := range sl.readbacks[r.rb0:r.rb1] {
					copy(rb.dst, rb.src)
				}
				r.rbNS = sched.Nanotime() - t0
			}
		}
	}
	e.account(sl, err)
	// Job.ID and Job.Scheduler stay valid after Done; Job.Data does not.
	for i := range sl.jobs {
		sl.done = i + 1 // before Done: a job is never handed to it twice
		sl.jobs[i].j.Done(err)
	}
	if err == nil {
		var copyUp, copyDown int64
		e.times(sl, max(doneAt, sl.submitAt), &copyUp, &copyDown)
		e.accountTimes(sl, copyUp, copyDown)
	} else {
		now := sched.Nanotime()
		for i := range sl.jobs {
			sl.jobs[i].start, sl.jobs[i].stop = sl.submitAt, now
		}
	}
	for i := range sl.jobs {
		r := &sl.jobs[i]
		j := r.j
		if obs := j.Scheduler().Observer(); obs != nil {
			sl.ev = sched.RunEvent{Thread: -1, Where: sched.GPU, Task: j.ID(), Kernel: r.kid,
				Begin: r.begin, End: r.end, Start: r.start, Stop: r.stop, Err: err}
			e.observe(obs, &sl.ev)
		}
	}
	e.clearSlot(sl)
}

// times sets each job's start and stop (sched.Nanotime scale) from the
// timestamps, or from submission and completion times without them, and the
// GPU time of the copy phases.
func (e *Executor) times(sl *slot, doneAt int64, copyUp, copyDown *int64) {
	n := len(sl.jobs)
	nq := 2 * n
	if sl.copyTS {
		nq += 4
	}
	if !sl.ts || Result(e.d.shim.Queries(sl.qpool, 0, uint32(nq), sl.queries)) != Success {
		// No timestamps: spread the batch's wall time evenly.
		per := (doneAt - sl.submitAt) / int64(n)
		for i := range sl.jobs {
			sl.jobs[i].start = sl.submitAt + int64(i)*per
			sl.jobs[i].stop = sl.jobs[i].start + per
		}
		return
	}
	conv := e.d.batchClock(sl.queries[0], sl.submitAt).at
	first, last := conv(sl.queries[0]), conv(sl.queries[2*n-1])
	// The batch ran between submission and completion: shift the
	// calibrated clock if it drifted outside.
	var shift int64
	if first < sl.submitAt {
		shift = sl.submitAt - first
	} else if last > doneAt {
		shift = doneAt - last
	}
	for i := range sl.jobs {
		sl.jobs[i].start = conv(sl.queries[2*i]) + shift
		sl.jobs[i].stop = max(conv(sl.queries[2*i+1])+shift, sl.jobs[i].start)
	}
	if sl.copyTS {
		*copyUp = max(conv(sl.queries[2*n+1])-conv(sl.queries[2*n]), 0)
		*copyDown = max(conv(sl.queries[2*n+3])-conv(sl.queries[2*n+2]), 0)
	}
}

// batchClock returns the conversion of a batch's raw timestamps to
// sched.Nanotime. A counter of fewer than 64 valid bits wraps (36 bits at
// a 52 ns period is about an hour), so the batch's first stamp t0 is
// placed by the calibration at the wrap period nearest to the batch's
// submission, and every other stamp by its distance from t0 modulo the
// counter's width: times stay right across a wrap, however long the run.
func (d *Device) batchClock(t0 uint64, submitAt int64) stampConv {
	return stampClock(t0, submitAt, d.lim.timestampBits, d.lim.timestampPeriod, d.clockOff)
}

// stampConv converts a batch's raw timestamps (a value, not a closure, so
// that reading a batch's times allocates nothing).
type stampConv struct {
	t0, mask uint64
	base     int64
	period   float64
}

func (c stampConv) ns(ticks uint64) int64 {
	if c.period == 1 {
		return int64(ticks)
	}
	return int64(float64(ticks) * c.period)
}

// at converts the raw timestamp t to sched.Nanotime.
func (c stampConv) at(t uint64) int64 { return c.base + c.ns((t-c.t0)&c.mask) }

func stampClock(t0 uint64, submitAt int64, bits uint32, period float64, clockOff int64) stampConv {
	c := stampConv{t0: t0, mask: ^uint64(0), period: period}
	if bits > 0 && bits < 64 {
		c.mask = 1<<bits - 1
	}
	c.base = c.ns(t0&c.mask) + clockOff
	if c.mask != ^uint64(0) {
		if wrap := float64(c.mask+1) * period; wrap < 1<<62 {
			c.base += int64(math.Round(float64(submitAt-c.base)/wrap) * wrap)
		}
	}
	return c
}

// gpuToHost converts a raw timestamp to sched.Nanotime.
func (d *Device) gpuToHost(t uint64) int64 {
	if b := d.lim.timestampBits; b < 64 {
		t &= 1<<b - 1
	}
	if d.lim.timestampPeriod == 1 {
		return int64(t) + d.clockOff
	}
	return int64(float64(t)*d.lim.timestampPeriod) + d.clockOff
}

// calibrate estimates the offset between the GPU clock and sched.Nanotime
// by writing one timestamp between two host readings, a few times, and
// keeping the tightest bracket.
func (e *Executor) calibrate(sl *slot) int64 {
	d, s := e.d, e.d.shim
	best, off := int64(-1), int64(0)
	for range 5 {
		if Result(s.SlotReset(sl.fence, sl.pool, 0)) != Success || Result(s.Begin(sl.cb)) != Success {
			break
		}
		s.ResetQueries(sl.cb, sl.qpool, 0, 1)
		s.Timestamp(sl.cb, e.d.tsEnd, sl.qpool, 0)
		if Result(s.End(sl.cb)) != Success {
			break
		}
		h0 := sched.Nanotime()
		if d.submit(sl.cb, sl.fence) != nil || Result(s.Wait(sl.fence, uint64(e.opts.FenceTimeout))) != Success {
			break
		}
		h1 := sched.Nanotime()
		if Result(s.Queries(sl.qpool, 0, 1, sl.queries)) != Success {
			break
		}
		d.clockOff = 0
		g := d.gpuToHost(sl.queries[0])
		if best < 0 || h1-h0 < best {
			best, off = h1-h0, (h0+h1)/2-g
		}
	}
	return off
}

// releaseRefs drops sl's references to persistent buffers, once the GPU
// is done with them.
func releaseRefs(sl *slot) {
	for _, b := range sl.refs {
		b.release()
	}
	clear(sl.refs)
	sl.refs = sl.refs[:0]
}

// clearSlot drops sl's per-job state (not the buffer references).
func (e *Executor) clearSlot(sl *slot) {
	clear(sl.jobs) // drop Job references
	sl.jobs = sl.jobs[:0]
	clear(sl.readbacks) // drop references to host memory
	sl.readbacks = sl.readbacks[:0]
	sl.copyIn, sl.copyOut, sl.access = sl.copyIn[:0], sl.copyOut[:0], sl.access[:0]
	sl.upBytes, sl.downBytes = 0, 0
	sl.done = 0
}

// observe reports ev to the scheduler's Observer. A panic in the Observer
// (the user's code, called here on the executor's goroutines) is kept as
// an error message of the device (Device.Messages) instead of ending the
// process or the executor; the task's outcome stands.
func (e *Executor) observe(obs sched.Observer, ev *sched.RunEvent) {
	defer func() {
		if r := recover(); r != nil {
			e.d.log.add(Message{Severity: SeverityError, Layer: "vkjobs",
				Text: fmt.Sprintf("sched.Observer panicked on the GPU run of task %v (kernel %d): %v", ev.Task, ev.Kernel, r)})
		}
	}()
	obs.TaskRan(ev)
}
