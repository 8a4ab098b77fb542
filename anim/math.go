package anim

import "math"

// Offline maths (import, fitting, error measurement) is float64; the runtime
// (sampling, local-to-model) is float32. Quaternions are (x, y, z, w).

// Vec3 is a 3-component float64 vector.
type Vec3 [3]float64

// Quat is a float64 quaternion (x, y, z, w), w the scalar part.
type Quat [4]float64

// IdentityQuat is the rotation that does nothing.
var IdentityQuat = Quat{0, 0, 0, 1}

func (a Vec3) add(b Vec3) Vec3          { return Vec3{a[0] + b[0], a[1] + b[1], a[2] + b[2]} }
func (a Vec3) sub(b Vec3) Vec3          { return Vec3{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }
func (a Vec3) scale(s float64) Vec3     { return Vec3{a[0] * s, a[1] * s, a[2] * s} }
func (a Vec3) mul(b Vec3) Vec3          { return Vec3{a[0] * b[0], a[1] * b[1], a[2] * b[2]} }
func (a Vec3) length() float64          { return math.Sqrt(a[0]*a[0] + a[1]*a[1] + a[2]*a[2]) }
func (a Vec3) dist(b Vec3) float64      { return a.sub(b).length() }
func (q Quat) dot(r Quat) float64       { return q[0]*r[0] + q[1]*r[1] + q[2]*r[2] + q[3]*r[3] }
func (q Quat) neg() Quat                { return Quat{-q[0], -q[1], -q[2], -q[3]} }
func (q Quat) conj() Quat               { return Quat{-q[0], -q[1], -q[2], q[3]} }
func (q Quat) norm() float64            { return math.Sqrt(q.dot(q)) }
func finite(x float64) bool             { return !math.IsNaN(x) && !math.IsInf(x, 0) }
func finite3(v Vec3) bool               { return finite(v[0]) && finite(v[1]) && finite(v[2]) }
func finite4(q Quat) bool               { return finite(q[0]) && finite(q[1]) && finite(q[2]) && finite(q[3]) }
func (q Quat) mulScalar(s float64) Quat { return Quat{q[0] * s, q[1] * s, q[2] * s, q[3] * s} }

// normalized returns q/|q|, or the identity for a zero quaternion.
func (q Quat) normalized() Quat {
	n := q.norm()
	if n == 0 || !finite(n) {
		return IdentityQuat
	}
	return q.mulScalar(1 / n)
}

// mul returns the Hamilton product q*r (apply r first, then q).
func (q Quat) mul(r Quat) Quat {
	return Quat{
		q[3]*r[0] + q[0]*r[3] + q[1]*r[2] - q[2]*r[1],
		q[3]*r[1] - q[0]*r[2] + q[1]*r[3] + q[2]*r[0],
		q[3]*r[2] + q[0]*r[1] - q[1]*r[0] + q[2]*r[3],
		q[3]*r[3] - q[0]*r[0] - q[1]*r[1] - q[2]*r[2],
	}
}

// rotate returns v rotated by the unit quaternion q.
func (q Quat) rotate(v Vec3) Vec3 {
	// t = 2 * cross(q.xyz, v); v' = v + w*t + cross(q.xyz, t)
	tx := 2 * (q[1]*v[2] - q[2]*v[1])
	ty := 2 * (q[2]*v[0] - q[0]*v[2])
	tz := 2 * (q[0]*v[1] - q[1]*v[0])
	return Vec3{
		v[0] + q[3]*tx + (q[1]*tz - q[2]*ty),
		v[1] + q[3]*ty + (q[2]*tx - q[0]*tz),
		v[2] + q[3]*tz + (q[0]*ty - q[1]*tx),
	}
}

// axisAngle returns the rotation of angle radians about a unit axis.
func axisAngle(axis int, angle float64) Quat {
	s, c := math.Sincos(angle / 2)
	q := Quat{0, 0, 0, c}
	q[axis] = s
	return q
}

// quatAngle returns the angle in radians of the rotation between unit
// quaternions a and b (sign-insensitive). It is accurate for tiny angles,
// where acos of the dot product is not.
func quatAngle(a, b Quat) float64 {
	if a.dot(b) < 0 {
		b = b.neg()
	}
	d := Quat{a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]}.norm()
	// |a-b| = 2 sin(theta/4)
	h := d / 2
	if h > 1 {
		h = 1
	}
	return 4 * math.Asin(h)
}

// Transform is a float64 affine transform: translation, rotation, scale
// (applied scale first, then rotation, then translation).
type Transform struct {
	T Vec3
	R Quat
	S Vec3
}

// IdentityTransform is the transform that does nothing.
var IdentityTransform = Transform{R: IdentityQuat, S: Vec3{1, 1, 1}}

// mat4 is a float64 column-major 4x4 matrix.
type mat4 [16]float64

func (t Transform) matrix() mat4 {
	x, y, z, w := t.R[0], t.R[1], t.R[2], t.R[3]
	xx, yy, zz := x*x, y*y, z*z
	xy, xz, yz := x*y, x*z, y*z
	wx, wy, wz := w*x, w*y, w*z
	sx, sy, sz := t.S[0], t.S[1], t.S[2]
	return mat4{
		(1 - 2*(yy+zz)) * sx, 2 * (xy + wz) * sx, 2 * (xz - wy) * sx, 0,
		2 * (xy - wz) * sy, (1 - 2*(xx+zz)) * sy, 2 * (yz + wx) * sy, 0,
		2 * (xz + wy) * sz, 2 * (yz - wx) * sz, (1 - 2*(xx+yy)) * sz, 0,
		t.T[0], t.T[1], t.T[2], 1,
	}
}

func (a *mat4) mul(b *mat4) mat4 {
	var r mat4
	for c := 0; c < 4; c++ {
		for row := 0; row < 4; row++ {
			r[c*4+row] = a[row]*b[c*4] + a[4+row]*b[c*4+1] + a[8+row]*b[c*4+2] + a[12+row]*b[c*4+3]
		}
	}
	return r
}

func (a *mat4) point(v Vec3) Vec3 {
	return Vec3{
		a[0]*v[0] + a[4]*v[1] + a[8]*v[2] + a[12],
		a[1]*v[0] + a[5]*v[1] + a[9]*v[2] + a[13],
		a[2]*v[0] + a[6]*v[1] + a[10]*v[2] + a[14],
	}
}

// maxAxisScale returns the largest column length of the 3x3 part.
func (a *mat4) maxAxisScale() float64 {
	m := 0.0
	for c := 0; c < 3; c++ {
		l := math.Sqrt(a[c*4]*a[c*4] + a[c*4+1]*a[c*4+1] + a[c*4+2]*a[c*4+2])
		m = math.Max(m, l)
	}
	return m
}

// decompose splits an affine matrix without shear into translation,
// rotation and scale. It fails (ok=false) on a singular, mirrored or
// non-finite matrix, or one whose bottom row is not (0,0,0,1).
func (a *mat4) decompose() (t Transform, ok bool) {
	for _, v := range a {
		if !finite(v) {
			return t, false
		}
	}
	if a[3] != 0 || a[7] != 0 || a[11] != 0 || math.Abs(a[15]-1) > 1e-6 {
		return t, false
	}
	t.T = Vec3{a[12], a[13], a[14]}
	var cols [3]Vec3
	for c := 0; c < 3; c++ {
		col := Vec3{a[c*4], a[c*4+1], a[c*4+2]}
		l := col.length()
		if l < 1e-12 {
			return t, false
		}
		t.S[c] = l
		cols[c] = col.scale(1 / l)
	}
	// det of the rotation part must be +1 (no mirroring).
	det := cols[0][0]*(cols[1][1]*cols[2][2]-cols[2][1]*cols[1][2]) -
		cols[1][0]*(cols[0][1]*cols[2][2]-cols[2][1]*cols[0][2]) +
		cols[2][0]*(cols[0][1]*cols[1][2]-cols[1][1]*cols[0][2])
	if det < 0.5 {
		return t, false
	}
	t.R = quatFromBasis(cols)
	return t, true
}

// quatFromBasis converts an orthonormal basis (columns) to a quaternion.
func quatFromBasis(c [3]Vec3) Quat {
	m00, m01, m02 := c[0][0], c[1][0], c[2][0]
	m10, m11, m12 := c[0][1], c[1][1], c[2][1]
	m20, m21, m22 := c[0][2], c[1][2], c[2][2]
	var q Quat
	tr := m00 + m11 + m22
	switch {
	case tr > 0:
		s := math.Sqrt(tr+1) * 2
		q = Quat{(m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, s / 4}
	case m00 > m11 && m00 > m22:
		s := math.Sqrt(1+m00-m11-m22) * 2
		q = Quat{s / 4, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s}
	case m11 > m22:
		s := math.Sqrt(1+m11-m00-m22) * 2
		q = Quat{(m01 + m10) / s, s / 4, (m12 + m21) / s, (m02 - m20) / s}
	default:
		s := math.Sqrt(1+m22-m00-m11) * 2
		q = Quat{(m02 + m20) / s, (m12 + m21) / s, s / 4, (m10 - m01) / s}
	}
	return q.normalized()
}

// compose returns parent∘child for transforms whose scales are uniform or
// whose child rotation keeps the axes (exact for the cases we fold: a
// constant ancestor transform above a skeleton root).
func compose(p, c Transform) Transform {
	return Transform{
		T: p.T.add(p.R.rotate(p.S.mul(c.T))),
		R: p.R.mul(c.R).normalized(),
		S: p.S.mul(c.S),
	}
}

// vec applies the 3x3 part of a to v.
func (a *mat4) vec(v Vec3) Vec3 {
	return Vec3{
		a[0]*v[0] + a[4]*v[1] + a[8]*v[2],
		a[1]*v[0] + a[5]*v[1] + a[9]*v[2],
		a[2]*v[0] + a[6]*v[1] + a[10]*v[2],
	}
}

// inverse3 returns the inverse of the 3x3 part (zero translation); a
// singular matrix gives zeros.
func (a *mat4) inverse3() mat4 {
	m00, m01, m02 := a[0], a[4], a[8]
	m10, m11, m12 := a[1], a[5], a[9]
	m20, m21, m22 := a[2], a[6], a[10]
	c00 := m11*m22 - m12*m21
	c01 := m12*m20 - m10*m22
	c02 := m10*m21 - m11*m20
	det := m00*c00 + m01*c01 + m02*c02
	var r mat4
	r[15] = 1
	if det == 0 || !finite(det) {
		return r
	}
	id := 1 / det
	// r = adj / det, column-major
	r[0] = c00 * id
	r[1] = c01 * id
	r[2] = c02 * id
	r[4] = (m02*m21 - m01*m22) * id
	r[5] = (m00*m22 - m02*m20) * id
	r[6] = (m01*m20 - m00*m21) * id
	r[8] = (m01*m12 - m02*m11) * id
	r[9] = (m02*m10 - m00*m12) * id
	r[10] = (m00*m11 - m01*m10) * id
	return r
}
