package offline

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

var cmuSrc struct {
	once sync.Once
	ims  []*Import
	err  error
}

// cmuSources imports the two CMU clips once per test binary (without
// compressing them, unlike cmuData).
func cmuSources(tb testing.TB) []*Import {
	tb.Helper()
	needAssimp(tb, assimpBVH+"/01_01.bvh")
	needAssimp(tb, assimpBVH+"/01_03.bvh")
	cmuSrc.once.Do(func() {
		for _, f := range []string{"01_01", "01_03"} {
			im, err := LoadFile(assimpBVH+"/"+f+".bvh", ImportOptions{})
			if err != nil {
				cmuSrc.err = err
				return
			}
			cmuSrc.ims = append(cmuSrc.ims, im)
		}
	})
	if cmuSrc.err != nil {
		tb.Fatal(cmuSrc.err)
	}
	return cmuSrc.ims
}

// subClip returns frames [from, from+n) of c (no discontinuities) with
// the events inside, shifted.
func subClip(c *Clip, from, n int) *Clip {
	out := &Clip{Name: c.Name, Rate: c.Rate, Frames: n, Tracks: make([]Track, len(c.Tracks))}
	for i := range c.Tracks {
		tr := &c.Tracks[i]
		for f := range n {
			out.Tracks[i].Frames = append(out.Tracks[i].Frames, int32(f))
			out.Tracks[i].Values = append(out.Tracks[i].Values, tr.Values[tr.sampleIndex(from+f)])
		}
	}
	t0 := float32(float64(from) / c.Rate)
	for _, e := range c.Events {
		if t := e.Time - t0; t >= 0 && float64(t) <= out.Duration() {
			e.Time = t
			out.Events = append(out.Events, e)
		}
	}
	return out
}

// cmuParts returns 4 s (480 frames) from the middle of each CMU clip.
func cmuParts(tb testing.TB) ([]*Skeleton, []*Clip) {
	var sks []*Skeleton
	var cs []*Clip
	for _, im := range cmuSources(tb) {
		c := im.Clips[0]
		sks = append(sks, im.Skeleton)
		cs = append(cs, subClip(c, c.Frames/2-240, 480))
	}
	return sks, cs
}

var uniCMU struct {
	once sync.Once
	data []byte
	ccs  []*CompressedClip
	err  error
}

// uniformCMUBlob is the blob of cmuParts compressed with CodecUniform at
// 0.01 cm (once per test binary).
func uniformCMUBlob(tb testing.TB) (*anim.Blob, []*CompressedClip) {
	sks, cs := cmuParts(tb)
	uniCMU.once.Do(func() {
		var b Builder
		for i, c := range cs {
			cc, err := Compress(sks[i], c, CompressOptions{Codec: anim.CodecUniform})
			if err != nil {
				uniCMU.err = err
				return
			}
			uniCMU.ccs = append(uniCMU.ccs, cc)
			if err := b.AddClip(b.AddSkeleton(sks[i]), cc); err != nil {
				uniCMU.err = err
				return
			}
		}
		uniCMU.data, uniCMU.err = b.Bytes()
	})
	if uniCMU.err != nil {
		tb.Fatal(uniCMU.err)
	}
	bl, err := anim.Load(uniCMU.data)
	if err != nil {
		tb.Fatal(err)
	}
	return bl, uniCMU.ccs
}

// richUniformBlob is richBlob's skeleton and clip (events, a
// discontinuity, inverse binds, skin joints) compressed with CodecUniform
// in 8-frame segments.
func richUniformBlob(tb testing.TB) []byte {
	tb.Helper()
	return richSynthBlob(tb, CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: 8, Tolerance: 0.0005})
}

// The uniform codec meets Tolerance at the 99th percentile through the
// real sampler (Compress calibrates on it), with a maximum close to it
// (the rate search bounds every vertex of a segment).
func TestUniformRoundTrip(t *testing.T) {
	sks, cs := cmuParts(t)
	for _, tol := range []float64{0.0001, 0.001} {
		for i, c := range cs {
			cc, data := compressBlob(t, sks[i], c, CompressOptions{Codec: anim.CodecUniform, Tolerance: tol})
			cv := mustLoad(t, data).Clip(0)
			st, err := Measure(sks[i], c, cv, 0.03, 1)
			if err != nil {
				t.Fatal(err)
			}
			s := cc.Stats
			t.Logf("%s frames %d at %g cm: ratio %.2f, %v; %v; passes %d, target %.3f × Tolerance, %d of %d samples stored",
				c.Name, c.Frames, tol*100, s.Ratio(), st[0], st[1], s.Passes, s.ChainShare, s.Points, s.Samples)
			if st[0].WorstP99() > tol || s.P99 != st[0].WorstP99() {
				t.Errorf("%s at %g cm: p99 %.5f cm, between samples %.5f (Compress measured %.5f)", c.Name, tol*100, st[0].P99*100, st[0].Between.P99*100, s.P99*100)
			}
			if st[0].WorstP99() < 0.9*tol {
				t.Errorf("%s at %g cm: p99 %.5f cm: calibration left a lot on the table", c.Name, tol*100, st[0].P99*100)
			}
			if st[0].Max > 1.5*tol {
				t.Errorf("%s at %g cm: max %.5f cm", c.Name, tol*100, st[0].Max*100)
			}
			minRatio := map[float64]float64{0.0001: 11, 0.001: 17}[tol]
			if s.Ratio() < minRatio {
				t.Errorf("%s at %g cm: ratio %.2f < %v", c.Name, tol*100, s.Ratio(), minRatio)
			}
			if cv.Codec() != anim.CodecUniform || cc.Codec != anim.CodecUniform || cv.CursorWords() != anim.CursorHeaderWords || cv.Bytes() != s.Bytes {
				t.Errorf("codec %v/%v, cursor words %d, bytes %d vs %d", cv.Codec(), cc.Codec, cv.CursorWords(), cv.Bytes(), s.Bytes)
			}
			if s.RawBytes != 40*31*c.Frames || s.AnimatedTracks+s.ConstantTracks != 93 || s.AnimatedTracks != cv.AnimatedTracks() ||
				s.Samples != s.AnimatedTracks*c.Frames || s.Points > s.Samples || s.Points == 0 || s.StreamBytes >= s.Bytes || s.Passes < 1 {
				t.Errorf("stats %+v", s)
			}
		}
	}
}

// A uniform clip is frame-addressable: a character keeping its cursor
// while it plays forward, jumps back and skips ahead, samples exactly
// what a fresh character does at each time; between two frames,
// translations interpolate linearly.
func TestUniformFrameAddressable(t *testing.T) {
	bl, _ := uniformCMUBlob(t)
	for i := range bl.NumClips() {
		c := bl.Clip(i)
		rng := rand.New(rand.NewSource(int64(i)))
		checkKeptCursor(t, c, rng, 10, 1, 1, 40)
		// Linear interpolation of the root translation between frames.
		for range 50 {
			f := rng.Intn(c.Frames() - 1)
			a := rng.Float32()
			p0 := sampleAt(t, c, float32(f)/c.Rate())
			p1 := sampleAt(t, c, float32(f+1)/c.Rate())
			tm := (float32(f) + a) / c.Rate()
			if x := tm * c.Rate(); math.Abs(float64(x)-math.Round(float64(x))) < 2e-3 {
				continue // snaps to a frame
			}
			pa := sampleAt(t, c, tm)
			alpha := tm*c.Rate() - float32(f)
			for k := range 3 {
				want := p0[4+k] + (p1[4+k]-p0[4+k])*alpha
				if d := math.Abs(float64(pa[4+k] - want)); d > 1e-5 {
					t.Fatalf("%s frame %d + %v: root translation %d is %v, lerp %v", c.Name(), f, alpha, k, pa[4+k], want)
				}
			}
			// Rotations: unit length, between the two frames.
			for b := range 31 {
				q := pa[b*anim.PoseFloats : b*anim.PoseFloats+4]
				if n := float64(q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3]); math.Abs(n-1) > 1e-5 {
					t.Fatalf("bone %d rotation length² %v", b, n)
				}
			}
		}
	}
}

// The pose layout, with bones beyond the clip's, for both codecs; times
// outside the clip clamp.
func TestUniformLayoutsAndClamp(t *testing.T) {
	ub, _ := uniformCMUBlob(t)
	for _, bl := range []*anim.Blob{ub, cmuBlob(t)} {
		checkPoseLayout(t, bl, 20, 0.5)
		checkClamp(t, bl.Clip(1))
	}
}

// Curve and uniform clips live in one blob (and in concatenated blobs);
// one job samples characters on both, each as when sampled alone, also
// when a character changes clip and codec between calls.
func TestUniformMixedBlob(t *testing.T) {
	sk := synthSkeleton()
	c := synthClip(91, 30, 0)
	curve, err := Compress(sk, c, CompressOptions{Tolerance: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	uni, err := Compress(sk, c, CompressOptions{Tolerance: 0.001, Codec: anim.CodecUniform})
	if err != nil {
		t.Fatal(err)
	}
	mixed := blobOf(t, sk, curve, uni)
	ac, au := mustLoad(t, blobOf(t, sk, curve)), mustLoad(t, blobOf(t, sk, uni))
	both := append(append([]byte(nil), ac.Bytes()...), mixed...)
	both = append(both, au.Bytes()...)
	bl := mustLoad(t, both)
	if bl.NumClips() != 4 {
		t.Fatalf("%d clips", bl.NumClips())
	}
	want := []*anim.Blob{ac, ac, au, au} // the clip each one equals
	codecs := []anim.Codec{anim.CodecCurve, anim.CodecCurve, anim.CodecUniform, anim.CodecUniform}
	stride := 0
	for i := range 4 {
		if got := bl.Clip(i).Codec(); got != codecs[i] {
			t.Errorf("clip %d codec %v", i, got)
		}
		stride = max(stride, bl.Clip(i).CursorWords())
	}
	rng := rand.New(rand.NewSource(3))
	const n = 8
	j := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride), CursorStride: stride,
		Poses: make([]float32, n*4*anim.PoseFloats), Bones: 4}
	pick := make([]int, n)
	for step := range 60 {
		for i := range j.Inputs {
			if step == 0 || rng.Intn(5) == 0 {
				pick[i] = rng.Intn(4)
			}
			j.Inputs[i] = anim.SampleInput{Clip: bl.Clip(pick[i]).Offset(), Time: rng.Float32() * 3.2}
		}
		if err := j.Run(); err != nil {
			t.Fatal(err)
		}
		for i, in := range j.Inputs {
			ref := sampleAt(t, want[pick[i]].Clip(0), in.Time)
			if !slices.Equal(j.Poses[i*4*anim.PoseFloats:(i+1)*4*anim.PoseFloats], ref) {
				t.Fatalf("step %d character %d on clip %d (%v) at %v differs from the clip alone", step, i, pick[i], codecs[pick[i]], in.Time)
			}
		}
	}
	// The two codecs decode the same motion within the tolerance.
	for _, tm := range []float32{0, 1, 2.5, 3} {
		p, q := sampleAt(t, ac.Clip(0), tm), sampleAt(t, au.Clip(0), tm)
		for k := range p {
			if math.Abs(float64(p[k]-q[k])) > 0.01 {
				t.Fatalf("t=%v word %d: curve %v, uniform %v", tm, k, p[k], q[k])
			}
		}
	}
}

// Discontinuities (sampled at the right-hand value), segment lengths at
// both ends of the range, a one-frame clip, and frames that are not a
// multiple of the segment length.
func TestUniformShapes(t *testing.T) {
	sk := synthSkeleton()
	for _, tc := range []struct {
		frames, jump, L int
	}{{61, 40, 16}, {33, 0, 2}, {300, 0, 256}, {17, 0, 16}, {2, 0, 16}} {
		c := synthClip(tc.frames, 30, tc.jump)
		cc, data := synthBlob(t, c, CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: tc.L, Tolerance: 0.0002})
		bl := mustLoad(t, data)
		st, err := Measure(sk, c, bl.Clip(0), 0.03)
		if err != nil {
			t.Fatal(err)
		}
		if st[0].P99 > 0.0002 || st[0].Max > 0.0004 {
			t.Errorf("%+v: %v", tc, st[0])
		}
		if cc.SegFrames != tc.L || cc.numSegments() != (tc.frames+tc.L-1)/tc.L {
			t.Errorf("%+v: %d-frame segments, %d of them", tc, cc.SegFrames, cc.numSegments())
		}
		exercise(bl)
	}
	c := synthClip(1, 30, 0)
	cc, data := synthBlob(t, c, CompressOptions{Codec: anim.CodecUniform})
	bl := mustLoad(t, data)
	if cc.Stats.AnimatedTracks != 0 || bl.Clip(0).Codec() != anim.CodecUniform {
		t.Fatalf("one-frame clip: %d animated tracks, codec %v", cc.Stats.AnimatedTracks, bl.Clip(0).Codec())
	}
	if p := sampleAt(t, bl.Clip(0), 3); p[5] != 1 {
		t.Errorf("root y %v", p[5])
	}
}

// Bad codec options are errors naming the option.
func TestUniformOptions(t *testing.T) {
	sk := synthSkeleton()
	c := synthClip(31, 30, 0)
	for _, tc := range []struct {
		o    CompressOptions
		want string
	}{
		{CompressOptions{Codec: 2}, "Codec"},
		{CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: 12}, "UniformSegmentFrames"},
		{CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: 1}, "UniformSegmentFrames"},
		{CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: 512}, "UniformSegmentFrames"},
		{CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: -4}, "UniformSegmentFrames"},
		{CompressOptions{Codec: anim.CodecUniform, Tolerance: -1}, "bad options"},
	} {
		if _, err := Compress(sk, c, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %q", tc.o, err, tc.want)
		}
	}
	// Values a uniform clip's ranges cannot hold are refused up front.
	huge := synthClip(31, 30, 0)
	tr := &huge.Tracks[0] // bone 0's translation
	for f := range tr.Values {
		tr.Values[f][0] = float64(f) * 1e19
	}
	if _, err := Compress(sk, huge, CompressOptions{Codec: anim.CodecUniform, Passes: 1}); err == nil || !strings.Contains(err.Error(), "1e18") {
		t.Errorf("huge translation: error %v, want one naming the bound", err)
	}
	for _, s := range []string{"curve", "uniform"} {
		if c, err := anim.ParseCodec(s); err != nil || c.String() != s {
			t.Errorf("ParseCodec(%q) = %v, %v", s, c, err)
		}
	}
	if _, err := anim.ParseCodec("acl"); err == nil {
		t.Error("ParseCodec accepted acl")
	}
}

// Sampling uniform clips never allocates.
func TestUniformNoAllocs(t *testing.T) {
	bl, _ := uniformCMUBlob(t)
	checkNoAllocs(t, bl, nil)
}

// Every field of the uniform clip record that Load checks, corrupted one
// at a time (checksum recomputed), gives a *BlobError that names it.
func TestBlobInvalidUniform(t *testing.T) {
	good := richUniformBlob(t)
	le := binary.LittleEndian
	w := func(d []byte, off uint32) uint32 { return le.Uint32(d[off:]) }
	C := w(good, w(good, 28)) // clip record
	if w(good, C+4*format.ChFlags) != format.ClipUniform {
		t.Fatal("not a uniform clip")
	}
	nt := w(good, C+4*format.ChSlots)
	tracks := C + w(good, C+4*format.ChTracks)
	ranges := C + w(good, C+4*format.ChRanges)
	segt := C + w(good, C+4*format.ChSegTable)
	stream := C + w(good, C+4*format.ChStream)
	events := C + w(good, C+4*format.ChEventTable)
	seg1 := stream + w(good, segt+4)/8 // segment 1
	// A track of each kind: the root's translation is track 0.
	rot := uint32(0)
	for i := range nt {
		if w(good, tracks+16*i)>>16 == uint32(TrackRotation) {
			rot = i
			break
		}
	}
	if w(good, tracks)>>16 != uint32(TrackTranslation) || rot == 0 {
		t.Fatal("unexpected track table")
	}
	set, setF, setB := mutWord, mutFloat, mutByte
	nan := float32(math.NaN())
	cases := []struct {
		name, want string
		mut        func([]byte) []byte
	}{
		{"flags", "flags", set(C+4*format.ChFlags, 2)},
		{"reserved word 22", "reserved word 22", set(C+4*22, 1)},
		{"reserved word 23", "reserved word 23", set(C+4*23, 1)},
		{"segment frames 0", "segment frames", set(C+4*format.ChSegFrames, 0)},
		{"segment frames not a power of two", "segment frames", set(C+4*format.ChSegFrames, 12)},
		{"segment frames 512", "segment frames", set(C+4*format.ChSegFrames, 512)},
		{"segment count", "segments", set(C+4*format.ChSegments, 9)},
		{"animated tracks", "animated tracks", set(C+4*format.ChSlots, 13)},
		{"cursor words", "cursor words", set(C+4*format.ChCursorWords, 8+64*nt)},
		{"default pose outside", "default pose outside", set(C+4*format.ChDefault, 1<<20)},
		{"default pose NaN", "default pose not finite", setF(C+w(good, C+4*format.ChDefault)+8, nan)},
		{"track table outside", "track table outside", set(C+4*format.ChTracks, 1<<20)},
		{"track bone", "track 0: bone", set(tracks, 7)},
		{"track kind", "kind 3", set(tracks, 3<<16)},
		{"track twice", "twice", set(tracks+16, w(good, tracks))},
		{"track word 1", "track 0: reserved word 1", set(tracks+4, 1)},
		{"track word 2", "track 0: reserved word 2", set(tracks+8, 1)},
		{"track word 3", "track 0: reserved word 3", set(tracks+12, 1)},
		{"range table outside", "range table outside", set(C+4*format.ChRanges, 1<<20)},
		{"range table in the header", "range table outside", set(C+4*format.ChRanges, 8)},
		{"range table unaligned", "range table outside", set(C+4*format.ChRanges, w(good, C+4*format.ChRanges)+2)},
		{"range min NaN", "range component 1", setF(ranges+4, nan)},
		{"range min Inf", "range component 0", setF(ranges, float32(math.Inf(1)))},
		{"range extent NaN", "range component 2", setF(ranges+24, nan)},
		{"range extent negative", "range component 0", setF(ranges+16, -1)},
		{"range component 3 of a translation", "range component 3", setF(ranges+12, 1)},
		{"range extent 3 of a translation", "range component 3", setF(ranges+28, 1)},
		{"range min of a translation huge", "range component 0", setF(ranges, -1e20)},
		{"range extent of a translation huge", "range component 1", setF(ranges+20, 1e20)},
		{"range min of a rotation below -1", fmt.Sprintf("track %d: range component 2", rot), setF(ranges+32*rot+8, -1.5)},
		{"range of a rotation beyond 1", fmt.Sprintf("track %d: range component 3", rot), setF(ranges+32*rot+28, 2.5)},
		{"segment table outside", "segment table outside", set(C+4*format.ChSegTable, 1<<20)},
		{"segment table entry 0", "segment table entry 0", set(segt, 32)},
		{"segment table not a multiple of 32", "segment table entry 1", set(segt+4, w(good, segt+4)+8)},
		{"segment table decreasing", "segment table entry 2", set(segt+8, w(good, segt+4)-32)},
		{"segment table last entry", "segment table entry 8", set(segt+32, w(good, segt+32)-32)},
		{"stream words", "segment table entry", set(C+4*format.ChStreamWords, w(good, C+4*format.ChStreamWords)-1)},
		{"stream shorter than its padding", "stream of", set(C+4*format.ChStreamWords, 11)},
		{"stream outside", "stream of", set(C+4*format.ChStreamWords, 1<<24)},
		{"segment header too short", "the header of", set(segt+4, 32)},
		{"frame bits", "frame bits FB", set(seg1, w(good, seg1)+3)},
		{"rate byte reserved bits", "reserved bits", setB(seg1+4+rot, good[seg1+4+rot]|0x40)},
		{"rate byte drop of a translation", "drops component", setB(seg1+4, good[seg1+4]&0x0f)},
		{"segment too short for its frames", "frames of", func(d []byte) []byte {
			// every track of segment 0 at 19 bits, FB to match
			for i := range nt {
				d[stream+4+i] = d[stream+4+i]&0xf0 | 15
			}
			le.PutUint32(d[stream:], 3*19*nt)
			return d
		}},
		{"event order", "event 1", setF(events+8, 0.1)},
		{"event bone", "event 0", set(events+4, uint32(anim.EventFootDown)|7<<16)},
		{"name outside", "name outside", set(C+4*format.ChNameLen, 1<<20)},
	}
	for _, tc := range cases {
		wantBlobError(t, good, tc.name, tc.want, tc.mut, false)
	}
	// Sanity: the good blob loads, and every rate code and dropped
	// component the format allows decodes.
	if _, err := anim.Load(good); err != nil {
		t.Fatal(err)
	}
}

// Every truncation of a uniform blob is an error; random corruption with
// a valid checksum never panics, and whatever loads samples without
// panicking.
func TestBlobCorruptionUniform(t *testing.T) {
	good := richUniformBlob(t)
	checkTruncations(t, good)
	checkCorruption(t, good, 9)
}
