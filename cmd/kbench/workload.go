package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// array is one buffer of a workload: an input or an output of the kernel.
// A sliced array is cut per chunk (perItem bytes per work item); a whole
// array (perItem 0) is bound in full by every chunk (palettes, tables).
type array struct {
	name    string
	data    []byte
	stride  uint32 // bytes per stream element
	perItem uint64 // bytes per work item when sliced; 0 = whole
	out     bool
}

// workload is one kernel at one size: its data, laid out so that the same
// bytes serve every device, and cut into chunks whose streams fit a GPU
// binding (maxChunkBytes per sliced stream; Vulkan guarantees 128 MiB).
type workload struct {
	id       sched.KernelID
	kern     *sched.Kernel
	info     kernelInfo
	size     int // requested elements
	elements int // elements actually processed: size rounded up to whole work items
	items    int // work items (sched.TaskData.Elements)
	chunk    int // work items per chunk
	params   sched.Params
	arrays   []array
	in, out  [sched.MaxStreams]int // indices into arrays; -1 = none
}

// maxChunkBytes bounds the bytes of one sliced stream in one task: half of
// Vulkan's guaranteed maxStorageBufferRange (2^27).
const maxChunkBytes = 64 << 20

// kernelInfo describes what kbench calls an element of each kernel.
type kernelInfo struct {
	elem    string // what one element is
	elems   string // plural
	perItem int    // elements per work item
}

// infoOf gives each kernel's element: the unit of -sizes and of throughput.
func infoOf(id sched.KernelID) kernelInfo {
	switch id {
	case kernels.SkinLBS, kernels.SkinLBSUniform, kernels.SkinDQS, kernels.SkinDQSUniform:
		return kernelInfo{"vertex", "vertices", 1}
	case kernels.LocalToModel, kernels.LocalToModelSkin:
		return kernelInfo{"bone", "bones", poseBones}
	case kernels.SumF32, kernels.MinMaxF32, kernels.ScanReduceU32:
		return kernelInfo{"value in", "input values", kernels.SumFactor}
	case kernels.Avg32F32:
		return kernelInfo{"value in", "input values", kernels.Avg32Factor}
	case kernels.ExpandLerp:
		return kernelInfo{"sample out", "output samples", kernels.ExpandFactor}
	case kernels.ScanDownsweepU32:
		return kernelInfo{"value out", "output values", kernels.ScanBlock}
	case kernels.CRC32CBlocks:
		return kernelInfo{"4-byte word", "4-byte words", kernels.CRCBlockWords}
	}
	return kernelInfo{"element", "elements", 1}
}

// Shapes of the generated data.
const (
	poseBones  = 90   // bones per skeleton (the crowd's characters)
	meshVerts  = 4096 // vertices per character mesh
	skinChars  = 11   // distinct characters: 11*90 = 990 bones fit one 64 KiB uniform block
	poolValues = 1 << 16
)

// bytesOf returns the bytes of a slice of plain values.
func bytesOf[T any](s []T) []byte { return sched.StreamOf(s).Bytes }

// viewOf returns b as a slice of T (b comes from bytesOf, so it is aligned).
func viewOf[T any](b []byte) []T {
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// newWorkload generates kernel id's data for size elements.
func newWorkload(reg *sched.Registry, id sched.KernelID, size int) (*workload, error) {
	k := reg.Lookup(id)
	if k == nil {
		return nil, fmt.Errorf("kernel %d is not registered", id)
	}
	info := infoOf(id)
	items := (size + info.perItem - 1) / info.perItem
	w := &workload{id: id, kern: k, info: info, size: size, items: items, elements: items * info.perItem}
	for i := range w.in {
		w.in[i], w.out[i] = -1, -1
	}
	r := rand.New(rand.NewPCG(uint64(id), uint64(size)))
	add := func(a array, slot int) {
		if a.out {
			w.out[slot] = len(w.arrays)
		} else {
			w.in[slot] = len(w.arrays)
		}
		w.arrays = append(w.arrays, a)
	}
	switch id {
	case kernels.SkinLBS, kernels.SkinLBSUniform, kernels.SkinDQS, kernels.SkinDQSUniform:
		// Concatenated character meshes (Params[0] = 0: every vertex names
		// its palette base), cycling over 11 characters so that storage and
		// uniform variants read the same palette; the palette array is the
		// whole uniform block.
		mesh := randSkinVertices(r, meshVerts, poseBones)
		verts := make([]kernels.SkinVertex, items)
		for i := range verts {
			verts[i] = mesh[i%meshVerts]
			verts[i].Palette = uint32(i/meshVerts%skinChars) * poseBones
		}
		add(array{name: "vertices", data: bytesOf(verts), stride: 48, perItem: 48}, 0)
		if id == kernels.SkinDQS || id == kernels.SkinDQSUniform {
			pal := make([]kernels.DualQuat, kernels.UniformDQSBones)
			for i := range skinChars * poseBones {
				pal[i] = kernels.DualQuatFromRT(randUnitQuat(r), randVec(r, 2))
			}
			add(array{name: "palette", data: bytesOf(pal), stride: 32}, 1)
		} else {
			pal := make([]kernels.Mat4, kernels.UniformLBSBones)
			for i := range skinChars * poseBones {
				pal[i] = kernels.RigidMatrix(randUnitQuat(r), randVec(r, 2))
			}
			add(array{name: "palette", data: bytesOf(pal), stride: 64}, 1)
		}
		add(array{name: "skinned", data: make([]byte, items*24), stride: 24, perItem: 24, out: true}, 0)
	case kernels.LocalToModel, kernels.LocalToModelSkin:
		w.params[0] = poseBones
		pool := make([]kernels.Transform, poolValues)
		for i := range pool {
			s := float32(0.8 + 0.4*r.Float64())
			pool[i] = kernels.Transform{Rot: randUnitQuat(r), Trans: randVec(r, 0.5), Scale: [3]float32{s, s * 1.1, s * 0.9}}
		}
		local := make([]kernels.Transform, items*poseBones)
		for i := range local {
			local[i] = pool[i%poolValues]
		}
		parents := make([]int32, poseBones)
		for b := range parents {
			parents[b] = int32(r.IntN(b+1)) - 1
		}
		per := uint64(poseBones * 64)
		add(array{name: "local", data: bytesOf(local), stride: poseBones * 48, perItem: poseBones * 48}, 0)
		add(array{name: "parents", data: bytesOf(parents), stride: 4}, 1)
		add(array{name: "model", data: make([]byte, uint64(items)*per), stride: uint32(per), perItem: per, out: true}, 0)
		if id == kernels.LocalToModelSkin {
			inv := make([]kernels.Mat4, poseBones)
			for b := range inv {
				inv[b] = kernels.RigidMatrix(randUnitQuat(r), randVec(r, 1))
			}
			add(array{name: "inverse_bind", data: bytesOf(inv), stride: 64}, 2)
			add(array{name: "skin", data: make([]byte, uint64(items)*per), stride: uint32(per), perItem: per, out: true}, 1)
		}
	case kernels.SumF32, kernels.MinMaxF32, kernels.Avg32F32:
		f := uint64(info.perItem)
		add(array{name: "x", data: bytesOf(randFloats(r, w.elements)), stride: 4, perItem: 4 * f}, 0)
		outStride := uint32(4)
		if id == kernels.MinMaxF32 {
			outStride = 8
		}
		add(array{name: "out", data: make([]byte, items*int(outStride)), stride: outStride, perItem: uint64(outStride), out: true}, 0)
	case kernels.ExpandLerp:
		seg := make([]kernels.Segment, items)
		for i := range seg {
			seg[i] = kernels.Segment{A: float32(r.NormFloat64()), B: float32(r.NormFloat64() * 10)}
		}
		add(array{name: "segments", data: bytesOf(seg), stride: 8, perItem: 8}, 0)
		add(array{name: "samples", data: make([]byte, w.elements*4), stride: 4, perItem: 4 * kernels.ExpandFactor, out: true}, 0)
	case kernels.ScanReduceU32:
		add(array{name: "values", data: bytesOf(randWords(r, w.elements)), stride: 4, perItem: 4 * kernels.ScanBlock}, 0)
		add(array{name: "totals", data: make([]byte, items*4), stride: 4, perItem: 4, out: true}, 0)
	case kernels.ScanDownsweepU32:
		offsets := randWords(r, items)
		values := randWords(r, w.elements)
		for i := range values {
			values[i] >>= 12 // block sums stay meaningful
		}
		add(array{name: "offsets", data: bytesOf(offsets), stride: 4, perItem: 4}, 0)
		add(array{name: "values", data: bytesOf(values), stride: 4, perItem: 4 * kernels.ScanBlock}, 1)
		add(array{name: "scan", data: make([]byte, w.elements*4), stride: 4, perItem: 4 * kernels.ScanBlock, out: true}, 0)
	case kernels.CRC32CBlocks:
		add(array{name: "data", data: bytesOf(randWords(r, w.elements)), stride: 4, perItem: kernels.CRCBlockBytes}, 0)
		add(array{name: "crc", data: make([]byte, items*4), stride: 4, perItem: 4, out: true}, 0)
	case kernels.Saxpy:
		w.params[0] = math.Float32bits(1.5)
		add(array{name: "x", data: bytesOf(randFloats(r, items)), stride: 4, perItem: 4}, 0)
		add(array{name: "y", data: bytesOf(randFloats(r, items)), stride: 4, perItem: 4}, 1)
		add(array{name: "out", data: make([]byte, items*4), stride: 4, perItem: 4, out: true}, 0)
	default:
		return nil, fmt.Errorf("kbench has no workload for kernel %d %q", id, k.Name)
	}
	w.chunk = chunkItems(w.arrays, items)
	return w, nil
}

// chunkItems returns the work items per chunk: as many as keep every
// sliced stream within maxChunkBytes, a multiple of 256 (so that chunk
// offsets in a GPU buffer meet any device's binding alignment, at most
// 256 bytes), and no more than items.
func chunkItems(arrays []array, items int) int {
	c := uint64(math.MaxInt32)
	for _, a := range arrays {
		if a.perItem > 0 {
			c = min(c, maxChunkBytes/a.perItem)
		}
	}
	c = max(c/256*256, 256)
	return int(min(c, uint64(items)))
}

// chunks returns the number of chunks.
func (w *workload) chunks() int { return (w.items + w.chunk - 1) / w.chunk }

// bytes returns the bytes the kernel reads and writes: every array once.
func (w *workload) bytes() int64 {
	var n int64
	for _, a := range w.arrays {
		n += int64(len(a.data))
	}
	return n
}

// stream returns array a's stream for chunk items [lo, hi): host bytes,
// or, with buf != 0, the same range of GPU buffer buf.
func (a *array) stream(lo, hi int, buf sched.BufferID) sched.Stream {
	off, n := uint64(0), uint64(len(a.data))
	if a.perItem > 0 {
		off, n = uint64(lo)*a.perItem, uint64(hi-lo)*a.perItem
	}
	s := sched.Stream{Stride: a.stride, Count: uint32(n / uint64(a.stride))}
	if buf != 0 {
		s.Buffer, s.Offset = buf, off
	} else {
		s.Bytes = a.data[off : off+n]
	}
	return s
}

// task returns chunk c's task data: host streams, or with bufs (one per
// array) GPU-resident ones.
func (w *workload) task(c int, bufs []sched.BufferID) sched.TaskData {
	lo := c * w.chunk
	return w.taskRange(lo, min(lo+w.chunk, w.items), bufs)
}

// taskRange returns the task data of work items [lo, hi) (within one
// chunk's stream limits).
func (w *workload) taskRange(lo, hi int, bufs []sched.BufferID) sched.TaskData {
	var d sched.TaskData
	d.Params = w.params
	d.Elements = uint32(hi - lo)
	d.Begin, d.End = 0, d.Elements
	for i := range sched.MaxStreams {
		for _, p := range []struct {
			idx int
			s   *sched.Stream
		}{{w.in[i], &d.In[i]}, {w.out[i], &d.Out[i]}} {
			if p.idx < 0 {
				continue
			}
			var b sched.BufferID
			if bufs != nil {
				b = bufs[p.idx]
			}
			*p.s = w.arrays[p.idx].stream(lo, hi, b)
		}
	}
	return d
}

// Random data.

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
// one to four weights summing to 1, and unit normals.
func randSkinVertices(r *rand.Rand, n, bones int) []kernels.SkinVertex {
	v := make([]kernels.SkinVertex, n)
	for i := range v {
		nrm := randVec(r, 1)
		l := float32(math.Sqrt(float64(nrm[0]*nrm[0] + nrm[1]*nrm[1] + nrm[2]*nrm[2])))
		if l < 1e-3 {
			nrm, l = [3]float32{0, 1, 0}, 1
		}
		var wt [4]float32
		nw := 1 + r.IntN(4)
		sum := float32(0)
		for k := range nw {
			wt[k] = float32(r.Float64() + 0.05)
			sum += wt[k]
		}
		for k := range wt {
			wt[k] /= sum
		}
		v[i] = kernels.SkinVertex{
			Pos:     randVec(r, 1),
			Normal:  [3]float32{nrm[0] / l, nrm[1] / l, nrm[2] / l},
			Joints:  kernels.PackJoints(uint8(r.IntN(bones)), uint8(r.IntN(bones)), uint8(r.IntN(bones)), uint8(r.IntN(bones))),
			Weights: wt,
		}
	}
	return v
}

// randFloats returns n normal values of standard deviation 100 (no
// denormals, so GPU and CPU sums agree bit for bit).
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
