//go:build !purego

package anim

import "golang.org/x/sys/cpu"

// uniformHasAsm reports whether this CPU can run uniformFinishAVX2.
var uniformHasAsm = cpu.X86.HasAVX2

// uniformFast selects uniformFinishAVX2 in uniformFinish; tests clear it
// to run the pure-Go path (uniformFinishGo) on the same machine.
var uniformFast = uniformHasAsm

// uniformFinishAVX2 is uniformFinishGo in AVX2 assembly
// (uniform_amd64.s) over groups (at most 4) groups of eight tracks of the
// buffer: the same float32 operations in the same order, without fused
// multiply-adds (sqrt and division are correctly rounded in both), so its
// poses are the Go path's bit for bit (TestUniformFinishAsm). Lanes are
// structure of arrays; the results are transposed to (x, y, z, w) and
// stored with a mask per lane (off and mask, filled by place, keep every
// store within the pose).
//
//go:noescape
func uniformFinishAVX2(b *uniformBuf, groups int, alpha float32, pose []float32)
