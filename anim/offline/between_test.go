package offline

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math"
	"sort"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
)

// Between samples a decoded clip must follow the source's own
// interpolation: glTF LINEAR (lerp, slerp on the shorter arc), STEP and
// CUBICSPLINE keys, checked at dense times against an interpolation
// written here, independently of the importer's.

// betweenKeys is a four-joint chain a-b-c-d: a moves and turns with
// LINEAR keys a second apart, b turns in STEPs every 0.5 s, c moves and
// turns along CUBICSPLINE keys, d is not animated.
type betweenKeys struct {
	times, stepTimes           []float32
	aT                         [][3]float32
	aR, bR                     [][4]float32
	cT                         [][3][3]float32 // in-tangent, value, out-tangent
	cR                         [][3][4]float32
	restA, restB, restC, restD [3]float32
	bInterp                    string // STEP, or LINEAR for the uniform codec
}

func axisQuat32(ax [3]float64, deg float64) [4]float32 {
	s, c := math.Sincos(deg * math.Pi / 360)
	n := math.Sqrt(ax[0]*ax[0] + ax[1]*ax[1] + ax[2]*ax[2])
	return [4]float32{float32(ax[0] / n * s), float32(ax[1] / n * s), float32(ax[2] / n * s), float32(c)}
}

func newBetweenKeys(bInterp string) *betweenKeys {
	k := &betweenKeys{
		bInterp:   bInterp,
		times:     []float32{0, 1, 2},
		stepTimes: []float32{0, 0.5, 1, 1.5},
		aT:        [][3]float32{{0, 1, 0}, {0.5, 1, 0}, {0.5, 1.1, 0.8}},
		aR:        [][4]float32{axisQuat32([3]float64{0, 1, 0}, 0), axisQuat32([3]float64{0, 1, 0}, 80), axisQuat32([3]float64{1, 1, 0}, 120)},
		bR:        [][4]float32{axisQuat32([3]float64{1, 0, 0}, 0), axisQuat32([3]float64{1, 0, 0}, 20), axisQuat32([3]float64{1, 0, 0}, -10), axisQuat32([3]float64{0, 0, 1}, 30)},
		restA:     [3]float32{0, 1, 0}, restB: [3]float32{0, 0.5, 0}, restC: [3]float32{0, 0.5, 0}, restD: [3]float32{0, 0.4, 0},
	}
	k.cT = [][3][3]float32{
		{{0, 0, 0}, {0, 0.5, 0}, {0.4, 0.3, 0}},
		{{-0.3, 0.2, 0.1}, {0.1, 0.6, 0}, {0.2, -0.4, 0.3}},
		{{0, 0.1, -0.2}, {0, 0.5, 0.1}, {0, 0, 0}},
	}
	k.cR = [][3][4]float32{
		{{0, 0, 0, 0}, axisQuat32([3]float64{0, 0, 1}, 0), {0.1, 0, 0.3, 0}},
		{{0, 0.2, 0.1, 0}, axisQuat32([3]float64{0, 0, 1}, 50), {0.2, -0.1, 0, 0}},
		{{-0.1, 0, 0.2, 0}, axisQuat32([3]float64{1, 0, 0}, 20), {0, 0, 0, 0}},
	}
	return k
}

func (k *betweenKeys) gltf() []byte {
	var buf bytes.Buffer
	put := func(vs ...float32) int {
		off := buf.Len()
		for _, v := range vs {
			binary.Write(&buf, binary.LittleEndian, v)
		}
		return off
	}
	type view struct{ off, n int }
	var views []view
	add := func(vs []float32) int {
		views = append(views, view{put(vs...), 4 * len(vs)})
		return len(views) - 1
	}
	flat3 := func(v [][3]float32) (r []float32) {
		for _, x := range v {
			r = append(r, x[:]...)
		}
		return
	}
	flat4 := func(v [][4]float32) (r []float32) {
		for _, x := range v {
			r = append(r, x[:]...)
		}
		return
	}
	var cT, cR []float32
	for i := range k.cT {
		for j := range 3 {
			cT = append(cT, k.cT[i][j][:]...)
			cR = append(cR, k.cR[i][j][:]...)
		}
	}
	type acc struct {
		view, count int
		typ         string
	}
	accs := []acc{
		{add(k.times), 3, "SCALAR"}, {add(k.stepTimes), 4, "SCALAR"},
		{add(flat3(k.aT)), 3, "VEC3"}, {add(flat4(k.aR)), 3, "VEC4"}, {add(flat4(k.bR)), 4, "VEC4"},
		{add(cT), 9, "VEC3"}, {add(cR), 9, "VEC4"},
	}
	data := buf.Bytes()
	var jviews, jaccs []any
	for _, v := range views {
		jviews = append(jviews, map[string]any{"buffer": 0, "byteOffset": v.off, "byteLength": v.n})
	}
	for _, a := range accs {
		jaccs = append(jaccs, map[string]any{"bufferView": a.view, "componentType": 5126, "count": a.count, "type": a.typ})
	}
	node := func(name string, t [3]float32, children ...int) map[string]any {
		m := map[string]any{"name": name, "translation": t[:]}
		if len(children) > 0 {
			m["children"] = children
		}
		return m
	}
	ch := func(s, n int, path string) map[string]any {
		return map[string]any{"sampler": s, "target": map[string]any{"node": n, "path": path}}
	}
	doc := map[string]any{
		"asset":       map[string]any{"version": "2.0"},
		"nodes":       []any{node("a", k.restA, 1), node("b", k.restB, 2), node("c", k.restC, 3), node("d", k.restD)},
		"skins":       []any{map[string]any{"joints": []any{0, 1, 2, 3}}},
		"buffers":     []any{map[string]any{"byteLength": len(data), "uri": "data:application/gltf-buffer;base64," + base64.StdEncoding.EncodeToString(data)}},
		"bufferViews": jviews,
		"accessors":   jaccs,
		"animations": []any{map[string]any{
			"name":     "between",
			"channels": []any{ch(0, 0, "translation"), ch(1, 0, "rotation"), ch(2, 1, "rotation"), ch(3, 2, "translation"), ch(4, 2, "rotation")},
			"samplers": []any{
				map[string]any{"input": 0, "output": 2},
				map[string]any{"input": 0, "output": 3, "interpolation": "LINEAR"},
				map[string]any{"input": 1, "output": 4, "interpolation": k.bInterp},
				map[string]any{"input": 0, "output": 5, "interpolation": "CUBICSPLINE"},
				map[string]any{"input": 0, "output": 6, "interpolation": "CUBICSPLINE"},
			},
		}},
	}
	return encodeGLTF(nil, doc)
}

// key returns the index k of the key interval [times[k], times[k+1]]
// holding t and the fraction u within it.
func keyAt(times []float32, t float64) (int, float64) {
	n := len(times)
	if t <= float64(times[0]) {
		return 0, 0
	}
	if t >= float64(times[n-1]) {
		return n - 2, 1
	}
	k := sort.Search(n, func(i int) bool { return float64(times[i]) > t }) - 1
	return k, (t - float64(times[k])) / float64(times[k+1]-times[k])
}

func testSlerp(a, b [4]float32, u float64) Quat {
	qa := Quat{float64(a[0]), float64(a[1]), float64(a[2]), float64(a[3])}
	qb := Quat{float64(b[0]), float64(b[1]), float64(b[2]), float64(b[3])}
	d := qa[0]*qb[0] + qa[1]*qb[1] + qa[2]*qb[2] + qa[3]*qb[3]
	if d < 0 { // the shorter arc
		qb, d = Quat{-qb[0], -qb[1], -qb[2], -qb[3]}, -d
	}
	th := math.Acos(math.Min(1, d))
	if th < 1e-9 {
		return qa
	}
	wa, wb := math.Sin((1-u)*th)/math.Sin(th), math.Sin(u*th)/math.Sin(th)
	return Quat{wa*qa[0] + wb*qb[0], wa*qa[1] + wb*qb[1], wa*qa[2] + wb*qb[2], wa*qa[3] + wb*qb[3]}
}

// hermite is glTF's cubic spline between keys k and k+1 (value v, out
// tangent of k, in tangent of k+1; dt the key interval).
func hermite(p0, m0, m1, p1 []float32, dt, u float64) []float64 {
	u2, u3 := u*u, u*u*u
	r := make([]float64, len(p0))
	for i := range r {
		r[i] = (2*u3-3*u2+1)*float64(p0[i]) + (u3-2*u2+u)*dt*float64(m0[i]) + (-2*u3+3*u2)*float64(p1[i]) + (u3-u2)*dt*float64(m1[i])
	}
	return r
}

// pose returns the reference local pose at time t.
func (k *betweenKeys) pose(t float64) []Transform {
	v3 := func(v [3]float32) Vec3 { return Vec3{float64(v[0]), float64(v[1]), float64(v[2])} }
	p := make([]Transform, 4)
	for i := range p {
		p[i] = IdentityTransform
	}
	i, u := keyAt(k.times, t)
	for j := range 3 {
		p[0].T[j] = float64(k.aT[i][j]) + (float64(k.aT[i+1][j])-float64(k.aT[i][j]))*u
	}
	p[0].R = testSlerp(k.aR[i], k.aR[i+1], u).Normalized()
	p[1].T = v3(k.restB)
	if k.bInterp == "STEP" {
		si := sort.Search(len(k.stepTimes), func(j int) bool { return float64(k.stepTimes[j]) > t }) - 1
		b := k.bR[max(si, 0)]
		p[1].R = Quat{float64(b[0]), float64(b[1]), float64(b[2]), float64(b[3])}.Normalized()
	} else {
		si, su := keyAt(k.stepTimes, t)
		p[1].R = testSlerp(k.bR[si], k.bR[si+1], su).Normalized()
	}
	dt := float64(k.times[i+1] - k.times[i])
	ct := hermite(k.cT[i][1][:], k.cT[i][2][:], k.cT[i+1][0][:], k.cT[i+1][1][:], dt, u)
	p[2].T = Vec3{ct[0], ct[1], ct[2]}
	cr := hermite(k.cR[i][1][:], k.cR[i][2][:], k.cR[i+1][0][:], k.cR[i+1][1][:], dt, u)
	p[2].R = Quat{cr[0], cr[1], cr[2], cr[3]}.Normalized()
	p[3].T = v3(k.restD)
	return p
}

// TestGLTFBetweenSamples compresses the chain with both codecs and checks
// the decoded clip at 400 times per second (between the samples: a
// clip with CUBICSPLINE keys is sampled at 60 Hz at least, more where
// interpolating those samples would miss the cubic) against the
// reference, at virtual vertices 3 cm from each joint. The uniform codec
// has no discontinuities (it lerps across a STEP over one frame), so it
// gets b's keys as LINEAR.
func TestGLTFBetweenSamples(t *testing.T) {
	const tol = 0.0001
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		bInterp := "STEP"
		if codec == anim.CodecUniform {
			bInterp = "LINEAR"
		}
		k := newBetweenKeys(bInterp)
		im, err := ParseGLTF("between.gltf", k.gltf(), GLTFOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sk, c := im.Skeleton, im.Clips[0]
		if c.Rate < 60 || c.Frames != int(math.Round(2*c.Rate))+1 || sk.NumBones() != 4 {
			t.Fatalf("imported %d bones, %d frames at %v Hz", sk.NumBones(), c.Frames, c.Rate)
		}
		cc, err := Compress(sk, c, CompressOptions{Tolerance: tol, Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		var bld Builder
		if err := bld.AddClip(bld.AddSkeleton(sk), cc); err != nil {
			t.Fatal(err)
		}
		data, err := bld.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		bl, err := anim.Load(data)
		if err != nil {
			t.Fatal(err)
		}
		cv := bl.Clip(0)
		job := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: cv.Offset()}}, Cursors: make([]uint32, cv.CursorWords()),
			CursorStride: cv.CursorWords(), Poses: make([]float32, 4*anim.PoseFloats), Bones: 4}
		model32 := make([]float32, 4*anim.ModelFloats)
		ref := make([]mat4, 4)
		var errs []float64
		worst, worstT := 0.0, 0.0
		for n := 0; n < 800; n++ {
			tm := (float64(n) + 0.37) / 400
			job.Inputs[0].Time = float32(tm)
			if err := job.Run(); err != nil {
				t.Fatal(err)
			}
			if err := anim.LocalToModel(sk.Parents, job.Poses, model32, 0, 1); err != nil {
				t.Fatal(err)
			}
			modelMatrices(sk.Parents, k.pose(float64(float32(float32(tm)*60))/60), ref)
			for b := range 4 {
				var m mat4
				for i := range m {
					m[i] = float64(model32[b*anim.ModelFloats+i])
				}
				e := 0.0
				for axis := range 3 {
					var v Vec3
					v[axis] = 0.03
					e = math.Max(e, ref[b].Point(v).Dist(m.Point(v)))
				}
				errs = append(errs, e)
				if e > worst {
					worst, worstT = e, tm
				}
			}
		}
		sort.Float64s(errs)
		p99 := percentile(errs, 0.99)
		t.Logf("%v (b %s): %d bytes, p99 %.4f cm, max %.4f cm at %.4f s", codec, bInterp, cc.Stats.Bytes, p99*100, worst*100, worstT)
		if p99 > 1.1*tol || worst > 3*tol {
			t.Errorf("%v: between samples p99 %.4f cm, max %.4f cm at %.4f s; target %.4f cm", codec, p99*100, worst*100, worstT, tol*100)
		}
	}
}

// TestCesiumManBetweenKeys: cesium_man's LINEAR keys are 24 Hz; halfway
// between keys 5 and 6 (t = 0.229 s) the decoded pose must be within the
// target of the glTF's own interpolation at every joint and virtual
// vertex (a Hermite curve through the keys missed a foot by 3.4 mm there).
func TestCesiumManBetweenKeys(t *testing.T) {
	im, err := LoadFile(testModel(t, "cesium_man.gltf"), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sk, c := im.Skeleton, im.Clips[0]
	nb := sk.NumBones()
	const tol = 0.0001
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := Compress(sk, c, CompressOptions{Tolerance: tol, Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		var bld Builder
		if err := bld.AddClip(bld.AddSkeleton(sk), cc); err != nil {
			t.Fatal(err)
		}
		data, err := bld.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		bl, err := anim.Load(data)
		if err != nil {
			t.Fatal(err)
		}
		cv := bl.Clip(0)
		tm := float32(5.5 / 24)
		job := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: cv.Offset(), Time: tm}}, Cursors: make([]uint32, cv.CursorWords()),
			CursorStride: cv.CursorWords(), Poses: make([]float32, nb*anim.PoseFloats), Bones: nb}
		if err := job.Run(); err != nil {
			t.Fatal(err)
		}
		model32 := make([]float32, nb*anim.ModelFloats)
		if err := anim.LocalToModel(sk.Parents, job.Poses, model32, 0, 1); err != nil {
			t.Fatal(err)
		}
		x := float64(float32(tm*24)) / 24
		local := make([]Transform, nb)
		for b := range nb {
			tv, rv, sv := c.ValueAt(3*b, x), c.ValueAt(3*b+1, x), c.ValueAt(3*b+2, x)
			local[b] = Transform{T: Vec3{tv[0], tv[1], tv[2]}, R: Quat(rv).Normalized(), S: Vec3{sv[0], sv[1], sv[2]}}
		}
		ref := make([]mat4, nb)
		modelMatrices(sk.Parents, local, ref)
		worst, wb := 0.0, 0
		for b := range nb {
			var m mat4
			for i := range m {
				m[i] = float64(model32[b*anim.ModelFloats+i])
			}
			for _, v := range []Vec3{{}, {0.03, 0, 0}, {0, 0.03, 0}, {0, 0, 0.03}} {
				if e := ref[b].Point(v).Dist(m.Point(v)); e > worst {
					worst, wb = e, b
				}
			}
		}
		t.Logf("%v: worst %.4f cm at bone %d (%s)", codec, worst*100, wb, sk.Names[wb])
		if worst > 1.5*tol {
			t.Errorf("%v: at t = %.4f s bone %d (%s) is %.4f cm from the glTF's interpolation (target %.4f cm)", codec, tm, wb, sk.Names[wb], worst*100, tol*100)
		}
	}
}

// TestClipSampleAt: the uncompressed sampler gives the samples at their
// times and the source's interpolation between them (the glTF chain's
// reference written above), in the pose layout LocalToModel reads.
func TestClipSampleAt(t *testing.T) {
	k := newBetweenKeys("STEP")
	im, err := ParseGLTF("between.gltf", k.gltf(), GLTFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sk, c := im.Skeleton, im.Clips[0]
	pose := make([]float32, 4*anim.PoseFloats)
	model32 := make([]float32, 4*anim.ModelFloats)
	ref := make([]mat4, 4)
	for n := range 500 {
		tm := (float64(n) + 0.41) / 250
		if err := c.SampleAt(tm, pose); err != nil {
			t.Fatal(err)
		}
		if err := anim.LocalToModel(sk.Parents, pose, model32, 0, 1); err != nil {
			t.Fatal(err)
		}
		modelMatrices(sk.Parents, k.pose(tm), ref)
		for b := range 4 {
			for i := 12; i < 15; i++ {
				if d := math.Abs(float64(model32[b*anim.ModelFloats+i]) - ref[b][i]); d > 2e-6 {
					t.Fatalf("t %.4f bone %d: joint at %v, want %v", tm, b, model32[b*anim.ModelFloats+12:b*anim.ModelFloats+15], ref[b][12:15])
				}
			}
		}
	}
	if err := c.SampleAt(0, pose[:5]); err == nil {
		t.Error("short pose: no error")
	}
}
