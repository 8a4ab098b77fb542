package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// The direct calls below run the same code as the registered kernels (the
// same Go reference and, on amd64 with AVX2 and FMA, the same assembly) on
// the caller's goroutine, one skeleton or mesh per call, with the types the
// kernels' streams hold: the per-step form of a character (ozz-style),
// where the scheduler tasks (LocalToModel, LocalToModelSkin, SkinLBS,
// SkinDQS kernel IDs) are the batch form. They check their arguments and
// return an error naming the call and what is wrong (a bad argument writes
// nothing; a vertex joint outside the palette stops skinning at that
// vertex), and they never allocate. Outputs may not share memory with
// inputs or with each other (an error): the pose chain reads the model
// matrices it wrote, and the assembly reads and writes in groups.

// TransformsOf returns local poses as flat float32 (anim.PoseFloats = 12
// per bone, what anim.SampleJob writes) viewed as Transforms, without
// copying: len(f)/12 of them, sharing f's memory. sched.StreamOf over the
// result is the local stream of the LocalToModel kernels.
func TransformsOf(f []float32) []Transform {
	n := len(f) / 12
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*Transform)(unsafe.Pointer(unsafe.SliceData(f))), n)
}

// Mat4sOf returns column-major matrices held as flat float32 (16 per
// matrix, anim.ModelFloats) viewed as Mat4s, without copying: len(f)/16 of
// them, sharing f's memory.
func Mat4sOf(f []float32) []Mat4 {
	n := len(f) / 16
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*Mat4)(unsafe.Pointer(unsafe.SliceData(f))), n)
}

// PerSkeleton returns s as a stream of one skeleton per element (bones
// values of T each): the local, model and palette streams of the
// LocalToModel and LocalToModelSkin kernels, one work item per skeleton,
// over a batch of poses as SampleJob writes them
// (PerSkeleton(TransformsOf(job.Poses), job.Bones)). sched.StreamOf(s)
// would have one bone per element, which those kernels refuse. A partial
// skeleton at the end is left out.
func PerSkeleton[T any](s []T, bones int) sched.Stream {
	st := sched.StreamOf(s)
	if bones < 1 {
		return st
	}
	st.Stride *= uint32(bones)
	st.Count /= uint32(bones)
	if st.Bytes != nil {
		st.Bytes = st.Bytes[:uint64(st.Stride)*uint64(st.Count)]
	}
	return st
}

// mat4s views matrices of any [16]float32 type (Mat4, the importer's
// [16]float32) as Mat4s: the same layout, no copy.
func mat4s[M ~[16]float32](m []M) []Mat4 {
	if len(m) == 0 {
		return nil
	}
	return unsafe.Slice((*Mat4)(unsafe.Pointer(unsafe.SliceData(m))), len(m))
}

// checkParents validates a parent table: -1 for a root, otherwise a bone
// before the child.
func checkParents(call string, parents []int32) error {
	if len(parents) == 0 {
		return fmt.Errorf("kernels: %s: no bones", call)
	}
	for b, p := range parents {
		if p < -1 || int(p) >= b {
			return fmt.Errorf("kernels: %s: bone %d has parent %d; parents must come first (-1 for a root)", call, b, p)
		}
	}
	return nil
}

func checkLen(call, what string, n, want int) error {
	if n < want {
		return fmt.Errorf("kernels: %s: %s holds %d, want %d (one per bone)", call, what, n, want)
	}
	return nil
}

// ToModel computes one skeleton's model-space matrices:
// model[b] = model[parents[b]] * local[b].Matrix() (the local matrix for a
// root, parents[b] = -1). parents[b] must be smaller than b; local and
// model hold at least len(parents) bones. It is the CPU code of the
// LocalToModel kernel (AVX2+FMA where available: results differ from
// ToModelGo by rounding only).
func ToModel(parents []int32, local []Transform, model []Mat4) error {
	if err := checkPose("ToModel", parents, local, model); err != nil {
		return err
	}
	n := len(parents)
	poseChain(local[:n], parents, model[:n], nil, nil)
	return nil
}

// ToModelGo is ToModel always in pure Go: the same bits on every
// machine (anim.LocalToModel, and through it offline.Measure and Compress,
// use it, so compression does not depend on the CPU).
func ToModelGo(parents []int32, local []Transform, model []Mat4) error {
	if err := checkPose("ToModelGo", parents, local, model); err != nil {
		return err
	}
	n := len(parents)
	poseChainGo(local[:n], parents, model[:n], nil, nil)
	return nil
}

func checkPose(call string, parents []int32, local []Transform, model []Mat4) error {
	if err := checkParents(call, parents); err != nil {
		return err
	}
	if err := checkLen(call, "local", len(local), len(parents)); err != nil {
		return err
	}
	if err := checkLen(call, "model", len(model), len(parents)); err != nil {
		return err
	}
	return noOverlap(call, "local", local[:len(parents)], "model", model[:len(parents)])
}

// noOverlap refuses an output that shares memory with an input or another
// output: the pose chain reads model[parent] after writing it, and the
// skinning loops read vertices in groups, so shared memory would give
// answers that depend on the path (Go or assembly), never an error.
func noOverlap[A, B any](call, an string, a []A, bn string, b []B) error {
	if sliceOverlap(a, b) {
		return fmt.Errorf("kernels: %s: %s and %s share memory; pass separate slices", call, an, bn)
	}
	return nil
}

// ToModelSkin is ToModel that also writes the skinning palette,
// palette[b] = model[b] * inverseBind[b], in one pass (the
// LocalToModelSkin kernel's CPU code). inverseBind is one matrix per bone,
// of either matrix type: []Mat4, or the importer's [][16]float32
// (offline.Skeleton.InverseBind) as it is.
func ToModelSkin[M ~[16]float32](parents []int32, local []Transform, inverseBind []M, model, palette []Mat4) error {
	const call = "ToModelSkin"
	if err := checkPose(call, parents, local, model); err != nil {
		return err
	}
	n := len(parents)
	if err := checkLen(call, "inverseBind", len(inverseBind), n); err != nil {
		return err
	}
	if err := checkLen(call, "palette", len(palette), n); err != nil {
		return err
	}
	ib := mat4s(inverseBind)[:n]
	model, palette = model[:n], palette[:n]
	if err := noOverlap(call, "model", model, "palette", palette); err != nil {
		return err
	}
	if err := noOverlap(call, "local", local[:n], "palette", palette); err != nil {
		return err
	}
	if err := noOverlap(call, "inverseBind", ib, "model", model); err != nil {
		return err
	}
	if err := noOverlap(call, "inverseBind", ib, "palette", palette); err != nil {
		return err
	}
	poseChain(local[:n], parents, model, ib, palette)
	return nil
}

// Palette writes the skinning palette of a posed skeleton:
// palette[b] = model[b] * inverseBind[b] for every bone of model (model
// matrices affine, as ToModel writes them). inverseBind is []Mat4 or
// the importer's [][16]float32 as it is; inverseBind and palette hold at
// least len(model) matrices, and palette shares memory with neither (an
// error, as in ToModelSkin).
func Palette[M ~[16]float32](model []Mat4, inverseBind []M, palette []Mat4) error {
	n := len(model)
	if err := checkLen("Palette", "inverseBind", len(inverseBind), n); err != nil {
		return err
	}
	if err := checkLen("Palette", "palette", len(palette), n); err != nil {
		return err
	}
	ib := mat4s(inverseBind)[:n]
	palette = palette[:n]
	if err := noOverlap("Palette", "model", model, "palette", palette); err != nil {
		return err
	}
	if err := noOverlap("Palette", "inverseBind", ib, "palette", palette); err != nil {
		return err
	}
	for b := range model {
		skinMul(&model[b], &ib[b], &palette[b])
	}
	return nil
}

// DualQuatFromMatrix returns the dual quaternion of an affine matrix's
// rigid part: the rotation of its upper-left 3x3 with each column
// normalised (scale is dropped: dual quaternions cannot hold it) and its
// translation. A column of zero length gives the identity rotation.
func DualQuatFromMatrix(m *Mat4) DualQuat {
	var c [3][3]float64
	for j := range 3 {
		x, y, z := float64(m[4*j]), float64(m[4*j+1]), float64(m[4*j+2])
		l := math.Sqrt(x*x + y*y + z*z)
		if !(l > 0) || math.IsInf(l, 0) {
			return DualQuatFromRT([4]float32{0, 0, 0, 1}, [3]float32{m[12], m[13], m[14]})
		}
		c[j] = [3]float64{x / l, y / l, z / l}
	}
	// Element (row r, column j) is c[j][r]. Shepperd's method: divide by
	// the largest of the four candidates.
	m00, m11, m22 := c[0][0], c[1][1], c[2][2]
	var x, y, z, w float64
	switch tr := m00 + m11 + m22; {
	case tr > 0:
		s := 2 * math.Sqrt(tr+1)
		w, x, y, z = s/4, (c[1][2]-c[2][1])/s, (c[2][0]-c[0][2])/s, (c[0][1]-c[1][0])/s
	case m00 > m11 && m00 > m22:
		s := 2 * math.Sqrt(1+m00-m11-m22)
		w, x, y, z = (c[1][2]-c[2][1])/s, s/4, (c[1][0]+c[0][1])/s, (c[2][0]+c[0][2])/s
	case m11 > m22:
		s := 2 * math.Sqrt(1+m11-m00-m22)
		w, x, y, z = (c[2][0]-c[0][2])/s, (c[1][0]+c[0][1])/s, s/4, (c[2][1]+c[1][2])/s
	default:
		s := 2 * math.Sqrt(1+m22-m00-m11)
		w, x, y, z = (c[0][1]-c[1][0])/s, (c[2][0]+c[0][2])/s, (c[2][1]+c[1][2])/s, s/4
	}
	l := math.Sqrt(x*x + y*y + z*z + w*w)
	q := [4]float32{float32(x / l), float32(y / l), float32(z / l), float32(w / l)}
	return DualQuatFromRT(q, [3]float32{m[12], m[13], m[14]})
}

// DualQuatPalette converts a matrix palette (Palette, ToModelSkin)
// into the dual quaternions DQS takes, matrix by matrix
// (DualQuatFromMatrix); dq holds at least len(palette).
func DualQuatPalette(palette []Mat4, dq []DualQuat) error {
	if len(dq) < len(palette) {
		return fmt.Errorf("kernels: DualQuatPalette: %d dual quaternions for %d matrices", len(dq), len(palette))
	}
	for i := range palette {
		dq[i] = DualQuatFromMatrix(&palette[i])
	}
	return nil
}

// MaxSkinJoint is the largest joint index a SkinVertex holds: its four
// joints are packed in 8 bits each, so one palette (one skinned draw)
// reaches at most MaxSkinJoint+1 = 256 bones. A larger mesh must be split.
const MaxSkinJoint = 255

// JointsOf packs four joint indices as the importer gives them
// (offline.SkinnedMesh.Bones) into SkinVertex.Joints, or fails when one is
// above MaxSkinJoint.
func JointsOf(j [4]uint16) (uint32, error) {
	for _, x := range j {
		if x > MaxSkinJoint {
			return 0, fmt.Errorf("kernels: joint %d is above %d: a SkinVertex packs 8-bit joints, so one palette reaches 256 bones (split the mesh)", x, MaxSkinJoint)
		}
	}
	return PackJoints(uint8(j[0]), uint8(j[1]), uint8(j[2]), uint8(j[3])), nil
}

// SkinVertices builds the skinning kernels' bind-pose vertices from a
// mesh's arrays as the importer gives them (offline.SkinnedMesh:
// Positions, Normals, Bones, Weights; normals may be nil, giving zero
// normals: LBS then gives NaN normals, DQS zero ones), appending to dst
// (pass nil for a new slice). Palette is 0 (one skeleton). It fails,
// naming the vertex, when the arrays' lengths differ or a joint is above
// MaxSkinJoint.
func SkinVertices(dst []SkinVertex, pos, normals [][3]float32, joints [][4]uint16, weights [][4]float32) ([]SkinVertex, error) {
	n := len(pos)
	if len(joints) != n || len(weights) != n || (normals != nil && len(normals) != n) {
		return dst, fmt.Errorf("kernels: SkinVertices: %d positions, %d normals, %d joints, %d weights", n, len(normals), len(joints), len(weights))
	}
	for i := range n {
		j, err := JointsOf(joints[i])
		if err != nil {
			return dst, fmt.Errorf("kernels: SkinVertices: vertex %d: %w", i, err)
		}
		v := SkinVertex{Pos: pos[i], Joints: j, Weights: weights[i]}
		if normals != nil {
			v.Normal = normals[i]
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// LBS skins a mesh by linear blend skinning on the caller's goroutine
// (the SkinLBS kernel's CPU code): out[i] is verts[i] under the weighted
// sum of its four palette matrices (positions transformed, normals by the
// 3x3 part and normalised: a zero normal, as SkinVertices gives without
// normals, comes out NaN; under a non-uniformly scaled palette the normal
// is not the inverse transpose's, so it tilts off the surface). Vertex
// joints index palette from SkinVertex.Palette; out holds at least
// len(verts). A joint outside the palette is an error naming the vertex.
func LBS(verts []SkinVertex, palette []Mat4, out []SkinnedVertex) error {
	s, err := directSkin("LBS", verts, out, len(palette))
	if err != nil {
		return err
	}
	if err := noOverlap("LBS", "palette", palette, "out", s.out); err != nil {
		return err
	}
	if err := lbs(&s, palette, 0, uint32(len(verts)), 0); err != nil {
		return fmt.Errorf("kernels: LBS: %w", err)
	}
	return nil
}

// DQS skins a mesh by dual quaternion skinning on the caller's
// goroutine (the SkinDQS kernel's CPU code), with a palette of dual
// quaternions (DualQuatPalette converts a matrix palette). Otherwise as
// LBS, except that a zero normal stays zero, and a vertex whose weights
// are all zero comes out NaN (the blend has no length to normalise).
func DQS(verts []SkinVertex, palette []DualQuat, out []SkinnedVertex) error {
	s, err := directSkin("DQS", verts, out, len(palette))
	if err != nil {
		return err
	}
	if err := noOverlap("DQS", "palette", palette, "out", s.out); err != nil {
		return err
	}
	if err := dqs(&s, palette, 0, uint32(len(verts)), 0); err != nil {
		return fmt.Errorf("kernels: DQS: %w", err)
	}
	return nil
}

func directSkin(call string, verts []SkinVertex, out []SkinnedVertex, np int) (skinSetup, error) {
	switch {
	case len(out) < len(verts):
		return skinSetup{}, fmt.Errorf("kernels: %s: %d output vertices for %d vertices", call, len(out), len(verts))
	case np == 0 && len(verts) > 0:
		return skinSetup{}, fmt.Errorf("kernels: %s: empty palette", call)
	case uint64(len(verts)) > math.MaxUint32 || uint64(np) > math.MaxUint32:
		return skinSetup{}, fmt.Errorf("kernels: %s: %d vertices, %d palette entries: too many", call, len(verts), np)
	}
	// The kernels add a vertex's palette base and joints in uint32, as the
	// shaders do, so a base near 2^32 would wrap around to the start of the
	// palette instead of failing. A base at or past the palette's end is
	// outside it whatever the joints, and a base inside it cannot wrap
	// (that would take a palette of more than 2^32 - 256 matrices).
	for i := range verts {
		if verts[i].Palette >= uint32(np) {
			return skinSetup{}, fmt.Errorf("kernels: %s: vertex %d: palette base %d is outside the palette of %d bones", call, i, verts[i].Palette, np)
		}
	}
	if sliceOverlap(verts, out[:len(verts)]) {
		return skinSetup{}, fmt.Errorf("kernels: %s: verts and out share memory; pass separate slices", call)
	}
	return skinSetup{verts: verts, out: out[:len(verts)]}, nil
}
