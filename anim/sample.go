package anim

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// SampleInput is one character's request: which clip, at what time. Its
// std430 form is struct { uint clip; float time; } (8 bytes).
type SampleInput struct {
	Clip uint32  // byte offset of the clip record in the blob (ClipView.Offset)
	Time float32 // seconds; clamped to [0, duration] (NaN reads as 0)
}

// PoseFloats is the number of float32 per bone in a local pose, the one
// pose layout of anim and package kernels (kernels.Transform, the
// local-to-model and skinning kernels' input):
//
//	offset 0: rotation x, y, z, w        (vec4, unit quaternion)
//	offset 4: translation x, y, z, 0     (vec4, metres, parent-relative)
//	offset 8: scale x, y, z, 0           (vec4)
//
// 48 bytes, std430 struct { vec4 rot; vec4 trans; vec4 scale; }.
const PoseFloats = 12

// SampleJob samples many characters, each with its own clip and time, into
// local poses. It is a plain struct over caller-owned slices: Run never
// allocates. Character i reads Inputs[i], owns the cursor words
// Cursors[i*CursorStride : (i+1)*CursorStride] and writes the pose
// Poses[i*Bones*PoseFloats : (i+1)*Bones*PoseFloats] (bones beyond its
// clip's get the identity).
//
// The cursor remembers where the character's clip stream was read up to,
// so playing forward reads each curve point once, in memory order; going
// backwards, changing clip or crossing a segment re-seeks from that
// segment's start. Cursors start as zeros (any content is safe: a cursor
// that does not match is reset). Different jobs may run concurrently on
// disjoint characters (RunRange over disjoint ranges of one job is fine).
type SampleJob struct {
	Blob         *Blob
	Inputs       []SampleInput
	Cursors      []uint32
	CursorStride int // words per character, >= CursorWords of every clip used
	Poses        []float32
	Bones        int // pose stride in bones, >= bones of every clip used
}

// Validate checks the job's slices and every character's clip.
func (j *SampleJob) Validate() error { return j.validate(0, len(j.Inputs)) }

func (j *SampleJob) validate(begin, end int) error {
	switch {
	case j.Blob == nil:
		return errors.New("anim: SampleJob: nil Blob")
	case j.Bones < 1:
		return fmt.Errorf("anim: SampleJob: Bones %d", j.Bones)
	case j.CursorStride < CursorHeaderWords:
		return fmt.Errorf("anim: SampleJob: CursorStride %d < %d", j.CursorStride, CursorHeaderWords)
	case len(j.Cursors)/j.CursorStride < len(j.Inputs):
		return fmt.Errorf("anim: SampleJob: %d cursor words for %d characters of %d", len(j.Cursors), len(j.Inputs), j.CursorStride)
	case len(j.Poses)/(j.Bones*PoseFloats) < len(j.Inputs):
		return fmt.Errorf("anim: SampleJob: %d pose floats for %d characters of %d bones", len(j.Poses), len(j.Inputs), j.Bones)
	case begin < 0 || end < begin || end > len(j.Inputs):
		return fmt.Errorf("anim: SampleJob: range [%d,%d) of %d characters", begin, end, len(j.Inputs))
	}
	for i := begin; i < end; i++ {
		off := j.Inputs[i].Clip
		if !j.Blob.isClip(off) {
			return fmt.Errorf("anim: SampleJob: character %d: clip offset %d: %w", i, off, errNoClip)
		}
		c := ClipView{j.Blob, off}
		if c.Bones() > j.Bones {
			return fmt.Errorf("anim: SampleJob: character %d: clip has %d bones, pose stride %d", i, c.Bones(), j.Bones)
		}
		if c.CursorWords() > j.CursorStride {
			return fmt.Errorf("anim: SampleJob: character %d: clip needs %d cursor words, stride %d", i, c.CursorWords(), j.CursorStride)
		}
	}
	return nil
}

// Run validates the job and samples every character.
func (j *SampleJob) Run() error { return j.RunRange(0, len(j.Inputs)) }

// RunRange validates the job for characters [begin, end) and samples them;
// this is the form a scheduler's range split calls.
func (j *SampleJob) RunRange(begin, end int) error {
	if err := j.validate(begin, end); err != nil {
		return err
	}
	sampleRange(j.Blob.words, j.Inputs, j.Cursors, j.CursorStride, j.Poses, j.Bones, begin, end)
	return nil
}

// sampleRange is the kernel: it reads only blob words and the flat arrays,
// exactly what a compute shader gets. Its inputs must be validated.
func sampleRange(words []uint32, in []SampleInput, cursors []uint32, stride int, poses []float32, bones int, begin, end int) {
	ps := bones * PoseFloats
	for i := begin; i < end; i++ {
		sampleOne(words, in[i].Clip, in[i].Time, cursors[i*stride:(i+1)*stride], poses[i*ps:(i+1)*ps])
	}
}

func f32(w uint32) float32 { return math.Float32frombits(w) }

// Cursor words (see doc.go). Header: clip offset, segment, stream bit
// position, local frame of the last sample, next need frame. Per track
// (CursorSlotWords):
//
//	0 ring head: index of the window's oldest point p0
//	1 fresh: how many of the newest points are not decoded to values yet
//	  (non-zero means the coefficients are stale)
//	2 t2, 3 t3: frames of the window's p2 and p3 (uint32)
//	4 t1 (float32), 5 1/(t2-t1) (float32): the evaluated interval
//	6 coding parameters of the segment
//	8..23 c0, c1, c2, c3 (vec4 each): the cubic of [p1, p2]
//	24..63 ring of four points, 10 words each: frame, indices[4], value[4]
const (
	curClip  = 0
	curSeg   = 1
	curPos   = 2
	curLocal = 3
	curNext  = 4

	slHead    = 0
	slFresh   = 1
	slT2      = 2
	slT3      = 3
	slT1      = 4
	slInvH    = 5
	slParams  = 6
	slCoef    = 8
	slRing    = 24
	ringWords = 10
)

// noNeed marks a segment whose tracks all hold their last point.
const noNeed = math.MaxUint32

// sampleOne samples one character. clip is a validated clip offset.
func sampleOne(words []uint32, clip uint32, time float32, cur []uint32, pose []float32) {
	h := words[clip/4 : clip/4+clipHeaderSize/4]
	rate := f32(h[chRate])
	frames := h[chFrames]
	L := h[chSegFrames]
	nseg := h[chSegments]
	nslot := int(h[chSlots])

	// Time to frame, clamped; within 1/1000 frame of a sample snaps to it,
	// so t = f/rate lands on frame f despite float rounding.
	f := float32(time * rate) // rounded: see curve.go
	if !(f > 0) {
		f = 0
	}
	if mf := float32(frames - 1); f > mf {
		f = mf
	}
	if r := float32(math.Round(float64(f))); f-r < 1e-3 && r-f < 1e-3 {
		f = r
	}

	// Constant tracks: copy the default pose; identity for extra bones.
	// Pose offset of each track kind (translation, rotation, scale).
	kindOff := writeDefaultPose(words, clip, h, pose)
	if nslot == 0 {
		return
	}
	if h[chFlags] == clipUniform {
		sampleUniform(words, clip, h, f, pose, &kindOff)
		return
	}
	seg := uint32(f) / L
	if seg >= nseg {
		seg = nseg - 1
	}
	local := f - float32(seg*L)
	segEnd := min(L, frames-1-seg*L)
	tracks := words[clip/4+h[chTracks]/4:]
	tracks = tracks[:nslot*trackDescWords]
	segt := words[clip/4+h[chSegTable]/4:]
	stream := words[clip/4+h[chStream]/4:]
	stream = stream[:h[chStreamWords]]
	segStart, segStop := segt[seg], segt[seg+1]
	slots := cur[CursorHeaderWords : CursorHeaderWords+nslot*CursorSlotWords]

	pos, next := cur[curPos], cur[curNext]
	if cur[curClip] != clip || cur[curSeg] != seg || !(local >= f32(cur[curLocal])) || pos < segStart || pos > segStop {
		pos, next = seekSegment(stream, tracks, slots, segStart, segEnd)
		cur[curClip], cur[curSeg] = clip, seg
	}
	// Read the records playback needs by now, frame by frame: at need
	// frame F every track whose window point p2 is at F (and that has
	// points left) takes its next record, in track order. The stream was
	// written in exactly this order, so it carries no track ids.
	reseeked := false
	for float32(next) <= local && pos < segStop {
		F := next
		next = noNeed
		for s := range nslot {
			cs := slots[s*CursorSlotWords : s*CursorSlotWords+CursorSlotWords]
			for cs[slT2] == F && cs[slT3] != segEnd && pos < segStop {
				pos = readRecord(stream, pos, tracks[s*trackDescWords]>>16, cs)
			}
			if cs[slT3] != segEnd && cs[slT2] < next {
				next = cs[slT2]
			}
		}
		if next <= F {
			// Only a scribbled cursor gets here (valid data always
			// moves on): start the segment over, once.
			if reseeked {
				break
			}
			reseeked = true
			pos, next = seekSegment(stream, tracks, slots, segStart, segEnd)
		}
	}
	cur[curPos], cur[curNext] = pos, next
	cur[curLocal] = math.Float32bits(local)

	// Evaluate every animated track.
	for s := range nslot {
		cs := slots[s*CursorSlotWords : s*CursorSlotWords+CursorSlotWords]
		d := tracks[s*trackDescWords : s*trackDescWords+trackDescWords]
		kind := d[0] >> 16
		if t2 := cs[slT2]; local >= float32(t2) && t2 < segEnd {
			// Past the last record: step onto the final interval (the
			// end point repeats, no record).
			last := cs[slRing+((cs[slHead]+3)&3)*ringWords:]
			var idx [4]int32
			for c := range 4 {
				idx[c] = int32(last[1+c])
			}
			shiftIn(cs, cs[slT3], &idx)
		}
		if cs[slFresh] != 0 {
			updateCoeffs(cs, kind, f32(d[2]))
		}
		u := float32((local - f32(cs[slT1])) * f32(cs[slInvH]))
		if u < 0 {
			u = 0
		} else if u > 1 {
			u = 1
		}
		c := cs[slCoef : slCoef+16]
		x := horner(f32(c[0]), f32(c[4]), f32(c[8]), f32(c[12]), u)
		y := horner(f32(c[1]), f32(c[5]), f32(c[9]), f32(c[13]), u)
		z := horner(f32(c[2]), f32(c[6]), f32(c[10]), f32(c[14]), u)
		o := int(d[0]&0xffff)*PoseFloats + kindOff[kind&3]
		p := pose[o : o+4]
		if kind != uint32(TrackRotation) {
			p[0], p[1], p[2] = x, y, z
			continue
		}
		w := horner(f32(c[3]), f32(c[7]), f32(c[11]), f32(c[15]), u)
		n := float32(x*x) + float32(y*y) + float32(z*z) + float32(w*w)
		if n > 0 {
			inv := 1 / float32(math.Sqrt(float64(n)))
			p[0], p[1], p[2], p[3] = x*inv, y*inv, z*inv, w*inv
		} else {
			p[0], p[1], p[2], p[3] = 0, 0, 0, 1
		}
	}
}

// writeDefaultPose copies a clip's default pose (every constant track's
// value, stored translation, rotation, scale) into the character's pose
// (PoseFloats' layout: a bone's words 0-3 and 4-7 trade places), and the
// identity into the bones beyond the clip's. It returns the pose offset of
// each track kind (translation, rotation, scale).
func writeDefaultPose(words []uint32, clip uint32, h []uint32, pose []float32) [4]int {
	nb := int(h[chBones])
	def := words[clip/4+h[chDefault]/4:]
	def = def[:nb*PoseFloats]
	const tOff, rOff = 4, 0
	for k := 0; k < len(def); k += PoseFloats {
		src := (*[PoseFloats]uint32)(def[k : k+PoseFloats])
		dst := (*[PoseFloats]float32)(pose[k : k+PoseFloats])
		*(*[4]uint32)(unsafe.Pointer(&dst[0])) = [4]uint32(src[4:8])
		*(*[4]uint32)(unsafe.Pointer(&dst[4])) = [4]uint32(src[0:4])
		*(*[4]uint32)(unsafe.Pointer(&dst[8])) = [4]uint32(src[8:12])
	}
	for k := nb * PoseFloats; k+PoseFloats <= len(pose); k += PoseFloats {
		b := (*[PoseFloats]float32)(pose[k : k+PoseFloats])
		*(*[4]float32)(b[tOff:]) = [4]float32{0, 0, 0, 0}
		*(*[4]float32)(b[rOff:]) = [4]float32{0, 0, 0, 1}
		*(*[4]float32)(b[8:]) = [4]float32{1, 1, 1, 0}
	}
	return [4]int{tOff, rOff, 8, 8}
}

// readParams reads a track's segment coding parameters and packs them.
func readParams(br *bitBuf, kind uint32) uint32 {
	mode := br.bits(3)
	disc := br.bits(1)
	pm := br.bits(2)
	kt := br.bits(4)
	lin := br.bits(1)
	var kc [4]uint32
	for c := range ncompOf(kind, mode) {
		kc[c] = br.bits(5)
	}
	return packParams(mode, disc, pm, kt, lin, kc)
}

// readPoint reads a point (time delta and index residuals) of a track
// whose two previous points are (t2, i2) and (t3, i3).
func readPoint(br *bitBuf, params, kind, t2, t3 uint32, i2, i3 *[4]int32) (t uint32, idx [4]int32) {
	t = t3 + br.rice(params>>4&15) + 1 - params>>3&1
	pm := params >> 28 & 3
	nc := ncompOf(kind, params&7)
	idx[0] = predict(t2, t3, t, i2[0], i3[0], pm) + unzigzag(br.rice(params>>8&31))
	idx[1] = predict(t2, t3, t, i2[1], i3[1], pm) + unzigzag(br.rice(params>>13&31))
	idx[2] = predict(t2, t3, t, i2[2], i3[2], pm) + unzigzag(br.rice(params>>18&31))
	if nc == 4 {
		idx[3] = predict(t2, t3, t, i2[3], i3[3], pm) + unzigzag(br.rice(params>>23&31))
	}
	return t, idx
}

// readRecord reads a track's next point, at bit position pos of the
// stream, into its window ring (integers only; values are decoded lazily
// by updateCoeffs) and returns the position after it. It is readPoint
// written for speed, the sampler's innermost loop: the codes are taken
// from two 64-bit windows of the stream (the time and two components,
// then the rest) without a branch on the data; a record with an escape
// code or longer than the windows (never seen in practice; checked once
// at the end) is read again code by code.
func readRecord(words []uint32, pos uint32, kind uint32, cs []uint32) uint32 {
	cs = cs[:CursorSlotWords]
	head := cs[slHead] & 3
	e2 := cs[slRing+((head+2)&3)*ringWords:][:5]
	e3 := cs[slRing+((head+3)&3)*ringWords:][:5]
	e := cs[slRing+head*ringWords:][:5]
	params := cs[slParams]
	t2, t3 := cs[slT2], cs[slT3]
	pm := params >> 28 & 3
	four := kind == uint32(TrackRotation) && params&7 == modeAll

	// Window 1: time, components 0 and 1. A code past the window's end
	// reads zeros, which shows as an escape (q >= riceEscape) or as more
	// than 64 bits used.
	w := window64(words, pos)
	u0, l, q := riceWin(w, params>>4&15)
	w >>= l
	used, bad := l, q
	u1, l, q := riceWin(w, params>>8&31)
	w >>= l
	used, bad = used+l, max(bad, q)
	u2, l, q := riceWin(w, params>>13&31)
	used, bad = used+l, max(bad, q)
	// Window 2: components 2 and 3 (3 only for four-component rotations).
	p1 := pos + used
	w = window64(words, p1)
	u3, l, q := riceWin(w, params>>18&31)
	w >>= l
	used2, bad2 := l, q
	var u4 uint32
	if four {
		var l4, q4 uint32
		u4, l4, q4 = riceWin(w, params>>23&31)
		used2, bad2 = used2+l4, max(bad2, q4)
	}
	if max(bad, bad2) >= riceEscape || used > 64 || used2 > 64 {
		return readRecordSlow(words, pos, kind, cs)
	}
	t := t3 + u0 + 1 - params>>3&1
	e[1] = uint32(predict(t2, t3, t, int32(e2[1]), int32(e3[1]), pm) + unzigzag(u1))
	e[2] = uint32(predict(t2, t3, t, int32(e2[2]), int32(e3[2]), pm) + unzigzag(u2))
	e[3] = uint32(predict(t2, t3, t, int32(e2[3]), int32(e3[3]), pm) + unzigzag(u3))
	e[4] = 0
	if four {
		e[4] = uint32(predict(t2, t3, t, int32(e2[4]), int32(e3[4]), pm) + unzigzag(u4))
	}
	e[0] = t
	cs[slHead] = (head + 1) & 3
	cs[slFresh] = min(cs[slFresh]+1, 4)
	cs[slT2], cs[slT3] = t3, t
	return p1 + used2
}

// window64 returns the 64 stream bits from bit position pos (the stream's
// padding words keep pos>>5+2 inside it for a pos inside the stream).
func window64(words []uint32, pos uint32) uint64 {
	i, s := pos>>5, pos&31
	w := words[i : i+3 : i+3]
	return (uint64(w[0])|uint64(w[1])<<32)>>s | uint64(w[2])<<(64-s)
}

// riceWin decodes the Rice code (parameter k) at the start of w: value,
// length and unary count (>= riceEscape for an escape or bits missing).
func riceWin(w uint64, k uint32) (u, l, q uint32) {
	q = uint32(bits.TrailingZeros64(w))
	return q<<k | uint32(w>>(q+1))&(1<<k-1), q + 1 + k, q
}

// slowRecords counts readRecordSlow's records (tests check both paths
// are exercised).
var slowRecords atomic.Uint64

// readRecordSlow is readRecord code by code, for escapes.
func readRecordSlow(words []uint32, pos uint32, kind uint32, cs []uint32) uint32 {
	slowRecords.Add(1)
	var br bitBuf
	br.seek(words, pos)
	head := cs[slHead] & 3
	e2 := cs[slRing+((head+2)&3)*ringWords:][:5]
	e3 := cs[slRing+((head+3)&3)*ringWords:][:5]
	i2 := [4]int32{int32(e2[1]), int32(e2[2]), int32(e2[3]), int32(e2[4])}
	i3 := [4]int32{int32(e3[1]), int32(e3[2]), int32(e3[3]), int32(e3[4])}
	t, idx := readPoint(&br, cs[slParams], kind, cs[slT2], cs[slT3], &i2, &i3)
	shiftIn(cs, t, &idx)
	return br.pos()
}

// shiftIn appends point (t, idx) to a track's window ring: (p0..p3)
// becomes (p1, p2, p3, new).
func shiftIn(cs []uint32, t uint32, idx *[4]int32) {
	head := cs[slHead] & 3 // a scribbled cursor may hold any head
	e := cs[slRing+head*ringWords : slRing+head*ringWords+ringWords]
	e[0] = t
	e[1], e[2], e[3], e[4] = uint32(idx[0]), uint32(idx[1]), uint32(idx[2]), uint32(idx[3])
	cs[slHead] = (head + 1) & 3
	cs[slFresh] = min(cs[slFresh]+1, 4)
	cs[slT2], cs[slT3] = cs[slT3], t
}

// seekSegment loads every track's first points from the segment header
// and returns the position of the first record and the first need frame.
func seekSegment(stream, tracks, slots []uint32, pos, segEnd uint32) (uint32, uint32) {
	nslot := len(slots) / CursorSlotWords
	next := uint32(noNeed)
	var br bitBuf
	br.seek(stream, pos)
	for s := range nslot {
		d := tracks[s*trackDescWords : s*trackDescWords+trackDescWords]
		cs := slots[s*CursorSlotWords : s*CursorSlotWords+CursorSlotWords]
		kind := d[0] >> 16
		params := readParams(&br, kind)
		var i1 [4]int32
		for c := range ncompOf(kind, params&7) {
			v := br.bits(d[1])
			i1[c] = int32(v<<(32-d[1])) >> (32 - d[1])
		}
		t2, i2 := readPoint(&br, params, kind, 0, 0, &i1, &i1)
		t3, i3 := t2, i2
		if t2 != segEnd {
			t3, i3 = readPoint(&br, params, kind, 0, t2, &i1, &i2)
		}
		cs[slParams] = params
		cs[slHead], cs[slFresh], cs[slT2], cs[slT3] = 0, 0, 0, 0
		shiftIn(cs, 0, &i1) // p0 repeats p1 at the segment start
		shiftIn(cs, 0, &i1)
		shiftIn(cs, t2, &i2)
		shiftIn(cs, t3, &i3)
		if t3 != segEnd && t2 < next {
			next = t2
		}
	}
	return br.pos(), next
}

// updateCoeffs decodes the window's fresh points to values (each rotation
// aligned to the hemisphere of the point before it, as the compressor
// does) and computes the cubic of [p1, p2].
func updateCoeffs(cs []uint32, kind uint32, step float32) {
	cs = cs[:CursorSlotWords]
	head := cs[slHead] & 3
	mode := cs[slParams] & 7
	fresh := min(cs[slFresh], 4)
	rot := kind == uint32(TrackRotation)
	ring := (*[4][ringWords]uint32)(unsafe.Pointer((*[4 * ringWords]uint32)(cs[slRing : slRing+4*ringWords])))
	// Decode the fresh points, oldest first, each rotation aligned to the
	// point before it (already decoded, or just now).
	for k := 4 - fresh; k < 4; k++ {
		e := &ring[(head+k)&3]
		var prev *[ringWords]uint32
		if rot && k > 0 {
			prev = &ring[(head+k-1)&3]
		}
		decodePoint(e, prev, kind, mode, step)
	}
	r0, r1, r2, r3 := &ring[head], &ring[(head+1)&3], &ring[(head+2)&3], &ring[(head+3)&3]
	t1 := float32(r1[0])
	c := (*[16]float32)(unsafe.Pointer(&cs[slCoef]))
	invH := curveCoeffsV(float32(r0[0]), t1, float32(r2[0]), float32(r3[0]), ringValue(r0), ringValue(r1), ringValue(r2), ringValue(r3), cs[slParams]>>30&1 == 1, c)
	cs[slT1] = math.Float32bits(t1)
	cs[slInvH] = math.Float32bits(invH)
	cs[slFresh] = 0
}

// decodePoint decodes ring entry e's indices (words 1..4) to its value
// (words 5..8): dequant, and a rotation aligned to the hemisphere of prev
// when prev is not nil.
func decodePoint(e, prev *[ringWords]uint32, kind, mode uint32, step float32) {
	a0, a1, a2 := float32(int32(e[1]))*step, float32(int32(e[2]))*step, float32(int32(e[3]))*step
	v := [4]float32{a0, a1, a2, 0}
	if kind == uint32(TrackRotation) {
		if mode == modeAll {
			v[3] = float32(int32(e[4])) * step
		} else {
			s := 1 - float32(a0*a0) - float32(a1*a1) - float32(a2*a2) // rounded products: see curve.go
			var big float32
			if s > 0 {
				big = float32(math.Sqrt(float64(s)))
			}
			switch mode {
			case 0:
				v = [4]float32{big, a0, a1, a2}
			case 1:
				v = [4]float32{a0, big, a1, a2}
			case 2:
				v = [4]float32{a0, a1, big, a2}
			default:
				v[3] = big
			}
		}
		if prev != nil && dot4(&v, ringValue(prev)) < 0 {
			v[0], v[1], v[2], v[3] = -v[0], -v[1], -v[2], -v[3]
		}
	}
	e[5], e[6], e[7], e[8] = math.Float32bits(v[0]), math.Float32bits(v[1]), math.Float32bits(v[2]), math.Float32bits(v[3])
}

// ringValue is the decoded value (words 5..8) of a ring entry.
func ringValue(e *[ringWords]uint32) *[4]float32 {
	return (*[4]float32)(unsafe.Pointer(&e[5]))
}
