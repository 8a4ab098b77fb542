package kernels

import (
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// Benchmarks. Skinning uses the crowd's shape: 256 characters of 4096
// vertices (1M vertices per run) over 90-bone palettes, 1-4 weights per
// vertex. Mvert/s is reported next to bytes/s (vertex in + vertex out).

const (
	benchInstances = 256
	benchVerts     = 4096
	benchBones     = 90
	benchN         = benchInstances * benchVerts
)

func benchSkinData(b *testing.B, dq bool) sched.TaskData {
	b.Helper()
	r := rng(42)
	var d sched.TaskData
	d.Elements = benchN
	d.Params[0], d.Params[1] = benchVerts, benchBones
	d.In[0] = sched.StreamOf(randSkinVertices(r, benchVerts, benchBones))
	if dq {
		d.In[1] = sched.StreamOf(randDQPalette(r, benchInstances*benchBones))
	} else {
		d.In[1] = sched.StreamOf(randRigidPalette(r, benchInstances*benchBones))
	}
	d.Out[0] = sched.StreamOf(make([]SkinnedVertex, benchN))
	d.End = benchN
	return d
}

func reportMvert(b *testing.B, perOp int) {
	b.ReportMetric(float64(perOp)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mvert/s")
}

// benchKernel runs kernel id over d three ways: serial (one goroutine, one
// call), sched (a real Scheduler: default workers plus the registered
// thread helping in Wait), and goroutines (hand-split into GOMAXPROCS
// pieces, one goroutine each, joined with a WaitGroup).
func benchKernel(b *testing.B, id sched.KernelID, d sched.TaskData, bytesPerItem int64, items int, mvert bool) {
	k, err := Definition(id)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(bytesPerItem * int64(d.Elements))
		dd := d
		for b.Loop() {
			if err := k.CPU(nil, &dd); err != nil {
				b.Fatal(err)
			}
		}
		if mvert {
			reportMvert(b, items)
		}
	})
	b.Run("sched", func(b *testing.B) {
		_, m := newSched(b, 0, nil)
		b.ReportAllocs()
		b.SetBytes(bytesPerItem * int64(d.Elements))
		task := sched.Task{Kernel: id, Data: d}
		for b.Loop() {
			tid, err := m.Add(&task)
			if err != nil {
				b.Fatal(err)
			}
			if err := m.Wait(tid); err != nil {
				b.Fatal(err)
			}
		}
		if mvert {
			reportMvert(b, items)
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		p := runtime.GOMAXPROCS(0)
		parts := make([]sched.TaskData, p)
		for i := range parts {
			parts[i] = d
			parts[i].Begin = uint32(uint64(d.Elements) * uint64(i) / uint64(p))
			parts[i].End = uint32(uint64(d.Elements) * uint64(i+1) / uint64(p))
		}
		b.ReportAllocs()
		b.SetBytes(bytesPerItem * int64(d.Elements))
		var wg sync.WaitGroup
		for b.Loop() {
			for i := range parts {
				wg.Go(func() {
					if err := k.CPU(nil, &parts[i]); err != nil {
						panic(err)
					}
				})
			}
			wg.Wait()
		}
		if mvert {
			reportMvert(b, items)
		}
	})
}

func BenchmarkSkinLBS(b *testing.B) {
	benchKernel(b, SkinLBS, benchSkinData(b, false), 48+24, benchN, true)
}

func BenchmarkSkinDQS(b *testing.B) {
	benchKernel(b, SkinDQS, benchSkinData(b, true), 48+24, benchN, true)
}

func BenchmarkSaxpy(b *testing.B) {
	r := rng(1)
	const n = 1 << 20
	var d sched.TaskData
	d.Elements = n
	d.Params[0] = math.Float32bits(0.5)
	d.In[0], d.In[1] = sched.StreamOf(randFloats(r, n)), sched.StreamOf(randFloats(r, n))
	d.Out[0] = d.In[1] // in place
	d.End = n
	benchKernel(b, Saxpy, d, 12, n, false)
}

func BenchmarkLocalToModel(b *testing.B) {
	// 1000 characters of 90 bones: the crowd's pose pass.
	const skel = 1000
	r := rng(2)
	var d sched.TaskData
	d.Elements = skel
	d.Params[0] = benchBones
	d.In[0] = stridedStream(randLocal(r, skel*benchBones), benchBones)
	d.In[1] = sched.StreamOf(randParents(r, benchBones))
	d.In[2] = sched.StreamOf(randRigidPalette(r, benchBones))
	d.Out[0] = stridedStream(make([]Mat4, skel*benchBones), benchBones)
	d.Out[1] = stridedStream(make([]Mat4, skel*benchBones), benchBones)
	d.End = skel
	benchKernel(b, LocalToModelSkin, d, benchBones*(48+64+64), skel, false)
}

func BenchmarkReduceSerial(b *testing.B) {
	for _, c := range []struct {
		name  string
		id    sched.KernelID
		items int
	}{{"sum", SumF32, 4096}, {"minmax", MinMaxF32, 4096}, {"avg32", Avg32F32, 32768}, {"expand", ExpandLerp, 1 << 17},
		{"scan_reduce", ScanReduceU32, 4096}, {"scan_downsweep", ScanDownsweepU32, 4096}, {"crc32c", CRC32CBlocks, 1024}} {
		b.Run(c.name, func(b *testing.B) {
			k, _ := Definition(c.id)
			d := fixture(b, c.id, c.items)
			var bytes int64
			for i := range d.In {
				bytes += int64(len(d.In[i].Bytes))
			}
			b.ReportAllocs()
			b.SetBytes(bytes)
			for b.Loop() {
				if err := k.CPU(nil, &d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkScan(b *testing.B) {
	const n = 1 << 20
	_, m := newSched(b, 0, nil)
	values := randWords(rng(3), n)
	out := make([]uint32, n)
	scratch := make([]uint32, ScanScratchLen(n))
	b.ReportAllocs()
	b.SetBytes(4 * n)
	for b.Loop() {
		id, err := AddScan(m, sched.Task{}, values, out, scratch)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Wait(id); err != nil {
			b.Fatal(err)
		}
	}
}

// Layout variants of linear blend skinning, measured on one goroutine with
// the same vertices and palettes:
//
//	aos48       the registered layout: 48-byte SkinVertex, float weights, mat4 palette
//	aos48_skip  the same, skipping zero weights with a branch
//	packed32    32-byte vertex: 4 x u8 unorm weights, no per-vertex palette base
//	soa         structure of arrays in and out (12 input and 6 output arrays of 4-byte values)
//	pal3x4      48-byte SkinVertex with a 3x4 row-major palette (48 bytes per bone)
func BenchmarkSkinLayout(b *testing.B) {
	d := benchSkinData(b, false)
	verts := sched.View[SkinVertex](d.In[0])
	pal := sched.View[Mat4](d.In[1])
	out := sched.View[SkinnedVertex](d.Out[0])

	b.Run("aos48", func(b *testing.B) {
		k, _ := Definition(SkinLBS)
		b.ReportAllocs()
		b.SetBytes((48 + 24) * benchN)
		for b.Loop() {
			if err := k.CPU(nil, &d); err != nil {
				b.Fatal(err)
			}
		}
		reportMvertPerVertex(b)
	})
	b.Run("aos48_skip", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes((48 + 24) * benchN)
		for b.Loop() {
			lbsSkipZero(verts, pal, out)
		}
		reportMvertPerVertex(b)
	})
	b.Run("packed32", func(b *testing.B) {
		pv := packVerts(verts)
		b.ReportAllocs()
		b.SetBytes((32 + 24) * benchN)
		for b.Loop() {
			lbsPacked(pv, pal, out)
		}
		reportMvertPerVertex(b)
	})
	b.Run("soa", func(b *testing.B) {
		in := newSoAVerts(verts)
		o := newSoAOut(benchN)
		b.ReportAllocs()
		b.SetBytes((12*4 + 6*4) * benchN)
		for b.Loop() {
			lbsSoA(&in, pal, &o)
		}
		reportMvertPerVertex(b)
	})
	b.Run("pal3x4", func(b *testing.B) {
		p34 := make([][12]float32, len(pal))
		for i, m := range pal {
			for r := 0; r < 3; r++ {
				for c := 0; c < 4; c++ {
					p34[i][4*r+c] = m[4*c+r]
				}
			}
		}
		b.ReportAllocs()
		b.SetBytes((48 + 24) * benchN)
		for b.Loop() {
			lbs3x4(verts, p34, out)
		}
		reportMvertPerVertex(b)
	})
}

func reportMvertPerVertex(b *testing.B) { reportMvert(b, benchN) }

func lbsSkipZero(verts []SkinVertex, pal []Mat4, out []SkinnedVertex) {
	for i := range out {
		v := &verts[i%benchVerts]
		base := v.Palette + uint32(i/benchVerts)*benchBones
		var m [12]float32
		for k := 0; k < 4; k++ {
			w := v.Weights[k]
			if w == 0 {
				continue
			}
			p := &pal[base+v.Joints>>(8*k)&0xff]
			m[0] += w * p[0]
			m[1] += w * p[1]
			m[2] += w * p[2]
			m[3] += w * p[4]
			m[4] += w * p[5]
			m[5] += w * p[6]
			m[6] += w * p[8]
			m[7] += w * p[9]
			m[8] += w * p[10]
			m[9] += w * p[12]
			m[10] += w * p[13]
			m[11] += w * p[14]
		}
		storeSkinned(&out[i], &m, v.Pos, v.Normal)
	}
}

// storeSkinned applies a blended 3x4 (column-major rows 0-2) matrix.
func storeSkinned(o *SkinnedVertex, m *[12]float32, p, n [3]float32) {
	o.Pos[0] = m[0]*p[0] + m[3]*p[1] + m[6]*p[2] + m[9]
	o.Pos[1] = m[1]*p[0] + m[4]*p[1] + m[7]*p[2] + m[10]
	o.Pos[2] = m[2]*p[0] + m[5]*p[1] + m[8]*p[2] + m[11]
	nx := m[0]*n[0] + m[3]*n[1] + m[6]*n[2]
	ny := m[1]*n[0] + m[4]*n[1] + m[7]*n[2]
	nz := m[2]*n[0] + m[5]*n[1] + m[8]*n[2]
	inv := 1 / float32(math.Sqrt(float64(nx*nx+ny*ny+nz*nz)))
	o.Normal = [3]float32{nx * inv, ny * inv, nz * inv}
}

type packedVertex struct {
	Pos     [3]float32
	Normal  [3]float32
	Joints  uint32
	Weights uint32 // 4 x u8 unorm
}

func lbsPacked(verts []packedVertex, pal []Mat4, out []SkinnedVertex) {
	v, base := 0, uint32(0)
	for i := range out {
		sv := &verts[v]
		j, wq := sv.Joints, sv.Weights
		p0, p1, p2, p3 := &pal[base+j&0xff], &pal[base+j>>8&0xff], &pal[base+j>>16&0xff], &pal[base+j>>24]
		const s = 1.0 / 255
		w0, w1, w2, w3 := float32(wq&0xff)*s, float32(wq>>8&0xff)*s, float32(wq>>16&0xff)*s, float32(wq>>24)*s
		var m [12]float32
		for e, idx := range [12]int{0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14} {
			m[e] = w0*p0[idx] + w1*p1[idx] + w2*p2[idx] + w3*p3[idx]
		}
		storeSkinned(&out[i], &m, sv.Pos, sv.Normal)
		if v++; v == benchVerts {
			v, base = 0, base+benchBones
		}
	}
}

type soaVerts struct {
	px, py, pz, nx, ny, nz []float32
	joints                 []uint32
	w0, w1, w2, w3         []float32
	palette                []uint32
}

type soaOut struct {
	px, py, pz, nx, ny, nz []float32
}

func newSoAVerts(v []SkinVertex) soaVerts {
	n := len(v)
	s := soaVerts{make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n),
		make([]uint32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]uint32, n)}
	for i, x := range v {
		s.px[i], s.py[i], s.pz[i] = x.Pos[0], x.Pos[1], x.Pos[2]
		s.nx[i], s.ny[i], s.nz[i] = x.Normal[0], x.Normal[1], x.Normal[2]
		s.joints[i], s.palette[i] = x.Joints, x.Palette
		s.w0[i], s.w1[i], s.w2[i], s.w3[i] = x.Weights[0], x.Weights[1], x.Weights[2], x.Weights[3]
	}
	return s
}

func newSoAOut(n int) soaOut {
	return soaOut{make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)}
}

func lbsSoA(in *soaVerts, pal []Mat4, o *soaOut) {
	n := len(in.px)
	for inst := 0; inst < benchInstances; inst++ {
		ib := uint32(inst * benchBones)
		off := inst * n
		opx, opy, opz := o.px[off:off+n], o.py[off:off+n], o.pz[off:off+n]
		onx, ony, onz := o.nx[off:off+n], o.ny[off:off+n], o.nz[off:off+n]
		for v := 0; v < n; v++ {
			base := in.palette[v] + ib
			j := in.joints[v]
			p0, p1, p2, p3 := &pal[base+j&0xff], &pal[base+j>>8&0xff], &pal[base+j>>16&0xff], &pal[base+j>>24]
			w0, w1, w2, w3 := in.w0[v], in.w1[v], in.w2[v], in.w3[v]
			m0 := w0*p0[0] + w1*p1[0] + w2*p2[0] + w3*p3[0]
			m1 := w0*p0[1] + w1*p1[1] + w2*p2[1] + w3*p3[1]
			m2 := w0*p0[2] + w1*p1[2] + w2*p2[2] + w3*p3[2]
			m4 := w0*p0[4] + w1*p1[4] + w2*p2[4] + w3*p3[4]
			m5 := w0*p0[5] + w1*p1[5] + w2*p2[5] + w3*p3[5]
			m6 := w0*p0[6] + w1*p1[6] + w2*p2[6] + w3*p3[6]
			m8 := w0*p0[8] + w1*p1[8] + w2*p2[8] + w3*p3[8]
			m9 := w0*p0[9] + w1*p1[9] + w2*p2[9] + w3*p3[9]
			m10 := w0*p0[10] + w1*p1[10] + w2*p2[10] + w3*p3[10]
			m12 := w0*p0[12] + w1*p1[12] + w2*p2[12] + w3*p3[12]
			m13 := w0*p0[13] + w1*p1[13] + w2*p2[13] + w3*p3[13]
			m14 := w0*p0[14] + w1*p1[14] + w2*p2[14] + w3*p3[14]
			x, y, z := in.px[v], in.py[v], in.pz[v]
			opx[v] = m0*x + m4*y + m8*z + m12
			opy[v] = m1*x + m5*y + m9*z + m13
			opz[v] = m2*x + m6*y + m10*z + m14
			x, y, z = in.nx[v], in.ny[v], in.nz[v]
			nx := m0*x + m4*y + m8*z
			ny := m1*x + m5*y + m9*z
			nz := m2*x + m6*y + m10*z
			inv := 1 / float32(math.Sqrt(float64(nx*nx+ny*ny+nz*nz)))
			onx[v], ony[v], onz[v] = nx*inv, ny*inv, nz*inv
		}
	}
}

func lbs3x4(verts []SkinVertex, pal [][12]float32, out []SkinnedVertex) {
	v, ib := 0, uint32(0)
	for i := range out {
		sv := &verts[v]
		base := sv.Palette + ib
		j := sv.Joints
		p0, p1, p2, p3 := &pal[base+j&0xff], &pal[base+j>>8&0xff], &pal[base+j>>16&0xff], &pal[base+j>>24]
		w0, w1, w2, w3 := sv.Weights[0], sv.Weights[1], sv.Weights[2], sv.Weights[3]
		var m [12]float32
		for e := range m {
			m[e] = w0*p0[e] + w1*p1[e] + w2*p2[e] + w3*p3[e]
		}
		x, y, z := sv.Pos[0], sv.Pos[1], sv.Pos[2]
		o := &out[i]
		o.Pos[0] = m[0]*x + m[1]*y + m[2]*z + m[3]
		o.Pos[1] = m[4]*x + m[5]*y + m[6]*z + m[7]
		o.Pos[2] = m[8]*x + m[9]*y + m[10]*z + m[11]
		x, y, z = sv.Normal[0], sv.Normal[1], sv.Normal[2]
		nx := m[0]*x + m[1]*y + m[2]*z
		ny := m[4]*x + m[5]*y + m[6]*z
		nz := m[8]*x + m[9]*y + m[10]*z
		inv := 1 / float32(math.Sqrt(float64(nx*nx+ny*ny+nz*nz)))
		o.Normal = [3]float32{nx * inv, ny * inv, nz * inv}
		if v++; v == benchVerts {
			v, ib = 0, ib+benchBones
		}
	}
}

// TestLayoutVariantsAgree keeps the benchmark variants honest: each one
// computes what the registered kernel computes (packed weights within their
// quantisation).
func TestLayoutVariantsAgree(t *testing.T) {
	r := rng(42)
	verts := randSkinVertices(r, benchVerts, benchBones)
	pal := randRigidPalette(r, benchInstances*benchBones)
	const n = 4 * benchVerts // four instances are enough
	var d sched.TaskData
	d.Elements = n
	d.Params[0], d.Params[1] = benchVerts, benchBones
	d.In[0], d.In[1] = sched.StreamOf(verts), sched.StreamOf(pal)
	want := make([]SkinnedVertex, n)
	d.Out[0] = sched.StreamOf(want)
	if err := runDirect(t, SkinLBS, &d, 0, n); err != nil {
		t.Fatal(err)
	}
	cmp := func(name string, got []SkinnedVertex, tol, ntol float64) {
		t.Helper()
		for i := range want {
			for k := 0; k < 3; k++ {
				if !near(float64(got[i].Pos[k]), float64(want[i].Pos[k]), tol) || !near(float64(got[i].Normal[k]), float64(want[i].Normal[k]), ntol) {
					t.Fatalf("%s: vertex %d: %v, want %v", name, i, got[i], want[i])
				}
			}
		}
	}
	got := make([]SkinnedVertex, n)
	lbsSkipZero(verts, pal, got)
	cmp("aos48_skip", got, 1e-5, 1e-5)
	lbsPacked(packVerts(verts), pal, got)
	// Weights quantised to 1/255: positions move by up to ~1e-2 here;
	// normals blended from the fixtures' random rotations move more.
	cmp("packed32", got, 2e-2, 0.5)
	in, o := newSoAVerts(verts), newSoAOut(benchInstances*benchVerts)
	lbsSoA(&in, pal, &o)
	for i := range got {
		got[i] = SkinnedVertex{[3]float32{o.px[i], o.py[i], o.pz[i]}, [3]float32{o.nx[i], o.ny[i], o.nz[i]}}
	}
	cmp("soa", got, 1e-6, 1e-6)
	p34 := make([][12]float32, len(pal))
	for i, m := range pal {
		for r := 0; r < 3; r++ {
			for c := 0; c < 4; c++ {
				p34[i][4*r+c] = m[4*c+r]
			}
		}
	}
	lbs3x4(verts, p34, got)
	cmp("pal3x4", got, 1e-5, 1e-5)
}

func packVerts(verts []SkinVertex) []packedVertex {
	pv := make([]packedVertex, len(verts))
	for i, v := range verts {
		pv[i] = packedVertex{Pos: v.Pos, Normal: v.Normal, Joints: v.Joints}
		for k, w := range v.Weights {
			pv[i].Weights |= uint32(math.Round(float64(w)*255)) << (8 * k)
		}
	}
	return pv
}
