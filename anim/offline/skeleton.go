package offline

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
	"github.com/vkjobs/vkjobs/anim/vmath"
)

// Skeleton is the offline (import-side) description of a bone hierarchy.
// Bones are ordered so that every parent comes before its children.
type Skeleton struct {
	Name    string
	Names   []string
	Parents []int32     // -1 for a root; otherwise Parents[i] < i
	Rest    []Transform // rest (bind) pose, parent-relative, metres
	// InverseBind, when not nil, holds one column-major inverse bind matrix
	// per bone (glTF skins), for skinning.
	InverseBind [][16]float32
	// SkinJoint, when not nil, maps a bone to its joint index in the source
	// skin (glTF JOINTS_0 values index skin joints, not bones).
	SkinJoint []int32
}

// NumBones returns the number of bones.
func (s *Skeleton) NumBones() int { return len(s.Parents) }

// Validate checks the hierarchy order (which excludes cycles), array sizes
// and that the rest pose is finite (translations and scales within ±1e18).
func (s *Skeleton) Validate() error {
	if s == nil {
		return errors.New("skeleton: nil")
	}
	n := len(s.Parents)
	if n == 0 {
		return errors.New("skeleton has no bones")
	}
	if n > MaxBones {
		return fmt.Errorf("skeleton has %d bones, at most %d", n, MaxBones)
	}
	if len(s.Names) != n || len(s.Rest) != n {
		return fmt.Errorf("skeleton: %d parents, %d names, %d rest transforms", n, len(s.Names), len(s.Rest))
	}
	if s.InverseBind != nil && len(s.InverseBind) != n {
		return fmt.Errorf("skeleton: %d inverse bind matrices for %d bones", len(s.InverseBind), n)
	}
	if s.SkinJoint != nil && len(s.SkinJoint) != n {
		return fmt.Errorf("skeleton: %d skin joints for %d bones", len(s.SkinJoint), n)
	}
	for i, p := range s.Parents {
		if p < -1 || int(p) >= i {
			return fmt.Errorf("skeleton: bone %d (%q) has parent %d; parents must come first", i, s.Names[i], p)
		}
		r := s.Rest[i]
		if !r.T.Finite() || !r.R.Finite() || !r.S.Finite() {
			return fmt.Errorf("skeleton: bone %d (%q) rest pose is not finite", i, s.Names[i])
		}
		if !within(r.T[:]) || !within(r.S[:]) {
			return fmt.Errorf("skeleton: bone %d (%q) rest pose beyond ±1e18 (float32 poses cannot hold it)", i, s.Names[i])
		}
	}
	return nil
}

// maxValue bounds every translation and scale component of a skeleton or
// clip (metres): beyond it a float32 pose keeps no useful precision (its
// step there is more than 1e10 m) and a blob cannot store it (the uniform
// codec's ranges and the loader's range checks stop at the same ±1e18).
const maxValue = 1e18

// within reports whether every component of v is within ±maxValue.
func within(v []float64) bool {
	for _, x := range v {
		if math.Abs(x) > maxValue {
			return false
		}
	}
	return true
}

// Track is one sampled component of a bone's local transform. Frames is
// non-decreasing and holds every frame of the clip once, except that a
// frame after the first may appear twice in a row: a discontinuity, where
// the first value is the limit from the left and the second the value from
// that frame on. At the last frame (a glTF STEP key at the clip's last
// time) the first value holds up to the clip's end and the second is the
// end's: the curve codec stores both (its last segment's end pair); the
// uniform codec, which has no discontinuities, reaches the end's value
// over the last frame interval (see anim's documentation), and Measure
// reports the difference.
// Values hold xyz (translation, scale) or xyzw (rotation, unit length,
// hemisphere-continuous: consecutive samples have a non-negative dot).
type Track struct {
	Frames []int32
	Values [][4]float64
	// Keys, when not nil, are frames (increasing, inside the clip) where
	// the source has a key that bends the track and that lies on (or,
	// off the grid, either side of) that frame: glTF LINEAR and
	// CUBICSPLINE keys sparser than the samples. The curve fitter starts
	// from points there, as it does at discontinuities, so that a corner
	// the source's interpolation makes at a key is a point of the curve,
	// not something the fit cuts. A hint: nil changes only where the
	// fit starts.
	Keys []int32
}

// Clip is the offline (import-side) form of an animation: every bone
// sampled on a uniform grid, parent-relative, in metres.
type Clip struct {
	Name   string
	Rate   float64      // samples per second
	Frames int          // number of samples; the clip lasts (Frames-1)/Rate s
	Tracks []Track      // three per bone: Tracks[bone*3+kind]
	Events []anim.Event // sorted by time
	// Between, when not nil, returns track i's value at time t seconds as
	// the source defines it between samples (glTF: its sampler's LINEAR,
	// STEP or CUBICSPLINE interpolation of the keys); at a sample's time it
	// must agree with the sample. Nil means sampled motion (BVH, Resample):
	// between two samples the reference is their lerp (translation, scale)
	// or slerp on the shorter arc (rotation), as ACL assumes. Measure and
	// Compress's calibration check the decoded clip against this reference
	// between samples too; the curve fitter follows it (see ValueAt).
	Between func(track int, t float64) [4]float64
}

// ValueAt returns track i's reference value at time t seconds (clamped to
// the clip): Between when set, else the lerp/slerp of the two samples
// around t (the right-hand value at a discontinuity's frame, the
// left-hand one at the next). Rotations may come back as q or -q.
func (c *Clip) ValueAt(i int, t float64) [4]float64 {
	if c.Between != nil {
		return c.Between(i, t)
	}
	tr := &c.Tracks[i]
	x := math.Max(0, math.Min(t*c.Rate, float64(c.Frames-1)))
	f0 := int(math.Floor(x))
	u := x - float64(f0)
	a := tr.Values[tr.sampleIndex(f0)]
	if u == 0 || f0+1 >= c.Frames {
		return a
	}
	b := tr.Values[tr.leftIndex(f0+1)]
	return lerpValue(TrackKind(i%3), a, b, u)
}

// PoseAt fills out (one Transform per bone) with the clip's reference
// pose at time t seconds (clamped), between samples too (ValueAt): the
// uncompressed sampler.
func (c *Clip) PoseAt(t float64, out []Transform) {
	for b := range out {
		tv, rv, sv := c.ValueAt(3*b, t), c.ValueAt(3*b+1, t), c.ValueAt(3*b+2, t)
		out[b] = Transform{T: Vec3{tv[0], tv[1], tv[2]}, R: Quat(rv).Normalized(), S: Vec3{sv[0], sv[1], sv[2]}}
	}
}

// SampleAt writes the clip's pose at time t seconds (clamped; between
// samples as ValueAt says) into pose, anim.PoseFloats per bone in the layout
// anim.SampleJob writes (rotation, translation, scale; float32): sampling an
// uncompressed clip at any time, for anim.LocalToModel or the kernels. pose
// must hold NumBones bones.
func (c *Clip) SampleAt(t float64, pose []float32) error {
	nb := c.NumBones()
	if len(pose) < nb*anim.PoseFloats {
		return fmt.Errorf("anim: SampleAt %q: %d floats for %d bones", c.Name, len(pose), nb)
	}
	if math.IsNaN(t) {
		t = 0
	}
	var one [1]Transform
	for b := range nb {
		tv, rv, sv := c.ValueAt(3*b, t), c.ValueAt(3*b+1, t), c.ValueAt(3*b+2, t)
		one[0] = Transform{T: Vec3{tv[0], tv[1], tv[2]}, R: Quat(rv).Normalized(), S: Vec3{sv[0], sv[1], sv[2]}}
		w := poseWords(one[0])
		copy(pose[b*anim.PoseFloats:], w[:])
	}
	return nil
}

// lerpValue interpolates two samples: slerp on the shorter arc for
// rotations, lerp otherwise.
func lerpValue(k TrackKind, a, b [4]float64, u float64) [4]float64 {
	if k == TrackRotation {
		return [4]float64(vmath.Slerp(Quat(a), Quat(b), u))
	}
	var v [4]float64
	for j := range 3 {
		v[j] = a[j] + (b[j]-a[j])*u
	}
	return v
}

// NumBones returns the number of bones the clip animates.
func (c *Clip) NumBones() int { return len(c.Tracks) / 3 }

// Duration returns the clip length in seconds.
func (c *Clip) Duration() float64 {
	if c.Frames <= 1 {
		return 0
	}
	return float64(c.Frames-1) / c.Rate
}

// Validate checks the clip's shape against a skeleton: track count, frame
// coverage and order, discontinuity pairs, finite values (translations and
// scales within ±1e18), unit quaternions, event order.
func (c *Clip) Validate(s *Skeleton) error {
	if c == nil {
		return errors.New("clip: nil")
	}
	// The blob stores the rate as a float32: one that rounds to 0 there
	// would be refused by anim.Load after Compress and Builder took it.
	if !(c.Rate > 0) || !format.Finite(c.Rate) || c.Rate > 1e4 || !(float32(c.Rate) > 0) {
		return fmt.Errorf("clip %q: rate %v (want a rate in Hz above 0, as a float32, up to 1e4)", c.Name, c.Rate)
	}
	if c.Frames < 1 || c.Frames > MaxFrames {
		return fmt.Errorf("clip %q: %d frames (1..%d)", c.Name, c.Frames, MaxFrames)
	}
	if s != nil && len(c.Tracks) != 3*s.NumBones() {
		return fmt.Errorf("clip %q: %d tracks for %d bones", c.Name, len(c.Tracks), s.NumBones())
	}
	if len(c.Tracks)%3 != 0 || len(c.Tracks) == 0 {
		return fmt.Errorf("clip %q: %d tracks, want 3 per bone", c.Name, len(c.Tracks))
	}
	for i := range c.Tracks {
		t := &c.Tracks[i]
		bone, kind := i/3, TrackKind(i%3)
		if len(t.Frames) != len(t.Values) {
			return fmt.Errorf("clip %q bone %d %v: %d frames, %d values", c.Name, bone, kind, len(t.Frames), len(t.Values))
		}
		next := int32(0)
		for j, f := range t.Frames {
			switch {
			case f == next:
				next++
			case f == next-1 && (j < 2 || t.Frames[j-2] != f) && f > 0:
				// second sample of a discontinuity
			default:
				return fmt.Errorf("clip %q bone %d %v: sample %d has frame %d, want %d", c.Name, bone, kind, j, f, next)
			}
			v := t.Values[j]
			if !Quat(v).Finite() {
				return fmt.Errorf("clip %q bone %d %v: frame %d is not finite", c.Name, bone, kind, f)
			}
			if !within(v[:3]) {
				return fmt.Errorf("clip %q bone %d %v: frame %d value %v is beyond ±1e18 (float32 poses cannot hold it)", c.Name, bone, kind, f, v[:3])
			}
			if kind == TrackRotation {
				if n := Quat(v).Norm(); math.Abs(n-1) > 1e-3 {
					return fmt.Errorf("clip %q bone %d rotation: frame %d has length %v", c.Name, bone, f, n)
				}
				if j > 0 && Quat(v).Dot(Quat(t.Values[j-1])) < 0 && t.Frames[j-1] != f {
					return fmt.Errorf("clip %q bone %d rotation: frame %d flips hemisphere", c.Name, bone, f)
				}
			} else if v[3] != 0 {
				return fmt.Errorf("clip %q bone %d %v: frame %d has w=%v, want 0", c.Name, bone, kind, f, v[3])
			}
		}
		if next != int32(c.Frames) {
			return fmt.Errorf("clip %q bone %d %v: covers %d of %d frames", c.Name, bone, kind, next, c.Frames)
		}
		for j, k := range t.Keys {
			if k < 0 || int(k) >= c.Frames || (j > 0 && k <= t.Keys[j-1]) {
				return fmt.Errorf("clip %q bone %d %v: key frame %d (%d of %d) is not increasing inside the clip's %d frames", c.Name, bone, kind, k, j, len(t.Keys), c.Frames)
			}
		}
	}
	nb := c.NumBones()
	for i, e := range c.Events {
		// Times are float32: the one nearest the duration (an event at
		// the last frame) may exceed it by half an ulp, more than 1e-6 s
		// from 16 s on.
		if d := c.Duration(); !format.Finite(float64(e.Time)) || e.Time < 0 || (float64(e.Time) > d+1e-6 && e.Time > float32(d)) {
			return fmt.Errorf("clip %q: event %d at %v s is outside 0..%v", c.Name, i, e.Time, c.Duration())
		}
		if int(e.Bone) >= nb {
			return fmt.Errorf("clip %q: event %d names bone %d of %d", c.Name, i, e.Bone, nb)
		}
		if i > 0 && e.Time < c.Events[i-1].Time {
			return fmt.Errorf("clip %q: events not sorted by time at %d", c.Name, i)
		}
	}
	return nil
}

// sampleIndex returns the index of the value used at frame f from the
// right (the later of a discontinuity pair). Tracks with no discontinuity
// map frame f to index f.
func (t *Track) sampleIndex(f int) int {
	if len(t.Frames) == 0 {
		return 0
	}
	// Fast path: no discontinuities.
	if f < len(t.Frames) && int(t.Frames[f]) == f && (f+1 >= len(t.Frames) || int(t.Frames[f+1]) != f) {
		return f
	}
	lo, hi := 0, len(t.Frames)
	for lo < hi {
		m := (lo + hi) / 2
		if int(t.Frames[m]) <= f {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// leftIndex returns the index of the value at frame f from the left (the
// earlier of a discontinuity pair).
func (t *Track) leftIndex(f int) int {
	if f < len(t.Frames) && int(t.Frames[f]) == f && (f == 0 || int(t.Frames[f-1]) != f) {
		return f
	}
	return sort.Search(len(t.Frames), func(k int) bool { return int(t.Frames[k]) >= f })
}

// Pose fills out (one Transform per bone) with the clip's values at frame f
// (right-hand values at discontinuities).
func (c *Clip) Pose(f int, out []Transform) {
	for b := range out {
		tt := &c.Tracks[b*3]
		rt := &c.Tracks[b*3+1]
		st := &c.Tracks[b*3+2]
		t := tt.Values[tt.sampleIndex(f)]
		r := rt.Values[rt.sampleIndex(f)]
		s := st.Values[st.sampleIndex(f)]
		out[b] = Transform{T: Vec3{t[0], t[1], t[2]}, R: Quat(r), S: Vec3{s[0], s[1], s[2]}}
	}
}

// modelMatrices computes model-space matrices from parent-relative poses.
func modelMatrices(parents []int32, local []Transform, out []mat4) {
	for i, p := range parents {
		m := local[i].Matrix()
		if p < 0 {
			out[i] = m
		} else {
			out[i] = out[p].Mul(&m)
		}
	}
}

// constantTrack returns a track of n frames all holding v.
func constantTrack(n int, v [4]float64) Track {
	t := Track{Frames: make([]int32, n), Values: make([][4]float64, n)}
	for i := range n {
		t.Frames[i] = int32(i)
		t.Values[i] = v
	}
	return t
}

// makeContinuous flips rotation samples so consecutive ones share a
// hemisphere (q and -q are the same rotation; interpolation needs one).
func makeContinuous(t *Track) {
	for i := 1; i < len(t.Values); i++ {
		if Quat(t.Values[i]).Dot(Quat(t.Values[i-1])) < 0 {
			t.Values[i] = [4]float64(Quat(t.Values[i]).Neg())
		}
	}
}

func vec4(v Vec3) [4]float64 { return [4]float64{v[0], v[1], v[2], 0} }

// Resample returns the clip sampled at a new rate (e.g. 120 Hz motion
// capture at 30 Hz for a game): positions and scales interpolate linearly,
// rotations spherically, between the source's neighbouring frames;
// a discontinuity stays a discontinuity at the first new frame at or after
// it. Events are kept.
func (c *Clip) Resample(rate float64) (*Clip, error) {
	if !(rate > 0) || !format.Finite(rate) || rate > 1e4 {
		return nil, fmt.Errorf("anim: Resample %q: rate %v", c.Name, rate)
	}
	if err := c.Validate(nil); err != nil {
		return nil, err
	}
	frames := int(math.Floor(c.Duration()*rate+1e-6)) + 1
	if frames > MaxFrames || frames*len(c.Tracks) > MaxClipSamples {
		return nil, fmt.Errorf("anim: Resample %q: %d frames", c.Name, frames)
	}
	r := &Clip{Name: c.Name, Rate: rate, Frames: frames, Tracks: make([]Track, len(c.Tracks)), Events: append([]anim.Event(nil), c.Events...)}
	for i := range c.Tracks {
		src := &c.Tracks[i]
		rot := TrackKind(i%3) == TrackRotation
		out := Track{Frames: make([]int32, 0, frames), Values: make([][4]float64, 0, frames)}
		prevSrc := 0 // source frame of the previous new frame
		for f := range frames {
			x := float64(f) / rate * c.Rate
			f0 := min(int(math.Floor(x+1e-9)), c.Frames-1)
			u := x - float64(f0)
			a := src.Values[src.sampleIndex(f0)] // right-hand value at f0
			v := a
			if f0+1 < c.Frames && u > 1e-9 {
				b := src.Values[src.leftIndex(f0+1)] // left-hand value at f0+1
				v = lerpValue(TrackKind(i%3), a, b, u)
			}
			if c.Between != nil {
				v = c.Between(i, float64(f)/rate)
			}
			// A source discontinuity in (prevSrc, f0] becomes one here.
			if f > 0 {
				for s := src.sampleIndex(prevSrc) + 1; s < len(src.Frames) && int(src.Frames[s]) <= f0; s++ {
					if src.Frames[s] == src.Frames[s-1] && int(src.Frames[s]) > prevSrc {
						// left-hand value: the source's limit at the jump
						out.Frames = append(out.Frames, int32(f))
						out.Values = append(out.Values, src.Values[s-1])
						break
					}
				}
			}
			prevSrc = f0
			out.Frames = append(out.Frames, int32(f))
			out.Values = append(out.Values, v)
		}
		if rot {
			makeContinuous(&out)
		}
		r.Tracks[i] = out
	}
	for i := range r.Events {
		r.Events[i].Time = float32(math.Min(float64(r.Events[i].Time), r.Duration()))
	}
	return r, r.Validate(nil)
}
