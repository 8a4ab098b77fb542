//go:build amd64

#include "textflag.h"

// func prefetchSlots(base unsafe.Pointer, idx *uint32, n int, size uintptr, lines int)
//
// For each of the n slot indices at idx, PREFETCHW the first lines cache
// lines of the slot at base+index*size. PREFETCHW (0F 0D /1, encoded by
// hand: the Go assembler has no mnemonic for it) asks for the line in
// exclusive state, as a store would, but occupies no store-buffer entry
// and is not ordered with locked instructions: see touchSlots.
TEXT ·prefetchSlots(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), AX
	MOVQ idx+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ size+24(FP), DX
	MOVQ lines+32(FP), DI
	TESTQ CX, CX
	JLE done
	TESTQ DI, DI
	JLE done

slot:
	MOVL (SI), BX
	IMULQ DX, BX
	ADDQ AX, BX
	MOVQ DI, R8

line:
	BYTE $0x0F; BYTE $0x0D; BYTE $0x0B // PREFETCHW (BX)
	ADDQ $64, BX
	DECQ R8
	JNZ line
	ADDQ $4, SI
	DECQ CX
	JNZ slot

done:
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET
