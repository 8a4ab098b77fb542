package placement

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkjobs/vkjobs/affinity/pinning"
	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/sched"
)

// Options configures a Placer. The zero value gives the defaults, and so
// do values out of range (NaN, a Decay outside (0, 1]); counts are
// clamped (Explore, ReprobeEvery and TrackEvery to 2^31-1, MaxInFlight and
// History to 2^20), so that "as many as you like" (math.MaxInt) works.
type Options struct {
	// Explore is how many tasks each candidate device gets per kernel and
	// size class (a power-of-two range of item counts) before the model
	// decides; default 3. A device that the model already predicts more
	// than 4x slower than the best (from two or more other size classes)
	// is tried once instead.
	Explore int
	// Decay is the weight with which a slower run raises its size class's
	// estimate (default 0.25; see the package documentation): the weight
	// of older runs decays exponentially. A faster run lowers the estimate
	// by half the difference at once.
	Decay float64
	// ReprobeEvery: each device other than the best (or co-execution) is
	// re-probed after ReprobeEvery model decisions of a (kernel, size
	// class) without a probe of it when its predicted finish is within 2x
	// of the best, so that a device that got faster is noticed; a device
	// predicted r > 2 times slower after ReprobeEvery*(r-1) decisions
	// (its probes cost about 1/ReprobeEvery of the time either way), or
	// sooner when ExploreBudget affords it: after (r-1)/ExploreBudget
	// decisions, at least 10. Default 100; negative disables.
	ReprobeEvery int
	// CoExecMin is the smallest task, in work items, that may be split
	// between the GPU and the CPU workers (default 65536).
	CoExecMin uint32
	// NoCoExec disables co-execution, and with it slice probes: no task is
	// split between devices.
	NoCoExec bool
	// NoSliceProbe explores executor devices with whole tasks only. By
	// default a streaming task's first explorations of an executor device
	// in a size class run a slice of it there (1/64 of the items, then
	// 1/16, then 1/4) and the rest on the CPU workers: a slice that takes
	// longer than the best device's whole task rules the device out for
	// the class at a fraction of a whole task's cost (see the package
	// documentation).
	NoSliceProbe bool
	// OneCore makes "one core" a candidate for streaming Auto tasks larger
	// than a grain: the task runs unsplit on one CPU worker (Place raises
	// its Grain to its size) and is modelled as a device of its own,
	// "cpu1". Fanning a task out over the workers costs the pieces'
	// hand-offs, and on a machine loaded by other processes the task
	// waits for its slowest piece; one core has neither. Off by default:
	// it costs each such kernel a few exploration tasks per size class.
	OneCore bool
	// CoExecGain is how much sooner (fraction) co-execution must be
	// predicted to finish than the best single device (default 0.1).
	CoExecGain float64
	// SharedCores says that the GPU executor's device computes on the same
	// CPU cores as the workers (a software rasteriser such as lavapipe:
	// gpu.Device.Selection().Chosen.Type == gpu.TypeCPU). Work queued on
	// either then delays both, so the backlog compared is their sum and
	// co-execution is off.
	SharedCores bool
	// SPU, when set, makes this SPU executor (attached as sched.ExecSPU) a
	// candidate for Auto tasks of the kernels whose tasks fit its local
	// store (SPU.Fits). Nil by default: the SPU executor exists to measure
	// the local-store discipline, not to win.
	SPU *spu.Executor
	// CPUThreads is the parallelism of the CPU workers in the model.
	// Default: set by Attach to min(scheduler threads, allowed CPUs); before
	// Attach, min(GOMAXPROCS, NumCPU).
	CPUThreads int
	// MaxInFlight bounds the placements tracked until completion (default
	// 1024, rounded up to a power of two, at most 2^20). Beyond it the
	// oldest is dropped (its sample is lost, nothing else).
	MaxInFlight int
	// StaleAfter drops a tracked placement that has not completed after
	// this long (default 10 s): a task that never reports (its executor
	// vanished) must not hold predicted work forever.
	StaleAfter time.Duration
	// History is how many recent decisions Snapshot returns (default 256,
	// at most 2^20).
	History int
	// ExploreBudget bounds what learning costs: a device other than the
	// predicted best is explored (its exploration quota, a slice probe, a
	// re-probe) only while the time exploration has cost, over what the
	// best device was predicted to take, stays within this fraction of
	// the kernel's run time (its tasks' predicted time on the best
	// device), the exploration's own predicted cost included; see the
	// package documentation. Default 0.02; negative: no bound (the
	// quotas and re-probe schedule alone).
	ExploreBudget float64
	// TrackEvery: of the placements whose device is a clear call (the
	// runner-up predicted to finish 4x later or more), only every
	// TrackEvery-th is tracked to completion and learned from (default 8;
	// 1 or negative tracks all). Untracked placements read no clock and
	// neither appear in Snapshot's decisions nor count as queued work.
	TrackEvery int
}

// Placer is a sched.Placer that learns where Auto tasks run fastest, and a
// sched.Observer that learns from their completions. Install it as both:
//
//	p := placement.New(placement.Options{})
//	s, _ := sched.New(sched.Config{Kernels: reg, Placer: p, Observer: p})
//	s.AttachExecutor(sched.ExecGPU, exec)
//	p.Attach(s) // after attaching executors: which devices exist, how many CPU threads
//
// (with another observer too, use Observers(p, other)). Place is called by
// the scheduler when an Auto task becomes runnable; it takes a lock, a few
// multiplications and, for a tracked placement, a clock read, and
// allocates nothing once a kernel has been seen. See the package
// documentation for the model. All methods are safe for concurrent use.
type Placer struct {
	opts  Options
	decay float64

	kernels atomic.Pointer[[]*kernelModel] // by KernelID; copied on write under mu

	mu          sync.Mutex
	avail       [numDevices]bool
	cpuPar      float64
	outstanding [numDevices]float64 // predicted ns of tracked placements not yet done
	active      [numDevices]int     // tracked entries per device
	lastFinish  [numDevices]int64   // latest RunEvent.Stop of a completed entry
	fastest     [numDevices]float64 // the shortest service time measured on the device, any kernel (0: none)
	ring        []entry
	head, tail  uint64 // entries [head, tail) may be live; seq numbers from 1
	decs        []decRec
	decSeq      uint64
	placed      uint64
}

// kernelModel is what the Placer knows about one kernel.
type kernelModel struct {
	id        sched.KernelID
	name      string
	checked   bool // name compared with the registration (mu)
	dev       [numDevices]costFit
	decisions [numClasses]uint32             // model decisions per class, for re-probing
	unprobed  [numClasses][numDevices]uint32 // model decisions per class since the device's last probe
	coEff     float64                        // measured / predicted co-execution finish (EWMA)
	coN       uint32
	inflight  atomic.Int32
	// The exploration budget (Options.ExploreBudget), in ns: runNs sums
	// the best device's predicted service time over the kernel's
	// placements, spentNs what completed explorations cost beyond the
	// best's prediction (of an unidentified device's, up to the lower
	// bound predicted), reservedNs the predicted cost of those in flight,
	// surpriseNs what unidentified devices' explorations cost beyond
	// their lower bounds.
	runNs, spentNs, reservedNs, surpriseNs float64
}

// entry tracks one placement (one device's part of a task) until the
// scheduler or an executor reports its completion.
type entry struct {
	seq        uint64 // 0: free
	dec        uint64 // decision seq
	kernel     sched.KernelID
	dev        uint8
	class      uint8
	backlogged bool // the device had tracked work when this was placed
	coexec     bool // a part of a split task (co-execution or slice probe)
	probe      bool
	charge     bool  // an exploration: its cost beyond ref counts against the budget
	surprise   bool  // charged, on an unidentified device: resv is a lower bound
	noLearn    bool  // the CPU part of a slice probe: slowed by the probe beside it
	sliceOf    uint8 // slice probe: the size class of the whole task + 1; 0 otherwise
	failed     bool
	begin, end uint32
	remaining  uint32
	root       sched.TaskID // parent of the CPU pieces, once seen
	x          float64      // effective items
	pred       float64      // predicted service ns
	ref        float64      // charged: the best device's predicted ns for the task (+Inf: none)
	resv       float64      // charged: the predicted cost reserved in kernelModel.reservedNs
	bound      float64      // slice probe: the best device's predicted time for the whole task
	whole      uint32       // slice probe: the whole task's items
	left       float64      // part of pred still counted in outstanding
	placedAt   int64
	firstStart int64
	lastStop   int64 // latest RunEvent.Stop (executors: end of the dispatch)
	evStop     int64 // the same, for the device's busy-until time
}

// Decision reasons.
const (
	reasonModel uint8 = iota
	reasonExplore
	reasonProbe
	reasonCoExec
	reasonCoProbe
	reasonSlice
)

var reasonNames = [...]string{"model", "explore", "probe", "coexec", "coexec-probe", "explore-slice"}

type decRec struct {
	seq        uint64
	kernel     sched.KernelID
	where      uint8
	reason     uint8
	parts      uint8
	failed     bool
	cand       [numDevices]bool
	begin      uint32
	items      uint32
	split      uint32
	pred       [numDevices]float64
	predFinish float64
	placedAt   int64
	finish     int64
	measured   float64
}

// skipFactor: a device predicted this many times slower than the best is
// not explored (from two other classes), or no further (from its own
// samples in the class).
const skipFactor = 8

// Slice probes: the first slice is 1/sliceFirst of the task's items, each
// next one sliceGrowth times larger, and a task of fewer than sliceMin
// items is explored whole. A slice that takes sliceOut times longer than
// the best device's predicted time for the whole task (twice that with
// SharedCores, where the slice competes with the rest of the task for the
// same cores) rules the device out for the class.
const (
	sliceFirst  = 64
	sliceGrowth = 4
	sliceMin    = 8
	sliceOut    = 1.0
)

// placerClock is the Placer's clock for tracking placements (StaleAfter);
// a variable so that tests can step it instead of racing real time.
var placerClock = sched.Nanotime

// Bounds of Options' counts. The schedules count in uint32 (per kernel
// and size class): maxCount keeps their modulus from truncating to 0. The
// tracking ring and the decision history are allocated whole: maxRing
// turns a request for "unbounded" into 2^20 entries of each (under 150
// bytes apiece) instead of an allocation no machine can make.
const (
	maxCount = 1<<31 - 1
	maxRing  = 1 << 20
)

// New returns a Placer with no knowledge: it explores first (or
// Load a saved model).
func New(opts Options) *Placer {
	if opts.Explore <= 0 {
		opts.Explore = 3
	}
	if !(opts.Decay > 0 && opts.Decay <= 1) { // NaN too
		opts.Decay = 0.25
	}
	if opts.ReprobeEvery == 0 {
		opts.ReprobeEvery = 100
	}
	if opts.CoExecMin == 0 {
		opts.CoExecMin = 1 << 16
	}
	if !(opts.CoExecGain > 0) {
		opts.CoExecGain = 0.1
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 1024
	}
	opts.Explore = min(opts.Explore, maxCount)
	opts.ReprobeEvery = min(opts.ReprobeEvery, maxCount)
	opts.TrackEvery = min(opts.TrackEvery, maxCount)
	opts.MaxInFlight = min(opts.MaxInFlight, maxRing)
	n := 1
	for n < opts.MaxInFlight {
		n <<= 1
	}
	opts.MaxInFlight = n
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 10 * time.Second
	}
	if opts.History <= 0 {
		opts.History = 256
	}
	opts.History = min(opts.History, maxRing)
	if opts.TrackEvery == 0 {
		opts.TrackEvery = 8
	}
	if opts.ExploreBudget == 0 || math.IsNaN(opts.ExploreBudget) {
		opts.ExploreBudget = 0.02
	}
	p := &Placer{
		opts:  opts,
		decay: opts.Decay,
		ring:  make([]entry, opts.MaxInFlight),
		decs:  make([]decRec, opts.History),
		head:  1,
		tail:  1,
	}
	for dv := range p.avail {
		p.avail[dv] = true
	}
	p.cpuPar = float64(min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
	if opts.CPUThreads > 0 {
		p.cpuPar = float64(opts.CPUThreads)
	}
	empty := []*kernelModel{}
	p.kernels.Store(&empty)
	return p
}

// Attach tells the Placer which executors s has (GPU, SPU) and how many
// CPU threads run its tasks. Call it after AttachExecutor and before
// adding Auto tasks. Without it the Placer assumes every device exists; a
// missing one costs a few exploration tasks per size class, which the
// scheduler runs on CPU workers, and is then never chosen.
func (p *Placer) Attach(s *sched.Scheduler) {
	ncpu := runtime.NumCPU()
	if set, err := pinning.AllowedCPUs(); err == nil && set.Count() > 0 {
		ncpu = set.Count()
	}
	p.mu.Lock()
	p.avail[devGPU] = s.HasExecutor(sched.ExecGPU)
	p.avail[devSPU] = s.HasExecutor(sched.ExecSPU)
	if p.opts.CPUThreads <= 0 {
		p.cpuPar = float64(max(1, min(s.Threads(), ncpu, runtime.GOMAXPROCS(0))))
	}
	p.mu.Unlock()
}

// model returns kernel id's model, nil if never seen. Lock-free.
func (p *Placer) model(id sched.KernelID) *kernelModel {
	t := *p.kernels.Load()
	if int(id) < len(t) {
		return t[id]
	}
	return nil
}

// modelLocked returns id's model, creating it (p.mu held).
func (p *Placer) modelLocked(id sched.KernelID, name string) *kernelModel {
	if km := p.model(id); km != nil {
		if !km.checked {
			if km.name != name {
				// A loaded model of another kernel under this ID.
				*km = kernelModel{id: id, name: name, coEff: 1}
			}
			km.checked = true
		}
		return km
	}
	km := &kernelModel{id: id, name: name, checked: true, coEff: 1}
	p.install(km)
	return km
}

// install publishes km in the kernel table (p.mu held).
func (p *Placer) install(km *kernelModel) {
	old := *p.kernels.Load()
	n := max(len(old), int(km.id)+1)
	t := make([]*kernelModel, n)
	copy(t, old)
	if o := t[km.id]; o != nil {
		km.inflight.Store(o.inflight.Load())
	}
	t[km.id] = km
	p.kernels.Store(&t)
}

// effItems is the item count the model of device dv sees for a task of n
// items: on CPU workers the scheduler splits it into pieces of at least a
// grain over the threads, so its time follows the piece size.
func (p *Placer) effItems(dv int, n, grain uint32) float64 {
	if dv != devCPU || n == 0 { // one core: all n items on one thread
		return float64(n)
	}
	pieces := float64((uint64(n) + uint64(grain) - 1) / uint64(grain))
	return float64(n) / max(1, min(p.cpuPar, pieces))
}

// backlog is the predicted work queued ahead of a new task on dv. Whole
// and one-core tasks share the CPU workers; with SharedCores the GPU's
// work shares them too.
func (p *Placer) backlog(dv int) float64 {
	cpu := p.outstanding[devCPU] + p.outstanding[devCPU1]
	switch {
	case dv == devSPU:
		return p.outstanding[devSPU]
	case p.opts.SharedCores:
		return cpu + p.outstanding[devGPU]
	case dv == devGPU:
		return p.outstanding[devGPU]
	}
	return cpu
}

// Place implements sched.Placer: it returns the device with the earliest
// predicted finish (backlog plus predicted service time) for the task, or
// a device still being explored for its size class, or (GPU, split) to
// co-execute: items [Begin, Begin+split) on the GPU and the rest on CPU
// workers, split so that both parts are predicted to finish together, or
// to probe the GPU (or SPU) with a slice of the task. For one core
// (Options.OneCore) it returns AnyWorker and raises d.Grain to the task's
// size, so that the scheduler runs it unsplit. Tasks of kernels with no
// candidate but the CPU workers go there untracked. Called by the
// scheduler, concurrently.
func (p *Placer) Place(id sched.KernelID, k *sched.Kernel, d *sched.TaskData) (sched.Affinity, uint32) {
	if k == nil || d == nil || d.End < d.Begin {
		return sched.AnyWorker, 0
	}
	n := d.End - d.Begin
	grain := d.Grain
	if grain == 0 {
		grain = k.Grain
	}
	if grain == 0 {
		grain = sched.DefaultGrain
	}
	p.mu.Lock()
	var cand [numDevices]bool
	cand[devCPU] = true
	cand[devGPU] = p.avail[devGPU] && k.GPU != nil
	cand[devSPU] = p.opts.SPU != nil && p.avail[devSPU] && k.Kind != sched.Simple && p.opts.SPU.Fits(k, d)
	// One core differs from the workers only for a task they would split.
	cand[devCPU1] = p.opts.OneCore && p.avail[devCPU1] && k.Kind != sched.Simple && n > grain && p.cpuPar > 1
	if !cand[devGPU] && !cand[devSPU] && !cand[devCPU1] {
		p.mu.Unlock()
		return sched.AnyWorker, 0
	}
	km := p.modelLocked(id, k.Name)
	class := sizeClass(n)

	sliceable := !p.opts.NoCoExec && !p.opts.NoSliceProbe && k.Kind != sched.Simple && n >= sliceMin
	var svc, fin [numDevices]float64
	best := -1
	for dv := range numDevices {
		svc[dv], fin[dv] = math.Inf(1), math.Inf(1)
		if !cand[dv] {
			continue
		}
		f := &km.dev[dv]
		svc[dv] = f.predict(class, p.effItems(dv, n, grain))
		if sliceable && isExecutor(dv) && f.phase[class] == phaseSlices && f.classes[class].n == 0 {
			// Being probed by slices: its line, from other sizes, is no
			// reason to run a whole task there before the slices say so.
			continue
		}
		fin[dv] = p.backlog(dv) + svc[dv]
		if best < 0 || fin[dv] < fin[best] {
			best = dv
		}
	}
	// The kernel's run time, for the exploration budget: what its tasks
	// are predicted to take on the best device. mbest is that device,
	// which exploring costs nothing.
	mbest := best
	if finite(svc[best]) {
		km.runNs += svc[best]
	}
	reason := reasonModel
	// Exploration: the least-tried device still short of its quota; an
	// executor device that can be probed with a slice of the task is
	// probed so first (sliceDev), once the best device has a prediction
	// to compare the slice with.
	explore, sliceDev := -1, -1
	for dv := range numDevices {
		if !cand[dv] {
			continue
		}
		f := &km.dev[dv]
		slower := dv != best && finite(svc[best]) && finite(svc[dv])
		if f.tries[class] == 0 {
			// Decided at the first try, from the other classes, so that
			// the class's own first (possibly outlying) sample cannot
			// cut its exploration short: a device predicted 4x slower
			// than the best from two other classes is tried once, and
			// one predicted skipFactor slower is not tried (its one
			// task would cost more than many tasks of the best device).
			f.once[class] = slower && svc[dv] > 4*svc[best] && f.nclasses >= 2
		}
		need := uint32(p.opts.Explore)
		switch {
		case f.tries[class] == 0 && slower && svc[dv] > skipFactor*svc[best] && f.nclasses >= 2:
			need = 0
		case f.once[class]:
			need = 1
		case slower && f.classes[class].n > 0 && svc[dv] > skipFactor*svc[best]:
			// Its own samples in the class already say it is hopeless.
			need = min(need, f.tries[class])
		}
		if f.tries[class] >= need {
			continue
		}
		if sliceable && isExecutor(dv) && f.phase[class] != phaseWhole && f.classes[class].n == 0 {
			if f.phase[class] == phaseSlices && !f.sliceBusy[class] && dv != best && finite(svc[best]) && sliceDev < 0 &&
				p.affordableSlice(km, dv, class, n, grain, svc[best]) {
				sliceDev = dv
			}
			continue
		}
		if dv != best && !p.affordableCost(km, dv, class, p.effItems(dv, n, grain), svc[best]) {
			continue // within its quota, but the budget cannot pay for it yet
		}
		if explore < 0 || f.tries[class] < km.dev[explore].tries[class] {
			explore = dv
		}
	}
	split := uint32(0)
	predFinish := fin[best]
	switch {
	case explore >= 0:
		best, reason = explore, reasonExplore
		predFinish = fin[best]
	case sliceDev >= 0:
		f := &km.dev[sliceDev]
		if f.slice[class] == 0 || !f.warm {
			// The first slice; the device's first run ever (shader
			// compilation, not learned from) is one too.
			f.slice[class] = max(n/sliceFirst, 1)
		}
		split, reason = sliceItems(f, class, n), reasonSlice
	default:
		km.decisions[class]++
		probe := p.opts.ReprobeEvery > 0 && km.decisions[class]%uint32(p.opts.ReprobeEvery) == 0
		if s, co := p.coSplit(km, k, n, grain, class, cand); s > 0 {
			adj := co * km.coEff
			if adj < fin[best]*(1-p.opts.CoExecGain) {
				split, predFinish, reason = s, co, reasonCoExec
			} else if probe && adj < 2*fin[best] && p.affordable(km, max(0, adj-fin[best])) {
				split, predFinish, reason = s, co, reasonCoProbe
				probe = false
			}
		}
		// The device to re-probe: of the others, the one with the
		// earliest predicted finish among those due (each on its own
		// schedule, see probeDue).
		ru, due := -1, -1
		for dv := range numDevices {
			if !cand[dv] || dv == best {
				continue
			}
			if ru < 0 || fin[dv] < fin[ru] {
				ru = dv
			}
			if p.probeDue(km.unprobed[class][dv], fin[dv]/fin[best]) && (due < 0 || fin[dv] < fin[due]) &&
				p.affordableCost(km, dv, class, p.effItems(dv, n, grain), svc[best]) {
				due = dv
			}
		}
		switch {
		case probe && split > 0 && reason == reasonCoExec:
			// Re-measure the best single device, which co-execution
			// otherwise keeps from being sampled at this size.
			split, reason, predFinish = 0, reasonProbe, fin[best]
		case split == 0 && due >= 0:
			best, reason, predFinish = due, reasonProbe, fin[due]
		}
		for dv := range numDevices {
			switch {
			case dv == best && reason == reasonProbe:
				km.unprobed[class][dv] = 0
			case cand[dv] && dv != best:
				km.unprobed[class][dv]++
			}
		}
		// A clear call (the runner-up predicted at least 4x later) is
		// tracked, and learned from, only every TrackEvery-th time: the
		// others cost no clock read, no tracking and nothing in TaskRan.
		if reason == reasonModel && split == 0 && p.opts.TrackEvery > 1 && (ru < 0 || fin[ru] >= 4*fin[best]) &&
			km.decisions[class]%uint32(p.opts.TrackEvery) != 1 {
			p.placed++
			p.mu.Unlock()
			return p.route(best, d, n), 0
		}
	}
	now := placerClock()
	p.expire(now)

	// Record the decision and track the part(s).
	p.decSeq++
	dr := &p.decs[p.decSeq%uint64(len(p.decs))]
	*dr = decRec{seq: p.decSeq, kernel: id, reason: reason, begin: d.Begin, items: n, split: split,
		pred: svc, cand: cand, predFinish: predFinish, placedAt: now}
	var where sched.Affinity
	switch {
	case reason == reasonSlice:
		// The slice on the probed device, learned in its own size class
		// and judged against the best device's whole task; the rest on
		// the CPU workers, not learned from (it runs beside the probe).
		dr.where, dr.parts = uint8(sliceDev), 2
		f := &km.dev[sliceDev]
		f.sliceBusy[class] = true
		sx, rx := p.effItems(sliceDev, split, grain), p.effItems(devCPU, n-split, grain)
		sc, rc := sizeClass(split), sizeClass(n-split)
		p.track(km, sliceDev, sc, d.Begin, d.Begin+split, sx, f.predict(sc, sx), true, true, now)
		e := &p.ring[(p.tail-1)&uint64(len(p.ring)-1)]
		e.sliceOf, e.bound, e.whole = uint8(class+1), svc[best], n
		cost, known := f.cost(sc, sx, svc[best], p.fastest[sliceDev])
		p.charge(km, e, svc[best], cost, known)
		p.track(km, devCPU, rc, d.Begin+split, d.End, rx, km.dev[devCPU].predict(rc, rx), true, false, now)
		p.ring[(p.tail-1)&uint64(len(p.ring)-1)].noLearn = true
		where = devAffinity(sliceDev)
	case split > 0:
		dr.where = devGPU
		dr.parts = 2
		gx := p.effItems(devGPU, split, grain)
		cx := p.effItems(devCPU, n-split, grain)
		gc, cc := sizeClass(split), sizeClass(n-split)
		p.track(km, devGPU, gc, d.Begin, d.Begin+split, gx, km.dev[devGPU].predict(gc, gx), true, true, now)
		if reason == reasonCoProbe {
			// Each part is charged what it takes beyond the best single
			// device's task: at least what the split cost.
			p.charge(km, &p.ring[(p.tail-1)&uint64(len(p.ring)-1)], svc[mbest], max(0, predFinish*km.coEff-fin[mbest]), true)
		}
		p.track(km, devCPU, cc, d.Begin+split, d.End, cx, km.dev[devCPU].predict(cc, cx), true, true, now)
		if reason == reasonCoProbe {
			p.charge(km, &p.ring[(p.tail-1)&uint64(len(p.ring)-1)], svc[mbest], 0, true)
		}
		where = sched.GPU
	default:
		dr.where = uint8(best)
		dr.parts = 1
		x := p.effItems(best, n, grain)
		p.track(km, best, class, d.Begin, d.End, x, svc[best], false, true, now)
		e := &p.ring[(p.tail-1)&uint64(len(p.ring)-1)]
		e.probe = reason == reasonProbe
		if best != mbest && (reason == reasonExplore || reason == reasonProbe) {
			cost, known := km.dev[best].cost(class, x, svc[mbest], p.fastest[best])
			p.charge(km, e, svc[mbest], cost, known)
		}
		where = p.route(best, d, n)
	}
	p.placed++
	p.mu.Unlock()
	return where, split
}

// sliceItems is the size of the next slice probing f's device with a
// task of n items of size class c.
func sliceItems(f *costFit, c int, n uint32) uint32 {
	s := f.slice[c]
	if s == 0 || !f.warm {
		s = max(n/sliceFirst, 1)
	}
	return min(s, n-1)
}

// affordableSlice is affordable for probing device dv with a slice of a
// task of n items of size class c, whose best device is predicted to take
// ref: the cost is the slice's time beyond ref (the rest of the task runs
// beside it, on the CPU workers).
func (p *Placer) affordableSlice(km *kernelModel, dv, c int, n, grain uint32, ref float64) bool {
	f := &km.dev[dv]
	s := sliceItems(f, c, n)
	cost, _ := f.cost(sizeClass(s), float64(s), ref, p.fastest[dv])
	return p.affordable(km, cost)
}

// affordableCost is affordable for a whole task of x effective items of
// size class c on device dv.
func (p *Placer) affordableCost(km *kernelModel, dv, c int, x, ref float64) bool {
	cost, _ := km.dev[dv].cost(c, x, ref, p.fastest[dv])
	return p.affordable(km, cost)
}

// affordable reports whether kernel km's exploration budget can pay for
// an exploration predicted to cost cost ns beyond the best device (p.mu
// held): what explorations cost so far (an unidentified device's up to
// its lower bound), those in flight and this one within ExploreBudget of
// the kernel's run time.
func (p *Placer) affordable(km *kernelModel, cost float64) bool {
	return p.opts.ExploreBudget < 0 || km.spentNs+km.reservedNs+cost <= p.opts.ExploreBudget*km.runNs
}

// charge makes the tracked entry e an exploration whose cost beyond ref
// (the best device's predicted time) counts against km's budget when it
// completes, and reserves its predicted cost (known: predicted; otherwise
// a lower bound) until then (p.mu held).
func (p *Placer) charge(km *kernelModel, e *entry, ref, cost float64, known bool) {
	e.charge, e.surprise, e.ref, e.resv = true, !known, ref, cost
	km.reservedNs += cost
}

// settle moves a charged entry's cost from reserved to spent: y, its
// measured time, beyond its reference, or with y < 0 (dropped, never
// measured) its reservation (p.mu held).
func (p *Placer) settle(e *entry, y float64) {
	km := p.model(e.kernel)
	if !e.charge || km == nil {
		return
	}
	e.charge = false
	km.reservedNs = max(0, km.reservedNs-e.resv)
	switch {
	case y < 0:
		km.spentNs += e.resv
	case !finite(e.ref):
	case e.surprise:
		// Beyond its lower bound, an unidentified device's cost was
		// unpredictable: counted apart, so that it does not hold up
		// the explorations the model can price.
		c := max(0, y-e.ref)
		km.spentNs += min(c, e.resv)
		km.surpriseNs += c - min(c, e.resv)
	default:
		km.spentNs += max(0, y-e.ref)
	}
}

// route returns the affinity for a whole task placed on dv; for one core
// it raises the task's grain to its size, which the scheduler then does
// not split.
func (p *Placer) route(dv int, d *sched.TaskData, n uint32) sched.Affinity {
	if dv == devCPU1 {
		d.Grain = n
	}
	return devAffinity(dv)
}

// probeDue reports whether a device predicted r times slower than the
// best is re-measured after since model decisions without a probe of it:
// after ReprobeEvery decisions when r <= 2, after ReprobeEvery*(r-1) when
// it is slower, so that probing it costs at most about 1/ReprobeEvery of
// the time however slow it is predicted, and a device that was slowed
// down far (another process loading it) is still re-measured when that
// load is gone. With an exploration budget, a device is due sooner when
// the budget affords it: after (r-1)/ExploreBudget decisions (at least
// probeMin), at which pace its probes cost the budget. A device close to
// the best (one core beside the workers, both within the noise of a
// loaded machine) is then re-measured every few tens of tasks rather than
// every hundred, so that a choice made on a few unlucky samples does not
// last; the budget's check (affordable) still bounds what all probes
// cost together.
func (p *Placer) probeDue(since uint32, r float64) bool {
	if p.opts.ReprobeEvery <= 0 || !finite(r) {
		return false
	}
	every := float64(p.opts.ReprobeEvery) * max(1, r-1)
	if b := p.opts.ExploreBudget; b > 0 {
		every = min(every, max(probeMin, (r-1)/b))
	}
	return float64(since)+1 >= every
}

// probeMin is the fewest model decisions between two probes of a device
// that the exploration budget brings its re-probes forward to.
const probeMin = 10

// coSplit returns the GPU share s of an n-item task that makes both parts
// finish together, and the predicted finish, or 0 when co-execution does
// not apply.
func (p *Placer) coSplit(km *kernelModel, k *sched.Kernel, n, grain uint32, class int, cand [numDevices]bool) (uint32, float64) {
	if p.opts.NoCoExec || p.opts.SharedCores || !cand[devGPU] || k.Kind == sched.Simple || n < p.opts.CoExecMin {
		return 0, 0
	}
	c, g := &km.dev[devCPU], &km.dev[devGPU]
	if c.classes[class].n == 0 || g.classes[class].n == 0 {
		return 0, 0
	}
	bc := c.b / p.cpuPar // per item when split over all threads
	if bc+g.b <= 0 {
		return 0, 0
	}
	bC, bG := p.backlog(devCPU), p.backlog(devGPU)
	s := (bC + c.a + bc*float64(n) - bG - g.a) / (g.b + bc)
	if !(s > 0) {
		return 0, 0
	}
	su := uint32(min(s, float64(n))) &^ 63
	minPart := max(n/16, grain)
	if su < minPart || n-su < minPart {
		return 0, 0
	}
	tg := bG + g.predict(sizeClass(su), p.effItems(devGPU, su, grain))
	tc := bC + c.predict(sizeClass(n-su), p.effItems(devCPU, n-su, grain))
	return su, max(tg, tc)
}

// track starts tracking a placed part (p.mu held).
func (p *Placer) track(km *kernelModel, dv, class int, begin, end uint32, x, pred float64, coexec, countTry bool, now int64) {
	if !finite(pred) {
		pred = 0 // unexplored device: no prediction to queue
	}
	if p.tail-p.head == uint64(len(p.ring)) {
		p.drop(&p.ring[p.head&uint64(len(p.ring)-1)])
	}
	seq := p.tail
	p.tail++
	e := &p.ring[seq&uint64(len(p.ring)-1)]
	*e = entry{seq: seq, dec: p.decSeq, kernel: km.id, dev: uint8(dv), class: uint8(class),
		backlogged: p.active[dv] > 0, coexec: coexec, begin: begin, end: end, remaining: end - begin,
		x: x, pred: pred, left: pred, placedAt: now}
	p.outstanding[dv] += pred
	p.active[dv]++
	if countTry {
		km.dev[dv].tries[class]++
	}
	km.inflight.Add(1)
}

// release frees a tracked entry and its predicted work (p.mu held).
func (p *Placer) release(e *entry) {
	dv := int(e.dev)
	p.active[dv]--
	if p.active[dv] == 0 {
		p.outstanding[dv] = 0 // no rounding drift
	} else {
		p.outstanding[dv] = max(0, p.outstanding[dv]-e.left)
	}
	if km := p.model(e.kernel); km != nil {
		km.inflight.Add(-1)
	}
	e.seq = 0
	mask := uint64(len(p.ring) - 1)
	for p.head < p.tail && p.ring[p.head&mask].seq != p.head {
		p.head++
	}
}

// drop forgets an entry without learning from it. A dropped slice probe
// frees its class for the next one.
func (p *Placer) drop(e *entry) {
	if e.seq == 0 {
		return
	}
	if dr := p.decRec(e.dec); dr != nil {
		dr.failed = true
	}
	if km := p.model(e.kernel); km != nil && e.sliceOf > 0 {
		km.dev[e.dev].sliceBusy[e.sliceOf-1] = false
	}
	p.settle(e, -1)
	p.release(e)
}

// expire drops entries older than StaleAfter (p.mu held).
func (p *Placer) expire(now int64) {
	mask := uint64(len(p.ring) - 1)
	for p.head < p.tail {
		e := &p.ring[p.head&mask]
		if e.seq != p.head {
			p.head++
			continue
		}
		if now-e.placedAt < int64(p.opts.StaleAfter) {
			return
		}
		p.drop(e)
	}
}

func (p *Placer) decRec(seq uint64) *decRec {
	dr := &p.decs[seq%uint64(len(p.decs))]
	if dr.seq != seq {
		return nil
	}
	return dr
}

// TaskRan implements sched.Observer: it matches the kernel invocations of
// tracked placements (CPU pieces by kernel, range and parent task; executor
// jobs by kernel and range) and, when a placement's last piece completed,
// learns its service time. Events of kernels with nothing tracked cost two
// atomic loads.
func (p *Placer) TaskRan(ev *sched.RunEvent) {
	km := p.model(ev.Kernel)
	if km == nil || km.inflight.Load() == 0 {
		return
	}
	dv, ok := devOf(ev.Where)
	if !ok {
		return
	}
	// The end of the invocation. For the GPU executor that is the end of
	// the dispatch (its timestamp, on the host clock): the read-back and
	// the fence's signal to the host (tens of microseconds on lavapipe) follow. Its
	// report comes later still, after Done and reading the timestamps, on
	// a goroutine that a busy machine may not run for milliseconds: the
	// time of the report would measure the machine's load, not the GPU.
	finish := max(ev.Stop, ev.Start)
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.match(dv, ev)
	if e == nil {
		return
	}
	n := ev.End - ev.Begin
	if e.firstStart == 0 || ev.Start < e.firstStart {
		e.firstStart = ev.Start
	}
	e.lastStop = max(e.lastStop, finish)
	e.evStop = max(e.evStop, ev.Stop)
	if ev.Err != nil {
		e.failed = true
	}
	if span := e.end - e.begin; span > 0 && n < e.remaining {
		part := e.pred * float64(n) / float64(span)
		part = min(part, e.left)
		e.left -= part
		p.outstanding[e.dev] = max(0, p.outstanding[e.dev]-part)
		e.remaining -= n
		return
	}
	e.remaining = 0
	p.complete(km, e)
}

// match finds the tracked entry an event belongs to (p.mu held).
func (p *Placer) match(dv int, ev *sched.RunEvent) *entry {
	mask := uint64(len(p.ring) - 1)
	var unbound *entry
	for seq := p.head; seq < p.tail; seq++ {
		e := &p.ring[seq&mask]
		// An invocation that started before the placement is another
		// task's (an untracked task of the same kernel and range, whose
		// executor reported it late).
		if e.seq != seq || e.kernel != ev.Kernel || hwDev(int(e.dev)) != dv || ev.Start < e.placedAt {
			continue
		}
		if dv != devCPU || ev.Thread < 0 {
			// Executors run a job whole: same range, oldest first.
			if e.begin == ev.Begin && e.end == ev.End {
				return e
			}
			continue
		}
		n := ev.End - ev.Begin
		if ev.Begin < e.begin || ev.End > e.end || n > e.remaining {
			continue
		}
		if e.root != sched.NoTask {
			if ev.Parent == e.root {
				return e
			}
			continue
		}
		if ev.Begin == e.begin && ev.End == e.end && e.remaining == e.end-e.begin {
			return e // the task ran unsplit
		}
		if unbound == nil && ev.Parent != sched.NoTask {
			unbound = e
		}
	}
	if unbound != nil {
		// The first piece of a split task: its parent is the task.
		unbound.root = ev.Parent
	}
	return unbound
}

// complete learns from a finished entry and frees it (p.mu held).
func (p *Placer) complete(km *kernelModel, e *entry) {
	dv := int(e.dev)
	start := e.placedAt
	if e.backlogged {
		// Queued behind other tracked work: its service began when the
		// device got to it (CPU: its first piece; executors run in order:
		// when the previous job finished).
		// Executors report a job only after completing it (the GPU
		// executor after Done and reading timestamps), so an earlier job's
		// report may come after this one was placed: its end of dispatch
		// (RunEvent.Stop), not its report, bounds this one's start.
		if hwDev(dv) == devCPU {
			start = max(start, e.firstStart)
		} else {
			start = max(start, min(p.lastFinish[dv], e.lastStop))
		}
	}
	svc := float64(max(e.lastStop-start, 1))
	p.lastFinish[dv] = max(p.lastFinish[dv], e.evStop)
	if !e.failed && (p.fastest[dv] == 0 || svc < p.fastest[dv]) {
		p.fastest[dv] = svc
	}
	p.settle(e, svc)
	learned := false
	if !e.failed && !e.noLearn {
		// Co-executed parts are learned too, in the size classes of the
		// parts: where the devices slow each other down (shared cores),
		// that is what a part costs.
		f := &km.dev[dv]
		if !f.warm {
			// The first run of a kernel on a device pays one-time costs
			// (shader compilation, memory growth, page faults): not
			// learned from.
			f.warm = true
		} else {
			f.add(int(e.class), e.x, svc, p.decay, e.probe)
			learned = true
		}
	}
	if e.sliceOf > 0 {
		p.sliceDone(km, e, svc, learned)
	}
	if dr := p.decRec(e.dec); dr != nil {
		dr.finish = max(dr.finish, e.lastStop)
		dr.failed = dr.failed || e.failed
		if !e.coexec {
			dr.measured = svc
		}
		if dr.parts > 0 {
			dr.parts--
		}
		if e.coexec && dr.parts == 0 {
			dr.measured = float64(dr.finish - dr.placedAt)
			if !dr.failed && dr.predFinish > 0 && dr.reason != reasonSlice {
				r := min(max(dr.measured/dr.predFinish, 0.25), 8)
				km.coEff = 0.75*km.coEff + 0.25*r
				km.coN++
			}
		}
	}
	p.release(e)
}

// sliceDone judges a completed slice probe of e's device for the size
// class of the whole task (p.mu held). The slice's time is a lower bound
// on the whole task's there (time grows with items): when it exceeds the
// best device's predicted time for the whole task, the device cannot win
// the class and is not explored there. Otherwise the next probe takes a
// slice sliceGrowth times larger, and once that would be half the task or
// more, or once the device's line (from two or more size classes of
// samples) predicts the whole task no worse than skipFactor times the
// best, whole tasks are explored as for any device. A warm-up run (not
// learned from) repeats the slice; a failed one rules the device out.
func (p *Placer) sliceDone(km *kernelModel, e *entry, y float64, learned bool) {
	dv, c := int(e.dev), int(e.sliceOf-1)
	f := &km.dev[dv]
	f.sliceBusy[c] = false
	if f.phase[c] != phaseSlices {
		return // decided meanwhile (another slice in flight when it was)
	}
	out := sliceOut
	if p.opts.SharedCores {
		out *= 2
	}
	// Ruled out, the class counts as explored (its tries reach the
	// quota): so it is saved, and a loaded model does not probe it again.
	ruleOut := func() {
		f.phase[c] = phaseOut
		f.tries[c] = max(f.tries[c], uint32(p.opts.Explore))
	}
	s := float64(e.end - e.begin)
	if learned {
		f.floor[c] = max(f.floor[c], y)
	}
	switch {
	case e.failed:
		ruleOut()
	case !learned:
	case !finite(e.bound):
		f.phase[c] = phaseWhole // nothing to compare with: explore it whole
	case y > out*e.bound:
		ruleOut()
	case y*float64(e.whole)/s < e.bound:
		// Scaled up to the whole task (latency included in every slice:
		// an upper bound), it still wins.
		f.phase[c] = phaseWhole
	case f.nclasses >= 2 && f.predict(c, float64(e.whole)) > skipFactor*e.bound:
		ruleOut() // its line, now from two sizes or more, says hopeless
	default:
		next := uint64(e.end-e.begin) * sliceGrowth
		if 2*next >= uint64(e.whole) {
			f.phase[c] = phaseWhole
		} else {
			f.slice[c] = uint32(next)
		}
	}
}

// Observers returns an observer that calls each of obs in order (nil
// entries skipped), so that a Placer and a profiler can both watch one
// scheduler.
func Observers(obs ...sched.Observer) sched.Observer {
	var list multiObserver
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	return list
}

type multiObserver []sched.Observer

func (m multiObserver) TaskRan(ev *sched.RunEvent) {
	for _, o := range m {
		o.TaskRan(ev)
	}
}
