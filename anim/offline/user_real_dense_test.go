package offline_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
)

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

// TestUserRealDenseError: real clips (CMU and Boxing_Toes motion capture,
// Cesium Man's LINEAR glTF keys), 2.5 s of each, compressed with both
// codecs at the default 0.01 cm, checked at 7 times per source interval
// against this test's own lerp/slerp of the samples: p99 within 1.25 x
// and max within 5 x the tolerance.
func TestUserRealDenseError(t *testing.T) {
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
			blob, cv := userBlob(t, imp.Skeleton, cc)
			errs := denseErrors(t, imp.Skeleton, c, blob, cv)
			p99, mx := errs[len(errs)*99/100], errs[len(errs)-1]
			t.Logf("%s %v: ratio %.1f, dense p99 %.3g cm, max %.3g cm (Compress's p99 %.3g cm)", filepath.Base(f), codec, cc.Stats.Ratio(), p99*100, mx*100, cc.Stats.P99*100)
			if !(p99 <= 1.25e-4) || !(mx <= 5e-4) {
				t.Errorf("%s %v: dense p99 %.3g cm, max %.3g cm against the source's lerp/slerp; the tolerance is 0.01 cm", f, codec, p99*100, mx*100)
			}
		}
	}
}
