package offline

import (
	"fmt"
	"math"
	"sort"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// ErrorStats summarises model-space error at virtual vertices: for every
// bone and every original sample, the largest displacement of three
// vertices Distance metres from the joint along the bone's x, y and z axes
// between the source clip (float64) and what the sampler returns (after
// local-to-model). Model space is the skeleton's world (glTF: the scene,
// with the nodes above the skeleton folded into its roots), and both the
// distance and the displacement are metres there: a bone whose model
// matrix scales by s (a skeleton under a node scaled 0.01) has its
// vertices at Distance/s in its own units (see vertexOffsets).
// Between holds the same measure at BetweenPoints times inside every
// interval between samples, against the source's own interpolation
// (Clip.ValueAt): an error target holds only if it holds at both.
type ErrorStats struct {
	Distance   float64 // metres from the joint, in model space
	Max        float64 // metres, at samples
	P99        float64 // 99th percentile over (bone, sample) pairs
	Mean       float64
	WorstBone  int
	WorstFrame int
	Samples    int
	Between    BetweenStats // between samples (zero when not measured)
	sorted     []float64    // every (bone, sample) error, for MergeErrors
	rate       float64      // the clip's, to turn WorstFrame into seconds
}

// BetweenStats is ErrorStats' measure between samples.
type BetweenStats struct {
	Max       float64 // metres
	P99       float64 // over (bone, point) pairs
	Mean      float64
	WorstBone int
	WorstTime float64 // seconds
	Points    int     // (bone, time) pairs measured
	sorted    []float64
}

// BetweenPoints is how many evenly spaced times inside each interval
// between two samples Measure checks (at 1/4, 1/2 and 3/4).
const BetweenPoints = 3

// WorstP99 is the larger 99th percentile: at samples or between them.
func (e ErrorStats) WorstP99() float64 { return math.Max(e.P99, e.Between.P99) }

// WorstMax is the larger maximum: at samples or between them.
func (e ErrorStats) WorstMax() float64 { return math.Max(e.Max, e.Between.Max) }

func (e ErrorStats) String() string {
	s := fmt.Sprintf("at %g cm: max %.4f cm, p99 %.4f cm (bone %d, frame %d)", e.Distance*100, e.Max*100, e.P99*100, e.WorstBone, e.WorstFrame)
	if e.Between.Points > 0 {
		s += fmt.Sprintf("; between samples max %.4f cm, p99 %.4f cm (bone %d, %.4f s)", e.Between.Max*100, e.Between.P99*100, e.Between.WorstBone, e.Between.WorstTime)
	}
	return s
}

// Measure decompresses clip c from a loaded blob at every source sample
// and at BetweenPoints times between each two (playing forward, as a game
// would) and compares it with the source clip src of skeleton sk (between
// samples: src.ValueAt, the source's own interpolation), at each of the
// given vertex distances (at least one; finite, >= 0 m, in model space:
// see ErrorStats).
func Measure(sk *Skeleton, src *Clip, c anim.ClipView, distances ...float64) ([]ErrorStats, error) {
	if sk == nil || src == nil {
		return nil, fmt.Errorf("anim: Measure: nil skeleton or source clip")
	}
	if c.Blob() == nil {
		return nil, fmt.Errorf("anim: Measure: the zero ClipView (no blob): take it from a loaded Blob (Clip, ClipAt, ClipByName's view when found)")
	}
	nb := sk.NumBones()
	if c.Bones() != nb {
		return nil, fmt.Errorf("anim: Measure: clip has %d bones, skeleton %d", c.Bones(), nb)
	}
	if c.Frames() != src.Frames {
		return nil, fmt.Errorf("anim: Measure: %d frames in the blob, %d in the source", c.Frames(), src.Frames)
	}
	in := []anim.SampleInput{{Clip: c.Offset()}}
	job := anim.SampleJob{
		Blob: c.Blob(), Inputs: in, Cursors: make([]uint32, c.CursorWords()), CursorStride: c.CursorWords(),
		Bones: nb,
	}
	return measure(sk, src, func(t float64, pose []float32) (float64, error) {
		in[0].Time = float32(t)
		job.Poses = pose
		// the time the sampler plays (see sampleOne)
		x := float64(float32(in[0].Time * float32(c.Rate())))
		return x / src.Rate, job.Run()
	}, true, distances)
}

// BitSquidFloor measures the error of BitSquid's quantisation alone
// (10-bit smallest-three rotations, 16-bit positions over -10..10 m, every
// sample kept, no curve), at the samples: the floor under any curve fit
// that uses those widths.
func BitSquidFloor(sk *Skeleton, src *Clip, distances ...float64) ([]ErrorStats, error) {
	if sk == nil || src == nil {
		return nil, fmt.Errorf("anim: BitSquidFloor: nil skeleton or source clip")
	}
	local := make([]Transform, sk.NumBones())
	return measure(sk, src, func(t float64, pose []float32) (float64, error) {
		src.Pose(int(math.Round(t*src.Rate)), local)
		for b, t := range local {
			pt, ps := format.BitsquidPosition(vec4(t.T)), format.BitsquidPosition(vec4(t.S))
			t.T, t.S = Vec3{pt[0], pt[1], pt[2]}, Vec3{ps[0], ps[1], ps[2]}
			t.R = Quat(format.BitsquidRotation([4]float64(t.R)))
			w := poseWords(t)
			copy(pose[b*anim.PoseFloats:], w[:])
		}
		return t, nil
	}, false, distances)
}

// measure compares poses produced by poseAt(t) with the source clip, at
// every sample and (with between) BetweenPoints times inside every
// interval. poseAt returns the time it actually sampled (the reference is
// taken there).
func measure(sk *Skeleton, src *Clip, poseAt func(t float64, pose []float32) (float64, error), between bool, distances []float64) ([]ErrorStats, error) {
	if err := sk.Validate(); err != nil {
		return nil, fmt.Errorf("anim: measure: %w", err)
	}
	if err := src.Validate(sk); err != nil {
		return nil, fmt.Errorf("anim: measure: %w", err)
	}
	if len(distances) == 0 {
		return nil, fmt.Errorf("anim: measure: no vertex distances given (ACL measures at 0.03 m)")
	}
	for _, d := range distances {
		if !(d >= 0) || !format.Finite(d) {
			return nil, fmt.Errorf("anim: measure: vertex distance %v, want a finite distance >= 0 m", d)
		}
	}
	nb := sk.NumBones()
	pose := make([]float32, nb*anim.PoseFloats)
	model32 := make([]float32, nb*anim.ModelFloats)
	local := make([]Transform, nb)
	model := make([]mat4, nb)
	errs := make([][]float64, len(distances))
	berrs := make([][]float64, len(distances))
	for i := range errs {
		errs[i] = make([]float64, 0, nb*src.Frames)
		if between {
			berrs[i] = make([]float64, 0, nb*(src.Frames-1)*BetweenPoints)
		}
	}
	stats := make([]ErrorStats, len(distances))
	compare := func(f int, t float64, at bool) {
		modelMatrices(sk.Parents, local, model)
		for b := range nb {
			var m mat4
			for k := range m {
				m[k] = float64(model32[b*anim.ModelFloats+k])
			}
			for di, d := range distances {
				e := 0.0
				off := vertexOffsets(&model[b], d)
				for axis := range 3 {
					var v Vec3
					v[axis] = off[axis]
					e = math.Max(e, model[b].Point(v).Dist(m.Point(v)))
				}
				st := &stats[di]
				if at {
					errs[di] = append(errs[di], e)
					if e > st.Max {
						st.Max, st.WorstBone, st.WorstFrame = e, b, f
					}
					st.Mean += e
				} else {
					berrs[di] = append(berrs[di], e)
					if e > st.Between.Max {
						st.Between.Max, st.Between.WorstBone, st.Between.WorstTime = e, b, t
					}
					st.Between.Mean += e
				}
			}
		}
	}
	for f := range src.Frames {
		if _, err := poseAt(float64(f)/src.Rate, pose); err != nil {
			return nil, err
		}
		if err := anim.LocalToModel(sk.Parents, pose, model32, 0, 1); err != nil {
			return nil, err
		}
		src.Pose(f, local)
		compare(f, float64(f)/src.Rate, true)
		if !between || f == src.Frames-1 {
			continue
		}
		for k := 1; k <= BetweenPoints; k++ {
			t, err := poseAt((float64(f)+float64(k)/(BetweenPoints+1))/src.Rate, pose)
			if err != nil {
				return nil, err
			}
			if err := anim.LocalToModel(sk.Parents, pose, model32, 0, 1); err != nil {
				return nil, err
			}
			for b := range nb {
				tv := src.ValueAt(3*b, t)
				rv := src.ValueAt(3*b+1, t)
				sv := src.ValueAt(3*b+2, t)
				local[b] = Transform{T: Vec3{tv[0], tv[1], tv[2]}, R: Quat(rv).Normalized(), S: Vec3{sv[0], sv[1], sv[2]}}
			}
			compare(f, t, false)
		}
	}
	for di := range distances {
		s := &stats[di]
		e := errs[di]
		s.Distance = distances[di]
		s.rate = src.Rate
		s.Samples = len(e)
		s.Mean /= float64(len(e))
		sort.Float64s(e)
		s.P99 = percentile(e, 0.99)
		s.sorted = e
		if be := berrs[di]; len(be) > 0 {
			s.Between.Points = len(be)
			s.Between.Mean /= float64(len(be))
			sort.Float64s(be)
			s.Between.P99 = percentile(be, 0.99)
			s.Between.sorted = be
		}
	}
	return stats, nil
}

// vertexOffsets returns, for each local axis of a bone's model matrix m
// (the source's), the local coordinate that puts a virtual vertex on that
// axis d metres from the joint in model space: d over the axis's scale
// (the column's length), so the vertices sit at d in the model's world
// whatever scales the nodes above or inside the skeleton apply. An axis
// the matrix collapses (scale 0, or too small for d/scale to be finite)
// keeps d: its vertex is at the joint anyway.
func vertexOffsets(m *mat4, d float64) [3]float64 {
	var o [3]float64
	for a := range 3 {
		l := math.Sqrt(m[4*a]*m[4*a] + m[4*a+1]*m[4*a+1] + m[4*a+2]*m[4*a+2])
		o[a] = d
		if x := d / l; l > 0 && format.Finite(x) {
			o[a] = x
		}
	}
	return o
}

// MergeErrors pools the samples of several measurements (e.g. one per
// clip) at the same distance into one: the maximum, and the 99th
// percentile and mean over all (bone, sample) pairs, and likewise between
// samples. WorstBone and
// WorstFrame come from the input with the largest error.
func MergeErrors(stats ...ErrorStats) ErrorStats {
	var r ErrorStats
	var all, ball []float64
	for _, s := range stats {
		if s.Max >= r.Max {
			r.Max, r.WorstBone, r.WorstFrame = s.Max, s.WorstBone, s.WorstFrame
		}
		if s.Between.Max >= r.Between.Max {
			r.Between.Max, r.Between.WorstBone, r.Between.WorstTime = s.Between.Max, s.Between.WorstBone, s.Between.WorstTime
		}
		r.Distance = s.Distance
		r.Mean += s.Mean * float64(s.Samples)
		r.Samples += s.Samples
		r.Between.Mean += s.Between.Mean * float64(s.Between.Points)
		r.Between.Points += s.Between.Points
		all = append(all, s.sorted...)
		ball = append(ball, s.Between.sorted...)
	}
	if r.Samples > 0 {
		r.Mean /= float64(r.Samples)
	}
	if r.Between.Points > 0 {
		r.Between.Mean /= float64(r.Between.Points)
	}
	sort.Float64s(all)
	r.P99 = percentile(all, 0.99)
	r.sorted = all
	sort.Float64s(ball)
	r.Between.P99 = percentile(ball, 0.99)
	r.Between.sorted = ball
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
