//go:build !purego

#include "textflag.h"

// Constants: 1.0, the float sign bit, then the integers 1, 2, 3.
DATA uniformConst<>+0(SB)/4, $0x3f800000
DATA uniformConst<>+4(SB)/4, $0x80000000
DATA uniformConst<>+8(SB)/4, $1
DATA uniformConst<>+12(SB)/4, $2
DATA uniformConst<>+16(SB)/4, $3
GLOBL uniformConst<>(SB), RODATA|NOPTR, $20

// The store mask of a lane, ORed with its rot word: x, y, z always.
DATA uniformXYZ<>+0(SB)/4, $-1
DATA uniformXYZ<>+4(SB)/4, $-1
DATA uniformXYZ<>+8(SB)/4, $-1
DATA uniformXYZ<>+12(SB)/4, $0
GLOBL uniformXYZ<>(SB), RODATA|NOPTR, $16

// uniformBuf's layout (bytes): q[f][c][k] at 384f + 128c + 4k, drop[f][k]
// at 768 + 128f + 4k, rot[k] at 1024 + 4k, off[k] at 1152 + 4k.

// PLACE rebuilds each lane's rotation from its stored components A, B, C
// (in stored order) and the dropped component (int32 at memory DROP),
// format.UniformRebuild then uniformPlace: r = sqrt(max(1 - (a² + b² +
// c²), 0)) goes where the dropped component is, the stored ones around it
// in order; x, y, z, w come out in A, B, C, W. Needs 1, 2, 3 (int32) in
// Y11-Y13 and zero in Y14; clobbers Y8, Y9, Y10.
#define PLACE(A, B, C, W, DROP) \
	VMULPS A, A, Y8 \
	VMULPS B, B, Y9 \
	VADDPS Y9, Y8, Y8 \
	VMULPS C, C, Y9 \
	VADDPS Y9, Y8, Y8 \
	VBROADCASTSS uniformConst<>+0(SB), Y9 \
	VSUBPS Y8, Y9, Y8 \
	VMAXPS Y14, Y8, Y8 \
	VSQRTPS Y8, Y8 \
	VMOVDQU DROP, Y10 \
	VPCMPEQD Y13, Y10, Y9 \
	VBLENDVPS Y9, Y8, C, W \
	VPCMPEQD Y12, Y10, Y9 \
	VBLENDVPS Y9, Y8, C, C \
	VPCMPGTD Y10, Y12, Y9 \
	VBLENDVPS Y9, B, C, C \
	VPCMPEQD Y11, Y10, Y9 \
	VBLENDVPS Y9, Y8, B, B \
	VPCMPEQD Y14, Y10, Y9 \
	VBLENDVPS Y9, A, B, B \
	VBLENDVPS Y9, Y8, A, A

// LERP: A = A0 + (A - A0)*alpha.
#define LERP(A0, A) \
	VSUBPS A0, A, A \
	VMULPS Y15, A, A \
	VADDPS A, A0, A

// STORE4 stores the low 128 bits of V at pose + 4*off[J] (x, y, z, and w
// for a rotation) if lane J of the group holds a track (R12: the tracks
// left, this group's included).
#define STORE4(V, J) \
	CMPQ R12, $J \
	JLE gnext \
	MOVLQSX (1152+4*J)(BX), AX \
	VPBROADCASTD (1024+4*J)(BX), X8 \
	VPOR uniformXYZ<>(SB), X8, X8 \
	VMASKMOVPS V, X8, (SI)(AX*4)

// func uniformFinishAVX2(b *uniformBuf, n int, alpha float32, pose []float32)
TEXT ·uniformFinishAVX2(SB), NOSPLIT, $0-48
	MOVQ b+0(FP), BX
	MOVQ n+8(FP), R12
	VBROADCASTSS alpha+16(FP), Y15
	MOVQ pose_base+24(FP), SI
	VXORPS Y14, Y14, Y14
	VPBROADCASTD uniformConst<>+8(SB), Y11
	VPBROADCASTD uniformConst<>+12(SB), Y12
	VPBROADCASTD uniformConst<>+16(SB), Y13
	TESTQ R12, R12
	JLE done

loop:
	// Frame 0 in Y0-Y3, frame 1 in Y4-Y7, dropped components rebuilt.
	VMOVUPS 0(BX), Y0
	VMOVUPS 128(BX), Y1
	VMOVUPS 256(BX), Y2
	PLACE(Y0, Y1, Y2, Y3, 768(BX))
	VMOVUPS 384(BX), Y4
	VMOVUPS 512(BX), Y5
	VMOVUPS 640(BX), Y6
	PLACE(Y4, Y5, Y6, Y7, 896(BX))

	// Rotations with a negative dot product: frame 1 negated.
	VMULPS Y0, Y4, Y8
	VMULPS Y1, Y5, Y9
	VADDPS Y9, Y8, Y8
	VMULPS Y2, Y6, Y9
	VADDPS Y9, Y8, Y8
	VMULPS Y3, Y7, Y9
	VADDPS Y9, Y8, Y8
	VCMPPS $1, Y14, Y8, Y8 // dot < 0
	VANDPS 1024(BX), Y8, Y8
	VBROADCASTSS uniformConst<>+4(SB), Y9
	VANDPS Y9, Y8, Y8
	VXORPS Y8, Y4, Y4
	VXORPS Y8, Y5, Y5
	VXORPS Y8, Y6, Y6
	VXORPS Y8, Y7, Y7

	// The lerp (translations and scales: the result).
	LERP(Y0, Y4)
	LERP(Y1, Y5)
	LERP(Y2, Y6)
	LERP(Y3, Y7)

	// Normalised: q / sqrt(|q|²) where |q|² > 0, else (0, 0, 0, 1).
	VMULPS Y4, Y4, Y8
	VMULPS Y5, Y5, Y9
	VADDPS Y9, Y8, Y8
	VMULPS Y6, Y6, Y9
	VADDPS Y9, Y8, Y8
	VMULPS Y7, Y7, Y9
	VADDPS Y9, Y8, Y8
	VCMPPS $0x0e, Y14, Y8, Y9 // |q|² > 0
	VSQRTPS Y8, Y8
	VBROADCASTSS uniformConst<>+0(SB), Y10
	VDIVPS Y8, Y10, Y8
	VMULPS Y8, Y4, Y0
	VMULPS Y8, Y5, Y1
	VMULPS Y8, Y6, Y2
	VMULPS Y8, Y7, Y3
	VANDPS Y9, Y0, Y0
	VANDPS Y9, Y1, Y1
	VANDPS Y9, Y2, Y2
	VBLENDVPS Y9, Y3, Y10, Y3

	// Rotation lanes take the normalised value, the others the lerp
	// (their w is not stored).
	VMOVDQU 1024(BX), Y9
	VBLENDVPS Y9, Y0, Y4, Y0
	VBLENDVPS Y9, Y1, Y5, Y1
	VBLENDVPS Y9, Y2, Y6, Y2

	// Transpose to (x, y, z, w) per lane and store under the lanes' masks.
	VUNPCKLPS Y1, Y0, Y4
	VUNPCKHPS Y1, Y0, Y5
	VUNPCKLPS Y3, Y2, Y6
	VUNPCKHPS Y3, Y2, Y7
	VUNPCKLPD Y6, Y4, Y0
	VUNPCKHPD Y6, Y4, Y1
	VUNPCKLPD Y7, Y5, Y2
	VUNPCKHPD Y7, Y5, Y3
	STORE4(X0, 0)
	STORE4(X1, 1)
	STORE4(X2, 2)
	STORE4(X3, 3)
	VEXTRACTF128 $1, Y0, X0
	VEXTRACTF128 $1, Y1, X1
	VEXTRACTF128 $1, Y2, X2
	VEXTRACTF128 $1, Y3, X3
	STORE4(X0, 4)
	STORE4(X1, 5)
	STORE4(X2, 6)
	STORE4(X3, 7)

gnext:
	ADDQ $32, BX
	SUBQ $8, R12
	JGT loop

done:
	VZEROUPPER
	RET

// Decoding, uniformDecodeSameAVX2: one track per iteration, its three
// components in the lanes of an xmm register. uniformConsts's layout
// (bytes): ladder 0, inv 64, u255 128, u65535 132, perm 144, shift 208,
// mask 720.

// VPERMD index taking the low dword of each qword.
DATA uniformEven<>+0(SB)/4, $0
DATA uniformEven<>+4(SB)/4, $2
DATA uniformEven<>+8(SB)/4, $4
DATA uniformEven<>+12(SB)/4, $6
DATA uniformEven<>+16(SB)/4, $0
DATA uniformEven<>+20(SB)/4, $2
DATA uniformEven<>+24(SB)/4, $4
DATA uniformEven<>+28(SB)/4, $6
GLOBL uniformEven<>(SB), RODATA|NOPTR, $32

// FRAME decodes a frame's three components from the stream bits at bit
// position POS (a GPR): the 64 bits there, shifted by 0, n and 2n and
// masked (tables by code*32, in AX), then OUT = a + b*q with a in X3, b
// in X4. Clobbers DX, R13, Y6.
#define FRAME(POS, OUT) \
	MOVL POS, DX \
	SHRL $3, DX \
	MOVQ (SI)(DX*1), R13 \
	MOVL POS, DX \
	ANDL $7, DX \
	SHRXQ DX, R13, R13 \
	VMOVQ R13, X6 \
	VPBROADCASTQ X6, Y6 \
	VPSRLVQ 208(R14)(AX*1), Y6, Y6 \
	VPAND 720(R14)(AX*1), Y6, Y6 \
	VPERMD Y6, Y13, Y6 \
	VCVTDQ2PS X6, X6 \
	VMULPS X6, X4, X6 \
	VADDPS X6, X3, OUT

// STORE3 stores lanes 0-2 of X at OFF, OFF+128, OFF+256 from BX (a
// frame's components of this track in the buffer).
#define STORE3(X, OFF) \
	VMOVSS X, OFF(BX) \
	VEXTRACTPS $1, X, (OFF+128)(BX) \
	VEXTRACTPS $2, X, (OFF+256)(BX)

// func uniformDecodeSameAVX2(sb []byte, rng []uint32, rateAt, rngAt, bit0, bit1 uint32, n int, buf *uniformBuf, k *uniformConsts, tracks []uint32, kindOff *[4]int, poseLen int) (uint32, uint32)
TEXT ·uniformDecodeSameAVX2(SB), NOSPLIT, $16-136
	MOVQ sb_base+0(FP), SI
	MOVQ rng_base+24(FP), DI
	MOVL rateAt+48(FP), R8
	MOVL rngAt+52(FP), R9
	ADDQ SI, R9
	MOVL bit0+56(FP), R10
	MOVL bit1+60(FP), R11
	MOVQ n+64(FP), CX
	TESTQ CX, CX
	JLE dret
	ADDQ R8, CX
	MOVQ CX, 0(SP) // rateAt of the end
	MOVQ poseLen+120(FP), CX
	SUBQ $4, CX
	MOVQ CX, 8(SP) // the largest pose offset
	MOVQ buf+72(FP), BX
	MOVQ k+80(FP), R14
	MOVQ tracks_base+88(FP), CX
	VBROADCASTSS 128(R14), X15
	VBROADCASTSS 132(R14), X14
	VMOVDQU uniformEven<>(SB), Y13

dloop:
	// The track's pose offset and whether it is a rotation, from its
	// descriptor (bone | kind<<16; validated: the offset is within the
	// pose, but an offset beyond it becomes 0).
	MOVL (CX), DX
	MOVL DX, R13
	ANDL $0xffff, R13
	SHRL $16, DX
	ANDL $3, DX
	LEAQ (R13)(R13*2), R13
	SHLQ $2, R13
	MOVQ kindOff+112(FP), AX
	ADDQ (AX)(DX*8), R13
	CMPQ R13, 8(SP)
	JLS doff
	XORL R13, R13

doff:
	MOVL R13, 1152(BX)
	XORL AX, AX
	CMPL DX, $1
	SETEQ AL
	NEGL AX
	MOVL AX, 1024(BX)

	// Rate byte: code (AX), drop (DX); n (R12).
	MOVBLZX (SI)(R8*1), AX
	MOVL AX, DX
	ANDL $15, AX
	SHRL $4, DX
	ANDL $3, DX
	MOVL DX, 768(BX)
	MOVL DX, 896(BX)
	MOVL (R14)(AX*4), R12
	SHLQ $4, DX
	// The clip range's minimum and extent of the stored components.
	VMOVUPS (DI), X1
	VPERMILPS 144(R14)(DX*1), X1, X1
	VMOVUPS 16(DI), X2
	VPERMILPS 144(R14)(DX*1), X2, X2
	TESTL R12, R12
	JZ dzero
	// a = min + ext*(rm/255), b = ext*(re/255)*inv.
	VPMOVZXBD (R9), X3
	VCVTDQ2PS X3, X3
	VMULPS X15, X3, X3
	VMULPS X3, X2, X3
	VADDPS X3, X1, X3
	VPMOVZXBD 3(R9), X4
	VCVTDQ2PS X4, X4
	VMULPS X15, X4, X4
	VMULPS X4, X2, X4
	VBROADCASTSS 64(R14)(AX*4), X5
	VMULPS X5, X4, X4
	SHLQ $5, AX
	FRAME(R10, X7)
	STORE3(X7, 0)
	FRAME(R11, X8)
	STORE3(X8, 384)
	LEAL (R12)(R12*2), DX
	ADDL DX, R10
	ADDL DX, R11
	JMP dnext

dzero:
	// The constant code: min + ext*(u/65535), both frames.
	VPMOVZXWD (R9), X5
	VCVTDQ2PS X5, X5
	VMULPS X14, X5, X5
	VMULPS X5, X2, X5
	VADDPS X5, X1, X5
	STORE3(X5, 0)
	STORE3(X5, 384)

dnext:
	INCQ R8
	ADDQ $6, R9
	ADDQ $32, DI
	ADDQ $4, BX
	ADDQ $16, CX
	CMPQ R8, 0(SP)
	JLT dloop

dret:
	MOVL R10, ret+128(FP)
	MOVL R11, ret1+132(FP)
	VZEROUPPER
	RET
