//go:build !purego

#include "textflag.h"

// AVX2 dual-quaternion skinning of one run of vertices, eight at a time,
// without FMA, in dqsGo's order of operations (see skin_amd64.go).
//
// Structure of arrays: lane i of every ymm register belongs to vertex i of
// the group of eight. The group's vertices and the dual quaternions of each
// joint slot are loaded as rows (16 bytes of vertex i in the low and of
// vertex i+4 in the high half) and turned into columns by an in-lane 4x4
// transpose (DQS_T4); the results go back the same way.

DATA dqsSign<>+0(SB)/8, $0x8000000080000000
DATA dqsSign<>+8(SB)/8, $0x8000000080000000
DATA dqsSign<>+16(SB)/8, $0x8000000080000000
DATA dqsSign<>+24(SB)/8, $0x8000000080000000
GLOBL dqsSign<>(SB), RODATA|NOPTR, $32
DATA dqsByte<>+0(SB)/8, $0x000000ff000000ff
DATA dqsByte<>+8(SB)/8, $0x000000ff000000ff
DATA dqsByte<>+16(SB)/8, $0x000000ff000000ff
DATA dqsByte<>+24(SB)/8, $0x000000ff000000ff
GLOBL dqsByte<>(SB), RODATA|NOPTR, $32
DATA dqsOne<>+0(SB)/4, $0x3f800000
GLOBL dqsOne<>(SB), RODATA|NOPTR, $4

// The frame, 32-byte aligned at R14: one ymm column (8 lanes) per slot.
// weights w0..w3 of the group
#define W0 0
#define W1 32
#define W2 64
#define W3 96
// real part of the first joint's dual quaternions
#define Q0X 128
#define Q0Y 160
#define Q0Z 192
#define Q0W 224
// palette indices of joint slots 0..3, times 4 (uint32)
#define IDX0 256
#define IDX1 288
#define IDX2 320
#define IDX3 352
// bind-pose normals
#define NX 384
#define NY 416
#define NZ 448
// base in every lane
#define BASEV 480
// len(pal) - 1 in every lane
#define LENM1 512
// bind-pose positions
#define PX 544
#define PY 576
#define PZ 608
// normals y and z of the next group
#define NYN 640
#define NZN 672

// DQS_T4 transposes the 4x4 blocks within each 128-bit half: rows a, b,
// c, d become columns, x in b, y in d, z in t0, w in t1 (a and c are
// clobbered).
#define DQS_T4(a, b, c, d, t0, t1) \
	VUNPCKLPS b, a, t0; \
	VUNPCKHPS b, a, a; \
	VUNPCKLPS d, c, t1; \
	VUNPCKHPS d, c, c; \
	VUNPCKLPD t1, t0, b; \
	VUNPCKHPD t1, t0, d; \
	VUNPCKLPD c, a, t0; \
	VUNPCKHPD c, a, t1

// DQS_OFFSETS loads the eight palette indices of one joint slot, stored
// times 4 in the frame, into R9-R12 (vertices 0-3) and AX, DX, R8, R13
// (4-7); (BX)(R*8) then addresses their dual quaternions.
#define DQS_OFFSETS(idx) \
	MOVL idx+0(R14), R9; \
	MOVL idx+4(R14), R10; \
	MOVL idx+8(R14), R11; \
	MOVL idx+12(R14), R12; \
	MOVL idx+16(R14), AX; \
	MOVL idx+20(R14), DX; \
	MOVL idx+24(R14), R8; \
	MOVL idx+28(R14), R13

// DQS_ROWS loads 16 bytes at off of the eight dual quaternions that
// DQS_OFFSETS indexed into Y8-Y11 (rows [vertex i | vertex i+4]).
#define DQS_ROWS(off) \
	VMOVUPS     off(BX)(R9*8), X8; \
	VINSERTF128 $1, off(BX)(AX*8), Y8, Y8; \
	VMOVUPS     off(BX)(R10*8), X9; \
	VINSERTF128 $1, off(BX)(DX*8), Y9, Y9; \
	VMOVUPS     off(BX)(R11*8), X10; \
	VINSERTF128 $1, off(BX)(R8*8), Y10, Y10; \
	VMOVUPS     off(BX)(R12*8), X11; \
	VINSERTF128 $1, off(BX)(R13*8), Y11, Y11

// DQS_VROWS loads 16 bytes at off of the group's eight vertices (48 bytes
// apart, SI the first) into a, b, c, d (X and Y names of the same
// registers).
#define DQS_VROWS(off, xa, ya, xb, yb, xc, yc, xd, yd) \
	VMOVUPS     off(SI), xa; \
	VINSERTF128 $1, off+192(SI), ya, ya; \
	VMOVUPS     off+48(SI), xb; \
	VINSERTF128 $1, off+240(SI), yb, yb; \
	VMOVUPS     off+96(SI), xc; \
	VINSERTF128 $1, off+288(SI), yc, yc; \
	VMOVUPS     off+144(SI), xd; \
	VINSERTF128 $1, off+336(SI), yd, yd

// DQS_JOINT adds joint slot k (indices at idx, weights at w) to the
// blend: dot(q0.real, qk.real) in dot4's order, wk negated where it is
// below zero (negIf), then R += wk*real and D += wk*dual (Y0-Y3, Y4-Y7).
#define DQS_JOINT(idx, w) \
	DQS_OFFSETS(idx); \
	DQS_ROWS(0); \
	DQS_T4(Y8, Y9, Y10, Y11, Y12, Y13); \
	VMULPS    Q0X(R14), Y9, Y14; \
	VMULPS    Q0Y(R14), Y11, Y15; \
	VADDPS    Y15, Y14, Y14; \
	VMULPS    Q0Z(R14), Y12, Y15; \
	VADDPS    Y15, Y14, Y14; \
	VMULPS    Q0W(R14), Y13, Y15; \
	VADDPS    Y15, Y14, Y14; \
	VXORPS    Y15, Y15, Y15; \
	VCMPPS    $1, Y15, Y14, Y14; \
	VANDPS    dqsSign<>(SB), Y14, Y14; \
	VXORPS    w(R14), Y14, Y14; \
	VMULPS    Y14, Y9, Y9; \
	VADDPS    Y9, Y0, Y0; \
	VMULPS    Y14, Y11, Y11; \
	VADDPS    Y11, Y1, Y1; \
	VMULPS    Y14, Y12, Y12; \
	VADDPS    Y12, Y2, Y2; \
	VMULPS    Y14, Y13, Y13; \
	VADDPS    Y13, Y3, Y3; \
	DQS_ROWS(16); \
	DQS_T4(Y8, Y9, Y10, Y11, Y12, Y13); \
	VMULPS    Y14, Y9, Y9; \
	VADDPS    Y9, Y4, Y4; \
	VMULPS    Y14, Y11, Y11; \
	VADDPS    Y11, Y5, Y5; \
	VMULPS    Y14, Y12, Y12; \
	VADDPS    Y12, Y6, Y6; \
	VMULPS    Y14, Y13, Y13; \
	VADDPS    Y13, Y7, Y7

// DQS_INDEX reads the normals y and z (into NYN and NZN), joints and
// palette offsets of the group at v(SI): the indices Palette + base +
// joint in uint32 (jointIndices), stored times 4 at IDX0-IDX3, and in R12
// 0xff if all 32 are below len(pal) (unsigned), else less.
#define DQS_INDEX(v) \
	DQS_VROWS(v+16, X8, Y8, X9, Y9, X10, Y10, X11, Y11); \
	DQS_T4(Y8, Y9, Y10, Y11, Y12, Y13); \
	VMOVUPS   Y9, NYN(R14); \
	VMOVUPS   Y11, NZN(R14); \
	VPADDD    BASEV(R14), Y13, Y13; \
	VPAND     dqsByte<>(SB), Y12, Y8; \
	VPADDD    Y13, Y8, Y8; \
	VPSRLD    $8, Y12, Y9; \
	VPAND     dqsByte<>(SB), Y9, Y9; \
	VPADDD    Y13, Y9, Y9; \
	VPSRLD    $16, Y12, Y10; \
	VPAND     dqsByte<>(SB), Y10, Y10; \
	VPADDD    Y13, Y10, Y10; \
	VPSRLD    $24, Y12, Y11; \
	VPADDD    Y13, Y11, Y11; \
	VPMAXUD   Y9, Y8, Y12; \
	VPMAXUD   Y11, Y10, Y13; \
	VPMAXUD   Y13, Y12, Y12; \
	VPMAXUD   LENM1(R14), Y12, Y12; \
	VPCMPEQD  LENM1(R14), Y12, Y12; \
	VMOVMSKPS Y12, R12; \
	VPSLLD    $2, Y8, Y8; \
	VPSLLD    $2, Y9, Y9; \
	VPSLLD    $2, Y10, Y10; \
	VPSLLD    $2, Y11, Y11; \
	VMOVDQU   Y8, IDX0(R14); \
	VMOVDQU   Y9, IDX1(R14); \
	VMOVDQU   Y10, IDX2(R14); \
	VMOVDQU   Y11, IDX3(R14)

// DQS_WEIGHTS stores the weights of the group at v(SI) at W0-W3.
#define DQS_WEIGHTS(v) \
	DQS_VROWS(v+32, X8, Y8, X9, Y9, X10, Y10, X11, Y11); \
	DQS_T4(Y8, Y9, Y10, Y11, Y12, Y13); \
	VMOVUPS Y9, W0(R14); \
	VMOVUPS Y11, W1(R14); \
	VMOVUPS Y12, W2(R14); \
	VMOVUPS Y13, W3(R14)

// func dqsAVX2(verts []SkinVertex, pal []DualQuat, out []SkinnedVertex, base uint32) int
//
// SkinVertex (48 bytes): Pos 0, Normal 12, Joints 24, Palette 28,
// Weights 32. SkinnedVertex (24 bytes): Pos 0, Normal 12.
//
// Registers: SI &verts[k], DI &out[k], CX &verts[n] (n rounded down to a
// multiple of 8), BX pal, R14 the frame; R9-R13, AX, DX, R8 one joint
// slot's eight palette indices times 4 (addressed as (BX)(R*8)), then R12
// the next group's index check (DQS_INDEX); Y0-Y3 the blended real part
// (x y z w), Y4-Y7 the dual part.
TEXT ·dqsAVX2(SB), $736-88
	MOVQ    verts_base+0(FP), SI
	MOVQ    verts_len+8(FP), CX
	MOVQ    pal_base+24(FP), BX
	MOVQ    pal_len+32(FP), R8
	MOVQ    out_base+48(FP), DI
	MOVQ    out_len+56(FP), AX
	CMPQ    AX, CX
	CMOVQLT AX, CX                     // n = min(len(verts), len(out))
	ANDQ    $-8, CX                    // whole groups
	TESTQ   R8, R8
	JZ      done                       // no palette: every index is bad
	CMPQ    R8, $0x40000000
	JA      done                       // indices times 4 must fit in uint32
	TESTQ   CX, CX
	JZ      done
	LEAQ    32(SP), R14
	ANDQ    $-32, R14                  // the frame, aligned
	DECQ    R8
	MOVL    R8, LENM1(R14)             // len(pal) - 1
	VPBROADCASTD LENM1(R14), Y0
	VMOVDQU Y0, LENM1(R14)
	MOVL    base+72(FP), DX
	MOVL    DX, BASEV(R14)
	VPBROADCASTD BASEV(R14), Y0
	VMOVDQU Y0, BASEV(R14)
	LEAQ    (CX)(CX*2), CX
	SHLQ    $4, CX
	ADDQ    SI, CX                     // &verts[n]

	// The first group's indices and weights; each iteration then reads
	// the next group's while the square root and division of its own
	// are under way (they would otherwise hold up the out-of-order core).
	DQS_INDEX(0)
	CMPL    R12, $0xff
	JNE     done
	VMOVUPS NYN(R14), Y0
	VMOVUPS Y0, NY(R14)
	VMOVUPS NZN(R14), Y0
	VMOVUPS Y0, NZ(R14)
	DQS_WEIGHTS(0)

loop:
	// Joint slot 0: R = w0*real, D = w0*dual; its real part kept for the
	// antipodality tests.
	DQS_OFFSETS(IDX0)
	DQS_ROWS(0)
	DQS_T4(Y8, Y9, Y10, Y11, Y12, Y13)
	VMOVUPS Y9, Q0X(R14)
	VMOVUPS Y11, Q0Y(R14)
	VMOVUPS Y12, Q0Z(R14)
	VMOVUPS Y13, Q0W(R14)
	VMULPS  W0(R14), Y9, Y0
	VMULPS  W0(R14), Y11, Y1
	VMULPS  W0(R14), Y12, Y2
	VMULPS  W0(R14), Y13, Y3
	DQS_ROWS(16)
	DQS_T4(Y8, Y9, Y10, Y11, Y12, Y13)
	VMULPS  W0(R14), Y9, Y4
	VMULPS  W0(R14), Y11, Y5
	VMULPS  W0(R14), Y12, Y6
	VMULPS  W0(R14), Y13, Y7

	DQS_JOINT(IDX1, W1)
	DQS_JOINT(IDX2, W2)
	DQS_JOINT(IDX3, W3)

	// inv = 1 / sqrt(((rx² + ry²) + rz²) + rw²) in Y15.
	VMULPS  Y0, Y0, Y8
	VMULPS  Y1, Y1, Y9
	VADDPS  Y9, Y8, Y8
	VMULPS  Y2, Y2, Y9
	VADDPS  Y9, Y8, Y8
	VMULPS  Y3, Y3, Y9
	VADDPS  Y9, Y8, Y8
	VSQRTPS Y8, Y8
	VBROADCASTSS dqsOne<>(SB), Y9
	VDIVPS  Y8, Y9, Y15

	// Meanwhile: positions and normal x to the frame, and the next
	// group's indices (R12: 0xff when all are in range, or no next group)
	// and weights.
	DQS_VROWS(0, X8, Y8, X9, Y9, X10, Y10, X11, Y11)
	DQS_T4(Y8, Y9, Y10, Y11, Y12, Y13)
	VMOVUPS Y9, PX(R14)
	VMOVUPS Y11, PY(R14)
	VMOVUPS Y12, PZ(R14)
	VMOVUPS Y13, NX(R14)
	LEAQ    384(SI), DX
	MOVL    $0xff, R12
	CMPQ    DX, CX
	JAE     rotate
	DQS_INDEX(384)
	DQS_WEIGHTS(384)

rotate:
	VMULPS  Y15, Y0, Y0
	VMULPS  Y15, Y1, Y1
	VMULPS  Y15, Y2, Y2
	VMULPS  Y15, Y3, Y3
	VMULPS  Y15, Y4, Y4
	VMULPS  Y15, Y5, Y5
	VMULPS  Y15, Y6, Y6
	VMULPS  Y15, Y7, Y7

	// T = 2 ((rw d - dw r) + r x d): tx Y8, ty Y9, tz Y10.
	VMULPS Y4, Y3, Y8                  // rw dx
	VMULPS Y0, Y7, Y9                  // dw rx
	VSUBPS Y9, Y8, Y8
	VMULPS Y6, Y1, Y9                  // ry dz
	VMULPS Y5, Y2, Y10                 // rz dy
	VSUBPS Y10, Y9, Y9
	VADDPS Y9, Y8, Y8
	VADDPS Y8, Y8, Y8                  // tx (2x is exact)
	VMULPS Y5, Y3, Y9                  // rw dy
	VMULPS Y1, Y7, Y10                 // dw ry
	VSUBPS Y10, Y9, Y9
	VMULPS Y4, Y2, Y10                 // rz dx
	VMULPS Y6, Y0, Y11                 // rx dz
	VSUBPS Y11, Y10, Y10
	VADDPS Y10, Y9, Y9
	VADDPS Y9, Y9, Y9                  // ty
	VMULPS Y6, Y3, Y10                 // rw dz
	VMULPS Y2, Y7, Y11                 // dw rz
	VSUBPS Y11, Y10, Y10
	VMULPS Y5, Y0, Y11                 // rx dy
	VMULPS Y4, Y1, Y12                 // ry dx
	VSUBPS Y12, Y11, Y11
	VADDPS Y11, Y10, Y10
	VADDPS Y10, Y10, Y10               // tz

	// Positions: px Y5, py Y7, pz Y11.
	VMOVUPS PX(R14), Y5
	VMOVUPS PY(R14), Y7
	VMOVUPS PZ(R14), Y11

	// U = r x p + rw p: ux Y4, uy Y6, uz Y12.
	VMULPS Y11, Y1, Y4                 // ry pz
	VMULPS Y7, Y2, Y6                  // rz py
	VSUBPS Y6, Y4, Y4
	VMULPS Y5, Y3, Y6                  // rw px
	VADDPS Y6, Y4, Y4
	VMULPS Y5, Y2, Y6                  // rz px
	VMULPS Y11, Y0, Y12                // rx pz
	VSUBPS Y12, Y6, Y6
	VMULPS Y7, Y3, Y12                 // rw py
	VADDPS Y12, Y6, Y6
	VMULPS Y7, Y0, Y12                 // rx py
	VMULPS Y5, Y1, Y13                 // ry px
	VSUBPS Y13, Y12, Y12
	VMULPS Y11, Y3, Y13                // rw pz
	VADDPS Y13, Y12, Y12
	// p' = (p + 2 r x U) + T: x Y5, y Y7, z Y11.
	VMULPS Y12, Y1, Y13                // ry uz
	VMULPS Y6, Y2, Y14                 // rz uy
	VSUBPS Y14, Y13, Y13
	VADDPS Y13, Y13, Y13
	VADDPS Y13, Y5, Y5
	VADDPS Y8, Y5, Y5
	VMULPS Y4, Y2, Y13                 // rz ux
	VMULPS Y12, Y0, Y14                // rx uz
	VSUBPS Y14, Y13, Y13
	VADDPS Y13, Y13, Y13
	VADDPS Y13, Y7, Y7
	VADDPS Y9, Y7, Y7
	VMULPS Y6, Y0, Y13                 // rx uy
	VMULPS Y4, Y1, Y14                 // ry ux
	VSUBPS Y14, Y13, Y13
	VADDPS Y13, Y13, Y13
	VADDPS Y13, Y11, Y11
	VADDPS Y10, Y11, Y11

	// Normals, the same rotation from the frame: U in Y4, Y6, Y8; n' in
	// Y9, Y10, Y12.
	VMULPS NZ(R14), Y1, Y4             // ry nz
	VMULPS NY(R14), Y2, Y6             // rz ny
	VSUBPS Y6, Y4, Y4
	VMULPS NX(R14), Y3, Y6             // rw nx
	VADDPS Y6, Y4, Y4
	VMULPS NX(R14), Y2, Y6             // rz nx
	VMULPS NZ(R14), Y0, Y8             // rx nz
	VSUBPS Y8, Y6, Y6
	VMULPS NY(R14), Y3, Y8             // rw ny
	VADDPS Y8, Y6, Y6
	VMULPS NY(R14), Y0, Y8             // rx ny
	VMULPS NX(R14), Y1, Y9             // ry nx
	VSUBPS Y9, Y8, Y8
	VMULPS NZ(R14), Y3, Y9             // rw nz
	VADDPS Y9, Y8, Y8
	VMULPS Y8, Y1, Y9                  // ry uz
	VMULPS Y6, Y2, Y10                 // rz uy
	VSUBPS Y10, Y9, Y9
	VADDPS Y9, Y9, Y9
	VADDPS NX(R14), Y9, Y9
	VMULPS Y4, Y2, Y10                 // rz ux
	VMULPS Y8, Y0, Y12                 // rx uz
	VSUBPS Y12, Y10, Y10
	VADDPS Y10, Y10, Y10
	VADDPS NY(R14), Y10, Y10
	VMULPS Y6, Y0, Y12                 // rx uy
	VMULPS Y4, Y1, Y13                 // ry ux
	VSUBPS Y13, Y12, Y12
	VADDPS Y12, Y12, Y12
	VADDPS NZ(R14), Y12, Y12

	// Store: rows [px py pz nx] of vertices i and i+4 (16 bytes each) and
	// [ny nz] (8 bytes): the group's 192 bytes and nothing else.
	DQS_T4(Y5, Y7, Y11, Y9, Y13, Y14)  // rows: vertices 0|4 Y7, 1|5 Y9, 2|6 Y13, 3|7 Y14
	VMOVUPS      X7, 0(DI)
	VEXTRACTF128 $1, Y7, 96(DI)
	VMOVUPS      X9, 24(DI)
	VEXTRACTF128 $1, Y9, 120(DI)
	VMOVUPS      X13, 48(DI)
	VEXTRACTF128 $1, Y13, 144(DI)
	VMOVUPS      X14, 72(DI)
	VEXTRACTF128 $1, Y14, 168(DI)
	VUNPCKLPS    Y12, Y10, Y0          // [ny nz] of vertices 0 1 | 4 5
	VUNPCKHPS    Y12, Y10, Y1          // 2 3 | 6 7
	VMOVQ        X0, 16(DI)
	VMOVHPS      X0, 40(DI)
	VMOVQ        X1, 64(DI)
	VMOVHPS      X1, 88(DI)
	VEXTRACTF128 $1, Y0, X0
	VEXTRACTF128 $1, Y1, X1
	VMOVQ        X0, 112(DI)
	VMOVHPS      X0, 136(DI)
	VMOVQ        X1, 160(DI)
	VMOVHPS      X1, 184(DI)

	VMOVUPS NYN(R14), Y0               // the next group's normals y, z
	VMOVUPS Y0, NY(R14)
	VMOVUPS NZN(R14), Y0
	VMOVUPS Y0, NZ(R14)

	// The vertices 2 KiB (some 43) ahead into L1, one prefetch per cache
	// line of the 384 bytes a group reads: faster on meshes streamed from
	// L3 or memory (BENCHMARKS.md). A prefetch never faults, so reading
	// past the slice is harmless.
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)

	ADDQ $384, SI
	ADDQ $192, DI
	CMPL R12, $0xff
	JNE  done                          // the next group has a bad index
	CMPQ SI, CX
	JB   loop

done:
	// Vertices completed: (SI - &verts[0]) / 48, as (bytes / 16) / 3.
	VZEROUPPER
	MOVQ SI, AX
	SUBQ verts_base+0(FP), AX
	SHRQ $4, AX
	MOVQ $0xaaaaaaaaaaaaaaab, DX
	MULQ DX
	SHRQ $1, DX
	MOVQ DX, ret+80(FP)
	RET
