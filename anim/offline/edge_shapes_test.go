package offline_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
)

func edgeSk(n int) *offline.Skeleton {
	sk := &offline.Skeleton{Name: "edge"}
	for b := range n {
		sk.Names = append(sk.Names, fmt.Sprintf("b%d", b))
		sk.Parents = append(sk.Parents, int32(b-1))
		tr := offline.IdentityTransform
		if b > 0 {
			tr.T = offline.Vec3{0, 0.1, 0}
		}
		sk.Rest = append(sk.Rest, tr)
	}
	return sk
}

func edgeCl(n, frames int, rate float64) *offline.Clip {
	c := &offline.Clip{Name: "c", Rate: rate, Frames: frames, Tracks: make([]offline.Track, 3*n)}
	for b := range n {
		for f := range frames {
			t := float64(f) / rate
			tv := [4]float64{0, 0.1, 0, 0}
			if b == 0 {
				tv = [4]float64{0.3 * math.Sin(t), 0, 0, 0}
			}
			a := 0.5 * math.Sin(2*t+float64(b))
			for k, v := range [][4]float64{tv, {0, math.Sin(a / 2), 0, math.Cos(a / 2)}, {1, 1, 1, 0}} {
				c.Tracks[3*b+k].Frames = append(c.Tracks[3*b+k].Frames, int32(f))
				c.Tracks[3*b+k].Values = append(c.Tracks[3*b+k].Values, v)
			}
		}
	}
	return c
}

func compressTimed(t *testing.T, d time.Duration, sk *offline.Skeleton, c *offline.Clip, o offline.CompressOptions) (cc *offline.CompressedClip, err error) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("PANIC: %v", r)
			}
		}()
		cc, err = offline.Compress(sk, c, o)
	}()
	select {
	case <-done:
		return cc, err
	case <-time.After(d):
		t.Fatalf("Compress(%+v) did not return within %v", o, d)
		return nil, nil
	}
}

// Every CompressOptions field at 0, negative, NaN, ±Inf, tiny and huge,
// both codecs: an error naming the field, or a clip that loads and
// samples; never a panic or a hang.
func TestCompressOptionLimits(t *testing.T) {
	sk := edgeSk(3)
	c := edgeCl(3, 31, 30)
	nan, inf := math.NaN(), math.Inf(1)
	vals := []float64{0, -1, nan, inf, -inf, 1e-300, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64}
	fields := []struct {
		name string
		set  func(o *offline.CompressOptions, v float64)
	}{
		{"Tolerance", func(o *offline.CompressOptions, v float64) { o.Tolerance = v }},
		{"ChainShare", func(o *offline.CompressOptions, v float64) { o.ChainShare = v }},
		{"MaxError", func(o *offline.CompressOptions, v float64) { o.MaxError = v }},
		{"VertexDistance", func(o *offline.CompressOptions, v float64) { o.VertexDistance = v }},
		{"SegmentSeconds", func(o *offline.CompressOptions, v float64) { o.SegmentSeconds = v }},
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		for _, f := range fields {
			for _, v := range vals {
				o := offline.CompressOptions{Codec: codec, Tolerance: 0.001}
				f.set(&o, v)
				cc, err := compressTimed(t, 60*time.Second, sk, c, o)
				if err != nil {
					if strings.HasPrefix(err.Error(), "PANIC") {
						t.Errorf("%v %s=%v: %v", codec, f.name, v, err)
						continue
					}
					var te *offline.ToleranceError
					if !errors.As(err, &te) && !strings.Contains(err.Error(), f.name) {
						t.Errorf("%v %s=%v: error does not name the field: %v", codec, f.name, v, err)
					}
					continue
				}
				// Accepted: the clip must build, load and sample finite.
				var b offline.Builder
				if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
					t.Errorf("%v %s=%v: AddClip: %v", codec, f.name, v, err)
					continue
				}
				data, err := b.Bytes()
				if err != nil {
					t.Errorf("%v %s=%v: Bytes: %v", codec, f.name, v, err)
					continue
				}
				bl, err := anim.Load(data)
				if err != nil {
					t.Errorf("%v %s=%v: the accepted clip does not load: %v", codec, f.name, v, err)
					continue
				}
				cv := bl.Clip(0)
				pose := make([]float32, 3*anim.PoseFloats)
				job := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: cv.Offset(), Time: 0.4}}, Cursors: make([]uint32, cv.CursorWords()), CursorStride: max(8, cv.CursorWords()), Poses: pose, Bones: 3}
				job.Cursors = make([]uint32, job.CursorStride)
				if err := job.Run(); err != nil {
					t.Errorf("%v %s=%v: %v", codec, f.name, v, err)
				}
				for _, x := range pose {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Errorf("%v %s=%v: accepted, samples non-finite pose %v", codec, f.name, v, pose)
						break
					}
				}
				t.Logf("%v %s=%v: accepted: %d bytes, SegFrames %d, p99 %.3g", codec, f.name, v, cc.Stats.Bytes, cc.SegFrames, cc.Stats.P99)
			}
		}
		for _, p := range []int{-1, 1, 2, 1 << 20} {
			o := offline.CompressOptions{Codec: codec, Tolerance: 0.001, Passes: p}
			_, err := compressTimed(t, 60*time.Second, sk, c, o)
			t.Logf("%v Passes=%d: %v", codec, p, err)
			if p < 0 && (err == nil || !strings.Contains(err.Error(), "Passes")) {
				t.Errorf("Passes %d: %v", p, err)
			}
		}
		for _, l := range []int{-16, 1, 3, 2, 256, 512, 1 << 30} {
			o := offline.CompressOptions{Codec: codec, Tolerance: 0.001, UniformSegmentFrames: l}
			_, err := compressTimed(t, 60*time.Second, sk, c, o)
			if (l < 2 || l > 256 || l&(l-1) != 0) && err == nil {
				t.Errorf("UniformSegmentFrames %d accepted", l)
			}
		}
		o := offline.CompressOptions{Codec: 7}
		if _, err := compressTimed(t, 10*time.Second, sk, c, o); err == nil {
			t.Error("Codec 7 accepted")
		}
	}
}

// A huge SegmentSeconds means one segment for the whole clip.
func TestCompressHugeSegmentSeconds(t *testing.T) {
	sk := edgeSk(2)
	c := edgeCl(2, 61, 30)
	for _, s := range []float64{10, 1e6, 1e15, 1e17, 1e18, 1e300} {
		cc, err := compressTimed(t, 60*time.Second, sk, c, offline.CompressOptions{Tolerance: 0.001, SegmentSeconds: s})
		if err != nil {
			t.Fatalf("SegmentSeconds %v: %v", s, err)
		}
		if cc.SegFrames != 60 {
			t.Errorf("SegmentSeconds %v: SegFrames %d, want 60 (one segment for the 2 s clip)", s, cc.SegFrames)
		}
	}
}

// Clips of 1 and 2 frames and a zero rate, and ill-formed clips: errors
// naming the problem.
func TestCompressClipShapes(t *testing.T) {
	sk := edgeSk(2)
	for _, fr := range []int{1, 2} {
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			c := edgeCl(2, fr, 30)
			if _, err := compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{Codec: codec}); err != nil {
				t.Errorf("%d frames %v: %v", fr, codec, err)
			}
		}
	}
	for _, rate := range []float64{0, -30, math.NaN(), math.Inf(1), 1e-300, 1e300} {
		c := edgeCl(2, 3, 30)
		c.Rate = rate
		_, err := compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{})
		t.Logf("Rate %v: %v", rate, err)
		if rate == 1e300 || rate == 1e-300 {
			continue
		}
		if err == nil {
			t.Errorf("Rate %v accepted", rate)
		}
	}
	c := edgeCl(2, 3, 30)
	c.Frames = 0
	if _, err := compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{}); err == nil {
		t.Error("Frames 0 accepted")
	}
	c = edgeCl(2, 3, 30)
	c.Tracks = c.Tracks[:5]
	if _, err := compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{}); err == nil {
		t.Error("5 tracks for 2 bones accepted")
	}
	c = edgeCl(2, 3, 30)
	c.Tracks[1].Values[1] = [4]float64{0, 0, 0, 0}
	if _, err := compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{}); err == nil {
		t.Error("zero quaternion accepted")
	}
	c = edgeCl(2, 3, 30)
	c.Events = []anim.Event{{Time: 0.05}, {Time: 0.01}}
	if _, err := compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{}); err == nil {
		t.Error("unsorted events accepted")
	}
	c = edgeCl(2, 3, 30)
	c.Events = []anim.Event{{Time: float32(math.NaN())}}
	if _, err := compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{}); err == nil {
		t.Error("NaN event accepted")
	}
	c = edgeCl(2, 3, 30)
	c.Events = []anim.Event{{Time: 5}}
	_, err := compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{})
	t.Logf("event after the clip's end: %v", err)
	c = edgeCl(2, 3, 30)
	c.Events = []anim.Event{{Time: 0.01, Bone: 7}}
	_, err = compressTimed(t, 30*time.Second, sk, c, offline.CompressOptions{})
	t.Logf("event on bone 7 of 2: %v", err)
}

// The crowd's use: bones appended to the skeleton after import (constant
// tracks appended to the clip), then Resample, then Compress: the
// appended bones sample as their rest pose and the animated ones follow.
func TestAppendTracksResample(t *testing.T) {
	sk := edgeSk(3)
	c := edgeCl(3, 121, 120)
	// Append two bones.
	for i := range 2 {
		sk.Names = append(sk.Names, fmt.Sprintf("extra%d", i))
		sk.Parents = append(sk.Parents, 1)
		r := offline.IdentityTransform
		r.T = offline.Vec3{0.02, 0.03 * float64(i+1), 0}
		sk.Rest = append(sk.Rest, r)
		vals := [3][4]float64{{r.T[0], r.T[1], r.T[2], 0}, r.R, {1, 1, 1, 0}}
		for k := range 3 {
			tr := offline.Track{Frames: make([]int32, c.Frames), Values: make([][4]float64, c.Frames)}
			for f := range c.Frames {
				tr.Frames[f] = int32(f)
				tr.Values[f] = vals[k]
			}
			c.Tracks = append(c.Tracks, tr)
		}
	}
	c.Events = []anim.Event{{Time: 0, Type: 1}, {Time: 1, Type: 2}}
	rc, err := c.Resample(30)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Frames != 31 || rc.NumBones() != 5 || len(rc.Events) != 2 || rc.Events[1].Time != 1 {
		t.Fatalf("resampled: %d frames, %d bones, events %v", rc.Frames, rc.NumBones(), rc.Events)
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := compressTimed(t, 60*time.Second, sk, rc, offline.CompressOptions{Codec: codec, Passes: 1})
		if err != nil {
			t.Fatal(err)
		}
		var b offline.Builder
		if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
			t.Fatal(err)
		}
		data, _ := b.Bytes()
		bl, err := anim.Load(data)
		if err != nil {
			t.Fatal(err)
		}
		cv := bl.Clip(0)
		pose := make([]float32, 5*anim.PoseFloats)
		job := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: cv.Offset()}}, Cursors: make([]uint32, max(8, cv.CursorWords())), CursorStride: max(8, cv.CursorWords()), Poses: pose, Bones: 5}
		for _, tm := range []float32{0, 0.25, 0.5, 0.77, 1} {
			job.Inputs[0].Time = tm
			if err := job.Run(); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				p := pose[(3+i)*12:]
				if math.Abs(float64(p[5])-0.03*float64(i+1)) > 1e-4 || math.Abs(float64(p[3])-1) > 1e-6 {
					t.Errorf("%v t=%v extra bone %d: %v", codec, tm, i, p[:12])
				}
			}
			// Root translation against the 120 Hz source, lerped.
			want := 0.3 * math.Sin(float64(tm))
			if math.Abs(float64(pose[4])-want) > 0.002 {
				t.Errorf("%v t=%v root x %v, want %v", codec, tm, pose[4], want)
			}
		}
		if f, e := cv.EventRange(0, cv.Duration()+1); e-f != 2 {
			t.Errorf("events after resample: [%d,%d)", f, e)
		}
	}
	// Resample's rate limits.
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1), 1e5} {
		if _, err := c.Resample(r); err == nil {
			t.Errorf("Resample(%v) accepted", r)
		}
	}
	// Upsampling a 2-frame clip, and a 1-frame clip.
	for _, fr := range []int{1, 2} {
		c := edgeCl(1, fr, 30)
		rc, err := c.Resample(120)
		if err != nil {
			t.Errorf("Resample of %d frames: %v", fr, err)
			continue
		}
		if want := (fr-1)*4 + 1; rc.Frames != want {
			t.Errorf("Resample %d frames 30->120 Hz: %d frames, want %d", fr, rc.Frames, want)
		}
	}
}

// Builder: clips on a skeleton index that does not exist, with the
// wrong bone count, and a builder with nothing in it.
func TestBuilderMisuse(t *testing.T) {
	sk := edgeSk(2)
	cc, err := offline.Compress(sk, edgeCl(2, 5, 30), offline.CompressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b offline.Builder
	if err := b.AddClip(0, cc); err == nil {
		t.Error("AddClip before AddSkeleton accepted")
	}
	if err := b.AddClip(-1, cc); err == nil {
		t.Error("AddClip(-1) accepted")
	}
	s := b.AddSkeleton(edgeSk(3))
	if err := b.AddClip(s, cc); err == nil {
		t.Error("2-bone clip on a 3-bone skeleton accepted")
	}
	if err := b.AddClip(s, nil); err == nil {
		t.Error("nil clip accepted")
	}
	var empty offline.Builder
	data, err := empty.Bytes()
	t.Logf("empty Builder: %d bytes, %v", len(data), err)
	if err == nil {
		bl, err := anim.Load(data)
		if err != nil {
			t.Errorf("empty builder's blob does not load: %v", err)
		} else if bl.NumClips() != 0 {
			t.Error("clips in an empty blob")
		}
	}
	// A skeleton that fails Validate.
	bad := edgeSk(2)
	bad.Parents[1] = 5
	var b2 offline.Builder
	b2.AddSkeleton(bad)
	if _, err := b2.Bytes(); err == nil {
		t.Error("Builder wrote a skeleton whose parent comes after the child")
	}
}

// A clip rate that Clip.Validate accepts must survive the blob (float32).
func TestTinyRateRoundTrip(t *testing.T) {
	sk := edgeSk(2)
	for _, rate := range []float64{1e-300, 1e-46, 1e-40} {
		c := edgeCl(2, 3, 30)
		c.Rate = rate
		if err := c.Validate(sk); err != nil {
			t.Logf("rate %v: Validate: %v", rate, err)
			continue
		}
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Passes: 1})
		if err != nil {
			t.Logf("rate %v: Compress: %v", rate, err)
			continue
		}
		var b offline.Builder
		if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
			t.Logf("rate %v: AddClip: %v", rate, err)
			continue
		}
		data, err := b.Bytes()
		if err != nil {
			t.Logf("rate %v: Bytes: %v", rate, err)
			continue
		}
		if _, err := anim.Load(data); err != nil {
			t.Errorf("rate %v: Validate, Compress, AddClip and Bytes accept it, Load refuses the blob: %v", rate, err)
		}
	}
}

// Skeletons past MaxBones, mismatched skeletons and clips, and the
// offline samplers at awkward times: errors, never panics.
func TestMisuseEdgeShapes(t *testing.T) {
	big := edgeSk(offline.MaxBones + 1)
	if err := big.Validate(); err == nil {
		t.Error("Skeleton.Validate accepts MaxBones+1 bones")
	}
	var b offline.Builder
	b.AddSkeleton(big)
	if _, err := b.Bytes(); err == nil {
		t.Error("Builder writes a skeleton of MaxBones+1 bones")
	}
	sk := edgeSk(3)
	c := edgeCl(3, 20, 30)
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	var bb offline.Builder
	_ = bb.AddClip(bb.AddSkeleton(sk), cc)
	data, _ := bb.Bytes()
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Measure against another skeleton: panic %v", r)
			}
		}()
		if _, err := offline.Measure(edgeSk(4), edgeCl(4, 20, 30), bl.Clip(0), 0.03); err == nil {
			t.Error("Measure of a 3-bone blob clip against a 4-bone source: no error")
		}
		if _, err := offline.Measure(sk, edgeCl(3, 25, 30), bl.Clip(0), 0.03); err == nil {
			t.Error("Measure against a source of other length: no error")
		}
		if _, err := offline.Measure(sk, c, bl.Clip(0)); err == nil {
			t.Error("Measure with no distance: no error")
		}
		if _, err := offline.Measure(sk, c, bl.Clip(0), math.NaN()); err == nil {
			t.Error("Measure at NaN distance: no error")
		}
		if _, err := offline.DetectFootContacts(sk, c, offline.ContactOptions{Bones: []int{7}}); err == nil {
			t.Error("DetectFootContacts on bone 7 of 3: no error")
		}
		if _, err := offline.DetectFootContacts(sk, c, offline.ContactOptions{Up: 5}); err == nil {
			t.Error("DetectFootContacts Up 5: no error")
		}
		one := edgeCl(3, 1, 30)
		if _, err := offline.DetectFootContacts(sk, one, offline.ContactOptions{Bones: []int{2}}); err != nil {
			t.Logf("DetectFootContacts on 1 frame: %v", err)
		}
	}()
	pose := make([]float32, 3*anim.PoseFloats)
	for _, cl := range []*offline.Clip{edgeCl(3, 1, 30), edgeCl(3, 2, 30), c} {
		var ref []float32
		for _, tm := range []float64{math.NaN(), math.Inf(-1), -1, 0, math.Inf(1), 1e300, cl.Duration()} {
			if err := cl.SampleAt(tm, pose); err != nil {
				t.Errorf("SampleAt(%v): %v", tm, err)
			}
			for _, x := range pose {
				if math.IsNaN(float64(x)) {
					t.Errorf("%d frames: SampleAt(%v) gives NaN: %v", cl.Frames, tm, pose)
					break
				}
			}
			if tm == 0 {
				ref = append([]float32(nil), pose...)
			}
		}
		_ = ref
		if err := cl.SampleAt(0, pose[:5]); err == nil {
			t.Error("SampleAt into a short pose: no error")
		}
	}
}

// The crowd's use on a glTF import (whose clips carry Between): a bone
// appended to the skeleton with constant tracks, compressed as imported
// and after Resample.
func TestGLTFAppendTracks(t *testing.T) {
	im, err := offline.LoadFile("../../cmd/crowd/testdata/cesium_man.gltf", offline.ImportOptions{})
	if err != nil {
		t.Skip(err)
	}
	sk, c := im.Skeleton, im.Clips[0]
	nb := sk.NumBones()
	sk.Names = append(sk.Names, "prop")
	sk.Parents = append(sk.Parents, int32(nb-1))
	r := offline.IdentityTransform
	r.T = offline.Vec3{0.1, 0, 0}
	sk.Rest = append(sk.Rest, r)
	if sk.InverseBind != nil {
		sk.InverseBind = append(sk.InverseBind, [16]float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1})
	}
	if sk.SkinJoint != nil {
		sk.SkinJoint = append(sk.SkinJoint, -1)
	}
	vals := [3][4]float64{{0.1, 0, 0, 0}, r.R, {1, 1, 1, 0}}
	for k := range 3 {
		tr := offline.Track{Frames: make([]int32, c.Frames), Values: make([][4]float64, c.Frames)}
		for f := range c.Frames {
			tr.Frames[f] = int32(f)
			tr.Values[f] = vals[k]
		}
		c.Tracks = append(c.Tracks, tr)
	}
	if err := sk.Validate(); err != nil {
		t.Fatalf("skeleton with an appended bone: %v", err)
	}
	for _, cl := range []*offline.Clip{c} {
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			cc, err := compressTimed(t, 120*time.Second, sk, cl, offline.CompressOptions{Codec: codec})
			if err != nil {
				t.Errorf("%v: %v", codec, err)
				continue
			}
			t.Logf("%v: %d bytes, p99 %.3g", codec, cc.Stats.Bytes, cc.Stats.P99)
		}
	}
	rc, err := c.Resample(30)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := compressTimed(t, 120*time.Second, sk, rc, offline.CompressOptions{Passes: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b offline.Builder
	if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
		t.Fatal(err)
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(bl.Skeleton(0).InverseBindMatrices(nil)); n != nb+1 {
		t.Errorf("%d inverse bind matrices for %d bones", n, nb+1)
	}
}
