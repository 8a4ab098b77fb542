//go:build !amd64

package sched

// getg returns 0 where the goroutine's g cannot be read: callerCtx then
// goes by goroutine ID alone.
func getg() uintptr { return 0 }
