package placement

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/trace"
)

// Snapshot is a copy of a Placer's model and recent decisions, for
// printing (cmd/kbench) and tests.
type Snapshot struct {
	// CPUThreads is the CPU parallelism the model assumes.
	CPUThreads float64
	// Available lists the devices the Placer may choose ("cpu", "gpu",
	// "spu", and "cpu1" for one core with Options.OneCore).
	Available []string
	// Outstanding is the predicted work queued per device, by name.
	Outstanding map[string]time.Duration
	// Placed counts the placements made so far (untracked CPU-only ones excluded).
	Placed  uint64
	Kernels []KernelModel
	// Decisions are the most recent placements, oldest first.
	Decisions []Decision
}

// KernelModel is one kernel's learned costs.
type KernelModel struct {
	ID      sched.KernelID
	Name    string
	Devices []DeviceModel // devices with samples or tries, CPU first
	// CoExecEfficiency is the running ratio of measured to predicted
	// co-execution finish times (1 = as predicted; above 1 the two
	// devices slow each other down, as on lavapipe). Predictions for
	// co-execution are multiplied by it.
	CoExecEfficiency float64
	CoExecSamples    int
	// The exploration budget (Options.ExploreBudget): RunTime is the
	// kernel's tasks' predicted time on the best device, summed over its
	// placements; ExploreCost what explorations of other devices cost
	// beyond that prediction (completed ones measured, those in flight as
	// predicted), an unidentified device's up to the lower bound its
	// exploration was predicted from; SurpriseCost the rest of those
	// (see the package documentation).
	RunTime      time.Duration
	ExploreCost  time.Duration
	SurpriseCost time.Duration
}

// DeviceModel is one (kernel, device) cost model: service time =
// Latency + PerItem x effective items (on the CPU, items per thread: n /
// min(threads, pieces); elsewhere n), transfers and start-up latency
// included, fitted through the estimates of the size classes seen.
type DeviceModel struct {
	Device  string        // "cpu", "gpu", "spu", "cpu1" (one core: unsplit on one worker)
	Latency time.Duration // fixed cost per task
	PerItem float64       // nanoseconds per effective item
	Samples uint64        // completed tasks learned from
	Classes []ClassModel  // size classes with samples, smallest first
	// Tries counts placements (explorations included) over all classes.
	Tries uint64
}

// ClassModel is the estimate for one size class: tasks of 2^(Class-1) to
// 2^Class - 1 items.
type ClassModel struct {
	Class    int
	Items    float64       // effective items of its tasks (mean)
	Estimate time.Duration // estimated service time
	Samples  uint32
}

// Predict returns the model's line for a task of eff effective items, or
// -1 without samples.
func (m DeviceModel) Predict(eff float64) time.Duration {
	if m.Samples == 0 {
		return -1
	}
	return time.Duration(float64(m.Latency) + m.PerItem*eff)
}

// Decision is one placement: what the model predicted and what happened.
type Decision struct {
	Kernel sched.KernelID
	Begin  uint32 // the task's first work item
	Items  uint32
	// Placed is when it was placed, on the clock of sched.RunEvent
	// (sched.Nanotime).
	Placed int64
	Where  sched.Affinity // AnyWorker, GPU or SPU; GPU or SPU with Split > 0 for a split task
	Split  uint32         // items [0, Split) on Where, the rest on CPU workers
	// OneCore: on the CPU workers, unsplit (Options.OneCore).
	OneCore bool
	// Reason is "explore", "explore-slice" (a slice of the task probes
	// Where), "model", "probe" (another device re-measured), "coexec" or
	// "coexec-probe".
	Reason string
	// Predicted holds each device's predicted service time by name (absent:
	// not a candidate; -1: no samples yet).
	Predicted map[string]time.Duration
	// PredictedFinish is the predicted time from placement to completion
	// on the chosen device(s), queued work included.
	PredictedFinish time.Duration
	// Measured is the measured service time (co-execution: placement to
	// the later part's completion); 0 while running.
	Measured time.Duration
	Done     bool
	Failed   bool // failed, dropped or evicted: not learned from
}

// Trace returns the decision for a trace.Recorder (AddDecision), which
// shows it with the task's slices.
func (d Decision) Trace() trace.Decision {
	dev := "cpu"
	switch {
	case d.OneCore:
		dev = "cpu1"
	case d.Where == sched.GPU && d.Split > 0:
		dev = "gpu+cpu"
	case d.Where == sched.SPU && d.Split > 0:
		dev = "spu+cpu"
	case d.Where == sched.GPU:
		dev = "gpu"
	case d.Where == sched.SPU:
		dev = "spu"
	}
	return trace.Decision{Kernel: d.Kernel, Begin: d.Begin, End: d.Begin + d.Items, Placed: d.Placed, Device: dev,
		Split: d.Split, Reason: d.Reason, Predicted: maps.Clone(d.Predicted), Measured: d.Measured}
}

// Snapshot returns a copy of the model and the recent decisions.
func (p *Placer) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Snapshot{CPUThreads: p.cpuPar, Placed: p.placed, Outstanding: map[string]time.Duration{}}
	for dv := range numDevices {
		if p.avail[dv] && (dv != devSPU || p.opts.SPU != nil) && (dv != devCPU1 || p.opts.OneCore) {
			s.Available = append(s.Available, devNames[dv])
		}
		s.Outstanding[devNames[dv]] = time.Duration(p.outstanding[dv])
	}
	for _, km := range *p.kernels.Load() {
		if km == nil {
			continue
		}
		m := KernelModel{ID: km.id, Name: km.name, CoExecEfficiency: km.coEff, CoExecSamples: int(km.coN),
			RunTime: dur(km.runNs), ExploreCost: dur(km.spentNs + km.reservedNs), SurpriseCost: dur(km.surpriseNs)}
		for dv := range numDevices {
			f := &km.dev[dv]
			var tries uint64
			for _, t := range f.tries {
				tries += uint64(t)
			}
			if f.samples == 0 && tries == 0 {
				continue
			}
			dm := DeviceModel{Device: devNames[dv], Latency: time.Duration(f.a), PerItem: f.b, Samples: f.samples, Tries: tries}
			for c := range f.classes {
				if ce := &f.classes[c]; ce.n > 0 {
					dm.Classes = append(dm.Classes, ClassModel{Class: c, Items: ce.x, Estimate: time.Duration(ce.est), Samples: ce.n})
				}
			}
			m.Devices = append(m.Devices, dm)
		}
		s.Kernels = append(s.Kernels, m)
	}
	first := uint64(1)
	if p.decSeq > uint64(len(p.decs)) {
		first = p.decSeq - uint64(len(p.decs)) + 1
	}
	for seq := first; seq <= p.decSeq; seq++ {
		dr := p.decRec(seq)
		if dr == nil {
			continue
		}
		d := Decision{Kernel: dr.kernel, Begin: dr.begin, Items: dr.items, Placed: dr.placedAt, Where: devAffinity(int(dr.where)), Split: dr.split,
			OneCore: dr.where == devCPU1,
			Reason:  reasonNames[dr.reason], PredictedFinish: dur(dr.predFinish),
			Measured: dur(dr.measured), Done: dr.parts == 0, Failed: dr.failed,
			Predicted: map[string]time.Duration{}}
		for dv := range numDevices {
			if dr.cand[dv] {
				d.Predicted[devNames[dv]] = dur(dr.pred[dv])
			}
		}
		s.Decisions = append(s.Decisions, d)
	}
	return s
}

func dur(ns float64) time.Duration {
	if !finite(ns) {
		return -1
	}
	return time.Duration(ns)
}

// Model returns the learned model of kernel id (ok false if never seen).
func (s Snapshot) Model(id sched.KernelID) (KernelModel, bool) {
	for _, k := range s.Kernels {
		if k.ID == id {
			return k, true
		}
	}
	return KernelModel{}, false
}

// Device returns the model of the named device ("cpu", "gpu", "spu").
func (k KernelModel) Device(name string) (DeviceModel, bool) {
	for _, d := range k.Devices {
		if d.Device == name {
			return d, true
		}
	}
	return DeviceModel{}, false
}

// WriteTo prints the snapshot as three tables: the model per kernel and
// device (latency, time per item), the estimate of each size class, and
// the recent decisions with predicted and measured times.
func (s Snapshot) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	tw := tabwriter.NewWriter(cw, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(cw, "placer: %d placements, CPU threads %.0f, devices %s\n", s.Placed, s.CPUThreads, strings.Join(s.Available, ","))
	fmt.Fprintln(tw, "kernel\tname\tdevice\tlatency\tns/item\tsamples\ttries\tco-exec eff\t")
	for _, k := range s.Kernels {
		for _, d := range k.Devices {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%v\t%.3f\t%d\t%d\t%.2f (%d)\t\n", k.ID, k.Name, d.Device,
				d.Latency.Round(time.Microsecond/10), d.PerItem, d.Samples, d.Tries, k.CoExecEfficiency, k.CoExecSamples)
		}
	}
	tw.Flush()
	fmt.Fprintln(tw, "kernel\tdevice\titems\testimate\tsamples\t")
	for _, k := range s.Kernels {
		for _, d := range k.Devices {
			for _, c := range d.Classes {
				lo := 0
				if c.Class > 0 {
					lo = 1 << (c.Class - 1)
				}
				fmt.Fprintf(tw, "%d\t%s\t%d-%d\t%v\t%d\t\n", k.ID, d.Device, lo, 1<<c.Class-1, c.Estimate.Round(time.Microsecond/10), c.Samples)
			}
		}
	}
	tw.Flush()
	if len(s.Decisions) > 0 {
		fmt.Fprintln(tw, "kernel\titems\twhere\tsplit\treason\tpredicted cpu\tpredicted gpu\tpredicted finish\tmeasured\t")
		for _, d := range s.Decisions {
			meas := "running"
			switch {
			case d.Failed:
				meas = "failed/dropped"
			case d.Done:
				meas = d.Measured.String()
			}
			fmt.Fprintf(tw, "%d\t%d\t%v\t%d\t%s\t%s\t%s\t%v\t%s\t\n", d.Kernel, d.Items, Affinity(d.Where), d.Split, d.Reason,
				fmtPred(d.Predicted, "cpu"), fmtPred(d.Predicted, "gpu"), d.PredictedFinish, meas)
		}
		tw.Flush()
	}
	return cw.n, cw.err
}

func fmtPred(m map[string]time.Duration, dev string) string {
	v, ok := m[dev]
	switch {
	case !ok:
		return "-"
	case v < 0:
		return "?"
	}
	return v.String()
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
	return n, err
}

// The saved model's format (JSON), version 1.
type savedModel struct {
	Version    int           `json:"version"`
	CPUThreads float64       `json:"cpu_threads"`
	Kernels    []savedKernel `json:"kernels"`
}

type savedKernel struct {
	ID               sched.KernelID         `json:"id"`
	Name             string                 `json:"name"`
	Devices          map[string]savedDevice `json:"devices"`
	CoExecEfficiency float64                `json:"coexec_efficiency"`
	CoExecSamples    uint32                 `json:"coexec_samples"`
}

type savedDevice struct {
	LatencyNS float64 `json:"latency_ns"`
	PerItemNS float64 `json:"per_item_ns"`
	Samples   uint64  `json:"samples"`
	// Classes maps a size class (bits.Len32 of the item count) to its
	// estimate.
	Classes map[string]savedClass `json:"classes"`
	// Tries maps a size class to its placements (explorations included).
	Tries map[string]uint32 `json:"tries,omitempty"`
}

type savedClass struct {
	Samples    uint32    `json:"samples"`
	EstimateNS float64   `json:"estimate_ns"`
	Items      float64   `json:"items"`
	Recent     []float64 `json:"recent"` // the last (up to 3) samples, ns, oldest first
	// Inflation is the class's mean sample over its estimate (absent: 1).
	Inflation float64 `json:"inflation,omitempty"`
}

const savedVersion = 1

// maxSavedNs bounds the times of a saved size class (about 11 days): no
// task's run is longer, and the fit's weights stay finite and nonzero.
const maxSavedNs = 1e15

// ErrBadModel is wrapped by Load's errors about malformed files.
var ErrBadModel = errors.New("placement: bad saved model")

// Save writes the learned model (not the decisions or work in flight) as
// JSON, so that a program can Load it at its next start and skip the
// exploration phase.
func (p *Placer) Save(w io.Writer) error {
	p.mu.Lock()
	m := savedModel{Version: savedVersion, CPUThreads: p.cpuPar}
	for _, km := range *p.kernels.Load() {
		if km == nil {
			continue
		}
		sk := savedKernel{ID: km.id, Name: km.name, Devices: map[string]savedDevice{},
			CoExecEfficiency: km.coEff, CoExecSamples: km.coN}
		for dv := range numDevices {
			f := &km.dev[dv]
			if f.samples == 0 {
				continue
			}
			sd := savedDevice{LatencyNS: f.a, PerItemNS: f.b, Samples: f.samples, Classes: map[string]savedClass{}, Tries: map[string]uint32{}}
			for c, n := range f.tries {
				if n > 0 {
					sd.Tries[strconv.Itoa(c)] = n
				}
			}
			for c := range f.classes {
				if ce := &f.classes[c]; ce.n > 0 {
					sc := savedClass{Samples: ce.n, EstimateNS: ce.est, Items: ce.x, Inflation: ce.infl}
					for i := max(ce.n, 3) - 3; i < ce.n; i++ {
						sc.Recent = append(sc.Recent, ce.recent[i%3])
					}
					sd.Classes[strconv.Itoa(c)] = sc
				}
			}
			sk.Devices[devNames[dv]] = sd
		}
		if len(sk.Devices) > 0 {
			m.Kernels = append(m.Kernels, sk)
		}
	}
	p.mu.Unlock()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&m); err != nil {
		return fmt.Errorf("placement: save model: %w", err)
	}
	return nil
}

// Load reads a model written by Save and replaces the Placer's model of
// every kernel it holds (others are kept). A size class with saved samples
// counts as explored. A kernel whose registered name differs from the
// saved one (another program's kernel under the same ID) starts from
// scratch at its first placement. Nothing changes when the file is
// malformed (the error wraps ErrBadModel).
func (p *Placer) Load(r io.Reader) error {
	var m savedModel
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("%w: %w", ErrBadModel, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the model", ErrBadModel)
	}
	if m.Version != savedVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrBadModel, m.Version, savedVersion)
	}
	models := make([]*kernelModel, 0, len(m.Kernels))
	seen := map[sched.KernelID]bool{}
	for _, sk := range m.Kernels {
		if seen[sk.ID] {
			return fmt.Errorf("%w: kernel %d listed twice", ErrBadModel, sk.ID)
		}
		seen[sk.ID] = true
		eff := sk.CoExecEfficiency
		if eff == 0 {
			eff = 1
		}
		if !finite(eff) || eff <= 0 {
			return fmt.Errorf("%w: kernel %d: co-execution efficiency %v", ErrBadModel, sk.ID, eff)
		}
		km := &kernelModel{id: sk.ID, name: sk.Name, coEff: eff, coN: sk.CoExecSamples}
		for name, sd := range sk.Devices {
			dv := -1
			for i, n := range devNames {
				if n == name {
					dv = i
				}
			}
			if dv < 0 {
				return fmt.Errorf("%w: kernel %d: unknown device %q", ErrBadModel, sk.ID, name)
			}
			f := &km.dev[dv]
			f.a, f.b, f.samples, f.warm = sd.LatencyNS, sd.PerItemNS, sd.Samples, true
			vals := []float64{f.a, f.b}
			for cs, sc := range sd.Classes {
				c, err := strconv.Atoi(cs)
				if err != nil || c < 0 || c >= numClasses || sc.Samples == 0 || len(sc.Recent) != int(min(sc.Samples, 3)) {
					return fmt.Errorf("%w: kernel %d device %s: size class %q %+v", ErrBadModel, sk.ID, name, cs, sc)
				}
				ce := &f.classes[c]
				ce.n, ce.est, ce.x, ce.infl = sc.Samples, sc.EstimateNS, sc.Items, sc.Inflation
				f.nclasses++
				for i, v := range sc.Recent {
					ce.recent[(int(ce.n)-len(sc.Recent)+i)%3] = v
				}
				f.tries[c] = sc.Samples
				if sc.Inflation != 0 && !(sc.Inflation >= inflMin && sc.Inflation <= inflMax) {
					return fmt.Errorf("%w: kernel %d device %s: size class %q: inflation %v outside [%v, %v]", ErrBadModel, sk.ID, name, cs, sc.Inflation, inflMin, inflMax)
				}
				// Measured times are at least 1 ns (add clamps them): a
				// zero, or one past any run's length, gives the fit a
				// weight 1/est^2 of Inf or 0 and the model NaN.
				for _, v := range append([]float64{ce.est}, sc.Recent...) {
					if !(v >= 1 && v <= maxSavedNs) {
						return fmt.Errorf("%w: kernel %d device %s: size class %q: time %v ns outside [1, %g]", ErrBadModel, sk.ID, name, cs, v, maxSavedNs)
					}
				}
				vals = append(vals, ce.est, ce.x)
			}
			for cs, n := range sd.Tries {
				c, err := strconv.Atoi(cs)
				if err != nil || c < 0 || c >= numClasses {
					return fmt.Errorf("%w: kernel %d device %s: tries of size class %q", ErrBadModel, sk.ID, name, cs)
				}
				f.tries[c] = max(f.tries[c], n)
			}
			for _, v := range vals {
				if !finite(v) || v < 0 {
					return fmt.Errorf("%w: kernel %d device %s: value %v", ErrBadModel, sk.ID, name, v)
				}
			}
			if f.samples == 0 {
				return fmt.Errorf("%w: kernel %d device %s: no samples", ErrBadModel, sk.ID, name)
			}
		}
		models = append(models, km)
	}
	p.mu.Lock()
	for _, km := range models {
		p.install(km)
	}
	p.mu.Unlock()
	return nil
}
