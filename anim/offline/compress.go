package offline

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
	"github.com/vkjobs/vkjobs/anim/vmath"
)

// CompressOptions tune Compress. The zero value means the defaults.
type CompressOptions struct {
	// Tolerance is the model-space error the clip should stay within,
	// in metres at virtual vertices VertexDistance from each joint
	// (default 0.0001 m = 0.01 cm, ACL's default): with Passes > 1, the
	// measured 99th percentile over every (bone, sample) pair, and over
	// every (bone, point between samples) pair; Compress fails with a
	// *ToleranceError when it cannot meet it.
	Tolerance float64
	// ChainShare scales Tolerance into the per-track fitting thresholds:
	// every original sample of every track is reproduced so that this
	// track's error alone moves no vertex it is measured at (its bone's,
	// and its descendants' up to the next animated rotation in closed
	// loop) by more than Tolerance*ChainShare times the track's
	// allocation (0.25 to 4, see allocate). Errors of the tracks along a
	// chain add up (randomly, mostly), so the measured error of a bone is
	// larger than any one track's. It is where the calibration (Passes)
	// starts, or with Passes 1 the share used; the default 0.47 puts the
	// measured 99th percentile near Tolerance on the CMU clips (the
	// maximum is then about 1.7 × Tolerance).
	ChainShare float64
	// MaxError bounds the error at every measured point (every bone, at
	// and between samples, at VertexDistance), in metres; +Inf for no
	// bound. The 99th percentile (Tolerance) hides a failure confined to
	// a few points, such as a STEP the codec can only ramp (see anim's
	// documentation); this bound does not. The default, the larger of
	// VertexDistance and 10 × Tolerance, catches gross errors only (a
	// virtual vertex moved by more than its distance from the joint):
	// the curve codec's maximum can be far above its 99th percentile
	// where a source curve between two samples is one its line or
	// Hermite curve cannot follow (CMU 01_03 at the default Tolerance:
	// 5.7 mm on a finger between two samples, with 99th percentiles under
	// 0.1 mm). Checked with Passes > 1 only.
	MaxError float64
	// VertexDistance is the distance of the virtual vertices from each
	// joint, in metres in model space (the skeleton's world: a skeleton
	// under a node scaled 0.01 has them at VertexDistance/0.01 in its own
	// units); default 0.03 m, as ACL measures.
	VertexDistance float64
	// SegmentSeconds is the length of the independently decodable segments
	// (a random seek decodes from its segment's start). Default 1 s.
	SegmentSeconds float64
	// OpenLoop fits every rotation against its own source values. By
	// default (closed loop) a rotation is fitted against the local value
	// that restores its bone's source orientation in model space given
	// what the sampler decodes for the ancestors, so that an ancestor's
	// error reaches the descendants only as a displacement of the joints
	// (clips with non-uniform scales are always fitted open loop).
	OpenLoop bool
	// Passes is how many times Compress may compress the clip: after each
	// pass it measures the 99th percentile of the error through the
	// sampler (as Measure does) and rescales ChainShare toward Tolerance,
	// keeping the smallest result within it (or, when none is, the most
	// accurate). Default 4; 1 compresses once at ChainShare. With
	// CodecUniform the passes calibrate the rate search's per-segment
	// error target instead.
	Passes int
	// Codec selects the clip codec: CodecCurve (the zero value: Hermite
	// curves, the best ratio) or CodecUniform (every frame stored at a
	// per-track, per-segment bit rate: frame-addressable, the same cost
	// at any playback rate and on seeks; see Codec). With CodecUniform,
	// ChainShare, SegmentSeconds and OpenLoop do not apply.
	Codec anim.Codec
	// UniformSegmentFrames is the segment length of CodecUniform in
	// frames: a power of two in 2..256, default 16 (the rate search picks
	// each track's bit rate and range per segment: shorter segments adapt
	// better but spend more on per-segment headers).
	UniformSegmentFrames int
}

func (o *CompressOptions) defaults() {
	if o.Tolerance == 0 {
		o.Tolerance = 0.0001
	}
	if o.ChainShare == 0 {
		o.ChainShare = 0.47
	}
	if o.VertexDistance == 0 {
		o.VertexDistance = 0.03
	}
	if o.MaxError == 0 {
		o.MaxError = math.Max(o.VertexDistance, 10*o.Tolerance)
	}
	if o.SegmentSeconds == 0 {
		o.SegmentSeconds = 1
	}
	if o.Passes == 0 {
		o.Passes = 4
	}
	if o.UniformSegmentFrames == 0 {
		o.UniformSegmentFrames = format.UniformDefaultSegFrames
	}
}

// check names the first bad field of defaulted options.
func (o *CompressOptions) check(clip string) error {
	bad := func(field, msg string, args ...any) error {
		return fmt.Errorf("anim: compress %q: bad options: %s %s", clip, field, fmt.Sprintf(msg, args...))
	}
	pos := func(name string, v float64) error {
		if !(v > 0) || !format.Finite(v) {
			return bad(name, "%v (want a finite value > 0, or 0 for the default)", v)
		}
		return nil
	}
	if err := pos("Tolerance", o.Tolerance); err != nil {
		return err
	}
	if err := pos("ChainShare", o.ChainShare); err != nil {
		return err
	}
	if err := pos("SegmentSeconds", o.SegmentSeconds); err != nil {
		return err
	}
	if !(o.VertexDistance >= 0) || !format.Finite(o.VertexDistance) {
		return bad("VertexDistance", "%v (want a finite value >= 0; 0 for the default)", o.VertexDistance)
	}
	if !(o.MaxError > 0) {
		return bad("MaxError", "%v (want > 0, +Inf for no bound, 0 for the default)", o.MaxError)
	}
	if o.Passes < 0 {
		return bad("Passes", "%d (want >= 0; 0 for the default)", o.Passes)
	}
	if !format.Finite(o.Tolerance * o.SegmentSeconds * o.ChainShare) {
		return bad("Tolerance", "%v × SegmentSeconds %v × ChainShare %v overflows", o.Tolerance, o.SegmentSeconds, o.ChainShare)
	}
	return nil
}

// CompressStats describes a compressed clip.
type CompressStats struct {
	RawBytes       int // ACL's count: (4+3+3) float32 per bone per sample
	Bytes          int // the clip record in the blob (tables, stream, events, name)
	StreamBytes    int // curve points only (uniform: the segments, without padding)
	Points         int // source samples stored as curve points, all tracks (a segment boundary's, stored in both segments, once; uniform: (track, frame) samples with frame bits)
	Samples        int // source samples of the animated tracks
	AnimatedTracks int
	ConstantTracks int
	QuantLimited   int     // tracks whose quantisation alone misses Tolerance
	ChainShare     float64 // the share of Tolerance the tracks were given (uniform: the per-segment error target / Tolerance)
	P99            float64 // measured 99th percentile at VertexDistance, the larger of at and between samples (ErrorStats.WorstP99; 0 with Passes 1)
	Max            float64 // measured maximum, at or between samples (ErrorStats.WorstMax; 0 with Passes 1)
	MaxBone        int     // the bone of Max
	MaxTime        float64 // the time of Max (seconds)
	Passes         int     // compressions run to get here
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
	mode uint32 // rotation component dropped (0..3) or format.ModeAll
	lin  uint32 // 1: linear between points (see format.CurveCoeffs)
	pts  []spoint
	disc uint32    // 1 when two points share a frame (time deltas may be 0)
	end  uint32    // 1 when the last two points are at the segment end (format.ParamEndPair)
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
	Codec     anim.Codec // how the animated tracks are stored
	Default   []float32  // anim.PoseFloats per bone: every constant track's value
	Events    []anim.Event
	uniTracks []uint32  // CodecUniform: bone | kind<<16 per animated track
	uniRanges []float32 // CodecUniform: clip range table, 8 per animated track
	slots     []slotTrack
	stream    []uint32  // bit stream plus format.StreamPadWords zero words
	tols      []float64 // per track: the fit's threshold (0: constant)
	closed    bool      // rotations fitted closed loop (see CompressOptions.OpenLoop)
	segBits   []uint32  // bit offset of each segment, then the end
	Stats     CompressStats
}

func (cc *CompressedClip) numSegments() int { return len(cc.segBits) - 1 }

// Compress fits and quantises every track of clip c (of skeleton sk).
// Constant tracks go to the default pose; the others become Hermite curve
// points on a per-track grid whose step is searched for the fewest coded
// bits, rotations fitted closed loop (see CompressOptions.OpenLoop) with
// per-track thresholds (see allocate). Unless opt.Passes is 1 it then
// measures the result through the sampler and recompresses with a
// rescaled ChainShare until the 99th percentile error meets Tolerance
// and the maximum MaxError (Stats.P99, Stats.Max, Stats.ChainShare,
// Stats.Passes). When no pass meets them it returns a *ToleranceError
// (by how much, where, and the most accurate clip) instead of a clip:
// with Passes > 1 a clip Compress returns is within its target. With
// Passes 1 nothing is measured or checked. It uses all cores and is safe
// for concurrent use.
func Compress(sk *Skeleton, c *Clip, opt CompressOptions) (*CompressedClip, error) {
	if sk == nil || c == nil {
		return nil, fmt.Errorf("anim: Compress: nil skeleton or clip")
	}
	start := time.Now()
	opt.defaults()
	if err := opt.check(c.Name); err != nil {
		return nil, err
	}
	if opt.Codec > anim.CodecUniform {
		return nil, fmt.Errorf("anim: compress %q: bad option Codec %v", c.Name, opt.Codec)
	}
	if L := opt.UniformSegmentFrames; L < 2 || L > 256 || L&(L-1) != 0 {
		return nil, fmt.Errorf("anim: compress %q: bad option UniformSegmentFrames %d (a power of two in 2..256)", c.Name, L)
	}
	if err := sk.Validate(); err != nil {
		return nil, fmt.Errorf("anim: compress %q: %w", c.Name, err)
	}
	if err := c.Validate(sk); err != nil {
		return nil, fmt.Errorf("anim: compress: %w", err)
	}
	if opt.Codec == anim.CodecUniform {
		return compressUniform(sk, c, &opt, start)
	}
	lv := leverArms(sk, c, opt.VertexDistance)
	// The 99th percentile grows about as share^1.2.
	best, err := calibrate(sk, c, &opt, opt.ChainShare, 1.2, maxChainShare, func(share float64) *CompressedClip {
		cc := compressPass(sk, c, &opt, lv, share)
		cc.Stats.ChainShare = share
		return cc
	})
	if err != nil {
		return nil, err
	}
	best.Stats.Duration = time.Since(start)
	return best, nil
}

// calibrate compresses with pass(x), starting at x = x0, at most
// opt.Passes times: after each pass it measures the error through the
// sampler, r = the larger of p99/Tolerance and max/MaxError, and rescales
// x toward r = 1 (r grows about as x^slope; after two passes, the secant
// through the two closest to 1; x stays within [x/3, 3x] per step and
// below xmax), keeping the smallest result with r <= 1 (or, when none
// has, the most accurate, returned in a *ToleranceError). It stops once
// r is within 1.5% below 1, or when nothing can change (no error, no
// animated tracks, x at a bound). Once one x has met the target and a
// larger one has not, the next x stays between them (their geometric mean
// when the secant leaves the bracket), and the calibration stops when
// they are within 0.1% of each other: the error is a step function of x
// (quantised bit rates), so the secant alone can cycle between the same
// steps and would run every allowed pass. x is the curve codec's
// ChainShare or the uniform codec's per-segment error target.
func calibrate(sk *Skeleton, c *Clip, opt *CompressOptions, x0, slope0, xmax float64, pass func(x float64) *CompressedClip) (*CompressedClip, error) {
	x := x0
	var best *CompressedClip
	bestR, bestOK := 0.0, false
	var tried [][2]float64 // (ln x, ln r)
	// lo: the largest x that met the target; hi: the smallest x above lo
	// that did not (+Inf: none yet).
	lo, hi := 0.0, math.Inf(1)
	for n := range opt.Passes {
		cc := pass(x)
		cc.Stats.Passes = n + 1
		if opt.Passes == 1 {
			return cc, nil
		}
		st, err := measureCompressed(sk, c, cc, opt.VertexDistance)
		if err != nil {
			return nil, fmt.Errorf("anim: compress %q: measuring: %w", c.Name, err)
		}
		cc.Stats.setMeasured(st)
		// r is the error relative to what is allowed, the larger of the
		// 99th percentile's against Tolerance and the maximum's against
		// MaxError: the calibration drives it to just below 1.
		r := math.Max(cc.Stats.P99/opt.Tolerance, cc.Stats.Max/opt.MaxError)
		ok := r <= 1
		if best == nil || (ok && (!bestOK || cc.Stats.Bytes < best.Stats.Bytes)) || (!ok && !bestOK && r < bestR) {
			best, bestR, bestOK = cc, r, ok
		}
		if (ok && r >= 0.985) || r == 0 || cc.Stats.AnimatedTracks == 0 {
			break
		}
		switch {
		case ok && x >= hi:
			lo, hi = x, math.Inf(1) // not monotonic here: drop the bound
		case ok && x > lo:
			lo = x
		case !ok && x > lo && x < hi:
			hi = x
		}
		tried = append(tried, [2]float64{math.Log(x), math.Log(r)})
		slope := slope0
		if len(tried) >= 2 {
			pts := append([][2]float64(nil), tried...)
			sort.Slice(pts, func(i, j int) bool { return math.Abs(pts[i][1]) < math.Abs(pts[j][1]) })
			if d := pts[0][0] - pts[1][0]; d != 0 {
				if sl := (pts[0][1] - pts[1][1]) / d; sl > 0.3 && sl < 3 {
					slope = sl
				}
			}
		}
		next := x * math.Pow(0.993/r, 1/slope)
		next = math.Max(x/3, math.Min(math.Min(x*3, xmax), next))
		if lo > 0 && !math.IsInf(hi, 1) {
			if hi/lo < 1.001 {
				break // bracketed as closely as it matters
			}
			if next <= lo || next >= hi {
				next = math.Sqrt(lo * hi)
			}
		}
		if next == x {
			break // at a bound
		}
		x = next
	}
	if !bestOK {
		st := &best.Stats
		te := &ToleranceError{Clip: c.Name, Codec: best.Codec, Tolerance: opt.Tolerance, MaxError: opt.MaxError,
			VertexDistance: opt.VertexDistance, P99: st.P99, Max: st.Max, Bone: st.MaxBone, Time: st.MaxTime, Compressed: best}
		if st.MaxBone >= 0 && st.MaxBone < len(sk.Names) {
			te.BoneName = sk.Names[st.MaxBone]
		}
		return nil, te
	}
	return best, nil
}

// ToleranceError is Compress's error when the most accurate clip its
// passes produced still misses the target: the measured 99th percentile
// above Tolerance or an error above MaxError (a local failure the
// percentile hides, such as a STEP the codec can only ramp). It says by
// how much and where. Compressed holds that clip, for a caller that
// accepts it (errors.As, then use Compressed); Compress itself returns
// nil with this error.
type ToleranceError struct {
	Clip           string
	Codec          anim.Codec
	Tolerance      float64 // the target for the 99th percentile (metres)
	MaxError       float64 // the bound on every measured point (metres)
	VertexDistance float64 // where the error is measured (metres from each joint)
	P99            float64 // measured 99th percentile (ErrorStats.WorstP99)
	Max            float64 // measured maximum (ErrorStats.WorstMax)
	Bone           int     // the bone of the maximum
	BoneName       string
	Time           float64 // seconds: the time of the maximum
	Compressed     *CompressedClip
}

func (e *ToleranceError) Error() string {
	var miss []string
	if e.P99 > e.Tolerance {
		miss = append(miss, fmt.Sprintf("p99 %.4g mm is %.3g × the tolerance %.4g mm", e.P99*1e3, e.P99/e.Tolerance, e.Tolerance*1e3))
	}
	if e.Max > e.MaxError {
		miss = append(miss, fmt.Sprintf("max %.4g mm is %.3g × MaxError %.4g mm", e.Max*1e3, e.Max/e.MaxError, e.MaxError*1e3))
	}
	return fmt.Sprintf("anim: compress %q (%v codec) misses its target at %g cm from the joints: %s; the largest error, %.4g mm (p99 %.4g mm), is at bone %d %q, %.4f s",
		e.Clip, e.Codec, e.VertexDistance*100, strings.Join(miss, ", "), e.Max*1e3, e.P99*1e3, e.Bone, e.BoneName, e.Time)
}

// rotationTarget returns the local rotation that gives a bone whose
// parent decodes to model rotation decParent (source srcParent) the
// source model orientation srcParent·q, in q's hemisphere.
func rotationTarget(decParent, srcParent, q Quat) Quat {
	delta := decParent.Conj().Mul(srcParent)
	if delta[3] < 0 {
		delta = delta.Neg()
	}
	return delta.Mul(q).Normalized()
}

// maxChainShare bounds the share the calibration may reach: one track's
// error alone within Tolerance.
const maxChainShare = 1

// measureCompressed writes cc to a blob of its own and measures it
// through the sampler at distance d (Measure).
func measureCompressed(sk *Skeleton, c *Clip, cc *CompressedClip, d float64) (ErrorStats, error) {
	var b Builder
	if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
		return ErrorStats{}, err
	}
	data, err := b.Bytes()
	if err != nil {
		return ErrorStats{}, err
	}
	bl, err := anim.Load(data)
	if err != nil {
		return ErrorStats{}, err
	}
	st, err := Measure(sk, c, bl.Clip(0), d)
	if err != nil {
		return ErrorStats{}, err
	}
	return st[0], nil
}

// setMeasured records a measurement: the larger 99th percentile and the
// larger maximum of at and between samples, and where the maximum is.
func (s *CompressStats) setMeasured(e ErrorStats) {
	s.P99, s.Max = e.WorstP99(), e.WorstMax()
	if e.Max >= e.Between.Max {
		s.MaxBone, s.MaxTime = e.WorstBone, float64(e.WorstFrame)/math.Max(e.rate, 1e-300)
	} else {
		s.MaxBone, s.MaxTime = e.Between.WorstBone, e.Between.WorstTime
	}
}

// compressPass compresses c once with every track's threshold at
// share × Tolerance (times its allocation, see allocate).
func compressPass(sk *Skeleton, c *Clip, opt *CompressOptions, lv *levers, share float64) *CompressedClip {
	start := time.Now()
	p := newPass(sk, c, opt, lv, share)
	p.constants()
	p.closed = !opt.OpenLoop && uniformScales(c)
	if p.closed {
		p.shield()
	}
	p.mult = allocate(sk, p.flv, lv, p.animated)
	p.cc.tols = make([]float64, 3*p.nb)
	p.cc.closed = p.closed
	p.fitOpen()
	if p.closed {
		p.fitClosed()
	}
	p.assemble()
	p.cc.Stats.Duration = time.Since(start)
	return p.cc
}

// pass is one compressPass: the clip's tracks, their results, the clip
// being built.
type pass struct {
	sk        *Skeleton
	c         *Clip
	opt       *CompressOptions
	nb        int
	trackTol  float64 // share × Tolerance
	segFrames int
	nseg      int
	cc        *CompressedClip
	results   []passResult // per track
	animated  []bool       // per track: not constant within trackTol
	mult      []float64    // per track: allocate's share of trackTol
	closed    bool         // closed loop: rotations fitted against decoded ancestors
	lv        *levers      // every descendant's levers
	flv       *levers      // the fit's levers (shielded in closed loop)
}

// passResult is a track's result in a pass.
type passResult struct {
	slot     *slotTrack
	constant [4]float32
	limited  bool
}

// newPass sets a pass up: the segment length (SegmentSeconds, one
// segment when the clip is shorter) and the clip's header fields.
func newPass(sk *Skeleton, c *Clip, opt *CompressOptions, lv *levers, share float64) *pass {
	nb := sk.NumBones()
	// Clamped in float64: converting a product beyond int's range to int
	// is undefined in Go (amd64 gives math.MinInt64, which max(1, ...)
	// would turn into one-frame segments for a huge SegmentSeconds).
	segFrames := 1<<16 - 1
	if s := math.Round(opt.SegmentSeconds * c.Rate); s < float64(segFrames) {
		segFrames = max(1, int(s))
	}
	if c.Frames-1 <= segFrames {
		segFrames = max(1, c.Frames-1)
	}
	nseg := max(1, (c.Frames-1+segFrames-1)/segFrames)
	return &pass{
		sk: sk, c: c, opt: opt, nb: nb, trackTol: opt.Tolerance * share,
		segFrames: segFrames, nseg: nseg,
		cc: &CompressedClip{
			Name: c.Name, Rate: c.Rate, Frames: c.Frames, Bones: nb, SegFrames: segFrames,
			Tolerance: opt.Tolerance, Default: make([]float32, anim.PoseFloats*nb),
			Events: append([]anim.Event(nil), c.Events...),
		},
		results:  make([]passResult, 3*nb),
		animated: make([]bool, 3*nb),
		lv:       lv,
		flv:      lv,
	}
}

// parallel calls fn for each of tis on GOMAXPROCS goroutines.
func parallel(tis []int, fn func(ti int)) {
	var wg sync.WaitGroup
	work := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for ti := range work {
				fn(ti)
			}
		})
	}
	for _, ti := range tis {
		work <- ti
	}
	close(work)
	wg.Wait()
}

// weight is the error weight of bone b's track of kind k.
func (lv *levers) weight(b int, k TrackKind) float64 {
	switch k {
	case TrackTranslation:
		return lv.pscale[b]
	case TrackScale:
		return lv.sreach[b]
	}
	return lv.reach[b]
}

// trackLevers are the levers a track of kind k is fitted with: a scale
// error scales the whole subtree about the joint, which no descendant's
// rotation restores, so scales keep the levers of every descendant.
func (p *pass) trackLevers(k TrackKind) *levers {
	if k == TrackScale {
		return p.lv
	}
	return p.flv
}

// constants finds every track's constant value and which tracks are
// animated, measured against the source with the levers of every
// descendant (constants do not compensate anything).
func (p *pass) constants() {
	all := make([]int, 3*p.nb)
	for ti := range all {
		all[ti] = ti
	}
	parallel(all, func(ti int) {
		b, k := ti/3, TrackKind(ti%3)
		cv, cerr := constantValue(&p.c.Tracks[ti], k, p.lv.weight(b, k), p.lv.axis[b])
		p.results[ti].constant = cv
		p.animated[ti] = !(cerr <= p.trackTol || p.c.Frames == 1)
	})
}

// shield makes the fit's levers for closed loop: the bones with an
// animated rotation restore their own orientation, so an ancestor's
// lever stops at their joints (leverArmsShielded).
func (p *pass) shield() {
	shield := make([]bool, p.nb)
	for b := range p.nb {
		shield[b] = p.animated[3*b+int(TrackRotation)]
	}
	p.flv = leverArmsShielded(p.sk, p.c, p.opt.VertexDistance, shield)
}

// fit fits track ti's values tr (between: its value between samples s
// and s+1) at its share of the tolerance.
func (p *pass) fit(ti int, tr *Track, between func(s int, u float64) [4]float64) {
	b, k := ti/3, TrackKind(ti%3)
	tt := p.trackTol * p.mult[ti]
	tl := p.trackLevers(k)
	sl, lim := compressTrack(tr, between, b, k, tl.weight(b, k), tl.axis[b], p.c.Frames, p.segFrames, p.nseg, tt)
	p.results[ti].slot, p.results[ti].limited = sl, lim
	p.cc.tols[ti] = tt
}

// srcBetween is track ti's source value between its samples s and s+1.
func (p *pass) srcBetween(ti int) func(s int, u float64) [4]float64 {
	c := p.c
	tr := &c.Tracks[ti]
	return func(s int, u float64) [4]float64 {
		return c.ValueAt(ti, (float64(tr.Frames[s])+u)/c.Rate)
	}
}

// fitOpen fits the animated tracks against the source: all of them in
// open loop, all but the rotations in closed loop.
func (p *pass) fitOpen() {
	var open []int
	for ti := range p.animated {
		if p.animated[ti] && (!p.closed || TrackKind(ti%3) != TrackRotation) {
			open = append(open, ti)
		}
	}
	parallel(open, func(ti int) { p.fit(ti, &p.c.Tracks[ti], p.srcBetween(ti)) })
}

// fitClosed fits the rotations in closed loop, level by level of the
// hierarchy (parents first): each animated rotation is fitted against the
// local rotation that puts its bone's model-space orientation where the
// source has it, given what the sampler decodes for its ancestors.
func (p *pass) fitClosed() {
	sk, c := p.sk, p.c
	srcModel := modelRotations(sk, c, func(b, f int) Quat {
		tr := &c.Tracks[3*b+int(TrackRotation)]
		return Quat(tr.Values[tr.sampleIndex(f)])
	})
	decModel := make([][]Quat, p.nb)
	depth := make([]int, p.nb)
	maxDepth := 0
	for b, pa := range sk.Parents {
		if pa >= 0 {
			depth[b] = depth[pa] + 1
		}
		maxDepth = max(maxDepth, depth[b])
	}
	for d := 0; d <= maxDepth; d++ {
		var level []int
		for b := range p.nb {
			if depth[b] == d {
				level = append(level, b)
			}
		}
		parallel(level, func(b int) {
			dl := p.decodedRotation(b, srcModel, decModel)
			dm := make([]Quat, c.Frames)
			for f := range dm {
				if pa := sk.Parents[b]; pa >= 0 {
					dm[f] = decModel[pa][f].Mul(dl[f])
				} else {
					dm[f] = dl[f]
				}
			}
			decModel[b] = dm
		})
	}
}

// decodedRotation fits bone b's rotation in closed loop (when animated)
// and returns its decoded local rotation at every frame; srcModel and
// decModel hold the source's and the decoded model-space rotations of
// the bones above b.
func (p *pass) decodedRotation(b int, srcModel, decModel [][]Quat) []Quat {
	c := p.c
	ti := 3*b + int(TrackRotation)
	dl := make([]Quat, c.Frames)
	if !p.animated[ti] {
		cv := p.results[ti].constant
		q := Quat{float64(cv[0]), float64(cv[1]), float64(cv[2]), float64(cv[3])}.Normalized()
		for f := range dl {
			dl[f] = q
		}
		return dl
	}
	tr := &c.Tracks[ti]
	tgt := Track{Frames: tr.Frames, Keys: tr.Keys, Values: make([][4]float64, len(tr.Values))}
	pa := p.sk.Parents[b]
	for s, f := range tr.Frames {
		q := Quat(tr.Values[s])
		if pa >= 0 {
			q = rotationTarget(decModel[pa][f], srcModel[pa][f], q)
		}
		tgt.Values[s] = [4]float64(q)
	}
	// Between frames the target is the source's rotation there, corrected
	// by the slerp of the corrections at the two frames around it.
	src := p.srcBetween(ti)
	between := func(s int, u float64) [4]float64 {
		q := Quat(src(s, u))
		if pa < 0 {
			return [4]float64(q)
		}
		f := int(tr.Frames[s])
		d0 := rotationTarget(decModel[pa][f], srcModel[pa][f], IdentityQuat)
		d1 := rotationTarget(decModel[pa][f+1], srcModel[pa][f+1], IdentityQuat)
		return [4]float64(vmath.Slerp(d0, d1, u).Mul(q).Normalized())
	}
	p.fit(ti, &tgt, between)
	vals := p.results[ti].slot.decodeFrames(c.Frames, p.segFrames)
	for f := range dl {
		v := vals[f]
		dl[f] = Quat{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])}.Normalized()
	}
	return dl
}

// assemble collects the results into the clip: its slots, default pose
// and stream, and the statistics.
func (p *pass) assemble() {
	cc, c := p.cc, p.c
	st := &cc.Stats
	for ti, r := range p.results {
		b, k := ti/3, ti%3
		v := r.constant
		if r.slot != nil {
			cc.slots = append(cc.slots, *r.slot)
			st.AnimatedTracks++
			st.Samples += len(c.Tracks[ti].Values)
			sd := &r.slot.segs[0]
			v = format.Dequant(uint32(r.slot.kind), sd.mode, r.slot.step, &sd.pts[0].idx)
		} else {
			st.ConstantTracks++
		}
		if r.limited {
			st.QuantLimited++
		}
		copy(cc.Default[b*anim.PoseFloats+k*4:], v[:])
		if TrackKind(k) != TrackRotation {
			cc.Default[b*anim.PoseFloats+k*4+3] = 0
		}
	}
	cc.encodeStream()
	st.RawBytes = p.nb * c.Frames * 40
	st.StreamBytes = int((cc.segBits[len(cc.segBits)-1] + 7) / 8)
	for _, sl := range cc.slots {
		for s, sd := range sl.segs {
			st.Points += len(sd.pts)
			if s > 0 {
				st.Points-- // the boundary sample, stored by both segments
			}
		}
	}
	st.Bytes = cc.recordBytes()
}

// levers holds, per bone, what turns a track's error into model-space
// displacement at the virtual vertices of the bone and its descendants.
type levers struct {
	reach []float64 // largest distance joint -> vertex over the clip
	// sreach: largest distance joint -> vertex over the bone's own scale
	// (its smallest component) in a frame: a scale error Δs moves a vertex
	// by Δs/s times its distance, so under a bone scaled 0.01 an error of
	// 0.001 in its scale moves vertices 10% of their distance
	sreach []float64
	pscale []float64      // largest scale of the parent's model matrix
	axis   [][][4]float32 // per frame: largest distance of a vertex from each local axis, and from the joint
	// lever2[a][d]: mean over frames of the squared largest distance from
	// a's joint to the points of bone d that a's rotation error moves
	// (zero when d is not in a's subtree)
	lever2 [][]float64
}

// leverArms measures the levers on the source clip. For a rotation error
// Δq = q⁻¹q' of bone b, a vertex at y (relative to the joint, in the frame
// after b's rotation, times the parent's scale) moves by exactly
// |2 vec(Δq) × y| <= Σ_a |2 vec(Δq)_a| · dist(y, axis a); axis[b][f] holds
// the largest such distances over the vertices at frame f, so twists about
// a limb's own axis cost little.
func leverArms(sk *Skeleton, c *Clip, vdist float64) *levers {
	return leverArmsShielded(sk, c, vdist, nil)
}

// leverArmsShielded measures the levers of the closed-loop fit, where
// the bones marked in shield (animated rotations) restore their own
// orientation: an ancestor's rotation error then reaches such a bone
// only as a displacement of its joint, and its subtree moves rigidly
// with it. So bone a's lever covers the vertices of the descendants
// reached without passing a shielding bone, and the joints of the first
// shielding bones below it. A nil shield gives every descendant's
// vertices (open loop).
func leverArmsShielded(sk *Skeleton, c *Clip, vdist float64, shield []bool) *levers {
	nb := sk.NumBones()
	lv := &levers{reach: make([]float64, nb), sreach: make([]float64, nb), pscale: make([]float64, nb), axis: make([][][4]float32, nb), lever2: make([][]float64, nb)}
	for b := range lv.axis {
		lv.axis[b] = make([][4]float32, c.Frames)
		lv.lever2[b] = make([]float64, nb)
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
			rm := Transform{R: local[b].R, S: Vec3{1, 1, 1}}.Matrix()
			var pm mat4
			if p := sk.Parents[b]; p >= 0 {
				pm = model[p]
				pm[12], pm[13], pm[14] = 0, 0, 0
				lv.pscale[b] = math.Max(lv.pscale[b], model[p].MaxAxisScale())
			} else {
				pm = IdentityTransform.Matrix()
				lv.pscale[b] = 1
			}
			m := pm.Mul(&rm)
			inv[b] = m.Inverse3()
		}
		for d := range nb {
			pd := Vec3{model[d][12], model[d][13], model[d][14]}
			var verts [4]Vec3
			verts[0] = pd
			off := vertexOffsets(&model[d], vdist)
			for a := range 3 {
				var v Vec3
				v[a] = off[a]
				verts[a+1] = model[d].Point(v)
			}
			top := -1 // the shielding bone closest to a on the way to d
			for a := d; a >= 0; a = int(sk.Parents[a]) {
				pts := verts[:]
				if top >= 0 {
					// d moves rigidly with top's joint
					pts = verts[:1]
					pts[0] = Vec3{model[top][12], model[top][13], model[top][14]}
				}
				if shield != nil && shield[a] {
					top = a
				}
				pa := Vec3{model[a][12], model[a][13], model[a][14]}
				ax := &lv.axis[a][f]
				far := 0.0
				for _, v := range pts {
					off := v.Sub(pa)
					far = math.Max(far, off.Len())
					lv.reach[a] = math.Max(lv.reach[a], off.Len())
					y := inv[a].Vec(off)
					// scale back by the parent's scale: the displacement
					// is measured in model space
					ps := lv.pscale[a]
					ax[0] = max(ax[0], float32(ps*math.Hypot(y[1], y[2])))
					ax[1] = max(ax[1], float32(ps*math.Hypot(y[0], y[2])))
					ax[2] = max(ax[2], float32(ps*math.Hypot(y[0], y[1])))
					ax[3] = max(ax[3], float32(off.Len()))
				}
				lv.lever2[a][d] += far * far / float64(c.Frames)
				sa := local[a].S
				if smin := math.Min(math.Abs(sa[0]), math.Min(math.Abs(sa[1]), math.Abs(sa[2]))); smin > 1e-9 {
					lv.sreach[a] = math.Max(lv.sreach[a], far/smin)
				}
			}
		}
	}
	return lv
}

// allocate returns a multiplier of the threshold per track (1 for
// constant tracks) that spends the error budget where it buys the most
// bits. Model: a track's error at a bone it moves grows with its
// threshold times the bone's lever relative to the track's longest
// (lever2); the errors of the tracks that move a bone add as independent
// 3D Gaussians, and the target is on the share of (bone, sample) pairs
// above Tolerance (1%). Every track saves about as many bits per doubling
// of its threshold, so at the optimum each track's marginal effect on
// that share is the same; the multipliers keep the modelled share of the
// uniform allocation (ChainShare still sets the level).
func allocate(sk *Skeleton, lv, full *levers, animated []bool) []float64 {
	nb := sk.NumBones()
	m := make([]float64, 3*nb)
	for i := range m {
		m[i] = 1
	}
	// A track moves its bone's subtree only: its contributions are
	// listed there alone (bones in ascending order), so that the model's
	// sums cost the subtrees' sizes, not bones × tracks (quadratic in the
	// bones: with a thousand it was most of a compression's time). The
	// sums add the same terms in the same order as over every bone (the
	// others add zeros), so the result is the same bit for bit.
	type contrib struct {
		ti int
		d  []int32   // the track's bone and its descendants, ascending
		r  []float64 // variance at each of them per unit multiplier²
	}
	var cs []contrib
	in := make([]bool, nb) // in[d]: d is in the subtree of the track's bone (set for d >= bone)
	for ti, a := range animated {
		if !a {
			continue
		}
		b, k := ti/3, TrackKind(ti%3)
		l := lv
		if k == TrackScale {
			l = full
		}
		c := contrib{ti: ti}
		for d := b; d < nb; d++ {
			// parents come first: d is in b's subtree when its parent is
			in[d] = d == b || (int(sk.Parents[d]) >= b && in[sk.Parents[d]])
			if !in[d] {
				continue
			}
			r := 0.0
			if k == TrackTranslation {
				r = 1
			} else if l.reach[b] > 0 {
				r = l.lever2[b][d] / (l.reach[b] * l.reach[b])
			}
			c.d = append(c.d, int32(d))
			c.r = append(c.r, r)
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return m
	}
	u := make([]float64, len(cs)) // ln multiplier
	sigma := func(u []float64, shift float64) []float64 {
		s := make([]float64, nb)
		for i, c := range cs {
			w := math.Exp(2 * (u[i] + shift))
			for j, r := range c.r {
				s[c.d[j]] += w * r
			}
		}
		for d := range s {
			s[d] = math.Sqrt(s[d])
		}
		return s
	}
	// share of a bone's samples above the target for error rms sigma/k
	// (target 1): a 3D Gaussian's norm.
	exceed := func(sig, k float64) float64 {
		if sig == 0 {
			return 0
		}
		z := math.Sqrt(3) / (k * sig)
		return math.Erfc(z/math.Sqrt2) + math.Sqrt(2/math.Pi)*z*math.Exp(-z*z/2)
	}
	share := func(u []float64, shift, k float64) float64 {
		t := 0.0
		for _, sg := range sigma(u, shift) {
			t += exceed(sg, k)
		}
		return t / float64(nb)
	}
	// bisect solves f(x) = target for increasing f on [lo, hi].
	bisect := func(f func(float64) float64, target, lo, hi float64) float64 {
		for range 60 {
			mid := (lo + hi) / 2
			if f(mid) > target {
				hi = mid
			} else {
				lo = mid
			}
		}
		return (lo + hi) / 2
	}
	const target = 0.01
	lk := bisect(func(lk float64) float64 { return share(u, 0, math.Exp(lk)) }, target, -20, 20)
	k := math.Exp(lk)
	// Each round moves every ln multiplier (by at most 0.2) toward equal
	// marginal effects d(share)/d(ln m), then shifts them all together
	// back onto the modelled share.
	grad := make([]float64, len(cs))
	want := make([]float64, len(cs))
	for range 200 {
		sg := sigma(u, 0)
		mean, n := 0.0, 0
		for i, c := range cs {
			g := 0.0
			for j, r := range c.r {
				d := c.d[j]
				if r == 0 || sg[d] == 0 {
					continue
				}
				z := math.Sqrt(3) / (k * sg[d])
				dPds := math.Sqrt(2/math.Pi) * z * z * z * math.Exp(-z*z/2) / sg[d]
				g += dPds * math.Exp(2*u[i]) * r / sg[d]
			}
			grad[i] = g
			if g > 0 {
				want[i] = -math.Log(g)
				mean += want[i]
				n++
			}
		}
		if n > 0 {
			mean /= float64(n)
		}
		for i := range u {
			d := 1.0 // no modelled effect: loosen
			if grad[i] > 0 {
				d = math.Max(-1, math.Min(1, want[i]-mean))
			}
			u[i] = math.Max(math.Log(0.25), math.Min(math.Log(4), u[i]+0.2*d))
		}
		shift := bisect(func(x float64) float64 { return share(u, x, k) }, target, -3, 3)
		for i := range u {
			u[i] += shift
		}
	}
	for i, c := range cs {
		m[c.ti] = math.Max(0.25, math.Min(4, math.Exp(u[i])))
	}
	return m
}

// uniformScales reports whether every scale sample of c is uniform
// (model-space orientations then compose as the local rotations do).
func uniformScales(c *Clip) bool {
	for i := int(TrackScale); i < len(c.Tracks); i += 3 {
		for _, v := range c.Tracks[i].Values {
			if math.Abs(v[0]-v[1]) > 1e-9*math.Abs(v[0]) || math.Abs(v[0]-v[2]) > 1e-9*math.Abs(v[0]) || !(v[0] > 0) {
				return false
			}
		}
	}
	return true
}

// modelRotations returns, per bone and frame, the product of the local
// rotations local(b, f) from the root down to the bone.
func modelRotations(sk *Skeleton, c *Clip, local func(b, f int) Quat) [][]Quat {
	nb := sk.NumBones()
	out := make([][]Quat, nb)
	for b := range nb {
		out[b] = make([]Quat, c.Frames)
		p := sk.Parents[b]
		for f := range c.Frames {
			q := local(b, f)
			if p >= 0 {
				q = out[p][f].Mul(q)
			}
			out[b][f] = q
		}
	}
	return out
}

// decodeFrames returns the track's values at every frame of the clip as
// the sampler computes them (right-hand values at discontinuities).
func (sl *slotTrack) decodeFrames(frames, segFrames int) [][4]float32 {
	out := make([][4]float32, frames)
	nseg := len(sl.segs)
	for s := range sl.segs {
		sd := &sl.segs[s]
		ft := &fitTrack{kind: sl.kind, frames: make([]float32, len(sd.pts)), lin: sd.lin == 1}
		pts := make([]fpoint, len(sd.pts))
		for i, p := range sd.pts {
			ft.frames[i] = float32(p.t)
			pts[i] = fpoint{s: i, idx: p.idx, v: format.Dequant(uint32(sl.kind), sd.mode, sl.step, &p.idx)}
		}
		n := format.SegLenOf(frames, segFrames, s)
		last := n
		if s < nseg-1 {
			last = n - 1 // the next segment holds its end frame
		}
		i := 0
		for f := 0; f <= last; f++ {
			x := float32(f)
			for i+2 < len(pts) && ft.frames[i+1] <= x {
				i++
			}
			if len(pts) == 1 {
				out[s*segFrames+f] = pts[0].v
				continue
			}
			p0, p1, p2, p3 := ft.window(pts, i)
			if p1.T == p2.T {
				out[s*segFrames+f] = p2.V
				continue
			}
			var co [16]float32
			invH := format.CurveCoeffs(&p0, &p1, &p2, &p3, ft.lin, &co)
			out[s*segFrames+f] = format.EvalCoeffs(&co, p1.T, invH, x, sl.kind == TrackRotation)
		}
	}
	return out
}

// stepFractions are the shares of the tolerance tried for quantisation
// (the rest is left to the curve fit).
var stepFractions = []float64{0.9, 0.75, 0.6, 0.45, 0.3, 0.18, 0.08}

// compressTrack decides whether a track is constant (returning its value)
// or fits it, returning the animated slot with the cheapest grid step.
//
// between(s, u) is the reference value at fraction u of the way from
// sample s to sample s+1 (Clip.ValueAt): each segment is fitted both as a
// Hermite curve and as a linear one, each following the source between
// samples too, and keeps the one within tol everywhere (else the one that
// misses by less), then the one that codes smaller (the Hermite fit is
// skipped where the linear one is within tol and keeps two thirds of the
// samples or more).
func compressTrack(tr *Track, between func(s int, u float64) [4]float64, bone int, kind TrackKind, weight float64, axis [][4]float32, frames, segFrames, nseg int, tol float64) (*slotTrack, bool) {
	maxAbs := 0.0
	for _, v := range tr.Values {
		for c := range 4 {
			maxAbs = math.Max(maxAbs, math.Abs(v[c]))
		}
	}
	minStep := maxAbs / float64(int32(1)<<(format.MaxIndexBits-1))
	var best *slotTrack
	bestBits, worse := math.MaxInt, 0
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
			ft := segmentTrack(tr, between, kind, weight, axis, sl.step, s*segFrames, s*segFrames+format.SegLenOf(frames, segFrames, s))
			var best segData
			fitted, bestExcess := false, 0.0
			for _, lin := range []bool{true, false} {
				if !lin && fitted && bestExcess == 0 && 3*len(best.pts) >= 2*len(ft.src) {
					// The line keeps most samples and follows the source
					// everywhere: a Hermite curve, which must also follow
					// it between samples, saves almost never enough to
					// pay for its second fit.
					break
				}
				ft.lin = lin
				pts, excess, ok := ft.fit(tol)
				if !ok {
					continue
				}
				sd := segData{mode: ft.mode, pts: make([]spoint, len(pts))}
				if lin {
					sd.lin = 1
				}
				for i, p := range pts {
					sd.pts[i] = spoint{t: uint32(ft.frames[p.s]), idx: p.idx}
				}
				sl.segs[s] = sd
				sl.choose(s)
				// within tol everywhere first, then the fewest bits
				if !fitted || excess < bestExcess || (excess == bestExcess && sl.segs[s].bits < best.bits) {
					best, fitted, bestExcess = sl.segs[s], true, excess
				}
			}
			if !fitted {
				ok = false
				break
			}
			sl.segs[s] = best
			bits += best.bits
		}
		if ok && bits < bestBits {
			best, bestBits, worse = sl, bits, 0
		} else if best != nil {
			// bits(step) has one minimum: stop two steps past it
			if worse++; worse == 2 {
				break
			}
		}
	}
	if best != nil {
		return best, false
	}
	// Even the finest grid misses the tolerance (a huge range): keep every
	// sample on the finest grid; the error is the quantisation error.
	sl := newSlot(bone, kind, math.Max(stepFractions[len(stepFractions)-1]*tol/(1.75*weight), minStep), maxAbs, nseg)
	for s := range nseg {
		ft := segmentTrack(tr, between, kind, weight, axis, sl.step, s*segFrames, s*segFrames+format.SegLenOf(frames, segFrames, s))
		sd := segData{mode: ft.mode, lin: 1, pts: make([]spoint, len(ft.src))}
		for i := range sd.pts {
			sd.pts[i] = spoint{t: uint32(ft.frames[i]), idx: ft.idx[i]}
		}
		sl.segs[s] = sd
		sl.choose(s)
	}
	return sl, true
}

func newSlot(bone int, kind TrackKind, step, maxAbs float64, nseg int) *slotTrack {
	s32 := float32(step)
	return &slotTrack{bone: bone, kind: kind, step: s32,
		absBits: format.BitsFor(int(math.Ceil(maxAbs/float64(s32)))+1) + 1, segs: make([]segData, nseg)}
}

// constantValue returns the value that best represents the whole track and
// the largest error (metres) using it everywhere would cause.
func constantValue(tr *Track, kind TrackKind, weight float64, axis [][4]float32) ([4]float32, float64) {
	var v [4]float32
	if kind == TrackRotation {
		var sum Quat
		for _, s := range tr.Values {
			q := Quat(s)
			if q.Dot(Quat(tr.Values[0])) < 0 {
				q = q.Neg()
			}
			for i := range sum {
				sum[i] += q[i]
			}
		}
		m := sum.Normalized()
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
// a, the left-hand value at b (both values when b is the track's last
// frame: a discontinuity at the clip's end is the last segment's end
// pair), and both samples of interior discontinuities, each with its value after quantisation on the grid,
// and the reference between neighbouring samples (between, as in
// compressTrack).
func segmentTrack(tr *Track, between func(s int, u float64) [4]float64, kind TrackKind, weight float64, axis [][4]float32, step float32, a, b int) *fitTrack {
	lo := tr.sampleIndex(a)
	hi := sort.Search(len(tr.Frames), func(i int) bool { return int(tr.Frames[i]) >= b })
	if last := len(tr.Frames) - 1; int(tr.Frames[last]) == b {
		hi = last
	}
	ft := &fitTrack{kind: kind, weight: weight, step: step, src: tr.Values[lo : hi+1]}
	if kind == TrackRotation {
		ft.mode = format.RotationMode(ft.src)
	}
	ft.frames = make([]float32, len(ft.src))
	if kind == TrackRotation {
		ft.axis = make([][4]float32, len(ft.src))
		for i := range ft.src {
			ft.axis[i] = axis[tr.Frames[lo+i]]
		}
	}
	ft.mid = make([][BetweenPoints][4]float64, len(ft.src))
	for i := 0; i+1 < len(ft.src); i++ {
		if tr.Frames[lo+i+1] == tr.Frames[lo+i] {
			continue
		}
		for k := range BetweenPoints {
			ft.mid[i][k] = between(lo+i, float64(k+1)/(BetweenPoints+1))
		}
	}
	for _, k := range tr.Keys {
		if int(k) > a && int(k) < b {
			ft.seeds = append(ft.seeds, tr.leftIndex(int(k))-lo)
		}
	}
	ft.idx = make([][4]int32, len(ft.src))
	ft.deq = make([][4]float32, len(ft.src))
	for i := range ft.src {
		ft.frames[i] = float32(int(tr.Frames[lo+i]) - a)
		ft.idx[i] = format.Quantize(kind, ft.mode, step, ft.src[i])
		ft.deq[i] = format.Dequant(uint32(kind), ft.mode, step, &ft.idx[i])
	}
	return ft
}

// Segment coding of one track (see doc.go): parameters, then the first
// point's indices raw, then each later point as a Rice-coded time delta
// and Rice-coded index residuals against predict().

// choose picks segment s's coding parameters for the fewest bits and
// records the coded size.
func (sl *slotTrack) choose(s int) {
	sd := &sl.segs[s]
	p := sd.pts
	sd.disc, sd.end = 0, 0
	for k := 1; k < len(p); k++ {
		if p[k].t == p[k-1].t {
			sd.disc = 1
		}
	}
	if n := len(p); n >= 3 && p[n-1].t == p[n-2].t {
		sd.end = 1
	}
	us := make([]uint32, 0, len(p))
	for k := 1; k < len(p); k++ {
		us = append(us, p[k].t-p[k-1].t-(1-sd.disc))
	}
	var tbits int
	sd.kt, tbits = format.BestRiceK(us, 15)
	nc := format.NcompOf(uint32(sl.kind), sd.mode)
	best := math.MaxInt
	for pm := uint32(0); pm < format.NumPreds; pm++ {
		var kc [4]uint32
		total := 0
		for c := range nc {
			us = us[:0]
			for k := 1; k < len(p); k++ {
				us = append(us, format.Zigzag(p[k].idx[c]-sl.pred(s, k, c, pm)))
			}
			var n int
			kc[c], n = format.BestRiceK(us, format.MaxRiceK)
			total += n
		}
		if total < best {
			best, sd.pm, sd.kc = total, pm, kc
		}
	}
	// parameters + first point raw + the coded later points
	sd.bits = 3 + 1 + 2 + 4 + 1 + int(sd.disc) + 5*nc + sl.absBits*nc + tbits + best
}

// pred is the prediction of component c of point k (k >= 1) of segment s.
func (sl *slotTrack) pred(s, k, c int, pm uint32) int32 {
	p := sl.segs[s].pts
	if k == 1 {
		return p[0].idx[c]
	}
	return format.Predict(p[k-2].t, p[k-1].t, p[k].t, p[k-2].idx[c], p[k-1].idx[c], pm)
}

// writeHeader writes the track's segment header: parameters (mode 3 bits,
// disc 1, predictor 2, time Rice 4, linear 1, end pair 1 when disc, 5 per
// component), the first point raw (absBits per component), the second
// point, and the third unless the second ends the segment without an end
// pair.
func (sl *slotTrack) writeHeader(w *format.BitWriter, s int, end uint32) {
	sd := &sl.segs[s]
	nc := format.NcompOf(uint32(sl.kind), sd.mode)
	w.Write(sd.mode, 3)
	w.Write(sd.disc, 1)
	w.Write(sd.pm, 2)
	w.Write(sd.kt, 4)
	w.Write(sd.lin, 1)
	if sd.disc == 1 {
		w.Write(sd.end, 1)
	}
	for c := range nc {
		w.Write(sd.kc[c], 5)
	}
	for c := range nc {
		w.Write(uint32(sd.pts[0].idx[c]), sl.absBits)
	}
	sl.writePoint(w, s, 1)
	if sd.pts[1].t != end || sd.end == 1 {
		sl.writePoint(w, s, 2)
	}
}

func (sl *slotTrack) writePoint(w *format.BitWriter, s, k int) {
	sd := &sl.segs[s]
	p := sd.pts
	w.Rice(p[k].t-p[k-1].t-(1-sd.disc), sd.kt)
	for c := range format.NcompOf(uint32(sl.kind), sd.mode) {
		w.Rice(format.Zigzag(p[k].idx[c]-sl.pred(s, k, c, sd.pm)), sd.kc[c])
	}
}

// encodeStream writes every segment: each animated track's header (no
// track ids: tracks appear in slot order), then the remaining points as
// records sorted by the frame at which playback needs them (point k of a
// track is needed once playback reaches the track's point k-2), ties in
// slot order. The sampler reproduces this order from its cursor alone.
func (cc *CompressedClip) encodeStream() {
	nseg := max(1, (cc.Frames-1+cc.SegFrames-1)/cc.SegFrames)
	var w format.BitWriter
	cc.segBits = cc.segBits[:0]
	type rec struct {
		need uint32
		slot int
		k    int
	}
	var recs []rec
	for s := range nseg {
		cc.segBits = append(cc.segBits, uint32(w.N))
		end := uint32(format.SegLenOf(cc.Frames, cc.SegFrames, s))
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
	cc.segBits = append(cc.segBits, uint32(w.N))
	need := int((w.N+31)/32) + format.StreamPadWords
	for len(w.Words) < need {
		w.Words = append(w.Words, 0)
	}
	cc.stream = w.Words
}
