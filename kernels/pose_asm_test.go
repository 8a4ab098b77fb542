package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// poseTol bounds |asm - go| per element, relative to the element's
// magnitude bound mag (see poseMagnitudes). The two paths differ only by
// rounding: FMA and another association of the same sums, a few ULPs
// (6e-8 each) per level of the hierarchy.
const poseTol = 1e-5

// sentinel fills outputs so that an element the kernel does not write
// fails every comparison (a NaN is never within tolerance).
var sentinel = math.Float32frombits(0x7fc0dead)

func fillSentinel(m []Mat4) {
	for i := range m {
		for e := range m[i] {
			m[i][e] = sentinel
		}
	}
}

// randPoseParents returns a hierarchy of n bones in one of several shapes:
// random trees, long chains with branches, a single chain, all roots.
// Every shape but the single chain has several roots when n allows.
func randPoseParents(r *rand.Rand, n int, shape int) []int32 {
	p := make([]int32, n)
	for b := range p {
		switch {
		case b == 0:
			p[b] = -1
		case shape == 0: // random recursive tree, ~3% extra roots
			if r.IntN(32) == 0 {
				p[b] = -1 - int32(r.IntN(5)) // any negative is a root
			} else {
				p[b] = int32(r.IntN(b))
			}
		case shape == 1: // chains: mostly the previous bone
			switch k := r.IntN(20); {
			case k == 0:
				p[b] = -1
			case k < 4:
				p[b] = int32(r.IntN(b))
			default:
				p[b] = int32(b - 1)
			}
		case shape == 2: // one chain, depth n
			p[b] = int32(b - 1)
		default: // all roots
			p[b] = -1
		}
	}
	return p
}

// randPoseLocal returns local transforms with unit and non-unit
// quaternions and scales including negative and zero ones; the magnitudes
// are spread around 1 so that a chain of 300 stays finite.
func randPoseLocal(r *rand.Rand, n int) []Transform {
	f := func(lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }
	x := make([]Transform, n)
	for i := range x {
		q := randUnitQuat(r)
		switch r.IntN(4) {
		case 0: // non-unit, |q|^2 in [0.64, 1.56]
			k := float32(f(0.8, 1.25))
			for c := range q {
				q[c] *= k
			}
		case 1: // raw components, far from unit
			for c := range q {
				q[c] = float32(f(-1, 1))
			}
		}
		var s [3]float32
		for c := range s {
			switch k := r.IntN(50); {
			case k == 0:
				s[c] = 0
			case k < 10:
				s[c] = -float32(f(0.8, 1.25))
			default:
				s[c] = float32(f(0.8, 1.25))
			}
		}
		x[i] = Transform{Rot: q, Trans: randVec(r, 2), Scale: s}
		// Garbage in the padding must not matter.
		w := (*[12]float32)(unsafe.Pointer(&x[i]))
		w[7], w[11] = float32(f(-9, 9)), float32(f(-9, 9))
	}
	return x
}

func randPoseInvBind(r *rand.Rand, n int, affine bool) []Mat4 {
	m := make([]Mat4, n)
	for i := range m {
		if affine {
			m[i] = RigidMatrix(randUnitQuat(r), randVec(r, 2))
			continue
		}
		for e := range m[i] {
			m[i][e] = float32(r.NormFloat64())
		}
	}
	return m
}

// poseMagnitudes returns, per bone, the largest element of |P|*|L| (model)
// and of |model|*|invBind| (skin) with absolute values throughout, in
// float64: rounding errors of either path are bounded by a multiple of
// these (cancellation can make the result itself much smaller).
func poseMagnitudes(local []Transform, parents []int32, invBind []Mat4) (model, skin []float64) {
	n := len(local)
	abs := make([][16]float64, n)
	model, skin = make([]float64, n), make([]float64, n)
	for b := range n {
		l := local[b].Matrix()
		var la [16]float64
		for e := range la {
			la[e] = math.Abs(float64(l[e]))
		}
		if p := parents[b]; p >= 0 {
			abs[b] = mulAbs(&abs[p], &la)
		} else {
			abs[b] = la
		}
		model[b] = maxAbs(&abs[b])
		if invBind != nil {
			var ia [16]float64
			for e := range ia {
				ia[e] = math.Abs(float64(invBind[b][e]))
			}
			s := mulAbs(&abs[b], &ia)
			skin[b] = maxAbs(&s)
		}
	}
	return model, skin
}

func mulAbs(a, b *[16]float64) [16]float64 {
	var c [16]float64
	for j := range 4 {
		for i := range 4 {
			for k := range 4 {
				c[4*j+i] += a[4*k+i] * b[4*j+k]
			}
		}
	}
	return c
}

func maxAbs(m *[16]float64) float64 {
	x := 0.0
	for _, v := range m {
		x = max(x, v)
	}
	return x
}

func skipWithoutPoseAsm(t *testing.T) {
	t.Helper()
	if !poseHasAsm {
		t.Skip("poseChainAVX2 not available: the CPU lacks AVX2 or FMA, or not amd64, or built with -tags purego; only the Go path runs")
	}
}

// TestPoseChainAsm compares the assembly with the pure-Go path on random
// skeletons of 1 to 300 bones, with and without skin.
func TestPoseChainAsm(t *testing.T) {
	skipWithoutPoseAsm(t)
	r := rand.New(rand.NewPCG(11, 12))
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 90, 255, 256, 299, 300}
	for range 150 {
		sizes = append(sizes, 1+r.IntN(300))
	}
	var worst, worstSkin float64 // max |asm - go| / mag
	differ := 0                  // elements where asm and Go differ in bits
	const guard = 3              // elements past each slice that must stay untouched
	for i, n := range sizes {
		shape := i % 4
		withSkin := i%3 != 2
		parents := randPoseParents(r, n, shape)
		local := randPoseLocal(r, n)
		var invBind []Mat4
		if withSkin {
			invBind = randPoseInvBind(r, n, i%2 == 0)
		}
		magM, magS := poseMagnitudes(local, parents, invBind)

		wantM := make([]Mat4, n)
		var wantS []Mat4
		if withSkin {
			wantS = make([]Mat4, n)
		}
		poseChainGo(local, parents, wantM, invBind, wantS)

		gotM := make([]Mat4, n+guard)
		gotS := make([]Mat4, n+guard)
		fillSentinel(gotM)
		fillSentinel(gotS)
		var skinArg []Mat4
		if withSkin {
			skinArg = gotS[:n]
		}
		poseChainAVX2(local, parents, gotM[:n], invBind, skinArg)

		for b := range n {
			for e := range 16 {
				g, w := gotM[b][e], wantM[b][e]
				if e%4 == 3 {
					if math.Float32bits(g) != math.Float32bits(w) {
						t.Fatalf("n=%d shape %d bone %d: model element %d is %v, want exactly %v", n, shape, b, e, g, w)
					}
					continue
				}
				d := math.Abs(float64(g)-float64(w)) / max(magM[b], 1e-30)
				if !(d <= poseTol) {
					t.Fatalf("n=%d shape %d bone %d (parent %d): model element %d: asm %v, Go %v (error %.3g of magnitude %.3g)",
						n, shape, b, parents[b], e, g, w, d, magM[b])
				}
				worst = max(worst, d)
				if math.Float32bits(g) != math.Float32bits(w) {
					differ++
				}
			}
			if !withSkin {
				continue
			}
			for e := range 16 {
				g, w := gotS[b][e], wantS[b][e]
				if e%4 == 3 {
					if math.Float32bits(g) != math.Float32bits(invBind[b][e]) || g != w {
						t.Fatalf("n=%d bone %d: skin element %d is %v, want inverse bind's %v", n, b, e, g, invBind[b][e])
					}
					continue
				}
				d := math.Abs(float64(g)-float64(w)) / max(magS[b], 1e-30)
				if !(d <= poseTol) {
					t.Fatalf("n=%d shape %d bone %d: skin element %d: asm %v, Go %v (error %.3g of magnitude %.3g)",
						n, shape, b, e, g, w, d, magS[b])
				}
				worstSkin = max(worstSkin, d)
			}
		}
		for k := n; k < n+guard; k++ {
			for e := range 16 {
				if math.Float32bits(gotM[k][e]) != math.Float32bits(sentinel) || math.Float32bits(gotS[k][e]) != math.Float32bits(sentinel) {
					t.Fatalf("n=%d: asm wrote past the end of model or skin (element %d of %d)", n, k, n)
				}
			}
			if !withSkin && k == n {
				for b := range n {
					if math.Float32bits(gotS[b][0]) != math.Float32bits(sentinel) {
						t.Fatalf("n=%d: asm wrote skin[%d] with no skin requested", n, b)
					}
				}
			}
		}

		// poseChain's dispatch: the fast path is the assembly, bit for bit.
		if withSkin && poseFast {
			m2, s2 := make([]Mat4, n), make([]Mat4, n)
			poseChain(local, parents, m2, invBind, s2)
			if !equalMats(m2, gotM[:n]) || !equalMats(s2, gotS[:n]) {
				t.Fatalf("n=%d: poseChain with poseFast set differs from poseChainAVX2", n)
			}
		}
	}
	// The paths are different code: FMA rounding shows somewhere.
	if differ == 0 {
		t.Fatalf("assembly and Go results are bit-identical everywhere: is the assembly running?")
	}
	t.Logf("poseFast %v (KERNELS_GO=1 clears it); %d skeletons: max |asm-go| / magnitude: model %.3g, skin %.3g (tolerance %g); %d model elements differ in bits",
		poseFast, len(sizes), worst, worstSkin, poseTol, differ)
}

func equalMats(a, b []Mat4) bool {
	for i := range a {
		for e := range a[i] {
			if math.Float32bits(a[i][e]) != math.Float32bits(b[i][e]) {
				return false
			}
		}
	}
	return true
}

// TestPoseChainAsmNonFinite: NaN and Inf inputs give garbage, never a
// crash, and the model matrices' last rows stay exactly 0 0 0 1.
func TestPoseChainAsmNonFinite(t *testing.T) {
	skipWithoutPoseAsm(t)
	r := rand.New(rand.NewPCG(13, 14))
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, 0}
	for it := range 50 {
		n := 1 + r.IntN(120)
		parents := randPoseParents(r, n, it%4)
		local := randPoseLocal(r, n)
		invBind := randPoseInvBind(r, n, true)
		for range 1 + n/4 {
			x := &local[r.IntN(n)]
			v := bad[r.IntN(len(bad))]
			switch r.IntN(4) {
			case 0:
				x.Rot[r.IntN(4)] = v
			case 1:
				x.Trans[r.IntN(3)] = v
			case 2:
				x.Scale[r.IntN(3)] = v
			default:
				invBind[r.IntN(n)][r.IntN(16)] = v
			}
		}
		model, skin := make([]Mat4, n), make([]Mat4, n)
		poseChainAVX2(local, parents, model, invBind, skin)
		for b := range model {
			if model[b][3] != 0 || model[b][7] != 0 || model[b][11] != 0 || model[b][15] != 1 {
				t.Fatalf("bone %d: model last row %v %v %v %v, want 0 0 0 1", b, model[b][3], model[b][7], model[b][11], model[b][15])
			}
		}
	}
}

// TestPoseChainAsmBadParent: a parent that is not below its child (which
// the kernel refuses before poseChain runs) makes the assembly treat the
// bone as a root rather than read outside model[:b].
func TestPoseChainAsmBadParent(t *testing.T) {
	skipWithoutPoseAsm(t)
	r := rand.New(rand.NewPCG(15, 16))
	local := randPoseLocal(r, 4)
	parents := []int32{-1, 0, 2, 1 << 30}
	model := make([]Mat4, 4)
	poseChainAVX2(local, parents, model, nil, nil)
	for _, b := range []int{0, 2, 3} {
		want := local[b].Matrix()
		for e := range want {
			if d := math.Abs(float64(model[b][e] - want[e])); !(d <= 1e-5*max(1, math.Abs(float64(want[e])))) {
				t.Fatalf("bone %d (parent %d): %v, want the local matrix %v", b, parents[b], model[b], want)
			}
		}
	}
}
