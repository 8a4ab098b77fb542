package placement

import (
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// TestDecisionTraceCarriesPlacement: a Snapshot decision converted for
// the trace keeps the task's items, the time of placement, the device
// chosen, the predictions and the measured time.
func TestDecisionTraceCarriesPlacement(t *testing.T) {
	w := newWorld(Options{NoCoExec: true, TrackEvery: 1})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	before := sched.Nanotime()
	w.warm(1000, 1<<20)
	w.run(1 << 20)
	ds := w.p.Snapshot().Decisions
	d := ds[len(ds)-1]
	td := d.Trace()
	if td.Kernel != w.id || td.Begin != 0 || td.End != 1<<20 || td.Placed < before || td.Placed > sched.Nanotime() {
		t.Fatalf("trace decision %+v: wrong task or time", td)
	}
	if td.Device != "gpu" || td.Reason != d.Reason || td.Measured != d.Measured || td.Measured <= 0 {
		t.Fatalf("trace decision %+v from %+v", td, d)
	}
	if td.Predicted["cpu"] != d.Predicted["cpu"] || td.Predicted["gpu"] != d.Predicted["gpu"] || len(td.Predicted) != 2 {
		t.Fatalf("predictions %v, want %v", td.Predicted, d.Predicted)
	}
	d.Split = 100
	if got := d.Trace().Device; got != "gpu+cpu" {
		t.Fatalf("co-executed decision's device %q, want gpu+cpu", got)
	}
}
