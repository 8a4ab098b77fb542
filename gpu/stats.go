package gpu

import (
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// ExecStats are an executor's totals since it was created.
type ExecStats struct {
	Submits  uint64 // command buffers submitted (vkQueueSubmit calls)
	Tasks    uint64 // tasks completed without error
	Failed   uint64 // tasks failed
	Items    uint64 // work items dispatched by completed tasks
	MaxBatch int    // most tasks in one command buffer
	// Inline counts the tasks that Enqueue (or the end of a burst of one)
	// submitted itself on the caller's thread, with no hand-off to the
	// submitter goroutine (see Executor.Enqueue); counted at submission,
	// as Submits is.
	Inline uint64
	// Records counts the command buffers recorded (vkBeginCommandBuffer
	// calls): one per batch, and one per recording of a graph segment
	// (its first run, and a run after its Params or bindings changed).
	Records uint64
	// Replays counts the runs of graph segments submitted as recorded
	// before, with no recording (see Executor.NewSegment); each is also
	// one of Submits.
	Replays uint64

	// Dispatch is the GPU time of the dispatches (from timestamps; from
	// submission to completion, shared evenly, without them).
	Dispatch time.Duration
	// Upload is the host time spent copying stream bytes into transient
	// memory plus, on devices that need staging, the GPU time of the copy
	// commands into device memory. Readback is the reverse.
	Upload   time.Duration
	Readback time.Duration
	// BytesUp and BytesDown count stream bytes copied host to device and
	// device to host. GPU-resident streams without a host mirror add
	// nothing.
	BytesUp   uint64
	BytesDown uint64
}

// KernelStats are one kernel's totals on an executor: the measured costs a
// placement policy can learn from (latency, per-item dispatch time,
// transfer time).
type KernelStats struct {
	Tasks    uint64 // completed without error
	Failed   uint64
	Items    uint64 // work items of completed tasks
	Submits  uint64 // command buffers that carried at least one of its tasks
	Dispatch time.Duration
	Upload   time.Duration
	Readback time.Duration
	// Latency sums, over completed tasks, the time from Enqueue to the
	// completion (Done): queueing, recording, transfers and the GPU.
	Latency time.Duration
}

// DispatchPerItem is the mean GPU time per work item, 0 without data.
func (k KernelStats) DispatchPerItem() time.Duration {
	if k.Items == 0 {
		return 0
	}
	return k.Dispatch / time.Duration(k.Items)
}

// MeanLatency is the mean Enqueue-to-completion time of a task.
func (k KernelStats) MeanLatency() time.Duration {
	if k.Tasks == 0 {
		return 0
	}
	return k.Latency / time.Duration(k.Tasks)
}

// Stats returns the executor's totals.
func (e *Executor) Stats() ExecStats {
	e.smu.Lock()
	st := e.st
	e.smu.Unlock()
	st.Submits = e.submits.Load()
	st.Inline = e.inline.Load()
	st.Records = e.records.Load()
	st.Replays = e.replays.Load()
	return st
}

// KernelStats returns the totals of kernel id on this executor.
func (e *Executor) KernelStats(id sched.KernelID) KernelStats {
	e.smu.Lock()
	defer e.smu.Unlock()
	if int(id) < len(e.kst) {
		return e.kst[id]
	}
	return KernelStats{}
}

// kernelLocked returns id's entry, growing the table; e.smu must be held.
func (e *Executor) kernelLocked(id sched.KernelID) *KernelStats {
	if int(id) >= len(e.kst) {
		n := max(int(id)+1, 2*len(e.kst), 16)
		t := make([]KernelStats, n)
		copy(t, e.kst)
		e.kst = t
	}
	return &e.kst[id]
}

// account adds a finished command buffer's jobs to the counters and
// host-side times, just before their Done (so that a caller who waited for
// a task sees it counted).
func (e *Executor) account(sl *slot, err error) {
	e.smu.Lock()
	defer e.smu.Unlock()
	e.st.MaxBatch = max(e.st.MaxBatch, len(sl.jobs))
	now := sched.Nanotime()
	for i := range sl.jobs {
		r := &sl.jobs[i]
		ks := e.kernelLocked(r.kid)
		first := true
		for _, o := range sl.jobs[:i] {
			if o.kid == r.kid {
				first = false
				break
			}
		}
		if first {
			ks.Submits++
		}
		if err != nil {
			e.st.Failed++
			ks.Failed++
			continue
		}
		items := uint64(r.end - r.begin)
		up, down := time.Duration(r.upNS), time.Duration(r.rbNS)
		e.st.Tasks++
		e.st.Items += items
		e.st.Upload += up
		e.st.Readback += down
		e.st.BytesUp += r.upBytes
		e.st.BytesDown += r.downBytes
		ks.Tasks++
		ks.Items += items
		ks.Upload += up
		ks.Readback += down
		ks.Latency += time.Duration(now - r.t)
	}
}

// accountTimes adds the GPU times read from the timestamps after the jobs
// completed: dispatch time, and the copy phases shared among jobs by bytes.
func (e *Executor) accountTimes(sl *slot, copyUp, copyDown int64) {
	e.smu.Lock()
	defer e.smu.Unlock()
	for i := range sl.jobs {
		r := &sl.jobs[i]
		ks := e.kernelLocked(r.kid)
		disp := time.Duration(r.stop - r.start)
		up := time.Duration(share(copyUp, r.upBytes, sl.upBytes))
		down := time.Duration(share(copyDown, r.downBytes, sl.downBytes))
		e.st.Dispatch += disp
		e.st.Upload += up
		e.st.Readback += down
		ks.Dispatch += disp
		ks.Upload += up
		ks.Readback += down
	}
}

func share(total int64, part, whole uint64) int64 {
	if whole == 0 || total == 0 {
		return 0
	}
	return int64(float64(total) * float64(part) / float64(whole))
}
