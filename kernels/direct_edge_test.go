package kernels_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkjobs/vkjobs/kernels"
)

// Independent float64 references (glTF 2.0: T*R*S, quaternion to matrix,
// skinning matrix = sum w_i * jointMatrix_i).

type m64 [16]float64 // column-major

func quatMat64(q [4]float32, t, s [3]float32) m64 {
	x, y, z, w := float64(q[0]), float64(q[1]), float64(q[2]), float64(q[3])
	r := [9]float64{ // column-major 3x3
		1 - 2*(y*y+z*z), 2 * (x*y + z*w), 2 * (x*z - y*w),
		2 * (x*y - z*w), 1 - 2*(x*x+z*z), 2 * (y*z + x*w),
		2 * (x*z + y*w), 2 * (y*z - x*w), 1 - 2*(x*x+y*y),
	}
	var m m64
	for c := range 3 {
		for rr := range 3 {
			m[4*c+rr] = r[3*c+rr] * float64(s[c])
		}
	}
	m[12], m[13], m[14], m[15] = float64(t[0]), float64(t[1]), float64(t[2]), 1
	return m
}

func mul64(a, b m64) m64 {
	var o m64
	for c := range 4 {
		for r := range 4 {
			var s float64
			for k := range 4 {
				s += a[4*k+r] * b[4*c+k]
			}
			o[4*c+r] = s
		}
	}
	return o
}

func randQuat(r *rand.Rand) [4]float32 {
	var q [4]float64
	var n float64
	for n < 1e-3 {
		n = 0
		for i := range q {
			q[i] = r.NormFloat64()
			n += q[i] * q[i]
		}
	}
	n = math.Sqrt(n)
	return [4]float32{float32(q[0] / n), float32(q[1] / n), float32(q[2] / n), float32(q[3] / n)}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// ToModel and ToModelSkin on parent tables of unusual shapes (several
// roots, siblings interleaved, parents far back, one bone, 256 bones)
// against a float64 reference.
func TestToModelParentOrders(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := map[string][]int32{
		"one":        {-1},
		"two roots":  {-1, -1},
		"interleave": {-1, -1, 0, 1, 0, 1, 2, 3, 4, 5},
		"far back":   {-1, 0, 1, 2, 3, 0, 0, 5, 6, 1},
		"star":       {-1, 0, 0, 0, 0, 0, 0, 0},
	}
	chain := make([]int32, 256)
	for i := range chain {
		chain[i] = int32(i - 1)
	}
	shapes["chain256"] = chain
	rnd := make([]int32, 300)
	for i := range rnd {
		rnd[i] = int32(r.IntN(i+1)) - 1
	}
	shapes["random300"] = rnd
	for name, parents := range shapes {
		n := len(parents)
		local := make([]kernels.Transform, n)
		ib := make([][16]float32, n)
		for b := range local {
			local[b].Rot = randQuat(r)
			local[b].Trans = [3]float32{float32(r.Float64() - 0.5), float32(r.Float64() - 0.5), float32(r.Float64() - 0.5)}
			if len(parents) > 100 {
				local[b].Trans = [3]float32{0.01, 0.02, 0.005}
			}
			local[b].Scale = [3]float32{float32(0.8 + 0.4*r.Float64()), float32(0.8 + 0.4*r.Float64()), float32(0.8 + 0.4*r.Float64())}
			if len(parents) > 100 {
				local[b].Scale = [3]float32{1, 1, 1}
			}
			m := kernels.RigidMatrix(randQuat(r), [3]float32{1, 2, 3})
			ib[b] = m
		}
		want := make([]m64, n)
		for b, p := range parents {
			lm := quatMat64(local[b].Rot, local[b].Trans, local[b].Scale)
			if p < 0 {
				want[b] = lm
			} else {
				want[b] = mul64(want[p], lm)
			}
		}
		model := make([]kernels.Mat4, n)
		pal := make([]kernels.Mat4, n)
		for _, f := range []struct {
			name string
			run  func() error
		}{
			{"ToModel", func() error { return kernels.ToModel(parents, local, model) }},
			{"ToModelGo", func() error { return kernels.ToModelGo(parents, local, model) }},
			{"ToModelSkin", func() error { return kernels.ToModelSkin(parents, local, ib, model, pal) }},
		} {
			for i := range model {
				model[i] = kernels.Mat4{}
			}
			if err := f.run(); err != nil {
				t.Fatalf("%s %s: %v", name, f.name, err)
			}
			for b := range n {
				for k := range 16 {
					if !near(float64(model[b][k]), want[b][k], 2e-4) {
						t.Fatalf("%s %s: bone %d elem %d: %v, want %v", name, f.name, b, k, model[b][k], want[b][k])
					}
				}
				if f.name == "ToModelSkin" {
					var ib64 m64
					for k := range 16 {
						ib64[k] = float64(ib[b][k])
					}
					w := mul64(want[b], ib64)
					for k := range 16 {
						if !near(float64(pal[b][k]), w[k], 2e-4) {
							t.Fatalf("%s palette: bone %d elem %d: %v, want %v", name, b, k, pal[b][k], w[k])
						}
					}
				}
			}
		}
	}
	// Bad tables are errors, never panics.
	local := make([]kernels.Transform, 4)
	model := make([]kernels.Mat4, 4)
	for _, parents := range [][]int32{nil, {0}, {-1, 1}, {-1, 2, 0}, {-2}, {-1, math.MaxInt32}} {
		if err := kernels.ToModel(parents, local, model); err == nil {
			t.Errorf("ToModel(%v): no error", parents)
		}
	}
	if err := kernels.ToModel([]int32{-1, 0}, local[:1], model); err == nil {
		t.Error("ToModel with short local: no error")
	}
}

// lbsRef is glTF's skinning: the weighted sum of the joint matrices applied
// to the position; the normal by the blended 3x3, normalised (the
// kernel's documented normal rule).
func lbsRef(v kernels.SkinVertex, pal []kernels.Mat4) (pos, nrm [3]float64) {
	var m [16]float64
	for i := range 4 {
		j := int(v.Palette) + int(v.Joints>>(8*i)&0xff)
		for k := range 16 {
			m[k] += float64(v.Weights[i]) * float64(pal[j][k])
		}
	}
	p := v.Pos
	n := v.Normal
	for r := range 3 {
		pos[r] = m[r]*float64(p[0]) + m[4+r]*float64(p[1]) + m[8+r]*float64(p[2]) + m[12+r]
		nrm[r] = m[r]*float64(n[0]) + m[4+r]*float64(n[1]) + m[8+r]*float64(n[2])
	}
	l := math.Sqrt(nrm[0]*nrm[0] + nrm[1]*nrm[1] + nrm[2]*nrm[2])
	for r := range 3 {
		nrm[r] /= l
	}
	return pos, nrm
}

func randPalette(r *rand.Rand, n int, nonUniform bool) []kernels.Mat4 {
	pal := make([]kernels.Mat4, n)
	for i := range pal {
		tr := kernels.Transform{Rot: randQuat(r), Trans: [3]float32{float32(r.Float64()), float32(r.Float64()), float32(r.Float64())}, Scale: [3]float32{1, 1, 1}}
		if nonUniform {
			tr.Scale = [3]float32{0.5, 1, 2}
		}
		pal[i] = tr.Matrix()
	}
	return pal
}

// LBS and DQS over 0 and 1 vertices, every tail length of the assembly's
// groups, weights that do not sum to 1, single-joint and zero weights,
// against float64 references.
func TestSkinShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pal := randPalette(r, 40, false)
	dq := make([]kernels.DualQuat, len(pal))
	if err := kernels.DualQuatPalette(pal, dq); err != nil {
		t.Fatal(err)
	}
	// 0 vertices: no error, nothing written, also with an empty palette.
	if err := kernels.LBS(nil, pal, nil); err != nil {
		t.Errorf("LBS 0 vertices: %v", err)
	}
	if err := kernels.DQS(nil, nil, nil); err != nil {
		t.Errorf("DQS 0 vertices, empty palette: %v", err)
	}
	for n := 1; n <= 19; n++ {
		verts := make([]kernels.SkinVertex, n)
		for i := range verts {
			w := [4]float32{float32(r.Float64()), float32(r.Float64()), float32(r.Float64()), float32(r.Float64())}
			switch i % 4 {
			case 1:
				w = [4]float32{1, 0, 0, 0}
			case 2:
				w = [4]float32{0.3, 0.3, 0, 0} // sums to 0.6
			}
			verts[i] = kernels.SkinVertex{
				Pos:     [3]float32{float32(r.Float64()*2 - 1), float32(r.Float64()*2 - 1), float32(r.Float64()*2 - 1)},
				Normal:  [3]float32{0, 0, 1},
				Joints:  kernels.PackJoints(uint8(r.IntN(40)), uint8(r.IntN(40)), uint8(r.IntN(40)), uint8(r.IntN(40))),
				Weights: w,
			}
		}
		out := make([]kernels.SkinnedVertex, n+3)
		sentinel := kernels.SkinnedVertex{Pos: [3]float32{7, 7, 7}}
		for i := range out {
			out[i] = sentinel
		}
		if err := kernels.LBS(verts, pal, out); err != nil {
			t.Fatalf("LBS n=%d: %v", n, err)
		}
		for i, v := range verts {
			p, nn := lbsRef(v, pal)
			for c := range 3 {
				if !near(float64(out[i].Pos[c]), p[c], 1e-5) || !near(float64(out[i].Normal[c]), nn[c], 1e-5) {
					t.Fatalf("LBS n=%d vertex %d: %v, want %v %v", n, i, out[i], p, nn)
				}
			}
		}
		for i := n; i < len(out); i++ {
			if out[i] != sentinel {
				t.Fatalf("LBS n=%d wrote past len(verts) at %d", n, i)
			}
		}
		if err := kernels.DQS(verts, dq, out); err != nil {
			t.Fatalf("DQS n=%d: %v", n, err)
		}
		for i, v := range verts {
			p, nn := dqsRef(v, pal)
			for c := range 3 {
				if !near(float64(out[i].Pos[c]), p[c], 1e-4) || !near(float64(out[i].Normal[c]), nn[c], 1e-4) {
					t.Fatalf("DQS n=%d vertex %d: %v, want %v %v", n, i, out[i], p, nn)
				}
			}
		}
		for i := n; i < len(out); i++ {
			if out[i] != sentinel {
				t.Fatalf("DQS n=%d wrote past len(verts) at %d", n, i)
			}
		}
	}
}

// dqsRef: Kavan's DLB from the palette matrices, independently: rotation
// quaternion from the matrix (columns normalised), dual part 0.5*t*q,
// antipodal weights flipped against the first joint, normalised by |real|.
func dqsRef(v kernels.SkinVertex, pal []kernels.Mat4) (pos, nrm [3]float64) {
	type dq struct{ r, d [4]float64 }
	mk := func(m kernels.Mat4) dq {
		var c [3][3]float64
		for j := range 3 {
			x, y, z := float64(m[4*j]), float64(m[4*j+1]), float64(m[4*j+2])
			l := math.Sqrt(x*x + y*y + z*z)
			c[j] = [3]float64{x / l, y / l, z / l}
		}
		// row r col j = c[j][r]
		tr := c[0][0] + c[1][1] + c[2][2]
		var q [4]float64
		// Robust: pick via eigen-ish formulas with sign from largest.
		q[3] = math.Sqrt(math.Max(0, 1+tr)) / 2
		q[0] = math.Sqrt(math.Max(0, 1+c[0][0]-c[1][1]-c[2][2])) / 2
		q[1] = math.Sqrt(math.Max(0, 1-c[0][0]+c[1][1]-c[2][2])) / 2
		q[2] = math.Sqrt(math.Max(0, 1-c[0][0]-c[1][1]+c[2][2])) / 2
		q[0] = math.Copysign(q[0], c[1][2]-c[2][1])
		q[1] = math.Copysign(q[1], c[2][0]-c[0][2])
		q[2] = math.Copysign(q[2], c[0][1]-c[1][0])
		t := [3]float64{float64(m[12]), float64(m[13]), float64(m[14])}
		// d = 0.5 * (t,0) * q
		x, y, z, w := q[0], q[1], q[2], q[3]
		d := [4]float64{
			0.5 * (t[0]*w + t[1]*z - t[2]*y),
			0.5 * (-t[0]*z + t[1]*w + t[2]*x),
			0.5 * (t[0]*y - t[1]*x + t[2]*w),
			-0.5 * (t[0]*x + t[1]*y + t[2]*z),
		}
		return dq{q, d}
	}
	var js [4]dq
	for i := range 4 {
		js[i] = mk(pal[int(v.Palette)+int(v.Joints>>(8*i)&0xff)])
	}
	var b dq
	for i := range 4 {
		w := float64(v.Weights[i])
		dot := js[0].r[0]*js[i].r[0] + js[0].r[1]*js[i].r[1] + js[0].r[2]*js[i].r[2] + js[0].r[3]*js[i].r[3]
		if dot < 0 {
			w = -w
		}
		for k := range 4 {
			b.r[k] += w * js[i].r[k]
			b.d[k] += w * js[i].d[k]
		}
	}
	l := math.Sqrt(b.r[0]*b.r[0] + b.r[1]*b.r[1] + b.r[2]*b.r[2] + b.r[3]*b.r[3])
	for k := range 4 {
		b.r[k] /= l
		b.d[k] /= l
	}
	// translation t = 2 * d * conj(r)
	rx, ry, rz, rw := b.r[0], b.r[1], b.r[2], b.r[3]
	dx, dy, dz, dw := b.d[0], b.d[1], b.d[2], b.d[3]
	t := [3]float64{
		2 * (-dw*rx + dx*rw - dy*rz + dz*ry),
		2 * (-dw*ry + dx*rz + dy*rw - dz*rx),
		2 * (-dw*rz - dx*ry + dy*rx + dz*rw),
	}
	m := quatMat64([4]float32{float32(rx), float32(ry), float32(rz), float32(rw)}, [3]float32{}, [3]float32{1, 1, 1})
	for r := range 3 {
		pos[r] = m[r]*float64(v.Pos[0]) + m[4+r]*float64(v.Pos[1]) + m[8+r]*float64(v.Pos[2]) + t[r]
		nrm[r] = m[r]*float64(v.Normal[0]) + m[4+r]*float64(v.Normal[1]) + m[8+r]*float64(v.Normal[2])
	}
	return pos, nrm
}

// A vertex whose palette base plus joint wraps around uint32 must be a
// joint outside the palette (an error naming the vertex), not joint 0.
func TestSkinPaletteBaseWraps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pal := randPalette(r, 4, false)
	dq := make([]kernels.DualQuat, len(pal))
	_ = kernels.DualQuatPalette(pal, dq)
	for n := 1; n <= 9; n++ {
		verts := make([]kernels.SkinVertex, n)
		for i := range verts {
			verts[i] = kernels.SkinVertex{Pos: [3]float32{1, 2, 3}, Normal: [3]float32{0, 1, 0}, Weights: [4]float32{1, 0, 0, 0}}
		}
		verts[n-1].Palette = math.MaxUint32 // base + joint 1 wraps to 0
		verts[n-1].Joints = kernels.PackJoints(1, 1, 1, 1)
		out := make([]kernels.SkinnedVertex, n)
		if err := kernels.LBS(verts, pal, out); err == nil {
			t.Errorf("LBS n=%d: palette base %#x + joint 1 accepted (read palette[0]): %v", n, verts[n-1].Palette, out[n-1])
		}
		if err := kernels.DQS(verts, dq, out); err == nil {
			t.Errorf("DQS n=%d: palette base %#x + joint 1 accepted (read palette[0]): %v", n, verts[n-1].Palette, out[n-1])
		}
	}
}

// Joints beyond the palette (no wrap) are errors, at every position in
// the assembly's groups.
func TestSkinJointOutOfRange(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pal := randPalette(r, 4, false)
	dq := make([]kernels.DualQuat, len(pal))
	_ = kernels.DualQuatPalette(pal, dq)
	for n := 1; n <= 17; n++ {
		for bad := range n {
			for slot := range 4 {
				verts := make([]kernels.SkinVertex, n)
				for i := range verts {
					verts[i] = kernels.SkinVertex{Pos: [3]float32{1, 2, 3}, Normal: [3]float32{0, 1, 0}, Weights: [4]float32{1, 0, 0, 0}}
				}
				var j [4]uint8
				j[slot] = 4
				verts[bad].Joints = kernels.PackJoints(j[0], j[1], j[2], j[3])
				out := make([]kernels.SkinnedVertex, n)
				if err := kernels.LBS(verts, pal, out); err == nil {
					t.Fatalf("LBS n=%d bad=%d slot=%d: no error", n, bad, slot)
				}
				if err := kernels.DQS(verts, dq, out); err == nil {
					t.Fatalf("DQS n=%d bad=%d slot=%d: no error", n, bad, slot)
				}
			}
		}
	}
	if err := kernels.LBS(make([]kernels.SkinVertex, 2), pal, make([]kernels.SkinnedVertex, 1)); err == nil {
		t.Error("LBS short out: no error")
	}
	if err := kernels.LBS(make([]kernels.SkinVertex, 2), nil, make([]kernels.SkinnedVertex, 2)); err == nil {
		t.Error("LBS empty palette: no error")
	}
}

// Degenerate vertices, as LBS, DQS and SkinVertices document them: a zero
// normal (SkinVertices without normals) comes out NaN from LBS and zero
// from DQS; all-zero weights give DQS NaN.
func TestSkinDegenerate(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	pal := randPalette(r, 2, false)
	dq := make([]kernels.DualQuat, len(pal))
	_ = kernels.DualQuatPalette(pal, dq)
	verts, err := kernels.SkinVertices(nil, [][3]float32{{1, 2, 3}}, nil, [][4]uint16{{0, 1, 0, 0}}, [][4]float32{{0.5, 0.5, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]kernels.SkinnedVertex, 1)
	if err := kernels.LBS(verts, pal, out); err != nil {
		t.Fatal(err)
	}
	for _, x := range out[0].Normal {
		if !math.IsNaN(float64(x)) {
			t.Errorf("LBS of a zero normal: %v, documented NaN", out[0].Normal)
			break
		}
	}
	if err := kernels.DQS(verts, dq, out); err != nil {
		t.Fatal(err)
	}
	if out[0].Normal != [3]float32{} {
		t.Errorf("DQS of a zero normal: %v, documented zero", out[0].Normal)
	}
	verts[0].Weights = [4]float32{}
	verts[0].Normal = [3]float32{0, 1, 0}
	_ = kernels.DQS(verts, dq, out)
	if !math.IsNaN(float64(out[0].Pos[0])) {
		t.Errorf("DQS with zero weights: %v, documented NaN", out[0])
	}
}

// LBS normals under a non-uniformly scaled palette follow the documented
// rule (the blended 3x3, normalised), which is not the inverse transpose:
// the normal tilts off the skinned surface.
func TestSkinNonUniformNormals(t *testing.T) {
	tr := kernels.Transform{Rot: [4]float32{0, 0, 0, 1}, Scale: [3]float32{1, 4, 1}}
	pal := []kernels.Mat4{tr.Matrix()}
	// A surface spanned by tangents (1,-1,0) and (0,0,1): normal (1,1,0)/sqrt2.
	s := float32(1 / math.Sqrt2)
	verts := []kernels.SkinVertex{{Normal: [3]float32{s, s, 0}, Weights: [4]float32{1, 0, 0, 0}}}
	out := make([]kernels.SkinnedVertex, 1)
	if err := kernels.LBS(verts, pal, out); err != nil {
		t.Fatal(err)
	}
	_, want := lbsRef(verts[0], pal)
	for c := range 3 {
		if !near(float64(out[0].Normal[c]), want[c], 1e-6) {
			t.Fatalf("LBS normal %v, want %v", out[0].Normal, want)
		}
	}
	tan := pal[0].TransformVector([3]float32{1, -1, 0})
	if dot := out[0].Normal[0]*tan[0] + out[0].Normal[1]*tan[1] + out[0].Normal[2]*tan[2]; math.Abs(float64(dot)) < 1 {
		t.Errorf("normal %v perpendicular to the skinned tangent %v: the documented tilt is gone (update LBS's doc)", out[0].Normal, tan)
	}
}

func TestDirectAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	parents := []int32{-1, 0, 1, 1, 0}
	local := make([]kernels.Transform, 5)
	for i := range local {
		local[i] = kernels.Transform{Rot: randQuat(r), Scale: [3]float32{1, 1, 1}}
	}
	ib := make([][16]float32, 5)
	for i := range ib {
		ib[i] = kernels.Identity()
	}
	model := make([]kernels.Mat4, 5)
	pal := make([]kernels.Mat4, 5)
	dq := make([]kernels.DualQuat, 5)
	verts := make([]kernels.SkinVertex, 37)
	for i := range verts {
		verts[i] = kernels.SkinVertex{Normal: [3]float32{0, 0, 1}, Joints: kernels.PackJoints(uint8(i%5), 1, 2, 3), Weights: [4]float32{0.25, 0.25, 0.25, 0.25}}
	}
	out := make([]kernels.SkinnedVertex, 37)
	a := testing.AllocsPerRun(50, func() {
		_ = kernels.ToModelSkin(parents, local, ib, model, pal)
		_ = kernels.Palette(model, ib, pal)
		_ = kernels.DualQuatPalette(pal, dq)
		_ = kernels.LBS(verts, pal, out)
		_ = kernels.DQS(verts, dq, out)
	})
	if a != 0 {
		t.Errorf("direct calls allocate %v per step", a)
	}
}
