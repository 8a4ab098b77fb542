//go:build !linux

package sched

// osYield does nothing where sched_yield is not wired (see yield_linux.go).
func osYield() {}
