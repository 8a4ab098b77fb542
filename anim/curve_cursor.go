package anim

import (
	"math"
	"math/bits"
	"unsafe"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// slotWords is one track's cursor words (format's Sl... indices).
type slotWords = [CursorSlotWords]uint32

// ringOf is a slot's window ring: four points of format.RingWords words.
func ringOf(cs *slotWords) *[4][format.RingWords]uint32 {
	return (*[4][format.RingWords]uint32)(unsafe.Pointer(&cs[format.SlRing]))
}

// sampleCurve is the curve codec's part of sampleOne written for speed:
// the same cursor words and the same poses, bit for bit
// (TestCurveSamplerMatchesReference in package offline compares them
// forward, on seeks, across segments and clips and on scribbled cursors).
// sampleOne's own code stays the reference, the one the GLSL port
// follows line by line; format.PureGo selects it. What differs is only
// how the work is done:
//
//   - Records are read by readRecordFast: all of a record's codes from
//     one unaligned 64-bit load (a longer record, or one with an escape,
//     goes to readRecord); the prediction's parameters (line or hold,
//     step, divisor) are worked out once per record, not per component,
//     and the common divisors 1 and 2 (consecutive frames, at the full
//     and at half slope) take no integer division.
//   - Slots are fixed-size arrays, so the record and evaluation loops
//     index them without bounds checks.
//   - Fresh points are decoded and a linear segment's coefficients
//     written in place (updateCoeffsFast), without calls.
//   - Evaluation skips the cubic terms of linear segments (c2 = c3 = +0),
//     with the same result bit for bit (see evalLinear).
//   - On amd64 CPUs with BMI1 and BMI2, a need frame's record loop
//     (curvePassAsm) and the fresh points' decoding (curveDecodeAsm) run
//     in assembly (curve_decode_amd64.s); records the assembly does not
//     take go to readRecordFast. The build tag purego, or another
//     architecture, keeps the Go code (needPass, decodeFresh).
//   - With AVX, the rotations' normalisation and the pose stores take
//     eight tracks at a time (curveFinishAVX); storeTrack otherwise.
//   - A seek starts from the blob's seek index (seekIndex, built by
//     Blob.BuildSeekIndex when the program asked for one): the cursor
//     slots as the reference leaves them at a need frame of the segment,
//     restored, rather than the segment's header and every record after
//     it.
//
// h is the clip header, f the clamped frame, kindOff writeDefaultPose's
// offsets; the default pose is already written; seeks is the blob's seek
// index.
func sampleCurve(words []uint32, seeks *seekTable, clip uint32, h []uint32, f float32, cur []uint32, pose []float32, kindOff *[4]int) {
	frames := h[format.ChFrames]
	L := h[format.ChSegFrames]
	nseg := h[format.ChSegments]
	nslot := int(h[format.ChSlots])
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
	slot := func(s int) *slotWords { return (*slotWords)(slots[s*CursorSlotWords:]) }

	pos, next := cur[format.CurPos], cur[format.CurNext]
	id := format.CursorIdentity(words, h)
	if cur[format.CurClip] != clip || cur[format.CurSeg] != seg || cur[format.CurBlob] != id ||
		!(local >= format.F32(cur[format.CurLocal])) || pos < segStart || pos > segStop {
		pos, next = seeks.of(clip).seek(stream, tracks, slots, seg, segStart, segEnd, local)
		cur[format.CurClip], cur[format.CurSeg], cur[format.CurBlob] = clip, seg, id
	}
	// The reference's record loop (sampleOne), with readRecordFast, or
	// with curvePassAsm where the CPU has it.
	reseeked := false
	for float32(next) <= local && pos < segStop {
		F := next
		if curveHasAsm {
			pos, next = needPassAsm(stream, tracks, slots, F, segEnd, segStop, pos)
		} else {
			pos, next = needPass(stream, tracks, slots, F, segEnd, segStop, pos)
		}
		if next <= F {
			if reseeked {
				break
			}
			reseeked = true
			pos, next = seeks.of(clip).seek(stream, tracks, slots, seg, segStart, segEnd, local)
		}
	}
	cur[format.CurPos], cur[format.CurNext] = pos, next
	cur[format.CurLocal] = math.Float32bits(local)

	var buf curveFinishBuf
	for s := range nslot {
		cs := slot(s)
		d := (*[format.TrackDescWords]uint32)(tracks[s*format.TrackDescWords:])
		kind := d[0] >> 16
		if t2 := cs[format.SlT2]; local >= float32(t2) && (t2 < segEnd || endPairAhead(cs[:], segEnd)) {
			last := &ringOf(cs)[(cs[format.SlHead]+3)&3]
			idx := [4]int32{int32(last[1]), int32(last[2]), int32(last[3]), int32(last[4])}
			shiftIn(cs[:], cs[format.SlT3], &idx)
		}
		if cs[format.SlFresh] != 0 {
			updateCoeffsFast(cs, kind, format.F32(d[2]))
		}
		u := float32((local - format.F32(cs[format.SlT1])) * format.F32(cs[format.SlInvH]))
		if u < 0 {
			u = 0
		} else if u > 1 {
			u = 1
		}
		c := (*[16]float32)(unsafe.Pointer(&cs[format.SlCoef]))
		var x, y, z, w float32
		if cs[format.SlParams]>>30&1 != 0 && cubicZero(cs) && u == u {
			x, y, z, w = evalLinear(c, u)
		} else {
			x = format.Horner(c[0], c[4], c[8], c[12], u)
			y = format.Horner(c[1], c[5], c[9], c[13], u)
			z = format.Horner(c[2], c[6], c[10], c[14], u)
			w = format.Horner(c[3], c[7], c[11], c[15], u)
		}
		o := int(d[0]&0xffff)*PoseFloats + kindOff[kind&3]
		p := (*[4]float32)(pose[o : o+4])
		if curveHasAVX {
			// Eight tracks at a time (curveFinishAVX); a translation's
			// or scale's fourth float is the pose's own, stored back.
			j := s & 7
			buf.v[0][j], buf.v[1][j], buf.v[2][j], buf.v[3][j] = x, y, z, w
			buf.rot[j], buf.off[j] = -1, int32(o)
			if kind != uint32(format.TrackRotation) {
				buf.v[3][j], buf.rot[j] = p[3], 0
			}
			if j == 7 || s == nslot-1 {
				curveFinishAVX(&buf, j+1, pose)
			}
			continue
		}
		storeTrack(p, x, y, z, w, kind == uint32(format.TrackRotation))
	}
}

// storeTrack stores a track's value at its place in the pose, as the
// reference does: x, y, z for a translation or scale, a rotation
// normalised (|q|² summed left to right from rounded squares; where it is
// above 0, each component times 1/sqrt(|q|²), else the identity).
func storeTrack(p *[4]float32, x, y, z, w float32, rot bool) {
	if !rot {
		p[0], p[1], p[2] = x, y, z
		return
	}
	n := float32(x*x) + float32(y*y) + float32(z*z) + float32(w*w)
	if n > 0 {
		inv := 1 / float32(math.Sqrt(float64(n)))
		p[0], p[1], p[2], p[3] = x*inv, y*inv, z*inv, w*inv
	} else {
		p[0], p[1], p[2], p[3] = 0, 0, 0, 1
	}
}

// needPass is the reference's visit of need frame F (sampleOne): every
// slot whose p2 is at F reads its records (readRecordFast) while it has
// points left and pos is before segStop, in slot order; it returns the
// position and the next need frame, the earliest p2 of a slot with
// points left.
func needPass(stream, tracks, slots []uint32, F, segEnd, segStop, pos uint32) (uint32, uint32) {
	next := uint32(format.NoNeed)
	for s := range len(slots) / CursorSlotWords {
		cs := (*slotWords)(slots[s*CursorSlotWords:])
		params := cs[format.SlParams]
		for cs[format.SlT2] == F && format.MorePoints(params, cs[format.SlT2], cs[format.SlT3], segEnd) && pos < segStop {
			pos = readRecordFast(stream, pos, tracks[s*format.TrackDescWords]>>16, cs)
		}
		if t2 := cs[format.SlT2]; t2 < next && format.MorePoints(params, t2, cs[format.SlT3], segEnd) {
			next = t2
		}
	}
	return pos, next
}

// needPassAsm is needPass with curvePassAsm: the assembly reads the
// records, and each record it leaves to the Go code (an escape, a record
// longer than its window, a window past the stream's end) is read by
// readRecordFast before the assembly goes on from the same slot.
// slots holds at least one slot.
func needPassAsm(stream, tracks, slots []uint32, F, segEnd, segStop, pos uint32) (uint32, uint32) {
	nslot := len(slots) / CursorSlotWords
	tracks = tracks[:nslot*format.TrackDescWords]
	base := unsafe.Pointer(unsafe.SliceData(stream))
	next := uint32(format.NoNeed)
	for s := 0; ; {
		s, pos, next = curvePassAsm(base, len(stream), &tracks[0], &slots[0], s, nslot, F, segEnd, segStop, pos, next)
		if s >= nslot {
			return pos, next
		}
		pos = readRecordFast(stream, pos, tracks[s*format.TrackDescWords]>>16, (*slotWords)(slots[s*CursorSlotWords:]))
	}
}

// curveFinishBuf holds eight tracks' values for curveFinishAVX,
// structure of arrays: component c of lane j is v[c][j] (a translation's
// or scale's fourth: the pose's float there), rot[j] is -1 for a rotation
// (normalised) and 0 otherwise (stored as it is), off[j] the track's
// offset in the pose, which leaves four floats in it.
type curveFinishBuf struct {
	v   [4][8]float32
	rot [8]int32
	off [8]int32
}

// cubicZero reports whether a slot's c2 and c3 words are all +0 (an
// OR of the words: an array comparison would call memequal).
func cubicZero(cs *slotWords) bool {
	c := (*[8]uint32)(cs[format.SlCoef+8:])
	return c[0]|c[1]|c[2]|c[3]|c[4]|c[5]|c[6]|c[7] == 0
}

// evalLinear is format.Horner on coefficients whose c2 and c3 are +0
// (every linear segment's: format.CurveCoeffsV) at a u in [0, 1] (not
// NaN): there u*c3 and c2 + u*c3 are +0, u*(+0) is +0, so Horner's value
// is c0 + u*(c1 + 0) bit for bit (the + 0 keeps Horner's sign of a zero
// c1). The caller checks all three conditions on the cursor's words, so
// a scribbled cursor evaluates as the reference does.
func evalLinear(c *[16]float32, u float32) (x, y, z, w float32) {
	x = c[0] + float32(u*(c[4]+0))
	y = c[1] + float32(u*(c[5]+0))
	z = c[2] + float32(u*(c[6]+0))
	w = c[3] + float32(u*(c[7]+0))
	return
}

// readRecordFast is readRecord (the same words written, the same
// position returned) for a slot given as an array: every code from one
// 64-bit window (readRecord takes two), read with riceFast, and the
// prediction (format.Predict) set up once per record: hold, or
// ib + d*k/den with the divisions by 1 and 2
// (consecutive points, at the full or half slope: nearly every record of
// densely sampled motion) done without dividing. The integer results are
// format.Predict's: Go's / truncates toward zero, and so do d*k itself
// (den 1) and (d*k)/2 (den 2, a constant divisor).
func readRecordFast(words []uint32, pos uint32, kind uint32, cs *slotWords) uint32 {
	if int(pos>>5)+4 >= len(words) { // never inside a stream (its padding)
		return readRecord(words, pos, kind, cs[:])
	}
	ring := ringOf(cs)
	head := cs[format.SlHead] & 3
	e2, e3, e := &ring[(head+2)&3], &ring[(head+3)&3], &ring[head]
	params := cs[format.SlParams]
	t2, t3 := cs[format.SlT2], cs[format.SlT3]
	four := kind == uint32(format.TrackRotation) && params&7 == format.ModeAll

	base := unsafe.Pointer(unsafe.SliceData(words))
	w := streamWindow(words, base, pos)
	u0, l, q := riceFast(w, params>>4&15)
	w >>= l & 63
	used, bad := l, q
	u1, l, q := riceFast(w, params>>8&31)
	w >>= l & 63
	used, bad = used+l, max(bad, q)
	u2, l, q := riceFast(w, params>>13&31)
	w >>= l & 63
	used, bad = used+l, max(bad, q)
	u3, l, q := riceFast(w, params>>18&31)
	w >>= l & 63
	used, bad = used+l, max(bad, q)
	var u4 uint32
	if four {
		u4, l, q = riceFast(w, params>>23&31)
		used, bad = used+l, max(bad, q)
	}
	if bad >= format.RiceEscape || used > 64 {
		// Longer than one window, or an escape: the reference reads it
		// (from two windows, or code by code).
		return readRecord(words, pos, kind, cs[:])
	}
	t := t3 + u0 + 1 - params>>3&1

	// format.Predict(t2, t3, t, ia, ib, pm) for every component: the
	// conditions that do not depend on the component, once.
	pm := params >> 28 & 3
	k := int32(t - t3)
	den := int32(t3 - t2)
	if pm == format.PredHalf {
		den *= 2
	}
	line := pm != format.PredHold && t3 > t2 && t3-t2 < 1<<16 && t-t3 <= 63
	e[1] = uint32(predictFast(int32(e2[1]), int32(e3[1]), k, den, line) + format.Unzigzag(u1))
	e[2] = uint32(predictFast(int32(e2[2]), int32(e3[2]), k, den, line) + format.Unzigzag(u2))
	e[3] = uint32(predictFast(int32(e2[3]), int32(e3[3]), k, den, line) + format.Unzigzag(u3))
	e[4] = 0
	if four {
		e[4] = uint32(predictFast(int32(e2[4]), int32(e3[4]), k, den, line) + format.Unzigzag(u4))
	}
	e[0] = t
	cs[format.SlHead] = (head + 1) & 3
	cs[format.SlFresh] = min(cs[format.SlFresh]+1, 4)
	cs[format.SlT2], cs[format.SlT3] = t3, t
	return pos + used
}

// predictFast is format.Predict's value for one component, given the
// record's step k = t - tb, divisor den and whether the line applies.
func predictFast(ia, ib, k, den int32, line bool) int32 {
	d := ib - ia
	if !line || d <= -(1<<23) || d >= 1<<23 {
		return ib
	}
	switch den {
	case 1:
		return ib + d*k
	case 2:
		return ib + d*k/2
	}
	return ib + d*k/den
}

// streamWindow is window64 (the 64 stream bits from bit position pos) from
// one unaligned 8-byte load at the stream's base pointer and the byte
// after it, on a little-endian host (the blob's byte order); the caller
// keeps pos>>5 + 3 inside the stream.
func streamWindow(words []uint32, base unsafe.Pointer, pos uint32) uint64 {
	if !hostLittleEndian {
		return window64(words, pos)
	}
	p := unsafe.Add(base, pos>>3)
	lo := *(*uint64)(p)
	hi := uint64(*(*uint8)(unsafe.Add(p, 8)))
	s := pos & 7
	return lo>>s | hi<<(64-s)
}

// riceFast is riceWin where the result is only used when the code is
// well formed: the unary count is taken from w with its top bit set, so
// that the trailing-zero count needs no zero test (q <= 63; a count of 24
// or more is an escape or missing bits either way), and the shifts are
// taken modulo 64 (a code with q >= 24 is rejected by the caller, and
// only such a code, k < 32, reaches a shift of 64 or more).
func riceFast(w uint64, k uint32) (u, l, q uint32) {
	q = uint32(bits.TrailingZeros64(w | 1<<63))
	return q<<(k&31) | uint32(w>>((q+1)&63))&(1<<(k&31)-1), q + 1 + k, q
}

// updateCoeffsFast is updateCoeffs on a slot array: the fresh points
// decoded in one call per slot (decodeFresh, or curveDecodeAsm), with
// format.DecodePoint's float32 operations in its order (dequantise; for a
// rotation with a dropped component, 1 - a0² - a1² - a2² left to right,
// its square root, the component put back at its place; the hemisphere
// of the point before), then format.CurveCoeffsV, whose linear case is
// written out here. decodeFresh has format.DecodePoint's body inlined
// rather than calling it per point: that function is too large for Go's
// inliner, and a call per point made forward playback measurably slower.
func updateCoeffsFast(cs *slotWords, kind uint32, step float32) {
	ring := ringOf(cs)
	head := cs[format.SlHead] & 3
	params := cs[format.SlParams]
	mode := params & 7
	fresh := min(cs[format.SlFresh], 4)
	rot := kind == uint32(format.TrackRotation)
	if curveHasAsm {
		var r uint32
		if rot {
			r = 1
		}
		curveDecodeAsm(cs, r, step)
	} else {
		decodeFresh(ring, head, mode, fresh, rot, step)
	}
	r0, r1, r2, r3 := &ring[head], &ring[(head+1)&3], &ring[(head+2)&3], &ring[(head+3)&3]
	t1, t2 := float32(r1[0]), float32(r2[0])
	c := (*[16]float32)(unsafe.Pointer(&cs[format.SlCoef]))
	var invH float32
	if h := t2 - t1; params>>30&1 != 0 && h > 0 {
		b1, b2 := format.RingValue(r1), format.RingValue(r2)
		for i := range 4 {
			c[i], c[4+i], c[8+i], c[12+i] = b1[i], b2[i]-b1[i], 0, 0
		}
		invH = format.Recip(h)
	} else {
		invH = format.CurveCoeffsV(float32(r0[0]), t1, t2, float32(r3[0]), format.RingValue(r0), format.RingValue(r1), format.RingValue(r2), format.RingValue(r3), params>>30&1 == 1, c)
	}
	cs[format.SlT1] = math.Float32bits(t1)
	cs[format.SlInvH] = math.Float32bits(invH)
	cs[format.SlFresh] = 0
}

// decodeFresh is updateCoeffsFast's point decoding: the fresh newest
// points of a ring whose oldest is at head (mode: the segment's rotation
// mode; step: the track's grid step), oldest first, each rotation
// aligned to the point before it. curveDecodeAsm does the same in
// assembly.
func decodeFresh(ring *[4][format.RingWords]uint32, head, mode, fresh uint32, rot bool, step float32) {
	for k := 4 - fresh; k < 4; k++ {
		e := &ring[(head+k)&3]
		a0, a1, a2 := float32(int32(e[1]))*step, float32(int32(e[2]))*step, float32(int32(e[3]))*step
		v := [4]float32{a0, a1, a2, 0}
		if rot {
			if mode == format.ModeAll {
				v[3] = float32(int32(e[4])) * step
			} else {
				s := 1 - float32(a0*a0) - float32(a1*a1) - float32(a2*a2)
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
			if k > 0 && format.Dot4(&v, format.RingValue(&ring[(head+k-1)&3])) < 0 {
				v[0], v[1], v[2], v[3] = -v[0], -v[1], -v[2], -v[3]
			}
		}
		e[5], e[6], e[7], e[8] = math.Float32bits(v[0]), math.Float32bits(v[1]), math.Float32bits(v[2]), math.Float32bits(v[3])
	}
}
