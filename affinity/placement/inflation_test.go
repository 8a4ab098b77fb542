package placement

import (
	"testing"
	"time"
)

// TestNoisyFanOutLosesToSteadyOneCore: CPU workers whose every fourth task
// waits 3x as long (a piece preempted by another process) cost 1.5x their
// undisturbed time on average; one core, steady, is slower than the
// undisturbed fan-out but faster on average, and the model, which
// predicts the mean of a device's runs, chooses it. Without the noise the
// workers win.
func TestNoisyFanOutLosesToSteadyOneCore(t *testing.T) {
	freezeClock(t)
	for _, noisy := range []bool{true, false} {
		w := newWorld(Options{OneCore: true, CPUThreads: 2, NoCoExec: true, TrackEvery: 1, ReprobeEvery: -1})
		w.pieces = 2
		slow := false
		fan := lin(5*time.Microsecond, 1) // 70.5 us at 65536 items; 105.8 us on average with the noise
		w.cpu = func(n uint32) time.Duration {
			if slow {
				return 3 * fan(n)
			}
			return fan(n)
		}
		w.cpu1 = lin(time.Microsecond, 1.4) // 92.8 us
		w.gpu = lin(time.Millisecond, 100)
		const n = 1 << 16
		one := 0
		for i := range 400 {
			slow = noisy && i%4 == 3
			w.run(n)
			if i >= 200 && w.oneCore {
				one++
			}
		}
		if noisy && one < 190 {
			t.Fatalf("noisy workers: %d of the last 200 tasks on one core, want nearly all\n%s", one, dump(w.p))
		}
		if !noisy && one > 10 {
			t.Fatalf("steady workers: %d of the last 200 tasks on one core, want nearly none\n%s", one, dump(w.p))
		}
	}
}
