//go:build amd64

package sched

import "unsafe"

// havePrefetchW reports whether the CPU has PREFETCHW (CPUID
// 0x80000001 ECX bit 8, PRFCHW). Without it touchSlots writes the lines
// instead.
var havePrefetchW = func() bool {
	if max, _, _, _ := cpuid(0x80000000, 0); max < 0x80000001 {
		return false
	}
	_, _, c, _ := cpuid(0x80000001, 0)
	return c&(1<<8) != 0
}()

// prefetchSlots asks for the first lines cache lines of each slot
// base+idx[i]*size, i < n, in exclusive state. A hint only: no memory is
// read or written as far as Go is concerned.
//
//go:noescape
func prefetchSlots(base unsafe.Pointer, idx *uint32, n int, size uintptr, lines int)

func cpuid(leaf, sub uint32) (a, b, c, d uint32)
