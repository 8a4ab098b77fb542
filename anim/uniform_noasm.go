//go:build !amd64 || purego

package anim

// No assembly on this platform (or in a purego build).
const uniformHasAsm, uniformFast = false, false

func sampleUniformFast(words []uint32, clip uint32, h []uint32, f float32, pose []float32, kindOff *[4]int) {
	panic("anim: sampleUniformFast without assembly")
}
