package offline

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// The curve codec's CPU sampler has a fast path (sampleCurve) beside the
// reference code that the GLSL port follows (format.PureGo selects it):
// both give the same poses and write the same cursor words, bit for bit,
// character by character, frame after frame (each keeps its own
// cursors): forward at 120, 60 and 30 Hz across segment boundaries and
// loops, on frames and halfway between them, on random seeks, at times
// outside the clip, after a change of clip, and on cursors scribbled with
// the same noise. The clips are the CMU ones and synthetic ones with a
// discontinuity, rotations stored with four components, end pairs
// (discontinuities at the clip's last frame) and no animated track.
func TestCurveSamplerMatchesReference(t *testing.T) {
	defer func() { format.PureGo = false }()
	_, _, cmuBytes := cmuData(t)
	sk := synthSkeleton()
	var ccs []*CompressedClip
	for _, c := range []*Clip{spinClip(240, 100), synthClip(75, 30, 74), synthClip(1, 30, 0)} {
		cc, err := Compress(sk, c, CompressOptions{SegmentSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, cc)
	}
	bl := mustLoad(t, slices.Concat(cmuBytes, blobOf(t, sk, ccs...)))
	const n = 40
	stride, bones := 0, 0
	for i := range bl.NumClips() {
		stride = max(stride, bl.Clip(i).CursorWords())
		bones = max(bones, bl.Clip(i).Bones())
	}
	newJob := func() anim.SampleJob {
		return anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride),
			CursorStride: stride, Poses: make([]float32, n*bones*anim.PoseFloats), Bones: bones}
	}
	fast, ref := newJob(), newJob()
	rng := rand.New(rand.NewSource(11))
	clipOf := make([]int, n)
	start := make([]float32, n)
	for i := range n {
		clipOf[i] = i % bl.NumClips()
		start[i] = rng.Float32() * bl.Clip(clipOf[i]).Duration()
	}
	seen := map[string]int{}
	for frame := range 600 {
		what := ""
		for i := range n {
			c := bl.Clip(clipOf[i])
			var tm float32
			switch phase := frame / 100; phase {
			case 0, 1, 2: // forward at 60, 30 and 120 Hz
				what = fmt.Sprintf("forward at %v Hz", []float32{60, 30, 120}[phase])
				tm = start[i] + float32(frame)/[]float32{60, 30, 120}[phase]
				tm = float32(math.Mod(float64(tm), float64(c.Duration())))
			case 3: // on frames and halfway between them, forward
				what = "on frames and halfway"
				tm = float32(frame-300+i) / 2 / c.Rate()
			case 4: // random seeks; times outside the clip
				what = "seeks"
				tm = rng.Float32() * c.Duration()
				if frame%10 == 0 {
					tm = [4]float32{-1, c.Duration() + 1, float32(math.NaN()), c.Duration()}[i%4]
				}
			default: // another clip every few frames, then forward
				what = "changes of clip"
				if frame%7 == 0 && i%3 == frame%3 {
					clipOf[i] = rng.Intn(bl.NumClips())
					c = bl.Clip(clipOf[i])
				}
				tm = float32(math.Mod(float64(start[i]+float32(frame)/45), float64(c.Duration())))
			}
			in := anim.SampleInput{Clip: c.Offset(), Time: tm}
			fast.Inputs[i], ref.Inputs[i] = in, in
		}
		if frame%50 == 49 { // the same noise in both jobs' cursors
			for w := range fast.Cursors {
				if rng.Intn(4) == 0 {
					fast.Cursors[w] = rng.Uint32() & [2]uint32{0xff, math.MaxUint32}[rng.Intn(2)]
					ref.Cursors[w] = fast.Cursors[w]
				}
			}
			what += " (scribbled cursors)"
		}
		format.PureGo = false
		if err := fast.Run(); err != nil {
			t.Fatal(err)
		}
		format.PureGo = true
		if err := ref.Run(); err != nil {
			t.Fatal(err)
		}
		for k := range fast.Poses {
			if math.Float32bits(fast.Poses[k]) != math.Float32bits(ref.Poses[k]) {
				i := k / (bones * anim.PoseFloats)
				t.Fatalf("frame %d (%s): character %d (clip %d, time %v), pose float %d: fast %v, reference %v",
					frame, what, i, clipOf[i], fast.Inputs[i].Time, k%(bones*anim.PoseFloats), fast.Poses[k], ref.Poses[k])
			}
		}
		for w := range fast.Cursors {
			if fast.Cursors[w] != ref.Cursors[w] {
				i := w / stride
				t.Fatalf("frame %d (%s): character %d (clip %d, time %v), cursor word %d: fast %#x, reference %#x",
					frame, what, i, clipOf[i], fast.Inputs[i].Time, w%stride, fast.Cursors[w], ref.Cursors[w])
			}
		}
		for i := range n {
			cv := bl.Clip(clipOf[i])
			for s := range cv.AnimatedTracks() {
				params := ref.Cursors[i*stride+anim.CursorHeaderWords+s*anim.CursorSlotWords+format.SlParams]
				switch {
				case params&format.ParamEndPair != 0:
					seen["end pair"]++
				case params>>3&1 != 0:
					seen["discontinuity"]++
				case params&7 == format.ModeAll:
					seen["four rotation components"]++
				}
			}
			if cv.AnimatedTracks() == 0 {
				seen["no animated tracks"]++
			}
		}
	}
	for _, what := range []string{"end pair", "discontinuity", "four rotation components", "no animated tracks"} {
		if seen[what] == 0 {
			t.Errorf("no character sampled a segment with %s", what)
		}
	}
	t.Logf("track segments sampled: %v", seen)
}

// The fast path allocates nothing, forward and on seeks (checkNoAllocs
// covers forward playback on whichever path is the default).
func TestCurveSamplerSeeksAllocateNothing(t *testing.T) {
	bc := newBenchCrowd(t, cmuBlob(t), 16)
	rng := rand.New(rand.NewSource(3))
	if a := testing.AllocsPerRun(100, func() {
		bc.setTime(rng.Float32() * 40)
		if err := bc.job.Run(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per seek", a)
	}
}
