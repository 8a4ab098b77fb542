package anim_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// TestSampleJobMismatched: pose buffers too short, strides below the
// clip's, clip offsets that name no clip and a nil blob are errors that
// say what is wrong, and Run writes nothing then.
func TestSampleJobMismatched(t *testing.T) {
	sk, c := animtest.Chain(5, 20, 30)
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	blob, cv := animtest.Blob(t, sk, cc)
	good := func() anim.SampleJob {
		return anim.SampleJob{
			Blob:         blob,
			Inputs:       []anim.SampleInput{{Clip: cv.Offset(), Time: 0.3}, {Clip: cv.Offset(), Time: 0.1}},
			Cursors:      make([]uint32, 2*cv.CursorWords()),
			CursorStride: cv.CursorWords(),
			Poses:        make([]float32, 2*5*anim.PoseFloats),
			Bones:        5,
		}
	}
	g := good()
	if err := g.Run(); err != nil {
		t.Fatalf("good job: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(j *anim.SampleJob)
		want string
	}{
		{"nil blob", func(j *anim.SampleJob) { j.Blob = nil }, "lob"},
		{"short poses", func(j *anim.SampleJob) { j.Poses = j.Poses[:len(j.Poses)-1] }, "ose"},
		{"bones below the clip's", func(j *anim.SampleJob) { j.Bones = 4; j.Poses = j.Poses[:2*4*anim.PoseFloats] }, "ones"},
		{"short cursors", func(j *anim.SampleJob) { j.Cursors = j.Cursors[:len(j.Cursors)-1] }, "ursor"},
		{"stride below the clip's", func(j *anim.SampleJob) { j.CursorStride--; j.Cursors = j.Cursors[:2*j.CursorStride] }, "ursor"},
		{"zero stride", func(j *anim.SampleJob) { j.CursorStride = 0 }, "ursor"},
		{"clip offset 0", func(j *anim.SampleJob) { j.Inputs[1].Clip = 0 }, "clip"},
		{"clip offset misaligned", func(j *anim.SampleJob) { j.Inputs[1].Clip = cv.Offset() + 2 }, "clip"},
		{"clip offset past the blob", func(j *anim.SampleJob) { j.Inputs[1].Clip = math.MaxUint32 }, "clip"},
		{"negative bones", func(j *anim.SampleJob) { j.Bones = -5 }, "ones"},
	} {
		j := good()
		tc.mod(&j)
		for i := range j.Poses {
			j.Poses[i] = 7
		}
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = errors.New("panic")
					t.Errorf("%s: Run panicked: %v", tc.name, r)
				}
			}()
			return j.Run()
		}()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
			t.Errorf("%s: error %q does not name %q", tc.name, err, tc.want)
		}
		t.Logf("%s: %v", tc.name, err)
		for i, v := range j.Poses {
			if v != 7 {
				t.Errorf("%s: pose[%d] written despite the error", tc.name, i)
				break
			}
		}
		if err := j.RunRange(1, 0); err == nil {
			t.Errorf("%s: RunRange(1, 0): no error", tc.name)
		}
	}
	j := good()
	for _, r := range [][2]int{{-1, 1}, {0, 3}, {2, 1}} {
		if err := j.RunRange(r[0], r[1]); err == nil {
			t.Errorf("RunRange(%d, %d) of 2 characters: no error", r[0], r[1])
		}
	}
}

// TestSampleTimes: times before 0, NaN, after the end, +-Inf and
// exactly at the last frame read the clip clamped (NaN as 0), equal to
// the source's first or last frame within the tolerance.
func TestSampleTimes(t *testing.T) {
	sk, c := animtest.Chain(5, 46, 30) // 1.5 s
	dur := float32(c.Duration())
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec, Tolerance: 0.0005})
		if err != nil {
			t.Fatal(err)
		}
		blob, cv := animtest.Blob(t, sk, cc)
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
		fwd := animtest.Sample(t, blob, cv, times)
		for i, k := range cases {
			alone := animtest.Sample(t, blob, cv, []float32{k.tm})[0]
			for _, p := range [][]float32{fwd[i], alone} {
				ref, off := animtest.Vertices(sk.Parents, animtest.RefLocal(c, k.ref), 0.03, nil)
				got, _ := animtest.Vertices(sk.Parents, animtest.PoseLocal(p, sk.NumBones()), 0.03, off)
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
