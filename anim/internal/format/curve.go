package format

import "math"

// This file holds the float32 arithmetic that the compressor and the
// sampler must share bit for bit: the compressor measures its error with
// exactly the values the runtime will compute. Every product that feeds a
// sum is rounded with an explicit float32 conversion, which the Go spec
// says prevents fusing it into a multiply-add (GOAMD64=v3 fuses
// otherwise): the results are the same on every build, and the GLSL port
// (shaders/anim_sample.comp, `precise`) computes them bit for bit.

// Cpoint is a decoded curve point: a time in frames from the segment start
// and up to four components.
type Cpoint struct {
	T float32
	V [4]float32
}

// CurveCoeffs returns the cubic coefficients of the Hermite segment from
// p1 to p2 with implicit (Catmull-Rom-like) tangents taken from the
// neighbours p0 and p3:
//
//	m1 = (p2 - p0) / (t2 - t0)   or (p2 - p1)/(t2 - t1) when t0 == t1
//	m2 = (p3 - p1) / (t3 - t1)   or (p2 - p1)/(t2 - t1) when t3 == t2
//
// t0 == t1 happens at a segment start (p0 is p1 repeated) and after a
// discontinuity (two points at one time); likewise t3 == t2 at the end and
// before a discontinuity. With h = t2 - t1 and u = (t - t1)/h the value is
// c0 + u(c1 + u(c2 + u c3)); the tangent scales h/(t2-t0) and h/(t3-t1)
// lie in (0, 1] as in the BitSquid formulation. It returns 1/h (0 for a
// zero-length interval, whose coefficients then hold p2 as a constant).
//
// With lin (a segment's linear flag) the tangents are the chord and the
// cubic degenerates to the line c0 + u·(p2 - p1): lerp between points
// (nlerp for rotations, once normalised), which is what sampled motion
// capture and glTF LINEAR translation and scale keys mean between
// samples, where a Hermite curve through the samples would swing past
// them; glTF LINEAR rotation keys mean slerp, which the nlerp follows to
// within 0.01° for points 20° apart (see anim's documentation).
func CurveCoeffs(p0, p1, p2, p3 *Cpoint, lin bool, c *[16]float32) float32 {
	return CurveCoeffsV(p0.T, p1.T, p2.T, p3.T, &p0.V, &p1.V, &p2.V, &p3.V, lin, c)
}

// CurveCoeffsV is CurveCoeffs on times and values held apart (the
// sampler's cursor keeps them in separate words).
func CurveCoeffsV(t0, t1, t2, t3 float32, a0, b1, b2, a3 *[4]float32, lin bool, c *[16]float32) float32 {
	h := t2 - t1
	if !(h > 0) {
		for i := range 4 {
			c[i], c[4+i], c[8+i], c[12+i] = b2[i], 0, 0, 0
		}
		return 0
	}
	if lin {
		for i := range 4 {
			c[i], c[4+i], c[8+i], c[12+i] = b1[i], b2[i]-b1[i], 0, 0
		}
		return Recip(h)
	}
	var s1, s2 float32 = 1, 1 // h/(t2-t0), h/(t3-t1)
	if t0 == t1 {
		a0 = b1
	} else {
		s1 = h * Recip(t2-t0)
	}
	if t3 == t2 {
		a3 = b2
	} else {
		s2 = h * Recip(t3-t1)
	}
	for i := range 4 {
		v1, v2 := b1[i], b2[i]
		hm1 := float32((v2 - a0[i]) * s1)
		hm2 := float32((a3[i] - v1) * s2)
		d := v2 - v1
		c[i] = v1
		c[4+i] = hm1
		c[8+i] = float32(3*d) - float32(2*hm1) - hm2
		c[12+i] = hm1 + hm2 - float32(2*d)
	}
	return Recip(h)
}

// RecipTable holds 1/n for the small whole frame counts that curve
// intervals span, so the sampler multiplies instead of dividing.
var RecipTable = func() (r [256]float32) {
	for n := 1; n < len(r); n++ {
		r[n] = 1 / float32(n)
	}
	return
}()

// Recip returns 1/x for x > 0 (a whole number of frames, exact from the
// table when below 256). Any other x (negative, NaN: only a scribbled
// cursor gives one) divides.
func Recip(x float32) float32 {
	if n := int(x); n >= 0 && n < len(RecipTable) && float32(n) == x {
		return RecipTable[n]
	}
	return 1 / x
}

// EvalCoeffs evaluates the segment at local frame f (t1 is its start).
func EvalCoeffs(c *[16]float32, t1, invH, f float32, rot bool) [4]float32 {
	u := (f - t1) * invH
	if u < 0 {
		u = 0
	} else if u > 1 {
		u = 1
	}
	var r [4]float32
	for i := range 4 {
		r[i] = Horner(c[i], c[4+i], c[8+i], c[12+i], u)
	}
	if rot {
		r = Normalize4(r)
	}
	return r
}

// Horner returns c0 + u(c1 + u(c2 + u c3)), each product rounded.
func Horner(c0, c1, c2, c3, u float32) float32 {
	return c0 + float32(u*(c1+float32(u*(c2+float32(u*c3)))))
}

// Dot4 returns the dot product, summed left to right, products rounded.
func Dot4(a, b *[4]float32) float32 {
	return float32(a[0]*b[0]) + float32(a[1]*b[1]) + float32(a[2]*b[2]) + float32(a[3]*b[3])
}

func Normalize4(r [4]float32) [4]float32 {
	n := Dot4(&r, &r)
	if n > 0 {
		inv := 1 / float32(math.Sqrt(float64(n)))
		r[0] *= inv
		r[1] *= inv
		r[2] *= inv
		r[3] *= inv
	} else {
		r = [4]float32{0, 0, 0, 1}
	}
	return r
}

// AlignTo negates rotation v when it is in the other hemisphere from ref.
func AlignTo(v *[4]float32, ref *[4]float32) {
	if Dot4(v, ref) < 0 {
		v[0], v[1], v[2], v[3] = -v[0], -v[1], -v[2], -v[3]
	}
}
