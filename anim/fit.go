package anim

import "math"

// fitTrack is one track of one segment, ready for curve fitting: local
// frame numbers, source values, and every sample's grid indices and value
// after quantisation (what the runtime would decode if it became a point).
type fitTrack struct {
	kind   TrackKind
	mode   uint32  // rotation component dropped (or modeAll)
	step   float32 // grid step
	frames []float32
	src    [][4]float64
	idx    [][4]int32
	deq    [][4]float32
	weight float64 // metres of model-space displacement per unit of error
	// axis, for rotations, holds per sample the lever about each local
	// axis (see leverArms); nil means the isotropic bound angle × weight.
	axis [][4]float32
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
	src := &ft.src[s]
	if ft.kind == TrackRotation {
		q := Quat{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])}.normalized()
		if ft.axis == nil {
			return quatAngle(Quat(*src), q) * ft.weight
		}
		// |(ΔR - I) y| = |2 vec(Δq) × y| with Δq = src⁻¹ q.
		d := Quat(*src).conj().mul(q)
		ax := &ft.axis[s]
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
func (ft *fitTrack) window(pts []fpoint, i int) (p0, p1, p2, p3 cpoint) {
	n := len(pts)
	cp := func(p fpoint) cpoint { return cpoint{ft.frames[p.s], p.v} }
	p0 = cp(pts[max(i-1, 0)])
	p1 = cp(pts[i])
	p2 = cp(pts[i+1])
	p3 = cp(pts[min(i+2, n-1)])
	if ft.kind == TrackRotation {
		alignTo(&p1.v, &p0.v)
		alignTo(&p2.v, &p1.v)
		alignTo(&p3.v, &p2.v)
	}
	return
}

// intervalErr is the largest error over the samples of interval i, end
// points included, evaluated exactly as the sampler does.
func (ft *fitTrack) intervalErr(pts []fpoint, i int) float64 {
	p0, p1, p2, p3 := ft.window(pts, i)
	a, b := pts[i].s, pts[i+1].s
	if p1.t == p2.t {
		return math.Max(ft.errAt(a, pts[i].v), ft.errAt(b, pts[i+1].v))
	}
	var c [16]float32
	invH := curveCoeffs(&p0, &p1, &p2, &p3, &c)
	rot := ft.kind == TrackRotation
	m := 0.0
	for s := a; s <= b; s++ {
		m = math.Max(m, ft.errAt(s, evalCoeffs(&c, p1.t, invH, ft.frames[s], rot)))
	}
	return m
}

// fit chooses curve points so that every sample is within tol: start from
// the end points (and both samples of each discontinuity), then repeatedly
// split the interval with the largest error at its middle sample. It fails
// when a sample's quantisation error alone exceeds tol.
func (ft *fitTrack) fit(tol float64) ([]fpoint, bool) {
	n := len(ft.frames)
	if ft.quantErr() > tol {
		return nil, false
	}
	pts := []fpoint{ft.point(0)}
	for s := 1; s < n-1; s++ {
		if ft.frames[s] == ft.frames[s+1] {
			if pts[len(pts)-1].s != s {
				pts = append(pts, ft.point(s))
			}
			pts = append(pts, ft.point(s+1))
		}
	}
	if pts[len(pts)-1].s != n-1 {
		pts = append(pts, ft.point(n-1))
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
			return nil, false // only quantisation error left; excluded above
		}
		pts = append(pts, fpoint{})
		copy(pts[worst+2:], pts[worst+1:])
		pts[worst+1] = ft.point((a + b) / 2)
		errs = append(errs, 0)
		copy(errs[worst+1:], errs[worst:])
		for i := max(worst-1, 0); i <= min(worst+2, len(errs)-1); i++ {
			errs[i] = ft.intervalErr(pts, i)
		}
	}
	return pts, true
}
