package placement

import (
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// TestPlacerAdaptsBothWays: when the GPU slows down (another process
// fills its queue) Auto moves to the CPU within a few tasks, and when the
// load goes it moves back within ReprobeEvery tasks plus a few (a probe
// finds the GPU fast again).
func TestPlacerAdaptsBothWays(t *testing.T) {
	const reprobe = 10
	w := newWorld(Options{NoCoExec: true, TrackEvery: 1, ReprobeEvery: reprobe})
	fast := lin(100*time.Microsecond, 1)
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), fast
	w.warm(1000, 1<<20)
	const n = 1 << 20
	if where, _ := w.run(n); where != sched.GPU {
		t.Fatalf("not on the GPU before the load\n%s", dump(w.p))
	}
	w.gpu = lin(100*time.Microsecond, 30) // loaded: 3x slower than the CPU
	away := -1
	for i := range 50 {
		if where, _ := w.run(n); where == sched.AnyWorker {
			away = i + 1
			break
		}
	}
	if away < 0 || away > 8 {
		t.Fatalf("moved to the CPU after %d tasks of load, want at most 8\n%s", away, dump(w.p))
	}
	// Stays on the CPU while the load lasts, but for probes: at most one
	// per ReprobeEvery decisions (the first ones, while the GPU's
	// estimate still rises, within 2x of the CPU's).
	gpu := 0
	for range 30 {
		if where, _ := w.run(n); where == sched.GPU {
			gpu++
		}
	}
	if gpu > 30/reprobe+2 {
		t.Fatalf("%d of 30 loaded tasks on the GPU, want only probes\n%s", gpu, dump(w.p))
	}
	w.gpu = fast
	back := -1
	for i := range 100 {
		if where, _ := w.run(n); where == sched.GPU {
			// The probe itself, then the model's choice.
			if where2, _ := w.run(n); where2 == sched.GPU {
				back = i + 1
				break
			}
		}
	}
	if back < 0 || back > 2*reprobe+4 {
		t.Fatalf("back on the GPU after %d tasks, want at most %d\n%s", back, 2*reprobe+4, dump(w.p))
	}
}
