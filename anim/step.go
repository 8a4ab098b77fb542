package anim

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/vkjobs/vkjobs/kernels"
)

// Per-step calls. A character is animated on the caller's goroutine with
// one call per step, over types that fit each other as they are:
//
//	clip.Sample(t, cursor, local)                            // local []kernels.Transform
//	kernels.ToModelSkin(parents, local, invBind, model, pal) // model, pal []kernels.Mat4
//	kernels.LBS(verts, pal, out)                             // or DualQuatPalette + DQS
//
// (kernels.ToModel and kernels.Palette split the second step). SampleJob,
// LocalToModel and the kernels' scheduler tasks (CPU or GPU) are the batch
// form of the same code over many characters. Time is float32 seconds
// everywhere at run time (SampleInput.Time, ClipView.Duration, events);
// the offline importer and compressor work in float64 and convert once.
// None of these calls allocates.

// Sample writes the clip's pose at time t seconds (clamped to
// [0, Duration]; NaN reads as 0) into pose, one kernels.Transform per
// bone (the layout SampleJob writes as PoseFloats floats), on the
// caller's goroutine: SampleJob for one character, the same decoder.
// cursor is the character's, CursorWords() words (any content is safe;
// zeros to start; keep it between calls, so that playing forward reads
// the stream once; one left by another blob is reset, see the package
// doc for the exception);
// pose holds at least Bones() transforms (only those
// are written).
func (c ClipView) Sample(t float32, cursor []uint32, pose []kernels.Transform) error {
	if c.b == nil {
		return fmt.Errorf("anim: Sample: zero ClipView (no blob)")
	}
	nb := c.Bones()
	if len(pose) < nb {
		return fmt.Errorf("anim: Sample %q: pose holds %d bones, the clip has %d", c.Name(), len(pose), nb)
	}
	if len(cursor) < c.CursorWords() {
		return fmt.Errorf("anim: Sample %q: cursor of %d words, the clip needs %d (CursorWords)", c.Name(), len(cursor), c.CursorWords())
	}
	sampleOne(c.b.words, c.b.seeks.Load(), c.off, t, cursor[:c.CursorWords()], poseFloats(pose[:nb]))
	return nil
}

// poseFloats views transforms as the flat floats the sampler writes
// (kernels.Transform is PoseFloats float32, padding included).
func poseFloats(p []kernels.Transform) []float32 {
	if len(p) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(p))), len(p)*PoseFloats)
}

// InverseBindMatrices appends the skeleton's inverse bind matrices (one
// per bone, for kernels.Palette and kernels.ToModelSkin) to dst, or
// returns dst unchanged when there are none.
func (s SkeletonView) InverseBindMatrices(dst []kernels.Mat4) []kernels.Mat4 {
	if s.w(6) == 0 {
		return dst
	}
	base := s.off/4 + s.w(6)/4
	for b := range uint32(s.Bones()) {
		var m kernels.Mat4
		for k := range uint32(16) {
			m[k] = math.Float32frombits(s.b.words[base+16*b+k])
		}
		dst = append(dst, m)
	}
	return dst
}
