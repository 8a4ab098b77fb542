package offline_test

import (
	"errors"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// userChain builds, through the public types only, a chain skeleton of nb
// bones (each 10 cm from its parent, every fifth a second root's child
// when branch) and a smooth clip of the given frames at rate Hz: every
// bone rotates about a tilted axis by a sine, the root also translates and
// the last bone scales.
func userChain(nb, frames int, rate float64) (*offline.Skeleton, *offline.Clip) {
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

func userBlob(t *testing.T, sk *offline.Skeleton, cc *offline.CompressedClip) (*anim.Blob, anim.ClipView) {
	t.Helper()
	var b offline.Builder
	s := b.AddSkeleton(sk)
	if err := b.AddClip(s, cc); err != nil {
		t.Fatalf("AddClip: %v", err)
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

// userSample samples one character of cv at each time, forward, through
// one cursor (as a game does), returning a pose per time.
func userSample(t *testing.T, blob *anim.Blob, cv anim.ClipView, times []float32) [][]float32 {
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

// refLocal is this test's own reference: the source clip at time t
// (clamped to the clip), lerp of translations and scales and slerp on the
// shorter arc of rotations between the two samples around t.
func refLocal(c *offline.Clip, t float64) [][3][4]float64 {
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

type mat struct {
	r [3][3]float64
	p [3]float64
}

func qmat(q [4]float64) [3][3]float64 {
	x, y, z, w := q[0], q[1], q[2], q[3]
	return [3][3]float64{
		{1 - 2*(y*y+z*z), 2 * (x*y - z*w), 2 * (x*z + y*w)},
		{2 * (x*y + z*w), 1 - 2*(x*x+z*z), 2 * (y*z - x*w)},
		{2 * (x*z - y*w), 2 * (y*z + x*w), 1 - 2*(x*x+y*y)},
	}
}

// vertices returns each bone's three virtual vertices in model space: on
// its local axes, at the local coordinates off (per bone and axis); nil
// off places them dist metres from the joint in model space (dist over
// the axis's scale, as Measure does) and returns those coordinates, for
// the decoded pose's vertices to use the source's.
func vertices(parents []int32, local [][3][4]float64, dist float64, off [][3]float64) ([][3][3]float64, [][3]float64) {
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

func poseLocal(p []float32, nb int) [][3][4]float64 {
	out := make([][3][4]float64, nb)
	for b := 0; b < nb; b++ {
		o := p[b*anim.PoseFloats:]
		out[b][1] = [4]float64{float64(o[0]), float64(o[1]), float64(o[2]), float64(o[3])}
		out[b][0] = [4]float64{float64(o[4]), float64(o[5]), float64(o[6])}
		out[b][2] = [4]float64{float64(o[8]), float64(o[9]), float64(o[10])}
	}
	return out
}

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
	poses := userSample(t, blob, cv, times)
	nb := sk.NumBones()
	var errs []float64
	for i, tm := range times {
		ref, off := vertices(sk.Parents, refLocal(c, float64(tm)), 0.03, nil)
		got, _ := vertices(sk.Parents, poseLocal(poses[i], nb), 0.03, off)
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

// TestUserDenseErrorBothCodecs compresses a synthetic chain with both
// codecs at three tolerances and checks the decoded poses at dense times
// against this test's own lerp/slerp of the source: the 99th percentile
// within 1.25 x Tolerance (the docs promise p99 <= Tolerance at samples
// and BetweenPoints times; the dense grid differs) and the maximum within
// 4 x Tolerance.
func TestUserDenseErrorBothCodecs(t *testing.T) {
	sk, c := userChain(6, 61, 30)
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		for _, tol := range []float64{0.0001, 0.001, 0.01} {
			cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: tol, Codec: codec})
			if err != nil {
				t.Fatalf("%v tol %v: %v", codec, tol, err)
			}
			blob, cv := userBlob(t, sk, cc)
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

// TestUserCompressOptionsExtreme: the zero Tolerance means the default;
// negative, NaN and infinite tolerances and other nonsense options are
// refused naming the field; a huge tolerance compresses (to a constant
// clip, within that tolerance).
func TestUserCompressOptionsExtreme(t *testing.T) {
	sk, c := userChain(4, 31, 30)
	nan, inf := math.NaN(), math.Inf(1)
	bad := []struct {
		name string
		opt  offline.CompressOptions
		want string
	}{
		{"negative tolerance", offline.CompressOptions{Tolerance: -0.001}, "Tolerance"},
		{"NaN tolerance", offline.CompressOptions{Tolerance: nan}, "Tolerance"},
		{"Inf tolerance", offline.CompressOptions{Tolerance: inf}, "Tolerance"},
		{"negative ChainShare", offline.CompressOptions{ChainShare: -1}, "ChainShare"},
		{"NaN ChainShare", offline.CompressOptions{ChainShare: nan}, "ChainShare"},
		{"negative VertexDistance", offline.CompressOptions{VertexDistance: -1}, "VertexDistance"},
		{"NaN VertexDistance", offline.CompressOptions{VertexDistance: nan}, "VertexDistance"},
		{"negative SegmentSeconds", offline.CompressOptions{SegmentSeconds: -1}, "SegmentSeconds"},
		{"NaN SegmentSeconds", offline.CompressOptions{SegmentSeconds: nan}, "SegmentSeconds"},
		{"negative Passes", offline.CompressOptions{Passes: -1}, "Passes"},
		{"uniform 3 frames", offline.CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: 3}, "UniformSegmentFrames"},
		{"uniform 1 frame", offline.CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: 1}, "UniformSegmentFrames"},
		{"uniform 512 frames", offline.CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: 512}, "UniformSegmentFrames"},
		{"codec 7", offline.CompressOptions{Codec: 7}, "odec"},
	}
	for _, b := range bad {
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			opt := b.opt
			if opt.Codec == 0 {
				opt.Codec = codec
			}
			cc, err := offline.Compress(sk, c, opt)
			if err == nil {
				t.Errorf("%s (%v): compressed (p99 %v), want an error naming %s", b.name, opt.Codec, cc.Stats.P99, b.want)
				continue
			}
			if !strings.Contains(err.Error(), b.want) {
				t.Errorf("%s (%v): error %q does not name %s", b.name, opt.Codec, err, b.want)
			}
		}
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		for _, tol := range []float64{0, 1e-7, 1e3} {
			cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: tol, Codec: codec})
			var te *offline.ToleranceError
			if tol == 1e-7 && errors.As(err, &te) {
				// Below the float32 floor: Compress says by how much it
				// misses, with its most accurate clip.
				t.Logf("%v tolerance %v: %v", codec, tol, err)
				cc, err = te.Compressed, nil
			}
			if err != nil {
				t.Errorf("%v tolerance %v: %v", codec, tol, err)
				continue
			}
			blob, cv := userBlob(t, sk, cc)
			errs := denseErrors(t, sk, c, blob, cv)
			want := tol
			if tol == 0 {
				want = 0.0001
			}
			if tol == 1e-7 {
				want = 1e-5 // float32 poses: a floor the docs' quantisation reaches
			}
			if p99 := errs[len(errs)*99/100]; !(p99 <= 1.25*want) {
				t.Errorf("%v tolerance %v: dense p99 %.3g", codec, tol, p99)
			}
		}
	}
}

// TestUserClipShapes: 1- and 2-frame clips, one bone and MaxBones bones
// compress with both codecs and sample to the source; zero frames, more
// than MaxBones, NaN or infinite keys and non-unit rotations are refused
// with an error naming the clip.
func TestUserClipShapes(t *testing.T) {
	type shape struct {
		name    string
		nb, fr  int
		mutate  func(c *offline.Clip)
		wantErr string
	}
	shapes := []shape{
		{name: "1 frame", nb: 3, fr: 1},
		{name: "2 frames", nb: 3, fr: 2},
		{name: "1 bone", nb: 1, fr: 40},
		{name: "1 bone 1 frame", nb: 1, fr: 1},
		{name: "max bones", nb: offline.MaxBones, fr: 3, mutate: bushy},
		{name: "too many bones", nb: offline.MaxBones + 1, fr: 3, mutate: bushy, wantErr: "bones"},
		{name: "0 frames", nb: 2, fr: 0, wantErr: "frames"},
		{name: "NaN key", nb: 2, fr: 10, mutate: func(c *offline.Clip) { c.Tracks[0].Values[4][1] = math.NaN() }, wantErr: "not finite"},
		{name: "Inf key", nb: 2, fr: 10, mutate: func(c *offline.Clip) { c.Tracks[5].Values[9][0] = math.Inf(-1) }, wantErr: "not finite"},
		{name: "NaN rotation", nb: 2, fr: 10, mutate: func(c *offline.Clip) { c.Tracks[4].Values[2][3] = math.NaN() }, wantErr: "wave"},
		{name: "non-unit rotation", nb: 2, fr: 10, mutate: func(c *offline.Clip) {
			for i := range c.Tracks[1].Values {
				for k := range 4 {
					c.Tracks[1].Values[i][k] *= 2
				}
			}
		}, wantErr: "length"},
		{name: "zero rate", nb: 2, fr: 10, mutate: func(c *offline.Clip) { c.Rate = 0 }, wantErr: "rate"},
		{name: "NaN rate", nb: 2, fr: 10, mutate: func(c *offline.Clip) { c.Rate = math.NaN() }, wantErr: "rate"},
		{name: "scale 0", nb: 3, fr: 10, mutate: func(c *offline.Clip) {
			for i := range c.Tracks[5].Values {
				c.Tracks[5].Values[i] = [4]float64{0, 0, 0, 0}
			}
		}},
		{name: "negative scale", nb: 3, fr: 10, mutate: func(c *offline.Clip) {
			for i := range c.Tracks[5].Values {
				c.Tracks[5].Values[i] = [4]float64{-1, 1, 1, 0}
			}
			for i := range c.Tracks[8].Values {
				c.Tracks[8].Values[i] = [4]float64{1, -1.5 + 0.01*float64(i), 1, 0}
			}
		}},
	}
	for _, s := range shapes {
		if s.nb == offline.MaxBones && os.Getenv("VKJOBS_ANIM_LONG") == "" {
			t.Logf("%s: skipped (about 25 s; VKJOBS_ANIM_LONG=1 runs it)", s.name)
			continue
		}
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			sk, c := userChain(s.nb, max(s.fr, 1), 30)
			c.Frames = s.fr
			if s.fr == 0 {
				for i := range c.Tracks {
					c.Tracks[i] = offline.Track{}
				}
			}
			if s.mutate != nil {
				s.mutate(c)
			}
			if s.nb > 64 {
				for b := 1; b < s.nb; b++ { // a tree of depth ~6, not a chain
					sk.Parents[b] = int32((b - 1) / 4)
				}
			}
			cc, err := func() (cc *offline.CompressedClip, err error) {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s (%v): Compress panicked: %v", s.name, codec, r)
						err = nil
					}
				}()
				return offline.Compress(sk, c, offline.CompressOptions{Codec: codec, Tolerance: 0.001})
			}()
			if s.wantErr != "" {
				if err == nil {
					t.Errorf("%s (%v): compressed, want an error (%s)", s.name, codec, s.wantErr)
				} else if !strings.Contains(err.Error(), s.wantErr) {
					t.Errorf("%s (%v): error %q does not say %q", s.name, codec, err, s.wantErr)
				} else {
					t.Logf("%s (%v): %v", s.name, codec, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s (%v): %v", s.name, codec, err)
				continue
			}
			if cc == nil {
				continue
			}
			blob, cv := userBlob(t, sk, cc)
			if cv.Frames() != s.fr || cv.Bones() != s.nb {
				t.Errorf("%s (%v): blob says %d frames %d bones", s.name, codec, cv.Frames(), cv.Bones())
			}
			errs := denseErrors(t, sk, c, blob, cv)
			p99, mx := errs[len(errs)*99/100], errs[len(errs)-1]
			if !(p99 <= 0.00125) || !(mx <= 0.004) {
				t.Errorf("%s (%v): dense p99 %.3g max %.3g against the source (tolerance 0.001)", s.name, codec, p99, mx)
			}
		}
	}
}

func bushy(*offline.Clip) {}

// TestUserSampleTimes: times before 0, NaN, after the end, +-Inf and
// exactly at the last frame read the clip clamped (NaN as 0), equal to
// the source's first or last frame within the tolerance.
func TestUserSampleTimes(t *testing.T) {
	sk, c := userChain(5, 46, 30) // 1.5 s
	dur := float32(c.Duration())
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec, Tolerance: 0.0005})
		if err != nil {
			t.Fatal(err)
		}
		blob, cv := userBlob(t, sk, cc)
		if cv.Duration() != dur {
			t.Errorf("%v: Duration %v, want %v", codec, cv.Duration(), dur)
		}
		inf := float32(math.Inf(1))
		nan := float32(math.NaN())
		cases := []struct {
			tm  float32
			ref float64
		}{
			{-1, 0}, {nan, 0}, {-inf, 0}, {0, 0}, {dur, c.Duration()}, {dur + 1, c.Duration()}, {inf, c.Duration()},
			{math.Nextafter32(dur, 0), c.Duration()}, {dur * 1e6, c.Duration()}, {0.5, 0.5}, {float32(math.Copysign(0, -1)), 0},
		}
		// forward through one cursor, then each alone with a fresh cursor
		times := make([]float32, len(cases))
		for i, k := range cases {
			times[i] = k.tm
		}
		fwd := userSample(t, blob, cv, times)
		for i, k := range cases {
			alone := userSample(t, blob, cv, []float32{k.tm})[0]
			for _, p := range [][]float32{fwd[i], alone} {
				ref, off := vertices(sk.Parents, refLocal(c, k.ref), 0.03, nil)
				got, _ := vertices(sk.Parents, poseLocal(p, sk.NumBones()), 0.03, off)
				for b := range ref {
					for a := 0; a < 3; a++ {
						d := math.Hypot(math.Hypot(ref[b][a][0]-got[b][a][0], ref[b][a][1]-got[b][a][1]), ref[b][a][2]-got[b][a][2])
						if !(d <= 0.002) {
							t.Errorf("%v: time %v: bone %d vertex off by %.3g m from the source at %v s", codec, k.tm, b, d, k.ref)
						}
					}
				}
			}
		}
	}
}
