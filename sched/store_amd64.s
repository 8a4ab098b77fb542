//go:build amd64 && !race

#include "textflag.h"

// func storeRelease64(p *int64, v int64)
// A plain MOV: on x86-TSO a store is never reordered with earlier stores,
// which is the release ordering the deque's push needs (see store.go).
TEXT ·storeRelease64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, 0(AX)
	RET

// func storeRelease32(p *uint32, v uint32)
TEXT ·storeRelease32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, 0(AX)
	RET
