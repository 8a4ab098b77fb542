package anim

import (
	"errors"
	"fmt"
)

// ModelFloats is the number of float32 per bone in a model-space matrix:
// a 4x4 column-major matrix (std430 mat4), translation in floats 12..14.
const ModelFloats = 16

// LocalToModel converts local poses (PoseFloats per bone, parent-relative,
// as SampleJob writes them) into model-space matrices (ModelFloats per
// bone) for the instances [begin, end) of a batch of poses of one skeleton:
// instance i reads local[i*n*12:] and writes model[i*n*16:], n =
// len(parents). parents[b] is bone b's parent (-1 for a root) and must be
// smaller than b. It never allocates; a bad argument is an error (nothing
// is written).
func LocalToModel(parents []int32, local, model []float32, begin, end int) error {
	n := len(parents)
	if n == 0 {
		return errors.New("anim: LocalToModel: no bones")
	}
	for b, p := range parents {
		if p < -1 || int(p) >= b {
			return fmt.Errorf("anim: LocalToModel: bone %d has parent %d; parents must come first", b, p)
		}
	}
	count := len(local) / (n * PoseFloats)
	if len(model)/(n*ModelFloats) < count {
		count = len(model) / (n * ModelFloats)
	}
	if begin < 0 || end < begin || end > count {
		return fmt.Errorf("anim: LocalToModel: range [%d,%d) of %d instances (%d local, %d model floats, %d bones)", begin, end, count, len(local), len(model), n)
	}
	for i := begin; i < end; i++ {
		localToModel(parents, local[i*n*PoseFloats:(i+1)*n*PoseFloats], model[i*n*ModelFloats:(i+1)*n*ModelFloats])
	}
	return nil
}

// localToModel handles one instance (inputs validated).
func localToModel(parents []int32, local, model []float32) {
	for b, p := range parents {
		l := local[b*PoseFloats : b*PoseFloats+PoseFloats]
		m := model[b*ModelFloats : b*ModelFloats+ModelFloats]
		x, y, z, w := l[0], l[1], l[2], l[3]
		tx, ty, tz := l[4], l[5], l[6]
		sx, sy, sz := l[8], l[9], l[10]
		xx, yy, zz := x*x, y*y, z*z
		xy, xz, yz := x*y, x*z, y*z
		wx, wy, wz := w*x, w*y, w*z
		// Local matrix columns (rotation times scale) and translation.
		a0, a1, a2 := (1-2*(yy+zz))*sx, 2*(xy+wz)*sx, 2*(xz-wy)*sx
		b0, b1, b2 := 2*(xy-wz)*sy, (1-2*(xx+zz))*sy, 2*(yz+wx)*sy
		c0, c1, c2 := 2*(xz+wy)*sz, 2*(yz-wx)*sz, (1-2*(xx+yy))*sz
		if p < 0 {
			m[0], m[1], m[2], m[3] = a0, a1, a2, 0
			m[4], m[5], m[6], m[7] = b0, b1, b2, 0
			m[8], m[9], m[10], m[11] = c0, c1, c2, 0
			m[12], m[13], m[14], m[15] = tx, ty, tz, 1
			continue
		}
		q := model[int(p)*ModelFloats : int(p)*ModelFloats+ModelFloats]
		// model = parent * local (affine: bottom rows are 0 0 0 1).
		m[0] = q[0]*a0 + q[4]*a1 + q[8]*a2
		m[1] = q[1]*a0 + q[5]*a1 + q[9]*a2
		m[2] = q[2]*a0 + q[6]*a1 + q[10]*a2
		m[3] = 0
		m[4] = q[0]*b0 + q[4]*b1 + q[8]*b2
		m[5] = q[1]*b0 + q[5]*b1 + q[9]*b2
		m[6] = q[2]*b0 + q[6]*b1 + q[10]*b2
		m[7] = 0
		m[8] = q[0]*c0 + q[4]*c1 + q[8]*c2
		m[9] = q[1]*c0 + q[5]*c1 + q[9]*c2
		m[10] = q[2]*c0 + q[6]*c1 + q[10]*c2
		m[11] = 0
		m[12] = q[0]*tx + q[4]*ty + q[8]*tz + q[12]
		m[13] = q[1]*tx + q[5]*ty + q[9]*tz + q[13]
		m[14] = q[2]*tx + q[6]*ty + q[10]*tz + q[14]
		m[15] = 1
	}
}
