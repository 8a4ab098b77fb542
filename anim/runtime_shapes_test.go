package anim_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/internal/format"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

// rvCompress compresses c on sk with the codec, failing the test on error.
func rvCompress(t testing.TB, sk *offline.Skeleton, c *offline.Clip, codec anim.Codec) *offline.CompressedClip {
	t.Helper()
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec, Tolerance: 0.0005, SegmentSeconds: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// rvFresh samples cv at tm with a zeroed cursor.
func rvFresh(t testing.TB, cv anim.ClipView, tm float32) []kernels.Transform {
	t.Helper()
	cur := make([]uint32, cv.CursorWords())
	pose := make([]kernels.Transform, cv.Bones())
	if err := cv.Sample(tm, cur, pose); err != nil {
		t.Fatal(err)
	}
	return pose
}

func rvEqual(a, b []kernels.Transform) bool {
	for i := range a {
		for k := range 4 {
			if math.Float32bits(a[i].Rot[k]) != math.Float32bits(b[i].Rot[k]) {
				return false
			}
		}
		for k := range 3 {
			if math.Float32bits(a[i].Trans[k]) != math.Float32bits(b[i].Trans[k]) ||
				math.Float32bits(a[i].Scale[k]) != math.Float32bits(b[i].Scale[k]) {
				return false
			}
		}
	}
	return true
}

// A warm cursor, whatever it played before (forward, backwards, huge
// jumps, special times), gives the pose a fresh cursor gives, bit for
// bit; NaN and negative times are time 0, +Inf and times past the end are
// the clip's duration.
func TestSampleSpecialTimesWarmCursor(t *testing.T) {
	withTimeout(t, 60*time.Second, func() {
		sk, c := animtest.Chain(6, 61, 30) // 2 s
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			_, cv := animtest.Blob(t, sk, rvCompress(t, sk, c, codec))
			dur := cv.Duration()
			inf := float32(math.Inf(1))
			nan := float32(math.NaN())
			var times []float32
			for f := range c.Frames { // exactly at every key, forward
				times = append(times, float32(f)/cv.Rate())
			}
			for f := c.Frames - 1; f >= 0; f-- { // backwards
				times = append(times, float32(f)/cv.Rate()-0.01)
			}
			times = append(times, nan, 1.3, -inf, 0.7, inf, 0.2, 1e30, -1e30, dur, 0, dur, math.Nextafter32(dur, 0), 1.99, 0.01,
				float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 5e-4, 0.25, 0.2499)
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200 {
				times = append(times, rng.Float32()*2.4-0.2)
			}
			cur := make([]uint32, cv.CursorWords())
			pose := make([]kernels.Transform, cv.Bones())
			for i, tm := range times {
				if err := cv.Sample(tm, cur, pose); err != nil {
					t.Fatal(err)
				}
				if want := rvFresh(t, cv, tm); !rvEqual(pose, want) {
					t.Fatalf("%v: step %d time %v: warm cursor's pose differs from a fresh cursor's", codec, i, tm)
				}
			}
			for _, k := range []struct{ tm, as float32 }{{nan, 0}, {-1, 0}, {-inf, 0}, {inf, dur}, {dur + 3, dur}, {1e30, dur}} {
				if !rvEqual(rvFresh(t, cv, k.tm), rvFresh(t, cv, k.as)) {
					t.Errorf("%v: time %v does not sample as %v", codec, k.tm, k.as)
				}
			}
		}
	})
}

// One cursor shared by clips of different sizes and codecs in one blob,
// switching every call: every pose is the fresh cursor's.
func TestCursorAcrossClips(t *testing.T) {
	withTimeout(t, 60*time.Second, func() {
		sk, c := animtest.Chain(6, 61, 30)
		_, c2 := animtest.Chain(6, 50, 25)
		_, c3 := animtest.Chain(6, 10, 24)
		blob, _ := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve), rvCompress(t, sk, c, anim.CodecUniform),
			rvCompress(t, sk, c2, anim.CodecCurve), rvCompress(t, sk, c3, anim.CodecCurve))
		words := 0
		for i := range blob.NumClips() {
			words = max(words, blob.Clip(i).CursorWords())
		}
		cur := make([]uint32, words)
		pose := make([]kernels.Transform, 6)
		rng := rand.New(rand.NewPCG(3, 4))
		for step := range 400 {
			cv := blob.Clip(rng.IntN(blob.NumClips()))
			tm := rng.Float32() * 2.2
			if err := cv.Sample(tm, cur, pose); err != nil {
				t.Fatal(err)
			}
			if !rvEqual(pose, rvFresh(t, cv, tm)) {
				t.Fatalf("step %d: clip %d at %v: pose differs from a fresh cursor's", step, cv.Offset(), tm)
			}
		}
	})
}

// Sample's slice checks: short pose or cursor is an error naming what was
// short; longer ones work and only Bones() transforms are written.
func TestSampleSliceLengths(t *testing.T) {
	sk, c := animtest.Chain(4, 31, 30)
	_, cv := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve))
	err := cv.Sample(0.3, make([]uint32, cv.CursorWords()), make([]kernels.Transform, cv.Bones()-1))
	if err == nil || !strings.Contains(err.Error(), "pose") {
		t.Errorf("short pose: %v", err)
	}
	err = cv.Sample(0.3, make([]uint32, cv.CursorWords()-1), make([]kernels.Transform, cv.Bones()))
	if err == nil || !strings.Contains(err.Error(), "cursor") {
		t.Errorf("short cursor: %v", err)
	}
	if err := cv.Sample(0.3, nil, nil); err == nil {
		t.Error("nil slices: no error")
	}
	var zero anim.ClipView
	if err := zero.Sample(0, nil, nil); err == nil {
		t.Error("zero ClipView: no error")
	}
	pose := make([]kernels.Transform, cv.Bones()+3)
	marker := kernels.Transform{Rot: [4]float32{9, 9, 9, 9}}
	for i := cv.Bones(); i < len(pose); i++ {
		pose[i] = marker
	}
	cur := make([]uint32, cv.CursorWords()+50)
	for i := cv.CursorWords(); i < len(cur); i++ {
		cur[i] = 0xdeadbeef
	}
	if err := cv.Sample(0.3, cur, pose); err != nil {
		t.Fatal(err)
	}
	if !rvEqual(pose[:cv.Bones()], rvFresh(t, cv, 0.3)) {
		t.Error("long slices: pose differs")
	}
	for i := cv.Bones(); i < len(pose); i++ {
		if pose[i] != marker {
			t.Errorf("pose[%d] beyond Bones() written", i)
		}
	}
	for i := cv.CursorWords(); i < len(cur); i++ {
		if cur[i] != 0xdeadbeef {
			t.Fatalf("cursor word %d beyond CursorWords() written", i)
		}
	}
}

// rvFlat is a skeleton of n bones, every bone but the root its child.
func rvFlat(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(min(i-1, 0))
		if i == 0 {
			p[i] = -1
		}
	}
	return p
}

// Skeletons of 1 and MaxBones bones sample and go through LocalToModel;
// 0 and MaxBones+1 bones are refused offline with an error.
func TestSampleBoneCountLimits(t *testing.T) {
	withTimeout(t, 120*time.Second, func() {
		for _, nb := range []int{1, 2, anim.MaxBones} {
			sk := edgeSkeleton(rvFlat(nb))
			c := edgeClip("lim", nb, 4, 30, min(nb, 8))
			for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
				if nb == anim.MaxBones && codec == anim.CodecUniform {
					continue // the uniform rate search is slow on many bones; the curve codec covers the limit
				}
				cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec, Tolerance: 0.001})
				if err != nil {
					t.Fatalf("%d bones %v: %v", nb, codec, err)
				}
				blob, cv := animtest.Blob(t, sk, cc)
				if cv.Bones() != nb {
					t.Fatalf("Bones %d, want %d", cv.Bones(), nb)
				}
				j := anim.SampleJob{Blob: blob, Inputs: []anim.SampleInput{{cv.Offset(), 0.05}, {cv.Offset(), float32(math.NaN())}},
					Cursors: make([]uint32, 2*cv.CursorWords()), CursorStride: cv.CursorWords(), Poses: make([]float32, 2*nb*anim.PoseFloats), Bones: nb}
				if err := j.Run(); err != nil {
					t.Fatalf("%d bones: %v", nb, err)
				}
				if _, err := j.TaskData(0); err != nil {
					t.Errorf("%d bones: TaskData: %v", nb, err)
				}
				parents := cv.Skeleton().Parents(nil)
				model := make([]float32, 2*nb*anim.ModelFloats)
				if err := anim.LocalToModel(parents, j.Poses, model, 0, 2); err != nil {
					t.Fatal(err)
				}
				for i, v := range model {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("%d bones: model float %d is %v", nb, i, v)
					}
				}
				if !rvEqual(kernels.TransformsOf(j.Poses[:nb*anim.PoseFloats]), rvFresh(t, cv, 0.05)) {
					t.Errorf("%d bones %v: SampleJob and Sample differ", nb, codec)
				}
			}
		}
		for _, nb := range []int{0, anim.MaxBones + 1} {
			sk := edgeSkeleton(rvFlat(nb))
			c := edgeClip("lim", nb, 4, 30, min(nb, 8))
			cc, err := offline.Compress(sk, c, offline.CompressOptions{})
			if err == nil {
				var b offline.Builder
				if err = b.AddClip(b.AddSkeleton(sk), cc); err == nil {
					var data []byte
					if data, err = b.Bytes(); err == nil {
						_, err = anim.Load(data)
					}
				}
			}
			if err == nil {
				t.Errorf("%d bones: built and loaded without an error", nb)
			} else if !strings.Contains(err.Error(), "bone") {
				t.Errorf("%d bones: error does not name the bones: %v", nb, err)
			}
		}
	})
}

// A SampleJob whose pose stride exceeds the clip's bones writes the
// identity into the extra bones.
func TestSampleJobExtraBonesIdentity(t *testing.T) {
	sk, c := animtest.Chain(3, 31, 30)
	blob, cv := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve))
	const bones = 7
	poses := make([]float32, bones*anim.PoseFloats)
	for i := range poses {
		poses[i] = float32(math.NaN())
	}
	j := anim.SampleJob{Blob: blob, Inputs: []anim.SampleInput{{cv.Offset(), 0.4}}, Cursors: make([]uint32, cv.CursorWords()), CursorStride: cv.CursorWords(), Poses: poses, Bones: bones}
	if err := j.Run(); err != nil {
		t.Fatal(err)
	}
	id := kernels.Transform{Rot: [4]float32{0, 0, 0, 1}, Scale: [3]float32{1, 1, 1}}
	for b, tr := range kernels.TransformsOf(poses)[cv.Bones():] {
		if tr != id {
			t.Errorf("extra bone %d: %+v, want the identity", cv.Bones()+b, tr)
		}
	}
}

// EventRange and AppendEvents over empty, reversed, NaN, infinite and
// end-of-clip ranges, and a looping window split in two as the docs say.
func TestEventRangeShapes(t *testing.T) {
	sk, c := animtest.Chain(3, 31, 30) // 1 s
	c.Events = []anim.Event{{0, anim.EventFootDown, 1}, {0.25, anim.EventFootUp, 1}, {0.5, anim.EventFootDown, 2}, {0.5, anim.EventFootUp, 0}, {1, anim.EventFootUp, 2}}
	_, cv := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve))
	if cv.NumEvents() != len(c.Events) {
		t.Fatalf("%d events", cv.NumEvents())
	}
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, k := range []struct {
		t0, t1      float32
		first, end_ int
	}{
		{0, 0, 0, 0}, {0.25, 0.25, 1, 1}, {0.6, 0.3, 4, 4}, {-inf, inf, 0, 5}, {0, 1, 0, 4}, {0, math.Nextafter32(1, 2), 0, 5},
		{0.5, 0.5000001, 2, 4}, {1, 2, 4, 5}, {2, 3, 5, 5}, {-5, -1, 0, 0}, {inf, inf, 5, 5}, {0.25, 0.5, 1, 2},
	} {
		f, e := cv.EventRange(k.t0, k.t1)
		if f != k.first || e != k.end_ {
			t.Errorf("EventRange(%v, %v) = [%d,%d), want [%d,%d)", k.t0, k.t1, f, e, k.first, k.end_)
		}
	}
	// NaN bounds: whatever they mean, the range is well formed.
	for _, r := range [][2]float32{{nan, 1}, {0, nan}, {nan, nan}} {
		f, e := cv.EventRange(r[0], r[1])
		if f < 0 || e < f || e > cv.NumEvents() {
			t.Errorf("EventRange(%v, %v) = [%d,%d)", r[0], r[1], f, e)
		}
	}
	// Looping window [0.9, 1.3) over a 1 s loop: [0.9, Duration] then [0, 0.3).
	var got []anim.Event
	got = cv.AppendEvents(got, 0.9, math.Nextafter32(cv.Duration(), 2))
	got = cv.AppendEvents(got, 0, 0.3)
	want := []anim.Event{c.Events[4], c.Events[0], c.Events[1]}
	if !slices.Equal(got, want) {
		t.Errorf("loop window events %v, want %v", got, want)
	}
	dst := make([]anim.Event, 0, 8)
	if a := testing.AllocsPerRun(100, func() { dst = cv.AppendEvents(dst[:0], 0, 2) }); a != 0 {
		t.Errorf("AppendEvents with capacity: %v allocations", a)
	}
	_, c1 := animtest.Chain(3, 1, 30)
	_, cv0 := animtest.Blob(t, sk, rvCompress(t, sk, c1, anim.CodecCurve))
	if f, e := cv0.EventRange(-inf, inf); f != 0 || e != 0 {
		t.Errorf("no events: [%d,%d)", f, e)
	}
}

// LocalToModel with local and model sharing memory is an error, not a
// panic and not a silently wrong matrix.
func TestLocalToModelAliasing(t *testing.T) {
	parents := []int32{-1, 0, 1}
	n := len(parents)
	rest := make([]float32, 0, 2*n*anim.PoseFloats)
	for range 2 * n {
		rest = append(rest, 0, 0, 0, 1, 0, 0.1, 0, 0, 1, 1, 1, 0)
	}
	for _, k := range []struct {
		name string
		mk   func() (local, model []float32)
	}{
		{"same slice", func() ([]float32, []float32) {
			buf := make([]float32, 2*n*anim.ModelFloats)
			copy(buf, rest)
			return buf, buf
		}},
		{"model after local, overlapping the second instance", func() ([]float32, []float32) {
			buf := make([]float32, 2*n*anim.PoseFloats+2*n*anim.ModelFloats)
			copy(buf, rest)
			return buf[:2*n*anim.PoseFloats], buf[n*anim.PoseFloats:]
		}},
	} {
		local, model := k.mk()
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: LocalToModel panicked: %v", k.name, r)
					err = nil
				}
			}()
			err = anim.LocalToModel(parents, local, model, 0, 2)
		}()
		if err == nil {
			t.Errorf("%s: no error for local and model sharing memory", k.name)
		}
	}
}

// One Blob shared by goroutines, each character with its own cursor,
// playing forward, backwards and seeking, while another goroutine builds
// the seek index: every pose is the one a single goroutine computes.
func TestBlobSharedAcrossGoroutines(t *testing.T) {
	withTimeout(t, 120*time.Second, func() {
		sk, c := animtest.Chain(6, 121, 30)
		blob, _ := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve), rvCompress(t, sk, c, anim.CodecUniform))
		const G, steps = 6, 150
		plan := make([][]anim.SampleInput, G)
		for g := range plan {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			tm := float32(0)
			for range steps {
				cv := blob.Clip(rng.IntN(2))
				switch rng.IntN(4) {
				case 0:
					tm = rng.Float32() * 4.5
				case 1:
					tm -= 0.03
				default:
					tm += 1.0 / 60
				}
				plan[g] = append(plan[g], anim.SampleInput{Clip: cv.Offset(), Time: tm})
			}
		}
		words := max(blob.Clip(0).CursorWords(), blob.Clip(1).CursorWords())
		run := func(g int, out [][]kernels.Transform) {
			cur := make([]uint32, words)
			for i, in := range plan[g] {
				cv, err := blob.ClipAt(in.Clip)
				if err != nil {
					t.Error(err)
					return
				}
				out[i] = make([]kernels.Transform, 6)
				if err := cv.Sample(in.Time, cur, out[i]); err != nil {
					t.Error(err)
					return
				}
			}
		}
		want := make([][][]kernels.Transform, G)
		for g := range G {
			want[g] = make([][]kernels.Transform, steps)
			run(g, want[g])
		}
		got := make([][][]kernels.Transform, G)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); blob.BuildSeekIndex() }()
		for g := range G {
			got[g] = make([][]kernels.Transform, steps)
			wg.Add(1)
			go func() { defer wg.Done(); run(g, got[g]) }()
		}
		wg.Wait()
		for g := range G {
			for i := range steps {
				if !rvEqual(got[g][i], want[g][i]) {
					t.Fatalf("goroutine %d step %d: pose differs from the single-goroutine run", g, i)
				}
			}
		}
	})
}

// Steady state: Sample (forward, seeks, with and without the seek index),
// SampleJob.Run, EventRange and LocalToModel allocate nothing.
func TestRuntimeStepsAllocationFree(t *testing.T) {
	sk, c := animtest.Chain(6, 121, 30)
	c.Events = []anim.Event{{0.5, anim.EventFootDown, 1}}
	blob, cv := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve), rvCompress(t, sk, c, anim.CodecUniform))
	cv2 := blob.Clip(1)
	cur := make([]uint32, max(cv.CursorWords(), cv2.CursorWords()))
	poseF := make([]float32, 6*anim.PoseFloats)
	pose := kernels.TransformsOf(poseF)
	tm := float32(0)
	parents := cv.Skeleton().Parents(nil)
	model := make([]float32, 6*anim.ModelFloats)
	j := anim.SampleJob{Blob: blob, Inputs: []anim.SampleInput{{cv.Offset(), 0}, {cv2.Offset(), 0}}, Cursors: make([]uint32, 2*len(cur)), CursorStride: len(cur), Poses: make([]float32, 2*6*anim.PoseFloats), Bones: 6}
	for _, idx := range []bool{false, true} {
		if idx {
			blob.BuildSeekIndex()
		}
		for name, f := range map[string]func(){
			"Sample forward": func() { tm += 1.0 / 60; _ = cv.Sample(tm, cur, pose) },
			"Sample seeks":   func() { tm = float32(math.Mod(float64(tm)+2.7, 4)); _ = cv.Sample(tm, cur, pose) },
			"Sample switching clips": func() {
				tm += 0.1
				_ = cv.Sample(tm, cur, pose)
				_ = cv2.Sample(tm, cur, pose)
			},
			"SampleJob.Run": func() { j.Inputs[0].Time += 0.02; j.Inputs[1].Time += 0.02; _ = j.Run() },
			"EventRange":    func() { cv.EventRange(0, tm) },
			"LocalToModel":  func() { _ = anim.LocalToModel(parents, poseF, model, 0, 1) },
		} {
			tm = 0
			if a := testing.AllocsPerRun(200, f); a != 0 {
				t.Errorf("seek index %v: %s: %v allocations per call", idx, name, a)
			}
		}
	}
}

// kernels.Palette, the per-step chain's palette step, with a palette that
// overlaps the model matrices shifted by one bone: palette[b] would
// overwrite model[b+1] before it is read. It must be an error (as
// ToModelSkin's overlap is), not a silently wrong palette.
func TestPaletteOverlappingModel(t *testing.T) {
	sk, c := animtest.Chain(4, 31, 30)
	_, cv := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve))
	n := cv.Bones()
	pose := rvFresh(t, cv, 0.4)
	buf := make([]kernels.Mat4, n+1)
	model := buf[:n]
	if err := kernels.ToModel(cv.Skeleton().Parents(nil), pose, model); err != nil {
		t.Fatal(err)
	}
	ib := make([]kernels.Mat4, n)
	for b := range ib {
		ib[b] = kernels.Identity()
		ib[b][13] = -0.1 * float32(b)
	}
	want := make([]kernels.Mat4, n)
	if err := kernels.Palette(model, ib, want); err != nil {
		t.Fatal(err)
	}
	err := kernels.Palette(model, ib, buf[1:])
	switch {
	case err == nil && !slices.Equal(buf[1:], want):
		t.Errorf("Palette into memory overlapping model (shifted one bone): no error, and the palette is wrong")
	case err == nil:
		t.Errorf("Palette into memory overlapping model (shifted one bone): no error")
	case !strings.Contains(err.Error(), "share memory"):
		t.Errorf("Palette overlap: error does not say what is wrong: %v", err)
	}
}

// Random corruption of a valid blob (bytes flipped, words overwritten
// with special values, most with the checksum fixed; truncation): Load either refuses it with a *BlobError or returns a blob
// whose every clip samples (curve and uniform, any time, through one
// cursor and through SampleJob) and reports events without a panic.
func TestLoadRandomCorruption(t *testing.T) {
	withTimeout(t, 120*time.Second, func() {
		sk, c := animtest.Chain(4, 46, 30)
		c.Events = []anim.Event{{0.1, anim.EventFootDown, 1}, {0.9, anim.EventFootUp, 2}}
		good, _ := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve), rvCompress(t, sk, c, anim.CodecUniform))
		src := good.Bytes()
		rng := rand.New(rand.NewPCG(7, 8))
		loaded, nonFinite := 0, 0
		for iter := range 20000 {
			data := slices.Clone(src)
			switch iter % 4 {
			case 0:
				for range 1 + rng.IntN(3) {
					i := rng.IntN(len(data))
					data[i] ^= byte(1 << rng.IntN(8))
				}
			case 1:
				i := rng.IntN(len(data)/4) * 4
				v := []uint32{0, 1, 0xffffffff, 0x7fc00000, 0x7f800000, uint32(len(data)), uint32(len(data) + 4), rng.Uint32()}[rng.IntN(8)]
				data[i], data[i+1], data[i+2], data[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			case 2:
				data = data[:rng.IntN(len(data))]
			default:
				data = slices.Concat(data, data[:rng.IntN(len(data))])
			}
			if iter%4 < 2 && iter%8 < 6 {
				fixCRC(data) // past the checksum, into the validation proper
			}
			var bl *anim.Blob
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("iteration %d: Load panicked: %v", iter, r)
					}
				}()
				bl, err = anim.Load(data)
			}()
			if err != nil {
				var be *anim.BlobError
				if !errorsAs(err, &be) {
					t.Fatalf("iteration %d: error is not a *BlobError: %v", iter, err)
				}
				continue
			}
			loaded++
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("iteration %d: a loaded corrupt blob panicked when used: %v", iter, r)
					}
				}()
				for i := range bl.NumClips() {
					cv := bl.Clip(i)
					cur := make([]uint32, cv.CursorWords())
					pose := make([]kernels.Transform, cv.Bones())
					for _, tm := range []float32{0, 0.3, 1.4, 0.2, float32(math.Inf(1)), 0.75} {
						if err := cv.Sample(tm, cur, pose); err != nil {
							t.Fatalf("iteration %d: Sample: %v", iter, err)
						}
						for b, tr := range pose {
							for _, v := range slices.Concat(tr.Rot[:], tr.Trans[:], tr.Scale[:]) {
								if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
									if nonFinite++; nonFinite <= 3 {
										t.Logf("iteration %d (%v clip %d, time %v): bone %d: %+v", iter, cv.Codec(), i, tm, b, tr)
									}
								}
							}
						}
					}
					cv.AppendEvents(nil, -1, 100)
					_ = cv.Skeleton().Parents(nil)
					_ = cv.Skeleton().RestPose(nil)
					_ = cv.Name()
				}
			}()
		}
		if nonFinite > 0 {
			t.Errorf("%d pose floats of loaded corrupt blobs are not finite", nonFinite)
		}
		t.Logf("%d of 20000 corrupt blobs loaded (and sampled)", loaded)
	})
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// A curve track whose quantisation step is finite but huge (a flipped
// exponent bit, the checksum fixed) decodes to Inf and NaN: Load refuses
// it, naming the track's step.
func TestLoadRefusesHugeCurveStep(t *testing.T) {
	sk, c := animtest.Chain(4, 46, 30)
	good, cv := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve))
	if cv.AnimatedTracks() == 0 {
		t.Fatal("no animated tracks")
	}
	w := good.Words()
	desc := int(cv.Offset())/4 + int(w[int(cv.Offset())/4+format.ChTracks])/4
	for _, step := range []float32{3.4e33, math.MaxFloat32} {
		data := slices.Clone(good.Bytes())
		binary.LittleEndian.PutUint32(data[4*(desc+2):], math.Float32bits(step))
		fixCRC(data)
		bl, err := anim.Load(data)
		if err != nil {
			if !strings.Contains(err.Error(), "step") {
				t.Errorf("step %v: error does not name the step: %v", step, err)
			}
			continue
		}
		pose := make([]kernels.Transform, cv.Bones())
		cur := make([]uint32, cv.CursorWords())
		for _, tm := range []float32{0, 0.4, 1.5} {
			if err := bl.Clip(0).Sample(tm, cur, pose); err != nil {
				t.Fatal(err)
			}
			for b, tr := range pose {
				for _, v := range slices.Concat(tr.Rot[:], tr.Trans[:], tr.Scale[:]) {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("step %v loaded, and bone %d at %v s samples as %+v", step, b, tm, tr)
					}
				}
			}
		}
	}
}
