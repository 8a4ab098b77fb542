package offline_test

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// denseErrors samples the compressed clip at 7 times per source interval
// (and at the samples) and returns every (bone, time) error in metres at
// the virtual vertices, against refLocal.
func denseErrors(t *testing.T, sk *offline.Skeleton, c *offline.Clip, blob *anim.Blob, cv anim.ClipView) []float64 {
	var times []float32
	for f := 0; f < c.Frames; f++ {
		for k := 0; k < 7 && (k == 0 || f < c.Frames-1); k++ {
			times = append(times, float32((float64(f)+float64(k)/7)/c.Rate))
		}
	}
	poses := animtest.Sample(t, blob, cv, times)
	nb := sk.NumBones()
	var errs []float64
	for i, tm := range times {
		ref, off := animtest.Vertices(sk.Parents, animtest.RefLocal(c, float64(tm)), 0.03, nil)
		got, _ := animtest.Vertices(sk.Parents, animtest.PoseLocal(poses[i], nb), 0.03, off)
		for b := 0; b < nb; b++ {
			e := 0.0
			for a := 0; a < 3; a++ {
				d := math.Hypot(math.Hypot(ref[b][a][0]-got[b][a][0], ref[b][a][1]-got[b][a][1]), ref[b][a][2]-got[b][a][2])
				if !(d <= e) {
					e = d
				}
			}
			errs = append(errs, e)
		}
	}
	sort.Float64s(errs)
	return errs
}

// TestDenseErrorBothCodecs compresses a synthetic chain with both
// codecs at three tolerances and checks the decoded poses at dense times
// against this test's own lerp/slerp of the source: the 99th percentile
// within 1.25 x Tolerance (the docs promise p99 <= Tolerance at samples
// and BetweenPoints times; the dense grid differs) and the maximum within
// 4 x Tolerance.
func TestDenseErrorBothCodecs(t *testing.T) {
	sk, c := animtest.Chain(6, 61, 30)
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		for _, tol := range []float64{0.0001, 0.001, 0.01} {
			cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: tol, Codec: codec})
			if err != nil {
				t.Fatalf("%v tol %v: %v", codec, tol, err)
			}
			blob, cv := animtest.Blob(t, sk, cc)
			errs := denseErrors(t, sk, c, blob, cv)
			p99 := errs[len(errs)*99/100]
			mx := errs[len(errs)-1]
			t.Logf("%v tol %v: dense p99 %.3g max %.3g (stats p99 %.3g)", codec, tol, p99, mx, cc.Stats.P99)
			if !(p99 <= 1.25*tol) || !(mx <= 4*tol) {
				t.Errorf("%v tol %v: dense p99 %.3g max %.3g, want p99 <= %.3g, max <= %.3g", codec, tol, p99, mx, 1.25*tol, 4*tol)
			}
		}
	}
}

// firstFrames returns the clip's first n frames (a user trimming a take).
func firstFrames(c *offline.Clip, n int) *offline.Clip {
	if n >= c.Frames {
		return c
	}
	r := &offline.Clip{Name: c.Name, Rate: c.Rate, Frames: n, Between: c.Between, Tracks: make([]offline.Track, len(c.Tracks))}
	for i, tr := range c.Tracks {
		for j, f := range tr.Frames {
			if int(f) < n && !(int(f) == n-1 && j+1 < len(tr.Frames) && tr.Frames[j+1] == f) {
				r.Tracks[i].Frames = append(r.Tracks[i].Frames, f)
				r.Tracks[i].Values = append(r.Tracks[i].Values, tr.Values[j])
			}
		}
	}
	return r
}

// TestRealDenseError: real clips (CMU and Boxing_Toes motion capture,
// Cesium Man's LINEAR glTF keys), 2.5 s of each, compressed with both
// codecs at the default 0.01 cm, checked at 7 times per source interval
// against this test's own lerp/slerp of the samples: p99 within 1.25 x
// and max within 5 x the tolerance.
func TestRealDenseError(t *testing.T) {
	files := []string{
		"/usr/share/assimp/models/BVH/01_01.bvh",
		"/usr/share/assimp/models/BVH/Boxing_Toes.bvh",
		filepath.Join("..", "..", "cmd", "crowd", "testdata", "cesium_man.gltf"),
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Logf("%s: not installed", f)
			continue
		}
		imp, err := offline.LoadFile(f, offline.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := imp.Clips[0]
		c = firstFrames(c, int(2.5*c.Rate)+1)
		if err := c.Validate(imp.Skeleton); err != nil {
			t.Fatalf("%s: trimmed clip: %v", f, err)
		}
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			cc, err := offline.Compress(imp.Skeleton, c, offline.CompressOptions{Codec: codec})
			if err != nil {
				t.Fatalf("%s %v: %v", f, codec, err)
			}
			blob, cv := animtest.Blob(t, imp.Skeleton, cc)
			errs := denseErrors(t, imp.Skeleton, c, blob, cv)
			p99, mx := errs[len(errs)*99/100], errs[len(errs)-1]
			t.Logf("%s %v: ratio %.1f, dense p99 %.3g cm, max %.3g cm (Compress's p99 %.3g cm)", filepath.Base(f), codec, cc.Stats.Ratio(), p99*100, mx*100, cc.Stats.P99*100)
			if !(p99 <= 1.25e-4) || !(mx <= 5e-4) {
				t.Errorf("%s %v: dense p99 %.3g cm, max %.3g cm against the source's lerp/slerp; the tolerance is 0.01 cm", f, codec, p99*100, mx*100)
			}
		}
	}
}
