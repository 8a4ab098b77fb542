package offline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// endPairClip is synthClip with its discontinuities (the root's x
// translation and the arm's rotation jump) at the clip's last frame,
// compressed with the curve codec, loaded.
func endPairClip(t *testing.T, frames int, segSeconds float64) (*Clip, anim.ClipView) {
	t.Helper()
	sk := synthSkeleton()
	c := synthClip(frames, 30, frames-1)
	cc, err := Compress(sk, c, CompressOptions{SegmentSeconds: segSeconds})
	if err != nil {
		t.Fatalf("Compress: %v", err)
	}
	return c, mustLoad(t, blobOf(t, sk, cc)).Clip(0)
}

// TestCurveEndPairHoldsToTheEnd: a discontinuity at the clip's last
// frame (a STEP key at its last time) is the last segment's end pair:
// sampled at the clip's duration the pose is the value after the jump,
// just before it the value held up to the end, both within the
// tolerance, playing forward and seeking, in a clip of one segment and of
// several (the end pair read from the segment header and as a record).
func TestCurveEndPairHoldsToTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name       string
		frames     int
		segSeconds float64
	}{{"one segment", 31, 2}, {"three segments", 61, 0.7}, {"three frames", 3, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			c, cv := endPairClip(t, tc.frames, tc.segSeconds)
			last := c.Frames - 1
			dur := float32(c.Duration())
			// The root's x jumps by 0.5 m at the last frame.
			root := &c.Tracks[0]
			held, after := root.Values[root.leftIndex(last)][0], root.Values[root.sampleIndex(last)][0]
			if after-held < 0.4 {
				t.Fatalf("the fixture has no jump at the last frame: %v then %v", held, after)
			}
			const tol = 1e-3 // m; the jump is 0.5 m
			check := func(what string, pose []float32, want float64) {
				t.Helper()
				if got := float64(pose[4]); math.Abs(got-want) > tol {
					t.Errorf("%s: root x %.5f, want %.5f", what, got, want)
				}
			}
			// Seeks (a fresh cursor each time).
			check("at the duration", sampleAt(t, cv, dur), after)
			check("past the duration (clamped)", sampleAt(t, cv, dur+1), after)
			before := float32(float64(last)-0.01) / float32(c.Rate)
			check("a hundredth of a frame before the end", sampleAt(t, cv, before), c.ValueAt(0, float64(before))[0])
			// Forward play through the end with one cursor, then back.
			j := anim.SampleJob{Blob: cv.Blob(), Inputs: make([]anim.SampleInput, 1), Cursors: make([]uint32, cv.CursorWords()),
				CursorStride: cv.CursorWords(), Poses: make([]float32, cv.Bones()*anim.PoseFloats), Bones: cv.Bones()}
			for _, tm := range []float32{0, before, dur, before, dur} {
				j.Inputs[0] = anim.SampleInput{Clip: cv.Offset(), Time: tm}
				if err := j.Run(); err != nil {
					t.Fatal(err)
				}
				want := after
				if tm < dur {
					want = c.ValueAt(0, float64(tm))[0]
				}
				check(fmt.Sprintf("forward/back at %g s", tm), j.Poses, want)
			}
		})
	}
}

// TestBlobOldVersionRefused: a blob of format version 2 (before the
// end pair bit) is refused with an error that names its version and
// what to do, not decoded wrong.
func TestBlobOldVersionRefused(t *testing.T) {
	sk := synthSkeleton()
	cc, err := Compress(sk, synthClip(31, 30, 30), CompressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := blobOf(t, sk, cc)
	if _, err := anim.Load(data); err != nil {
		t.Fatalf("current version: %v", err)
	}
	binary.LittleEndian.PutUint32(data[4:], format.BlobVersion-1)
	_, err = anim.Load(data)
	var be *anim.BlobError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), fmt.Sprintf("version %d, want %d", format.BlobVersion-1, format.BlobVersion)) || !strings.Contains(err.Error(), "rebuild") {
		t.Fatalf("version %d blob: %v, want a *BlobError naming the version and saying to rebuild it", format.BlobVersion-1, err)
	}
}
