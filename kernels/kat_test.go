package kernels

import (
	"hash/crc32"
	"math"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// Known-answer tests: each CPU kernel against values worked out by hand and
// against an independent, simple float64 (or bitwise) reference.

func near(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

func checkVec(t *testing.T, what string, got [3]float32, want [3]float64, tol float64) {
	t.Helper()
	for k := range got {
		if !near(float64(got[k]), want[k], tol) {
			t.Fatalf("%s = %v, want %v (tolerance %g)", what, got, want, tol)
		}
	}
}

func skinTask(verts []SkinVertex, pal sched.Stream, out []SkinnedVertex, nv, stride uint32) sched.TaskData {
	var d sched.TaskData
	d.Elements = uint32(len(out))
	d.Params[0], d.Params[1] = nv, stride
	d.In[0] = sched.StreamOf(verts)
	d.In[1] = pal
	d.Out[0] = sched.StreamOf(out)
	d.End = d.Elements
	return d
}

func TestLBSByHand(t *testing.T) {
	// Bone 0 translates by (1, 0, 0); bone 1 rotates 90 degrees about Z.
	// Vertex (1, 0, 0) with normal (1, 0, 0), half on each bone:
	//   bone 0: (2, 0, 0), bone 1: (0, 1, 0); blend (1, 0.5, 0).
	//   normal: 0.5*(1,0,0) + 0.5*(0,1,0) = (0.5, 0.5, 0), normalised.
	pal := []Mat4{
		RigidMatrix([4]float32{0, 0, 0, 1}, [3]float32{1, 0, 0}),
		RigidMatrix(AxisAngle([3]float32{0, 0, 1}, math.Pi/2), [3]float32{}),
	}
	verts := []SkinVertex{{Pos: [3]float32{1, 0, 0}, Normal: [3]float32{1, 0, 0}, Joints: PackJoints(0, 1, 0, 0), Weights: [4]float32{0.5, 0.5, 0, 0}}}
	out := make([]SkinnedVertex, 1)
	for _, id := range []sched.KernelID{SkinLBS, SkinLBSUniform} {
		d := skinTask(verts, sched.StreamOf(pal), out, 0, 0)
		if err := runDirect(t, id, &d, 0, 1); err != nil {
			t.Fatal(err)
		}
		checkVec(t, "position", out[0].Pos, [3]float64{1, 0.5, 0}, 1e-6)
		checkVec(t, "normal", out[0].Normal, [3]float64{math.Sqrt2 / 2, math.Sqrt2 / 2, 0}, 1e-6)
	}
}

// refLBS is an independent float64 linear-blend skinning of one vertex.
func refLBS(v *SkinVertex, pal []Mat4, base uint32) (p, n [3]float64) {
	var m [16]float64
	for k := 0; k < 4; k++ {
		j := base + v.Joints>>(8*k)&0xff
		for e := range m {
			m[e] += float64(v.Weights[k]) * float64(pal[j][e])
		}
	}
	for r := 0; r < 3; r++ {
		p[r] = m[12+r]
		for c := 0; c < 3; c++ {
			p[r] += m[4*c+r] * float64(v.Pos[c])
			n[r] += m[4*c+r] * float64(v.Normal[c])
		}
	}
	l := math.Sqrt(n[0]*n[0] + n[1]*n[1] + n[2]*n[2])
	return p, [3]float64{n[0] / l, n[1] / l, n[2] / l}
}

func TestLBSReference(t *testing.T) {
	for _, id := range []sched.KernelID{SkinLBS, SkinLBSUniform} {
		d := fixture(t, id, 1000)
		if err := runDirect(t, id, &d, 0, d.Elements); err != nil {
			t.Fatal(err)
		}
		verts, pal, out := sched.View[SkinVertex](d.In[0]), sched.View[Mat4](d.In[1]), sched.View[SkinnedVertex](d.Out[0])
		nv, stride := d.Params[0], d.Params[1]
		for i := range out {
			v := &verts[uint32(i)%nv]
			p, n := refLBS(v, pal, v.Palette+uint32(i)/nv*stride)
			checkVec(t, "position", out[i].Pos, p, 1e-5)
			checkVec(t, "normal", out[i].Normal, n, 1e-5)
		}
	}
}

// TestSkinInstancing: Params[0] > 0 (one mesh, many characters) gives the
// same result as an explicit per-vertex palette base with Params[0] = 0.
func TestSkinInstancing(t *testing.T) {
	for _, id := range []sched.KernelID{SkinLBS, SkinDQS} {
		d := fixture(t, id, 800)
		if err := runDirect(t, id, &d, 0, d.Elements); err != nil {
			t.Fatal(err)
		}
		want := outputs(&d)[0]
		verts := sched.View[SkinVertex](d.In[0])
		nv, stride := int(d.Params[0]), d.Params[1]
		flat := make([]SkinVertex, d.Elements)
		for i := range flat {
			flat[i] = verts[i%nv]
			flat[i].Palette += uint32(i/nv) * stride
		}
		d2 := d
		d2.Params[0], d2.Params[1] = 0, 12345 // stride ignored without instancing
		d2.In[0] = sched.StreamOf(flat)
		d2.Out[0] = sched.StreamOf(make([]SkinnedVertex, d.Elements))
		if err := runDirect(t, id, &d2, 0, d2.Elements); err != nil {
			t.Fatal(err)
		}
		if got := outputs(&d2)[0]; string(got) != string(want) {
			t.Fatalf("%d: instanced and flat results differ", id)
		}
	}
}

func TestDQSByHand(t *testing.T) {
	// Rotate 90 degrees about Z, then translate by (1, 2, 3):
	// (1, 0, 0) -> (0, 1, 0) + (1, 2, 3) = (1, 3, 3); normal (1,0,0) -> (0,1,0).
	q := AxisAngle([3]float32{0, 0, 1}, math.Pi/2)
	dq := DualQuatFromRT(q, [3]float32{1, 2, 3})
	neg := DualQuat{Real: [4]float32{-dq.Real[0], -dq.Real[1], -dq.Real[2], -dq.Real[3]},
		Dual: [4]float32{-dq.Dual[0], -dq.Dual[1], -dq.Dual[2], -dq.Dual[3]}}
	pal := []DualQuat{dq, neg}
	// Bone 1 is the same transform with the opposite sign: antipodality
	// handling must make a 50/50 blend of them equal to either (without it
	// the blend is zero).
	verts := []SkinVertex{
		{Pos: [3]float32{1, 0, 0}, Normal: [3]float32{1, 0, 0}, Joints: PackJoints(0, 0, 0, 0), Weights: [4]float32{1, 0, 0, 0}},
		{Pos: [3]float32{1, 0, 0}, Normal: [3]float32{1, 0, 0}, Joints: PackJoints(0, 1, 0, 0), Weights: [4]float32{0.5, 0.5, 0, 0}},
	}
	out := make([]SkinnedVertex, 2)
	for _, id := range []sched.KernelID{SkinDQS, SkinDQSUniform} {
		d := skinTask(verts, sched.StreamOf(pal), out, 0, 0)
		if err := runDirect(t, id, &d, 0, 2); err != nil {
			t.Fatal(err)
		}
		for i := range out {
			checkVec(t, "position", out[i].Pos, [3]float64{1, 3, 3}, 1e-6)
			checkVec(t, "normal", out[i].Normal, [3]float64{0, 1, 0}, 1e-6)
		}
	}
}

// refDQS is an independent float64 dual-quaternion skinning of one vertex:
// blend, normalise, convert to rotation matrix and translation 2*d*conj(r).
func refDQS(v *SkinVertex, pal []DualQuat, base uint32) (p, n [3]float64) {
	var r, d [4]float64
	q0 := &pal[base+v.Joints&0xff]
	for k := 0; k < 4; k++ {
		q := &pal[base+v.Joints>>(8*k)&0xff]
		w := float64(v.Weights[k])
		if float64(q0.Real[0])*float64(q.Real[0])+float64(q0.Real[1])*float64(q.Real[1])+
			float64(q0.Real[2])*float64(q.Real[2])+float64(q0.Real[3])*float64(q.Real[3]) < 0 {
			w = -w
		}
		for e := 0; e < 4; e++ {
			r[e] += w * float64(q.Real[e])
			d[e] += w * float64(q.Dual[e])
		}
	}
	l := math.Sqrt(r[0]*r[0] + r[1]*r[1] + r[2]*r[2] + r[3]*r[3])
	for e := range r {
		r[e] /= l
		d[e] /= l
	}
	x, y, z, w := r[0], r[1], r[2], r[3]
	rot := [3][3]float64{
		{1 - 2*(y*y+z*z), 2 * (x*y - w*z), 2 * (x*z + w*y)},
		{2 * (x*y + w*z), 1 - 2*(x*x+z*z), 2 * (y*z - w*x)},
		{2 * (x*z - w*y), 2 * (y*z + w*x), 1 - 2*(x*x+y*y)},
	}
	// t = 2 * d * conj(r), vector part.
	tq := qmul([4]float64{d[0], d[1], d[2], d[3]}, [4]float64{-x, -y, -z, w})
	for i := 0; i < 3; i++ {
		p[i] = 2 * tq[i]
		for j := 0; j < 3; j++ {
			p[i] += rot[i][j] * float64(v.Pos[j])
			n[i] += rot[i][j] * float64(v.Normal[j])
		}
	}
	return p, n
}

func qmul(a, b [4]float64) [4]float64 {
	return [4]float64{
		a[3]*b[0] + a[0]*b[3] + a[1]*b[2] - a[2]*b[1],
		a[3]*b[1] - a[0]*b[2] + a[1]*b[3] + a[2]*b[0],
		a[3]*b[2] + a[0]*b[1] - a[1]*b[0] + a[2]*b[3],
		a[3]*b[3] - a[0]*b[0] - a[1]*b[1] - a[2]*b[2],
	}
}

func TestDQSReference(t *testing.T) {
	for _, id := range []sched.KernelID{SkinDQS, SkinDQSUniform} {
		d := fixture(t, id, 1000)
		if err := runDirect(t, id, &d, 0, d.Elements); err != nil {
			t.Fatal(err)
		}
		verts, pal, out := sched.View[SkinVertex](d.In[0]), sched.View[DualQuat](d.In[1]), sched.View[SkinnedVertex](d.Out[0])
		nv, stride := d.Params[0], d.Params[1]
		for i := range out {
			v := &verts[uint32(i)%nv]
			p, n := refDQS(v, pal, v.Palette+uint32(i)/nv*stride)
			checkVec(t, "position", out[i].Pos, p, 2e-5)
			checkVec(t, "normal", out[i].Normal, n, 2e-5)
		}
	}
}

// TestDQSMatchesLBSForOneBone: with a single bone, both skinning methods
// apply the same rigid transform.
func TestDQSMatchesLBSForOneBone(t *testing.T) {
	r := rng(7)
	const n = 256
	rots, trans := make([][4]float32, 16), make([][3]float32, 16)
	mats, dqs := make([]Mat4, 16), make([]DualQuat, 16)
	for i := range rots {
		rots[i], trans[i] = randUnitQuat(r), randVec(r, 3)
		mats[i], dqs[i] = RigidMatrix(rots[i], trans[i]), DualQuatFromRT(rots[i], trans[i])
	}
	verts := randSkinVertices(r, n, 16)
	for i := range verts {
		j := uint8(i % 16)
		verts[i].Joints = PackJoints(j, j, j, j)
	}
	a, b := make([]SkinnedVertex, n), make([]SkinnedVertex, n)
	da := skinTask(verts, sched.StreamOf(mats), a, 0, 0)
	db := skinTask(verts, sched.StreamOf(dqs), b, 0, 0)
	if err := runDirect(t, SkinLBS, &da, 0, n); err != nil {
		t.Fatal(err)
	}
	if err := runDirect(t, SkinDQS, &db, 0, n); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		checkVec(t, "dqs position", b[i].Pos, [3]float64{float64(a[i].Pos[0]), float64(a[i].Pos[1]), float64(a[i].Pos[2])}, 1e-5)
		checkVec(t, "dqs normal", b[i].Normal, [3]float64{float64(a[i].Normal[0]), float64(a[i].Normal[1]), float64(a[i].Normal[2])}, 1e-5)
	}
}

func poseTask(local []Transform, parents []int32, nb int, invBind []Mat4) (sched.TaskData, []Mat4, []Mat4) {
	var d sched.TaskData
	d.Elements = uint32(len(local) / nb)
	d.Params[0] = uint32(nb)
	d.In[0] = stridedStream(local, nb)
	d.In[1] = sched.StreamOf(parents)
	model := make([]Mat4, len(local))
	d.Out[0] = stridedStream(model, nb)
	var skin []Mat4
	if invBind != nil {
		d.In[2] = sched.StreamOf(invBind)
		skin = make([]Mat4, len(local))
		d.Out[1] = stridedStream(skin, nb)
	}
	d.End = d.Elements
	return d, model, skin
}

func TestLocalToModelByHand(t *testing.T) {
	d, model, _ := poseTask(handChain(), []int32{-1, 0, 1}, 3, nil)
	if err := runDirect(t, LocalToModel, &d, 0, 2); err != nil {
		t.Fatal(err)
	}
	checkHandChain(t, model)
}

// handChain returns the local transforms of two identical three-bone
// chains (parents -1, 0, 1) worked out by hand:
// Root: rotate 90 degrees about Z, translate (1, 0, 0).
// Child: translate (1, 0, 0) in the root's frame: origin (1, 1, 0).
// Grandchild: scale 2, translate (0, 1, 0) in the child's frame, which
// is rotated like the root: origin (1, 1, 0) + (-1, 0, 0) = (0, 1, 0);
// its X axis is the root's rotated X (0, 1, 0) scaled by 2.
func handChain() []Transform {
	one := [3]float32{1, 1, 1}
	id := [4]float32{0, 0, 0, 1}
	local := []Transform{
		{Rot: AxisAngle([3]float32{0, 0, 1}, math.Pi/2), Trans: [3]float32{1, 0, 0}, Scale: one},
		{Rot: id, Trans: [3]float32{1, 0, 0}, Scale: one},
		{Rot: id, Trans: [3]float32{0, 1, 0}, Scale: [3]float32{2, 2, 2}},
	}
	return append(local, local...)
}

// checkHandChain checks the model matrices of handChain's two skeletons.
func checkHandChain(t *testing.T, model []Mat4) {
	t.Helper()
	for s := 0; s < 2; s++ {
		m := model[3*s:]
		checkVec(t, "root origin", [3]float32(m[0][12:15]), [3]float64{1, 0, 0}, 1e-6)
		checkVec(t, "child origin", [3]float32(m[1][12:15]), [3]float64{1, 1, 0}, 1e-6)
		checkVec(t, "grandchild origin", [3]float32(m[2][12:15]), [3]float64{0, 1, 0}, 1e-6)
		checkVec(t, "grandchild X axis", [3]float32(m[2][0:3]), [3]float64{0, 2, 0}, 1e-6)
		if m[2][3] != 0 || m[2][7] != 0 || m[2][11] != 0 || m[2][15] != 1 {
			t.Fatalf("last row of %v is not 0 0 0 1", m[2])
		}
	}
}

// refModel is an independent float64 local-to-model of one skeleton.
func refModel(local []Transform, parents []int32) [][16]float64 {
	out := make([][16]float64, len(local))
	for b, x := range local {
		qx, qy, qz, qw := float64(x.Rot[0]), float64(x.Rot[1]), float64(x.Rot[2]), float64(x.Rot[3])
		rot := [3][3]float64{
			{1 - 2*(qy*qy+qz*qz), 2 * (qx*qy - qw*qz), 2 * (qx*qz + qw*qy)},
			{2 * (qx*qy + qw*qz), 1 - 2*(qx*qx+qz*qz), 2 * (qy*qz - qw*qx)},
			{2 * (qx*qz - qw*qy), 2 * (qy*qz + qw*qx), 1 - 2*(qx*qx+qy*qy)},
		}
		var l [16]float64
		for c := 0; c < 3; c++ {
			for r := 0; r < 3; r++ {
				l[4*c+r] = rot[r][c] * float64(x.Scale[c])
			}
			l[12+c] = float64(x.Trans[c])
		}
		l[15] = 1
		if p := parents[b]; p >= 0 {
			l = mul64(out[p], l)
		}
		out[b] = l
	}
	return out
}

func mul64(a, b [16]float64) [16]float64 {
	var c [16]float64
	for j := 0; j < 4; j++ {
		for i := 0; i < 4; i++ {
			for k := 0; k < 4; k++ {
				c[4*j+i] += a[4*k+i] * b[4*j+k]
			}
		}
	}
	return c
}

func TestLocalToModelReference(t *testing.T) {
	d := fixture(t, LocalToModelSkin, 20)
	if err := runDirect(t, LocalToModelSkin, &d, 0, d.Elements); err != nil {
		t.Fatal(err)
	}
	nb := int(d.Params[0])
	local := sched.View[Transform](d.In[0])
	parents := sched.View[int32](d.In[1])
	inv := sched.View[Mat4](d.In[2])
	model, skin := sched.View[Mat4](d.Out[0]), sched.View[Mat4](d.Out[1])
	for s := 0; s < int(d.Elements); s++ {
		ref := refModel(local[s*nb:(s+1)*nb], parents)
		for b := range ref {
			var inv64 [16]float64
			for e := range inv64 {
				inv64[e] = float64(inv[b][e])
			}
			sk := mul64(ref[b], inv64)
			for e := 0; e < 16; e++ {
				if !near(float64(model[s*nb+b][e]), ref[b][e], 1e-4) || !near(float64(skin[s*nb+b][e]), sk[e], 1e-4) {
					t.Fatalf("skeleton %d bone %d element %d: model %v skin %v, want %v %v", s, b, e,
						model[s*nb+b][e], skin[s*nb+b][e], ref[b][e], sk[e])
				}
			}
		}
	}
}

// TestLocalToModelSkinBindPose: skinning matrices of the bind pose against
// its own inverse bind matrices are the identity.
func TestLocalToModelSkinBindPose(t *testing.T) {
	r := rng(3)
	const nb = 40
	local := randLocal(r, nb)
	for i := range local {
		local[i].Scale = [3]float32{1, 1, 1}
	}
	parents := randParents(r, nb)
	ref := refModel(local, parents)
	inv := make([]Mat4, nb)
	for b := range inv {
		// Inverse of a rigid transform: R^T and -R^T t.
		m := ref[b]
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				inv[b][4*j+i] = float32(m[4*i+j])
			}
			inv[b][12+i] = float32(-(m[4*i]*m[12] + m[4*i+1]*m[13] + m[4*i+2]*m[14]))
		}
		inv[b][15] = 1
	}
	d, _, skin := poseTask(local, parents, nb, inv)
	if err := runDirect(t, LocalToModelSkin, &d, 0, 1); err != nil {
		t.Fatal(err)
	}
	id := Identity()
	for b := range skin {
		for e := range skin[b] {
			if math.Abs(float64(skin[b][e]-id[e])) > 1e-4 {
				t.Fatalf("bone %d: skin %v is not the identity", b, skin[b])
			}
		}
	}
}

func reduceTask[O any](x []float32, out []O, valid uint32) sched.TaskData {
	var d sched.TaskData
	d.Elements = uint32(len(out))
	d.Params[0] = valid
	d.In[0] = sched.StreamOf(x)
	d.Out[0] = sched.StreamOf(out)
	d.End = d.Elements
	return d
}

func TestSumByHand(t *testing.T) {
	// Block 0 holds 1..256 (sum 32896, exact in float32); block 1 holds
	// 0.5 x 256 but only its first 10 are valid: 5.
	x := make([]float32, 512)
	for i := 0; i < 256; i++ {
		x[i] = float32(i + 1)
		x[256+i] = 0.5
	}
	out := make([]float32, 2)
	d := reduceTask(x, out, 266)
	if err := runDirect(t, SumF32, &d, 0, 2); err != nil {
		t.Fatal(err)
	}
	if out[0] != 32896 || out[1] != 5 {
		t.Fatalf("sums %v, want [32896 5]", out)
	}
}

func TestSumReference(t *testing.T) {
	d := fixture(t, SumF32, 50)
	if err := runDirect(t, SumF32, &d, 0, d.Elements); err != nil {
		t.Fatal(err)
	}
	x, out := sched.View[float32](d.In[0])[:d.Params[0]], sched.View[float32](d.Out[0])
	for i := range out {
		blk := x[min(i*SumFactor, len(x)):min((i+1)*SumFactor, len(x))]
		var seq float32 // the documented order: exact equality
		var f64 float64
		for _, v := range blk {
			seq += v
			f64 += float64(v)
		}
		// With streamFast the AVX2 loop's 32 partial sums are within
		// sumTolerance of the index order instead (stream_amd64.go).
		if streamFast && !(math.Abs(float64(out[i])-float64(seq)) <= sumTolerance(blk, 1)) {
			t.Fatalf("block %d: %v, sequential float32 sum %v, beyond the tolerance %g", i, out[i], seq, sumTolerance(blk, 1))
		}
		if !streamFast && out[i] != seq {
			t.Fatalf("block %d: %v, sequential float32 sum %v", i, out[i], seq)
		}
		if !near(float64(out[i]), f64, 1e-4*float64(len(blk))) && math.Abs(float64(out[i])-f64) > 1e-2 {
			t.Fatalf("block %d: %v, float64 sum %v", i, out[i], f64)
		}
	}
}

func TestMinMaxByHand(t *testing.T) {
	x := make([]float32, 3*SumFactor)
	for i := range x {
		x[i] = float32(i % 7)
	}
	x[3] = -2
	x[200] = float32(math.NaN()) // ignored
	x[256] = float32(math.NaN())
	x[300] = 99
	out := make([]MinMax, 3)
	d := reduceTask(x, out, 2*SumFactor) // block 2 is empty
	if err := runDirect(t, MinMaxF32, &d, 0, 3); err != nil {
		t.Fatal(err)
	}
	inf := float32(math.Inf(1))
	want := []MinMax{{-2, 6}, {0, 99}, {inf, -inf}}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("minmax %v, want %v", out, want)
		}
	}
}

func TestAvg32ByHand(t *testing.T) {
	// Block 0: 0..31, mean 15.5. Block 1: 3 valid values 1, 2, 4: 7/3.
	// Block 2: empty: 0.
	x := make([]float32, 96)
	for i := 0; i < 32; i++ {
		x[i] = float32(i)
	}
	x[32], x[33], x[34] = 1, 2, 4
	out := make([]float32, 3)
	d := reduceTask(x, out, 35)
	if err := runDirect(t, Avg32F32, &d, 0, 3); err != nil {
		t.Fatal(err)
	}
	if out[0] != 15.5 || out[1] != float32(7)/3 || out[2] != 0 {
		t.Fatalf("averages %v, want [15.5 %v 0]", out, float32(7)/3)
	}
}

func TestExpandByHand(t *testing.T) {
	seg := []Segment{{0, 8}, {2, -2}}
	out := make([]float32, 16)
	var d sched.TaskData
	d.Elements = 2
	d.In[0], d.Out[0] = sched.StreamOf(seg), sched.StreamOf(out)
	if err := runDirect(t, ExpandLerp, &d, 0, 2); err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 1, 2, 3, 4, 5, 6, 7, 2, 1.5, 1, 0.5, 0, -0.5, -1, -1.5}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("samples %v, want %v", out, want)
		}
	}
}

func TestExpandUnfused(t *testing.T) {
	// Each sample is a + round(round(b-a) * k/8): no fused multiply-add.
	d := fixture(t, ExpandLerp, 1000)
	if err := runDirect(t, ExpandLerp, &d, 0, d.Elements); err != nil {
		t.Fatal(err)
	}
	seg, out := sched.View[Segment](d.In[0]), sched.View[float32](d.Out[0])
	for i, s := range seg {
		for k := 0; k < ExpandFactor; k++ {
			prod := float32(float64(float32(s.B-s.A)) * float64(k) / 8) // exact: k/8 is a power-of-two fraction
			if want := s.A + prod; out[i*ExpandFactor+k] != want {
				t.Fatalf("segment %d sample %d: %v, want %v", i, k, out[i*ExpandFactor+k], want)
			}
		}
	}
}

func refExclusiveScan(x []uint32, offset uint32) []uint32 {
	out := make([]uint32, len(x))
	acc := offset
	for i, v := range x {
		out[i] = acc
		acc += v
	}
	return out
}

func TestScanKernelsByHand(t *testing.T) {
	// Two blocks of ones: totals 256 and 256 (with Params[0] = 300: 256
	// and 44). Downsweep from offsets (10, 20): 10, 11, ..., then 20, 21, ...
	x := make([]uint32, 512)
	for i := range x {
		x[i] = 1
	}
	tot := make([]uint32, 2)
	var d sched.TaskData
	d.Elements = 2
	d.Params[0] = 300
	d.In[0], d.Out[0] = sched.StreamOf(x), sched.StreamOf(tot)
	if err := runDirect(t, ScanReduceU32, &d, 0, 2); err != nil {
		t.Fatal(err)
	}
	if tot[0] != 256 || tot[1] != 44 {
		t.Fatalf("totals %v, want [256 44]", tot)
	}
	out := make([]uint32, 512)
	d.In[0], d.In[1], d.Out[0] = sched.StreamOf([]uint32{10, 20}), sched.StreamOf(x), sched.StreamOf(out)
	if err := runDirect(t, ScanDownsweepU32, &d, 0, 2); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		want := uint32(10 + i)
		if i >= 256 {
			want = uint32(20 + min(i-256, 44))
		}
		if out[i] != want {
			t.Fatalf("scan[%d] = %d, want %d", i, out[i], want)
		}
	}
}

func TestScanDownsweepReference(t *testing.T) {
	d := fixture(t, ScanDownsweepU32, 30)
	if err := runDirect(t, ScanDownsweepU32, &d, 0, d.Elements); err != nil {
		t.Fatal(err)
	}
	off, x, out := sched.View[uint32](d.In[0]), sched.View[uint32](d.In[1]), sched.View[uint32](d.Out[0])
	valid := int(d.Params[0])
	for b := range off {
		blk := append([]uint32(nil), x[b*ScanBlock:(b+1)*ScanBlock]...)
		for k := range blk {
			if b*ScanBlock+k >= valid {
				blk[k] = 0
			}
		}
		want := refExclusiveScan(blk, off[b])
		for k := range want {
			if out[b*ScanBlock+k] != want[k] {
				t.Fatalf("block %d element %d: %d, want %d", b, k, out[b*ScanBlock+k], want[k])
			}
		}
	}
}

// refCRC32C is a bitwise CRC-32C, independent of hash/crc32's tables and
// hardware path.
func refCRC32C(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for k := 0; k < 8; k++ {
			crc = crc>>1 ^ 0x82f63b78&-(crc&1)
		}
	}
	return ^crc
}

func TestCRC32CByHand(t *testing.T) {
	// The check value of CRC-32C: "123456789" -> 0xe3069283.
	if got := refCRC32C([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("reference CRC-32C of 123456789 = %#x", got)
	}
	words := make([]uint32, 2*CRCBlockWords)
	copy(sched.StreamOf(words).Bytes, "123456789")
	out := make([]uint32, 2)
	var d sched.TaskData
	d.Elements = 2
	d.Params[0] = 9 // 9 valid bytes: block 0 is "123456789", block 1 empty
	d.In[0], d.Out[0] = sched.StreamOf(words), sched.StreamOf(out)
	if err := runDirect(t, CRC32CBlocks, &d, 0, 2); err != nil {
		t.Fatal(err)
	}
	if out[0] != 0xe3069283 || out[1] != 0 {
		t.Fatalf("CRCs %#x, want [0xe3069283 0]", out)
	}
}

func TestCRC32CReference(t *testing.T) {
	d := fixture(t, CRC32CBlocks, 9)
	if err := runDirect(t, CRC32CBlocks, &d, 0, d.Elements); err != nil {
		t.Fatal(err)
	}
	data := d.In[0].Bytes[:d.Params[0]]
	out := sched.View[uint32](d.Out[0])
	for i := range out {
		blk := data[min(i*CRCBlockBytes, len(data)):min((i+1)*CRCBlockBytes, len(data))]
		if out[i] != refCRC32C(blk) || out[i] != crc32.Checksum(blk, crc32.MakeTable(crc32.Castagnoli)) {
			t.Fatalf("block %d: %#x, want %#x", i, out[i], refCRC32C(blk))
		}
	}
	// The whole-stream CRC from the block CRCs.
	if got, want := CRC32COfBlocks(out, int64(len(data))), refCRC32C(data); got != want {
		t.Fatalf("CRC32COfBlocks = %#x, want %#x", got, want)
	}
}

func TestCRC32CCombine(t *testing.T) {
	r := rng(11)
	buf := make([]byte, 10000)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 4096, 5000, 9999, 10000} {
		a, b := buf[:cut], buf[cut:]
		if got, want := CRC32CCombine(refCRC32C(a), refCRC32C(b), int64(len(b))), refCRC32C(buf); got != want {
			t.Fatalf("cut %d: combine %#x, want %#x", cut, got, want)
		}
	}
}

func TestSaxpyByHand(t *testing.T) {
	x, y := []float32{1, 2, -3}, []float32{3, 4, 0.25}
	var d sched.TaskData
	d.Elements = 3
	d.Params[0] = math.Float32bits(2)
	// In place: out is y.
	d.In[0], d.In[1], d.Out[0] = sched.StreamOf(x), sched.StreamOf(y), sched.StreamOf(y)
	if err := runDirect(t, Saxpy, &d, 0, 3); err != nil {
		t.Fatal(err)
	}
	if y[0] != 5 || y[1] != 8 || y[2] != -5.75 {
		t.Fatalf("saxpy %v, want [5 8 -5.75]", y)
	}
}

func TestSaxpyUnfused(t *testing.T) {
	d := fixture(t, Saxpy, 4096)
	if err := runDirect(t, Saxpy, &d, 0, d.Elements); err != nil {
		t.Fatal(err)
	}
	a := math.Float32frombits(d.Params[0])
	x, y, out := sched.View[float32](d.In[0]), sched.View[float32](d.In[1]), sched.View[float32](d.Out[0])
	for i := range out {
		if want := float32(float64(a)*float64(x[i])) + y[i]; out[i] != want {
			t.Fatalf("out[%d] = %v, want round(a*x)+y = %v", i, out[i], want)
		}
	}
}
