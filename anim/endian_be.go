//go:build mips || mips64 || ppc64 || s390x

package anim

// hostLittleEndian: the host stores words big-endian; blob words are a
// converted copy, and byte views of them are read word-swapped.
const hostLittleEndian = false
