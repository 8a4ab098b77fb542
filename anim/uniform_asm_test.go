//go:build amd64 && !purego

package anim

import (
	"math"
	"math/rand"
	"testing"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// TestUniformFinishAsm checks that the assembly finish of uniform clips
// (uniformFinishAVX2) writes the pure-Go finish's (uniformFinish's) poses
// bit for bit: random decoded frames
// (rotations near and far from unit length, every dropped component,
// pairs in opposite hemispheres, zero quaternions whose lerp vanishes,
// huge values), every chunk length, translations, rotations and scales
// at their pose offsets, and the floats no track owns left alone (also
// where lanes after the chunk's tracks hold offsets).
func TestUniformFinishAsm(t *testing.T) {
	if !uniformHasAsm {
		t.Skip("no AVX2 on this CPU (or a purego build)")
	}
	rng := rand.New(rand.NewSource(1))
	const bones = 40
	kindOff := [4]int{4, 0, 8, 8}
	for iter := range 3000 {
		n := 1 + iter%uniformChunk
		var b uniformBuf
		tracks := make([]uint32, format.TrackDescWords*n)
		perm := rng.Perm(3 * bones)
		for k := range n {
			bone, kind := perm[k]/3, uint32(perm[k]%3)
			tracks[format.TrackDescWords*k] = uint32(bone) | kind<<16
			for f := range 2 {
				b.drop[f][k] = 3
				if kind == uint32(format.TrackRotation) {
					b.drop[f][k] = uint32(rng.Intn(4))
				}
				for c := range 3 {
					var v float32
					switch rng.Intn(8) {
					case 0:
						v = 0
					case 1:
						v = float32(rng.NormFloat64() * 1e10)
					case 2:
						v = -b.q[0][c][k] // the frames cancel
					default:
						v = float32(rng.Float64()*1.4 - 0.7)
					}
					b.q[f][c][k] = v
				}
			}
		}
		// Garbage in the lanes after the chunk's tracks.
		for k := n; k < uniformChunk; k++ {
			for f := range 2 {
				b.drop[f][k] = rng.Uint32()
				for c := range 3 {
					b.q[f][c][k] = math.Float32frombits(rng.Uint32())
				}
			}
		}
		alpha := float32(rng.Float64())
		switch iter % 7 {
		case 0:
			alpha = 0
		case 1:
			alpha = 1
		}
		b.place(tracks, &kindOff, bones*PoseFloats)
		for k := n; k < uniformChunk; k++ { // must not be stored
			b.off[k], b.rot[k] = int32(rng.Intn(bones*PoseFloats-4)), -int32(rng.Intn(2))
		}
		want := make([]float32, bones*PoseFloats)
		for i := range want {
			want[i] = float32(rng.NormFloat64())
		}
		got := append([]float32(nil), want...)
		var dec [uniformChunk]uniformDecoded
		for k := range n {
			for c := range 3 {
				dec[k].v[c], dec[k].v[3+c] = b.q[0][c][k], b.q[1][c][k]
			}
			dec[k].drops = b.drop[0][k] | b.drop[1][k]<<8
		}
		uniformFinish(dec[:n], tracks, &kindOff, alpha, want)
		uniformFinishAVX2(&b, n, alpha, got)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("iteration %d (%d tracks, alpha %v): pose float %d (bone %d, float %d): assembly %v (%#x), Go %v (%#x)",
					iter, n, alpha, i, i/PoseFloats, i%PoseFloats, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
}
