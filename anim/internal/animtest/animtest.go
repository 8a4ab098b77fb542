// Package animtest holds the test helpers that the external tests of
// package anim (the runtime) and package anim/offline share: they build
// skeletons, clips and blobs through offline's public API. It is imported
// only by tests. Fixtures that offline's internal tests need too are
// package fixture's (anim/internal/animtest/fixture), which does not
// import offline; animtest wraps them in offline's types.
package animtest

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest/fixture"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// Chain builds, through the public types only, a chain skeleton of nb
// bones (each 10 cm from its parent, every fifth a second root's child
// when branch) and a smooth clip of the given frames at rate Hz: every
// bone rotates about a tilted axis by a sine, the root also translates and
// the last bone scales.
func Chain(nb, frames int, rate float64) (*offline.Skeleton, *offline.Clip) {
	sk := &offline.Skeleton{Name: "chain"}
	for b := 0; b < nb; b++ {
		sk.Names = append(sk.Names, "b"+string(rune('A'+b%26))+strings.Repeat("x", b/26))
		sk.Parents = append(sk.Parents, int32(b-1))
		tr := offline.IdentityTransform
		if b > 0 {
			tr.T = offline.Vec3{0, 0.1, 0}
		}
		sk.Rest = append(sk.Rest, tr)
	}
	c := &offline.Clip{Name: "wave", Rate: rate, Frames: frames, Tracks: make([]offline.Track, 3*nb)}
	for b := 0; b < nb; b++ {
		for f := 0; f < frames; f++ {
			t := float64(f) / rate
			tr := c.Tracks[3*b+0]
			tr.Frames = append(tr.Frames, int32(f))
			if b == 0 {
				tr.Values = append(tr.Values, [4]float64{0.3 * math.Sin(t), 0.05 * t, 0.2 * math.Cos(2*t), 0})
			} else {
				tr.Values = append(tr.Values, [4]float64{0, 0.1, 0, 0})
			}
			c.Tracks[3*b+0] = tr
			a := 0.6 * math.Sin(1.7*t+float64(b))
			ax := [3]float64{0.6, 0.64, 0.48} // unit
			s, co := math.Sin(a/2), math.Cos(a/2)
			rt := c.Tracks[3*b+1]
			rt.Frames = append(rt.Frames, int32(f))
			rt.Values = append(rt.Values, [4]float64{ax[0] * s, ax[1] * s, ax[2] * s, co})
			c.Tracks[3*b+1] = rt
			st := c.Tracks[3*b+2]
			st.Frames = append(st.Frames, int32(f))
			sc := 1.0
			if b == nb-1 && nb > 1 {
				sc = 1 + 0.2*math.Sin(t)
			}
			st.Values = append(st.Values, [4]float64{sc, sc, sc, 0})
			c.Tracks[3*b+2] = st
		}
	}
	return sk, c
}

// Blob builds a blob of cc and more clips, all on sk, and loads it,
// failing the test on an error; it returns the blob and its first clip.
func Blob(t testing.TB, sk *offline.Skeleton, cc *offline.CompressedClip, more ...*offline.CompressedClip) (*anim.Blob, anim.ClipView) {
	t.Helper()
	var b offline.Builder
	s := b.AddSkeleton(sk)
	for _, c := range append([]*offline.CompressedClip{cc}, more...) {
		if err := b.AddClip(s, c); err != nil {
			t.Fatalf("AddClip: %v", err)
		}
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatalf("Bytes: %v", err)
	}
	blob, err := anim.Load(data)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return blob, blob.Clip(0)
}

// SynthSkeleton is fixture.SynthSkeleton, a 4-bone chain.
func SynthSkeleton() *offline.Skeleton {
	sk := fixture.SynthSkeleton()
	return &offline.Skeleton{Name: "synth", Names: sk.Names, Parents: sk.Parents, Rest: sk.Rest}
}

// SynthClip is fixture.SynthTracks' clip of frames samples at rate Hz on
// SynthSkeleton (a discontinuity at frame jump when jump > 0).
func SynthClip(frames int, rate float64, jump int) *offline.Clip {
	return &offline.Clip{Name: "synth", Rate: rate, Frames: frames, Tracks: fixture.SynthTracks(frames, rate, jump, track)}
}

// SpinClip is fixture.SpinTracks' clip: SynthClip(frames, 30, jump) with
// the hand spinning too fast for any rotation component to be dropped.
func SpinClip(frames, jump int) *offline.Clip {
	return &offline.Clip{Name: "synth", Rate: 30, Frames: frames, Tracks: fixture.SpinTracks(frames, jump, track)}
}

func track(frames []int32, values [][4]float64) offline.Track {
	return offline.Track{Frames: frames, Values: values}
}

var cmu struct {
	once  sync.Once
	ims   []*offline.Import
	err   error
	blobs sync.Map // fmt.Sprintf("%+v", CompressOptions) -> []byte
}

// CMUImports imports the CMU clips (fixture.CMUClips) once per test
// binary; the caller must not modify them.
func CMUImports(tb testing.TB) []*offline.Import {
	tb.Helper()
	for _, p := range fixture.CMUClips {
		fixture.NeedFile(tb, p)
	}
	cmu.once.Do(func() {
		for _, p := range fixture.CMUClips {
			im, err := offline.LoadFile(p, offline.ImportOptions{})
			if err != nil {
				cmu.err = err
				return
			}
			cmu.ims = append(cmu.ims, im)
		}
	})
	if cmu.err != nil {
		tb.Fatal(cmu.err)
	}
	return cmu.ims
}

// CMU is a blob of the CMU clips compressed with opt, each on its own
// skeleton (31 bones), built once per options per test binary.
func CMU(tb testing.TB, opt offline.CompressOptions) *anim.Blob {
	tb.Helper()
	key := fmt.Sprintf("%+v", opt)
	data, ok := cmu.blobs.Load(key)
	if !ok {
		var b offline.Builder
		for _, im := range CMUImports(tb) {
			cc, err := offline.Compress(im.Skeleton, im.Clips[0], opt)
			if err != nil {
				tb.Fatalf("compressing %s with %+v: %v", im.Clips[0].Name, opt, err)
			}
			if err := b.AddClip(b.AddSkeleton(im.Skeleton), cc); err != nil {
				tb.Fatal(err)
			}
		}
		d, err := b.Bytes()
		if err != nil {
			tb.Fatal(err)
		}
		data, _ = cmu.blobs.LoadOrStore(key, d)
	}
	blob, err := anim.Load(data.([]byte))
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return blob
}

// Sample samples one character of cv at each time, forward, through
// one cursor (as a game does), returning a pose per time.
func Sample(t testing.TB, blob *anim.Blob, cv anim.ClipView, times []float32) [][]float32 {
	t.Helper()
	j := anim.SampleJob{
		Blob:         blob,
		Inputs:       make([]anim.SampleInput, 1),
		Cursors:      make([]uint32, cv.CursorWords()),
		CursorStride: cv.CursorWords(),
		Poses:        make([]float32, cv.Bones()*anim.PoseFloats),
		Bones:        cv.Bones(),
	}
	var out [][]float32
	for _, tm := range times {
		j.Inputs[0] = anim.SampleInput{Clip: cv.Offset(), Time: tm}
		if err := j.Run(); err != nil {
			t.Fatalf("sample at %v: %v", tm, err)
		}
		out = append(out, append([]float32(nil), j.Poses...))
	}
	return out
}

// RefLocal is the tests' own reference: the source clip at time t
// (clamped to the clip), lerp of translations and scales and slerp on the
// shorter arc of rotations between the two samples around t.
func RefLocal(c *offline.Clip, t float64) [][3][4]float64 {
	nb := len(c.Tracks) / 3
	if !(t > 0) {
		t = 0
	}
	x := t * c.Rate
	if x > float64(c.Frames-1) {
		x = float64(c.Frames - 1)
	}
	f0 := int(math.Floor(x))
	f1 := min(f0+1, c.Frames-1)
	u := x - float64(f0)
	out := make([][3][4]float64, nb)
	for b := 0; b < nb; b++ {
		for k := 0; k < 3; k++ {
			tr := c.Tracks[3*b+k]
			a, bb := tr.Values[f0], tr.Values[f1]
			if k != 1 {
				for i := 0; i < 3; i++ {
					out[b][k][i] = a[i] + (bb[i]-a[i])*u
				}
				continue
			}
			d := a[0]*bb[0] + a[1]*bb[1] + a[2]*bb[2] + a[3]*bb[3]
			if d < 0 {
				d = -d
				for i := range bb {
					bb[i] = -bb[i]
				}
			}
			w0, w1 := 1-u, u
			if d < 0.9999 {
				th := math.Acos(d)
				w0, w1 = math.Sin((1-u)*th)/math.Sin(th), math.Sin(u*th)/math.Sin(th)
			}
			var n float64
			for i := 0; i < 4; i++ {
				out[b][k][i] = w0*a[i] + w1*bb[i]
				n += out[b][k][i] * out[b][k][i]
			}
			for i := 0; i < 4; i++ {
				out[b][k][i] /= math.Sqrt(n)
			}
		}
	}
	return out
}

// mat is an affine transform: a 3x3 matrix and a translation.
type mat struct {
	r [3][3]float64
	p [3]float64
}

// qmat is unit quaternion q's rotation matrix.
func qmat(q [4]float64) [3][3]float64 {
	x, y, z, w := q[0], q[1], q[2], q[3]
	return [3][3]float64{
		{1 - 2*(y*y+z*z), 2 * (x*y - z*w), 2 * (x*z + y*w)},
		{2 * (x*y + z*w), 1 - 2*(x*x+z*z), 2 * (y*z - x*w)},
		{2 * (x*z - y*w), 2 * (y*z + x*w), 1 - 2*(x*x+y*y)},
	}
}

// Vertices returns each bone's three virtual Vertices in model space: on
// its local axes, at the local coordinates off (per bone and axis); nil
// off places them dist metres from the joint in model space (dist over
// the axis's scale, as Measure does) and returns those coordinates, for
// the decoded pose's Vertices to use the source's.
func Vertices(parents []int32, local [][3][4]float64, dist float64, off [][3]float64) ([][3][3]float64, [][3]float64) {
	n := len(parents)
	m := make([]mat, n)
	out := make([][3][3]float64, n)
	for b := 0; b < n; b++ {
		r := qmat(local[b][1])
		var l mat
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				l.r[i][j] = r[i][j] * local[b][2][j]
			}
			l.p[i] = local[b][0][i]
		}
		if p := parents[b]; p >= 0 {
			pm := m[p]
			var g mat
			for i := 0; i < 3; i++ {
				for j := 0; j < 3; j++ {
					for k := 0; k < 3; k++ {
						g.r[i][j] += pm.r[i][k] * l.r[k][j]
					}
				}
				g.p[i] = pm.p[i]
				for k := 0; k < 3; k++ {
					g.p[i] += pm.r[i][k] * l.p[k]
				}
			}
			l = g
		}
		m[b] = l
	}
	if off == nil {
		off = make([][3]float64, n)
		for b := range off {
			for a := 0; a < 3; a++ {
				l := math.Sqrt(m[b].r[0][a]*m[b].r[0][a] + m[b].r[1][a]*m[b].r[1][a] + m[b].r[2][a]*m[b].r[2][a])
				off[b][a] = dist
				if l > 0 {
					off[b][a] = dist / l
				}
			}
		}
	}
	for b := range m {
		for a := 0; a < 3; a++ {
			for i := 0; i < 3; i++ {
				out[b][a][i] = m[b].p[i] + m[b].r[i][a]*off[b][a]
			}
		}
	}
	return out, off
}

// PoseLocal is the first nb bones of pose p as translation, rotation and
// scale per bone (the order of RefLocal and of a bone's tracks).
func PoseLocal(p []float32, nb int) [][3][4]float64 {
	out := make([][3][4]float64, nb)
	for b := 0; b < nb; b++ {
		o := p[b*anim.PoseFloats:]
		out[b][1] = [4]float64{float64(o[0]), float64(o[1]), float64(o[2]), float64(o[3])}
		out[b][0] = [4]float64{float64(o[4]), float64(o[5]), float64(o[6])}
		out[b][2] = [4]float64{float64(o[8]), float64(o[9]), float64(o[10])}
	}
	return out
}
