package main

import (
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// Phases of a frame: one scheduler task each (gather is one task per
// job), whose kernel invocations the observer times.
const (
	phSample = iota
	phLTM
	phSkin
	phEvents
	phGather
	phSort
	phRecord
	phPresent
	numPhases
)

var phaseNames = [numPhases]string{"sample", "local-to-model", "skin", "events", "gather", "merge-n-sort", "record", "submit/present"}

// ringFrames is how many frames' timings are kept until harvested; a
// frame's record is harvested when frame+ringFrames/2 is issued, by when
// even the GPU executor's late reports have arrived.
const ringFrames = 64

// frameRec collects one frame's phase spans (sched.Nanotime): the first
// start and the last stop of each phase's kernel invocations.
type frameRec struct {
	frame atomic.Int64
	issue atomic.Int64
	start [numPhases]atomic.Int64
	stop  [numPhases]atomic.Int64
}

func (r *frameRec) reset(f int, now int64) {
	r.frame.Store(int64(f))
	r.issue.Store(now)
	for i := range r.start {
		r.start[i].Store(math.MaxInt64)
		r.stop[i].Store(0)
	}
}

// tabEntry maps a task (by pool slot) to its frame record and phase.
type tabEntry struct {
	id atomic.Uint64
	v  atomic.Uint32 // ring index << 8 | phase
}

// Device columns of the per-kernel counts.
const (
	devCPU = iota
	devGPU
	devSPU
	numDevs
)

var devNames = [numDevs]string{"cpu", "gpu", "spu"}

// kernelCount is one (kernel, device) cell: invocations (a split task's
// pieces count one each), work items, busy time.
type kernelCount struct {
	calls, items, ns atomic.Int64
}

// stats is the demo's sched.Observer: per-frame phase timings and where
// each kernel ran. TaskRan is called concurrently by every thread and by
// the executors' completion goroutines; it allocates nothing.
type stats struct {
	ring    [ringFrames]frameRec
	tab     []tabEntry
	mask    uint64
	kernels [][numDevs]kernelCount // by kernel ID, up to maxKernel
	unknown atomic.Int64           // reports of our tasks that arrived too late

	// Harvested per-frame results, in frame order (preallocated).
	frames []frameResult
}

// frameResult is one frame's harvested timings, nanoseconds (0: none).
type frameResult struct {
	frame   int
	phase   [numPhases]int64 // span of each phase
	stage   [4]int64         // span of each pipeline stage
	sim     int64            // sample + local-to-model + skin
	animate int64            // sample + local-to-model
	start   int64            // start of sample (sched.Nanotime)
	present int64            // stop of submit/present
	latency int64            // issue to present
}

const maxKernel = 0x0500

func newStats(poolSize, frames int) *stats {
	n := 1
	for n < poolSize {
		n <<= 1
	}
	return &stats{
		tab:     make([]tabEntry, n),
		mask:    uint64(n - 1),
		kernels: make([][numDevs]kernelCount, maxKernel),
		frames:  make([]frameResult, 0, frames),
	}
}

// track registers a task (created held, not yet run) as phase ph of the
// frame in ring slot r. Main thread only.
func (s *stats) track(id sched.TaskID, r, ph int) {
	e := &s.tab[uint64(id)&s.mask]
	e.id.Store(0)
	e.v.Store(uint32(r)<<8 | uint32(ph))
	e.id.Store(uint64(id))
}

func (s *stats) lookup(id sched.TaskID) (r, ph int, ok bool) {
	if id == sched.NoTask {
		return 0, 0, false
	}
	e := &s.tab[uint64(id)&s.mask]
	if e.id.Load() != uint64(id) {
		return 0, 0, false
	}
	v := e.v.Load()
	if e.id.Load() != uint64(id) {
		return 0, 0, false
	}
	return int(v >> 8), int(v & 0xff), true
}

// TaskRan implements sched.Observer.
func (s *stats) TaskRan(ev *sched.RunEvent) {
	dv := devCPU
	switch ev.Where {
	case sched.GPU:
		dv = devGPU
	case sched.SPU:
		dv = devSPU
	}
	if int(ev.Kernel) < len(s.kernels) {
		k := &s.kernels[ev.Kernel][dv]
		k.calls.Add(1)
		k.items.Add(int64(ev.End - ev.Begin))
		k.ns.Add(ev.Stop - ev.Start)
	}
	r, ph, ok := s.lookup(ev.Task)
	if !ok {
		if r, ph, ok = s.lookup(ev.Parent); !ok {
			return
		}
	}
	rec := &s.ring[r]
	atomicMin(&rec.start[ph], ev.Start)
	atomicMax(&rec.stop[ph], ev.Stop)
}

func atomicMin(a *atomic.Int64, v int64) {
	for {
		o := a.Load()
		if v >= o || a.CompareAndSwap(o, v) {
			return
		}
	}
}

func atomicMax(a *atomic.Int64, v int64) {
	for {
		o := a.Load()
		if v <= o || a.CompareAndSwap(o, v) {
			return
		}
	}
}

// harvest moves frame f's record into the results (main thread).
func (s *stats) harvest(f int, stageOf *[numPhases]int) {
	rec := &s.ring[f%ringFrames]
	if rec.frame.Load() != int64(f) {
		return
	}
	var fr frameResult
	fr.frame = f
	var st0, st1 [4]int64
	for i := range st0 {
		st0[i] = math.MaxInt64
	}
	for ph := range numPhases {
		a, b := rec.start[ph].Load(), rec.stop[ph].Load()
		if b == 0 || a == math.MaxInt64 {
			continue
		}
		fr.phase[ph] = b - a
		sg := stageOf[ph]
		st0[sg], st1[sg] = min(st0[sg], a), max(st1[sg], b)
	}
	for i := range st0 {
		if st1[i] > 0 {
			fr.stage[i] = st1[i] - st0[i]
		}
	}
	// Work times: the phases' spans added (in a pipeline, the gap between
	// two stages is another frame's turn, not this frame's work).
	if fr.phase[phSample] > 0 && fr.phase[phLTM] > 0 {
		fr.animate = fr.phase[phSample] + fr.phase[phLTM]
		if fr.phase[phSkin] > 0 {
			fr.sim = fr.animate + fr.phase[phSkin]
		}
	}
	if a := rec.start[phSample].Load(); a != math.MaxInt64 {
		fr.start = a
	}
	fr.present = rec.stop[phPresent].Load()
	if fr.present > 0 {
		fr.latency = fr.present - rec.issue.Load()
	}
	rec.frame.Store(-1)
	if len(s.frames) < cap(s.frames) {
		s.frames = append(s.frames, fr)
	} else if len(s.frames) > 0 {
		// Window runs beyond the preallocated length keep the latest.
		copy(s.frames, s.frames[1:])
		s.frames[len(s.frames)-1] = fr
	}
}

// dist is a distribution of durations.
type dist struct {
	n             int
	median, p95   time.Duration
	mean, min, mx time.Duration
}

func distOf(ns []int64) dist {
	var v []int64
	for _, x := range ns {
		if x > 0 {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return dist{}
	}
	slices.Sort(v)
	var sum int64
	for _, x := range v {
		sum += x
	}
	pct := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return time.Duration(v[max(0, min(i, len(v)-1))])
	}
	return dist{n: len(v), median: pct(0.5), p95: pct(0.95), mean: time.Duration(sum / int64(len(v))), min: time.Duration(v[0]), mx: time.Duration(v[len(v)-1])}
}
