package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// Tests of lbsAVX2 (skin_amd64.s) against lbsGo. KERNELS_GO=1 (see
// pose_asm_test.go) clears lbsFast, so that every other skinning test runs
// the Go path; these compare both paths directly.

// lbsTol bounds |asm - go| per component relative to the component's
// magnitude bound (lbsMagnitudes). Below GOAMD64=v3 the paths agree in
// every bit; with v3 the compiler fuses lbsGo's multiply-adds into FMAs,
// a few ULPs (6e-8 each) of difference.
const lbsTol = 1e-6

func skipWithoutLBSAsm(t testing.TB) {
	t.Helper()
	if !lbsHasAsm {
		t.Skip("lbsAVX2 not available: the CPU lacks AVX2 or FMA, or not amd64, or built with -tags purego; only the Go path runs")
	}
}

// lbsMagnitudes returns, in float64, a bound of the position's components
// computed with absolute values throughout (rounding errors of either path
// are a multiple of it), the same bound for the unnormalised normal divided
// by its exact length (the error of the normalised normal), and whether the
// vertex takes the 2-joint path.
func lbsMagnitudes(sv *SkinVertex, pal []Mat4, base uint32) (magP, magN float64, two bool) {
	var a, m [16]float64
	for k := range 4 {
		w := float64(sv.Weights[k])
		p := &pal[base+sv.Joints>>(8*k)&0xff]
		for e := range a {
			a[e] += math.Abs(w) * math.Abs(float64(p[e]))
			m[e] += w * float64(p[e])
		}
	}
	var n [3]float64
	for r := range 3 {
		x, y, z := float64(sv.Pos[0]), float64(sv.Pos[1]), float64(sv.Pos[2])
		magP = max(magP, a[r]*math.Abs(x)+a[4+r]*math.Abs(y)+a[8+r]*math.Abs(z)+a[12+r])
		x, y, z = float64(sv.Normal[0]), float64(sv.Normal[1]), float64(sv.Normal[2])
		magN = max(magN, a[r]*math.Abs(x)+a[4+r]*math.Abs(y)+a[8+r]*math.Abs(z))
		n[r] = m[r]*x + m[4+r]*y + m[8+r]*z
	}
	magN /= math.Sqrt(n[0]*n[0] + n[1]*n[1] + n[2]*n[2])
	return magP, magN, sv.Weights[2] == 0 && sv.Weights[3] == 0
}

// lbsDiff records the worst relative differences of each path.
type lbsDiff struct {
	worst  [2]float64 // [4-joint, 2-joint]
	count  [2]int     // vertices compared
	abs    [2]float64 // max |asm - go|: [position, normal]
	differ int        // components that differ in bits
	nans   int        // NaN normals (zero normals), equal in both
}

// compare checks got (asm) against want (Go) for vertices verts skinned
// with palette offset base each (bases[k]).
func (d *lbsDiff) compare(t *testing.T, what string, verts []SkinVertex, pal []Mat4, bases []uint32, got, want []SkinnedVertex) {
	t.Helper()
	for k := range want {
		magP, magN, two := lbsMagnitudes(&verts[k], pal, verts[k].Palette+bases[k])
		path := 0
		if two {
			path = 1
		}
		d.count[path]++
		g := [6]float32{got[k].Pos[0], got[k].Pos[1], got[k].Pos[2], got[k].Normal[0], got[k].Normal[1], got[k].Normal[2]}
		w := [6]float32{want[k].Pos[0], want[k].Pos[1], want[k].Pos[2], want[k].Normal[0], want[k].Normal[1], want[k].Normal[2]}
		for c := range g {
			mag := magP
			if c >= 3 {
				mag = magN
			}
			if math.IsNaN(float64(w[c])) || math.IsNaN(float64(g[c])) {
				if !math.IsNaN(float64(w[c])) || !math.IsNaN(float64(g[c])) || c < 3 {
					t.Fatalf("%s: vertex %d component %d: asm %v, Go %v", what, k, c, g[c], w[c])
				}
				d.nans++
				continue
			}
			e := math.Abs(float64(g[c])-float64(w[c])) / max(mag, 1e-30)
			if !(e <= lbsTol) {
				t.Fatalf("%s: vertex %d (%d-joint path) component %d: asm %v, Go %v (error %.3g of magnitude %.3g)\nvertex %+v",
					what, k, 4-2*path, c, g[c], w[c], e, mag, verts[k])
			}
			d.worst[path] = max(d.worst[path], e)
			d.abs[c/3] = max(d.abs[c/3], math.Abs(float64(g[c])-float64(w[c])))
			if math.Float32bits(g[c]) != math.Float32bits(w[c]) {
				d.differ++
			}
		}
	}
}

// randLBSVertices returns hostile vertices: positions up to ±100, normals
// of any length (some zero), weights of any sign and sum, half of them with
// w2 = w3 = ±0 (the 2-joint path), palette offsets below maxOff, joints
// such that Palette + joint < bones + maxOff.
func randLBSVertices(r *rand.Rand, n, bones, maxOff int) []SkinVertex {
	v := make([]SkinVertex, n)
	f := func(s float64) float32 { return float32((r.Float64()*2 - 1) * s) }
	for i := range v {
		x := &v[i]
		s := math.Pow(10, r.Float64()*4-2) // 0.01 .. 100
		x.Pos = [3]float32{f(s), f(s), f(s)}
		x.Normal = [3]float32{f(1), f(1), f(1)}
		if r.IntN(50) == 0 {
			x.Normal = [3]float32{}
		}
		x.Palette = uint32(r.IntN(maxOff + 1))
		j := func() uint8 { return uint8(r.IntN(bones)) }
		x.Joints = PackJoints(j(), j(), j(), j())
		for k := range x.Weights {
			x.Weights[k] = f(1.5)
		}
		switch r.IntN(6) {
		case 0, 1, 2: // 2-joint path, with signed zeros
			x.Weights[2], x.Weights[3] = 0, 0
			if r.IntN(2) == 0 {
				x.Weights[2] = float32(math.Copysign(0, -1))
			}
			if r.IntN(2) == 0 {
				x.Weights[3] = float32(math.Copysign(0, -1))
			}
			if r.IntN(4) == 0 {
				x.Weights[1] = 0 // one joint
			}
		case 3: // 4-joint path with one zero
			x.Weights[2+r.IntN(2)] = 0
		case 4: // tiny w3: still the 4-joint path
			x.Weights[3] = 1e-30
		}
	}
	return v
}

// randLBSPalette returns general (not affine) matrices whose last row is
// garbage, NaN included: neither path reads it.
func randLBSPalette(r *rand.Rand, n int) []Mat4 {
	p := make([]Mat4, n)
	for i := range p {
		for e := range p[i] {
			p[i][e] = float32(r.NormFloat64() * 2)
		}
		if r.IntN(3) == 0 {
			p[i][3], p[i][7], p[i][11], p[i][15] = float32(math.NaN()), float32(math.Inf(1)), -1e38, float32(math.NaN())
		}
	}
	return p
}

// TestSkinLBSAsm compares lbsAVX2 with lbsGo on random runs of 0 to 300
// vertices, with palette offsets, and checks that it writes nothing past
// the end of out.
func TestSkinLBSAsm(t *testing.T) {
	skipWithoutLBSAsm(t)
	r := rand.New(rand.NewPCG(31, 32))
	const guard = 3
	var d lbsDiff
	sizes := []int{0, 1, 2, 3, 7, 8, 300}
	for range 200 {
		sizes = append(sizes, r.IntN(300))
	}
	for it, n := range sizes {
		bones := 1 + r.IntN(256)
		maxOff := r.IntN(3) * 50
		base := uint32(r.IntN(40))
		verts := randLBSVertices(r, n, bones, maxOff)
		pal := randLBSPalette(r, int(base)+bones+maxOff)
		want := make([]SkinnedVertex, n)
		s := skinSetup{verts: verts, out: want, nv: uint32(n), base: base}
		if err := lbsGo(&s, pal, 0, uint32(n), 0); err != nil {
			t.Fatal(err)
		}
		got := make([]SkinnedVertex, n+guard)
		fillSkinSentinel(got)
		if k := lbsAVX2(verts, pal, got[:n], base); k != n {
			t.Fatalf("run %d: lbsAVX2 completed %d of %d vertices", it, k, n)
		}
		for k := n; k < n+guard; k++ {
			if !isSkinSentinel(&got[k]) {
				t.Fatalf("run %d (n=%d): lbsAVX2 wrote past the end of out (element %d)", it, n, k)
			}
		}
		bases := make([]uint32, n)
		for k := range bases {
			bases[k] = base
		}
		d.compare(t, "random", verts, pal, bases, got[:n], want)
	}
	if d.differ != 0 && !goFusesLBS {
		t.Fatalf("%d components differ in bits: the assembly should compute lbsGo's bits (GOAMD64 below v3)", d.differ)
	}
	if d.count[0] == 0 || d.count[1] == 0 || d.nans == 0 {
		t.Fatalf("coverage: %d 4-joint, %d 2-joint vertices, %d NaN normals", d.count[0], d.count[1], d.nans)
	}
	t.Logf("lbsFast %v (KERNELS_GO=1 clears it); max |asm-go| / magnitude: 4-joint %.3g (%d vertices), 2-joint %.3g (%d vertices), tolerance %g; %d components differ in bits, %d NaN normals in both",
		lbsFast, d.worst[0], d.count[0], d.worst[1], d.count[1], lbsTol, d.differ, d.nans)
}

// TestSkinLBSAsmFixtures runs the SkinLBS kernels on the package's fixtures
// (instanced crowd shape, 2- and 4-joint vertices) over ranges that start
// and end inside instances, through lbs with lbsFast set and cleared.
func TestSkinLBSAsmFixtures(t *testing.T) {
	skipWithoutLBSAsm(t)
	defer func(f bool) { lbsFast = f }(lbsFast)
	var d lbsDiff
	for _, id := range []sched.KernelID{SkinLBS, SkinLBSUniform} {
		for _, n := range []int{1, 8, 64, 1000, 4099} {
			fx := fixture(t, id, n)
			verts, pal := sched.View[SkinVertex](fx.In[0]), sched.View[Mat4](fx.In[1])
			nv, stride := fx.Params[0], fx.Params[1]
			ranges := [][2]uint32{{0, uint32(n)}, {uint32(n) / 3, uint32(n) - uint32(n)/5}, {nv / 2, nv/2 + 1}}
			for _, rg := range ranges {
				if rg[0] >= rg[1] {
					continue
				}
				var res [2][]SkinnedVertex
				for p, fast := range []bool{false, true} {
					lbsFast = fast
					clearOutputs(&fx)
					if err := runDirect(t, id, &fx, rg[0], rg[1]); err != nil {
						t.Fatal(err)
					}
					res[p] = append([]SkinnedVertex(nil), sched.View[SkinnedVertex](fx.Out[0])...)
				}
				for i := range res[0] {
					if (uint32(i) < rg[0] || uint32(i) >= rg[1]) && res[1][i] != (SkinnedVertex{}) {
						t.Fatalf("kernel %d n=%d range %v: asm wrote item %d", id, n, rg, i)
					}
				}
				vs := make([]SkinVertex, 0, rg[1]-rg[0])
				bases := make([]uint32, 0, rg[1]-rg[0])
				for i := rg[0]; i < rg[1]; i++ {
					vs = append(vs, verts[i%nv])
					bases = append(bases, i/nv*stride)
				}
				d.compare(t, "fixture", vs, pal, bases, res[1][rg[0]:rg[1]], res[0][rg[0]:rg[1]])
			}
		}
	}
	if d.differ != 0 && !goFusesLBS || d.count[0] == 0 || d.count[1] == 0 {
		t.Fatalf("%d components differ in bits, %d 4-joint, %d 2-joint vertices", d.differ, d.count[0], d.count[1])
	}
	t.Logf("fixtures: max |asm-go| / magnitude: 4-joint %.3g (%d vertices), 2-joint %.3g (%d vertices), tolerance %g; max |asm-go|: position %.3g, normal %.3g",
		d.worst[0], d.count[0], d.worst[1], d.count[1], lbsTol, d.abs[0], d.abs[1])
}

func fillSkinSentinel(o []SkinnedVertex) {
	for i := range o {
		o[i] = SkinnedVertex{[3]float32{sentinel, sentinel, sentinel}, [3]float32{sentinel, sentinel, sentinel}}
	}
}

func isSkinSentinel(o *SkinnedVertex) bool {
	for c := range 3 {
		if math.Float32bits(o.Pos[c]) != math.Float32bits(sentinel) || math.Float32bits(o.Normal[c]) != math.Float32bits(sentinel) {
			return false
		}
	}
	return true
}

// TestSkinLBSAsmBadJoint: a palette index out of range stops both paths at
// the same vertex with the same error, the vertices before it written (and
// equal within tolerance), the rest untouched, whichever of the four
// joints is bad, also on the 2-joint path (w2 = w3 = 0: the Go code checks
// all four indices), with palette offsets, instancing, a range starting
// inside an instance, and uint32 wrap-around of Palette + base + joint.
func TestSkinLBSAsmBadJoint(t *testing.T) {
	skipWithoutLBSAsm(t)
	defer func(f bool) { lbsFast = f }(lbsFast)
	r := rand.New(rand.NewPCG(33, 34))
	type tc struct {
		name         string
		nv, stride   uint32 // Params
		n            int    // items
		begin, end   uint32
		nverts, npal int
		bad          int    // vertex index to break (-1: none)
		slot         int    // joint slot 0-3
		palette      uint32 // Palette of the broken vertex
		joint        uint8  // its joint in slot
		others       uint8  // its joints in the other slots
	}
	cases := []tc{
		{name: "flat middle", n: 100, end: 100, nverts: 100, npal: 64, bad: 50, slot: 0, joint: 64},
		{name: "flat first", n: 100, end: 100, nverts: 100, npal: 64, bad: 0, slot: 1, joint: 200},
		{name: "flat last", n: 100, end: 100, nverts: 100, npal: 64, bad: 99, slot: 3, joint: 64},
		{name: "flat range first", n: 100, begin: 37, end: 90, nverts: 100, npal: 64, bad: 37, slot: 2, joint: 64},
		{name: "flat range last", n: 100, begin: 37, end: 90, nverts: 100, npal: 64, bad: 89, slot: 2, joint: 255},
		{name: "flat outside range", n: 100, begin: 37, end: 90, nverts: 100, npal: 64, bad: 90, slot: 0, joint: 255},
		{name: "palette offset", n: 100, end: 100, nverts: 100, npal: 64, bad: 70, slot: 1, palette: 60, joint: 4},
		{name: "palette offset ok", n: 100, end: 100, nverts: 100, npal: 64, bad: 70, slot: 1, palette: 60, joint: 3},
		{name: "wrap-around is valid", n: 100, end: 100, nverts: 100, npal: 64, bad: 10, slot: 0, palette: math.MaxUint32, joint: 5, others: 1},
		{name: "wrap-around bad", n: 100, end: 100, nverts: 100, npal: 64, bad: 10, slot: 3, palette: math.MaxUint32 - 100, joint: 99, others: 101},
		// 4 instances of 30 vertices, 20 bones each; vertex 7 of the last
		// instance reaches bone 3*20+25 = 85 >= 80.
		{name: "instanced", nv: 30, stride: 20, n: 120, end: 120, nverts: 30, npal: 80, bad: 7, slot: 2, joint: 25},
		{name: "instanced from inside", nv: 30, stride: 20, n: 120, begin: 13, end: 120, nverts: 30, npal: 80, bad: 7, slot: 0, joint: 25},
		{name: "instanced first of instance", nv: 30, stride: 20, n: 120, begin: 13, end: 110, nverts: 30, npal: 80, bad: 0, slot: 1, joint: 25},
		{name: "instanced last of instance", nv: 30, stride: 20, n: 120, begin: 13, end: 120, nverts: 30, npal: 80, bad: 29, slot: 3, joint: 25},
		{name: "instanced one vertex", nv: 1, stride: 3, n: 40, begin: 5, end: 40, nverts: 1, npal: 100, bad: 0, slot: 3, joint: 2},
		{name: "empty palette", n: 10, begin: 2, end: 10, nverts: 10, npal: 0, bad: -1},
	}
	for _, c := range cases {
		for _, twoJoint := range []bool{false, true} {
			verts := randSkinVertices(r, c.nverts, 1)
			for i := range verts {
				verts[i].Joints = 0
				if twoJoint {
					verts[i].Weights = [4]float32{0.25, 0.75, 0, 0}
				} else {
					verts[i].Weights = [4]float32{0.25, 0.5, 0.125, 0.125}
				}
			}
			if c.bad >= 0 && c.bad < len(verts) {
				verts[c.bad].Palette = c.palette
				j := [4]uint8{c.others, c.others, c.others, c.others}
				j[c.slot] = c.joint
				verts[c.bad].Joints = PackJoints(j[0], j[1], j[2], j[3])
			}
			pal := randRigidPalette(r, c.npal)
			var errs [2]error
			var res [2][]SkinnedVertex
			for p, fast := range []bool{false, true} {
				lbsFast = fast
				out := make([]SkinnedVertex, c.n)
				fillSkinSentinel(out)
				d := skinTask(verts, sched.StreamOf(pal), out, c.nv, c.stride)
				errs[p] = runDirect(t, SkinLBS, &d, c.begin, c.end)
				res[p] = out
			}
			name := c.name
			if twoJoint {
				name += " (2 joints)"
			}
			if (errs[0] == nil) != (errs[1] == nil) || errs[0] != nil && errs[0].Error() != errs[1].Error() {
				t.Fatalf("%s: Go error %v, asm error %v", name, errs[0], errs[1])
			}
			if c.name == "palette offset ok" || c.name == "wrap-around is valid" || c.name == "flat outside range" {
				if errs[0] != nil {
					t.Fatalf("%s: %v", name, errs[0])
				}
			} else if errs[0] == nil {
				t.Fatalf("%s: no error", name)
			}
			t.Logf("%s: %v", name, errs[1])
			for i := range res[0] {
				sg, sa := isSkinSentinel(&res[0][i]), isSkinSentinel(&res[1][i])
				if sg != sa {
					t.Fatalf("%s: item %d written by one path only (Go %v, asm %v)", name, i, !sg, !sa)
				}
				if sg {
					continue
				}
				g, w := res[1][i], res[0][i]
				for k := range 3 {
					if !near(float64(g.Pos[k]), float64(w.Pos[k]), 1e-5) || !near(float64(g.Normal[k]), float64(w.Normal[k]), 1e-5) {
						t.Fatalf("%s: item %d: asm %v, Go %v", name, i, g, w)
					}
				}
			}
		}
	}
}

// TestSkinLBSAsmZeroAllocs: the kernel allocates nothing on either path,
// many runs per call included (one vertex per instance).
func TestSkinLBSAsmZeroAllocs(t *testing.T) {
	defer func(f bool) { lbsFast = f }(lbsFast)
	r := rng(35)
	verts := randSkinVertices(r, 1, 4)
	pal := randRigidPalette(r, 4*100)
	out := make([]SkinnedVertex, 100)
	d := skinTask(verts, sched.StreamOf(pal), out, 1, 4)
	k, err := Definition(SkinLBS)
	if err != nil {
		t.Fatal(err)
	}
	for _, fast := range []bool{false, lbsHasAsm} {
		lbsFast = fast
		d.Begin, d.End = 3, 97
		if a := testing.AllocsPerRun(20, func() { err = k.CPU(nil, &d) }); a != 0 || err != nil {
			t.Fatalf("lbsFast %v: %v allocations, error %v", fast, a, err)
		}
	}
}
