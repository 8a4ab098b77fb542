package kernels

import (
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

func closeMat(a, b *Mat4, tol float32) bool {
	for k := range a {
		if d := a[k] - b[k]; d > tol || d < -tol {
			return false
		}
	}
	return true
}

// TestToModelDirect: the per-step local-to-model calls compute what the
// kernels' Go reference does (ToModelGo bit for bit, ToModel and
// ToModelSkin up to FMA rounding), and ToModelSkin's palette is
// ToModel then Palette.
func TestToModelDirect(t *testing.T) {
	r := rng(41)
	const n = 37
	parents, local := randParents(r, n), randLocal(r, n)
	invBind := make([][16]float32, n) // the importer's type
	for b := range invBind {
		invBind[b] = RigidMatrix(randUnitQuat(r), randVec(r, 1))
	}
	ref := make([]Mat4, n)
	poseChainGo(local, parents, ref, nil, nil)
	goModel := make([]Mat4, n)
	if err := ToModelGo(parents, local, goModel); err != nil {
		t.Fatal(err)
	}
	model, skinModel, pal, pal2 := make([]Mat4, n), make([]Mat4, n), make([]Mat4, n), make([]Mat4, n)
	if err := ToModel(parents, local, model); err != nil {
		t.Fatal(err)
	}
	if err := ToModelSkin(parents, local, invBind, skinModel, pal); err != nil {
		t.Fatal(err)
	}
	if err := Palette(model, invBind, pal2); err != nil {
		t.Fatal(err)
	}
	for b := range n {
		if goModel[b] != ref[b] {
			t.Fatalf("bone %d: ToModelGo %v, reference %v", b, goModel[b], ref[b])
		}
		ib := Mat4(invBind[b])
		want := ref[b].Mul(&ib)
		if !closeMat(&model[b], &ref[b], 1e-4) || !closeMat(&skinModel[b], &ref[b], 1e-4) {
			t.Fatalf("bone %d: model %v / %v, want %v", b, model[b], skinModel[b], ref[b])
		}
		if !closeMat(&pal[b], &want, 1e-4) || !closeMat(&pal2[b], &want, 1e-4) {
			t.Fatalf("bone %d: palette %v / %v, want %v", b, pal[b], pal2[b], want)
		}
	}
}

// TestDirectCallsReject: bad arguments are errors naming the call and
// what is wrong, and write nothing.
func TestDirectCallsReject(t *testing.T) {
	local := make([]Transform, 3)
	m := make([]Mat4, 3)
	ib := make([]Mat4, 3)
	verts := []SkinVertex{{Joints: PackJoints(0, 0, 0, 5), Weights: [4]float32{1}}}
	out := make([]SkinnedVertex, 1)
	cases := []struct {
		name, want string
		err        error
	}{
		{"no bones", "ToModel: no bones", ToModel(nil, local, m)},
		{"parent after child", "bone 1 has parent 2", ToModel([]int32{-1, 2, 0}, local, m)},
		{"parent below -1", "bone 0 has parent -2", ToModelGo([]int32{-2, 0, 0}, local, m)},
		{"short local", "local holds 2, want 3", ToModel([]int32{-1, 0, 1}, local[:2], m)},
		{"short model", "model holds 1, want 3", ToModelSkin([]int32{-1, 0, 1}, local, ib, m[:1], m)},
		{"short inverse bind", "inverseBind holds 2, want 3", ToModelSkin([]int32{-1, 0, 1}, local, ib[:2], m, m)},
		{"short palette", "Palette: palette holds 2", Palette(m, ib, m[:2])},
		{"short dual quaternions", "2 dual quaternions for 3 matrices", DualQuatPalette(m, make([]DualQuat, 2))},
		{"short output", "LBS: 0 output vertices for 1 vertices", LBS(verts, m, out[:0])},
		{"empty palette", "DQS: empty palette", DQS(verts, nil, out)},
		{"joint outside the palette", "LBS: item 0: joints 0x05000000", LBS(verts, m, out)},
		{"joint outside the DQ palette", "DQS: item 0: joints 0x05000000", DQS(verts, make([]DualQuat, 3), out)},
	}
	for _, tc := range cases {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) || !strings.HasPrefix(tc.err.Error(), "kernels: ") {
			t.Errorf("%s: error %v, want one starting \"kernels: \" containing %q", tc.name, tc.err, tc.want)
		}
	}
	for b := range m {
		if m[b] != (Mat4{}) {
			t.Fatalf("a rejected call wrote model/palette %d: %v", b, m[b])
		}
	}
}

// TestJointsOf256Bones: importer joints up to 255 pack; 256 and up are
// refused with the 256-bone limit named.
func TestJointsOf256Bones(t *testing.T) {
	j, err := JointsOf([4]uint16{1, 255, 0, 7})
	if err != nil || j != PackJoints(1, 255, 0, 7) {
		t.Fatalf("JointsOf: %#x, %v", j, err)
	}
	if _, err := JointsOf([4]uint16{0, 256, 0, 0}); err == nil || !strings.Contains(err.Error(), "joint 256 is above 255") || !strings.Contains(err.Error(), "256 bones") {
		t.Fatalf("JointsOf(256): %v", err)
	}
	pos := [][3]float32{{1, 2, 3}, {4, 5, 6}}
	nrm := [][3]float32{{0, 1, 0}, {1, 0, 0}}
	w := [][4]float32{{1}, {0.5, 0.5}}
	v, err := SkinVertices(nil, pos, nrm, [][4]uint16{{0}, {2, 3}}, w)
	if err != nil || len(v) != 2 || v[1] != (SkinVertex{Pos: pos[1], Normal: nrm[1], Joints: PackJoints(2, 3, 0, 0), Weights: w[1]}) {
		t.Fatalf("SkinVertices: %v, %v", v, err)
	}
	if _, err := SkinVertices(nil, pos, nil, [][4]uint16{{0}, {2, 300}}, w); err == nil || !strings.Contains(err.Error(), "vertex 1: kernels: joint 300") {
		t.Fatalf("SkinVertices with joint 300: %v", err)
	}
	if _, err := SkinVertices(nil, pos, nrm[:1], [][4]uint16{{0}, {1}}, w); err == nil || !strings.Contains(err.Error(), "2 positions, 1 normals") {
		t.Fatalf("SkinVertices with a short normal array: %v", err)
	}
}

// TestDualQuatFromMatrix: the conversion recovers the rotation (up to
// sign) and translation of rigid and scaled matrices, near every
// Shepperd branch.
func TestDualQuatFromMatrix(t *testing.T) {
	r := rng(43)
	quats := [][4]float32{{0, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, -1}}
	for range 200 {
		quats = append(quats, randUnitQuat(r))
	}
	for i, q := range quats {
		tr := randVec(r, 3)
		want := DualQuatFromRT(q, tr)
		m := Transform{Rot: q, Trans: tr, Scale: [3]float32{1, 1, 1}}
		if i%2 == 1 {
			m.Scale = [3]float32{0.5, 2, 1.5} // dropped
		}
		mm := m.Matrix()
		got := DualQuatFromMatrix(&mm)
		sign := float32(1)
		if dot4(&got.Real, &want.Real) < 0 {
			sign = -1
		}
		for k := range 4 {
			if math.Abs(float64(got.Real[k]-sign*want.Real[k])) > 2e-6 || math.Abs(float64(got.Dual[k]-sign*want.Dual[k])) > 1e-5 {
				t.Fatalf("quaternion %v, translation %v: %v, want ±%v", q, tr, got, want)
			}
		}
	}
	if got := DualQuatFromMatrix(&Mat4{12: 1, 13: 2, 14: 3}); got != DualQuatFromRT([4]float32{0, 0, 0, 1}, [3]float32{1, 2, 3}) {
		t.Fatalf("degenerate matrix: %v", got)
	}
}

// TestSkinDirect: LBS and DQS skin as the kernels' Go references do (up to
// FMA rounding), and DQS over DualQuatPalette of a rigid palette matches
// LBS.
func TestSkinDirect(t *testing.T) {
	r := rng(47)
	const nb, nv = 40, 203
	verts := randSkinVertices(r, nv, nb)
	pal := randRigidPalette(r, nb)
	dq := make([]DualQuat, nb)
	if err := DualQuatPalette(pal, dq); err != nil {
		t.Fatal(err)
	}
	got, dgot := make([]SkinnedVertex, nv), make([]SkinnedVertex, nv)
	want, dwant := make([]SkinnedVertex, nv), make([]SkinnedVertex, nv)
	if err := LBS(verts, pal, got); err != nil {
		t.Fatal(err)
	}
	if err := DQS(verts, dq, dgot); err != nil {
		t.Fatal(err)
	}
	if err := lbsGo(&skinSetup{verts: verts, out: want}, pal, 0, nv, 0); err != nil {
		t.Fatal(err)
	}
	if err := dqsGo(&skinSetup{verts: verts, out: dwant}, dq, 0, nv, 0); err != nil {
		t.Fatal(err)
	}
	for i := range nv {
		for k := range 3 {
			if math.Abs(float64(got[i].Pos[k]-want[i].Pos[k])) > 1e-4 || math.Abs(float64(dgot[i].Pos[k]-dwant[i].Pos[k])) > 1e-4 {
				t.Fatalf("vertex %d: LBS %v want %v, DQS %v want %v", i, got[i], want[i], dgot[i], dwant[i])
			}
		}
	}
	// One bone per vertex: LBS and DQS agree.
	for i := range verts {
		verts[i].Weights = [4]float32{1}
	}
	if err := LBS(verts, pal, got); err != nil {
		t.Fatal(err)
	}
	if err := DQS(verts, dq, dgot); err != nil {
		t.Fatal(err)
	}
	for i := range nv {
		for k := range 3 {
			if math.Abs(float64(got[i].Pos[k]-dgot[i].Pos[k])) > 1e-4 {
				t.Fatalf("vertex %d, one bone: LBS %v, DQS %v", i, got[i], dgot[i])
			}
		}
	}
}

// TestDirectCallsZeroAllocs: the per-step calls allocate nothing.
func TestDirectCallsZeroAllocs(t *testing.T) {
	r := rng(53)
	const nb, nv = 30, 100
	parents, local := randParents(r, nb), randLocal(r, nb)
	invBind := make([][16]float32, nb)
	for b := range invBind {
		invBind[b] = Identity()
	}
	model, pal := make([]Mat4, nb), make([]Mat4, nb)
	dq := make([]DualQuat, nb)
	verts := randSkinVertices(r, nv, nb)
	out := make([]SkinnedVertex, nv)
	var err error
	allocs := testing.AllocsPerRun(20, func() {
		err = ToModel(parents, local, model)
		if err == nil {
			err = ToModelSkin(parents, local, invBind, model, pal)
		}
		if err == nil {
			err = Palette(model, invBind, pal)
		}
		if err == nil {
			err = LBS(verts, pal, out)
		}
		if err == nil {
			err = DualQuatPalette(pal, dq)
		}
		if err == nil {
			err = DQS(verts, dq, out)
		}
		_ = TransformsOf(make([]float32, 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per step, want 0", allocs)
	}
}

// TestFlatViews: TransformsOf and Mat4sOf share the floats' memory.
func TestFlatViews(t *testing.T) {
	f := make([]float32, 2*12+5)
	x := TransformsOf(f)
	if len(x) != 2 {
		t.Fatalf("%d transforms", len(x))
	}
	x[1].Scale[2] = 7
	if f[12+10] != 7 {
		t.Fatal("TransformsOf does not share memory")
	}
	g := make([]float32, 33)
	m := Mat4sOf(g)
	if len(m) != 2 {
		t.Fatalf("%d matrices", len(m))
	}
	m[1][14] = 3
	if g[16+14] != 3 {
		t.Fatal("Mat4sOf does not share memory")
	}
	if TransformsOf(f[:11]) != nil || Mat4sOf(nil) != nil {
		t.Fatal("a short slice gives a non-nil view")
	}
}

// TestPerStepIsTheBatchTask: the LocalToModelSkin task over a batch of
// flat poses (PerSkeleton(TransformsOf(...))) computes what ToModelSkin
// computes per skeleton, bit for bit.
func TestPerStepIsTheBatchTask(t *testing.T) {
	r := rng(59)
	const nb, chars = 24, 5
	parents := randParents(r, nb)
	flat := make([]float32, chars*nb*12) // as anim.SampleJob writes poses
	copy(TransformsOf(flat), randLocal(r, chars*nb))
	invBind := randRigidPalette(r, nb)
	model, pal := make([]Mat4, chars*nb), make([]Mat4, chars*nb)
	var d sched.TaskData
	d.Elements, d.Params[0] = chars, nb
	d.In[0], d.In[1], d.In[2] = PerSkeleton(TransformsOf(flat), nb), sched.StreamOf(parents), sched.StreamOf(invBind)
	d.Out[0], d.Out[1] = PerSkeleton(model, nb), PerSkeleton(pal, nb)
	if d.In[0].Count != chars || d.In[0].Stride != nb*48 {
		t.Fatalf("PerSkeleton: %d elements of %d bytes", d.In[0].Count, d.In[0].Stride)
	}
	if err := runDirect(t, LocalToModelSkin, &d, 0, chars); err != nil {
		t.Fatal(err)
	}
	m1, p1 := make([]Mat4, nb), make([]Mat4, nb)
	for c := range chars {
		if err := ToModelSkin(parents, TransformsOf(flat)[c*nb:], invBind, m1, p1); err != nil {
			t.Fatal(err)
		}
		for b := range nb {
			if m1[b] != model[c*nb+b] || p1[b] != pal[c*nb+b] {
				t.Fatalf("character %d bone %d: per step %v %v, task %v %v", c, b, m1[b], p1[b], model[c*nb+b], pal[c*nb+b])
			}
		}
	}
	if st := PerSkeleton(make([]Mat4, 2*nb+3), nb); st.Count != 2 || len(st.Bytes) != 2*nb*64 {
		t.Fatalf("PerSkeleton with a partial skeleton: %d elements, %d bytes", st.Count, len(st.Bytes))
	}
}
