package offline

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest/fixture"
)

// The CMU motion capture's location, as package fixture finds it.
var (
	assimpModels = fixture.AssimpModels
	assimpBVH    = fixture.BVH
	needAssimp   = fixture.NeedFile // fails the test when a file is missing
)

var cmu struct {
	once sync.Once
	ims  []*Import
	ccs  []*CompressedClip
	data []byte
	err  error
}

// cmuData imports the two CMU clips (fixture.CMUClips), detects their foot
// contacts and compresses them once per test binary.
func cmuData(tb testing.TB) ([]*Import, []*CompressedClip, []byte) {
	tb.Helper()
	for _, p := range fixture.CMUClips {
		needAssimp(tb, p)
	}
	cmu.once.Do(func() {
		var b Builder
		for _, p := range fixture.CMUClips {
			im, err := LoadFile(p, ImportOptions{})
			if err != nil {
				cmu.err = err
				return
			}
			ev, err := DetectFootContacts(im.Skeleton, im.Clips[0], ContactOptions{})
			if err != nil {
				cmu.err = err
				return
			}
			im.Clips[0].Events = ev
			cc, err := Compress(im.Skeleton, im.Clips[0], CompressOptions{})
			if err != nil {
				cmu.err = err
				return
			}
			if err := b.AddClip(b.AddSkeleton(im.Skeleton), cc); err != nil {
				cmu.err = err
				return
			}
			cmu.ims = append(cmu.ims, im)
			cmu.ccs = append(cmu.ccs, cc)
		}
		cmu.data, cmu.err = b.Bytes()
	})
	if cmu.err != nil {
		tb.Fatal(cmu.err)
	}
	return cmu.ims, cmu.ccs, cmu.data
}

func cmuBlob(tb testing.TB) *anim.Blob {
	_, _, data := cmuData(tb)
	bl, err := anim.Load(data)
	if err != nil {
		tb.Fatal(err)
	}
	return bl
}

var cmuAt sync.Map // "codec:cm@Hz" -> []byte

// cmuBlobCodec compresses the CMU clips with codec at another error
// target (cm), resampled to hz first when hz > 0.
func cmuBlobCodec(tb testing.TB, cm string, hz float64, codec anim.Codec) *anim.Blob {
	ims, _, _ := cmuData(tb)
	key := fmt.Sprintf("%v:%s@%g", codec, cm, hz)
	data, ok := cmuAt.Load(key)
	if !ok {
		var tol float64
		if _, err := fmt.Sscan(cm, &tol); err != nil {
			tb.Fatal(err)
		}
		var b Builder
		for _, im := range ims {
			c := im.Clips[0]
			if hz > 0 {
				var err error
				if c, err = c.Resample(hz); err != nil {
					tb.Fatal(err)
				}
			}
			cc, err := Compress(im.Skeleton, c, CompressOptions{Tolerance: tol / 100, Codec: codec})
			if err != nil {
				tb.Fatal(err)
			}
			if err := b.AddClip(b.AddSkeleton(im.Skeleton), cc); err != nil {
				tb.Fatal(err)
			}
		}
		d, err := b.Bytes()
		if err != nil {
			tb.Fatal(err)
		}
		cmuAt.Store(key, d)
		data = d
	}
	bl, err := anim.Load(data.([]byte))
	if err != nil {
		tb.Fatal(err)
	}
	return bl
}

// synthSkeleton is fixture.SynthSkeleton, a 4-bone chain.
func synthSkeleton() *Skeleton {
	sk := fixture.SynthSkeleton()
	return &Skeleton{Name: "synth", Names: sk.Names, Parents: sk.Parents, Rest: sk.Rest}
}

// synthClip is fixture.SynthTracks' clip of frames samples at rate Hz on
// synthSkeleton (a discontinuity at frame jump when jump > 0).
func synthClip(frames int, rate float64, jump int) *Clip {
	return &Clip{Name: "synth", Rate: rate, Frames: frames, Tracks: fixture.SynthTracks(frames, rate, jump, newTrack)}
}

// spinClip is fixture.SpinTracks' clip: synthClip(frames, 30, jump) with
// the hand spinning too fast for any rotation component to be dropped.
func spinClip(frames, jump int) *Clip {
	return &Clip{Name: "synth", Rate: 30, Frames: frames, Tracks: fixture.SpinTracks(frames, jump, newTrack)}
}

func newTrack(frames []int32, values [][4]float64) Track {
	return Track{Frames: frames, Values: values}
}

// synthBlob compresses a synthetic clip into a blob.
func synthBlob(tb testing.TB, c *Clip, opt CompressOptions) (*CompressedClip, []byte) {
	tb.Helper()
	return compressBlob(tb, synthSkeleton(), c, opt)
}

// compressBlob compresses c (on sk) into a one-clip blob.
func compressBlob(tb testing.TB, sk *Skeleton, c *Clip, opt CompressOptions) (*CompressedClip, []byte) {
	tb.Helper()
	cc, err := Compress(sk, c, opt)
	var te *ToleranceError
	if errors.As(err, &te) && opt.Codec == anim.CodecUniform && hasDiscontinuity(c) {
		// The uniform codec ramps over the frame before a discontinuity
		// (anim's documentation): tests of its format take the clip.
		tb.Logf("uniform codec on a clip with a discontinuity: %v", err)
		cc, err = te.Compressed, nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	return cc, blobOf(tb, sk, cc)
}

// hasDiscontinuity reports whether a track of c has two samples at a frame.
func hasDiscontinuity(c *Clip) bool {
	for _, tr := range c.Tracks {
		for i := 1; i < len(tr.Frames); i++ {
			if tr.Frames[i] == tr.Frames[i-1] {
				return true
			}
		}
	}
	return false
}

// blobOf builds a blob of compressed clips, all on skeleton sk.
func blobOf(tb testing.TB, sk *Skeleton, ccs ...*CompressedClip) []byte {
	tb.Helper()
	var b Builder
	si := b.AddSkeleton(sk)
	for _, cc := range ccs {
		if err := b.AddClip(si, cc); err != nil {
			tb.Fatal(err)
		}
	}
	data, err := b.Bytes()
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// mustLoad loads a blob, failing the test on an error.
func mustLoad(tb testing.TB, data []byte) *anim.Blob {
	tb.Helper()
	bl, err := anim.Load(data)
	if err != nil {
		tb.Fatal(err)
	}
	return bl
}

// sampleAt samples one character of clip c at time t with a fresh cursor.
func sampleAt(tb testing.TB, c anim.ClipView, t float32) []float32 {
	tb.Helper()
	j := anim.SampleJob{Blob: c.Blob(), Inputs: []anim.SampleInput{{Clip: c.Offset(), Time: t}}, Cursors: make([]uint32, c.CursorWords()),
		CursorStride: c.CursorWords(), Poses: make([]float32, c.Bones()*anim.PoseFloats), Bones: c.Bones()}
	if err := j.Run(); err != nil {
		tb.Fatal(err)
	}
	return j.Poses
}

// checkKeptCursor samples c (a CMU clip: 31 bones) through one cursor kept
// from call to call while the time runs from 0 past the clip's end in
// irregular steps drawn from rng: one in oneIn a step back of up to back
// seconds (not below 0), one in oneIn a skip ahead of up to skip seconds
// (over segments), otherwise a step ahead of up to 1/div seconds. Every
// pose must equal a fresh cursor's (a seek: sampleAt) bit for bit.
func checkKeptCursor(t *testing.T, c anim.ClipView, rng *rand.Rand, oneIn int, back, skip, div float32) {
	t.Helper()
	j := anim.SampleJob{Blob: c.Blob(), Inputs: []anim.SampleInput{{Clip: c.Offset()}}, Cursors: make([]uint32, c.CursorWords()),
		CursorStride: c.CursorWords(), Poses: make([]float32, 31*anim.PoseFloats), Bones: 31}
	tm := float32(0)
	for step := 0; tm <= c.Duration(); step++ {
		j.Inputs[0].Time = tm
		if err := j.Run(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(j.Poses, sampleAt(t, c, tm)) {
			t.Fatalf("%v clip %s at %v s (step %d): kept cursor (forward) and fresh one (seek) differ", c.Codec(), c.Name(), tm, step)
		}
		switch rng.Intn(oneIn) {
		case 0:
			tm = max(0, tm-rng.Float32()*back)
		case 1:
			tm += rng.Float32() * skip
		default:
			tm += rng.Float32() / div
		}
	}
}

// checkPoseLayout samples 6 characters on bl's clips (newBenchCrowd's)
// with 40 bones, beyond the clips' 31, character i at time f*0.07 +
// i*spread for each of frames frames f, into poses that start NaN: every
// word must be written, each bone's rotation (words 0-3) must be a unit
// quaternion, its translation's and scale's fourth words zero (the
// kernels.Transform layout), and an extra bone the identity.
func checkPoseLayout(t *testing.T, bl *anim.Blob, frames int, spread float32) {
	t.Helper()
	const n, bones = 6, 40
	bc := newBenchCrowd(t, bl, n)
	j := &bc.job
	j.Bones = bones
	j.Poses = make([]float32, n*bones*anim.PoseFloats)
	for i := range j.Poses {
		j.Poses[i] = float32(math.NaN()) // every word must be written
	}
	codec := bl.Clip(0).Codec()
	for f := range frames {
		for i := range j.Inputs {
			j.Inputs[i].Time = float32(f)*0.07 + float32(i)*spread
		}
		if err := j.Run(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < len(j.Poses); k += anim.PoseFloats {
			x := j.Poses[k : k+anim.PoseFloats]
			ch, bone := k/anim.PoseFloats/bones, k/anim.PoseFloats%bones
			for w := range anim.PoseFloats {
				if x[w] != x[w] {
					t.Fatalf("%v: frame %d character %d bone %d: word %d not written: %v", codec, f, ch, bone, w, x)
				}
			}
			q := float64(x[0]*x[0] + x[1]*x[1] + x[2]*x[2] + x[3]*x[3])
			if math.Abs(q-1) > 1e-5 || x[7] != 0 || x[11] != 0 {
				t.Fatalf("%v: frame %d character %d bone %d: %v is not rotation, translation, scale", codec, f, ch, bone, x)
			}
		}
	}
	if id := j.Poses[35*anim.PoseFloats : 36*anim.PoseFloats]; !slices.Equal(id, []float32{0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0}) {
		t.Errorf("%v: extra bone: %v", codec, id)
	}
}

// checkClamp: times before clip c (-1 s, -Inf, NaN) sample as its start,
// times after it (1 s after, +Inf) as its end.
func checkClamp(t *testing.T, c anim.ClipView) {
	t.Helper()
	start, end := sampleAt(t, c, 0), sampleAt(t, c, c.Duration())
	for _, tm := range []float32{-1, float32(math.Inf(-1)), float32(math.NaN())} {
		if !slices.Equal(sampleAt(t, c, tm), start) {
			t.Errorf("%v clip %s: time %v is not the start", c.Codec(), c.Name(), tm)
		}
	}
	for _, tm := range []float32{c.Duration() + 1, float32(math.Inf(1))} {
		if !slices.Equal(sampleAt(t, c, tm), end) {
			t.Errorf("%v clip %s: time %v is not the end", c.Codec(), c.Name(), tm)
		}
	}
}

// checkNoAllocs samples 16 characters on bl's clips (newBenchCrowd's)
// frame after frame at 30 Hz, calling also (when not nil) after each
// frame, and fails the test if a frame allocates.
func checkNoAllocs(t *testing.T, bl *anim.Blob, also func(bc *benchCrowd)) {
	t.Helper()
	bc := newBenchCrowd(t, bl, 16)
	frame := 0
	allocs := testing.AllocsPerRun(200, func() {
		frame++
		bc.setTime(float32(frame) / 30)
		if err := bc.job.Run(); err != nil {
			t.Fatal(err)
		}
		if also != nil {
			also(bc)
		}
	})
	if allocs != 0 {
		t.Errorf("%v: %v allocations per frame", bl.Clip(0).Codec(), allocs)
	}
}
