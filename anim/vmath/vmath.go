// Package vmath is the project's one small vector-maths package: float64
// vectors, quaternions (x, y, z, w), transforms (translation, rotation,
// scale) and column-major 4x4 matrices for offline work (animation import,
// compression and error measurement, building rigs), and the few float32
// camera matrices the renderer needs. Frame-path maths (sampling,
// local-to-model, skinning) is float32 in packages anim and kernels.
package vmath

import "math"

// Vec3 is a 3-component float64 vector.
type Vec3 [3]float64

// Quat is a float64 quaternion (x, y, z, w), w the scalar part.
type Quat [4]float64

// IdentityQuat is the rotation that does nothing.
var IdentityQuat = Quat{0, 0, 0, 1}

func (a Vec3) Add(b Vec3) Vec3      { return Vec3{a[0] + b[0], a[1] + b[1], a[2] + b[2]} }
func (a Vec3) Sub(b Vec3) Vec3      { return Vec3{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }
func (a Vec3) Mul(s float64) Vec3   { return Vec3{a[0] * s, a[1] * s, a[2] * s} }
func (a Vec3) MulVec(b Vec3) Vec3   { return Vec3{a[0] * b[0], a[1] * b[1], a[2] * b[2]} }
func (a Vec3) Len() float64         { return math.Sqrt(a[0]*a[0] + a[1]*a[1] + a[2]*a[2]) }
func (a Vec3) Dist(b Vec3) float64  { return a.Sub(b).Len() }
func (q Quat) Dot(r Quat) float64   { return q[0]*r[0] + q[1]*r[1] + q[2]*r[2] + q[3]*r[3] }
func (q Quat) Neg() Quat            { return Quat{-q[0], -q[1], -q[2], -q[3]} }
func (q Quat) Conj() Quat           { return Quat{-q[0], -q[1], -q[2], q[3]} }
func (q Quat) Norm() float64        { return math.Sqrt(q.Dot(q)) }
func (q Quat) Scale(s float64) Quat { return Quat{q[0] * s, q[1] * s, q[2] * s, q[3] * s} }

// Normalized returns q/|q|, or the identity for a zero quaternion.
func (q Quat) Normalized() Quat {
	n := q.Norm()
	if n == 0 || !finite(n) {
		return IdentityQuat
	}
	return q.Scale(1 / n)
}

// Mul returns the Hamilton product q*r (apply r first, then q).
func (q Quat) Mul(r Quat) Quat {
	return Quat{
		q[3]*r[0] + q[0]*r[3] + q[1]*r[2] - q[2]*r[1],
		q[3]*r[1] - q[0]*r[2] + q[1]*r[3] + q[2]*r[0],
		q[3]*r[2] + q[0]*r[1] - q[1]*r[0] + q[2]*r[3],
		q[3]*r[3] - q[0]*r[0] - q[1]*r[1] - q[2]*r[2],
	}
}

// Rotate returns v rotated by the unit quaternion q.
func (q Quat) Rotate(v Vec3) Vec3 {
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

// AxisAngle returns the rotation of angle radians about a unit axis.
func AxisAngle(axis int, angle float64) Quat {
	s, c := math.Sincos(angle / 2)
	q := Quat{0, 0, 0, c}
	q[axis] = s
	return q
}

// QuatAngle returns the angle in radians of the rotation between unit
// quaternions a and b (sign-insensitive). It is accurate for tiny angles,
// where acos of the dot product is not.
func QuatAngle(a, b Quat) float64 {
	if a.Dot(b) < 0 {
		b = b.Neg()
	}
	d := Quat{a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]}.Norm()
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

// Mat4 is a float64 column-major 4x4 matrix.
type Mat4 [16]float64

// Matrix returns T·R·S as a matrix.
func (t Transform) Matrix() Mat4 {
	x, y, z, w := t.R[0], t.R[1], t.R[2], t.R[3]
	xx, yy, zz := x*x, y*y, z*z
	xy, xz, yz := x*y, x*z, y*z
	wx, wy, wz := w*x, w*y, w*z
	sx, sy, sz := t.S[0], t.S[1], t.S[2]
	return Mat4{
		(1 - 2*(yy+zz)) * sx, 2 * (xy + wz) * sx, 2 * (xz - wy) * sx, 0,
		2 * (xy - wz) * sy, (1 - 2*(xx+zz)) * sy, 2 * (yz + wx) * sy, 0,
		2 * (xz + wy) * sz, 2 * (yz - wx) * sz, (1 - 2*(xx+yy)) * sz, 0,
		t.T[0], t.T[1], t.T[2], 1,
	}
}

// Mul returns a·b.
func (a *Mat4) Mul(b *Mat4) Mat4 {
	var r Mat4
	for c := 0; c < 4; c++ {
		for row := 0; row < 4; row++ {
			r[c*4+row] = a[row]*b[c*4] + a[4+row]*b[c*4+1] + a[8+row]*b[c*4+2] + a[12+row]*b[c*4+3]
		}
	}
	return r
}

// Point transforms the point v.
func (a *Mat4) Point(v Vec3) Vec3 {
	return Vec3{
		a[0]*v[0] + a[4]*v[1] + a[8]*v[2] + a[12],
		a[1]*v[0] + a[5]*v[1] + a[9]*v[2] + a[13],
		a[2]*v[0] + a[6]*v[1] + a[10]*v[2] + a[14],
	}
}

// MaxAxisScale returns the largest column length of the 3x3 part.
func (a *Mat4) MaxAxisScale() float64 {
	m := 0.0
	for c := 0; c < 3; c++ {
		l := math.Sqrt(a[c*4]*a[c*4] + a[c*4+1]*a[c*4+1] + a[c*4+2]*a[c*4+2])
		m = math.Max(m, l)
	}
	return m
}

// Decompose splits an affine matrix without shear into translation,
// rotation and scale. It fails (ok=false) on a singular, mirrored or
// non-finite matrix, or one whose bottom row is not (0,0,0,1).
func (a *Mat4) Decompose() (t Transform, ok bool) {
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
		l := col.Len()
		if l < 1e-12 {
			return t, false
		}
		t.S[c] = l
		cols[c] = col.Mul(1 / l)
	}
	// det of the rotation part must be +1 (no mirroring).
	det := cols[0][0]*(cols[1][1]*cols[2][2]-cols[2][1]*cols[1][2]) -
		cols[1][0]*(cols[0][1]*cols[2][2]-cols[2][1]*cols[0][2]) +
		cols[2][0]*(cols[0][1]*cols[1][2]-cols[1][1]*cols[0][2])
	if det < 0.5 {
		return t, false
	}
	t.R = QuatFromBasis(cols)
	return t, true
}

// QuatFromBasis converts an orthonormal basis (columns) to a quaternion.
func QuatFromBasis(c [3]Vec3) Quat {
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
	return q.Normalized()
}

// Compose returns parent∘child for transforms whose scales are uniform or
// whose child rotation keeps the axes (exact for the cases we fold: a
// constant ancestor transform above a skeleton root).
func Compose(p, c Transform) Transform {
	return Transform{
		T: p.T.Add(p.R.Rotate(p.S.MulVec(c.T))),
		R: p.R.Mul(c.R).Normalized(),
		S: p.S.MulVec(c.S),
	}
}

// Vec applies the 3x3 part of a to v.
func (a *Mat4) Vec(v Vec3) Vec3 {
	return Vec3{
		a[0]*v[0] + a[4]*v[1] + a[8]*v[2],
		a[1]*v[0] + a[5]*v[1] + a[9]*v[2],
		a[2]*v[0] + a[6]*v[1] + a[10]*v[2],
	}
}

// Inverse3 returns the inverse of the 3x3 part (zero translation); a
// singular matrix gives zeros.
func (a *Mat4) Inverse3() Mat4 {
	m00, m01, m02 := a[0], a[4], a[8]
	m10, m11, m12 := a[1], a[5], a[9]
	m20, m21, m22 := a[2], a[6], a[10]
	c00 := m11*m22 - m12*m21
	c01 := m12*m20 - m10*m22
	c02 := m10*m21 - m11*m20
	det := m00*c00 + m01*c01 + m02*c02
	var r Mat4
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

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Finite reports whether every component of a is finite.
func (a Vec3) Finite() bool { return finite(a[0]) && finite(a[1]) && finite(a[2]) }

// Finite reports whether every component of q is finite.
func (q Quat) Finite() bool { return finite(q[0]) && finite(q[1]) && finite(q[2]) && finite(q[3]) }

// Slerp interpolates spherically from a (u = 0) to b (u = 1) on the
// shorter arc, with a normalised lerp where the two are within about 1.8°
// (sin θ too small to divide by); the result is normalised.
func Slerp(a, b Quat, u float64) Quat {
	d := a.Dot(b)
	if d < 0 {
		b, d = b.Neg(), -d
	}
	if d > 0.9995 {
		var r Quat
		for i := range r {
			r[i] = a[i] + (b[i]-a[i])*u
		}
		return r.Normalized()
	}
	th := math.Acos(d)
	s := math.Sin(th)
	wa, wb := math.Sin((1-u)*th)/s, math.Sin(u*th)/s
	return Quat{wa*a[0] + wb*b[0], wa*a[1] + wb*b[1], wa*a[2] + wb*b[2], wa*a[3] + wb*b[3]}.Normalized()
}

// Dot returns a·b.
func (a Vec3) Dot(b Vec3) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }

// Cross returns a×b.
func (a Vec3) Cross(b Vec3) Vec3 {
	return Vec3{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

// Unit returns a/|a|, or a itself when it is zero.
func (a Vec3) Unit() Vec3 {
	if l := a.Len(); l > 0 {
		return a.Mul(1 / l)
	}
	return a
}

// Translation is an affine matrix's translation column.
func (a *Mat4) Translation() Vec3 { return Vec3{a[12], a[13], a[14]} }

// Rotation returns the rotation of an affine matrix with positive scale
// (its columns normalised first), or the identity when it has none.
func (a *Mat4) Rotation() Quat {
	var cols [3]Vec3
	for c := range 3 {
		cols[c] = Vec3{a[c*4], a[c*4+1], a[c*4+2]}.Unit()
	}
	return QuatFromBasis(cols)
}

// Inverse returns the inverse of an affine matrix (bottom row 0 0 0 1):
// the inverse of its 3x3 part and the translation it undoes; a singular
// matrix gives zeros in the 3x3 part.
func (a *Mat4) Inverse() Mat4 {
	r := a.Inverse3()
	t := r.Vec(a.Translation())
	r[12], r[13], r[14] = -t[0], -t[1], -t[2]
	return r
}

// Perspective is OpenGL's projection (y up, depth -1..1), column-major,
// float32 (for the GPU).
func Perspective(fovY, aspect, near, far float32) [16]float32 {
	f := float32(1 / math.Tan(float64(fovY)/2))
	return [16]float32{
		f / aspect, 0, 0, 0,
		0, f, 0, 0,
		0, 0, (far + near) / (near - far), -1,
		0, 0, 2 * far * near / (near - far), 0,
	}
}

// LookAt is the view matrix of a camera at eye looking at target, float32.
func LookAt(eye, target, up [3]float32) [16]float32 {
	f := norm3f(sub3f(target, eye))
	s := norm3f(cross3f(f, up))
	u := cross3f(s, f)
	return [16]float32{
		s[0], u[0], -f[0], 0,
		s[1], u[1], -f[1], 0,
		s[2], u[2], -f[2], 0,
		-dot3f(s, eye), -dot3f(u, eye), dot3f(f, eye), 1,
	}
}

// Mul4f returns a·b for float32 column-major matrices.
func Mul4f(a, b *[16]float32) [16]float32 {
	var o [16]float32
	for c := 0; c < 4; c++ {
		for r := 0; r < 4; r++ {
			o[4*c+r] = a[r]*b[4*c] + a[4+r]*b[4*c+1] + a[8+r]*b[4*c+2] + a[12+r]*b[4*c+3]
		}
	}
	return o
}

func sub3f(a, b [3]float32) [3]float32 { return [3]float32{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }
func dot3f(a, b [3]float32) float32    { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }
func cross3f(a, b [3]float32) [3]float32 {
	return [3]float32{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}
func norm3f(a [3]float32) [3]float32 {
	l := float32(math.Sqrt(float64(dot3f(a, a))))
	if l == 0 {
		return a
	}
	return [3]float32{a[0] / l, a[1] / l, a[2] / l}
}
