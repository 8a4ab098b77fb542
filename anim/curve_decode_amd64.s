//go:build !purego

#include "textflag.h"

// Cursor slot words (format.Sl...) as byte offsets, and a ring entry's.
#define SL_HEAD 0
#define SL_FRESH 4
#define SL_T2 8
#define SL_T3 12
#define SL_PARAMS 24
#define SL_RING 96
// A ring entry is format.RingWords (10) words: 40 bytes, 5*8.

// RICE decodes the Rice code at the bottom of the window R12 with the
// parameter in bits SHIFT.. (MASK) of the parameters R8 into DST:
// q = trailing zeros of w (64 for a window of zeros), u = q<<k |
// (w>>(q+1)) & (2^k - 1), length q+1+k added to R13, q ORed into R15,
// the window shifted by the length (modulo 64). Only a well-formed code
// (every q below 16, so no shift reaches 64) is kept: a q of 16 or more,
// the window's zeros included, sends the record to the Go code. Clobbers
// AX, CX, DX, R14.
#define RICE(SHIFT, MASK, DST) \
	MOVL R8, R14 \
	SHRL $SHIFT, R14 \
	ANDL $MASK, R14 \
	TZCNTQ R12, AX \
	ORL AX, R15 \
	LEAL 1(AX), CX \
	SHRXQ CX, R12, DX \
	ADDL R14, CX \
	ADDL CX, R13 \
	SHRXQ CX, R12, R12 \
	BZHIQ R14, DX, DX \
	SHLXL R14, AX, DST \
	ORL DX, DST

// UNZIGZAG turns R in place into format.Unzigzag(R). Clobbers AX.
#define UNZIGZAG(R) \
	MOVL R, AX \
	SHRL $1, R \
	ANDL $1, AX \
	NEGL AX \
	XORL AX, R

// HOLD: component at byte OFF of the new entry (R13) = p3's (R15) index
// plus the residual R.
#define HOLD(OFF, R) \
	MOVL OFF(R15), AX \
	ADDL R, AX \
	MOVL AX, OFF(R13)

// LINE1, LINE2, LINEN: format.Predict's line through p2 (R14) and p3
// (R15) at step k (R9) with divisor 1, 2 or R8 (truncating toward zero,
// as Go's /), plus the residual R; a difference of 2^23 or more in
// magnitude (d + 2^23 - 1 outside [0, 2^24 - 2] as uint32) holds p3's
// index. Clobber AX, CX, DX, DI.
#define LINE1(OFF, R) \
	MOVL OFF(R15), AX \
	MOVL AX, CX \
	SUBL OFF(R14), CX \
	LEAL 0x7fffff(CX), DX \
	IMULL R9, CX \
	ADDL AX, CX \
	CMPL DX, $0xfffffe \
	CMOVLHI AX, CX \
	ADDL R, CX \
	MOVL CX, OFF(R13)

#define LINE2(OFF, R) \
	MOVL OFF(R15), AX \
	MOVL AX, CX \
	SUBL OFF(R14), CX \
	LEAL 0x7fffff(CX), DX \
	IMULL R9, CX \
	MOVL CX, DI \
	SHRL $31, DI \
	ADDL DI, CX \
	SARL $1, CX \
	ADDL AX, CX \
	CMPL DX, $0xfffffe \
	CMOVLHI AX, CX \
	ADDL R, CX \
	MOVL CX, OFF(R13)

#define LINEN(OFF, R) \
	MOVL OFF(R15), DI \
	MOVL DI, AX \
	SUBL OFF(R14), AX \
	LEAL 0x7fffff(AX), CX \
	IMULL R9, AX \
	CDQ \
	IDIVL R8 \
	ADDL DI, AX \
	CMPL CX, $0xfffffe \
	CMOVLHI DI, AX \
	ADDL R, AX \
	MOVL AX, OFF(R13)

// func curvePassAsm(base unsafe.Pointer, nwords int, tracks, slots *uint32, s, nslot int, f, segEnd, segStop, pos, next uint32) (int, uint32, uint32)
//
// The record loop of need frame f over slots s.. (curvePassGo's): each
// slot whose p2 is at f reads records while it has points left and pos
// is before segStop, then the earliest p2 below next of a slot with
// points left becomes next. It stops before a record it leaves to the Go
// code, returning that slot, the position and next so far, or after the
// last slot, returning nslot. pos stays in BX from record to record; the
// other values live in the argument slots.
TEXT ·curvePassAsm(SB), NOSPLIT, $8-88
	MOVL pos+60(FP), BX

slot:
	MOVQ s+32(FP), AX
	CMPQ AX, nslot+40(FP)
	JGE end
	// four: a rotation stored with four components (RICE's fifth code).
	MOVQ tracks+16(FP), DX
	MOVQ AX, CX
	SHLQ $4, CX
	MOVL (DX)(CX*1), DX
	SHRL $16, DX
	MOVQ slots+24(FP), DI
	SHLQ $8, AX
	ADDQ AX, DI
	MOVL SL_PARAMS(DI), CX
	ANDL $7, CX
	XORL AX, AX
	CMPL DX, $1
	JNE notfour
	CMPL CX, $4
	JNE notfour
	MOVL $1, AX

notfour:
	MOVL AX, four-8(SP)

record:
	// DI = the slot's words (a record clobbers DI).
	MOVQ s+32(FP), DI
	SHLQ $8, DI
	ADDQ slots+24(FP), DI
	MOVL SL_T2(DI), CX
	CMPL CX, f+48(FP)
	JNE nextslot
	// format.MorePoints: t3 != segEnd || (end pair && t2 != segEnd).
	MOVL segEnd+52(FP), R8
	CMPL SL_T3(DI), R8
	JNE more
	MOVL SL_PARAMS(DI), DX
	BTL $31, DX
	JCC nextslot
	CMPL CX, R8
	JEQ nextslot

more:
	CMPL BX, segStop+56(FP)
	JAE nextslot
	// The window inside the stream: pos>>5 + 4 < nwords.
	MOVL BX, AX
	SHRL $5, AX
	ADDQ $4, AX
	CMPQ AX, nwords+8(FP)
	JGE bail
	MOVQ base+0(FP), SI
	MOVL SL_PARAMS(DI), R8

	// The stream bits from bit pos: the 8 bytes at pos>>3 shifted by
	// s = pos&7, 64 - s of them valid (zeros above). R13 counts from s,
	// so a record that needs a bit past the valid ones ends past 64.
	MOVL BX, AX
	SHRL $3, AX
	MOVQ (SI)(AX*1), R12
	MOVL BX, R13
	ANDL $7, R13
	SHRXQ R13, R12, R12
	XORL R15, R15
	RICE(4, 15, R9)
	RICE(8, 31, R10)
	RICE(13, 31, R11)
	RICE(18, 31, SI)
	MOVL four-8(SP), AX
	TESTL AX, AX
	JEQ r_checks
	RICE(23, 31, R12)

r_checks:
	// A unary count of 16 or more (escapes included) or a record that
	// needs more than the window's valid bits: the Go code reads it.
	CMPL R15, $16
	JAE bail
	CMPL R13, $64
	JHI bail

	// The record is the assembly's from here on (no later check leaves
	// it to the Go code). t = t3 + u0 + 1 - disc (R9).
	MOVL SL_T3(DI), DX
	MOVL SL_T2(DI), CX
	MOVL R8, AX
	SHRL $3, AX
	ANDL $1, AX
	LEAL 1(DX)(R9*1), R9
	SUBL AX, R9
	ANDL $-8, BX
	ADDL R13, BX // the position after the record: pos - s + (s + used)

	// Writes: t2, t3, fresh = min(fresh+1, 4), head + 1; the entry at the
	// old head (R13) takes the point; p2 (R14) and p3 (R15) are the
	// entries two and three after it.
	MOVL DX, SL_T2(DI)
	MOVL R9, SL_T3(DI)
	MOVL SL_FRESH(DI), AX
	INCL AX
	MOVL $4, R13
	CMPL AX, R13
	CMOVLHI R13, AX
	MOVL AX, SL_FRESH(DI)
	MOVL SL_HEAD(DI), AX
	ANDL $3, AX
	LEAL (AX)(AX*4), R13
	LEAQ SL_RING(DI)(R13*8), R13
	LEAL 2(AX), R14
	ANDL $3, R14
	LEAL (R14)(R14*4), R14
	LEAQ SL_RING(DI)(R14*8), R14
	LEAL 3(AX), R15
	ANDL $3, R15
	LEAL (R15)(R15*4), R15
	LEAQ SL_RING(DI)(R15*8), R15
	INCL AX
	ANDL $3, AX
	MOVL AX, SL_HEAD(DI)
	MOVL R9, 0(R13)

	UNZIGZAG(R10)
	UNZIGZAG(R11)
	UNZIGZAG(SI)
	UNZIGZAG(R12)

	// The line applies when the predictor is not hold, t3 > t2,
	// t3 - t2 < 2^16 and t - t3 <= 63 (format.Predict).
	MOVL R8, AX
	SHRL $28, AX
	ANDL $3, AX
	JEQ r_hold
	CMPL DX, CX
	JLS r_hold
	MOVL DX, R8
	SUBL CX, R8 // den = t3 - t2
	CMPL R8, $65536
	JAE r_hold
	SUBL DX, R9 // k = t - t3
	CMPL R9, $63
	JHI r_hold
	CMPL AX, $2 // format.PredHalf: half the slope
	JNE r_den
	SHLL $1, R8

r_den:
	CMPL R8, $1
	JEQ r_line1
	CMPL R8, $2
	JEQ r_line2
	LINEN(4, R10)
	LINEN(8, R11)
	LINEN(12, SI)
	MOVL four-8(SP), DX
	TESTL DX, DX
	JEQ r_zero4
	LINEN(16, R12)
	JMP r_done

r_line1:
	LINE1(4, R10)
	LINE1(8, R11)
	LINE1(12, SI)
	MOVL four-8(SP), DX
	TESTL DX, DX
	JEQ r_zero4
	LINE1(16, R12)
	JMP r_done

r_line2:
	LINE2(4, R10)
	LINE2(8, R11)
	LINE2(12, SI)
	MOVL four-8(SP), DX
	TESTL DX, DX
	JEQ r_zero4
	LINE2(16, R12)
	JMP r_done

r_hold:
	HOLD(4, R10)
	HOLD(8, R11)
	HOLD(12, SI)
	MOVL four-8(SP), DX
	TESTL DX, DX
	JEQ r_zero4
	HOLD(16, R12)
	JMP r_done

r_zero4:
	MOVL $0, 16(R13)

r_done:
	JMP record

nextslot:
	// DI holds the slot's words: next = t2 when t2 < next and the slot
	// has points left.
	MOVL SL_T2(DI), CX
	CMPL CX, next+64(FP)
	JAE advance
	MOVL segEnd+52(FP), R8
	CMPL SL_T3(DI), R8
	JNE lower
	MOVL SL_PARAMS(DI), DX
	BTL $31, DX
	JCC advance
	CMPL CX, R8
	JEQ advance

lower:
	MOVL CX, next+64(FP)

advance:
	INCQ s+32(FP)
	JMP slot

end:
bail:
	MOVQ s+32(FP), AX
	MOVQ AX, ret+72(FP)
	MOVL BX, ret1+80(FP)
	MOVL next+64(FP), AX
	MOVL AX, ret2+84(FP)
	RET

// func curveDecodeAsm(cs *slotWords, rot uint32, step float32)
//
// decodeFresh on a slot (its head, mode and fresh count from its words):
// scalar SSE, the Go code's float32 operations in its order, each
// correctly rounded, no fused multiply-add.
TEXT ·curveDecodeAsm(SB), NOSPLIT, $0-16
	MOVQ cs+0(FP), DI
	MOVL rot+8(FP), R8
	MOVSS step+12(FP), X7
	MOVL SL_HEAD(DI), R9
	ANDL $3, R9
	MOVL SL_PARAMS(DI), R10
	ANDL $7, R10
	MOVL SL_FRESH(DI), CX
	MOVL $4, AX
	CMPL CX, AX
	CMOVLHI AX, CX // min(fresh, 4)
	MOVL $4, R11
	SUBL CX, R11 // k = 4 - fresh
	MOVL $0x3f800000, AX
	MOVL AX, X8 // 1
	MOVL $0x80000000, AX
	MOVL AX, X9 // the sign bit
	XORPS X10, X10 // 0

point:
	CMPL R11, $4
	JAE done
	// R12 = ring[(head+k)&3]
	LEAL (R9)(R11*1), AX
	ANDL $3, AX
	LEAL (AX)(AX*4), AX
	LEAQ SL_RING(DI)(AX*8), R12
	// a0, a1, a2 = index * step; v3 = 0
	CVTSL2SS 4(R12), X0
	MULSS X7, X0
	CVTSL2SS 8(R12), X1
	MULSS X7, X1
	CVTSL2SS 12(R12), X2
	MULSS X7, X2
	XORPS X3, X3
	TESTL R8, R8
	JEQ store
	CMPL R10, $4 // format.ModeAll
	JNE dropped
	CVTSL2SS 16(R12), X3
	MULSS X7, X3
	JMP align

dropped:
	// s = 1 - a0² - a1² - a2², left to right; big = sqrt(s) when s > 0
	// (NaN too gives 0).
	MOVAPS X8, X4
	MOVAPS X0, X5
	MULSS X5, X5
	SUBSS X5, X4
	MOVAPS X1, X5
	MULSS X5, X5
	SUBSS X5, X4
	MOVAPS X2, X5
	MULSS X5, X5
	SUBSS X5, X4
	XORPS X5, X5
	UCOMISS X10, X4
	JLS place
	SQRTSS X4, X5

place:
	// The dropped component (big, X5) goes to its place.
	CMPL R10, $0
	JNE place1
	MOVAPS X2, X3
	MOVAPS X1, X2
	MOVAPS X0, X1
	MOVAPS X5, X0
	JMP align

place1:
	CMPL R10, $1
	JNE place2
	MOVAPS X2, X3
	MOVAPS X1, X2
	MOVAPS X5, X1
	JMP align

place2:
	CMPL R10, $2
	JNE place3
	MOVAPS X2, X3
	MOVAPS X5, X2
	JMP align

place3:
	MOVAPS X5, X3

align:
	// After the first point: negate when format.Dot4(v, previous) < 0
	// (products rounded, summed left to right; NaN keeps v).
	TESTL R11, R11
	JEQ store
	LEAL -1(R9)(R11*1), AX
	ANDL $3, AX
	LEAL (AX)(AX*4), AX
	LEAQ SL_RING(DI)(AX*8), R13
	MOVSS 20(R13), X4
	MULSS X0, X4
	MOVSS 24(R13), X5
	MULSS X1, X5
	ADDSS X5, X4
	MOVSS 28(R13), X5
	MULSS X2, X5
	ADDSS X5, X4
	MOVSS 32(R13), X5
	MULSS X3, X5
	ADDSS X5, X4
	UCOMISS X4, X10
	JLS store
	XORPS X9, X0
	XORPS X9, X1
	XORPS X9, X2
	XORPS X9, X3

store:
	MOVSS X0, 20(R12)
	MOVSS X1, 24(R12)
	MOVSS X2, 28(R12)
	MOVSS X3, 32(R12)
	INCL R11
	JMP point

done:
	RET

// The constant 1.0 for curveFinishAVX.
DATA curveOne<>+0(SB)/4, $0x3f800000
GLOBL curveOne<>(SB), RODATA|NOPTR, $4

// CSTORE stores the low 128 bits of V at pose + 4*off[J] if lane J holds
// a track (R12: the tracks).
#define CSTORE(V, J) \
	CMPQ R12, $J \
	JLE fdone \
	MOVLQSX (160+4*J)(BX), AX \
	VMOVUPS V, (SI)(AX*4)

// func curveFinishAVX(buf *curveFinishBuf, n int, pose []float32)
//
// curveFinishBuf's layout (bytes): v[c][j] at 32c + 4j, rot[j] at
// 128 + 4j, off[j] at 160 + 4j.
TEXT ·curveFinishAVX(SB), NOSPLIT, $0-40
	MOVQ buf+0(FP), BX
	MOVQ n+8(FP), R12
	MOVQ pose_base+16(FP), SI
	VMOVUPS 0(BX), Y0
	VMOVUPS 32(BX), Y1
	VMOVUPS 64(BX), Y2
	VMOVUPS 96(BX), Y3

	// |q|² = ((x² + y²) + z²) + w², each square rounded.
	VMULPS Y0, Y0, Y4
	VMULPS Y1, Y1, Y5
	VADDPS Y5, Y4, Y4
	VMULPS Y2, Y2, Y5
	VADDPS Y5, Y4, Y4
	VMULPS Y3, Y3, Y5
	VADDPS Y5, Y4, Y4
	VXORPS Y6, Y6, Y6
	VCMPPS $0x0e, Y6, Y4, Y7 // |q|² > 0 (false for NaN)
	VSQRTPS Y4, Y4
	VBROADCASTSS curveOne<>(SB), Y8
	VDIVPS Y4, Y8, Y4 // 1/sqrt(|q|²)
	VMULPS Y4, Y0, Y9
	VMULPS Y4, Y1, Y10
	VMULPS Y4, Y2, Y11
	VMULPS Y4, Y3, Y12
	VANDPS Y7, Y9, Y9
	VANDPS Y7, Y10, Y10
	VANDPS Y7, Y11, Y11
	VBLENDVPS Y7, Y12, Y8, Y12

	// Rotation lanes take the normalised value, the others their own.
	VMOVDQU 128(BX), Y13
	VBLENDVPS Y13, Y9, Y0, Y0
	VBLENDVPS Y13, Y10, Y1, Y1
	VBLENDVPS Y13, Y11, Y2, Y2
	VBLENDVPS Y13, Y12, Y3, Y3

	// Transpose to (x, y, z, w) per lane and store, lane after lane.
	VUNPCKLPS Y1, Y0, Y4
	VUNPCKHPS Y1, Y0, Y5
	VUNPCKLPS Y3, Y2, Y6
	VUNPCKHPS Y3, Y2, Y7
	VUNPCKLPD Y6, Y4, Y0
	VUNPCKHPD Y6, Y4, Y1
	VUNPCKLPD Y7, Y5, Y2
	VUNPCKHPD Y7, Y5, Y3
	CSTORE(X0, 0)
	CSTORE(X1, 1)
	CSTORE(X2, 2)
	CSTORE(X3, 3)
	VEXTRACTF128 $1, Y0, X0
	VEXTRACTF128 $1, Y1, X1
	VEXTRACTF128 $1, Y2, X2
	VEXTRACTF128 $1, Y3, X3
	CSTORE(X0, 4)
	CSTORE(X1, 5)
	CSTORE(X2, 6)
	CSTORE(X3, 7)

fdone:
	VZEROUPPER
	RET
