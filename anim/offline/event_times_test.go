package offline_test

import (
	"testing"

	"github.com/vkjobs/vkjobs/anim"
)

// Resampling a long clip to a rate that shortens it clamps its late events
// to the new duration; the clamped float32 time must still validate (the
// crowd demo's -clip-rate 0.3 on the CMU clip 01_03 failed here).
func TestResampleClampsLateEventsInFloat32(t *testing.T) {
	c := edgeCl(1, 37*120+1, 120) // 37 s at 120 Hz
	c.Events = []anim.Event{{Time: 36.9, Type: 1}}
	if err := c.Validate(nil); err != nil {
		t.Fatal(err)
	}
	r, err := c.Resample(0.3) // 12 frames: 36.67 s
	if err != nil {
		t.Fatalf("Resample(0.3) of a valid 37 s clip: %v", err)
	}
	if d := r.Duration(); r.Events[0].Time > float32(d) {
		t.Errorf("event at %v s after the clip's %v s", r.Events[0].Time, d)
	}
}

// An event at the last frame of a long clip, its time the float32 nearest
// the duration, is inside the clip.
func TestValidateEventAtLongClipEnd(t *testing.T) {
	c := edgeCl(1, 4400+1, 120) // 36.666... s
	c.Events = []anim.Event{{Time: float32(c.Duration()), Type: 1}}
	if err := c.Validate(nil); err != nil {
		t.Errorf("event at the clip's end: %v", err)
	}
}
