package anim

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/vkjobs/vkjobs/kernels"
)

// ModelFloats is the number of float32 per bone in a model-space matrix:
// a 4x4 column-major matrix (std430 mat4), translation in floats 12..14.
const ModelFloats = 16

// LocalToModel converts local poses (PoseFloats per bone, parent-relative,
// as SampleJob writes them) into model-space matrices (ModelFloats per
// bone) for the instances [begin, end) of a batch of poses of one skeleton
// (kernels.ToModel is the per-step form over kernels.Transform and
// kernels.Mat4, the same memory as these floats; kernels.TransformsOf and
// kernels.Mat4sOf view one as the other):
// instance i reads local[i*n*12:] and writes model[i*n*16:], n =
// len(parents). parents[b] is bone b's parent (-1 for a root) and must be
// smaller than b; local and model must not share memory. It never
// allocates; a bad argument is an error (nothing is written).
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
	// Instance i's matrices would overwrite poses not yet read (its own,
	// or a later instance's): refuse any overlap of the range's inputs and
	// outputs, not only within one instance.
	if floatsOverlap(local[begin*n*PoseFloats:end*n*PoseFloats], model[begin*n*ModelFloats:end*n*ModelFloats]) {
		return errors.New("anim: LocalToModel: local and model share memory; pass separate slices")
	}
	for i := begin; i < end; i++ {
		localToModel(parents, local[i*n*PoseFloats:(i+1)*n*PoseFloats], model[i*n*ModelFloats:(i+1)*n*ModelFloats])
	}
	return nil
}

// floatsOverlap reports whether a and b share memory.
func floatsOverlap(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b))*4 && pb < pa+uintptr(len(a))*4
}

// localToModel handles one instance (inputs validated) with the Go
// reference of the kernels' local-to-model code (kernels.ToModelGo:
// one implementation of the maths, the same bits on every machine).
func localToModel(parents []int32, local, model []float32) {
	if err := kernels.ToModelGo(parents, kernels.TransformsOf(local), kernels.Mat4sOf(model)); err != nil {
		panic(err) // validated by LocalToModel
	}
}
