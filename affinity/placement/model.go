package placement

import (
	"math"
	"math/bits"

	"github.com/vkjobs/vkjobs/sched"
)

// Devices of the model, in the order of the per-device arrays. devCPU1 is
// not a device of its own but a way to use the CPU workers: the task runs
// unsplit, on one worker (Options.OneCore).
const (
	devCPU = iota
	devGPU
	devSPU
	devCPU1
	numDevices
)

var devNames = [numDevices]string{"cpu", "gpu", "spu", "cpu1"}

// hwDev is the device whose events report dv's work: one-core tasks run
// on the CPU workers.
func hwDev(dv int) int {
	if dv == devCPU1 {
		return devCPU
	}
	return dv
}

// isExecutor reports whether dv runs on an executor (a part of a task can
// be split off to it: slice probes, co-execution).
func isExecutor(dv int) bool { return dv == devGPU || dv == devSPU }

func devAffinity(d int) sched.Affinity {
	switch d {
	case devGPU:
		return sched.GPU
	case devSPU:
		return sched.SPU
	}
	return sched.AnyWorker
}

func devOf(a sched.Affinity) (int, bool) {
	switch a {
	case sched.AnyWorker:
		return devCPU, true
	case sched.GPU:
		return devGPU, true
	case sched.SPU:
		return devSPU, true
	}
	return 0, false
}

// numClasses is the number of size classes: class c holds tasks of n work
// items with bits.Len32(n) == c, i.e. [2^(c-1), 2^c).
const numClasses = 33

func sizeClass(n uint32) int { return bits.Len32(n) }

// classEst is the estimate of one size class's service time.
type classEst struct {
	n      uint32     // samples
	est    float64    // estimated service time, ns
	x      float64    // effective items of the class's tasks (running mean)
	recent [3]float64 // the last three samples, recent[(n-1)%3] the newest
	// infl is the mean ratio of a sample to the estimate it found
	// (exponentially decaying, each ratio clipped to [inflMin, inflMax];
	// 0 until the fourth sample: 1). The estimate follows the faster runs;
	// infl scales it up to the mean that the device's tasks cost.
	infl float64
}

// Inflation: each sample's ratio to the estimate it found is clipped to
// [inflMin, inflMax] and averaged with weight inflWeight.
const (
	inflMin    = 0.5
	inflMax    = 3
	inflWeight = 1.0 / 16
)

// inflation returns the class's mean sample over its estimate (1 before
// it is known).
func (ce *classEst) inflation() float64 {
	if ce.infl <= 0 {
		return 1
	}
	return ce.infl
}

// costFit is one (kernel, device) cost model.
//
// Each size class keeps a robust estimate of the service time of its
// tasks: the median of its first three samples (exploration), then an
// exponentially decaying average. A sample faster than the estimate pulls
// it down at once by half the difference; a slower one pulls it up by
// decay times the difference (at most 3*decay times the estimate), and
// only when the median of the last three samples is slower too. Interference from other
// work on a shared machine only ever makes a run slower, so isolated slow
// outliers (a GC pause, a page-fault storm, another process) do not move
// the estimate, while a lasting change (the device got slower or faster)
// takes over within a few samples, and one probe of a device that got
// faster is enough to bring it back.
//
// That estimate follows a low quantile of the samples, not their mean,
// and what a task costs is the mean: a device whose runs are often slowed
// (CPU workers fanning a task out on a loaded machine, which wait for
// their slowest piece) would look as fast as its undisturbed runs, and
// beat a steadier device (one core) that costs less on average. So each
// class also keeps its inflation, the decaying mean of each sample's
// ratio to the estimate it found (clipped to [1/2, 3], so that one
// pause moves it by at most an eighth), and predictions from the class
// are the estimate times the inflation: the expected time. A device whose
// runs are not disturbed has an inflation of 1. Tracking the mean alone
// (rejected) would give up the estimate's quick fall when a device gets
// faster and its deafness to isolated outliers; the product keeps both
// and lets the spread of the samples count.
//
// Across classes the model is a line, service time = a + b*x ns (fixed
// latency plus time per effective item, transfers included), fitted by
// least squares on relative error through the class estimates (weights
// 1/est^2: a 10 us class and a 10 ms class count the same). A task in a
// class with samples is predicted from that class's estimate, corrected
// along the line's slope for its exact size; other sizes from the line.
type costFit struct {
	a, b     float64 // fitted latency (ns) and time per effective item (ns)
	samples  uint64
	nclasses int  // classes with samples
	warm     bool // the first (warm-up) run was seen
	classes  [numClasses]classEst
	tries    [numClasses]uint32 // placements per size class (in flight included)
	once     [numClasses]bool   // explore the class once only (see Place)
	// Slice probing of an executor device (see Place), per size class of
	// the whole tasks: the phase, the size of the next slice and whether
	// one is in flight.
	phase     [numClasses]uint8
	slice     [numClasses]uint32
	sliceBusy [numClasses]bool
	// floor is the longest slice of the class's tasks measured: a lower
	// bound on a whole task's time, which predictions of a class without
	// samples of its own respect (0: none).
	floor [numClasses]float64
}

// Phases of exploring an executor device by slices, per size class.
const (
	phaseSlices uint8 = iota // probing with growing slices of the class's tasks
	phaseWhole               // the slices say it may win: explore whole tasks
	phaseOut                 // a slice took longer than the best device's whole task
)

// add learns one measured service time y (ns) of a task of x effective
// items in size class c. A probe's run (a re-measurement of a device the
// model had stopped choosing) is the only news about that device: it
// moves the estimate without waiting for the median of three, with weight
// at least 1/2.
func (f *costFit) add(c int, x, y, decay float64, probe bool) {
	y = max(y, 1)
	ce := &f.classes[c]
	if ce.n == 0 {
		f.nclasses++
	}
	ce.recent[ce.n%3] = y
	if ce.n < math.MaxUint32 {
		ce.n++
	}
	if ce.n > 3 {
		r := min(max(y/ce.est, inflMin), inflMax)
		ce.infl = ce.inflation() + inflWeight*(r-ce.inflation())
	}
	switch {
	case ce.n <= 3:
		ce.x = (ce.x*float64(ce.n-1) + x) / float64(ce.n)
		ce.est = median(ce.recent[:ce.n])
	case y < ce.est:
		ce.est += 0.5 * (y - ce.est)
		ce.x += decay * (x - ce.x)
	case probe:
		ce.est += max(decay, 0.5) * min(y-ce.est, 3*ce.est)
		ce.x += decay * (x - ce.x)
	default:
		if m := median(ce.recent[:]); m > ce.est {
			ce.est += decay * min(m-ce.est, 3*ce.est)
		}
		ce.x += decay * (x - ce.x)
	}
	f.samples++
	f.refit()
}

// median of up to three values; of two, the smaller (interference only
// adds time).
func median(v []float64) float64 {
	switch len(v) {
	case 1:
		return v[0]
	case 2:
		return min(v[0], v[1])
	}
	return max(min(v[0], v[1]), min(max(v[0], v[1]), v[2]))
}

// refit fits the line through the class estimates, keeping a, b >= 0.
// With a single class the slope is not identifiable: the previous latency
// is kept (capped at the estimate) and the slope explains the rest.
func (f *costFit) refit() {
	var w, sx, sy, sxx, sxy float64
	k := 0
	for i := range f.classes {
		ce := &f.classes[i]
		if ce.n == 0 {
			continue
		}
		k++
		wi := 1 / (ce.est * ce.est)
		w += wi
		sx += wi * ce.x
		sy += wi * ce.est
		sxx += wi * ce.x * ce.x
		sxy += wi * ce.x * ce.est
	}
	if k == 0 {
		return
	}
	mx, my := sx/w, sy/w
	if det := w*sxx - sx*sx; k >= 2 && det > 1e-9*w*sxx {
		b := (w*sxy - sx*sy) / det
		a := (sy - b*sx) / w
		switch {
		case b < 0:
			a, b = my, 0
		case a < 0:
			a, b = 0, sxy/sxx
		}
		f.a, f.b = a, b
		return
	}
	a := min(f.a, my)
	if mx > 0 {
		f.a, f.b = a, (my-a)/mx
	} else {
		f.a, f.b = my, 0
	}
}

// predict returns the predicted service time of a task of x effective
// items in size class c, +Inf without samples.
func (f *costFit) predict(c int, x float64) float64 {
	if f.samples == 0 {
		return math.Inf(1)
	}
	if ce := &f.classes[c]; ce.n > 0 {
		return max(ce.est+f.b*(x-ce.x), ce.est/2) * ce.inflation()
	}
	return max(f.a+f.b*x, f.floor[c])
}

// cost is the predicted cost of running a task of x effective items in
// size class c on the device beyond ref (the best device's predicted
// time), for the exploration budget; 0 when ref is unknown. From the
// class's samples, or the line once two classes identify its latency and
// slope. Before that the line is a guess (from one class, all latency or
// all time per item), so the cost is a lower bound: time grows with
// items, so a task takes at least the estimate of the largest sampled
// class below it and the longest slice of it measured (0 without
// either). A lower bound, not an upper one: scaling one small sample up
// by items would make a device whose small tasks are all latency look
// hopeless at every size, and never explored where it wins.
// floor, the shortest time the device took for any kernel's task (0:
// none), is a lower bound too: the device's fixed latency (a GPU's
// dispatch, transfer and fence) is every kernel's, so a kernel's first
// run on a device whose latency alone exceeds the best's task is priced
// at that latency, not at nothing. known reports whether the cost is
// predicted (true) or a lower bound.
func (f *costFit) cost(c int, x, ref, floor float64) (cost float64, known bool) {
	known = f.classes[c].n > 0 || f.nclasses >= 2
	if !finite(ref) {
		return 0, known
	}
	var t float64
	if known {
		t = f.predict(c, x)
	} else {
		t = max(f.floor[c], floor)
		for i := c - 1; i >= 0; i-- {
			if ce := &f.classes[i]; ce.n > 0 {
				t = max(t, ce.est)
				break
			}
		}
	}
	return max(0, t-ref), known
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
