package anim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// TestEventsAtEnds: events at 0 and at exactly the clip's duration
// survive compression and the blob; EventRange finds them as documented
// (an event at Duration needs t1 above it), and odd windows (NaN, empty,
// reversed) return nothing rather than everything.
func TestEventsAtEnds(t *testing.T) {
	sk, c := animtest.Chain(3, 31, 30)
	d := c.Duration()
	c.Events = []anim.Event{{Time: 0, Type: 1, Bone: 0}, {Time: float32(d / 2), Type: 2, Bone: 1}, {Time: float32(d), Type: 3, Bone: 2}}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		_, cv := animtest.Blob(t, sk, cc)
		if cv.NumEvents() != 3 {
			t.Fatalf("%v: %d events", codec, cv.NumEvents())
		}
		dur := cv.Duration()
		check := func(t0, t1 float32, want ...uint16) {
			t.Helper()
			got := cv.AppendEvents(nil, t0, t1)
			var types []uint16
			for _, e := range got {
				types = append(types, e.Type)
			}
			if len(types) != len(want) {
				t.Errorf("%v: events in [%v, %v) = %v, want %v", codec, t0, t1, types, want)
				return
			}
			for i := range want {
				if types[i] != want[i] {
					t.Errorf("%v: events in [%v, %v) = %v, want %v", codec, t0, t1, types, want)
				}
			}
		}
		check(0, dur, 1, 2)
		check(0, math.Nextafter32(dur, 2*dur), 1, 2, 3)
		check(dur, dur+1, 3)
		check(0, 0)
		check(-1, 0)
		check(-1, math.Nextafter32(0, 1), 1)
		check(dur, 0)
		nan := float32(math.NaN())
		check(nan, nan)
		check(float32(math.Inf(-1)), float32(math.Inf(1)), 1, 2, 3)
	}
	// an event past the end is refused naming it
	c.Events = append(c.Events, anim.Event{Time: float32(d) + 0.01, Type: 4})
	if _, err := offline.Compress(sk, c, offline.CompressOptions{}); err == nil || !strings.Contains(err.Error(), "event") {
		t.Errorf("event past the end: %v", err)
	}
}
