package rig

import "math"

// Offline float64 maths for building the rig (never on the frame path).

type vec3 [3]float64

func (a vec3) add(b vec3) vec3      { return vec3{a[0] + b[0], a[1] + b[1], a[2] + b[2]} }
func (a vec3) sub(b vec3) vec3      { return vec3{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }
func (a vec3) scale(s float64) vec3 { return vec3{a[0] * s, a[1] * s, a[2] * s} }
func (a vec3) dot(b vec3) float64   { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }
func (a vec3) len() float64         { return math.Sqrt(a.dot(a)) }
func (a vec3) cross(b vec3) vec3 {
	return vec3{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

func (a vec3) norm() vec3 {
	l := a.len()
	if l == 0 {
		return a
	}
	return a.scale(1 / l)
}

// quat is x, y, z, w.
type quat [4]float64

var identityQuat = quat{0, 0, 0, 1}

func (q quat) mul(r quat) quat {
	return quat{
		q[3]*r[0] + q[0]*r[3] + q[1]*r[2] - q[2]*r[1],
		q[3]*r[1] - q[0]*r[2] + q[1]*r[3] + q[2]*r[0],
		q[3]*r[2] + q[0]*r[1] - q[1]*r[0] + q[2]*r[3],
		q[3]*r[3] - q[0]*r[0] - q[1]*r[1] - q[2]*r[2],
	}
}

func (q quat) conj() quat { return quat{-q[0], -q[1], -q[2], q[3]} }

func (q quat) rotate(v vec3) vec3 {
	p := q.mul(quat{v[0], v[1], v[2], 0}).mul(q.conj())
	return vec3{p[0], p[1], p[2]}
}

func (q quat) norm() quat {
	l := math.Sqrt(q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3])
	if l == 0 {
		return identityQuat
	}
	return quat{q[0] / l, q[1] / l, q[2] / l, q[3] / l}
}

// xform is a rigid transform with a scale: p' = t + r*(s*p).
type xform struct {
	t vec3
	r quat
	s vec3
}

// mat is a column-major 4x4 affine matrix.
type mat [16]float64

func (x xform) matrix() mat {
	q := x.r
	xx, yy, zz := q[0]*q[0], q[1]*q[1], q[2]*q[2]
	xy, xz, yz := q[0]*q[1], q[0]*q[2], q[1]*q[2]
	wx, wy, wz := q[3]*q[0], q[3]*q[1], q[3]*q[2]
	sx, sy, sz := x.s[0], x.s[1], x.s[2]
	return mat{
		(1 - 2*(yy+zz)) * sx, 2 * (xy + wz) * sx, 2 * (xz - wy) * sx, 0,
		2 * (xy - wz) * sy, (1 - 2*(xx+zz)) * sy, 2 * (yz + wx) * sy, 0,
		2 * (xz + wy) * sz, 2 * (yz - wx) * sz, (1 - 2*(xx+yy)) * sz, 0,
		x.t[0], x.t[1], x.t[2], 1,
	}
}

func (a *mat) mul(b *mat) mat {
	var c mat
	for j := 0; j < 4; j++ {
		for i := 0; i < 4; i++ {
			c[4*j+i] = a[i]*b[4*j] + a[4+i]*b[4*j+1] + a[8+i]*b[4*j+2] + a[12+i]*b[4*j+3]
		}
	}
	return c
}

func (a *mat) point(p vec3) vec3 {
	return vec3{
		a[0]*p[0] + a[4]*p[1] + a[8]*p[2] + a[12],
		a[1]*p[0] + a[5]*p[1] + a[9]*p[2] + a[13],
		a[2]*p[0] + a[6]*p[1] + a[10]*p[2] + a[14],
	}
}

func (a *mat) vector(p vec3) vec3 {
	return vec3{
		a[0]*p[0] + a[4]*p[1] + a[8]*p[2],
		a[1]*p[0] + a[5]*p[1] + a[9]*p[2],
		a[2]*p[0] + a[6]*p[1] + a[10]*p[2],
	}
}

func (a *mat) translation() vec3 { return vec3{a[12], a[13], a[14]} }

// inverseAffine inverts an affine matrix (last row 0 0 0 1).
func (a *mat) inverseAffine() mat {
	// Inverse of the upper 3x3 by cofactors.
	m00, m01, m02 := a[0], a[4], a[8]
	m10, m11, m12 := a[1], a[5], a[9]
	m20, m21, m22 := a[2], a[6], a[10]
	c00 := m11*m22 - m12*m21
	c01 := m12*m20 - m10*m22
	c02 := m10*m21 - m11*m20
	det := m00*c00 + m01*c01 + m02*c02
	if det == 0 {
		det = 1e-30
	}
	inv := 1 / det
	var r mat
	r[0] = c00 * inv
	r[1] = c01 * inv
	r[2] = c02 * inv
	r[4] = (m02*m21 - m01*m22) * inv
	r[5] = (m00*m22 - m02*m20) * inv
	r[6] = (m01*m20 - m00*m21) * inv
	r[8] = (m01*m12 - m02*m11) * inv
	r[9] = (m02*m10 - m00*m12) * inv
	r[10] = (m00*m11 - m01*m10) * inv
	t := a.translation()
	r[12] = -(r[0]*t[0] + r[4]*t[1] + r[8]*t[2])
	r[13] = -(r[1]*t[0] + r[5]*t[1] + r[9]*t[2])
	r[14] = -(r[2]*t[0] + r[6]*t[1] + r[10]*t[2])
	r[15] = 1
	return r
}

// rotationOf returns the rotation of an affine matrix with positive scale
// (columns normalised), as a unit quaternion.
func (a *mat) rotationOf() quat {
	c0 := vec3{a[0], a[1], a[2]}.norm()
	c1 := vec3{a[4], a[5], a[6]}.norm()
	c2 := vec3{a[8], a[9], a[10]}.norm()
	m00, m11, m22 := c0[0], c1[1], c2[2]
	tr := m00 + m11 + m22
	var q quat
	switch {
	case tr > 0:
		s := math.Sqrt(tr+1) * 2
		q = quat{(c1[2] - c2[1]) / s, (c2[0] - c0[2]) / s, (c0[1] - c1[0]) / s, s / 4}
	case m00 > m11 && m00 > m22:
		s := math.Sqrt(1+m00-m11-m22) * 2
		q = quat{s / 4, (c1[0] + c0[1]) / s, (c2[0] + c0[2]) / s, (c1[2] - c2[1]) / s}
	case m11 > m22:
		s := math.Sqrt(1+m11-m00-m22) * 2
		q = quat{(c1[0] + c0[1]) / s, s / 4, (c2[1] + c1[2]) / s, (c2[0] - c0[2]) / s}
	default:
		s := math.Sqrt(1+m22-m00-m11) * 2
		q = quat{(c2[0] + c0[2]) / s, (c2[1] + c1[2]) / s, s / 4, (c0[1] - c1[0]) / s}
	}
	return q.norm()
}
