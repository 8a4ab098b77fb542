package kernels

import "math"

// The element types below are the std430 layouts of the kernels' streams.
// Each is a plain value (no pointers) whose Go layout equals the GLSL one,
// so sched.StreamOf over a slice of them is the buffer a shader reads. Their
// sizes are pinned by TestLayouts.

// Mat4 is a 4x4 float32 matrix in column-major order: element (row r,
// column c) is m[4*c+r], the layout of a GLSL mat4 in std430 and std140
// (64 bytes). Palettes hold affine transforms (last row 0 0 0 1).
type Mat4 [16]float32

// Identity returns the identity matrix.
func Identity() Mat4 {
	return Mat4{0: 1, 5: 1, 10: 1, 15: 1}
}

// Mul returns a*b (apply b first, then a), summing k = 0..3 in order.
func (a *Mat4) Mul(b *Mat4) Mat4 {
	var c Mat4
	for j := 0; j < 4; j++ {
		b0, b1, b2, b3 := b[4*j], b[4*j+1], b[4*j+2], b[4*j+3]
		for i := 0; i < 4; i++ {
			c[4*j+i] = a[i]*b0 + a[4+i]*b1 + a[8+i]*b2 + a[12+i]*b3
		}
	}
	return c
}

// TransformPoint returns the upper three rows of m * (p, 1).
func (m *Mat4) TransformPoint(p [3]float32) [3]float32 {
	return [3]float32{
		m[0]*p[0] + m[4]*p[1] + m[8]*p[2] + m[12],
		m[1]*p[0] + m[5]*p[1] + m[9]*p[2] + m[13],
		m[2]*p[0] + m[6]*p[1] + m[10]*p[2] + m[14],
	}
}

// TransformVector returns the upper-left 3x3 of m times v.
func (m *Mat4) TransformVector(v [3]float32) [3]float32 {
	return [3]float32{
		m[0]*v[0] + m[4]*v[1] + m[8]*v[2],
		m[1]*v[0] + m[5]*v[1] + m[9]*v[2],
		m[2]*v[0] + m[6]*v[1] + m[10]*v[2],
	}
}

// Transform is a parent-relative bone transform (std430, 48 bytes):
//
//	offset  0  Rot    rotation quaternion x, y, z, w (unit length)
//	offset 16  Trans  translation x, y, z, then 4 bytes of padding
//	offset 32  Scale  scale x, y, z, then 4 bytes of padding
//
// It is the GLSL struct { vec4 rot; vec4 trans; vec4 scale; }.
type Transform struct {
	Rot   [4]float32
	Trans [3]float32
	_     float32
	Scale [3]float32
	_     float32
}

// Matrix returns T * R * S, with the operation order of the shader's
// compose function.
func (x *Transform) Matrix() Mat4 {
	b0, b1, b2, b4, b5, b6, b8, b9, b10 := x.basis()
	return Mat4{
		b0, b1, b2, 0,
		b4, b5, b6, 0,
		b8, b9, b10, 0,
		x.Trans[0], x.Trans[1], x.Trans[2], 1,
	}
}

// basis returns the upper-left 3x3 of Matrix, R * S, column by column.
func (x *Transform) basis() (b0, b1, b2, b4, b5, b6, b8, b9, b10 float32) {
	q := &x.Rot
	x2, y2, z2 := q[0]+q[0], q[1]+q[1], q[2]+q[2]
	xx, yy, zz := q[0]*x2, q[1]*y2, q[2]*z2
	xy, xz, yz := q[0]*y2, q[0]*z2, q[1]*z2
	wx, wy, wz := q[3]*x2, q[3]*y2, q[3]*z2
	sx, sy, sz := x.Scale[0], x.Scale[1], x.Scale[2]
	return (1 - (yy + zz)) * sx, (xy + wz) * sx, (xz - wy) * sx,
		(xy - wz) * sy, (1 - (xx + zz)) * sy, (yz + wx) * sy,
		(xz + wy) * sz, (yz - wx) * sz, (1 - (xx + yy)) * sz
}

// DualQuat is a unit dual quaternion, a rigid transform (std430, 32 bytes):
//
//	offset  0  Real  rotation quaternion x, y, z, w
//	offset 16  Dual  0.5 * (t, 0) * Real
type DualQuat struct {
	Real [4]float32
	Dual [4]float32
}

// DualQuatFromRT returns the dual quaternion that rotates by the unit
// quaternion rot and then translates by t.
func DualQuatFromRT(rot [4]float32, t [3]float32) DualQuat {
	x, y, z, w := rot[0], rot[1], rot[2], rot[3]
	// dual = 0.5 * (t, 0) * rot (quaternion product).
	return DualQuat{
		Real: rot,
		Dual: [4]float32{
			0.5 * (t[0]*w + t[1]*z - t[2]*y),
			0.5 * (-t[0]*z + t[1]*w + t[2]*x),
			0.5 * (t[0]*y - t[1]*x + t[2]*w),
			-0.5 * (t[0]*x + t[1]*y + t[2]*z),
		},
	}
}

// RigidMatrix returns the rotation-then-translation matrix of rot and t.
func RigidMatrix(rot [4]float32, t [3]float32) Mat4 {
	x := Transform{Rot: rot, Trans: t, Scale: [3]float32{1, 1, 1}}
	return x.Matrix()
}

// AxisAngle returns the unit quaternion rotating by angle radians about the
// unit axis.
func AxisAngle(axis [3]float32, angle float64) [4]float32 {
	s, c := math.Sincos(angle / 2)
	return [4]float32{axis[0] * float32(s), axis[1] * float32(s), axis[2] * float32(s), float32(c)}
}

// SkinVertex is a bind-pose vertex of the skinning kernels (std430,
// 48 bytes; GLSL struct SkinVertex in shaders/skin_common.glsl):
//
//	offset  0  Pos      position x, y, z
//	offset 12  Normal   normal x, y, z
//	offset 24  Joints   4 bone indices of 8 bits (PackJoints), relative to the palette base
//	offset 28  Palette  palette base: index of the first bone of this vertex's skeleton
//	offset 32  Weights  4 blend weights, normally summing to 1
type SkinVertex struct {
	Pos     [3]float32
	Normal  [3]float32
	Joints  uint32
	Palette uint32
	Weights [4]float32
}

// PackJoints packs four 8-bit bone indices into SkinVertex.Joints.
func PackJoints(j0, j1, j2, j3 uint8) uint32 {
	return uint32(j0) | uint32(j1)<<8 | uint32(j2)<<16 | uint32(j3)<<24
}

// SkinnedVertex is a skinned output vertex (std430, 24 bytes).
type SkinnedVertex struct {
	Pos    [3]float32
	Normal [3]float32
}

// MinMax is one output of MinMaxF32 (GLSL vec2, 8 bytes).
type MinMax struct {
	Min, Max float32
}

// Segment is one input of ExpandLerp (GLSL vec2, 8 bytes): the outputs
// interpolate from A towards B.
type Segment struct {
	A, B float32
}
