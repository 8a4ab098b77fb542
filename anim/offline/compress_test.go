package offline

import (
	"math"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// trackCheck measures, through the real sampler, every track of every
// original sample against the threshold Compress fitted it to (cc.tols),
// with the compressor's own metric and levers. Open loop, a track's
// target is its source; closed loop (cc.closed), a rotation's target is
// the local rotation that restores its bone's source model orientation
// given the ancestors' rotations as decoded (rotationTarget; the decoded
// ancestors come from decodeFrames, which TestDecodeFramesMatchesSampler
// checks against the sampler). It returns the worst error / threshold.
// Left-hand values of discontinuities are checked just before their frame.
func trackCheck(t *testing.T, sk *Skeleton, src *Clip, c anim.ClipView, cc *CompressedClip, opt CompressOptions) float64 {
	t.Helper()
	opt.defaults()
	nb := sk.NumBones()
	full := leverArms(sk, src, opt.VertexDistance)
	lv := full
	slotOf := make([]int, 3*nb)
	for i := range slotOf {
		slotOf[i] = -1
	}
	for s, sl := range cc.slots {
		slotOf[sl.bone*3+int(sl.kind)] = s
	}
	if cc.closed {
		shield := make([]bool, nb)
		for b := range nb {
			shield[b] = slotOf[b*3+int(TrackRotation)] >= 0
		}
		lv = leverArmsShielded(sk, src, opt.VertexDistance, shield)
	}
	fts := make([]fitTrack, 3*nb)
	for i := range fts {
		b, k := i/3, TrackKind(i%3)
		tr := &src.Tracks[i]
		l := lv
		if k == TrackScale {
			l = full
		}
		w := l.reach[b]
		if k == TrackTranslation {
			w = l.pscale[b]
		}
		fts[i] = fitTrack{kind: k, src: tr.Values, weight: w}
		if k == TrackRotation {
			fts[i].axis = make([][4]float32, len(tr.Values))
			for s, f := range tr.Frames {
				fts[i].axis[s] = l.axis[b][f]
			}
		}
		if slotOf[i] < 0 {
			// constant: within the uniform threshold, full levers
			fts[i].weight = full.reach[b]
			if k == TrackTranslation {
				fts[i].weight = full.pscale[b]
			}
			if k == TrackRotation {
				for s, f := range tr.Frames {
					fts[i].axis[s] = full.axis[b][f]
				}
			}
		}
	}
	tols := make([]float64, 3*nb)
	for i := range tols {
		tols[i] = cc.tols[i]
		if slotOf[i] < 0 {
			if cc.tols[i] != 0 {
				t.Errorf("track %d is constant with threshold %g", i, cc.tols[i])
			}
			tols[i] = opt.Tolerance * cc.Stats.ChainShare
		} else if !(tols[i] > 0) || tols[i] > 4*opt.Tolerance*maxChainShare {
			t.Errorf("track %d: threshold %g m", i, tols[i])
		}
	}
	if cc.closed {
		// Rotation targets from the decoded ancestors.
		dec := make([][][4]float32, nb)
		for b := range nb {
			if s := slotOf[b*3+int(TrackRotation)]; s >= 0 {
				dec[b] = cc.slots[s].decodeFrames(cc.Frames, cc.SegFrames)
			}
		}
		srcModel := modelRotations(sk, src, func(b, f int) Quat {
			tr := &src.Tracks[3*b+int(TrackRotation)]
			return Quat(tr.Values[tr.sampleIndex(f)])
		})
		decModel := modelRotations(sk, src, func(b, f int) Quat {
			v := cc.Default[b*anim.PoseFloats+4 : b*anim.PoseFloats+8]
			if dec[b] != nil {
				v = dec[b][f][:]
			}
			return Quat{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])}.Normalized()
		})
		for b := range nb {
			i := b*3 + int(TrackRotation)
			p := sk.Parents[b]
			if slotOf[i] < 0 || p < 0 {
				continue
			}
			tr := &src.Tracks[i]
			tgt := make([][4]float64, len(tr.Values))
			for s, f := range tr.Frames {
				tgt[s] = [4]float64(rotationTarget(decModel[p][f], srcModel[p][f], Quat(tr.Values[s])))
			}
			fts[i].src = tgt
		}
	}
	in := []anim.SampleInput{{Clip: c.Offset()}}
	job := anim.SampleJob{Blob: c.Blob(), Inputs: in, Cursors: make([]uint32, c.CursorWords()), CursorStride: c.CursorWords(),
		Poses: make([]float32, nb*anim.PoseFloats), Bones: nb}
	worst := 0.0
	check := func(i, s int) {
		b, k := i/3, i%3
		var v [4]float32
		o := b*anim.PoseFloats + [3]int{4, 0, 8}[k] // translation, rotation, scale
		copy(v[:], job.Poses[o:o+4])
		e := fts[i].errAt(s, v)
		tol := tols[i]
		worst = math.Max(worst, e/tol)
		if e > tol*1.0001+1e-9 {
			t.Errorf("bone %d (%s) %v sample %d (frame %d): error %.3g m > threshold %.3g m", b, sk.Names[b], TrackKind(k), s, src.Tracks[i].Frames[s], e, tol)
		}
	}
	for f := range src.Frames {
		in[0].Time = float32(float64(f) / src.Rate)
		if err := job.Run(); err != nil {
			t.Fatal(err)
		}
		for i := range fts {
			check(i, src.Tracks[i].sampleIndex(f))
		}
	}
	// Left-hand limits: just before the frame (beyond the snap window).
	for i := range fts {
		tr := &src.Tracks[i]
		for s := 1; s < len(tr.Frames); s++ {
			if tr.Frames[s] == tr.Frames[s-1] {
				in[0].Time = float32((float64(tr.Frames[s]) - 0.002) / src.Rate)
				if err := job.Run(); err != nil {
					t.Fatal(err)
				}
				check(i, s-1)
			}
		}
	}
	return worst
}

func TestFitEverySampleWithinThreshold(t *testing.T) {
	for _, open := range []bool{false, true} {
		for _, tol := range []float64{0.0001, 0.001, 0.01} {
			c := synthClip(181, 60, 0)
			opt := CompressOptions{Tolerance: tol, SegmentSeconds: 1, OpenLoop: open}
			cc, data := synthBlob(t, c, opt)
			if cc.closed == open {
				t.Errorf("open loop %v: closed %v", open, cc.closed)
			}
			bl, err := anim.Load(data)
			if err != nil {
				t.Fatal(err)
			}
			w := trackCheck(t, synthSkeleton(), c, bl.Clip(0), cc, opt)
			if w < 0.05 {
				t.Errorf("open loop %v, tolerance %g: worst error only %.3f of the threshold: the fit is not being exercised", open, tol, w)
			}
		}
	}
}

// Fewer points at looser thresholds, and the smooth synthetic motion is
// far sparser than its samples.
func TestFitSparsity(t *testing.T) {
	c := synthClip(601, 120, 0)
	prev := math.MaxInt
	for _, tol := range []float64{0.0001, 0.001, 0.01} {
		cc, _ := synthBlob(t, c, CompressOptions{Tolerance: tol})
		if cc.Stats.Points >= prev {
			t.Errorf("tolerance %g: %d points, not fewer than %d at the tighter tolerance", tol, cc.Stats.Points, prev)
		}
		prev = cc.Stats.Points
		if tol >= 0.001 && cc.Stats.Points*4 > cc.Stats.Samples {
			t.Errorf("tolerance %g: %d points for %d samples of smooth motion", tol, cc.Stats.Points, cc.Stats.Samples)
		}
	}
}

// A discontinuity (two samples at one frame) costs two points at one
// time, not a burst of points: the clip with a jump needs only a few more
// points than the one without, and both sides of the jump are reproduced.
func TestDiscontinuity(t *testing.T) {
	const jump = 95
	smooth := synthClip(181, 60, 0)
	jumpy := synthClip(181, 60, jump)
	// One pass: both clips at the same thresholds (calibrating would give
	// each clip its own share).
	opt := CompressOptions{Tolerance: 0.001, SegmentSeconds: 3, Passes: 1}
	ccS, _ := synthBlob(t, smooth, opt)
	ccJ, data := synthBlob(t, jumpy, opt)
	if extra := ccJ.Stats.Points - ccS.Stats.Points; extra > 8 {
		t.Errorf("the jump costs %d extra points (smooth %d, jumpy %d)", extra, ccS.Stats.Points, ccJ.Stats.Points)
	}
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	trackCheck(t, synthSkeleton(), jumpy, bl.Clip(0), ccJ, opt)
	// The root's x jumps by 0.5 m within a hundredth of a frame.
	before := sampleAt(t, bl.Clip(0), float32((jump-0.01)/60.0))
	at := sampleAt(t, bl.Clip(0), float32(jump/60.0))
	if d := at[4] - before[4]; math.Abs(float64(d)-0.5) > 0.01 {
		t.Errorf("root x jumps by %v m at frame %d, want 0.5", d, jump)
	}
	// Two points share the jump frame in the root translation track.
	found := false
	for _, sl := range ccJ.slots {
		if sl.bone == 0 && sl.kind == TrackTranslation {
			for _, sd := range sl.segs {
				for k := 1; k < len(sd.pts); k++ {
					if sd.pts[k].t == sd.pts[k-1].t {
						found = true
					}
				}
			}
		}
	}
	if !found {
		t.Error("no pair of points at one time in the root translation track")
	}
}

// Constant tracks cost nothing in the stream; a fully static clip has no
// animated tracks at all and samples to its default pose.
func TestConstantTracks(t *testing.T) {
	c := synthClip(31, 30, 0)
	for i := range c.Tracks {
		v := c.Tracks[i].Values[0]
		for s := range c.Tracks[i].Values {
			c.Tracks[i].Values[s] = v
		}
	}
	cc, data := synthBlob(t, c, CompressOptions{})
	if cc.Stats.AnimatedTracks != 0 || cc.Stats.ConstantTracks != 12 {
		t.Fatalf("%d animated, %d constant tracks", cc.Stats.AnimatedTracks, cc.Stats.ConstantTracks)
	}
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	p := sampleAt(t, bl.Clip(0), 0.5)
	if p[5] != float32(c.Tracks[0].Values[0][1]) {
		t.Errorf("root y %v, want %v", p[5], c.Tracks[0].Values[0][1])
	}
}

// The CMU clips: every sample of every track within its threshold, the
// measured 99th percentile at 3 cm within the target, and the ratio
// (regression guards on the figures reported in doc.go).
func TestCMUCompression(t *testing.T) {
	ims, ccs, data := cmuData(t)
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	minRatio := []float64{24.5, 20}
	for i, im := range ims {
		c := bl.Clip(i)
		trackCheck(t, im.Skeleton, im.Clips[0], c, ccs[i], CompressOptions{})
		st, err := Measure(im.Skeleton, im.Clips[0], c, 0.03, 1)
		if err != nil {
			t.Fatal(err)
		}
		r := ccs[i].Stats.Ratio()
		t.Logf("%s: ratio %.2f, %v; %v", c.Name(), r, st[0], st[1])
		if ccs[i].Stats.P99 != st[0].WorstP99() || ccs[i].Stats.Passes < 1 {
			t.Errorf("%s: Compress measured p99 %.6f cm in %d passes, Measure %.6f cm", c.Name(), ccs[i].Stats.P99*100, ccs[i].Stats.Passes, st[0].WorstP99()*100)
		}
		if st[0].P99 > 0.000105 || st[0].Between.P99 > 0.000105 {
			t.Errorf("%s: p99 %.5f cm at 3 cm (between samples %.5f), want <= 0.0105", c.Name(), st[0].P99*100, st[0].Between.P99*100)
		}
		if st[0].Max > 0.00025 {
			t.Errorf("%s: max %.5f cm at 3 cm", c.Name(), st[0].Max*100)
		}
		if r < minRatio[i] {
			t.Errorf("%s: ratio %.2f < %.0f", c.Name(), r, minRatio[i])
		}
		if ccs[i].Stats.RawBytes != 40*31*im.Clips[0].Frames {
			t.Errorf("raw size %d", ccs[i].Stats.RawBytes)
		}
	}
}

// decodeFrames (which the closed-loop fit builds its targets on) returns
// what the sampler returns, bit for bit (rotations up to sign).
func TestDecodeFramesMatchesSampler(t *testing.T) {
	ims, ccs, data := cmuData(t)
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	jumpy := synthClip(181, 60, 95)
	ccJ, dataJ := synthBlob(t, jumpy, CompressOptions{Tolerance: 0.001})
	blJ, err := anim.Load(dataJ)
	if err != nil {
		t.Fatal(err)
	}
	type clip struct {
		cc   *CompressedClip
		view anim.ClipView
		rate float64
	}
	cs := []clip{{ccs[0], bl.Clip(0), ims[0].Clips[0].Rate}, {ccs[1], bl.Clip(1), ims[1].Clips[0].Rate}, {ccJ, blJ.Clip(0), jumpy.Rate}}
	for i, x := range cs {
		cc, c := x.cc, x.view
		slow0 := format.SlowRecords.Load()
		dec := make([][][4]float32, len(cc.slots))
		for s := range cc.slots {
			dec[s] = cc.slots[s].decodeFrames(cc.Frames, cc.SegFrames)
		}
		in := []anim.SampleInput{{Clip: c.Offset()}}
		job := anim.SampleJob{Blob: c.Blob(), Inputs: in, Cursors: make([]uint32, c.CursorWords()), CursorStride: c.CursorWords(),
			Poses: make([]float32, cc.Bones*anim.PoseFloats), Bones: cc.Bones}
		bad := 0
		for f := range cc.Frames {
			in[0].Time = float32(float64(f) / x.rate)
			if err := job.Run(); err != nil {
				t.Fatal(err)
			}
			for s, sl := range cc.slots {
				o := sl.bone*anim.PoseFloats + [3]int{4, 0, 8}[sl.kind] // translation, rotation, scale
				got := job.Poses[o : o+4]
				want := dec[s][f]
				n := 3
				if sl.kind == TrackRotation {
					n = 4
					if format.Dot4((*[4]float32)(got), &want) < 0 {
						want = [4]float32{-want[0], -want[1], -want[2], -want[3]}
					}
				}
				for k := range n {
					if got[k] != want[k] && bad < 5 {
						bad++
						t.Errorf("%s frame %d bone %d %v: sampler %v, decodeFrames %v", c.Name(), f, sl.bone, sl.kind, got[:n], want[:n])
						break
					}
				}
			}
		}
		// The jumpy clip's escape codes take the sampler's code-by-code
		// path: both record readers are compared here.
		if slow := format.SlowRecords.Load() - slow0; i == len(cs)-1 && slow == 0 {
			t.Errorf("%s: no record took readRecordSlow", c.Name())
		} else {
			t.Logf("%s: %d records read code by code", c.Name(), slow)
		}
	}
}

func TestCompressRejects(t *testing.T) {
	sk := synthSkeleton()
	c := synthClip(31, 30, 0)
	for _, o := range []CompressOptions{{Tolerance: -1}, {ChainShare: -1}, {SegmentSeconds: -1}, {Tolerance: math.NaN()}, {Tolerance: math.Inf(1)}, {Passes: -1}} {
		if _, err := Compress(sk, c, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	bad := synthClip(31, 30, 0)
	bad.Tracks[4].Values[3][0] = math.NaN()
	if _, err := Compress(sk, bad, CompressOptions{}); err == nil {
		t.Error("NaN sample accepted")
	}
	short := synthClip(31, 30, 0)
	short.Tracks = short.Tracks[:9]
	if _, err := Compress(sk, short, CompressOptions{}); err == nil {
		t.Error("clip with too few tracks accepted")
	}
}

// Resampling keeps values at common times, interpolates between, and
// keeps a discontinuity as one.
func TestResample(t *testing.T) {
	c := synthClip(121, 120, 60) // jump at 0.5 s
	r, err := c.Resample(30)
	if err != nil {
		t.Fatal(err)
	}
	if r.Frames != 31 || r.Rate != 30 {
		t.Fatalf("%d frames at %v Hz", r.Frames, r.Rate)
	}
	for _, f := range []int{0, 7, 16, 30} {
		for i := range c.Tracks {
			a := r.Tracks[i].Values[r.Tracks[i].sampleIndex(f)]
			b := c.Tracks[i].Values[c.Tracks[i].sampleIndex(4*f)]
			for k := range 4 {
				if math.Abs(a[k]-b[k]) > 1e-12 && math.Abs(a[k]+b[k]) > 1e-12 {
					t.Fatalf("track %d frame %d: %v, source %v", i, f, a, b)
				}
			}
		}
	}
	// The jump (source frame 60) lands on new frame 15, with its left value.
	tr := &r.Tracks[0]
	i := tr.sampleIndex(15)
	if tr.Frames[i-1] != 15 || math.Abs(tr.Values[i][0]-tr.Values[i-1][0]-0.5) > 1e-9 {
		t.Errorf("no jump at frame 15: %v %v", tr.Frames[i-2:i+1], tr.Values[i-2:i+1])
	}
	if _, err := c.Resample(0); err == nil {
		t.Error("rate 0 accepted")
	}
	// Off-grid: 120 -> 50 Hz interpolates (0.5 m/s·t root x walk is linear).
	r2, err := synthClip(121, 120, 0).Resample(50)
	if err != nil {
		t.Fatal(err)
	}
	if x := r2.Tracks[0].Values[7][0]; math.Abs(x-0.8*7/50.0) > 1e-12 {
		t.Errorf("root x at 0.14 s = %v", x)
	}
}
