package offline

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// Playing forward (one cursor kept across calls, at irregular steps that
// cross segments) and seeking (a fresh cursor for every call) give
// bit-identical poses; so do backward jumps and clip changes.
func TestSampleForwardEqualsSeek(t *testing.T) {
	bl := cmuBlob(t)
	for i := range bl.NumClips() {
		checkKeptCursor(t, bl.Clip(i), rand.New(rand.NewSource(int64(i))), 20, 2, 3, 25)
	}
}

// One call with many characters (different clips, times, and a pose
// stride larger than the clips) equals each character alone; RunRange
// over pieces equals Run.
func TestSampleManyCharacters(t *testing.T) {
	bl := cmuBlob(t)
	const n, bones = 40, 33
	stride := 0
	for i := range bl.NumClips() {
		stride = max(stride, bl.Clip(i).CursorWords())
	}
	rng := rand.New(rand.NewSource(5))
	in := make([]anim.SampleInput, n)
	for i := range in {
		c := bl.Clip(rng.Intn(bl.NumClips()))
		in[i] = anim.SampleInput{Clip: c.Offset(), Time: rng.Float32() * c.Duration()}
	}
	all := anim.SampleJob{Blob: bl, Inputs: in, Cursors: make([]uint32, n*stride), CursorStride: stride, Poses: make([]float32, n*bones*anim.PoseFloats), Bones: bones}
	if err := all.Run(); err != nil {
		t.Fatal(err)
	}
	parts := all
	parts.Cursors = make([]uint32, n*stride)
	parts.Poses = make([]float32, n*bones*anim.PoseFloats)
	for _, r := range [][2]int{{0, 7}, {7, 7}, {7, 31}, {31, 40}} {
		if err := parts.RunRange(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(all.Poses, parts.Poses) {
		t.Error("RunRange pieces differ from Run")
	}
	for i := range in {
		c, _ := bl.ClipAt(in[i].Clip)
		want := sampleAt(t, c, in[i].Time)
		got := all.Poses[i*bones*anim.PoseFloats : (i+1)*bones*anim.PoseFloats]
		if !slices.Equal(got[:31*anim.PoseFloats], want) {
			t.Fatalf("character %d differs from sampling it alone", i)
		}
		for b := 31; b < bones; b++ {
			id := []float32{0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0}
			if !slices.Equal(got[b*anim.PoseFloats:(b+1)*anim.PoseFloats], id) {
				t.Fatalf("character %d extra bone %d is %v, want identity", i, b, got[b*anim.PoseFloats:(b+1)*anim.PoseFloats])
			}
		}
	}
}

// Rotations come out unit length, and at an original sample time the pose
// is the source's within the compression's error (a coarse sanity check;
// TestCMUCompression measures it properly).
func TestSamplePoseLayout(t *testing.T) {
	ims, _, data := cmuData(t)
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	src := ims[0].Clips[0]
	p := sampleAt(t, bl.Clip(0), float32(100/src.Rate))
	local := make([]Transform, 31)
	src.Pose(100, local)
	for b := range 31 {
		q := p[b*anim.PoseFloats : b*anim.PoseFloats+4]
		if n := q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3]; math.Abs(float64(n)-1) > 1e-5 {
			t.Errorf("bone %d rotation length² %v", b, n)
		}
		for k := range 3 {
			if d := math.Abs(float64(p[b*anim.PoseFloats+4+k]) - local[b].T[k]); d > 1e-3 {
				t.Errorf("bone %d translation %d: %v vs %v", b, k, p[b*anim.PoseFloats+4+k], local[b].T[k])
			}
			if p[b*anim.PoseFloats+8+k] != 1 {
				t.Errorf("bone %d scale %v", b, p[b*anim.PoseFloats+8+k])
			}
		}
		if p[b*anim.PoseFloats+7] != 0 || p[b*anim.PoseFloats+11] != 0 {
			t.Errorf("bone %d padding %v %v", b, p[b*anim.PoseFloats+7], p[b*anim.PoseFloats+11])
		}
		if a := quatAngle(local[b].R, Quat{float64(q[0]), float64(q[1]), float64(q[2]), float64(q[3])}); a > 0.01 {
			t.Errorf("bone %d rotation off by %v rad", b, a)
		}
	}
}

// TestSamplePoseWords samples characters with bones beyond the clip's
// (which get the identity) and checks every word of the layout.
func TestSamplePoseWords(t *testing.T) {
	checkPoseLayout(t, cmuBlob(t), 50, 1)
}

// Times outside the clip clamp; NaN reads as 0.
func TestSampleTimeClamp(t *testing.T) {
	checkClamp(t, cmuBlob(t).Clip(0))
}

// Cursors are caller memory: any content must be safe (no panic, no
// hang), and a cursor that does not match its clip is reset.
func TestSampleScribbledCursor(t *testing.T) {
	bl := cmuBlob(t)
	c := bl.Clip(1)
	rng := rand.New(rand.NewSource(6))
	j := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: c.Offset()}}, Cursors: make([]uint32, c.CursorWords()),
		CursorStride: c.CursorWords(), Poses: make([]float32, 31*anim.PoseFloats), Bones: 31}
	for trial := range 300 {
		tm := rng.Float32() * c.Duration()
		j.Inputs[0].Time = tm
		if err := j.Run(); err != nil {
			t.Fatal(err)
		}
		// Scribble: all random, or a plausible header over random slots.
		for i := range j.Cursors {
			j.Cursors[i] = rng.Uint32()
			if rng.Intn(4) == 0 {
				j.Cursors[i] &= 0xff
			}
		}
		if trial%2 == 0 {
			j.Cursors[format.CurClip] = c.Offset()
		}
		j.Inputs[0].Time = tm + rng.Float32()
		if err := j.Run(); err != nil {
			t.Fatal(err)
		}
		if j.Cursors[format.CurClip] != c.Offset() {
			t.Fatal("cursor not claimed by its clip")
		}
		if trial%2 == 1 && !slices.Equal(j.Poses, sampleAt(t, c, j.Inputs[0].Time)) {
			t.Fatal("a foreign cursor was not reset")
		}
	}
}

// Sampling and local-to-model never allocate.
func TestSampleNoAllocs(t *testing.T) {
	bl := cmuBlob(t)
	parents := bl.Clip(0).Skeleton().Parents(nil)
	model := make([]float32, 16*31*anim.ModelFloats)
	checkNoAllocs(t, bl, func(bc *benchCrowd) {
		if err := anim.LocalToModel(parents, bc.job.Poses, model, 0, 16); err != nil {
			t.Fatal(err)
		}
		var buf [64]anim.Event // holds every event of the clip
		if ev := bl.Clip(0).AppendEvents(buf[:0], 0, 30); len(ev) == 0 {
			t.Fatal("no events")
		}
	})
}

// Every invalid job is rejected, each with its own error, before any
// number is looked at.
func TestSampleJobValidate(t *testing.T) {
	bl := cmuBlob(t)
	c := bl.Clip(0)
	cw := c.CursorWords()
	good := func() anim.SampleJob {
		return anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: c.Offset(), Time: 1}, {Clip: bl.Clip(1).Offset(), Time: 2}},
			Cursors: make([]uint32, 2*cw), CursorStride: cw, Poses: make([]float32, 2*31*anim.PoseFloats), Bones: 31}
	}
	g := good()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		mut        func(j *anim.SampleJob)
	}{
		{"nil blob", "nil Blob", func(j *anim.SampleJob) { j.Blob = nil }},
		{"no bones", "Bones 0", func(j *anim.SampleJob) { j.Bones = 0 }},
		{"stride below header", "CursorStride", func(j *anim.SampleJob) { j.CursorStride = 3 }},
		{"short cursors", "cursor words", func(j *anim.SampleJob) { j.Cursors = j.Cursors[:2*cw-1] }},
		{"short poses", "pose floats", func(j *anim.SampleJob) { j.Poses = j.Poses[:len(j.Poses)-1] }},
		{"not a clip", "not a clip", func(j *anim.SampleJob) { j.Inputs[1].Clip += 4 }},
		{"clip offset zero", "not a clip", func(j *anim.SampleJob) { j.Inputs[0].Clip = 0 }},
		{"clip bones above stride", "pose stride", func(j *anim.SampleJob) { j.Bones = 30; j.Poses = j.Poses[:2*30*anim.PoseFloats] }},
		{"cursor stride too small", "cursor words", func(j *anim.SampleJob) { j.CursorStride = cw - 1 }},
	}
	for _, tc := range cases {
		j := good()
		tc.mut(&j)
		err := j.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if err2 := j.Run(); err2 == nil {
			t.Errorf("%s: Run accepted it", tc.name)
		}
	}
	for _, r := range [][2]int{{-1, 1}, {1, 0}, {0, 3}} {
		j := good()
		if err := j.RunRange(r[0], r[1]); err == nil || !strings.Contains(err.Error(), "range") {
			t.Errorf("range %v: error %v", r, err)
		}
	}
}

// A clip with no animated tracks (one frame) samples to its default pose.
func TestSampleStaticClip(t *testing.T) {
	c := synthClip(1, 30, 0)
	cc, data := synthBlob(t, c, CompressOptions{})
	if cc.Stats.AnimatedTracks != 0 {
		t.Fatalf("%d animated tracks in a one-frame clip", cc.Stats.AnimatedTracks)
	}
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if bl.Clip(0).Duration() != 0 {
		t.Error("duration of a one-frame clip")
	}
	p := sampleAt(t, bl.Clip(0), 3)
	if p[5] != 1 {
		t.Errorf("root y %v", p[5])
	}
}
