package offline

import (
	"math"
	"sort"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// fitTrack is one track of one segment, ready for curve fitting: local
// frame numbers, source values, and every sample's grid indices and value
// after quantisation (what the runtime would decode if it became a point).
type fitTrack struct {
	kind   TrackKind
	mode   uint32  // rotation component dropped (or format.ModeAll)
	step   float32 // grid step
	frames []float32
	src    [][4]float64
	idx    [][4]int32
	deq    [][4]float32
	weight float64 // metres of model-space displacement per unit of error
	// axis, for rotations, holds per sample the lever about each local
	// axis (see leverArms); nil means the isotropic bound angle × weight.
	axis [][4]float32
	// mid[s] holds the source's reference values at BetweenPoints evenly
	// spaced times inside (frames[s], frames[s+1]) (Clip.ValueAt): the
	// fit honours the source between samples too. Unused for the two
	// samples of a discontinuity.
	mid [][BetweenPoints][4]float64
	// lin makes the fitted curve linear between points (tangents equal
	// to the chord: lerp, and nlerp for rotations) instead of Hermite.
	lin bool
	// seeds are samples the fit starts from besides the ends and the
	// discontinuities: the source's keys (Track.Keys).
	seeds []int
}

// fpoint is a curve point during fitting: its sample and its stored value.
type fpoint struct {
	s   int
	idx [4]int32
	v   [4]float32
}

// errAt is the model-space displacement (metres) bounding the error of
// value v against sample s: angle × reach for rotations, distance × parent
// scale for translations, scale difference × reach for scales.
func (ft *fitTrack) errAt(s int, v [4]float32) float64 {
	var ax *[4]float32
	if ft.axis != nil {
		ax = &ft.axis[s]
	}
	return ft.errRef(&ft.src[s], ax, v)
}

// errMid is errAt against the reference at between-point k of interval
// [s, s+1] (the levers: the larger of the two samples').
func (ft *fitTrack) errMid(s, k int, v [4]float32) float64 {
	var ax *[4]float32
	if ft.axis != nil {
		a, b := &ft.axis[s], &ft.axis[s+1]
		m := [4]float32{max(a[0], b[0]), max(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])}
		ax = &m
	}
	return ft.errRef(&ft.mid[s][k], ax, v)
}

// errRef is the displacement bound of value v against reference src, with
// levers ax (nil: isotropic).
func (ft *fitTrack) errRef(src *[4]float64, ax *[4]float32, v [4]float32) float64 {
	if ft.kind == TrackRotation {
		q := Quat{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])}.Normalized()
		if ax == nil {
			return quatAngle(Quat(*src), q) * ft.weight
		}
		// |(ΔR - I) y| = |2 vec(Δq) × y| with Δq = src⁻¹ q.
		d := Quat(*src).Conj().Mul(q)
		perAxis := 2 * (math.Abs(d[0])*float64(ax[0]) + math.Abs(d[1])*float64(ax[1]) + math.Abs(d[2])*float64(ax[2]))
		chord := 2 * math.Sqrt(d[0]*d[0]+d[1]*d[1]+d[2]*d[2]) * float64(ax[3])
		return math.Min(perAxis, chord)
	}
	dx, dy, dz := src[0]-float64(v[0]), src[1]-float64(v[1]), src[2]-float64(v[2])
	return math.Sqrt(dx*dx+dy*dy+dz*dz) * ft.weight
}

// quantErr returns the largest error of the quantised samples themselves.
func (ft *fitTrack) quantErr() float64 {
	m := 0.0
	for s := range ft.src {
		m = math.Max(m, ft.errAt(s, ft.deq[s]))
	}
	return m
}

func (ft *fitTrack) point(s int) fpoint { return fpoint{s: s, idx: ft.idx[s], v: ft.deq[s]} }

// window returns the four points around interval i, repeating the end
// points as the runtime does, with rotations aligned in sequence.
func (ft *fitTrack) window(pts []fpoint, i int) (p0, p1, p2, p3 format.Cpoint) {
	n := len(pts)
	cp := func(p fpoint) format.Cpoint { return format.Cpoint{T: ft.frames[p.s], V: p.v} }
	p0 = cp(pts[max(i-1, 0)])
	p1 = cp(pts[i])
	p2 = cp(pts[i+1])
	p3 = cp(pts[min(i+2, n-1)])
	if ft.kind == TrackRotation {
		format.AlignTo(&p1.V, &p0.V)
		format.AlignTo(&p2.V, &p1.V)
		format.AlignTo(&p3.V, &p2.V)
	}
	return
}

// intervalErr is the largest error over the samples of interval i, end
// points included, and over BetweenPoints times inside each pair of
// neighbouring samples (against the source's interpolation, ft.mid),
// evaluated exactly as the sampler does.
func (ft *fitTrack) intervalErr(pts []fpoint, i int) float64 {
	p0, p1, p2, p3 := ft.window(pts, i)
	a, b := pts[i].s, pts[i+1].s
	if p1.T == p2.T {
		return math.Max(ft.errAt(a, pts[i].v), ft.errAt(b, pts[i+1].v))
	}
	var c [16]float32
	invH := format.CurveCoeffs(&p0, &p1, &p2, &p3, ft.lin, &c)
	rot := ft.kind == TrackRotation
	m := 0.0
	for s := a; s <= b; s++ {
		m = math.Max(m, ft.errAt(s, format.EvalCoeffs(&c, p1.T, invH, ft.frames[s], rot)))
		if s == b || ft.mid == nil || ft.frames[s+1] == ft.frames[s] {
			continue
		}
		for k := range BetweenPoints {
			x := ft.frames[s] + float32(k+1)/(BetweenPoints+1)*(ft.frames[s+1]-ft.frames[s])
			m = math.Max(m, ft.errMid(s, k, format.EvalCoeffs(&c, p1.T, invH, x, rot)))
		}
	}
	return m
}

// fit chooses curve points so that every sample, and every reference
// point between samples, is within tol: start from the end points (and
// both samples of each discontinuity), then repeatedly split the interval
// with the largest error at its middle sample. It fails when a sample's
// quantisation error alone exceeds tol. Where the curve between two
// neighbouring samples, both points, still leaves the source by more
// than tol between them (a source curve the line cannot follow, a kink
// the Hermite tangents round off) no point can help: fit accepts it and
// returns the largest such error as excess (0 when every point is within
// tol).
func (ft *fitTrack) fit(tol float64) (pts []fpoint, excess float64, ok bool) {
	n := len(ft.frames)
	if ft.quantErr() > tol {
		return nil, 0, false
	}
	start := append([]int{0}, ft.seeds...)
	for s := 1; s < n-1; s++ {
		if ft.frames[s] == ft.frames[s+1] {
			start = append(start, s, s+1)
		}
	}
	start = append(start, n-1)
	sort.Ints(start)
	for i, s := range start {
		if i == 0 || s != start[i-1] {
			pts = append(pts, ft.point(s))
		}
	}
	errs := make([]float64, len(pts)-1)
	for i := range errs {
		errs[i] = ft.intervalErr(pts, i)
	}
	for {
		worst, we := -1, tol
		for i, e := range errs {
			if e > we {
				worst, we = i, e
			}
		}
		if worst < 0 {
			break
		}
		a, b := pts[worst].s, pts[worst+1].s
		if b-a < 2 {
			excess = math.Max(excess, we)
			errs[worst] = -1 // nothing left to add here
			continue
		}
		pts = append(pts, fpoint{})
		copy(pts[worst+2:], pts[worst+1:])
		pts[worst+1] = ft.point((a + b) / 2)
		errs = append(errs, 0)
		copy(errs[worst+1:], errs[worst:])
		for i := max(worst-1, 0); i <= min(worst+2, len(errs)-1); i++ {
			if errs[i] >= 0 {
				errs[i] = ft.intervalErr(pts, i)
			}
		}
	}
	return pts, excess, true
}
