//go:build !purego

package kernels

import "golang.org/x/sys/cpu"

// poseHasAsm reports whether this CPU can run poseChainAVX2.
var poseHasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// poseFast selects poseChainAVX2 in poseChain; tests clear it to run the
// pure-Go path (poseChainGo) on the same machine.
var poseFast = poseHasAsm

// poseChainAVX2 is poseChainGo in AVX2+FMA assembly (pose_amd64.s), one
// bone per iteration, with a ymm register holding two matrix columns:
//
//   - The local matrix T*R*S is built as [col0 | col1] and [col2 | trans]:
//     each rotation column is e + A1*B1 + A2*B2, where A and B are
//     vpermilps permutations of the quaternion (B of the quaternion times
//     a per-lane constant of +-2 that carries the column's signs), then
//     scaled; the translation is blended into the upper half.
//   - model[b] = model[parent] * local: the parent's columns are
//     broadcast to both halves (vbroadcastf128 from memory), the local
//     matrix's elements within each half (vpermilps), three FMAs per
//     register, plus the parent's translation in the upper half of the
//     second. A root stores the local matrix.
//   - Lane 3 of every model column is then blended to 0, 0, 0, 1, so model
//     matrices are exactly affine whatever the inputs (NaN, Inf).
//   - skin[b] = model[b] * invBind[b] the same way, four FMAs per register,
//     with invBind's last row blended in as skinMul does.
//
// The results differ from poseChainGo only by rounding: FMA rounds each
// product-sum once and the sums are associated differently (for example
// 1 - 2yy - 2zz as two FMAs instead of 1 - (yy + zz)), a few ULPs of the
// matrix's magnitude per level of the hierarchy (TestPoseChainAsm). The
// last rows are bit-identical. Parents must be validated (parents[b] < b)
// and every slice at least len(local) long (len(skin) == 0: no skin); a
// parent that is not below its child is treated as a root, so the
// assembly never touches memory outside the slices.
//
//go:noescape
func poseChainAVX2(local []Transform, parents []int32, model, invBind, skin []Mat4)
