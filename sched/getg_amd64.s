//go:build amd64

#include "textflag.h"

// func getg() uintptr
//
// The address of the calling goroutine's runtime g, which the runtime
// keeps in thread-local storage.
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
