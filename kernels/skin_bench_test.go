package kernels

import (
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// BenchmarkSkinLBSPath times the SkinLBS CPU function on one goroutine on
// the crowd's shape (benchSkinData: 256 characters of 4096 vertices, 90
// bones, 1M vertices per op, output 24 MB) with its three weight mixes:
// "2joint" (w2 = w3 = 0 everywhere: the fast branch), "4joint" (four
// non-zero weights) and "mixed" (1-4 weights, the benchmarks' usual data);
// go and asm are lbsGo and lbsAVX2, run one after the other in the same
// process so that -count interleaves them.
func BenchmarkSkinLBSPath(b *testing.B) {
	k, err := Definition(SkinLBS)
	if err != nil {
		b.Fatal(err)
	}
	base := benchSkinData(b, false)
	mixed := sched.View[SkinVertex](base.In[0])
	two := append([]SkinVertex(nil), mixed...)
	four := append([]SkinVertex(nil), mixed...)
	for i := range two {
		w := &two[i].Weights
		*w = [4]float32{0.6, 0.4, 0, 0}
		four[i].Weights = [4]float32{0.4, 0.3, 0.2, 0.1}
	}
	for _, m := range []struct {
		name  string
		verts []SkinVertex
	}{{"2joint", two}, {"4joint", four}, {"mixed", mixed}} {
		d := base
		d.In[0] = sched.StreamOf(m.verts)
		benchGoAndAsm(b, m.name, &lbsFast, lbsHasAsm, func(b *testing.B) { benchSkin(b, k, &d) })
	}
}

// benchGoAndAsm runs bench as name/go with *fast cleared and, when
// hasAsm, as name/asm with *fast set, restoring *fast after each.
func benchGoAndAsm(b *testing.B, name string, fast *bool, hasAsm bool, bench func(b *testing.B)) {
	for _, f := range []bool{false, true} {
		if f && !hasAsm {
			continue
		}
		sub := name + "/go"
		if f {
			sub = name + "/asm"
		}
		b.Run(sub, func(b *testing.B) {
			defer func(old bool) { *fast = old }(*fast)
			*fast = f
			bench(b)
		})
	}
}

// benchSkin runs the skinning kernel k on d and reports ns per vertex.
func benchSkin(b *testing.B, k sched.Kernel, d *sched.TaskData) {
	b.ReportAllocs()
	for b.Loop() {
		if err := k.CPU(nil, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d.End-d.Begin), "ns/vert")
}
