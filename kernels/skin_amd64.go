//go:build !purego

package kernels

import "golang.org/x/sys/cpu"

// lbsHasAsm reports whether this CPU can run lbsAVX2 (AVX2 suffices; the
// condition is poseHasAsm's, so both assembly paths switch together).
var lbsHasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// lbsFast selects lbsAVX2 in lbs and dqsAVX2 in dqs; tests clear it to
// run the pure-Go paths (lbsGo, dqsGo) on the same machine.
var lbsFast = lbsHasAsm

// lbsAVX2 is lbsGo in AVX2 assembly (skin_amd64.s) for one run of
// vertices with a fixed palette offset: out[k] is verts[k] skinned with the
// palette matrices pal[verts[k].Palette + base + joint] (uint32 sums, as in
// jointIndices), for k below min(len(verts), len(out)). It returns how many
// vertices it completed: all of them, or the first k whose four palette
// indices are not all below len(pal) (checked before any of its matrices
// is loaded; out[k:] is not written), for which lbs reports badJoint as
// lbsGo does. It reads and writes nothing outside the three slices (its
// prefetch hint, 1 KiB ahead of the current vertex, loads no data and
// never faults).
//
// One vertex per iteration; a ymm register holds two matrix columns, [low
// 128 bits | high 128 bits], lane r of column c being element 4*c+r of a
// Mat4:
//
//   - Indices: when Palette + base + 255 < len(pal) (64-bit), every index
//     is in range and the joints are byte offsets from &pal[Palette +
//     base]; otherwise (the last instances of a palette, uint32
//     wrap-around) all four uint32 sums are computed and compared first.
//   - Blend: M01 = [col0 | col1] and M23 = [col2 | col3] of the blended
//     matrix are w0*P0 + w1*P1 (the palette columns read straight from
//     memory), plus w2*P2 and w3*P3 unless w2 and w3 are both ±0: the
//     branch of the Go code, taken by most vertices.
//   - Transform: M01*[x | y] = [c0*x | c1*y] and M23*[z | 1] = [c2*z | c3],
//     whose four halves are summed for the position, and M01*[nx | ny]
//     plus the low half of M23 times nz for the normal (the [a | b]
//     operands are vpermilps and broadcasts of the vertex). Lane 3 (the
//     palette's last row) is dropped.
//   - Normalise: (nx² + ny²) + nz² in lane 0 (VMULPS, then shuffles and
//     VADDSS), VSQRTSS, inv = 1 / len by VDIVSS, broadcast, times the
//     normal, as the Go code (not the 12-bit VRSQRTPS approximation): a
//     zero normal gives 0 * +Inf = NaN.
//   - Store: [px py pz nx] (VINSERTPS) as 16 bytes and [ny nz] as 8, the
//     24 bytes of the SkinnedVertex and nothing else.
//
// No FMA: every product and sum is rounded separately, in the Go code's
// order (w0*P0 + w1*P1 + w2*P2 + w3*P3 and m0*x + m4*y + m8*z + m12 left to
// right; the float64 sqrt that Go rounds to float32 is the correctly
// rounded float32 sqrt), so the results are bit-identical to lbsGo as the
// gc compiler builds it for GOAMD64=v1 and v2, and a machine without AVX2
// computes the same bits. Fusing the blend and the transform into FMAs is
// faster but moves normals of short blended normals beyond
// TestLayoutVariantsAgree's 1e-6. With GOAMD64=v3 the
// compiler fuses lbsGo's multiply-adds itself, and the paths then differ
// by a few ULPs of each component's magnitude (TestSkinLBSAsm checks a
// relative tolerance and, below v3, equal bits).
//
//go:noescape
func lbsAVX2(verts []SkinVertex, pal []Mat4, out []SkinnedVertex, base uint32) int

// dqsAVX2 is dqsGo in AVX2 assembly (dqs_amd64.s) for one run of vertices
// with a fixed palette offset, eight vertices at a time: out[k] is
// verts[k] skinned with pal[verts[k].Palette + base + joint], for k below
// min(len(verts), len(out)) rounded down to a multiple of 8. It returns
// how many vertices it completed: that many, or the first k of a group of
// eight with a palette index not below len(pal) (all 32 of the group's
// indices are checked before any of its dual quaternions is read; out[k:]
// is not written), or 0 when len(pal) > 2^30 (it indexes the palette by
// index times 4 in uint32). dqs skins the last 1-7 vertices of a run
// through it too, as a group padded on the stack, and runs the rest after
// a bad group (where it reports the bad joint) or the whole run with a
// huge palette through dqsGo. It reads and writes nothing outside the
// three slices.
//
// Structure of arrays: lane i of every ymm register belongs to vertex i of
// the group. The group's vertices and each joint slot's eight dual
// quaternions are loaded as 16-byte rows (vertex i in the low, vertex i+4
// in the high half) and turned into columns by an in-lane 4x4 transpose of
// eight shuffles; the outputs go back the same way. Weights, bind-pose
// positions and normals, the first joint's real parts and the indices wait
// in a 32-byte aligned frame on the stack and enter the arithmetic as
// memory operands. Every operation is then one of dqsGo's, on eight
// vertices: the antipodality dot products in dot4's order, the blend left
// to right, the normalisation, translation and the two rotations, with no
// FMA and the correctly rounded square root and division, so the results
// are dqsGo's bits as the gc compiler builds it for GOAMD64=v1 and v2 (with
// v3 it fuses multiply-adds itself and the paths differ by a few ULPs;
// TestSkinDQSAsm checks a relative tolerance and, below v3, equal bits).
// The next group's indices and weights are read while the square root and
// division of the current group are under way, whose latency otherwise
// held up the loop, and the vertices are prefetched 2 KiB ahead (its
// prefetch hints load no data and never fault; BENCHMARKS.md, section
// kernels, has the measurements).
//
//go:noescape
func dqsAVX2(verts []SkinVertex, pal []DualQuat, out []SkinnedVertex, base uint32) int
