package offline_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// TestCompressOptionsExtreme: the zero Tolerance means the default;
// negative, NaN and infinite tolerances and other nonsense options are
// refused naming the field; a huge tolerance compresses (to a constant
// clip, within that tolerance).
func TestCompressOptionsExtreme(t *testing.T) {
	sk, c := animtest.Chain(4, 31, 30)
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
			blob, cv := animtest.Blob(t, sk, cc)
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

// TestClipShapes: 1- and 2-frame clips, one bone and MaxBones bones
// compress with both codecs and sample to the source; zero frames, more
// than MaxBones, NaN or infinite keys and non-unit rotations are refused
// with an error naming the clip.
func TestClipShapes(t *testing.T) {
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
			sk, c := animtest.Chain(s.nb, max(s.fr, 1), 30)
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
			blob, cv := animtest.Blob(t, sk, cc)
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
