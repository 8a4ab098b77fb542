//go:build !purego

#include "textflag.h"

// AVX2+FMA local-to-model chain of one skeleton; see pose_amd64.go.
//
// A ymm register holds two matrix columns, [low 128 bits | high 128 bits]:
// L01 = [col0 | col1], L23 = [col2 | col3] of the local matrix, and so on.
// Lane k of col c is element 4*c+k of a Mat4.

// Operand permutations of the rotation basis: col = e + A1*B1 + A2*B2 with
// A = vpermilps(q), B = vpermilps(q * mulB), index x=0 y=1 z=2 w=3. Lane 3
// is don't-care (masked at the store).
//
// col0 = (1-(yy+zz), xy+wz, xz-wy): B source (2x, -2y, -2z, 2w)
//        A1 (y,y,z) B1 (y,x,x)  A2 (z,z,w) B2 (z,w,y)
// col1 = (xy-wz, 1-(xx+zz), yz+wx): B source (-2x, 2y, -2z, 2w)
//        A1 (x,x,z) B1 (y,x,y)  A2 (w,z,x) B2 (z,z,w)
// col2 = (xz+wy, yz-wx, 1-(xx+yy)): B source (-2x, -2y, 2z, 2w)
//        A1 (x,y,x) B1 (z,z,x)  A2 (y,w,y) B2 (w,x,y)
// (the high half of the col2 register is overwritten by the translation).
DATA poseA1_01<>+0(SB)/4, $1
DATA poseA1_01<>+4(SB)/4, $1
DATA poseA1_01<>+8(SB)/4, $2
DATA poseA1_01<>+12(SB)/4, $3
DATA poseA1_01<>+16(SB)/4, $0
DATA poseA1_01<>+20(SB)/4, $0
DATA poseA1_01<>+24(SB)/4, $2
DATA poseA1_01<>+28(SB)/4, $3
GLOBL poseA1_01<>(SB), RODATA|NOPTR, $32

DATA poseB1_01<>+0(SB)/4, $1
DATA poseB1_01<>+4(SB)/4, $0
DATA poseB1_01<>+8(SB)/4, $0
DATA poseB1_01<>+12(SB)/4, $3
DATA poseB1_01<>+16(SB)/4, $1
DATA poseB1_01<>+20(SB)/4, $0
DATA poseB1_01<>+24(SB)/4, $1
DATA poseB1_01<>+28(SB)/4, $3
GLOBL poseB1_01<>(SB), RODATA|NOPTR, $32

DATA poseA2_01<>+0(SB)/4, $2
DATA poseA2_01<>+4(SB)/4, $2
DATA poseA2_01<>+8(SB)/4, $3
DATA poseA2_01<>+12(SB)/4, $3
DATA poseA2_01<>+16(SB)/4, $3
DATA poseA2_01<>+20(SB)/4, $2
DATA poseA2_01<>+24(SB)/4, $0
DATA poseA2_01<>+28(SB)/4, $3
GLOBL poseA2_01<>(SB), RODATA|NOPTR, $32

DATA poseB2_01<>+0(SB)/4, $2
DATA poseB2_01<>+4(SB)/4, $3
DATA poseB2_01<>+8(SB)/4, $1
DATA poseB2_01<>+12(SB)/4, $3
DATA poseB2_01<>+16(SB)/4, $2
DATA poseB2_01<>+20(SB)/4, $2
DATA poseB2_01<>+24(SB)/4, $3
DATA poseB2_01<>+28(SB)/4, $3
GLOBL poseB2_01<>(SB), RODATA|NOPTR, $32

// B sources: 2.0 = 0x40000000, -2.0 = 0xc0000000.
DATA poseMulB01<>+0(SB)/4, $0x40000000
DATA poseMulB01<>+4(SB)/4, $0xc0000000
DATA poseMulB01<>+8(SB)/4, $0xc0000000
DATA poseMulB01<>+12(SB)/4, $0x40000000
DATA poseMulB01<>+16(SB)/4, $0xc0000000
DATA poseMulB01<>+20(SB)/4, $0x40000000
DATA poseMulB01<>+24(SB)/4, $0xc0000000
DATA poseMulB01<>+28(SB)/4, $0x40000000
GLOBL poseMulB01<>(SB), RODATA|NOPTR, $32

// e = identity columns: [e0 | e1], and e2 (1.0 = 0x3f800000).
DATA poseE01<>+0(SB)/4, $0x3f800000
DATA poseE01<>+4(SB)/4, $0
DATA poseE01<>+8(SB)/4, $0
DATA poseE01<>+12(SB)/4, $0
DATA poseE01<>+16(SB)/4, $0
DATA poseE01<>+20(SB)/4, $0x3f800000
DATA poseE01<>+24(SB)/4, $0
DATA poseE01<>+28(SB)/4, $0
GLOBL poseE01<>(SB), RODATA|NOPTR, $32

DATA poseA1_2<>+0(SB)/4, $0
DATA poseA1_2<>+4(SB)/4, $1
DATA poseA1_2<>+8(SB)/4, $0
DATA poseA1_2<>+12(SB)/4, $3
DATA poseA1_2<>+16(SB)/4, $0
DATA poseA1_2<>+20(SB)/4, $1
DATA poseA1_2<>+24(SB)/4, $0
DATA poseA1_2<>+28(SB)/4, $3
GLOBL poseA1_2<>(SB), RODATA|NOPTR, $32

DATA poseB1_2<>+0(SB)/4, $2
DATA poseB1_2<>+4(SB)/4, $2
DATA poseB1_2<>+8(SB)/4, $0
DATA poseB1_2<>+12(SB)/4, $3
DATA poseB1_2<>+16(SB)/4, $2
DATA poseB1_2<>+20(SB)/4, $2
DATA poseB1_2<>+24(SB)/4, $0
DATA poseB1_2<>+28(SB)/4, $3
GLOBL poseB1_2<>(SB), RODATA|NOPTR, $32

DATA poseA2_2<>+0(SB)/4, $1
DATA poseA2_2<>+4(SB)/4, $3
DATA poseA2_2<>+8(SB)/4, $1
DATA poseA2_2<>+12(SB)/4, $3
DATA poseA2_2<>+16(SB)/4, $1
DATA poseA2_2<>+20(SB)/4, $3
DATA poseA2_2<>+24(SB)/4, $1
DATA poseA2_2<>+28(SB)/4, $3
GLOBL poseA2_2<>(SB), RODATA|NOPTR, $32

DATA poseB2_2<>+0(SB)/4, $3
DATA poseB2_2<>+4(SB)/4, $0
DATA poseB2_2<>+8(SB)/4, $1
DATA poseB2_2<>+12(SB)/4, $3
DATA poseB2_2<>+16(SB)/4, $3
DATA poseB2_2<>+20(SB)/4, $0
DATA poseB2_2<>+24(SB)/4, $1
DATA poseB2_2<>+28(SB)/4, $3
GLOBL poseB2_2<>(SB), RODATA|NOPTR, $32

DATA poseMulB2<>+0(SB)/4, $0xc0000000
DATA poseMulB2<>+4(SB)/4, $0xc0000000
DATA poseMulB2<>+8(SB)/4, $0x40000000
DATA poseMulB2<>+12(SB)/4, $0x40000000
DATA poseMulB2<>+16(SB)/4, $0xc0000000
DATA poseMulB2<>+20(SB)/4, $0xc0000000
DATA poseMulB2<>+24(SB)/4, $0x40000000
DATA poseMulB2<>+28(SB)/4, $0x40000000
GLOBL poseMulB2<>(SB), RODATA|NOPTR, $32

DATA poseE2<>+0(SB)/4, $0
DATA poseE2<>+4(SB)/4, $0
DATA poseE2<>+8(SB)/4, $0x3f800000
DATA poseE2<>+12(SB)/4, $0
DATA poseE2<>+16(SB)/4, $0
DATA poseE2<>+20(SB)/4, $0
DATA poseE2<>+24(SB)/4, $0x3f800000
DATA poseE2<>+28(SB)/4, $0
GLOBL poseE2<>(SB), RODATA|NOPTR, $32

// [sx sx sx sx | sy sy sy sy] from [S | S].
DATA poseScale01<>+0(SB)/4, $0
DATA poseScale01<>+4(SB)/4, $0
DATA poseScale01<>+8(SB)/4, $0
DATA poseScale01<>+12(SB)/4, $0
DATA poseScale01<>+16(SB)/4, $1
DATA poseScale01<>+20(SB)/4, $1
DATA poseScale01<>+24(SB)/4, $1
DATA poseScale01<>+28(SB)/4, $1
GLOBL poseScale01<>(SB), RODATA|NOPTR, $32

// Lanes 3 and 7 of [col2 | col3] of an affine matrix: 0 and 1.
DATA poseLast23<>+0(SB)/4, $0
DATA poseLast23<>+4(SB)/4, $0
DATA poseLast23<>+8(SB)/4, $0
DATA poseLast23<>+12(SB)/4, $0
DATA poseLast23<>+16(SB)/4, $0
DATA poseLast23<>+20(SB)/4, $0
DATA poseLast23<>+24(SB)/4, $0
DATA poseLast23<>+28(SB)/4, $0x3f800000
GLOBL poseLast23<>(SB), RODATA|NOPTR, $32

// func poseChainAVX2(local []Transform, parents []int32, model, invBind, skin []Mat4)
//
// Requires len(parents), len(model) >= len(local) and, when len(skin) > 0,
// len(invBind), len(skin) >= len(local) (the Go wrapper slices them). A
// parent that is negative or not below its child (unsigned p >= b) is
// treated as a root, so no index ever leaves model[0:b].
//
// Registers: SI &local[b], DI &model[b], R8 &invBind[b], R9 &skin[b],
// BX b, CX n, R10 parents, R11 model, R12 len(skin), Y15 zero.
TEXT ·poseChainAVX2(SB), NOSPLIT, $0-120
	MOVQ local_base+0(FP), SI
	MOVQ local_len+8(FP), CX
	MOVQ parents_base+24(FP), R10
	MOVQ model_base+48(FP), R11
	MOVQ invBind_base+72(FP), R8
	MOVQ skin_base+96(FP), R9
	MOVQ skin_len+104(FP), R12
	TESTQ CX, CX
	JZ   done
	MOVQ R11, DI
	XORQ BX, BX
	VXORPS Y15, Y15, Y15

loop:
	// Local matrix: Y2 = [col0 | col1], Y6 = [col2 | col3].
	VBROADCASTF128 (SI), Y0            // [q | q]
	VMULPS    poseMulB01<>(SB), Y0, Y1
	VMULPS    poseMulB2<>(SB), Y0, Y5
	VPERMILPS poseA1_01<>(SB), Y0, Y2
	VPERMILPS poseB1_01<>(SB), Y1, Y3
	VFMADD213PS poseE01<>(SB), Y3, Y2  // Y2 = A1*B1 + e
	VPERMILPS poseA2_01<>(SB), Y0, Y3
	VPERMILPS poseB2_01<>(SB), Y1, Y4
	VFMADD231PS Y4, Y3, Y2             // Y2 += A2*B2
	VBROADCASTF128 32(SI), Y3          // [S | S]
	VPERMILPS poseScale01<>(SB), Y3, Y3
	VMULPS    Y3, Y2, Y2               // [col0*sx | col1*sy]
	VPERMILPS poseA1_2<>(SB), Y0, Y6
	VPERMILPS poseB1_2<>(SB), Y5, Y3
	VFMADD213PS poseE2<>(SB), Y3, Y6
	VPERMILPS poseA2_2<>(SB), Y0, Y3
	VPERMILPS poseB2_2<>(SB), Y5, Y4
	VFMADD231PS Y4, Y3, Y6
	VBROADCASTSS 40(SI), Y3            // sz
	VMULPS    Y3, Y6, Y6
	VBLENDPS  $0x70, (SI), Y6, Y6      // [col2*sz | tx ty tz _] from [q | T]

	MOVLQSX (R10)(BX*4), DX
	CMPQ DX, BX
	JAE  root

	// model[b] = model[p] * local: column j = sum_k P_k * L[k][j].
	SHLQ $6, DX                        // parent's byte offset in model
	VBROADCASTF128 (R11)(DX*1), Y7     // [P0 | P0]
	VBROADCASTF128 16(R11)(DX*1), Y8   // [P1 | P1]
	VBROADCASTF128 32(R11)(DX*1), Y9   // [P2 | P2]
	VINSERTF128 $1, 48(R11)(DX*1), Y15, Y10 // [0 | P3]
	VPERMILPS $0x00, Y2, Y3
	VMULPS    Y3, Y7, Y11
	VPERMILPS $0x00, Y6, Y4
	VFMADD213PS Y10, Y7, Y4            // Y4 = P0*l + [0 | P3]
	VPERMILPS $0x55, Y2, Y3
	VFMADD231PS Y3, Y8, Y11
	VPERMILPS $0x55, Y6, Y3
	VFMADD231PS Y3, Y8, Y4
	VPERMILPS $0xaa, Y2, Y3
	VFMADD231PS Y3, Y9, Y11
	VPERMILPS $0xaa, Y6, Y3
	VFMADD231PS Y3, Y9, Y4
	VBLENDPS  $0x88, Y15, Y11, Y2
	VBLENDPS  $0x88, poseLast23<>(SB), Y4, Y6
	JMP  store

root:
	VBLENDPS  $0x88, Y15, Y2, Y2
	VBLENDPS  $0x88, poseLast23<>(SB), Y6, Y6

store:
	VMOVUPS Y2, (DI)
	VMOVUPS Y6, 32(DI)
	TESTQ R12, R12
	JZ   next

	// skin[b] = model[b] * invBind[b]; last row = invBind's.
	VMOVUPS (R8), Y3                   // [I0 | I1]
	VMOVUPS 32(R8), Y4                 // [I2 | I3]
	VBROADCASTF128 (DI), Y7
	VBROADCASTF128 16(DI), Y8
	VBROADCASTF128 32(DI), Y9
	VBROADCASTF128 48(DI), Y10
	VPERMILPS $0x00, Y3, Y0
	VMULPS    Y0, Y7, Y11
	VPERMILPS $0x00, Y4, Y1
	VMULPS    Y1, Y7, Y12
	VPERMILPS $0x55, Y3, Y0
	VFMADD231PS Y0, Y8, Y11
	VPERMILPS $0x55, Y4, Y1
	VFMADD231PS Y1, Y8, Y12
	VPERMILPS $0xaa, Y3, Y0
	VFMADD231PS Y0, Y9, Y11
	VPERMILPS $0xaa, Y4, Y1
	VFMADD231PS Y1, Y9, Y12
	VPERMILPS $0xff, Y3, Y0
	VFMADD231PS Y0, Y10, Y11
	VPERMILPS $0xff, Y4, Y1
	VFMADD231PS Y1, Y10, Y12
	VBLENDPS  $0x88, Y3, Y11, Y11
	VBLENDPS  $0x88, Y4, Y12, Y12
	VMOVUPS Y11, (R9)
	VMOVUPS Y12, 32(R9)
	ADDQ $64, R8
	ADDQ $64, R9

next:
	ADDQ $48, SI
	ADDQ $64, DI
	INCQ BX
	CMPQ BX, CX
	JB   loop
	VZEROUPPER

done:
	RET
