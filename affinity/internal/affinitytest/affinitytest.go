// Package affinitytest holds the fixtures that the tests of the affinity
// packages share: seeded random inputs, package kernels' skinning and
// saxpy tasks, a registry of package kernels' kernels, and a CPU reference
// run of a task.
//
// It is one copy for packages placement and spu. It cannot import package
// spu: spu's internal tests import it, and a package that imports spu
// would make an import cycle there. So the one spu-specific piece, the SPU
// binding that KernelRegistry gives SkinLBS, is an argument (a
// *spu.Binding, built by the caller), and sched.Kernel's SPU field is
// opaque to everything here.
//
// It is a test helper: import it only from _test.go files.
package affinitytest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// Rng is a deterministic generator for seed.
func Rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// RandFloats returns n normally distributed floats (sigma 100).
func RandFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 100)
	}
	return x
}

// SkinVertices returns n bind-pose vertices for "one vertex per item"
// skinning (Params[0] = 0): vertex i belongs to character i*chars/n, whose
// bones start at Palette = character*bones.
func SkinVertices(r *rand.Rand, n, chars, bones int) []kernels.SkinVertex {
	v := make([]kernels.SkinVertex, n)
	for i := range v {
		var w [4]float32
		sum := float32(0)
		for k := range 1 + r.IntN(4) {
			w[k] = float32(r.Float64() + 0.05)
			sum += w[k]
		}
		for k := range w {
			w[k] /= sum
		}
		j := func() uint8 { return uint8(r.IntN(bones)) }
		v[i] = kernels.SkinVertex{
			Pos:     [3]float32{float32(r.Float64()), float32(r.Float64()), float32(r.Float64())},
			Normal:  [3]float32{0, 1, 0},
			Joints:  kernels.PackJoints(j(), j(), j(), j()),
			Palette: uint32(i * chars / n * bones),
			Weights: w,
		}
	}
	return v
}

// SkinPalette returns n rigid bone matrices (a rotation about z and a
// translation in the xy plane).
func SkinPalette(r *rand.Rand, n int) []kernels.Mat4 {
	p := make([]kernels.Mat4, n)
	for i := range p {
		a := r.Float64() * math.Pi
		q := kernels.AxisAngle([3]float32{0, 0, 1}, a)
		p[i] = kernels.RigidMatrix(q, [3]float32{float32(r.Float64()), float32(r.Float64()), 0})
	}
	return p
}

// SkinTask is a SkinLBS task of n vertices, one vertex per item, over
// chars characters of bones bones.
func SkinTask(r *rand.Rand, n, chars, bones int) (sched.Task, []kernels.SkinnedVertex) {
	out := make([]kernels.SkinnedVertex, n)
	t := sched.Task{Kernel: kernels.SkinLBS}
	t.Data.Elements = uint32(n)
	t.Data.In[0] = sched.StreamOf(SkinVertices(r, n, chars, bones))
	t.Data.In[1] = sched.StreamOf(SkinPalette(r, chars*bones))
	t.Data.Out[0] = sched.StreamOf(out)
	return t, out
}

// InstancedSkinTask is the crowd's shape (kernels' benchmark): instances
// characters of verts vertices sharing one bind-pose mesh, Params[0] =
// verts, Params[1] = bones.
func InstancedSkinTask(r *rand.Rand, instances, verts, bones int) (sched.Task, []kernels.SkinnedVertex) {
	n := instances * verts
	out := make([]kernels.SkinnedVertex, n)
	mesh := SkinVertices(r, verts, 1, bones)
	t := sched.Task{Kernel: kernels.SkinLBS}
	t.Data.Elements = uint32(n)
	t.Data.Params[0], t.Data.Params[1] = uint32(verts), uint32(bones)
	t.Data.In[0] = sched.StreamOf(mesh)
	t.Data.In[1] = sched.StreamOf(SkinPalette(r, instances*bones))
	t.Data.Out[0] = sched.StreamOf(out)
	return t, out
}

// SaxpyTask is a Saxpy task of n elements (a = 0.5, random x and y).
func SaxpyTask(r *rand.Rand, n int) (sched.Task, []float32) {
	out := make([]float32, n)
	t := sched.Task{Kernel: kernels.Saxpy}
	t.Data.Elements = uint32(n)
	t.Data.Params[0] = math.Float32bits(0.5)
	t.Data.In[0], t.Data.In[1] = sched.StreamOf(RandFloats(r, n)), sched.StreamOf(RandFloats(r, n))
	t.Data.Out[0] = sched.StreamOf(out)
	return t, out
}

// KernelRegistry registers package kernels' kernels; SkinLBS gets skinSPU
// as its SPU binding (the callers pass a *spu.Binding that streams the
// vertices per item, valid with Params[0] = 0).
func KernelRegistry(t testing.TB, skinSPU any) *sched.Registry {
	t.Helper()
	reg := sched.NewRegistry()
	for _, id := range kernels.IDs() {
		k, err := kernels.Definition(id)
		if err != nil {
			t.Fatal(err)
		}
		if id == kernels.SkinLBS {
			k.SPU = skinSPU
		}
		if err := reg.Register(id, k); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// Reference runs task's kernel directly over its whole range and returns
// the output bytes it wrote (Out[0]).
func Reference(t testing.TB, reg *sched.Registry, task sched.Task) []byte {
	t.Helper()
	k := reg.Lookup(task.Kernel)
	if k == nil {
		t.Fatalf("reference: kernel %d is not registered", task.Kernel)
	}
	d := task.Data
	orig := d.Out[0].Bytes
	d.Out[0].Bytes = make([]byte, len(orig))
	d.Begin, d.End = 0, d.Elements
	if err := k.CPU(nil, &d); err != nil {
		t.Fatalf("reference %q: %v", k.Name, err)
	}
	return d.Out[0].Bytes
}

// Must fails the test on a non-nil error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
