package anim_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

// edgeSkeleton builds a skeleton with the given parent table, bones 5 cm
// from their parents.
func edgeSkeleton(parents []int32) *offline.Skeleton {
	sk := &offline.Skeleton{Name: "edge"}
	for b, p := range parents {
		sk.Names = append(sk.Names, fmt.Sprintf("bone%d", b))
		sk.Parents = append(sk.Parents, p)
		tr := offline.IdentityTransform
		if p >= 0 {
			tr.T = offline.Vec3{0, 0.05, 0}
		}
		sk.Rest = append(sk.Rest, tr)
	}
	return sk
}

// edgeClip: every bone with an animated rotation (or only the first
// `animated` bones), the root translating; smooth sines.
func edgeClip(name string, nb, frames int, rate float64, animated int) *offline.Clip {
	c := &offline.Clip{Name: name, Rate: rate, Frames: frames, Tracks: make([]offline.Track, 3*nb)}
	for b := range nb {
		for f := range frames {
			t := float64(f) / rate
			c.Tracks[3*b].Frames = append(c.Tracks[3*b].Frames, int32(f))
			tv := [4]float64{0, 0.05, 0, 0}
			if b == 0 {
				tv = [4]float64{0.5 * math.Sin(2*t), 0.1 * t, 0.3 * math.Cos(t), 0}
				if frames == 2 {
					tv = [4]float64{0.2 * float64(f), 0, -0.1 * float64(f), 0}
				}
			}
			c.Tracks[3*b].Values = append(c.Tracks[3*b].Values, tv)
			a := 0.0
			if b < animated {
				a = 0.8 * math.Sin(1.3*t+float64(b))
				if frames == 2 {
					a = 0.25 * float64(f) * float64(1+b%3) / float64(1+nb/100)
				}
			}
			ax := [3]float64{0.48, 0.6, 0.64}
			s, co := math.Sin(a/2), math.Cos(a/2)
			c.Tracks[3*b+1].Frames = append(c.Tracks[3*b+1].Frames, int32(f))
			c.Tracks[3*b+1].Values = append(c.Tracks[3*b+1].Values, [4]float64{ax[0] * s, ax[1] * s, ax[2] * s, co})
			c.Tracks[3*b+2].Frames = append(c.Tracks[3*b+2].Frames, int32(f))
			c.Tracks[3*b+2].Values = append(c.Tracks[3*b+2].Values, [4]float64{1, 1, 1, 0})
		}
	}
	return c
}

// refLocal is the source's value at time t (clamped): lerp for
// translations, slerp on the shorter arc for rotations (glTF LINEAR).
func refLocal(c *offline.Clip, b int, t float64) (tr [3]float64, q [4]float64) {
	d := float64(c.Frames-1) / c.Rate
	if !(t > 0) {
		t = 0
	}
	if t > d {
		t = d
	}
	x := t * c.Rate
	f0 := int(math.Floor(x))
	if f0 >= c.Frames-1 {
		f0 = max(0, c.Frames-1)
	}
	u := x - float64(f0)
	f1 := min(f0+1, c.Frames-1)
	a, bb := c.Tracks[3*b].Values[f0], c.Tracks[3*b].Values[f1]
	for i := range 3 {
		tr[i] = a[i] + u*(bb[i]-a[i])
	}
	qa, qb := c.Tracks[3*b+1].Values[f0], c.Tracks[3*b+1].Values[f1]
	dot := qa[0]*qb[0] + qa[1]*qb[1] + qa[2]*qb[2] + qa[3]*qb[3]
	if dot < 0 {
		for i := range 4 {
			qb[i] = -qb[i]
		}
		dot = -dot
	}
	dot = math.Min(1, dot)
	th := math.Acos(dot)
	if th < 1e-9 {
		return tr, qa
	}
	sa, sb := math.Sin((1-u)*th)/math.Sin(th), math.Sin(u*th)/math.Sin(th)
	for i := range 4 {
		q[i] = sa*qa[i] + sb*qb[i]
	}
	return tr, q
}

func edgeBlob(t testing.TB, sk *offline.Skeleton, ccs ...*offline.CompressedClip) *anim.Blob {
	t.Helper()
	bl, _ := animtest.Blob(t, sk, ccs[0], ccs[1:]...)
	return bl
}

func withTimeout(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("timed out after %v", d)
	}
}

func bushy(n int) []int32 {
	r := rand.New(rand.NewPCG(uint64(n), 77))
	p := make([]int32, n)
	p[0] = -1
	for i := 1; i < n; i++ {
		p[i] = int32(max(0, i-1-r.IntN(8)))
	}
	return p
}

// Clips of 1, 2, 3 and 17 frames on skeletons of 1, 3 and MaxBones bones,
// both codecs: sampled at awkward times, in awkward orders, against the
// source (glTF LINEAR) and against each other where the contract makes
// them equal (clamps, NaN).
func TestSampleShapes(t *testing.T) {
	type shape struct {
		parents  []int32
		frames   int
		animated int
	}
	var shapes []shape
	for _, fr := range []int{1, 2, 3, 17} {
		shapes = append(shapes, shape{[]int32{-1}, fr, 1}, shape{[]int32{-1, 0, 0}, fr, 3})
	}
	shapes = append(shapes, shape{bushy(anim.MaxBones), 2, 4}, shape{bushy(anim.MaxBones), 5, 40}, shape{[]int32{-1, 0, 1, 0}, 90, 4}, shape{[]int32{-1, 0, 1, 0}, 257, 4})
	for _, sh := range shapes {
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			name := fmt.Sprintf("bones%d/frames%d/%v", len(sh.parents), sh.frames, codec)
			t.Run(name, func(t *testing.T) {
				sk := edgeSkeleton(sh.parents)
				c := edgeClip("c", len(sh.parents), sh.frames, 30, sh.animated)
				var cc *offline.CompressedClip
				var err error
				withTimeout(t, 120*time.Second, func() {
					o := offline.CompressOptions{Tolerance: 0.0005, Codec: codec}
					if sh.frames >= 90 {
						o.SegmentSeconds, o.UniformSegmentFrames = 0.2, 2
						if sh.frames > 90 {
							o.UniformSegmentFrames = 256
						}
					}
					cc, err = offline.Compress(sk, c, o)
				})
				if err != nil {
					t.Fatalf("Compress: %v", err)
				}
				bl := edgeBlob(t, sk, cc)
				cv := bl.Clip(0)
				nb := cv.Bones()
				dur := cv.Duration()
				wantDur := float32(float64(sh.frames-1) / 30)
				if dur != wantDur {
					t.Errorf("Duration %v, want %v", dur, wantDur)
				}
				cur := make([]uint32, cv.CursorWords())
				pose := make([]kernels.Transform, nb)
				get := func(tm float32) []kernels.Transform {
					if err := cv.Sample(tm, cur, pose); err != nil {
						t.Fatal(err)
					}
					return append([]kernels.Transform(nil), pose...)
				}
				eq := func(a, b []kernels.Transform, what string) {
					for i := range a {
						if a[i] != b[i] {
							t.Errorf("%s: bone %d: %v vs %v", what, i, a[i], b[i])
							return
						}
					}
				}
				inf := float32(math.Inf(1))
				nan := float32(math.NaN())
				next := math.Nextafter32
				times := []float32{0, dur, dur / 2, -1, 0, nan, inf, -inf, 1e30, -1e30, next(dur, 0), next(dur, 2*dur+1), dur, 0, next(0, 1), dur * 0.999, dur * 0.001, float32(math.Copysign(0, -1)), float32(math.SmallestNonzeroFloat32)}
				for k := 0; k < 40; k++ {
					times = append(times, float32(k)/39*dur)
				}
				for k := 39; k >= 0; k-- {
					times = append(times, float32(k)/39*dur+0.0001)
				}
				for f := sh.frames - 1; f >= 0; f-- { // every frame and midpoint, backwards
					times = append(times, float32(f)/30, (float32(f)+0.5)/30)
				}
				for f := 0; f < sh.frames; f += 3 { // forward in strides across segments
					times = append(times, float32(f)/30)
				}
				p0 := get(0)
				pEnd := get(dur)
				// Clamps and NaN, from every preceding state.
				for _, tm := range times {
					get(tm)
					eq(get(nan), p0, "NaN vs 0")
					get(tm)
					eq(get(-1), p0, "-1 vs 0")
					get(tm)
					eq(get(-inf), p0, "-Inf vs 0")
					get(tm)
					eq(get(inf), pEnd, "+Inf vs Duration")
					get(tm)
					eq(get(1e30), pEnd, "1e30 vs Duration")
					get(tm)
					eq(get(dur+10), pEnd, "Duration+10 vs Duration")
				}
				// Against the source, in the given order (backwards, jumps).
				for _, tm := range times {
					p := get(tm)
					// Same time with a fresh cursor: the same bits.
					fresh := make([]uint32, cv.CursorWords())
					p2 := make([]kernels.Transform, nb)
					if err := cv.Sample(tm, fresh, p2); err != nil {
						t.Fatal(err)
					}
					eq(p2, p, fmt.Sprintf("t=%v fresh cursor vs kept cursor", tm))
					for b := range nb {
						tr, q := refLocal(c, b, float64(tm))
						for i := range 3 {
							if math.Abs(float64(p[b].Trans[i])-tr[i]) > 0.003 {
								t.Fatalf("t=%v bone %d translation %v, want %v", tm, b, p[b].Trans, tr)
							}
							if p[b].Scale[i] != 1 && math.Abs(float64(p[b].Scale[i])-1) > 0.01 {
								t.Fatalf("t=%v bone %d scale %v", tm, b, p[b].Scale)
							}
						}
						dot := 0.0
						for i := range 4 {
							dot += float64(p[b].Rot[i]) * q[i]
						}
						if math.Abs(dot) < math.Cos(0.05/2) {
							t.Fatalf("t=%v bone %d rotation %v, want %v (angle %.3f rad)", tm, b, p[b].Rot, q, 2*math.Acos(math.Min(1, math.Abs(dot))))
						}
					}
				}
				// Pose longer than the clip: only Bones() transforms written.
				long := make([]kernels.Transform, nb+2)
				long[nb] = kernels.Transform{Trans: [3]float32{9, 9, 9}}
				if err := cv.Sample(0, cur, long); err != nil {
					t.Fatal(err)
				}
				if long[nb].Trans != [3]float32{9, 9, 9} {
					t.Errorf("Sample wrote beyond Bones()")
				}
				// Errors.
				if err := cv.Sample(0, cur, pose[:nb-1]); err == nil {
					t.Error("short pose: no error")
				}
				if cv.CursorWords() > 0 {
					if err := cv.Sample(0, cur[:cv.CursorWords()-1], pose); err == nil {
						t.Error("short cursor: no error")
					}
				}
				if a := testing.AllocsPerRun(20, func() { _ = cv.Sample(dur/3, cur, pose) }); a != 0 {
					t.Errorf("Sample allocates %v", a)
				}
			})
		}
	}
}

// Many characters: several clips in one blob (different bone counts and
// codecs), each character on its own clip and time, sampled by one
// SampleJob over many steps (forward, backward, jumps, clip changes),
// must equal each character sampled alone with Sample and its own cursor.
func TestManyCharacters(t *testing.T) {
	sk := edgeSkeleton([]int32{-1, 0, 1, 2, 1, 4, 0})
	var ccs []*offline.CompressedClip
	var srcs []*offline.Clip
	for i, fr := range []int{1, 2, 45, 90, 31} {
		c := edgeClip(fmt.Sprintf("clip%d", i), 7, fr, 30, 7)
		codec := anim.Codec(i % 2)
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.0005, Codec: codec, SegmentSeconds: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, cc)
		srcs = append(srcs, c)
	}
	bl := edgeBlob(t, sk, ccs...)
	if bl.NumClips() != len(ccs) {
		t.Fatalf("%d clips", bl.NumClips())
	}
	stride := 0
	for i := range bl.NumClips() {
		stride = max(stride, bl.Clip(i).CursorWords())
	}
	const n = 64
	r := rand.New(rand.NewPCG(1, 1))
	job := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride), CursorStride: stride,
		Poses: make([]float32, n*9*anim.PoseFloats), Bones: 9}
	own := make([][]uint32, n)
	clipOf := make([]int, n)
	tm := make([]float32, n)
	for i := range n {
		own[i] = make([]uint32, stride)
		clipOf[i] = r.IntN(bl.NumClips())
	}
	pose := make([]kernels.Transform, 9)
	for step := range 200 {
		for i := range n {
			cv := bl.Clip(clipOf[i])
			switch x := r.IntN(20); {
			case x == 0:
				clipOf[i] = r.IntN(bl.NumClips())
				tm[i] = r.Float32() * bl.Clip(clipOf[i]).Duration()
			case x == 1:
				tm[i] = r.Float32()*4 - 1
			case x == 2:
				tm[i] -= 0.1
			default:
				tm[i] += 1.0 / 60
				if tm[i] > cv.Duration() {
					tm[i] = 0
				}
			}
			job.Inputs[i] = anim.SampleInput{Clip: bl.Clip(clipOf[i]).Offset(), Time: tm[i]}
		}
		if err := job.Run(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			cv := bl.Clip(clipOf[i])
			for k := range pose {
				pose[k] = kernels.Transform{Rot: [4]float32{5, 5, 5, 5}}
			}
			if err := cv.Sample(tm[i], own[i], pose); err != nil {
				t.Fatal(err)
			}
			got := kernels.TransformsOf(job.Poses[i*9*anim.PoseFloats : (i+1)*9*anim.PoseFloats])
			for b := range cv.Bones() {
				if got[b] != pose[b] {
					t.Fatalf("step %d char %d clip %d t=%v bone %d: job %v, alone %v", step, i, clipOf[i], tm[i], b, got[b], pose[b])
				}
			}
			for b := cv.Bones(); b < 9; b++ {
				id := kernels.Transform{Rot: [4]float32{0, 0, 0, 1}, Scale: [3]float32{1, 1, 1}}
				if got[b] != id {
					t.Fatalf("step %d char %d: extra bone %d = %v, want identity", step, i, b, got[b])
				}
			}
		}
	}
	// RunRange splits agree with one Run.
	all := append([]float32(nil), job.Poses...)
	for i := range job.Cursors {
		job.Cursors[i] = 0xdeadbeef // scribbled cursors are safe
	}
	for b := 0; b < n; b += 7 {
		if err := job.RunRange(b, min(n, b+7)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range all {
		if all[i] != job.Poses[i] && !(all[i] != all[i]) {
			t.Fatalf("RunRange split with scribbled cursors differs at float %d: %v vs %v", i, job.Poses[i], all[i])
		}
	}
	if a := testing.AllocsPerRun(10, func() { _ = job.Run() }); a != 0 {
		t.Errorf("SampleJob.Run allocates %v", a)
	}
	// Bad jobs name what is wrong.
	bad := job
	bad.Inputs = append([]anim.SampleInput(nil), job.Inputs...)
	bad.Inputs[3].Clip = bl.Clip(0).Offset() + 4
	if err := bad.Run(); err == nil {
		t.Error("bad clip offset: no error")
	} else {
		t.Logf("bad clip offset: %v", err)
	}
	bad = job
	bad.Bones = 3
	if err := bad.Run(); err == nil {
		t.Error("Bones too small: no error")
	}
	bad = job
	bad.CursorStride = 0
	if err := bad.Run(); err == nil {
		t.Error("CursorStride 0: no error")
	}
	if err := job.RunRange(5, 4); err == nil {
		t.Error("RunRange(5,4): no error")
	}
	if err := job.RunRange(0, n+1); err == nil {
		t.Error("RunRange past end: no error")
	}
	_ = srcs
}

// Events at the clip's ends, several at one time, empty and inverted
// ranges, NaN and infinite bounds.
func TestEvents(t *testing.T) {
	sk := edgeSkeleton([]int32{-1, 0})
	c := edgeClip("ev", 2, 31, 30, 2)
	c.Events = []anim.Event{{Time: 0, Type: 1}, {Time: 0, Type: 2, Bone: 1}, {Time: 0.5, Type: 1}, {Time: 1, Type: 2}, {Time: 1, Type: 1, Bone: 1}}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.001, Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		bl := edgeBlob(t, sk, cc)
		cv := bl.Clip(0)
		if cv.Duration() != 1 {
			t.Fatalf("Duration %v", cv.Duration())
		}
		nan := float32(math.NaN())
		inf := float32(math.Inf(1))
		count := func(t0, t1 float32) int {
			// NaN reads as 0, as for Sample (undocumented for events).
			if t0 != t0 {
				t0 = 0
			}
			if t1 != t1 {
				t1 = 0
			}
			n := 0
			for i := range cv.NumEvents() {
				if e := cv.Event(i); t0 <= e.Time && e.Time < t1 {
					n++
				}
			}
			return n
		}
		for _, r := range [][2]float32{{0, 1}, {0, 0}, {1, 1}, {0, 0.5}, {0.5, 1}, {1, 2}, {-inf, inf}, {-1, 0}, {1, 0}, {nan, 1}, {0, nan}, {nan, nan}, {-inf, 0}, {math.Nextafter32(1, 0), 1}, {1, math.Nextafter32(1, 2)}, {inf, -inf}} {
			f, e := cv.EventRange(r[0], r[1])
			if f < 0 || e < f || e > cv.NumEvents() {
				t.Errorf("EventRange(%v, %v) = [%d, %d)", r[0], r[1], f, e)
				continue
			}
			if want := count(r[0], r[1]); e-f != want {
				t.Errorf("%v: EventRange(%v, %v) = [%d, %d): %d events, want %d (t0 <= time < t1)", codec, r[0], r[1], f, e, e-f, want)
			}
			for i := f; i < e && r[0] == r[0]; i++ {
				if ev := cv.Event(i); !(r[0] <= ev.Time && ev.Time < r[1]) {
					t.Errorf("EventRange(%v, %v) includes event %v", r[0], r[1], ev)
				}
			}
		}
		dst := make([]anim.Event, 0, 8)
		if a := testing.AllocsPerRun(20, func() { dst = cv.AppendEvents(dst[:0], 0, 2) }); a != 0 {
			t.Errorf("AppendEvents with capacity allocates %v", a)
		}
		if len(dst) != 5 {
			t.Errorf("AppendEvents(0, 2): %d events", len(dst))
		}
	}
}

// ClipByName: misses, empty names, duplicate names across Builder calls
// and across concatenated blobs.
func TestClipByName(t *testing.T) {
	sk := edgeSkeleton([]int32{-1})
	var ccs []*offline.CompressedClip
	for i, nm := range []string{"walk", "", "walk", "run", "wälk"} {
		c := edgeClip(nm, 1, 2+i, 30, 1)
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, cc)
	}
	var b offline.Builder
	s := b.AddSkeleton(sk)
	var dupErr error
	for _, cc := range ccs {
		if err := b.AddClip(s, cc); err != nil && dupErr == nil {
			dupErr = err
		}
	}
	data, err := b.Bytes()
	if dupErr != nil || err != nil {
		t.Logf("Builder with duplicate names: AddClip %v, Bytes %v", dupErr, err)
		return
	}
	t.Logf("Builder accepts duplicate clip names (\"walk\" twice)")
	bl, err := anim.Load(append(append([]byte(nil), data...), data...))
	if err != nil {
		t.Fatal(err)
	}
	if bl.NumClips() != 10 || bl.NumSkeletons() != 2 {
		t.Fatalf("%d clips, %d skeletons", bl.NumClips(), bl.NumSkeletons())
	}
	for _, nm := range []string{"walk", "", "run", "wälk"} {
		cv, ok := bl.ClipByName(nm)
		if !ok || cv.Name() != nm {
			t.Errorf("ClipByName(%q) = %v, %v", nm, cv.Name(), ok)
		}
	}
	if cv, _ := bl.ClipByName("walk"); cv.Frames() != 2 {
		t.Errorf("ClipByName(walk) is not the first: %d frames", cv.Frames())
	}
	for _, nm := range []string{"Walk", "walk ", "wal", "walkk", "w\u00e4lk\x00"} {
		if cv, ok := bl.ClipByName(nm); ok {
			t.Errorf("ClipByName(%q) found %q", nm, cv.Name())
		}
	}
	var zero anim.ClipView
	if err := zero.Sample(0, nil, nil); err == nil {
		t.Error("zero ClipView Sample: no error")
	}
	// The second half's clips use the second skeleton.
	if bl.Clip(7).Skeleton().Bones() != 1 {
		t.Error("concatenated clip's skeleton")
	}
}

// LocalToModel with odd parent orders against float64 TRS composition,
// several instances, and its argument errors.
func TestLocalToModelParentOrders(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	for _, parents := range [][]int32{{-1}, {-1, -1, 1, 0, 2, 2, 0}, {-1, 0, 1, 2, 0, 4, 5, 3, 7, 1}, bushy(anim.MaxBones)} {
		n := len(parents)
		const inst = 3
		local := make([]float32, inst*n*anim.PoseFloats)
		for i := range inst * n {
			var q [4]float64
			var l float64
			for k := range q {
				q[k] = r.NormFloat64()
				l += q[k] * q[k]
			}
			l = math.Sqrt(l)
			p := local[i*12 : i*12+12]
			for k := range 4 {
				p[k] = float32(q[k] / l)
			}
			p[4], p[5], p[6] = float32(r.Float64()-0.5)*0.1, float32(r.Float64()-0.5)*0.1, float32(r.Float64()-0.5)*0.1
			p[8], p[9], p[10] = 1, 1, 1
			if n < 100 {
				p[8], p[9], p[10] = float32(0.5+r.Float64()), float32(0.5+r.Float64()), float32(0.5+r.Float64())
			}
		}
		model := make([]float32, inst*n*anim.ModelFloats)
		if err := anim.LocalToModel(parents, local, model, 1, inst); err != nil {
			t.Fatal(err)
		}
		for i := range n * 16 {
			if model[i] != 0 {
				t.Fatalf("instance 0 written outside [1, 3)")
			}
		}
		for in := 1; in < inst; in++ {
			want := make([][16]float64, n)
			for b, p := range parents {
				l := local[(in*n+b)*12:]
				x, y, z, w := float64(l[0]), float64(l[1]), float64(l[2]), float64(l[3])
				rm := [9]float64{1 - 2*(y*y+z*z), 2 * (x*y + z*w), 2 * (x*z - y*w), 2 * (x*y - z*w), 1 - 2*(x*x+z*z), 2 * (y*z + x*w), 2 * (x*z + y*w), 2 * (y*z - x*w), 1 - 2*(x*x+y*y)}
				var m [16]float64
				for c := range 3 {
					for rr := range 3 {
						m[4*c+rr] = rm[3*c+rr] * float64(l[8+c])
					}
				}
				m[12], m[13], m[14], m[15] = float64(l[4]), float64(l[5]), float64(l[6]), 1
				if p < 0 {
					want[b] = m
					continue
				}
				a := want[p]
				var o [16]float64
				for c := range 4 {
					for rr := range 4 {
						for k := range 4 {
							o[4*c+rr] += a[4*k+rr] * m[4*c+k]
						}
					}
				}
				want[b] = o
			}
			for b := range n {
				for k := range 16 {
					got := float64(model[(in*n+b)*16+k])
					if math.Abs(got-want[b][k]) > 1e-4*math.Max(1, math.Abs(want[b][k])) {
						t.Fatalf("%d bones: instance %d bone %d elem %d: %v want %v", n, in, b, k, got, want[b][k])
					}
				}
			}
		}
	}
	l := make([]float32, 2*12)
	m := make([]float32, 2*16)
	for _, tc := range []struct {
		parents    []int32
		begin, end int
	}{{nil, 0, 1}, {[]int32{0}, 0, 1}, {[]int32{-1, 1}, 0, 1}, {[]int32{-2}, 0, 1}, {[]int32{-1}, -1, 1}, {[]int32{-1}, 1, 0}, {[]int32{-1}, 0, 3}, {[]int32{-1, 0, 1}, 0, 1}} {
		if err := anim.LocalToModel(tc.parents, l, m, tc.begin, tc.end); err == nil {
			t.Errorf("LocalToModel(%v, [%d,%d)): no error", tc.parents, tc.begin, tc.end)
		}
	}
	if a := testing.AllocsPerRun(20, func() { _ = anim.LocalToModel([]int32{-1, 0}, l[:24], m, 0, 1) }); a != 0 {
		t.Errorf("LocalToModel allocates %v", a)
	}
}

// SampleJob strides whose products overflow int: an error, not a panic or
// a pose written at the wrong stride.
func TestSampleJobStrideOverflow(t *testing.T) {
	sk := edgeSkeleton([]int32{-1, 0, 1})
	cc, err := offline.Compress(sk, edgeClip("c", 3, 10, 30, 3), offline.CompressOptions{Tolerance: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	bl := edgeBlob(t, sk, cc)
	cv := bl.Clip(0)
	for _, bones := range []int{1<<62 + 1, math.MaxInt/12 + 1, math.MaxInt} {
		for _, stride := range []int{cv.CursorWords(), 1<<62 + 2} {
			job := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: cv.Offset()}, {Clip: cv.Offset()}}, Cursors: make([]uint32, 4*cv.CursorWords()), CursorStride: stride,
				Poses: make([]float32, 2*3*anim.PoseFloats), Bones: bones}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("Bones %d, CursorStride %d: panic: %v", bones, stride, r)
					}
				}()
				if err := job.Run(); err == nil {
					t.Errorf("Bones %d, CursorStride %d: no error", bones, stride)
				}
				if _, err := job.TaskData(0); err == nil {
					t.Errorf("TaskData with Bones %d, CursorStride %d: no error", bones, stride)
				}
			}()
		}
	}
}

// One blob, many goroutines: disjoint RunRange of one job, and each
// goroutine sampling its own character with Sample, concurrently.
func TestConcurrentSampling(t *testing.T) {
	sk := edgeSkeleton([]int32{-1, 0, 1, 0})
	var ccs []*offline.CompressedClip
	for i := range 2 {
		cc, err := offline.Compress(sk, edgeClip("c", 4, 60, 30, 4), offline.CompressOptions{Tolerance: 0.001, Codec: anim.Codec(i)})
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, cc)
	}
	bl := edgeBlob(t, sk, ccs...)
	const n = 32
	stride := max(bl.Clip(0).CursorWords(), bl.Clip(1).CursorWords())
	job := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride), CursorStride: stride, Poses: make([]float32, n*4*12), Bones: 4}
	for i := range n {
		job.Inputs[i] = anim.SampleInput{Clip: bl.Clip(i % 2).Offset(), Time: float32(i) / n}
	}
	done := make(chan error, 8)
	for g := range 4 {
		go func() {
			for range 50 {
				if err := job.RunRange(g*n/4, (g+1)*n/4); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		go func() {
			cur := make([]uint32, stride)
			pose := make([]kernels.Transform, 4)
			for k := range 200 {
				if err := bl.Clip(g%2).Sample(float32(k)/100, cur, pose); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
