package offline

import "github.com/vkjobs/vkjobs/anim/vmath"

// Offline maths (import, fitting, error measurement) is float64, from
// package vmath; the runtime (sampling, local-to-model) is float32.
// Quaternions are (x, y, z, w).

// Vec3 is a 3-component float64 vector.
type Vec3 = vmath.Vec3

// Quat is a float64 quaternion (x, y, z, w), w the scalar part.
type Quat = vmath.Quat

// Transform is a float64 affine transform: translation, rotation, scale
// (applied scale first, then rotation, then translation).
type Transform = vmath.Transform

// IdentityQuat is the rotation that does nothing.
var IdentityQuat = vmath.IdentityQuat

// IdentityTransform is the transform that does nothing.
var IdentityTransform = vmath.IdentityTransform

// mat4 is a float64 column-major 4x4 matrix.
type mat4 = vmath.Mat4

var (
	axisAngle = vmath.AxisAngle
	quatAngle = vmath.QuatAngle
	compose   = vmath.Compose
)
