//go:build !(mips || mips64 || ppc64 || s390x)

package anim

// hostLittleEndian: the host stores words little-endian, as the blob does,
// so a byte view of blob words reads the blob's bytes in order.
const hostLittleEndian = true
