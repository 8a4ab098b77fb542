package trace

import (
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestScopeAndFrameAllocateNothing: the package doc promises that
// recording "appends a fixed-size event to a preallocated per-thread
// buffer: no lock, no allocation" — for user scopes and frame markers
// too, on a thread's track and on the shared one, and once the buffer
// is full (dropped events are counted, never grown).
func TestScopeAndFrameAllocateNothing(t *testing.T) {
	r := New(2, 64)
	for _, thread := range []int{0, 1, -1} {
		if a := testing.AllocsPerRun(100, func() {
			r.Scope(thread, "user", sched.Nanotime())
		}); a != 0 {
			t.Errorf("Scope on thread %d allocates %.1f times", thread, a)
		}
	}
	if a := testing.AllocsPerRun(100, func() { r.Frame(7) }); a != 0 {
		t.Errorf("Frame allocates %.1f times", a)
	}
	if r.Dropped() == 0 {
		t.Fatalf("64-event buffers took over 300 events without dropping any")
	}
	r.SetEnabled(false)
	if a := testing.AllocsPerRun(100, func() { r.Scope(0, "off", 0) }); a != 0 {
		t.Errorf("a disabled Recorder's Scope allocates %.1f times", a)
	}
}
