package trace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// Decision is where an Auto task was placed and why: a Placer's decision
// (placement.Decision.Trace converts one). The Chrome trace shows it in the
// arguments of the task's slices (under "auto") and as an instant event
// at the placement on the "other" track; the SVG timeline outlines the
// task's bars and adds it to their tooltip.
type Decision struct {
	Kernel     sched.KernelID
	Begin, End uint32 // the task's work items
	Placed     int64  // sched.Nanotime() of the placement
	// Device is "cpu", "gpu" or "spu"; "gpu+cpu" when the task was split
	// (items [Begin, Begin+Split) on the GPU, the rest on CPU workers).
	Device string
	Split  uint32
	Reason string // "model", "explore", "probe", "coexec", ...
	// Predicted is each candidate device's predicted service time (<0: no
	// prediction yet).
	Predicted map[string]time.Duration
	// Measured is the measured service time on the chosen device(s) (0:
	// not measured: still running, or not tracked).
	Measured time.Duration
}

// AddDecision records d, to be matched with the task slices of its kernel
// and items that start after d.Placed. Safe for concurrent use; it
// allocates, so record decisions after the run (from a Placer's history)
// rather than while tasks run.
func (r *Recorder) AddDecision(d Decision) {
	r.decMu.Lock()
	r.decisions = append(r.decisions, d)
	r.decMu.Unlock()
}

// Decisions returns a copy of the recorded decisions, in order of
// placement.
func (r *Recorder) Decisions() []Decision {
	r.decMu.Lock()
	ds := slices.Clone(r.decisions)
	r.decMu.Unlock()
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Placed < ds[j].Placed })
	return ds
}

// decisionIndex finds the decision of a task slice: the latest decision
// of the same kernel placed no later than the slice started whose items
// contain the slice's.
type decisionIndex map[sched.KernelID][]*Decision

func newDecisionIndex(ds []Decision) decisionIndex {
	ix := decisionIndex{}
	for i := range ds {
		ix[ds[i].Kernel] = append(ix[ds[i].Kernel], &ds[i])
	}
	return ix
}

func (ix decisionIndex) of(e *Event) *Decision {
	if e.Kind != KindTask || len(ix) == 0 {
		return nil
	}
	list := ix[e.Kernel] // sorted by Placed
	i := sort.Search(len(list), func(i int) bool { return list[i].Placed > e.Start })
	for i--; i >= 0; i-- {
		d := list[i]
		if d.Begin <= e.Begin && e.End <= d.End {
			return d
		}
	}
	return nil
}

// args is the decision's Chrome trace arguments, in microseconds.
func (d *Decision) args() map[string]any {
	a := map[string]any{"device": d.Device, "reason": d.Reason, "items": fmt.Sprintf("[%d,%d)", d.Begin, d.End)}
	if d.Split > 0 {
		a["split"] = d.Split
	}
	pred := map[string]any{}
	for dev, p := range d.Predicted {
		if p < 0 {
			pred[dev] = nil // no prediction yet
		} else {
			pred[dev] = usOf(p)
		}
	}
	a["predicted_us"] = pred
	if d.Measured > 0 {
		a["measured_us"] = map[string]any{d.Device: usOf(d.Measured)}
	}
	return a
}

func usOf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// text is the decision in words, for the SVG timeline's tooltips.
func (d *Decision) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "auto → %s (%s); predicted", d.Device, d.Reason)
	devs := make([]string, 0, len(d.Predicted))
	for dev := range d.Predicted {
		devs = append(devs, dev)
	}
	sort.Strings(devs)
	for i, dev := range devs {
		sep := ","
		if i == 0 {
			sep = ""
		}
		if p := d.Predicted[dev]; p < 0 {
			fmt.Fprintf(&b, "%s %s ?", sep, dev)
		} else {
			fmt.Fprintf(&b, "%s %s %.1f µs", sep, dev, usOf(p))
		}
	}
	if d.Measured > 0 {
		fmt.Fprintf(&b, "; measured %s %.1f µs", d.Device, usOf(d.Measured))
	}
	return b.String()
}
