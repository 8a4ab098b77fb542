//go:build !amd64 || purego

package anim

// No assembly on this platform (or in a purego build).
const uniformHasAsm, uniformFast = false, false

func uniformFinishAVX2(b *uniformBuf, groups int, alpha float32, pose []float32) {
	panic("anim: uniformFinishAVX2 without assembly")
}
