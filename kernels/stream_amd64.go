//go:build !purego

package kernels

import "golang.org/x/sys/cpu"

// streamHasAsm reports whether this CPU can run the AVX2 loops of
// stream_amd64.s (the condition of the other assembly paths, so that all
// switch together).
var streamHasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// streamFast selects the AVX2 loops in SumF32, Avg32F32, MinMaxF32,
// ScanReduceU32, ScanDownsweepU32, ExpandLerp and Saxpy; tests clear it to
// run the pure-Go loops, which stay the reference (the shaders' order of
// operations) and the fallback.
var streamFast = streamHasAsm

// The loops below handle whole blocks (whole groups of 32 for saxpy); the
// Go code runs partial blocks and tails. Each reads and writes nothing
// outside its slices, which the callers size: x holds factor*len(out)
// values (256*len for the fixed-factor ones).

// sumBlocksAVX2 writes out[i] = scale * sum of x[factor*i : factor*(i+1)],
// factor a positive multiple of 32, with 32 partial sums (4 accumulators
// of 8 lanes) combined in a fixed order (see the assembly). It is not the
// Go loop's order (index order from 0, as the shader), so the results
// differ by rounding: |asm - go| <= (factor+16) * 2^-24 * scale * sum |x|
// per block (sumTolerance), which holds for any such pair of orders: each
// sum is within (n-1) * 2^-24 * sum |x| of the exact sum for n terms
// added in a chain at most n long. The order is fixed, so the results do
// not depend on how ranges are split (cpu-1 and cpu-all agree bit for bit).
//
//go:noescape
func sumBlocksAVX2(x []float32, out []float32, factor int, scale float32)

// minMaxBlocksAVX2 writes out[i] = (min, max) of x[256i : 256i+256],
// ignoring NaNs, from (+Inf, -Inf). Every step is the Go loop's (x < acc
// ? x : acc), so the result equals the Go loop's value; only the sign of a
// zero may differ when a block holds both -0 and +0 (the lanes see them in
// another order), the kernel's stated tolerance on the GPU too.
//
//go:noescape
func minMaxBlocksAVX2(x []float32, out []MinMax)

// sumBlocksU32AVX2 writes out[i] = the wrapping sum of x[256i : 256i+256]:
// bit-exact (integer addition modulo 2^32 is associative).
//
//go:noescape
func sumBlocksU32AVX2(x []uint32, out []uint32)

// scanBlocksU32AVX2 writes, for each block i below len(offsets), the
// exclusive scan out[256i+k] = offsets[i] + x[256i] + ... + x[256i+k-1]:
// bit-exact (wrapping integer sums). x and out hold 256*len(offsets).
//
//go:noescape
func scanBlocksU32AVX2(offsets []uint32, x []uint32, out []uint32)

// saxpyAVX2 writes out[i] = a*x[i] + y[i] for i below len(out) rounded
// down to a multiple of 32, rounding the product before the add: the Go
// loop's bits. x and y hold at least len(out); out may be x or y.
//
//go:noescape
func saxpyAVX2(a float32, x, y, out []float32)

// expandLerpAVX2 writes out[8i+k] = A + (B-A)*(k/8) for each segment i,
// the Go loop's operations in its order: bit-exact. out holds 8*len(seg).
//
//go:noescape
func expandLerpAVX2(seg []Segment, out []float32)
