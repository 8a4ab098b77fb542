package anim

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/vkjobs/vkjobs/anim/internal/format"
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
// segment's start (on the CPU, from the nearest earlier snapshot of the
// blob's seek index if Blob.BuildSeekIndex made one, with the same
// result). Cursors start as zeros (any
// content is safe: a cursor that does not match is reset). A cursor is
// matched by clip offset, segment and blob checksum, so one left by
// another blob's clip at the same offset is reset (see the package doc
// for the concatenated blobs where it is not: zero it there). Different
// jobs may run concurrently on disjoint characters (RunRange over
// disjoint ranges of one job is fine).
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
	case len(j.Poses)/PoseFloats/j.Bones < len(j.Inputs): // no product: a huge Bones must not wrap around
		return fmt.Errorf("anim: SampleJob: %d pose floats for %d characters of %d bones", len(j.Poses), len(j.Inputs), j.Bones)
	case begin < 0 || end < begin || end > len(j.Inputs):
		return fmt.Errorf("anim: SampleJob: range [%d,%d) of %d characters", begin, end, len(j.Inputs))
	}
	for i := begin; i < end; i++ {
		off := j.Inputs[i].Clip
		if !j.Blob.isClip(off) {
			return fmt.Errorf("anim: SampleJob: character %d: clip offset %d: %w", i, off, format.ErrNoClip)
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
	sampleRange(j.Blob.words, j.Blob.seeks.Load(), j.Inputs, j.Cursors, j.CursorStride, j.Poses, j.Bones, begin, end)
	return nil
}

// sampleRange is the kernel: it reads only blob words and the flat arrays,
// exactly what a compute shader gets, and on seeks the blob's seek index
// (seeks, nil when none was built), which only shortens the CPU's
// reading. Its inputs must be
// validated.
func sampleRange(words []uint32, seeks *seekTable, in []SampleInput, cursors []uint32, stride int, poses []float32, bones int, begin, end int) {
	ps := bones * PoseFloats
	for i := begin; i < end; i++ {
		sampleOne(words, seeks, in[i].Clip, in[i].Time, cursors[i*stride:(i+1)*stride], poses[i*ps:(i+1)*ps])
	}
}

// sampleOne samples one character. clip is a validated clip offset;
// seeks is the blob's seek index (used by the fast path only).
func sampleOne(words []uint32, seeks *seekTable, clip uint32, time float32, cur []uint32, pose []float32) {
	h := words[clip/4 : clip/4+format.ClipHeaderSize/4]
	rate := format.F32(h[format.ChRate])
	frames := h[format.ChFrames]
	L := h[format.ChSegFrames]
	nseg := h[format.ChSegments]
	nslot := int(h[format.ChSlots])

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
	if h[format.ChFlags] == format.ClipUniform {
		sampleUniform(words, clip, h, f, pose, &kindOff)
		return
	}
	if !format.PureGo {
		// The same work written for speed (curve_cursor.go); the code
		// below is the reference, the one the GLSL port follows.
		sampleCurve(words, seeks, clip, h, f, cur, pose, &kindOff)
		return
	}
	seg := uint32(f) / L
	if seg >= nseg {
		seg = nseg - 1
	}
	local := f - float32(seg*L)
	segEnd := min(L, frames-1-seg*L)
	tracks := words[clip/4+h[format.ChTracks]/4:]
	tracks = tracks[:nslot*format.TrackDescWords]
	segt := words[clip/4+h[format.ChSegTable]/4:]
	stream := words[clip/4+h[format.ChStream]/4:]
	stream = stream[:h[format.ChStreamWords]]
	segStart, segStop := segt[seg], segt[seg+1]
	slots := cur[CursorHeaderWords : CursorHeaderWords+nslot*CursorSlotWords]

	pos, next := cur[format.CurPos], cur[format.CurNext]
	id := format.CursorIdentity(words, h)
	if cur[format.CurClip] != clip || cur[format.CurSeg] != seg || cur[format.CurBlob] != id ||
		!(local >= format.F32(cur[format.CurLocal])) || pos < segStart || pos > segStop {
		pos, next = seekSegment(stream, tracks, slots, segStart, segEnd)
		cur[format.CurClip], cur[format.CurSeg], cur[format.CurBlob] = clip, seg, id
	}
	// Read the records playback needs by now, frame by frame: at need
	// frame F every track whose window point p2 is at F (and that has
	// points left) takes its next record, in track order. The stream was
	// written in exactly this order, so it carries no track ids.
	reseeked := false
	for float32(next) <= local && pos < segStop {
		F := next
		next = format.NoNeed
		for s := range nslot {
			cs := slots[s*CursorSlotWords : s*CursorSlotWords+CursorSlotWords]
			for cs[format.SlT2] == F && format.MorePoints(cs[format.SlParams], cs[format.SlT2], cs[format.SlT3], segEnd) && pos < segStop {
				pos = readRecord(stream, pos, tracks[s*format.TrackDescWords]>>16, cs)
			}
			if format.MorePoints(cs[format.SlParams], cs[format.SlT2], cs[format.SlT3], segEnd) && cs[format.SlT2] < next {
				next = cs[format.SlT2]
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
	cur[format.CurPos], cur[format.CurNext] = pos, next
	cur[format.CurLocal] = math.Float32bits(local)

	// Evaluate every animated track.
	for s := range nslot {
		cs := slots[s*CursorSlotWords : s*CursorSlotWords+CursorSlotWords]
		d := tracks[s*format.TrackDescWords : s*format.TrackDescWords+format.TrackDescWords]
		kind := d[0] >> 16
		if t2 := cs[format.SlT2]; local >= float32(t2) && (t2 < segEnd || endPairAhead(cs, segEnd)) {
			// Past the last record: step onto the final interval (the
			// end point repeats, no record); at the segment end of a
			// track that ends with a pair, onto the pair's second point
			// (an interval of length zero: its value).
			last := cs[format.SlRing+((cs[format.SlHead]+3)&3)*format.RingWords:]
			var idx [4]int32
			for c := range 4 {
				idx[c] = int32(last[1+c])
			}
			shiftIn(cs, cs[format.SlT3], &idx)
		}
		if cs[format.SlFresh] != 0 {
			updateCoeffs(cs, kind, format.F32(d[2]))
		}
		u := float32((local - format.F32(cs[format.SlT1])) * format.F32(cs[format.SlInvH]))
		if u < 0 {
			u = 0
		} else if u > 1 {
			u = 1
		}
		c := cs[format.SlCoef : format.SlCoef+16]
		x := format.Horner(format.F32(c[0]), format.F32(c[4]), format.F32(c[8]), format.F32(c[12]), u)
		y := format.Horner(format.F32(c[1]), format.F32(c[5]), format.F32(c[9]), format.F32(c[13]), u)
		z := format.Horner(format.F32(c[2]), format.F32(c[6]), format.F32(c[10]), format.F32(c[14]), u)
		o := int(d[0]&0xffff)*PoseFloats + kindOff[kind&3]
		p := pose[o : o+4]
		if kind != uint32(format.TrackRotation) {
			p[0], p[1], p[2] = x, y, z
			continue
		}
		w := format.Horner(format.F32(c[3]), format.F32(c[7]), format.F32(c[11]), format.F32(c[15]), u)
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
	nb := int(h[format.ChBones])
	def := words[clip/4+h[format.ChDefault]/4:]
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
func readParams(br *format.BitBuf, kind uint32) uint32 {
	mode := br.Bits(3)
	disc := br.Bits(1)
	pm := br.Bits(2)
	kt := br.Bits(4)
	lin := br.Bits(1)
	var end uint32
	if disc == 1 {
		end = br.Bits(1)
	}
	var kc [4]uint32
	for c := range format.NcompOf(kind, mode) {
		kc[c] = br.Bits(5)
	}
	return format.PackParams(mode, disc, pm, kt, lin, end, kc)
}

// readPoint reads a point (time delta and index residuals) of a track
// whose two previous points are (t2, i2) and (t3, i3).
func readPoint(br *format.BitBuf, params, kind, t2, t3 uint32, i2, i3 *[4]int32) (t uint32, idx [4]int32) {
	t = t3 + br.Rice(params>>4&15) + 1 - params>>3&1
	pm := params >> 28 & 3
	nc := format.NcompOf(kind, params&7)
	idx[0] = format.Predict(t2, t3, t, i2[0], i3[0], pm) + format.Unzigzag(br.Rice(params>>8&31))
	idx[1] = format.Predict(t2, t3, t, i2[1], i3[1], pm) + format.Unzigzag(br.Rice(params>>13&31))
	idx[2] = format.Predict(t2, t3, t, i2[2], i3[2], pm) + format.Unzigzag(br.Rice(params>>18&31))
	if nc == 4 {
		idx[3] = format.Predict(t2, t3, t, i2[3], i3[3], pm) + format.Unzigzag(br.Rice(params>>23&31))
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
	head := cs[format.SlHead] & 3
	e2 := cs[format.SlRing+((head+2)&3)*format.RingWords:][:5]
	e3 := cs[format.SlRing+((head+3)&3)*format.RingWords:][:5]
	e := cs[format.SlRing+head*format.RingWords:][:5]
	params := cs[format.SlParams]
	t2, t3 := cs[format.SlT2], cs[format.SlT3]
	pm := params >> 28 & 3
	four := kind == uint32(format.TrackRotation) && params&7 == format.ModeAll

	// Window 1: time, components 0 and 1. A code past the window's end
	// reads zeros, which shows as an escape (q >= format.RiceEscape) or as more
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
	if max(bad, bad2) >= format.RiceEscape || used > 64 || used2 > 64 {
		return readRecordSlow(words, pos, kind, cs)
	}
	t := t3 + u0 + 1 - params>>3&1
	e[1] = uint32(format.Predict(t2, t3, t, int32(e2[1]), int32(e3[1]), pm) + format.Unzigzag(u1))
	e[2] = uint32(format.Predict(t2, t3, t, int32(e2[2]), int32(e3[2]), pm) + format.Unzigzag(u2))
	e[3] = uint32(format.Predict(t2, t3, t, int32(e2[3]), int32(e3[3]), pm) + format.Unzigzag(u3))
	e[4] = 0
	if four {
		e[4] = uint32(format.Predict(t2, t3, t, int32(e2[4]), int32(e3[4]), pm) + format.Unzigzag(u4))
	}
	e[0] = t
	cs[format.SlHead] = (head + 1) & 3
	cs[format.SlFresh] = min(cs[format.SlFresh]+1, 4)
	cs[format.SlT2], cs[format.SlT3] = t3, t
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
// length and unary count (>= format.RiceEscape for an escape or bits missing).
func riceWin(w uint64, k uint32) (u, l, q uint32) {
	q = uint32(bits.TrailingZeros64(w))
	return q<<k | uint32(w>>(q+1))&(1<<k-1), q + 1 + k, q
}

// readRecordSlow is readRecord code by code, for escapes.
func readRecordSlow(words []uint32, pos uint32, kind uint32, cs []uint32) uint32 {
	format.SlowRecords.Add(1)
	var br format.BitBuf
	br.Seek(words, pos)
	head := cs[format.SlHead] & 3
	e2 := cs[format.SlRing+((head+2)&3)*format.RingWords:][:5]
	e3 := cs[format.SlRing+((head+3)&3)*format.RingWords:][:5]
	i2 := [4]int32{int32(e2[1]), int32(e2[2]), int32(e2[3]), int32(e2[4])}
	i3 := [4]int32{int32(e3[1]), int32(e3[2]), int32(e3[3]), int32(e3[4])}
	t, idx := readPoint(&br, cs[format.SlParams], kind, cs[format.SlT2], cs[format.SlT3], &i2, &i3)
	shiftIn(cs, t, &idx)
	return br.Pos()
}

// shiftIn appends point (t, idx) to a track's window ring: (p0..p3)
// becomes (p1, p2, p3, new).
func shiftIn(cs []uint32, t uint32, idx *[4]int32) {
	head := cs[format.SlHead] & 3 // a scribbled cursor may hold any head
	e := cs[format.SlRing+head*format.RingWords : format.SlRing+head*format.RingWords+format.RingWords]
	e[0] = t
	e[1], e[2], e[3], e[4] = uint32(idx[0]), uint32(idx[1]), uint32(idx[2]), uint32(idx[3])
	cs[format.SlHead] = (head + 1) & 3
	cs[format.SlFresh] = min(cs[format.SlFresh]+1, 4)
	cs[format.SlT2], cs[format.SlT3] = cs[format.SlT3], t
}

// seekSegment loads every track's first points from the segment header
// and returns the position of the first record and the first need frame.
func seekSegment(stream, tracks, slots []uint32, pos, segEnd uint32) (uint32, uint32) {
	nslot := len(slots) / CursorSlotWords
	next := uint32(format.NoNeed)
	var br format.BitBuf
	br.Seek(stream, pos)
	for s := range nslot {
		d := tracks[s*format.TrackDescWords : s*format.TrackDescWords+format.TrackDescWords]
		cs := slots[s*CursorSlotWords : s*CursorSlotWords+CursorSlotWords]
		kind := d[0] >> 16
		params := readParams(&br, kind)
		var i1 [4]int32
		for c := range format.NcompOf(kind, params&7) {
			v := br.Bits(d[1])
			i1[c] = int32(v<<(32-d[1])) >> (32 - d[1])
		}
		t2, i2 := readPoint(&br, params, kind, 0, 0, &i1, &i1)
		t3, i3 := t2, i2
		if t2 != segEnd || params&format.ParamEndPair != 0 {
			t3, i3 = readPoint(&br, params, kind, 0, t2, &i1, &i2)
		}
		cs[format.SlParams] = params
		cs[format.SlHead], cs[format.SlFresh], cs[format.SlT2], cs[format.SlT3] = 0, 0, 0, 0
		shiftIn(cs, 0, &i1) // p0 repeats p1 at the segment start
		shiftIn(cs, 0, &i1)
		shiftIn(cs, t2, &i2)
		shiftIn(cs, t3, &i3)
		if format.MorePoints(params, t2, t3, segEnd) && t2 < next {
			next = t2
		}
	}
	return br.Pos(), next
}

// endPairAhead reports whether a track's window has read its end pair
// (both points at segEnd) but still evaluates the interval before it:
// its p1 is before the segment end.
func endPairAhead(cs []uint32, segEnd uint32) bool {
	return cs[format.SlParams]&format.ParamEndPair != 0 && cs[format.SlT3] == segEnd &&
		cs[format.SlRing+((cs[format.SlHead]+1)&3)*format.RingWords] < segEnd
}

// updateCoeffs decodes the window's fresh points to values (each rotation
// aligned to the hemisphere of the point before it, as the compressor
// does) and computes the cubic of [p1, p2].
func updateCoeffs(cs []uint32, kind uint32, step float32) {
	cs = cs[:CursorSlotWords]
	head := cs[format.SlHead] & 3
	mode := cs[format.SlParams] & 7
	fresh := min(cs[format.SlFresh], 4)
	rot := kind == uint32(format.TrackRotation)
	ring := (*[4][format.RingWords]uint32)(unsafe.Pointer((*[4 * format.RingWords]uint32)(cs[format.SlRing : format.SlRing+4*format.RingWords])))
	// Decode the fresh points, oldest first, each rotation aligned to the
	// point before it (already decoded, or just now).
	for k := 4 - fresh; k < 4; k++ {
		e := &ring[(head+k)&3]
		var prev *[format.RingWords]uint32
		if rot && k > 0 {
			prev = &ring[(head+k-1)&3]
		}
		format.DecodePoint(e, prev, kind, mode, step)
	}
	r0, r1, r2, r3 := &ring[head], &ring[(head+1)&3], &ring[(head+2)&3], &ring[(head+3)&3]
	t1 := float32(r1[0])
	c := (*[16]float32)(unsafe.Pointer(&cs[format.SlCoef]))
	invH := format.CurveCoeffsV(float32(r0[0]), t1, float32(r2[0]), float32(r3[0]), format.RingValue(r0), format.RingValue(r1), format.RingValue(r2), format.RingValue(r3), cs[format.SlParams]>>30&1 == 1, c)
	cs[format.SlT1] = math.Float32bits(t1)
	cs[format.SlInvH] = math.Float32bits(invH)
	cs[format.SlFresh] = 0
}
