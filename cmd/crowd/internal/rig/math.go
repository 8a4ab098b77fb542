package rig

import (
	"math"

	"github.com/go-gl/mathgl/mgl64"
)

// Offline float64 maths for building the rig (never on the frame path):
// mathgl's vectors, quaternions and column-major matrices, plus the few
// operations the rig needs that mathgl lacks or defines differently.

type (
	vec3 = mgl64.Vec3
	mat  = mgl64.Mat4
)

// unit returns v normalised, or v itself when it is zero (mgl64's
// Normalize divides by zero).
func unit(v vec3) vec3 {
	l := v.Len()
	if l == 0 {
		return v
	}
	return v.Mul(1 / l)
}

// quatXYZW converts anim's quaternion layout (x, y, z, w).
func quatXYZW(q [4]float64) mgl64.Quat { return mgl64.Quat{W: q[3], V: vec3{q[0], q[1], q[2]}} }

// xyzw converts back to anim's layout.
func xyzw(q mgl64.Quat) [4]float64 { return [4]float64{q.V[0], q.V[1], q.V[2], q.W} }

// trs returns T * R * S: p' = t + r*(s*p).
func trs(t vec3, r mgl64.Quat, s vec3) mat {
	return mgl64.Translate3D(t[0], t[1], t[2]).Mul4(r.Mat4()).Mul4(mgl64.Scale3D(s[0], s[1], s[2]))
}

// point transforms p by an affine matrix.
func point(m *mat, p vec3) vec3 { return m.Mul4x1(p.Vec4(1)).Vec3() }

// translation is an affine matrix's translation column.
func translation(m *mat) vec3 { return m.Col(3).Vec3() }

// rotationOf returns the rotation of an affine matrix with positive scale
// (its columns normalised first), as a unit quaternion.
func rotationOf(m *mat) mgl64.Quat {
	c0, c1, c2 := unit(m.Col(0).Vec3()), unit(m.Col(1).Vec3()), unit(m.Col(2).Vec3())
	r := mgl64.Mat3FromCols(c0, c1, c2)
	q := mgl64.Mat4ToQuat(r.Mat4())
	if l := q.Len(); l > 0 && !math.IsNaN(l) {
		return q.Normalize()
	}
	return mgl64.QuatIdent()
}
