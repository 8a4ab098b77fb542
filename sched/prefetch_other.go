//go:build !amd64

package sched

import "unsafe"

// havePrefetchW is false: touchSlots writes the lines instead.
var havePrefetchW = false

func prefetchSlots(base unsafe.Pointer, idx *uint32, n int, size uintptr, lines int) {}
