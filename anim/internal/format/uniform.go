package format

import "math"

// ClipUniform is the clip record flag of a uniform clip (word ChFlags).
const ClipUniform = 1

// UniformLadder is the bits per stored component of each rate code (ACL's
// bit rates); code 0 is a constant over the segment (three uint16 in the
// segment's range bytes, no frame bits).
var UniformLadder = [16]uint32{0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 19}

// UniformInv[code] = 1/(2^n - 1), n = UniformLadder[code] (0 for code 0).
var UniformInv = func() (inv [16]float32) {
	for c, n := range UniformLadder {
		if n > 0 {
			inv[c] = 1 / float32(uint32(1)<<n-1)
		}
	}
	return inv
}()

// UniformKeep[drop] lists the three stored components when component
// drop is not stored (drop 3 for translations and scales: x, y, z).
var UniformKeep = [4][3]uint8{{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}}

const (
	U255   = float32(1) / 255
	U65535 = float32(1) / 65535
	// UniformDefaultSegFrames is UniformSegmentFrames' default.
	UniformDefaultSegFrames = 16
)

// UniformByte[r] = float32(r)*(1/255) rounded to float32: a segment range
// byte as the decoders use it (a load instead of a conversion and a
// multiply; the same bits).
var UniformByte = func() (t [256]float32) {
	for r := range t {
		t[r] = float32(r) * U255
	}
	return
}()

// UniformHeaderBytes is the byte offset D of a segment's frame data for
// nt animated tracks: FB, nt rate bytes and 6 range bytes per track,
// rounded up to a word.
func UniformHeaderBytes(nt int) int { return (4 + 7*nt + 3) &^ 3 }

// UniformDQ is the decoder's dequantisation of an n > 0 bit value q (the
// sampler computes exactly this, products rounded as in curve.go).
func UniformDQ(cmin, cext float32, rmin, rext uint32, inv float32, q uint32) float32 {
	a := cmin + float32(cext*float32(float32(rmin)*U255))
	b := float32(float32(cext*float32(float32(rext)*U255)) * inv)
	return a + float32(b*float32(q))
}

// UniformDQ0 is the decoder's value of a constant-code component.
func UniformDQ0(cmin, cext float32, u uint32) float32 {
	return cmin + float32(cext*float32(float32(u)*U65535))
}

// UniformRebuild returns the dropped rotation component from the three
// stored ones: sqrt(max(1 - (a² + b² + c²), 0)).
func UniformRebuild(a, b, c float32) float32 {
	s := float32(a*a) + float32(b*b) + float32(c*c)
	return float32(math.Sqrt(float64(max(1-s, 0))))
}
