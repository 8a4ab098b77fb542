package rig

import "github.com/vkjobs/vkjobs/anim/vmath"

// Offline float64 maths for building the rig (never on the frame path):
// package vmath's vectors, quaternions and column-major matrices, the same
// as anim's.
type (
	vec3 = vmath.Vec3
	mat  = vmath.Mat4
)
