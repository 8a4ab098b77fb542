//go:build !amd64 || purego

package anim

import "unsafe"

// No assembly on this platform (or in a purego build).
const curveHasAsm, curveHasAVX = false, false

func curvePassAsm(base unsafe.Pointer, nwords int, tracks, slots *uint32, s, nslot int, f, segEnd, segStop, pos, next uint32) (int, uint32, uint32) {
	panic("anim: curvePassAsm without assembly")
}

func curveDecodeAsm(cs *slotWords, rot uint32, step float32) {
	panic("anim: curveDecodeAsm without assembly")
}

func curveFinishAVX(buf *curveFinishBuf, n int, pose []float32) {
	panic("anim: curveFinishAVX without assembly")
}
