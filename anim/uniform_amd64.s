//go:build !purego

#include "textflag.h"

// Constants: 1.0, the float sign bit, then the integers 1, 2, 3.
DATA uniformConst<>+0(SB)/4, $0x3f800000
DATA uniformConst<>+4(SB)/4, $0x80000000
DATA uniformConst<>+8(SB)/4, $1
DATA uniformConst<>+12(SB)/4, $2
DATA uniformConst<>+16(SB)/4, $3
GLOBL uniformConst<>(SB), RODATA|NOPTR, $20

// uniformBuf's layout (bytes): q[f][c][k] at 384f + 128c + 4k, drop[f][k]
// at 768 + 128f + 4k, rot[k] at 1024 + 4k, off[k] at 1152 + 4k,
// mask[k] at 1280 + 16k.

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

// STORE4 stores the low 128 bits of V at pose + 4*off[J] under mask[J]
// (lane J of the group: off at 1152+4J(BX), mask at 1280+16J(DX)).
#define STORE4(V, J) \
	MOVLQSX (1152+4*J)(BX), AX \
	VMOVDQU (1280+16*J)(DX), X8 \
	VMASKMOVPS V, X8, (SI)(AX*4)

// func uniformFinishAVX2(b *uniformBuf, groups int, alpha float32, pose []float32)
TEXT ·uniformFinishAVX2(SB), NOSPLIT, $0-48
	MOVQ b+0(FP), BX
	MOVQ b+0(FP), DX
	MOVQ groups+8(FP), CX
	VBROADCASTSS alpha+16(FP), Y15
	MOVQ pose_base+24(FP), SI
	VXORPS Y14, Y14, Y14
	VPBROADCASTD uniformConst<>+8(SB), Y11
	VPBROADCASTD uniformConst<>+12(SB), Y12
	VPBROADCASTD uniformConst<>+16(SB), Y13
	TESTQ CX, CX
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

	ADDQ $32, BX
	ADDQ $128, DX
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET
