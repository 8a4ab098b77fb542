package kernels

import (
	"math"
	"testing"

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
	// A joint outside the palette: the same error at the same item.
	verts := randSkinVertices(r, 9, bones)
	verts[6].Joints = PackJoints(1, 2, 200, 3)
	for _, fast := range []bool{false, true} {
		lbsFast = fast
		d := skinTask(verts, sched.StreamOf(randDQPalette(r, bones)), make([]SkinnedVertex, 9), 0, 0)
		err := skinDQS(0)(nil, &d)
		if err == nil || err.Error() != badJoint(6, &verts[6], verts[6].Palette, bones).Error() {
			t.Fatalf("fast %v: error %v", fast, err)
		}
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
		for _, fast := range []bool{false, true} {
			name := c.name + "/go"
			if fast {
				if !lbsHasAsm {
					continue
				}
				name = c.name + "/asm"
			}
			b.Run(name, func(b *testing.B) {
				defer func(f bool) { lbsFast = f }(lbsFast)
				lbsFast = fast
				b.ReportAllocs()
				for b.Loop() {
					if err := k.CPU(nil, &d); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d.End-d.Begin), "ns/vert")
			})
		}
	}
}
