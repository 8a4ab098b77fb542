package anim

import (
	"fmt"
	"math"
	"sort"
)

// ErrorStats summarises model-space error at virtual vertices: for every
// bone and every original sample, the largest displacement of three
// vertices at Distance along the bone's x, y and z axes between the source
// clip (float64) and what the sampler returns (after local-to-model).
type ErrorStats struct {
	Distance   float64 // metres from the bone
	Max        float64 // metres
	P99        float64 // 99th percentile over (bone, sample) pairs
	Mean       float64
	WorstBone  int
	WorstFrame int
	Samples    int
	sorted     []float64 // every (bone, sample) error, for MergeErrors
}

func (e ErrorStats) String() string {
	return fmt.Sprintf("at %g cm: max %.4f cm, p99 %.4f cm (bone %d, frame %d)", e.Distance*100, e.Max*100, e.P99*100, e.WorstBone, e.WorstFrame)
}

// Measure decompresses clip c from a loaded blob at every source sample
// (playing forward, as a game would) and compares it with the source clip
// src of skeleton sk, at each of the given vertex distances.
func Measure(sk *Skeleton, src *Clip, c ClipView, distances ...float64) ([]ErrorStats, error) {
	nb := sk.NumBones()
	if c.Bones() != nb {
		return nil, fmt.Errorf("anim: Measure: clip has %d bones, skeleton %d", c.Bones(), nb)
	}
	if c.Frames() != src.Frames {
		return nil, fmt.Errorf("anim: Measure: %d frames in the blob, %d in the source", c.Frames(), src.Frames)
	}
	in := []SampleInput{{Clip: c.Offset()}}
	job := SampleJob{
		Blob: c.b, Inputs: in, Cursors: make([]uint32, c.CursorWords()), CursorStride: c.CursorWords(),
		Bones: nb,
	}
	return measure(sk, src, func(f int, pose []float32) error {
		in[0].Time = float32(float64(f) / src.Rate)
		job.Poses = pose
		return job.Run()
	}, distances)
}

// BitSquidFloor measures the error of the seed's quantisation alone (10-bit
// smallest-three rotations, 16-bit positions over -10..10 m, every sample
// kept, no curve): the floor under any curve fit that uses those widths.
func BitSquidFloor(sk *Skeleton, src *Clip, distances ...float64) ([]ErrorStats, error) {
	local := make([]Transform, sk.NumBones())
	return measure(sk, src, func(f int, pose []float32) error {
		src.Pose(f, local)
		for b, t := range local {
			pt, ps := bitsquidPosition(vec4(t.T)), bitsquidPosition(vec4(t.S))
			t.T, t.S = Vec3{pt[0], pt[1], pt[2]}, Vec3{ps[0], ps[1], ps[2]}
			t.R = Quat(bitsquidRotation([4]float64(t.R)))
			w := poseWords(t)
			copy(pose[b*PoseFloats:], w[:])
		}
		return nil
	}, distances)
}

// measure compares poses produced by poseAt with the source clip.
func measure(sk *Skeleton, src *Clip, poseAt func(f int, pose []float32) error, distances []float64) ([]ErrorStats, error) {
	nb := sk.NumBones()
	if src.NumBones() != nb {
		return nil, fmt.Errorf("anim: measure: source has %d bones, skeleton %d", src.NumBones(), nb)
	}
	pose := make([]float32, nb*PoseFloats)
	model32 := make([]float32, nb*ModelFloats)
	local := make([]Transform, nb)
	model := make([]mat4, nb)
	errs := make([][]float64, len(distances))
	for i := range errs {
		errs[i] = make([]float64, 0, nb*src.Frames)
	}
	stats := make([]ErrorStats, len(distances))
	for f := range src.Frames {
		if err := poseAt(f, pose); err != nil {
			return nil, err
		}
		if err := LocalToModel(sk.Parents, pose, model32, 0, 1); err != nil {
			return nil, err
		}
		src.Pose(f, local)
		modelMatrices(sk.Parents, local, model)
		for b := range nb {
			var m mat4
			for k := range m {
				m[k] = float64(model32[b*ModelFloats+k])
			}
			for di, d := range distances {
				e := 0.0
				for axis := range 3 {
					var v Vec3
					v[axis] = d
					e = math.Max(e, model[b].point(v).dist(m.point(v)))
				}
				errs[di] = append(errs[di], e)
				if e > stats[di].Max {
					stats[di].Max, stats[di].WorstBone, stats[di].WorstFrame = e, b, f
				}
				stats[di].Mean += e
			}
		}
	}
	for di := range distances {
		s := &stats[di]
		e := errs[di]
		s.Distance = distances[di]
		s.Samples = len(e)
		s.Mean /= float64(len(e))
		sort.Float64s(e)
		s.P99 = percentile(e, 0.99)
		s.sorted = e
	}
	return stats, nil
}

// MergeErrors pools the samples of several measurements (e.g. one per
// clip) at the same distance into one: the maximum, and the 99th
// percentile and mean over all (bone, sample) pairs. WorstBone and
// WorstFrame come from the input with the largest error.
func MergeErrors(stats ...ErrorStats) ErrorStats {
	var r ErrorStats
	var all []float64
	for _, s := range stats {
		if s.Max >= r.Max {
			r.Max, r.WorstBone, r.WorstFrame = s.Max, s.WorstBone, s.WorstFrame
		}
		r.Distance = s.Distance
		r.Mean += s.Mean * float64(s.Samples)
		r.Samples += s.Samples
		all = append(all, s.sorted...)
	}
	if r.Samples > 0 {
		r.Mean /= float64(r.Samples)
	}
	sort.Float64s(all)
	r.P99 = percentile(all, 0.99)
	r.sorted = all
	return r
}

// percentile returns the p-quantile of sorted values (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
