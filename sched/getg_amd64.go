//go:build amd64

package sched

// getg returns the address of the calling goroutine's runtime g (see
// callerCtx): a few nanoseconds, at any stack depth.
func getg() uintptr
