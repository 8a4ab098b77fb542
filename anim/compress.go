package anim

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"time"
)

// CompressOptions tune Compress. The zero value means the defaults.
type CompressOptions struct {
	// Tolerance is the model-space error the clip should stay within,
	// in metres at virtual vertices VertexDistance from each bone
	// (default 0.0001 m = 0.01 cm, ACL's default).
	Tolerance float64
	// ChainShare scales Tolerance into the per-track fitting threshold:
	// every original sample of every track is reproduced so that this
	// track's error alone moves no vertex of its bone or its descendants
	// by more than Tolerance*ChainShare. Errors of the tracks along a
	// chain add up (randomly, mostly), so the measured error of a bone is
	// larger than any one track's. The default 0.55 makes the measured
	// 99th percentile about Tolerance on the CMU clips (the maximum is
	// then about 1.7 × Tolerance); 1/depth would bound the maximum.
	ChainShare float64
	// VertexDistance is the distance of the virtual vertices from each
	// bone (default 0.03 m, as ACL measures).
	VertexDistance float64
	// SegmentSeconds is the length of the independently decodable segments
	// (a random seek decodes from its segment's start). Default 1 s.
	SegmentSeconds float64
}

func (o *CompressOptions) defaults() {
	if o.Tolerance == 0 {
		o.Tolerance = 0.0001
	}
	if o.ChainShare == 0 {
		o.ChainShare = 0.55
	}
	if o.VertexDistance == 0 {
		o.VertexDistance = 0.03
	}
	if o.SegmentSeconds == 0 {
		o.SegmentSeconds = 1
	}
}

// CompressStats describes a compressed clip.
type CompressStats struct {
	RawBytes       int // ACL's count: (4+3+3) float32 per bone per sample
	Bytes          int // the clip record in the blob (tables, stream, events, name)
	StreamBytes    int // curve points only
	Points         int // curve points stored, all tracks
	Samples        int // source samples of the animated tracks
	AnimatedTracks int
	ConstantTracks int
	QuantLimited   int // tracks whose quantisation alone misses Tolerance
	Duration       time.Duration
}

// Ratio is RawBytes / Bytes.
func (s *CompressStats) Ratio() float64 { return float64(s.RawBytes) / float64(s.Bytes) }

// spoint is a curve point: local frame in its segment and stored indices.
type spoint struct {
	t   uint32
	idx [4]int32
}

// segData is one animated track's part of one segment, with its coding
// parameters (set by choose).
type segData struct {
	mode uint32 // rotation component dropped (0..3) or modeAll
	pts  []spoint
	disc uint32    // 1 when two points share a frame (time deltas may be 0)
	pm   uint32    // predictor
	kt   uint32    // Rice parameter of time deltas
	kc   [4]uint32 // Rice parameters of index residuals
	bits int       // coded size
}

// slotTrack is an animated track.
type slotTrack struct {
	bone    int
	kind    TrackKind
	step    float32
	absBits int // width of a segment's first point's signed indices
	segs    []segData
}

// CompressedClip is a clip ready to be written to a blob (see Builder).
type CompressedClip struct {
	Name      string
	Rate      float64
	Frames    int
	Bones     int
	SegFrames int
	Tolerance float64
	Default   []float32 // PoseFloats per bone: every constant track's value
	Events    []Event
	slots     []slotTrack
	stream    []uint32 // bit stream plus streamPadWords zero words
	segBits   []uint32 // bit offset of each segment, then the end
	Stats     CompressStats
}

// streamPadWords zero words end every stream, so that a record read that
// starts inside the stream never reads outside it.
const streamPadWords = 12

func (cc *CompressedClip) numSegments() int { return len(cc.segBits) - 1 }

// segLenOf returns the length in frames of segment s.
func segLenOf(frames, segFrames, s int) int {
	return min(segFrames, frames-1-s*segFrames)
}

// Compress fits and quantises every track of clip c (of skeleton sk).
// Constant tracks go to the default pose; the others become Hermite curve
// points on a per-track grid whose step is searched for the fewest coded
// bits. It uses all cores and is safe for concurrent use.
func Compress(sk *Skeleton, c *Clip, opt CompressOptions) (*CompressedClip, error) {
	start := time.Now()
	opt.defaults()
	if !(opt.Tolerance > 0) || !(opt.ChainShare > 0) || !(opt.VertexDistance >= 0) || !(opt.SegmentSeconds > 0) || !finite(opt.Tolerance*opt.SegmentSeconds*opt.ChainShare) {
		return nil, fmt.Errorf("compress %q: bad options %+v", c.Name, opt)
	}
	if err := sk.Validate(); err != nil {
		return nil, fmt.Errorf("compress %q: %w", c.Name, err)
	}
	if err := c.Validate(sk); err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	nb := sk.NumBones()
	lv := leverArms(sk, c, opt.VertexDistance)
	trackTol := opt.Tolerance * opt.ChainShare

	segFrames := int(math.Round(opt.SegmentSeconds * c.Rate))
	segFrames = max(1, min(segFrames, 1<<16-1))
	if c.Frames-1 <= segFrames {
		segFrames = max(1, c.Frames-1)
	}
	nseg := max(1, (c.Frames-1+segFrames-1)/segFrames)

	cc := &CompressedClip{
		Name: c.Name, Rate: c.Rate, Frames: c.Frames, Bones: nb, SegFrames: segFrames,
		Tolerance: opt.Tolerance, Default: make([]float32, PoseFloats*nb),
		Events: append([]Event(nil), c.Events...),
	}
	type result struct {
		slot     *slotTrack
		constant [4]float32
		limited  bool
	}
	results := make([]result, 3*nb)
	var wg sync.WaitGroup
	work := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for ti := range work {
				b, k := ti/3, TrackKind(ti%3)
				w := lv.reach[b]
				if k == TrackTranslation {
					w = lv.pscale[b]
				}
				sl, cv, lim := compressTrack(&c.Tracks[ti], b, k, w, lv.axis[b], c.Frames, segFrames, nseg, trackTol)
				results[ti] = result{sl, cv, lim}
			}
		})
	}
	for ti := range results {
		work <- ti
	}
	close(work)
	wg.Wait()

	st := &cc.Stats
	for ti, r := range results {
		b, k := ti/3, ti%3
		v := r.constant
		if r.slot != nil {
			cc.slots = append(cc.slots, *r.slot)
			st.AnimatedTracks++
			st.Samples += len(c.Tracks[ti].Values)
			sd := &r.slot.segs[0]
			v = dequant(uint32(r.slot.kind), sd.mode, r.slot.step, &sd.pts[0].idx)
		} else {
			st.ConstantTracks++
		}
		if r.limited {
			st.QuantLimited++
		}
		copy(cc.Default[b*PoseFloats+k*4:], v[:])
		if TrackKind(k) != TrackRotation {
			cc.Default[b*PoseFloats+k*4+3] = 0
		}
	}
	cc.encodeStream()
	st.RawBytes = nb * c.Frames * 40
	st.StreamBytes = int((cc.segBits[len(cc.segBits)-1] + 7) / 8)
	for _, sl := range cc.slots {
		for _, sd := range sl.segs {
			st.Points += len(sd.pts)
		}
	}
	st.Bytes = cc.recordBytes()
	st.Duration = time.Since(start)
	return cc, nil
}

// levers holds, per bone, what turns a track's error into model-space
// displacement at the virtual vertices of the bone and its descendants.
type levers struct {
	reach  []float64      // largest distance joint -> vertex over the clip
	pscale []float64      // largest scale of the parent's model matrix
	axis   [][][4]float32 // per frame: largest distance of a vertex from each local axis, and from the joint
}

// leverArms measures the levers on the source clip. For a rotation error
// Δq = q⁻¹q' of bone b, a vertex at y (relative to the joint, in the frame
// after b's rotation, times the parent's scale) moves by exactly
// |2 vec(Δq) × y| <= Σ_a |2 vec(Δq)_a| · dist(y, axis a); axis[b][f] holds
// the largest such distances over the vertices at frame f, so twists about
// a limb's own axis cost little.
func leverArms(sk *Skeleton, c *Clip, vdist float64) *levers {
	nb := sk.NumBones()
	lv := &levers{reach: make([]float64, nb), pscale: make([]float64, nb), axis: make([][][4]float32, nb)}
	for b := range lv.axis {
		lv.axis[b] = make([][4]float32, c.Frames)
	}
	local := make([]Transform, nb)
	model := make([]mat4, nb)
	// rot[b]: inverse of (parent linear part · R_b), to map model-space
	// offsets into the frame after b's rotation.
	inv := make([]mat4, nb)
	for f := range c.Frames {
		c.Pose(f, local)
		modelMatrices(sk.Parents, local, model)
		for b := range nb {
			rm := Transform{R: local[b].R, S: Vec3{1, 1, 1}}.matrix()
			var pm mat4
			if p := sk.Parents[b]; p >= 0 {
				pm = model[p]
				pm[12], pm[13], pm[14] = 0, 0, 0
				lv.pscale[b] = math.Max(lv.pscale[b], model[p].maxAxisScale())
			} else {
				pm = IdentityTransform.matrix()
				lv.pscale[b] = 1
			}
			m := pm.mul(&rm)
			inv[b] = m.inverse3()
		}
		for d := range nb {
			pd := Vec3{model[d][12], model[d][13], model[d][14]}
			var verts [4]Vec3
			verts[0] = pd
			for a := range 3 {
				var v Vec3
				v[a] = vdist
				verts[a+1] = model[d].point(v)
			}
			for a := d; a >= 0; a = int(sk.Parents[a]) {
				pa := Vec3{model[a][12], model[a][13], model[a][14]}
				ax := &lv.axis[a][f]
				for _, v := range verts {
					off := v.sub(pa)
					lv.reach[a] = math.Max(lv.reach[a], off.length())
					y := inv[a].vec(off)
					// scale back by the parent's scale: the displacement
					// is measured in model space
					ps := lv.pscale[a]
					ax[0] = max(ax[0], float32(ps*math.Hypot(y[1], y[2])))
					ax[1] = max(ax[1], float32(ps*math.Hypot(y[0], y[2])))
					ax[2] = max(ax[2], float32(ps*math.Hypot(y[0], y[1])))
					ax[3] = max(ax[3], float32(off.length()))
				}
			}
		}
	}
	return lv
}

// stepFractions are the shares of the tolerance tried for quantisation
// (the rest is left to the curve fit).
var stepFractions = []float64{0.9, 0.75, 0.6, 0.45, 0.3, 0.18, 0.08}

// compressTrack decides whether a track is constant (returning its value)
// or fits it, returning the animated slot with the cheapest grid step.
func compressTrack(tr *Track, bone int, kind TrackKind, weight float64, axis [][4]float32, frames, segFrames, nseg int, tol float64) (*slotTrack, [4]float32, bool) {
	cv, cerr := constantValue(tr, kind, weight, axis)
	if cerr <= tol || frames == 1 {
		return nil, cv, false
	}
	maxAbs := 0.0
	for _, v := range tr.Values {
		for c := range 4 {
			maxAbs = math.Max(maxAbs, math.Abs(v[c]))
		}
	}
	minStep := maxAbs / float64(int32(1)<<(MaxIndexBits-1))
	var best *slotTrack
	bestBits := math.MaxInt
	for _, frac := range stepFractions {
		d := frac * tol
		var step float64
		if kind == TrackRotation {
			step = d / (1.75 * weight)
		} else {
			step = 2 * d / math.Sqrt(3) / math.Max(weight, 1e-9)
		}
		sl := newSlot(bone, kind, math.Max(step, minStep), maxAbs, nseg)
		bits, ok := 0, true
		for s := range nseg {
			ft, mode := segmentTrack(tr, kind, weight, axis, sl.step, s*segFrames, s*segFrames+segLenOf(frames, segFrames, s))
			pts, fitted := ft.fit(tol)
			if !fitted {
				ok = false
				break
			}
			sd := segData{mode: mode, pts: make([]spoint, len(pts))}
			for i, p := range pts {
				sd.pts[i] = spoint{t: uint32(ft.frames[p.s]), idx: p.idx}
			}
			sl.segs[s] = sd
			sl.choose(s)
			bits += sl.segs[s].bits
		}
		if ok && bits < bestBits {
			best, bestBits = sl, bits
		}
	}
	if best != nil {
		return best, cv, false
	}
	// Even the finest grid misses the tolerance (a huge range): keep every
	// sample on the finest grid; the error is the quantisation error.
	sl := newSlot(bone, kind, math.Max(stepFractions[len(stepFractions)-1]*tol/(1.75*weight), minStep), maxAbs, nseg)
	for s := range nseg {
		ft, mode := segmentTrack(tr, kind, weight, axis, sl.step, s*segFrames, s*segFrames+segLenOf(frames, segFrames, s))
		sd := segData{mode: mode, pts: make([]spoint, len(ft.src))}
		for i := range sd.pts {
			sd.pts[i] = spoint{t: uint32(ft.frames[i]), idx: ft.idx[i]}
		}
		sl.segs[s] = sd
		sl.choose(s)
	}
	return sl, cv, true
}

func newSlot(bone int, kind TrackKind, step, maxAbs float64, nseg int) *slotTrack {
	s32 := float32(step)
	return &slotTrack{bone: bone, kind: kind, step: s32,
		absBits: bitsFor(int(math.Ceil(maxAbs/float64(s32)))+1) + 1, segs: make([]segData, nseg)}
}

// constantValue returns the value that best represents the whole track and
// the largest error (metres) using it everywhere would cause.
func constantValue(tr *Track, kind TrackKind, weight float64, axis [][4]float32) ([4]float32, float64) {
	var v [4]float32
	if kind == TrackRotation {
		var sum Quat
		for _, s := range tr.Values {
			q := Quat(s)
			if q.dot(Quat(tr.Values[0])) < 0 {
				q = q.neg()
			}
			for i := range sum {
				sum[i] += q[i]
			}
		}
		m := sum.normalized()
		v = [4]float32{float32(m[0]), float32(m[1]), float32(m[2]), float32(m[3])}
	} else {
		lo, hi := trackRange(tr)
		for i := range 3 {
			v[i] = float32((lo[i] + hi[i]) / 2)
		}
	}
	ft := fitTrack{kind: kind, src: tr.Values, weight: weight}
	if kind == TrackRotation && axis != nil {
		ft.axis = make([][4]float32, len(tr.Values))
		for i, f := range tr.Frames {
			ft.axis[i] = axis[f]
		}
	}
	e := 0.0
	for s := range tr.Values {
		e = math.Max(e, ft.errAt(s, v))
	}
	return v, e
}

func trackRange(tr *Track) (lo, hi Vec3) {
	lo = Vec3{math.Inf(1), math.Inf(1), math.Inf(1)}
	hi = Vec3{math.Inf(-1), math.Inf(-1), math.Inf(-1)}
	for _, v := range tr.Values {
		for i := range 3 {
			lo[i] = math.Min(lo[i], v[i])
			hi[i] = math.Max(hi[i], v[i])
		}
	}
	return lo, hi
}

// segmentTrack extracts frames [a, b] of a track: the right-hand value at
// a, the left-hand value at b, and both samples of interior
// discontinuities, each with its value after quantisation on the grid.
func segmentTrack(tr *Track, kind TrackKind, weight float64, axis [][4]float32, step float32, a, b int) (*fitTrack, uint32) {
	lo := tr.sampleIndex(a)
	hi := sort.Search(len(tr.Frames), func(i int) bool { return int(tr.Frames[i]) >= b })
	ft := &fitTrack{kind: kind, weight: weight, step: step, src: tr.Values[lo : hi+1]}
	if kind == TrackRotation {
		ft.mode = rotationMode(ft.src)
	}
	ft.frames = make([]float32, len(ft.src))
	if kind == TrackRotation {
		ft.axis = make([][4]float32, len(ft.src))
		for i := range ft.src {
			ft.axis[i] = axis[tr.Frames[lo+i]]
		}
	}
	ft.idx = make([][4]int32, len(ft.src))
	ft.deq = make([][4]float32, len(ft.src))
	for i := range ft.src {
		ft.frames[i] = float32(int(tr.Frames[lo+i]) - a)
		ft.idx[i] = quantize(kind, ft.mode, step, ft.src[i])
		ft.deq[i] = dequant(uint32(kind), ft.mode, step, &ft.idx[i])
	}
	return ft, ft.mode
}

// Segment coding of one track (see doc.go): parameters, then the first
// point's indices raw, then each later point as a Rice-coded time delta
// and Rice-coded index residuals against predict().

// choose picks segment s's coding parameters for the fewest bits and
// records the coded size.
func (sl *slotTrack) choose(s int) {
	sd := &sl.segs[s]
	p := sd.pts
	sd.disc = 0
	for k := 1; k < len(p); k++ {
		if p[k].t == p[k-1].t {
			sd.disc = 1
		}
	}
	us := make([]uint32, 0, len(p))
	for k := 1; k < len(p); k++ {
		us = append(us, p[k].t-p[k-1].t-(1-sd.disc))
	}
	var tbits int
	sd.kt, tbits = bestRiceK(us, 15)
	nc := ncompOf(uint32(sl.kind), sd.mode)
	best := math.MaxInt
	for pm := uint32(0); pm < numPreds; pm++ {
		var kc [4]uint32
		total := 0
		for c := range nc {
			us = us[:0]
			for k := 1; k < len(p); k++ {
				us = append(us, zigzag(p[k].idx[c]-sl.pred(s, k, c, pm)))
			}
			var n int
			kc[c], n = bestRiceK(us, maxRiceK)
			total += n
		}
		if total < best {
			best, sd.pm, sd.kc = total, pm, kc
		}
	}
	// parameters + first point raw + the coded later points
	sd.bits = 3 + 1 + 2 + 4 + 5*nc + sl.absBits*nc + tbits + best
}

// pred is the prediction of component c of point k (k >= 1) of segment s.
func (sl *slotTrack) pred(s, k, c int, pm uint32) int32 {
	p := sl.segs[s].pts
	if k == 1 {
		return p[0].idx[c]
	}
	return predict(p[k-2].t, p[k-1].t, p[k].t, p[k-2].idx[c], p[k-1].idx[c], pm)
}

// packParams packs coding parameters as the cursor stores them:
// mode | disc<<3 | kt<<4 | kc[c]<<(8+5c) | pm<<28.
func packParams(mode, disc, pm, kt uint32, kc [4]uint32) uint32 {
	return mode | disc<<3 | kt<<4 | kc[0]<<8 | kc[1]<<13 | kc[2]<<18 | kc[3]<<23 | pm<<28
}

// writeHeader writes the track's segment header: parameters (mode 3 bits,
// disc 1, predictor 2, time Rice 4, 5 per component), the first point raw
// (absBits per component), the second point, and the third unless the
// second ends the segment.
func (sl *slotTrack) writeHeader(w *bitWriter, s int, end uint32) {
	sd := &sl.segs[s]
	nc := ncompOf(uint32(sl.kind), sd.mode)
	w.write(sd.mode, 3)
	w.write(sd.disc, 1)
	w.write(sd.pm, 2)
	w.write(sd.kt, 4)
	for c := range nc {
		w.write(sd.kc[c], 5)
	}
	for c := range nc {
		w.write(uint32(sd.pts[0].idx[c]), sl.absBits)
	}
	sl.writePoint(w, s, 1)
	if sd.pts[1].t != end {
		sl.writePoint(w, s, 2)
	}
}

func (sl *slotTrack) writePoint(w *bitWriter, s, k int) {
	sd := &sl.segs[s]
	p := sd.pts
	w.rice(p[k].t-p[k-1].t-(1-sd.disc), sd.kt)
	for c := range ncompOf(uint32(sl.kind), sd.mode) {
		w.rice(zigzag(p[k].idx[c]-sl.pred(s, k, c, sd.pm)), sd.kc[c])
	}
}

// encodeStream writes every segment: each animated track's header (no
// track ids: tracks appear in slot order), then the remaining points as
// records sorted by the frame at which playback needs them (point k of a
// track is needed once playback reaches the track's point k-2), ties in
// slot order. The sampler reproduces this order from its cursor alone.
func (cc *CompressedClip) encodeStream() {
	nseg := max(1, (cc.Frames-1+cc.SegFrames-1)/cc.SegFrames)
	var w bitWriter
	cc.segBits = cc.segBits[:0]
	type rec struct {
		need uint32
		slot int
		k    int
	}
	var recs []rec
	for s := range nseg {
		cc.segBits = append(cc.segBits, uint32(w.n))
		end := uint32(segLenOf(cc.Frames, cc.SegFrames, s))
		for i := range cc.slots {
			cc.slots[i].writeHeader(&w, s, end)
		}
		recs = recs[:0]
		for i := range cc.slots {
			p := cc.slots[i].segs[s].pts
			for k := 3; k < len(p); k++ {
				recs = append(recs, rec{p[k-2].t, i, k})
			}
		}
		sort.Slice(recs, func(a, b int) bool {
			ra, rb := recs[a], recs[b]
			if ra.need != rb.need {
				return ra.need < rb.need
			}
			if ra.slot != rb.slot {
				return ra.slot < rb.slot
			}
			return ra.k < rb.k
		})
		for _, r := range recs {
			cc.slots[r.slot].writePoint(&w, s, r.k)
		}
	}
	cc.segBits = append(cc.segBits, uint32(w.n))
	need := int((w.n+31)/32) + streamPadWords
	for len(w.words) < need {
		w.words = append(w.words, 0)
	}
	cc.stream = w.words
}

// errNoClip is returned for clip offsets that name no clip of a blob.
var errNoClip = errors.New("not a clip of this blob")
