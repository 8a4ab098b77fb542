package anim_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/internal/format"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// noisyChain is animtest.Chain with frame-to-frame jitter on every
// rotation, as motion capture has: at a fine tolerance nearly every
// sample becomes a curve point, so the stream is dense and the seek
// index takes several snapshots per segment.
func noisyChain(t *testing.T, nb, frames int) (*anim.Blob, anim.ClipView) {
	t.Helper()
	sk, c := animtest.Chain(nb, frames, 120)
	rng := rand.New(rand.NewSource(5))
	for k := range c.Tracks {
		if k%3 != 1 {
			continue
		}
		for f := range c.Tracks[k].Values {
			q := &c.Tracks[k].Values[f]
			var n float64
			for i := range q {
				q[i] += 0.004 * (rng.Float64() - 0.5)
				n += q[i] * q[i]
			}
			for i := range q {
				q[i] /= math.Sqrt(n)
			}
		}
	}
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.0001, SegmentSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	blob, cv := animtest.Blob(t, sk, cc)
	if n, _ := anim.SeekIndexSize(blob, cv.Offset()); n != 0 || blob.SeekIndexBytes() != 0 {
		t.Fatalf("a seek index before BuildSeekIndex: %d snapshots, %d bytes", n, blob.SeekIndexBytes())
	}
	if got := blob.BuildSeekIndex(); got == 0 || got != blob.SeekIndexBytes() || blob.BuildSeekIndex() != got {
		t.Fatalf("BuildSeekIndex returned %d, SeekIndexBytes %d", got, blob.SeekIndexBytes())
	}
	return blob, cv
}

// The curve sampler's seek index (Blob.BuildSeekIndex, used by the CPU's fast
// path on seeks) gives the reference's poses and cursor words bit for
// bit: seeks to every frame of a dense clip and halfway between frames,
// in random order, each from the cursor the previous seek left (another
// segment, or earlier or later in the same one) and from scribbled
// cursors, then forward playback from each.
func TestCurveSeekIndexMatchesReference(t *testing.T) {
	defer func() { format.PureGo = false }()
	blob, cv := noisyChain(t, 6, 481)
	if n, _ := anim.SeekIndexSize(blob, cv.Offset()); n < 8 {
		t.Fatalf("%d snapshots in the seek index of a dense 4 s clip", n)
	}
	var times []float32
	for f := range 2 * 481 {
		times = append(times, float32(f)/2/120)
	}
	rng := rand.New(rand.NewSource(6))
	rng.Shuffle(len(times), func(i, j int) { times[i], times[j] = times[j], times[i] })
	const nb = 6
	newJob := func() anim.SampleJob {
		return anim.SampleJob{Blob: blob, Inputs: make([]anim.SampleInput, 2), Cursors: make([]uint32, 2*cv.CursorWords()),
			CursorStride: cv.CursorWords(), Poses: make([]float32, 2*nb*anim.PoseFloats), Bones: nb}
	}
	fast, ref := newJob(), newJob()
	for i, tm := range times {
		for c := range 2 {
			// Character 1 also plays a few frames forward after each seek.
			in := anim.SampleInput{Clip: cv.Offset(), Time: tm + float32(i%4*c)/120}
			fast.Inputs[c], ref.Inputs[c] = in, in
		}
		if i%97 == 96 {
			for w := range fast.Cursors {
				if rng.Intn(3) == 0 {
					fast.Cursors[w] = rng.Uint32() & [2]uint32{0xff, math.MaxUint32}[rng.Intn(2)]
					ref.Cursors[w] = fast.Cursors[w]
				}
			}
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
				t.Fatalf("seek %d to %v s: pose float %d: fast %v, reference %v", i, tm, k, fast.Poses[k], ref.Poses[k])
			}
		}
		for w := range fast.Cursors {
			if fast.Cursors[w] != ref.Cursors[w] {
				t.Fatalf("seek %d to %v s: cursor word %d: fast %#x, reference %#x", i, tm, w, fast.Cursors[w], ref.Cursors[w])
			}
		}
	}
}

// A clip's seek index holds at most SeekDensity times its stream's words,
// besides a word per animated track and segment and three per segment;
// a uniform clip has none.
func TestCurveSeekIndexBounded(t *testing.T) {
	blob, cv := noisyChain(t, 6, 481)
	n, words := anim.SeekIndexSize(blob, cv.Offset())
	h := blob.Words()[cv.Offset()/4:]
	stream, nseg, nslot := int(h[format.ChStreamWords]), int(h[format.ChSegments]), int(h[format.ChSlots])
	if limit := anim.SeekDensity*stream + nseg*(nslot+3) + 1; n == 0 || words > limit {
		t.Errorf("seek index: %d snapshots, %d words; stream %d words, %d segments of %d tracks: limit %d", n, words, stream, nseg, nslot, limit)
	}
	t.Logf("%d snapshots, %d words for a stream of %d words", n, words, stream)

	sk, c := animtest.Chain(4, 200, 60)
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: anim.CodecUniform})
	if err != nil {
		t.Fatal(err)
	}
	ub, ucv := animtest.Blob(t, sk, cc)
	if ub.BuildSeekIndex() != 0 {
		t.Errorf("uniform clip: a seek index of %d bytes", ub.SeekIndexBytes())
	}
	if n, w := anim.SeekIndexSize(ub, ucv.Offset()); n != 0 || w != 0 {
		t.Errorf("uniform clip: seek index of %d snapshots, %d words", n, w)
	}
}
