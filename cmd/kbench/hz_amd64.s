#include "textflag.h"

// func addChain(n int64) int64
//
// n iterations of 8 dependent 64-bit register adds: 8 cycles per iteration
// on every x86-64 core (an ADD has a latency of one cycle; the loop
// counter runs beside the chain), so the time of a call measures the
// clock. Register, not immediate, operands: recent Intel cores fold chains
// of immediate adds at register renaming, which ran this loop at "22 GHz".
TEXT ·addChain(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	XORQ AX, AX
	MOVQ $1, DX
	TESTQ CX, CX
	JLE  done

loop:
	ADDQ DX, AX
	ADDQ DX, AX
	ADDQ DX, AX
	ADDQ DX, AX
	ADDQ DX, AX
	ADDQ DX, AX
	ADDQ DX, AX
	ADDQ DX, AX
	DECQ CX
	JNZ  loop

done:
	MOVQ AX, ret+8(FP)
	RET
