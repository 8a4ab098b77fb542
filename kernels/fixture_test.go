package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// Shapes of the fixtures' skinning and pose data.
const (
	fixInstances = 8   // characters per skinning dispatch
	fixBones     = 130 // bones per character (palette stride), > 128
	fixPoseBones = 90  // bones per skeleton in local-to-model
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

func randUnitQuat(r *rand.Rand) [4]float32 {
	for {
		q := [4]float64{r.Float64()*2 - 1, r.Float64()*2 - 1, r.Float64()*2 - 1, r.Float64()*2 - 1}
		l := math.Sqrt(q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3])
		if l > 0.1 && l <= 1 {
			return [4]float32{float32(q[0] / l), float32(q[1] / l), float32(q[2] / l), float32(q[3] / l)}
		}
	}
}

func randVec(r *rand.Rand, s float64) [3]float32 {
	return [3]float32{float32((r.Float64()*2 - 1) * s), float32((r.Float64()*2 - 1) * s), float32((r.Float64()*2 - 1) * s)}
}

// randSkinVertices returns n bind-pose vertices with joints below bones,
// weights summing to 1 (some zero) and unit normals.
func randSkinVertices(r *rand.Rand, n, bones int) []SkinVertex {
	v := make([]SkinVertex, n)
	for i := range v {
		nrm := randVec(r, 1)
		l := float32(math.Sqrt(float64(nrm[0]*nrm[0] + nrm[1]*nrm[1] + nrm[2]*nrm[2])))
		if l < 1e-3 {
			nrm, l = [3]float32{0, 1, 0}, 1
		}
		var w [4]float32
		nw := 1 + r.IntN(4)
		sum := float32(0)
		for k := 0; k < nw; k++ {
			w[k] = float32(r.Float64() + 0.05)
			sum += w[k]
		}
		for k := range w {
			w[k] /= sum
		}
		v[i] = SkinVertex{
			Pos:     randVec(r, 1),
			Normal:  [3]float32{nrm[0] / l, nrm[1] / l, nrm[2] / l},
			Joints:  PackJoints(uint8(r.IntN(bones)), uint8(r.IntN(bones)), uint8(r.IntN(bones)), uint8(r.IntN(bones))),
			Weights: w,
		}
	}
	return v
}

func randRigidPalette(r *rand.Rand, n int) []Mat4 {
	p := make([]Mat4, n)
	for i := range p {
		p[i] = RigidMatrix(randUnitQuat(r), randVec(r, 2))
	}
	return p
}

func randDQPalette(r *rand.Rand, n int) []DualQuat {
	p := make([]DualQuat, n)
	for i := range p {
		p[i] = DualQuatFromRT(randUnitQuat(r), randVec(r, 2))
	}
	return p
}

func randParents(r *rand.Rand, n int) []int32 {
	p := make([]int32, n)
	for b := range p {
		p[b] = int32(r.IntN(b+1)) - 1 // -1 (root) .. b-1
	}
	return p
}

func randLocal(r *rand.Rand, n int) []Transform {
	x := make([]Transform, n)
	for i := range x {
		s := float32(0.8 + 0.4*r.Float64())
		x[i] = Transform{Rot: randUnitQuat(r), Trans: randVec(r, 0.5), Scale: [3]float32{s, s * 1.1, s * 0.9}}
	}
	return x
}

func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 100)
	}
	return x
}

func randWords(r *rand.Rand, n int) []uint32 {
	x := make([]uint32, n)
	for i := range x {
		x[i] = r.Uint32()
	}
	return x
}

// stridedStream is a PerItem stream of count elements, each per values of T.
func stridedStream[T any](s []T, per int) sched.Stream {
	st := sched.StreamOf(s)
	st.Stride *= uint32(per)
	st.Count /= uint32(per)
	return st
}

// fixture returns valid task data for kernel id with n work items, made
// from deterministic pseudo-random inputs. Outputs are zeroed.
func fixture(t testing.TB, id sched.KernelID, n int) sched.TaskData {
	t.Helper()
	r := rng(uint64(id)*1000 + uint64(n))
	var d sched.TaskData
	d.Elements = uint32(n)
	switch id {
	case SkinLBS, SkinLBSUniform, SkinDQS, SkinDQSUniform:
		nv := (n + fixInstances - 1) / fixInstances
		bones := fixBones
		if id == SkinLBSUniform {
			bones = UniformLBSBones / fixInstances
		}
		d.Params[0], d.Params[1] = uint32(nv), uint32(bones)
		d.In[0] = sched.StreamOf(randSkinVertices(r, nv, min(bones, 256)))
		if id == SkinDQS || id == SkinDQSUniform {
			d.In[1] = sched.StreamOf(randDQPalette(r, fixInstances*bones))
		} else {
			d.In[1] = sched.StreamOf(randRigidPalette(r, fixInstances*bones))
		}
		d.Out[0] = sched.StreamOf(make([]SkinnedVertex, n))
	case LocalToModel, LocalToModelSkin:
		d.Params[0] = fixPoseBones
		d.In[0] = stridedStream(randLocal(r, n*fixPoseBones), fixPoseBones)
		d.In[1] = sched.StreamOf(randParents(r, fixPoseBones))
		d.Out[0] = stridedStream(make([]Mat4, n*fixPoseBones), fixPoseBones)
		if id == LocalToModelSkin {
			d.In[2] = sched.StreamOf(randRigidPalette(r, fixPoseBones))
			d.Out[1] = stridedStream(make([]Mat4, n*fixPoseBones), fixPoseBones)
		}
	case SumF32, MinMaxF32:
		x := randFloats(r, n*SumFactor)
		x[len(x)/2] = float32(math.NaN())
		d.Params[0] = uint32(len(x) - 100)
		d.In[0] = sched.StreamOf(x)
		if id == SumF32 {
			x[len(x)/2] = 1
			d.Out[0] = sched.StreamOf(make([]float32, n))
		} else {
			d.Out[0] = sched.StreamOf(make([]MinMax, n))
		}
	case Avg32F32:
		d.Params[0] = uint32(n*Avg32Factor - 5)
		d.In[0] = sched.StreamOf(randFloats(r, n*Avg32Factor))
		d.Out[0] = sched.StreamOf(make([]float32, n))
	case ExpandLerp:
		seg := make([]Segment, n)
		for i := range seg {
			seg[i] = Segment{float32(r.NormFloat64()), float32(r.NormFloat64() * 10)}
		}
		d.In[0] = sched.StreamOf(seg)
		d.Out[0] = sched.StreamOf(make([]float32, n*ExpandFactor))
	case ScanReduceU32:
		d.In[0] = sched.StreamOf(randWords(r, n*ScanBlock))
		d.Out[0] = sched.StreamOf(make([]uint32, n))
	case ScanDownsweepU32:
		d.Params[0] = uint32(n*ScanBlock - 7)
		d.In[0] = sched.StreamOf(randWords(r, n))
		d.In[1] = sched.StreamOf(randWords(r, n*ScanBlock))
		d.Out[0] = sched.StreamOf(make([]uint32, n*ScanBlock))
	case CRC32CBlocks:
		d.Params[0] = uint32(n*CRCBlockBytes - 3)
		d.In[0] = sched.StreamOf(randWords(r, n*CRCBlockWords))
		d.Out[0] = sched.StreamOf(make([]uint32, n))
	case Saxpy:
		d.Params[0] = math.Float32bits(1.5)
		d.In[0] = sched.StreamOf(randFloats(r, n))
		d.In[1] = sched.StreamOf(randFloats(r, n))
		d.Out[0] = sched.StreamOf(make([]float32, n))
	default:
		t.Fatalf("no fixture for kernel %d", id)
	}
	d.Begin, d.End = 0, d.Elements
	return d
}

// clearOutputs zeroes every output stream's bytes.
func clearOutputs(d *sched.TaskData) {
	for i := range d.Out {
		clear(d.Out[i].Bytes)
	}
}

// outputs returns copies of the output streams' bytes.
func outputs(d *sched.TaskData) [][]byte {
	var o [][]byte
	for i := range d.Out {
		if d.Out[i].Bytes != nil {
			o = append(o, append([]byte(nil), d.Out[i].Bytes...))
		}
	}
	return o
}

// runDirect runs kernel id's CPU function on [begin, end) of d.
func runDirect(t testing.TB, id sched.KernelID, d *sched.TaskData, begin, end uint32) error {
	t.Helper()
	k, err := Definition(id)
	if err != nil {
		t.Fatal(err)
	}
	d.Begin, d.End = begin, end
	defer func() { d.Begin, d.End = 0, d.Elements }()
	return k.CPU(nil, d)
}

func f32bytes(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
