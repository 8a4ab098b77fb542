package offline

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// aff is a float64 affine transform: the columns of the 3x3 part, then
// the translation (the search's model matrices). It is mat4 without the
// constant last row, on purpose: the rate search multiplies hundreds of
// millions of them (mulAffTo and evalTree's inlined copy of it), and the
// 3x4 product needs 36 multiplications instead of mat4.mul's 64.
type aff [12]float64

func affOf(t *[3]float64, q *[4]float64, s *[3]float64) aff {
	x, y, z, w := q[0], q[1], q[2], q[3]
	xx, yy, zz := x*x, y*y, z*z
	xy, xz, yz := x*y, x*z, y*z
	wx, wy, wz := w*x, w*y, w*z
	sx, sy, sz := s[0], s[1], s[2]
	return aff{
		(1 - 2*(yy+zz)) * sx, 2 * (xy + wz) * sx, 2 * (xz - wy) * sx,
		2 * (xy - wz) * sy, (1 - 2*(xx+zz)) * sy, 2 * (yz + wx) * sy,
		2 * (xz + wy) * sz, 2 * (yz - wx) * sz, (1 - 2*(xx+yy)) * sz,
		t[0], t[1], t[2],
	}
}

// uniformTrack is an animated track of a uniform clip.
type uniformTrack struct {
	bone int
	kind TrackKind
}

// uniformPrep is what every calibration pass shares: the source's virtual
// vertices, the animated tracks, their per-segment dropped components,
// clip ranges and range-normalised values.
type uniformPrep struct {
	nb, frames, L, nseg, nt int
	parents                 []int32
	sub                     [][]int   // per bone: its subtree, parents first
	depth                   []int     // per bone: its number of ancestors
	sv                      []Vec3    // source vertices [(f*nb+b)*3+axis]
	vd                      []float64 // their local coordinates on the axis (vertexOffsets), same index
	def                     []float32
	tracks                  []uniformTrack
	drop                    []uint8         // [s*nt+i]
	stored                  [][][4]float64  // [i][f]: source value, sign per the segment's drop
	norm                    [][][4]float32  // [i][f]: (stored - cmin)/cext in [0, 1]
	cmin, cext              []float32       // 4 per track
	related                 []bool          // [i*nt+j]: one track's bone is in the other's subtree
	ranges                  []float32       // the record's range table: 8 per track
	trackWords              []uint32        // bone | kind<<16 per track
	segFrames               func(s int) int // frames of segment s
	work                    sync.Pool       // *uniformWork scratch
	recs                    []uniformRecord // per segment: the last pass's search
	recIters                int             // rounds a segment's record may hold
}

func newUniformPrep(sk *Skeleton, c *Clip, dist float64, L int) *uniformPrep {
	nb, F := sk.NumBones(), c.Frames
	p := &uniformPrep{nb: nb, frames: F, L: L, nseg: (F + L - 1) / L, parents: sk.Parents,
		def: make([]float32, anim.PoseFloats*nb)}
	p.segFrames = func(s int) int { return min(L, F-s*L) }
	// Subtrees (parents come first, so a bone's subtree follows it).
	p.sub = make([][]int, nb)
	for b := nb - 1; b >= 0; b-- {
		p.sub[b] = append(p.sub[b], b)
	}
	for x := range nb {
		for a := int(sk.Parents[x]); a >= 0; a = int(sk.Parents[a]) {
			p.sub[a] = append(p.sub[a], x)
		}
	}
	p.depth = make([]int, nb)
	for b := range nb {
		if pa := sk.Parents[b]; pa >= 0 {
			p.depth[b] = p.depth[pa] + 1
		}
	}
	// Source vertices.
	p.sv = make([]Vec3, F*nb*3)
	p.vd = make([]float64, F*nb*3)
	local := make([]Transform, nb)
	model := make([]mat4, nb)
	for f := range F {
		c.Pose(f, local)
		modelMatrices(sk.Parents, local, model)
		for b := range nb {
			off := vertexOffsets(&model[b], dist)
			for a := range 3 {
				var v Vec3
				v[a] = off[a]
				p.sv[(f*nb+b)*3+a] = model[b].Point(v)
				p.vd[(f*nb+b)*3+a] = off[a]
			}
		}
	}
	// Constant tracks (every sample equal to the first, up to rounding)
	// go to the default pose; the others are animated.
	var vals [][][4]float64
	for ti := range c.Tracks {
		b, k := ti/3, TrackKind(ti%3)
		tr := &c.Tracks[ti]
		v := make([][4]float64, F)
		for f := range F {
			v[f] = tr.Values[tr.sampleIndex(f)]
		}
		first := v[0]
		if k == TrackRotation && first[3] < 0 {
			first = [4]float64(Quat(first).Neg())
		}
		for j := range 4 {
			p.def[b*anim.PoseFloats+int(k)*4+j] = float32(first[j])
		}
		if k != TrackRotation {
			p.def[b*anim.PoseFloats+int(k)*4+3] = 0
		}
		if F == 1 || sameValues(v, first, k == TrackRotation) {
			continue
		}
		p.tracks = append(p.tracks, uniformTrack{b, k})
		vals = append(vals, v)
	}
	nt := len(p.tracks)
	p.nt = nt
	// Per segment and rotation: the component that stays largest is not
	// stored; each sample is flipped so that it is >= 0.
	p.drop = make([]uint8, p.nseg*nt)
	p.stored = make([][][4]float64, nt)
	for i, tr := range p.tracks {
		p.stored[i] = make([][4]float64, F)
		for s := range p.nseg {
			f0, f1 := s*L, min(F, (s+1)*L)
			d := 3
			if tr.kind == TrackRotation {
				bestMin := -1.0
				for j := range 4 {
					m := math.Inf(1)
					for f := f0; f < f1; f++ {
						m = math.Min(m, math.Abs(vals[i][f][j]))
					}
					if j == 3 {
						m *= 1.0001 // prefer w on ties
					}
					if m > bestMin {
						bestMin, d = m, j
					}
				}
			}
			p.drop[s*nt+i] = uint8(d)
			for f := f0; f < f1; f++ {
				v := vals[i][f]
				if tr.kind == TrackRotation && v[d] < 0 {
					v = [4]float64(Quat(v).Neg())
				}
				p.stored[i][f] = v
			}
		}
	}
	// Clip ranges over the stored components, rounded outwards.
	p.cmin = make([]float32, 4*nt)
	p.cext = make([]float32, 4*nt)
	p.norm = make([][][4]float32, nt)
	for i, tr := range p.tracks {
		p.norm[i] = make([][4]float32, F)
		for j := range 4 {
			lo, hi := math.Inf(1), math.Inf(-1)
			for f, v := range p.stored[i] {
				if d := int(p.drop[(f/L)*nt+i]); j == d || (tr.kind != TrackRotation && j == 3) {
					continue
				}
				lo, hi = math.Min(lo, v[j]), math.Max(hi, v[j])
			}
			if math.IsInf(lo, 1) {
				continue // never stored
			}
			cm := float32(lo)
			if float64(cm) > lo {
				cm = math.Nextafter32(cm, float32(math.Inf(-1)))
			}
			ce := float32((hi - float64(cm)) * (1 + 1e-6))
			for float64(cm)+float64(ce) < hi {
				ce = math.Nextafter32(ce, float32(math.Inf(1)))
			}
			p.cmin[i*4+j], p.cext[i*4+j] = cm, ce
			for f, v := range p.stored[i] {
				u := 0.0
				if ce > 0 {
					u = (v[j] - float64(cm)) / float64(ce)
				}
				p.norm[i][f][j] = float32(math.Max(0, math.Min(1, u)))
			}
		}
	}
	p.related = make([]bool, nt*nt)
	inSub := func(a, x int) bool {
		for ; x >= 0; x = int(sk.Parents[x]) {
			if x == a {
				return true
			}
		}
		return false
	}
	for i, a := range p.tracks {
		for j, b := range p.tracks {
			p.related[i*nt+j] = inSub(a.bone, b.bone) || inSub(b.bone, a.bone)
		}
	}
	p.recs = make([]uniformRecord, p.nseg)
	p.recIters = uniformRecordBytes / (16*max(nt, 1)*p.nseg + 4)
	p.ranges = make([]float32, 8*nt)
	p.trackWords = make([]uint32, nt)
	for i, tr := range p.tracks {
		copy(p.ranges[8*i:], p.cmin[4*i:4*i+4])
		copy(p.ranges[8*i+4:], p.cext[4*i:4*i+4])
		p.trackWords[i] = uint32(tr.bone) | uint32(tr.kind)<<16
	}
	return p
}

// sameValues reports whether every value equals v (rotations up to sign)
// to within rounding.
func sameValues(vals [][4]float64, v [4]float64, rot bool) bool {
	for _, x := range vals {
		if rot {
			if 1-math.Abs(Quat(x).Dot(Quat(v))) > 1e-12 {
				return false
			}
			continue
		}
		for j := range 3 {
			if math.Abs(x[j]-v[j]) > 1e-9 {
				return false
			}
		}
	}
	return true
}

// uniformWork is one worker's scratch for encoding segments.
type uniformWork struct {
	p        *uniformPrep
	val      []float32 // [code][track][frame][4]: decoded values (rotations rebuilt)
	q        []uint32  // [code][track][frame][3]: stored integers
	rng      []uint8   // [track][6]: segment range bytes (codes > 0)
	rng0     []uint8   // [track][6]: the constant code's uint16 values
	lt, ls   [][3]float64
	lr       [][4]float64
	loc, mod []aff // [frame*nb+bone]
	err      []float64
	tmod     []aff
	cand     []aff // [frame]: a candidate's local matrices
	codes    []int
	score    []float64
	stale    []bool
	worst    []float64 // per track: its candidate's largest vertex error
	redo     []int     // per track: the bone whose subtree its kept candidate must redo (-1: all of it)
	terr     []float64 // a candidate's vertex errors
	cmod     []aff     // [track][frame*nb+bone]: each track's candidate model matrices
	cerr     []float64 // [track][frame*nb+bone]: and its vertex errors
}

func (p *uniformPrep) getWork() *uniformWork {
	if w, ok := p.work.Get().(*uniformWork); ok {
		return w
	}
	nb, L, nt := p.nb, p.L, p.nt
	n := L * nb
	return &uniformWork{p: p,
		val: make([]float32, 16*nt*L*4), q: make([]uint32, 16*nt*L*3),
		rng: make([]uint8, 6*nt), rng0: make([]uint8, 6*nt),
		lt: make([][3]float64, n), ls: make([][3]float64, n), lr: make([][4]float64, n),
		loc: make([]aff, n), mod: make([]aff, n), err: make([]float64, n), tmod: make([]aff, n),
		cand: make([]aff, L), codes: make([]int, nt), score: make([]float64, nt), stale: make([]bool, nt), worst: make([]float64, nt), redo: make([]int, nt), terr: make([]float64, n)}
}

// quantize fills val and q for segment s at every rate code, and the
// segment range bytes.
func (w *uniformWork) quantize(s int) {
	p := w.p
	nt, L := p.nt, p.L
	f0, sf := s*L, p.segFrames(s)
	for i := range nt {
		d := int(p.drop[s*nt+i])
		kp := format.UniformKeep[d]
		rot := p.tracks[i].kind == TrackRotation
		var sm, se [3]float32
		var rb [6]uint32
		var u16 [3]uint32
		for k := range 3 {
			j := kp[k]
			lo, hi := float32(1), float32(0)
			for f := f0; f < f0+sf; f++ {
				u := p.norm[i][f][j]
				lo, hi = min(lo, u), max(hi, u)
			}
			rm := max(0, min(255, int(math.Floor(float64(lo)*255))))
			re := max(1, min(255, int(math.Ceil(float64(hi)*255))-rm))
			for re < 255 && float64(rm+re)/255 < float64(hi) {
				re++
			}
			rb[k], rb[3+k] = uint32(rm), uint32(re)
			w.rng[6*i+k], w.rng[6*i+3+k] = uint8(rm), uint8(re)
			sm[k], se[k] = float32(rm)*format.U255, float32(re)*format.U255
			// The constant code: the middle of the segment's range.
			u16[k] = uint32(math.Round(float64(lo+hi) / 2 * 65535))
			binary.LittleEndian.PutUint16(w.rng0[6*i+2*k:], uint16(u16[k]))
		}
		cm, ce := p.cmin[4*i:4*i+4], p.cext[4*i:4*i+4]
		for code := range 16 {
			n := format.UniformLadder[code]
			inv := format.UniformInv[code]
			maxq := uint32(1)<<n - 1
			for fi := range sf {
				var dec [4]float32
				qs := w.q[((code*nt+i)*L+fi)*3:][:3]
				for k := range 3 {
					j := kp[k]
					if n == 0 {
						qs[k] = u16[k]
						dec[j] = format.UniformDQ0(cm[j], ce[j], u16[k])
						continue
					}
					x := p.stored[i][f0+fi][j]
					t := 0.0
					if se[k] > 0 {
						t = (float64(p.norm[i][f0+fi][j]) - float64(sm[k])) / float64(se[k])
					}
					q := uint32(math.Round(math.Max(0, math.Min(1, t)) * float64(maxq)))
					best, bq := math.Inf(1), q
					for _, cq := range [3]uint32{q - 1, q, q + 1} {
						if cq > maxq {
							continue
						}
						if e := math.Abs(float64(format.UniformDQ(cm[j], ce[j], rb[k], rb[3+k], inv, cq)) - x); e < best {
							best, bq = e, cq
						}
					}
					qs[k] = bq
					dec[j] = format.UniformDQ(cm[j], ce[j], rb[k], rb[3+k], inv, bq)
				}
				if rot {
					dec[d] = format.UniformRebuild(dec[kp[0]], dec[kp[1]], dec[kp[2]])
				}
				copy(w.val[((code*nt+i)*L+fi)*4:][:4], dec[:])
			}
		}
	}
}

// set gives track i rate code code over the segment's sf frames.
func (w *uniformWork) set(i, code, sf int) {
	p := w.p
	nb, L, nt := p.nb, p.L, p.nt
	b := p.tracks[i].bone
	for fi := range sf {
		x := fi*nb + b
		putValue(p.tracks[i].kind, w.val[((code*nt+i)*L+fi)*4:][:4], &w.lt[x], &w.lr[x], &w.ls[x])
		w.loc[x] = affOf(&w.lt[x], &w.lr[x], &w.ls[x])
	}
}

// candidate puts into w.cand the local matrices of track i's bone with
// the track at rate code code.
func (w *uniformWork) candidate(i, code, sf int) {
	p := w.p
	nb, L, nt := p.nb, p.L, p.nt
	b := p.tracks[i].bone
	for fi := range sf {
		x := fi*nb + b
		t, r, s := w.lt[x], w.lr[x], w.ls[x]
		putValue(p.tracks[i].kind, w.val[((code*nt+i)*L+fi)*4:][:4], &t, &r, &s)
		w.cand[fi] = affOf(&t, &r, &s)
	}
}

// putValue stores a decoded track value v (rotations normalised) into the
// local transform's translation t, rotation r or scale s, by kind.
func putValue(kind TrackKind, v []float32, t *[3]float64, r *[4]float64, s *[3]float64) {
	switch kind {
	case TrackTranslation:
		*t = [3]float64{float64(v[0]), float64(v[1]), float64(v[2])}
	case TrackScale:
		*s = [3]float64{float64(v[0]), float64(v[1]), float64(v[2])}
	default:
		*r = [4]float64(Quat{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])}.Normalized())
	}
}

// evalTree recomputes the model matrices and vertex errors of bone b's
// subtree over frames [0, sf) of segment s into mod and err, taking b's
// local matrices from cand (nil: w.loc) and its parent's model matrix from
// pmod (w.mod, or a candidate's own matrices when only the part below a
// stepped bone is redone). Entries outside b's subtree are left alone.
func (w *uniformWork) evalTree(s, b, sf int, cand, pmod, mod []aff, err []float64) {
	p := w.p
	nb := p.nb
	sub := p.sub[b] // sub[0] == b
	parents := p.parents[:nb]
	pa := int(parents[b])
	for fi := range sf {
		o0 := fi * nb
		sv := p.sv[(s*p.L+fi)*nb*3:][:nb*3]
		vd := p.vd[(s*p.L+fi)*nb*3:][:nb*3]
		loc := w.loc[o0:][:nb]
		md := mod[o0:][:nb]
		er := err[o0:][:nb]
		lm := &loc[b]
		if cand != nil {
			lm = &cand[fi]
		}
		if pa < 0 {
			md[b] = *lm
		} else {
			mulAffTo(&md[b], &pmod[o0+pa], lm)
		}
		er[b] = vertexError(&md[b], sv[3*b:][:3], vd[3*b:][:3])
		for _, x := range sub[1:] {
			m, pm, l := &md[x], &md[parents[x]], &loc[x]
			p0, p1, p2, p3, p4, p5, p6, p7, p8 := pm[0], pm[1], pm[2], pm[3], pm[4], pm[5], pm[6], pm[7], pm[8]
			l0, l1, l2 := l[0], l[1], l[2]
			m[0] = p0*l0 + p3*l1 + p6*l2
			m[1] = p1*l0 + p4*l1 + p7*l2
			m[2] = p2*l0 + p5*l1 + p8*l2
			l0, l1, l2 = l[3], l[4], l[5]
			m[3] = p0*l0 + p3*l1 + p6*l2
			m[4] = p1*l0 + p4*l1 + p7*l2
			m[5] = p2*l0 + p5*l1 + p8*l2
			l0, l1, l2 = l[6], l[7], l[8]
			m[6] = p0*l0 + p3*l1 + p6*l2
			m[7] = p1*l0 + p4*l1 + p7*l2
			m[8] = p2*l0 + p5*l1 + p8*l2
			l0, l1, l2 = l[9], l[10], l[11]
			m[9] = p0*l0 + p3*l1 + p6*l2 + pm[9]
			m[10] = p1*l0 + p4*l1 + p7*l2 + pm[10]
			m[11] = p2*l0 + p5*l1 + p8*l2 + pm[11]
			er[x] = vertexError(m, sv[3*x:][:3], vd[3*x:][:3])
		}
	}
}

// vertexError is the largest distance of the model matrix m's three
// virtual vertices (at local coordinates d on its axes) from the source's v.
func vertexError(m *aff, v []Vec3, d []float64) float64 {
	e2 := 0.0
	for a := range 3 {
		dx := m[9] + d[a]*m[3*a] - v[a][0]
		dy := m[10] + d[a]*m[3*a+1] - v[a][1]
		dz := m[11] + d[a]*m[3*a+2] - v[a][2]
		if v := dx*dx + dy*dy + dz*dz; v > e2 {
			e2 = v
		}
	}
	return math.Sqrt(e2)
}

// treeError returns the largest and the sum of the vertex errors err of
// bone b's subtree over frames [0, sf), summed frame by frame, each frame
// in subtree order.
func (w *uniformWork) treeError(b, sf int, err []float64) (worst, sum float64) {
	nb := w.p.nb
	sub := w.p.sub[b]
	for fi := range sf {
		er := err[fi*nb:][:nb]
		for _, x := range sub {
			e := er[x]
			if e > worst {
				worst = e
			}
			sum += e
		}
	}
	return worst, sum
}

// mulAffTo stores p·l into r (r may not alias p or l).
func mulAffTo(r, p, l *aff) {
	p0, p1, p2, p3, p4, p5, p6, p7, p8 := p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]
	for c := range 4 {
		l0, l1, l2 := l[3*c], l[3*c+1], l[3*c+2]
		r[3*c] = p0*l0 + p3*l1 + p6*l2
		r[3*c+1] = p1*l0 + p4*l1 + p7*l2
		r[3*c+2] = p2*l0 + p5*l1 + p8*l2
	}
	r[9] += p[9]
	r[10] += p[10]
	r[11] += p[11]
}

// search picks each track's rate code for segment s: every track starts
// at the top of the ladder; then, repeatedly, the track whose step down
// saves the most bits per unit of added error (summed over its subtree's
// frames and bones) steps down, among the steps that keep every vertex of
// the segment within target.
//
// A step changes the score of every track whose bone is an ancestor or a
// descendant of the stepped bone, so all of them are re-scored, each over
// its bone's subtree. Each track keeps its candidate's model matrices and
// vertex errors (while they fit in uniformCacheBytes): an ancestor's
// candidate differs after a step only below the stepped bone, so only
// that part is recomputed, and its sums are re-added from the kept
// errors in the same order (the scores, hence the choices, stay exactly
// those of a full re-evaluation). Descendants are redone in full: their
// parent's model matrix changed.
//
// The calibration runs the search several times with other targets. The
// scores do not depend on the target (only which steps are allowed), so
// each segment's search records every round's scores and largest errors
// (while they fit in uniformRecordBytes) and the next pass replays them,
// choosing as it would have from the same scores, up to the first round
// where its target changes the choice; from there it evaluates as usual.
func (w *uniformWork) search(s int, target float64) []int {
	p := w.p
	nb, nt := p.nb, p.nt
	sf := p.segFrames(s)
	rec := &p.recs[s]
	for i := range nt {
		w.codes[i] = 15
	}
	// Replay the previous pass's search of this segment while this
	// target makes the same choices from its recorded scores.
	t := 0
	for ; t < len(rec.best); t++ {
		sc, wo := rec.score[t*nt:][:nt], rec.worst[t*nt:][:nt]
		best := pick(w.codes, sc, wo, target)
		if best != int(rec.best[t]) {
			break
		}
		if best < 0 {
			return w.codes
		}
		w.codes[best]--
	}
	rec.best, rec.score, rec.worst = rec.best[:t], rec.score[:t*nt], rec.worst[:t*nt]
	for fi := range sf {
		for b := range nb {
			d := p.def[b*anim.PoseFloats:]
			x := fi*nb + b
			w.lt[x] = [3]float64{float64(d[0]), float64(d[1]), float64(d[2])}
			w.lr[x] = [4]float64{float64(d[4]), float64(d[5]), float64(d[6]), float64(d[7])}
			w.ls[x] = [3]float64{float64(d[8]), float64(d[9]), float64(d[10])}
		}
	}
	for i := range nt {
		w.stale[i] = true
		w.redo[i] = -1
		w.set(i, w.codes[i], sf)
	}
	for fi := range sf {
		for b := range nb {
			w.loc[fi*nb+b] = affOf(&w.lt[fi*nb+b], &w.lr[fi*nb+b], &w.ls[fi*nb+b])
		}
	}
	for b := range nb {
		if p.parents[b] < 0 {
			w.evalTree(s, b, sf, nil, w.mod, w.mod, w.err)
		}
	}
	n := sf * nb
	cache := nt*n*(12*8+8) <= uniformCacheBytes
	if cache && len(w.cmod) < nt*n {
		w.cmod = make([]aff, nt*n)
		w.cerr = make([]float64, nt*n)
	}
	for {
		for i := range nt {
			if w.codes[i] == 0 || !w.stale[i] {
				continue
			}
			w.stale[i] = false
			b := p.tracks[i].bone
			_, before := w.treeError(b, sf, w.err)
			mod, err := w.tmod, w.terr
			if cache {
				mod, err = w.cmod[i*n:][:n], w.cerr[i*n:][:n]
			}
			if r := w.redo[i]; r >= 0 {
				// Only the stepped bone r's subtree changed under i's
				// candidate, whose matrix at r's parent is kept in mod.
				w.evalTree(s, r, sf, nil, mod, mod, err)
			} else {
				w.candidate(i, w.codes[i]-1, sf)
				w.evalTree(s, b, sf, w.cand, w.mod, mod, err)
			}
			w.redo[i] = -1
			e, after := w.treeError(b, sf, err)
			c := w.codes[i]
			gain := float64(3 * int(format.UniformLadder[c]-format.UniformLadder[c-1]) * sf)
			w.score[i] = gain / math.Max(after-before, 1e-12)
			w.worst[i] = e
		}
		best := pick(w.codes, w.score, w.worst, target)
		if len(rec.best) < p.recIters {
			rec.best = append(rec.best, int32(best))
			rec.score = append(rec.score, w.score[:nt]...)
			rec.worst = append(rec.worst, w.worst[:nt]...)
		}
		if best < 0 {
			break
		}
		bb := p.tracks[best].bone
		w.codes[best]--
		w.set(best, w.codes[best], sf)
		w.evalTree(s, bb, sf, nil, w.mod, w.mod, w.err)
		for j := range nt {
			if p.related[best*nt+j] {
				w.stale[j] = true
				// A track on a strict ancestor of bb keeps its candidate
				// above bb (every track is re-scored between two steps).
				if cache && p.depth[p.tracks[j].bone] < p.depth[bb] {
					w.redo[j] = bb
				}
			}
		}
	}
	return w.codes
}

// pick returns the track that steps down next: the highest score among
// the tracks above code 0 whose step keeps every vertex within target
// (the first on ties), or -1.
func pick(codes []int, score, worst []float64, target float64) int {
	best := -1
	for i, c := range codes {
		if c > 0 && !(worst[i] > target) && score[i] >= 0 && (best < 0 || score[i] > score[best]) {
			best = i
		}
	}
	return best
}

// uniformRecord is one segment's search, round by round: the track that
// stepped (-1: none, the search ended) and every track's score and
// largest error, [round*nt+track].
type uniformRecord struct {
	best         []int32
	score, worst []float64
}

// uniformRecordBytes bounds the recorded searches of a clip (beyond it the
// later rounds are evaluated, not replayed).
const uniformRecordBytes = 64 << 20

// uniformCacheBytes bounds the candidates' kept model matrices and errors
// per search (beyond it every re-score is a full evaluation).
const uniformCacheBytes = 64 << 20

// encodeSegment quantises and searches segment s and returns its words
// and its count of stored (track, frame) samples.
func (w *uniformWork) encodeSegment(s int, target float64) ([]uint32, int) {
	p := w.p
	nt, L := p.nt, p.L
	sf := p.segFrames(s)
	w.quantize(s)
	codes := w.search(s, target)
	D := format.UniformHeaderBytes(nt)
	fb := 0
	for _, c := range codes {
		fb += 3 * int(format.UniformLadder[c])
	}
	buf := make([]byte, D, D+(sf*fb+7)/8+4)
	binary.LittleEndian.PutUint32(buf, uint32(fb))
	samples := 0
	for i, c := range codes {
		buf[4+i] = uint8(c) | p.drop[s*nt+i]<<4
		src := w.rng[6*i : 6*i+6]
		if c == 0 {
			src = w.rng0[6*i : 6*i+6]
		} else {
			samples += sf
		}
		copy(buf[4+nt+6*i:], src)
	}
	var acc uint64
	var nacc uint32
	for fi := range sf {
		for i, c := range codes {
			n := format.UniformLadder[c]
			if n == 0 {
				continue
			}
			for _, q := range w.q[((c*nt+i)*L+fi)*3:][:3] {
				acc |= uint64(q) << nacc
				nacc += n
				for nacc >= 8 {
					buf = append(buf, uint8(acc))
					acc >>= 8
					nacc -= 8
				}
			}
		}
	}
	if nacc > 0 {
		buf = append(buf, uint8(acc))
	}
	for len(buf)%4 != 0 {
		buf = append(buf, 0)
	}
	words := make([]uint32, len(buf)/4)
	for k := range words {
		words[k] = binary.LittleEndian.Uint32(buf[4*k:])
	}
	return words, samples
}

// uniformPass encodes every segment at per-segment error target target,
// segments in parallel on all cores.
func (p *uniformPrep) pass(c *Clip, opt *CompressOptions, target float64) *CompressedClip {
	segs := make([][]uint32, p.nseg)
	samples := make([]int, p.nseg)
	if p.nt == 0 {
		for s := range segs {
			segs[s] = []uint32{0} // FB 0: the segment header alone
		}
	} else {
		var wg sync.WaitGroup
		work := make(chan int)
		for range min(runtime.GOMAXPROCS(0), p.nseg) {
			wg.Go(func() {
				w := p.getWork()
				defer p.work.Put(w)
				for s := range work {
					segs[s], samples[s] = w.encodeSegment(s, target)
				}
			})
		}
		for s := range p.nseg {
			work <- s
		}
		close(work)
		wg.Wait()
	}
	cc := &CompressedClip{
		Name: c.Name, Rate: c.Rate, Frames: c.Frames, Bones: p.nb, SegFrames: p.L,
		Tolerance: opt.Tolerance, Default: p.def, Events: append([]anim.Event(nil), c.Events...),
		Codec: anim.CodecUniform, uniTracks: p.trackWords, uniRanges: p.ranges,
	}
	cc.segBits = make([]uint32, 0, p.nseg+1)
	for s := range p.nseg {
		cc.segBits = append(cc.segBits, uint32(len(cc.stream)*32))
		cc.stream = append(cc.stream, segs[s]...)
	}
	cc.segBits = append(cc.segBits, uint32(len(cc.stream)*32))
	st := &cc.Stats
	st.StreamBytes = len(cc.stream) * 4
	cc.stream = append(cc.stream, make([]uint32, format.StreamPadWords)...)
	st.RawBytes = p.nb * c.Frames * 40
	st.AnimatedTracks = p.nt
	st.ConstantTracks = 3*p.nb - p.nt
	st.Samples = p.nt * c.Frames
	for _, n := range samples {
		st.Points += n
	}
	st.ChainShare = target / opt.Tolerance
	st.Bytes = cc.recordBytes()
	return cc
}

// compressUniform is Compress with CodecUniform: it calibrates the
// per-segment error target of the rate search until the measured 99th
// percentile is at or just below Tolerance.
func compressUniform(sk *Skeleton, c *Clip, opt *CompressOptions, start time.Time) (*CompressedClip, error) {
	p := newUniformPrep(sk, c, opt.VertexDistance, opt.UniformSegmentFrames)
	for i, tr := range p.tracks {
		for j := range 4 {
			if lo, ext := math.Abs(float64(p.cmin[4*i+j])), float64(p.cext[4*i+j]); lo > 1e18 || ext > 1e18 {
				return nil, fmt.Errorf("anim: compress %q: bone %d %v: values beyond ±1e18, which a uniform clip cannot store", c.Name, tr.bone, tr.kind)
			}
		}
	}
	// The search bounds every vertex of a segment by the target, so the
	// 99th percentile lands a little below it: start just above Tolerance
	// (the prototype calibrated to 1.05-1.14 × Tolerance on CMU).
	// p99 grows about in proportion to the target.
	best, err := calibrate(sk, c, opt, 1.05*opt.Tolerance, 1, math.Inf(1), func(target float64) *CompressedClip {
		return p.pass(c, opt, target)
	})
	if err != nil {
		return nil, err
	}
	best.Stats.Duration = time.Since(start)
	return best, nil
}
