package kernels

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// Tests of dqsAVX2 (dqs_amd64.s) against dqsGo. KERNELS_GO=1 clears
// lbsFast, which selects both skinning assemblies, so that every other
// DQS test runs dqsGo.

// dqsTol bounds |asm - go| relative to max(1, |go|) where the compiler
// fuses dqsGo's multiply-adds (GOAMD64=v3); below v3 the bits are equal.
const dqsTol = 1e-5

// TestSkinDQSAsm: random meshes (1-4 weights, antipodal bones, instances
// that start and end inside runs), through dqs with lbsFast set and
// cleared: equal bits below GOAMD64=v3; bad joints reported at the same
// item with the same error.
func TestSkinDQSAsm(t *testing.T) {
	if !lbsHasAsm {
		t.Skip("no AVX2 on this CPU: dqsGo is the only path")
	}
	defer func(f bool) { lbsFast = f }(lbsFast)
	r := rng(18)
	const bones = 40
	// Palettes of 5*bones take the assembly's exact index check (Palette +
	// base + 255 beyond the end), of 5*bones+300 its fast one.
	for _, c := range [][2]int{{1, 0}, {3, 0}, {17, 0}, {100, 0}, {3, 300}, {100, 300}} {
		nv := c[0]
		verts := randSkinVertices(r, nv, bones)
		pal := randDQPalette(r, 5*bones+c[1])
		for i := range pal {
			if r.IntN(3) == 0 { // the same rotation with the other sign
				for k := range 4 {
					pal[i].Real[k], pal[i].Dual[k] = -pal[i].Real[k], -pal[i].Dual[k]
				}
			}
		}
		for _, stride := range []uint32{0, bones} {
			n := 4 * nv
			run := func(fast bool, begin, end uint32) ([]SkinnedVertex, error) {
				lbsFast = fast
				out := make([]SkinnedVertex, n)
				for i := range out {
					out[i] = SkinnedVertex{Pos: [3]float32{sentinel}}
				}
				var d sched.TaskData
				if stride == 0 {
					vv := make([]SkinVertex, n)
					for i := range vv {
						vv[i] = verts[i%nv]
						vv[i].Palette = uint32(i/nv) * bones
					}
					d = skinTask(vv, sched.StreamOf(pal), out, 0, 0)
				} else {
					d = skinTask(verts, sched.StreamOf(pal), out, uint32(nv), stride)
				}
				d.Begin, d.End = begin, end
				return out, skinDQS(0)(nil, &d)
			}
			for _, rg := range [][2]uint32{{0, uint32(n)}, {uint32(nv) / 2, uint32(n) - 1}} {
				if rg[0] >= rg[1] {
					continue
				}
				want, err1 := run(false, rg[0], rg[1])
				got, err2 := run(true, rg[0], rg[1])
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				// Nothing outside the range is written.
				for i := range got {
					o := got[i]
					untouched := math.Float32bits(o.Pos[0]) == math.Float32bits(sentinel) && o.Pos[1] == 0 && o.Pos[2] == 0 && o.Normal == [3]float32{}
					if (i < int(rg[0]) || i >= int(rg[1])) && !untouched {
						t.Fatalf("nv %d stride %d range %v: vertex %d outside the range was written: %v", nv, stride, rg, i, got[i])
					}
				}
				for i := rg[0]; i < rg[1]; i++ {
					g, w := got[i], want[i]
					gs := append(g.Pos[:], g.Normal[:]...)
					ws := append(w.Pos[:], w.Normal[:]...)
					for c := range gs {
						if goFusesLBS {
							if d := math.Abs(float64(gs[c]) - float64(ws[c])); !(d <= dqsTol*math.Max(1, math.Abs(float64(ws[c])))) {
								t.Fatalf("nv %d stride %d vertex %d component %d: asm %v, go %v", nv, stride, i, c, gs[c], ws[c])
							}
						} else if math.Float32bits(gs[c]) != math.Float32bits(ws[c]) {
							t.Fatalf("nv %d stride %d vertex %d component %d: asm %v (%#08x), go %v (%#08x): bit-exact expected",
								nv, stride, i, c, gs[c], math.Float32bits(gs[c]), ws[c], math.Float32bits(ws[c]))
						}
					}
				}
			}
		}
	}
}

// dqsBoth runs skinDQS over items [begin, end) with the assembly and
// with dqsGo and fails unless both return the same error (or none) and
// write the same bits; it returns dqsGo's output (end items) and error.
func dqsBoth(t *testing.T, what string, verts []SkinVertex, pal []DualQuat, nv, stride, begin, end uint32) ([]SkinnedVertex, error) {
	t.Helper()
	defer func(f bool) { lbsFast = f }(lbsFast)
	var outs [2][]SkinnedVertex
	var errs [2]error
	for i, fast := range []bool{false, true} {
		lbsFast = fast
		outs[i] = make([]SkinnedVertex, end)
		d := skinTask(verts, sched.StreamOf(pal), outs[i], nv, stride)
		d.Begin = begin
		errs[i] = skinDQS(0)(nil, &d)
	}
	if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
		t.Fatalf("%s: go: %v, asm: %v", what, errs[0], errs[1])
	}
	for i := range outs[0] {
		g, w := outs[1][i], outs[0][i]
		gs := append(g.Pos[:], g.Normal[:]...)
		ws := append(w.Pos[:], w.Normal[:]...)
		for c := range gs {
			d := math.Abs(float64(gs[c]) - float64(ws[c]))
			if goFusesLBS && !(d <= dqsTol*math.Max(1, math.Abs(float64(ws[c])))) ||
				!goFusesLBS && math.Float32bits(gs[c]) != math.Float32bits(ws[c]) {
				t.Fatalf("%s: vertex %d component %d: asm %v, go %v", what, i, c, gs[c], ws[c])
			}
		}
	}
	return outs[0], errs[0]
}

// TestSkinDQSAsmBadJoint: a joint outside the palette in each joint slot
// of each vertex of a group of eight (and of the padded last group) ends
// the run with dqsGo's error at its item, the vertices before it skinned
// as dqsGo skins them.
func TestSkinDQSAsmBadJoint(t *testing.T) {
	if !lbsHasAsm {
		t.Skip("no AVX2 on this CPU: dqsGo is the only path")
	}
	r := rng(19)
	const bones, n = 30, 21
	pal := randDQPalette(r, bones)
	verts := randSkinVertices(r, n, bones)
	for k := range n {
		for slot := range 4 {
			vv := append([]SkinVertex(nil), verts...)
			j := [4]uint8{1, 2, 3, 4}
			j[slot] = bones // one past the end
			vv[k].Joints = PackJoints(j[0], j[1], j[2], j[3])
			_, err := dqsBoth(t, fmt.Sprintf("vertex %d slot %d", k, slot), vv, pal, 0, 0, 0, n)
			if err == nil || err.Error() != badJoint(uint32(k), &vv[k], vv[k].Palette, bones).Error() {
				t.Fatalf("vertex %d slot %d: error %v", k, slot, err)
			}
		}
	}
}

// TestSkinDQSAsmWrap: Palette + base + joint wraps around in uint32 as in
// jointIndices: to the joint itself with Palette 2^32 - 16 and base 16,
// and not at all with base 0 (an index beyond the palette).
func TestSkinDQSAsmWrap(t *testing.T) {
	if !lbsHasAsm {
		t.Skip("no AVX2 on this CPU: dqsGo is the only path")
	}
	r := rng(20)
	const bones, nv = 50, 13 // a group of eight and a padded one
	pal := randDQPalette(r, bones)
	plain := randSkinVertices(r, nv, 10)
	wrapped := append([]SkinVertex(nil), plain...)
	for k := range wrapped {
		wrapped[k].Palette = math.MaxUint32 - 15
	}
	want, err := dqsBoth(t, "plain", plain, pal, 0, 0, 0, nv)
	if err != nil {
		t.Fatal(err)
	}
	// Instances 8 bones apart: the third one's base is 16.
	got, err := dqsBoth(t, "wrapped", wrapped, pal, nv, 8, 2*nv, 3*nv)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[2*nv:], want) {
		t.Fatal("Palette 2^32 - 16, base 16: not the vertices skinned with Palette 0, base 0")
	}
	if _, err := dqsBoth(t, "unwrapped", wrapped, pal, nv, 8, 0, 3*nv); err == nil || !strings.HasPrefix(err.Error(), "item 0:") {
		t.Fatalf("Palette 2^32 - 16, base 0: error %v, want one at item 0", err)
	}
}

// TestSkinDQSAsmHugePalette: dqsAVX2 refuses palettes of more than 2^30
// dual quaternions (it indexes them by uint32 index times 4) before
// reading anything, and dqs then skins the run with dqsGo.
func TestSkinDQSAsmHugePalette(t *testing.T) {
	if !lbsHasAsm {
		t.Skip("no AVX2 on this CPU: dqsGo is the only path")
	}
	if raceOn {
		t.Skip("the race detector's checkptr refuses the fake 2^30-entry slice header")
	}
	r := rng(21)
	small := randDQPalette(r, 20)
	// A slice header claiming 2^30 + 1 entries over 20 real ones: only the
	// length is looked at, and only indices below 20 are read.
	huge := unsafe.Slice(&small[0], 1<<30+1)
	verts := randSkinVertices(r, 16, 20)
	out := make([]SkinnedVertex, 16)
	if k := dqsAVX2(verts, huge, out, 0); k != 0 {
		t.Fatalf("completed %d vertices with a palette of 2^30 + 1", k)
	}
	if k := dqsAVX2(verts, huge[:1<<30], out, 0); k != 16 {
		t.Fatalf("completed %d of 16 vertices with a palette of 2^30", k)
	}
	// dqs with the huge palette: dqsGo's bits, as with the small one.
	want := make([]SkinnedVertex, 16)
	s := skinSetup{verts: verts, out: want, nv: 0}
	if err := dqsGo(&s, small, 0, 16, 0); err != nil {
		t.Fatal(err)
	}
	s.out = out
	if err := dqs(&s, huge, 0, 16, 0); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, want) {
		t.Fatal("huge palette: the outputs differ")
	}
}

// BenchmarkSkinDQSPath times SkinDQS and SkinLBS on one goroutine on the
// crowd's shape (benchSkinData, mixed 1-4 weights), the Go and assembly
// paths of each, in the same process: DQS's cost per vertex beside LBS's.
func BenchmarkSkinDQSPath(b *testing.B) {
	for _, c := range []struct {
		name string
		id   sched.KernelID
	}{{"lbs", SkinLBS}, {"dqs", SkinDQS}} {
		k, err := Definition(c.id)
		if err != nil {
			b.Fatal(err)
		}
		d := benchSkinData(b, c.id == SkinDQS)
		benchGoAndAsm(b, c.name, &lbsFast, lbsHasAsm, func(b *testing.B) { benchSkin(b, k, &d) })
	}
}
