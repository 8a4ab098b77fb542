//go:build !purego

#include "textflag.h"

// AVX2 dual-quaternion skinning of one run of vertices, without FMA, in
// dqsGo's order of operations (see skin_amd64.go).

DATA dqsSign<>+0(SB)/8, $0x8000000080000000
DATA dqsSign<>+8(SB)/8, $0x8000000080000000
DATA dqsSign<>+16(SB)/8, $0x8000000080000000
DATA dqsSign<>+24(SB)/8, $0x8000000080000000
GLOBL dqsSign<>(SB), RODATA|NOPTR, $32
DATA dqsOne<>+0(SB)/4, $0x3f800000
GLOBL dqsOne<>(SB), RODATA|NOPTR, $4


// func dqsAVX2(verts []SkinVertex, pal []DualQuat, out []SkinnedVertex, base uint32) int
//
// Two vertices per iteration, A in the low and B in the high 128-bit half
// of every ymm register (all shuffles stay within halves).
//
// Registers: SI &verts[k], DI &out[k], BX pal, R8 len(pal), CX n rounded
// down to even, R13 k, R14 base, AX &pal[Palette + base] (pal on the exact
// path), R9-R12 joint byte offsets from AX (A's, then B's); Y0-Y3 the real parts of the four dual quaternions [A | B],
// Y4-Y7 their dual parts.
TEXT ·dqsAVX2(SB), NOSPLIT, $0-88
	MOVQ    verts_base+0(FP), SI
	MOVQ    verts_len+8(FP), CX
	MOVQ    pal_base+24(FP), BX
	MOVQ    pal_len+32(FP), R8
	MOVQ    out_base+48(FP), DI
	MOVQ    out_len+56(FP), AX
	CMPQ    AX, CX
	CMOVQLT AX, CX                     // n = min(len(verts), len(out))
	ANDQ    $-2, CX                    // whole pairs
	MOVL    base+72(FP), R14
	XORQ    R13, R13
	TESTQ   CX, CX
	JLE     done

loop:
	// A's indices Palette + base + joint in uint32 (jointIndices), all
	// four checked against len(pal) before its dual quaternions are read;
	// then B's. Any bad index ends the run before the pair is written.
	// Fast check: Palette + base + 255 < len(pal) (64-bit, no wrap-around)
	// means every index is in range and AX + joint*32 addresses it.
	MOVL    28(SI), AX
	ADDL    R14, AX
	LEAQ    255(AX), DX
	CMPQ    DX, R8
	JAE     exactA
	SHLQ    $5, AX
	ADDQ    BX, AX                     // &pal[Palette + base]
	MOVBLZX 24(SI), R9
	MOVBLZX 25(SI), R10
	MOVBLZX 26(SI), R11
	MOVBLZX 27(SI), R12
	SHLQ    $5, R9
	SHLQ    $5, R10
	SHLQ    $5, R11
	SHLQ    $5, R12

loadA:
	VMOVUPS (AX)(R9*1), X0
	VMOVUPS 16(AX)(R9*1), X4
	VMOVUPS (AX)(R10*1), X1
	VMOVUPS 16(AX)(R10*1), X5
	VMOVUPS (AX)(R11*1), X2
	VMOVUPS 16(AX)(R11*1), X6
	VMOVUPS (AX)(R12*1), X3
	VMOVUPS 16(AX)(R12*1), X7

	MOVL    76(SI), AX
	ADDL    R14, AX
	LEAQ    255(AX), DX
	CMPQ    DX, R8
	JAE     exactB
	SHLQ    $5, AX
	ADDQ    BX, AX                     // &pal[Palette + base]
	MOVBLZX 72(SI), R9
	MOVBLZX 73(SI), R10
	MOVBLZX 74(SI), R11
	MOVBLZX 75(SI), R12
	SHLQ    $5, R9
	SHLQ    $5, R10
	SHLQ    $5, R11
	SHLQ    $5, R12

loadB:
	VINSERTF128 $1, (AX)(R9*1), Y0, Y0
	VINSERTF128 $1, 16(AX)(R9*1), Y4, Y4
	VINSERTF128 $1, (AX)(R10*1), Y1, Y1
	VINSERTF128 $1, 16(AX)(R10*1), Y5, Y5
	VINSERTF128 $1, (AX)(R11*1), Y2, Y2
	VINSERTF128 $1, 16(AX)(R11*1), Y6, Y6
	VINSERTF128 $1, (AX)(R12*1), Y3, Y3
	VINSERTF128 $1, 16(AX)(R12*1), Y7, Y7

	// dot(q0.real, qk.real) for k = 1..3 in dot4's order: the products,
	// transposed within each half (lane 0 a zero row), summed x + y + z + w.
	VMULPS      Y0, Y1, Y8             // P1
	VMULPS      Y0, Y2, Y9             // P2
	VMULPS      Y0, Y3, Y10            // P3
	VXORPS      Y11, Y11, Y11
	VUNPCKLPS   Y8, Y11, Y12           // [0 P1x 0 P1y]
	VUNPCKHPS   Y8, Y11, Y13           // [0 P1z 0 P1w]
	VUNPCKLPS   Y10, Y9, Y8            // [P2x P3x P2y P3y]
	VUNPCKHPS   Y10, Y9, Y9            // [P2z P3z P2w P3w]
	VUNPCKLPD   Y8, Y12, Y10           // x products
	VUNPCKHPD   Y8, Y12, Y11           // y
	VUNPCKLPD   Y9, Y13, Y12           // z
	VUNPCKHPD   Y9, Y13, Y13           // w
	VADDPS      Y11, Y10, Y10
	VADDPS      Y12, Y10, Y10
	VADDPS      Y13, Y10, Y10          // [0 d1 d2 d3]
	VXORPS      Y11, Y11, Y11
	VCMPPS      $1, Y11, Y10, Y10      // d < 0
	VANDPS      dqsSign<>(SB), Y10, Y10
	VMOVUPS     32(SI), X8
	VINSERTF128 $1, 80(SI), Y8, Y8
	VXORPS      Y10, Y8, Y8            // weights, antipodal ones negated

	// Blend real = w0*R0 + w1*R1 + w2*R2 + w3*R3 left to right, dual alike.
	VPERMILPS $0x00, Y8, Y9
	VMULPS    Y9, Y0, Y0
	VMULPS    Y9, Y4, Y4
	VPERMILPS $0x55, Y8, Y9
	VMULPS    Y9, Y1, Y1
	VADDPS    Y1, Y0, Y0
	VMULPS    Y9, Y5, Y5
	VADDPS    Y5, Y4, Y4
	VPERMILPS $0xaa, Y8, Y9
	VMULPS    Y9, Y2, Y2
	VADDPS    Y2, Y0, Y0
	VMULPS    Y9, Y6, Y6
	VADDPS    Y6, Y4, Y4
	VPERMILPS $0xff, Y8, Y9
	VMULPS    Y9, Y3, Y3
	VADDPS    Y3, Y0, Y0
	VMULPS    Y9, Y7, Y7
	VADDPS    Y7, Y4, Y4               // Y0 = R, Y4 = D

	// inv = 1 / sqrt(((rx² + ry²) + rz²) + rw²) in lane 0, times R and D.
	VMULPS       Y0, Y0, Y1
	VMOVSHDUP    Y1, Y2
	VADDPS       Y2, Y1, Y3
	VUNPCKHPD    Y1, Y1, Y2
	VADDPS       Y2, Y3, Y3
	VMOVSHDUP    Y2, Y2
	VADDPS       Y2, Y3, Y3
	VSQRTPS      Y3, Y3
	VBROADCASTSS dqsOne<>(SB), Y2
	VDIVPS       Y3, Y2, Y2
	VPERMILPS    $0x00, Y2, Y2
	VMULPS       Y2, Y0, Y0
	VMULPS       Y2, Y4, Y4

	// T = 2 ((rw D - dw R) + (R.yzx D.zxy - R.zxy D.yzx))
	VPERMILPS $0xff, Y0, Y2            // rw
	VPERMILPS $0xff, Y4, Y3            // dw
	VMULPS    Y4, Y2, Y1
	VMULPS    Y0, Y3, Y7
	VSUBPS    Y7, Y1, Y1
	VPERMILPS $0xc9, Y0, Y5            // R.yzx
	VPERMILPS $0xd2, Y0, Y6            // R.zxy
	VPERMILPS $0xd2, Y4, Y7
	VPERMILPS $0xc9, Y4, Y8
	VMULPS    Y7, Y5, Y7
	VMULPS    Y8, Y6, Y8
	VSUBPS    Y8, Y7, Y7
	VADDPS    Y7, Y1, Y1
	VADDPS    Y1, Y1, Y1               // T (2x is exact)

	// Position: U = (R.yzx P.zxy - R.zxy P.yzx) + rw P, then
	// (P + 2 (R.yzx U.zxy - R.zxy U.yzx)) + T.
	VMOVUPS     0(SI), X10
	VINSERTF128 $1, 48(SI), Y10, Y10
	VPERMILPS   $0xd2, Y10, Y7
	VPERMILPS   $0xc9, Y10, Y8
	VMULPS      Y7, Y5, Y7
	VMULPS      Y8, Y6, Y8
	VSUBPS      Y8, Y7, Y7
	VMULPS      Y10, Y2, Y8
	VADDPS      Y8, Y7, Y7
	VPERMILPS   $0xd2, Y7, Y8
	VPERMILPS   $0xc9, Y7, Y9
	VMULPS      Y8, Y5, Y8
	VMULPS      Y9, Y6, Y9
	VSUBPS      Y9, Y8, Y8
	VADDPS      Y8, Y8, Y8
	VADDPS      Y8, Y10, Y8
	VADDPS      Y1, Y8, Y11            // [px py pz -]

	// Normal: the same rotation, no translation. Lane 3 of the load is
	// the joints word, as a float a denormal, which would cost a
	// microcode assist in every operation on it: it is zeroed.
	VMOVUPS     12(SI), X10
	VINSERTF128 $1, 60(SI), Y10, Y10
	VXORPS      Y13, Y13, Y13
	VBLENDPS    $0x88, Y13, Y10, Y10
	VPERMILPS   $0xd2, Y10, Y7
	VPERMILPS   $0xc9, Y10, Y8
	VMULPS      Y7, Y5, Y7
	VMULPS      Y8, Y6, Y8
	VSUBPS      Y8, Y7, Y7
	VMULPS      Y10, Y2, Y8
	VADDPS      Y8, Y7, Y7
	VPERMILPS   $0xd2, Y7, Y8
	VPERMILPS   $0xc9, Y7, Y9
	VMULPS      Y8, Y5, Y8
	VMULPS      Y9, Y6, Y9
	VSUBPS      Y9, Y8, Y8
	VADDPS      Y8, Y8, Y8
	VADDPS      Y8, Y10, Y12           // [nx ny nz -]

	// Store the pair's 48 bytes: 16-byte stores whose garbage lane 3 the
	// next store (stores retire in program order) overwrites, and B's
	// normal as 8 + 4 bytes, so nothing beyond the pair is written.
	VMOVUPS      X11, 0(DI)            // A: px py pz -
	VMOVUPS      X12, 12(DI)           // A: nx ny nz -
	VEXTRACTF128 $1, Y11, 24(DI)       // B: px py pz -
	VEXTRACTF128 $1, Y12, X13
	VMOVQ        X13, 36(DI)           // B: nx ny
	VEXTRACTPS   $2, X13, 44(DI)       // B: nz

	ADDQ $96, SI
	ADDQ $48, DI
	ADDQ $2, R13
	CMPQ R13, CX
	JB   loop

	JMP  done

	// Exact check of A (near the end of the palette, or uint32
	// wrap-around): each index AX + joint mod 2^32 against len(pal).
exactA:
	MOVBLZX 24(SI), R9
	ADDL    AX, R9
	CMPQ    R9, R8
	JAE     done
	MOVBLZX 25(SI), R10
	ADDL    AX, R10
	CMPQ    R10, R8
	JAE     done
	MOVBLZX 26(SI), R11
	ADDL    AX, R11
	CMPQ    R11, R8
	JAE     done
	MOVBLZX 27(SI), R12
	ADDL    AX, R12
	CMPQ    R12, R8
	JAE     done
	SHLQ    $5, R9
	SHLQ    $5, R10
	SHLQ    $5, R11
	SHLQ    $5, R12
	MOVQ    BX, AX                     // the offsets are from pal[0]
	JMP     loadA

	// Exact check of B (near the end of the palette, or uint32
	// wrap-around): each index AX + joint mod 2^32 against len(pal).
exactB:
	MOVBLZX 72(SI), R9
	ADDL    AX, R9
	CMPQ    R9, R8
	JAE     done
	MOVBLZX 73(SI), R10
	ADDL    AX, R10
	CMPQ    R10, R8
	JAE     done
	MOVBLZX 74(SI), R11
	ADDL    AX, R11
	CMPQ    R11, R8
	JAE     done
	MOVBLZX 75(SI), R12
	ADDL    AX, R12
	CMPQ    R12, R8
	JAE     done
	SHLQ    $5, R9
	SHLQ    $5, R10
	SHLQ    $5, R11
	SHLQ    $5, R12
	MOVQ    BX, AX                     // the offsets are from pal[0]
	JMP     loadB

done:
	VZEROUPPER
	MOVQ R13, ret+80(FP)
	RET
