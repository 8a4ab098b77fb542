package anim_test

import (
	"math"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/kernels"
)

// A cursor carried from a clip of one blob to the clip at the same offset
// of another blob (a hot-reloaded blob, or two blobs a program swaps) must
// not decode the new clip from the old one's stream state: the pose is
// the one a fresh cursor gives.
func TestCursorAcrossBlobs(t *testing.T) {
	withTimeout(t, 60*time.Second, func() {
		sk, c := animtest.Chain(6, 61, 30)
		_, c2 := animtest.Chain(6, 61, 30) // another clip of the same skeleton: the bones bend the other way
		for i := 1; i < len(c2.Tracks); i += 3 {
			for f, v := range c2.Tracks[i].Values {
				c2.Tracks[i].Values[f] = [4]float64{-v[0], -v[1], -v[2], v[3]}
			}
		}
		_, a := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve))
		_, b := animtest.Blob(t, sk, rvCompress(t, sk, c2, anim.CodecCurve))
		if a.Offset() != b.Offset() {
			t.Skipf("clips at offsets %d and %d: not the shape under test", a.Offset(), b.Offset())
		}
		cur := make([]uint32, max(a.CursorWords(), b.CursorWords()))
		pose := make([]kernels.Transform, a.Bones())
		bad, worst := 0, 0.0
		for i := range 60 {
			tm := float32(i) / 30
			if err := a.Sample(tm, cur, pose); err != nil {
				t.Fatal(err)
			}
			if err := b.Sample(tm+0.01, cur, pose); err != nil {
				t.Fatal(err)
			}
			if want := rvFresh(t, b, tm+0.01); !rvEqual(pose, want) {
				bad++
				for k := range pose {
					for a := range 4 {
						worst = max(worst, math.Abs(float64(pose[k].Rot[a]-want[k].Rot[a])))
					}
				}
			}
		}
		if bad > 0 {
			t.Errorf("a cursor from blob A used on blob B's clip at the same offset: %d of 60 poses differ from a fresh cursor's (rotation components off by up to %.3g)", bad, worst)
		}
	})
}
