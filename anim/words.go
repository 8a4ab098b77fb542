package anim

import (
	"encoding/binary"
	"unsafe"
)

// littleEndian reports whether the host stores words little-endian (the
// blob's order), in which case a blob's bytes are used in place as words.
var littleEndian = func() bool {
	x := uint32(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// wordsOf returns data (len a multiple of 4) as little-endian words:
// the same memory when the host is little-endian and data is 4-byte
// aligned (as Go allocates byte slices), otherwise a converted copy.
func wordsOf(data []byte) []uint32 {
	n := len(data) / 4
	if n == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&data[0]))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&data[0])), n)
	}
	w := make([]uint32, n)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(data[4*i:])
	}
	return w
}
