//go:build !purego

#include "textflag.h"

// AVX2 loops of the streaming, reduce and expand kernels (stream_amd64.go
// states each one's contract and its tolerance against the Go code).

DATA streamPosInf<>+0(SB)/4, $0x7f800000
GLOBL streamPosInf<>(SB), RODATA|NOPTR, $4
DATA streamNegInf<>+0(SB)/4, $0xff800000
GLOBL streamNegInf<>(SB), RODATA|NOPTR, $4

// k/8 for k = 0..7, ExpandLerp's interpolation factors.
DATA streamEighths<>+0(SB)/4, $0x00000000
DATA streamEighths<>+4(SB)/4, $0x3e000000
DATA streamEighths<>+8(SB)/4, $0x3e800000
DATA streamEighths<>+12(SB)/4, $0x3ec00000
DATA streamEighths<>+16(SB)/4, $0x3f000000
DATA streamEighths<>+20(SB)/4, $0x3f200000
DATA streamEighths<>+24(SB)/4, $0x3f400000
DATA streamEighths<>+28(SB)/4, $0x3f600000
GLOBL streamEighths<>(SB), RODATA|NOPTR, $32

// vpermd indices: every lane takes lane 3, or lane 7.
DATA streamLane3<>+0(SB)/4, $3
DATA streamLane3<>+4(SB)/4, $3
DATA streamLane3<>+8(SB)/4, $3
DATA streamLane3<>+12(SB)/4, $3
DATA streamLane3<>+16(SB)/4, $3
DATA streamLane3<>+20(SB)/4, $3
DATA streamLane3<>+24(SB)/4, $3
DATA streamLane3<>+28(SB)/4, $3
GLOBL streamLane3<>(SB), RODATA|NOPTR, $32
DATA streamLane7<>+0(SB)/4, $7
DATA streamLane7<>+4(SB)/4, $7
DATA streamLane7<>+8(SB)/4, $7
DATA streamLane7<>+12(SB)/4, $7
DATA streamLane7<>+16(SB)/4, $7
DATA streamLane7<>+20(SB)/4, $7
DATA streamLane7<>+24(SB)/4, $7
DATA streamLane7<>+28(SB)/4, $7
GLOBL streamLane7<>(SB), RODATA|NOPTR, $32

// func sumBlocksAVX2(x []float32, out []float32, factor int, scale float32)
//
// out[i] = scale * the sum of x[factor*i : factor*(i+1)], factor a positive
// multiple of 32: four accumulators of 8 lanes, lane j of accumulator a
// summing x[32t + 8a + j] for t in order, then (a0+a1)+(a2+a3), then the
// lanes: (j + j+4), then (0 + 2) + (1 + 3).
TEXT ·sumBlocksAVX2(SB), NOSPLIT, $0-60
	MOVQ   x_base+0(FP), SI
	MOVQ   out_base+24(FP), DI
	MOVQ   out_len+32(FP), CX
	MOVQ   factor+48(FP), DX
	VMOVSS scale+56(FP), X15
	TESTQ  CX, CX
	JLE    sumdone

sumblock:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   DX, BX

suminner:
	VADDPS 0(SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $32, BX
	JGT    suminner

	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VSHUFPS      $1, X0, X0, X1
	VADDSS       X1, X0, X0
	VMULSS       X15, X0, X0
	VMOVSS       X0, (DI)
	ADDQ         $4, DI
	DECQ         CX
	JNZ          sumblock

sumdone:
	VZEROUPPER
	RET

// func minMaxBlocksAVX2(x []float32, out []MinMax)
//
// out[i] = (min, max) of x[256i : 256i+256]: four min and four max
// accumulators of 8 lanes from +Inf and -Inf; each step is acc = x < acc ?
// x : acc (VMINPS with x first returns the second operand, acc, when x is
// NaN), so NaNs are ignored as in the Go loop; then the accumulators and
// lanes are combined the same way.
TEXT ·minMaxBlocksAVX2(SB), NOSPLIT, $0-48
	MOVQ         x_base+0(FP), SI
	MOVQ         out_base+24(FP), DI
	MOVQ         out_len+32(FP), CX
	VBROADCASTSS streamPosInf<>(SB), Y14
	VBROADCASTSS streamNegInf<>(SB), Y15
	TESTQ        CX, CX
	JLE          mmdone

mmblock:
	VMOVAPS Y14, Y0
	VMOVAPS Y14, Y1
	VMOVAPS Y14, Y2
	VMOVAPS Y14, Y3
	VMOVAPS Y15, Y4
	VMOVAPS Y15, Y5
	VMOVAPS Y15, Y6
	VMOVAPS Y15, Y7
	MOVQ    $8, BX

mminner:
	VMOVUPS 0(SI), Y8
	VMOVUPS 32(SI), Y9
	VMOVUPS 64(SI), Y10
	VMOVUPS 96(SI), Y11
	VMINPS  Y0, Y8, Y0
	VMAXPS  Y4, Y8, Y4
	VMINPS  Y1, Y9, Y1
	VMAXPS  Y5, Y9, Y5
	VMINPS  Y2, Y10, Y2
	VMAXPS  Y6, Y10, Y6
	VMINPS  Y3, Y11, Y3
	VMAXPS  Y7, Y11, Y7
	ADDQ    $128, SI
	DECQ    BX
	JNZ     mminner

	VMINPS       Y1, Y0, Y0
	VMINPS       Y3, Y2, Y2
	VMINPS       Y2, Y0, Y0
	VMAXPS       Y5, Y4, Y4
	VMAXPS       Y7, Y6, Y6
	VMAXPS       Y6, Y4, Y4
	VEXTRACTF128 $1, Y0, X1
	VMINPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VMINPS       X1, X0, X0
	VSHUFPS      $1, X0, X0, X1
	VMINSS       X1, X0, X0
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VMOVHLPS     X4, X4, X5
	VMAXPS       X5, X4, X4
	VSHUFPS      $1, X4, X4, X5
	VMAXSS       X5, X4, X4
	VMOVSS       X0, 0(DI)
	VMOVSS       X4, 4(DI)
	ADDQ         $8, DI
	DECQ         CX
	JNZ          mmblock

mmdone:
	VZEROUPPER
	RET

// func sumBlocksU32AVX2(x []uint32, out []uint32)
//
// out[i] = the wrapping sum of x[256i : 256i+256] (any order gives the
// same bits).
TEXT ·sumBlocksU32AVX2(SB), NOSPLIT, $0-48
	MOVQ  x_base+0(FP), SI
	MOVQ  out_base+24(FP), DI
	MOVQ  out_len+32(FP), CX
	TESTQ CX, CX
	JLE   usumdone

usumblock:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	MOVQ  $8, BX

usuminner:
	VPADDD 0(SI), Y0, Y0
	VPADDD 32(SI), Y1, Y1
	VPADDD 64(SI), Y2, Y2
	VPADDD 96(SI), Y3, Y3
	ADDQ   $128, SI
	DECQ   BX
	JNZ    usuminner

	VPADDD       Y1, Y0, Y0
	VPADDD       Y3, Y2, Y2
	VPADDD       Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	MOVL         AX, (DI)
	ADDQ         $4, DI
	DECQ         CX
	JNZ          usumblock

usumdone:
	VZEROUPPER
	RET

// func scanBlocksU32AVX2(offsets []uint32, x []uint32, out []uint32)
//
// For each i below len(offsets): out[256i+k] = offsets[i] + x[256i] + ...
// + x[256i+k-1] (wrapping), 8 values per step: an in-register inclusive
// prefix sum (shifts within each 128-bit half, then the low half's total
// added to the high half), minus x, plus the running carry.
TEXT ·scanBlocksU32AVX2(SB), NOSPLIT, $0-72
	MOVQ    offsets_base+0(FP), R8
	MOVQ    offsets_len+8(FP), CX
	MOVQ    x_base+24(FP), SI
	MOVQ    out_base+48(FP), DI
	VMOVDQU streamLane3<>(SB), Y13
	VMOVDQU streamLane7<>(SB), Y14
	VPXOR   Y15, Y15, Y15
	TESTQ   CX, CX
	JLE     scandone

scanblock:
	VPBROADCASTD (R8), Y0
	MOVQ         $32, BX

scaninner:
	VMOVDQU  (SI), Y1
	VPSLLDQ  $4, Y1, Y2
	VPADDD   Y2, Y1, Y2
	VPSLLDQ  $8, Y2, Y3
	VPADDD   Y3, Y2, Y2          // inclusive prefix within each half
	VPERMD   Y2, Y13, Y3         // the low half's total in every lane
	VPBLENDD $0x0f, Y15, Y3, Y3  // ... in the high half only
	VPADDD   Y3, Y2, Y2          // inclusive prefix of the 8
	VPSUBD   Y1, Y2, Y4
	VPADDD   Y0, Y4, Y4          // exclusive, from the carry
	VMOVDQU  Y4, (DI)
	VPERMD   Y2, Y14, Y5         // total of the 8 in every lane
	VPADDD   Y5, Y0, Y0
	ADDQ     $32, SI
	ADDQ     $32, DI
	DECQ     BX
	JNZ      scaninner

	ADDQ $4, R8
	DECQ CX
	JNZ  scanblock

scandone:
	VZEROUPPER
	RET

// func saxpyAVX2(a float32, x, y, out []float32)
//
// out[i] = a*x[i] + y[i] for i below len(out) rounded down to 32, the
// product rounded before the add (no FMA): the Go loop's bits.
TEXT ·saxpyAVX2(SB), NOSPLIT, $0-80
	VBROADCASTSS a+0(FP), Y15
	MOVQ         x_base+8(FP), SI
	MOVQ         y_base+32(FP), DX
	MOVQ         out_base+56(FP), DI
	MOVQ         out_len+64(FP), CX
	SHRQ         $5, CX
	JZ           saxpydone

saxpyloop:
	VMULPS  0(SI), Y15, Y0
	VMULPS  32(SI), Y15, Y1
	VMULPS  64(SI), Y15, Y2
	VMULPS  96(SI), Y15, Y3
	VADDPS  0(DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VADDPS  64(DX), Y2, Y2
	VADDPS  96(DX), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     saxpyloop

saxpydone:
	VZEROUPPER
	RET

// func expandLerpAVX2(seg []Segment, out []float32)
//
// out[8i+k] = A + (B-A)*(k/8) for segment i below len(seg), each product
// and sum rounded separately: the Go loop's bits. out holds 8*len(seg).
TEXT ·expandLerpAVX2(SB), NOSPLIT, $0-48
	MOVQ    seg_base+0(FP), SI
	MOVQ    seg_len+8(FP), CX
	MOVQ    out_base+24(FP), DI
	VMOVUPS streamEighths<>(SB), Y15
	TESTQ   CX, CX
	JLE     lerpdone

lerploop:
	VBROADCASTSS 0(SI), Y0
	VBROADCASTSS 4(SI), Y1
	VSUBPS       Y0, Y1, Y1
	VMULPS       Y15, Y1, Y1
	VADDPS       Y0, Y1, Y1
	VMOVUPS      Y1, (DI)
	ADDQ         $8, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          lerploop

lerpdone:
	VZEROUPPER
	RET
