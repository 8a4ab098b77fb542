package anim

import (
	"math"
	"math/bits"
)

// Quantisation and entropy coding.
//
// Every animated track has one grid step (float32, chosen by the
// compressor from the error budget); a component is stored as the integer
// idx with value = float32(idx) * step. Rotations drop one component per
// segment ("mode" 0..3, the one that stays largest, rebuilt as
// +sqrt(1 - a² - b² - c²) after making it positive) or, when no component
// stays away from zero over the segment, keep all four (mode 4).
//
// Integers are not stored as such: each point's indices are predicted from
// the track's two previous points by linear extrapolation in integer
// arithmetic (identical in compressor, sampler and a GLSL port), and the
// residual is zigzag-mapped and Rice-coded with a parameter chosen per
// track, segment and component. Time deltas are Rice-coded the same way.

const (
	// MaxIndexBits bounds |idx| < 2^MaxIndexBits (float32 stays exact).
	MaxIndexBits = 24
	// riceEscape is the longest unary prefix; a prefix of riceEscape zeros
	// is followed by the raw value in 32 bits.
	riceEscape = 24
	maxRiceK   = 24
	modeAll    = 4 // rotation mode: all four components stored
	// rotModeMin is the smallest magnitude the dropped rotation component
	// may reach within a segment (keeps the rebuild well conditioned).
	rotModeMin = 0.4
)

// ncompOf returns the number of stored components.
func ncompOf(kind, mode uint32) int {
	if kind == uint32(TrackRotation) && mode == modeAll {
		return 4
	}
	return 3
}

// dequant rebuilds a point's value from its stored indices.
func dequant(kind, mode uint32, step float32, idx *[4]int32) [4]float32 {
	var e [ringWords]uint32
	e[1], e[2], e[3], e[4] = uint32(idx[0]), uint32(idx[1]), uint32(idx[2]), uint32(idx[3])
	decodePoint(&e, nil, kind, mode, step)
	return *ringValue(&e)
}

// quantize returns the stored indices of v for a track segment.
func quantize(kind TrackKind, mode uint32, step float32, v [4]float64) [4]int32 {
	var idx [4]int32
	q := func(x float64) int32 {
		r := math.Round(x / float64(step))
		lim := float64(int32(1)<<MaxIndexBits - 1)
		return int32(math.Max(-lim, math.Min(lim, r)))
	}
	if kind != TrackRotation || mode == modeAll {
		for c := range ncompOf(uint32(kind), mode) {
			idx[c] = q(v[c])
		}
		return idx
	}
	if v[mode] < 0 {
		v = [4]float64(Quat(v).Neg())
	}
	k := 0
	for c := range 4 {
		if c != int(mode) {
			idx[k] = q(v[c])
			k++
		}
	}
	return idx
}

// rotationMode picks the component to drop over a segment's samples.
func rotationMode(vals [][4]float64) uint32 {
	best, bestMin := uint32(modeAll), rotModeMin
	for c := range 4 {
		m := math.Inf(1)
		for _, v := range vals {
			m = math.Min(m, math.Abs(v[c]))
		}
		if m >= bestMin {
			best, bestMin = uint32(c), m
		}
	}
	return best
}

// Predictors (a track segment picks the one that codes shortest).
const (
	predHold = 0 // the previous point's indices (best for jittery data)
	predLine = 1 // linear extrapolation through the two previous points
	predHalf = 2 // half that slope
	numPreds = 3
)

// predict extrapolates the index of a point at time t from the track's
// two previous points (ta, ia) and (tb, ib), tb >= ta, with predictor pm,
// in int32 arithmetic that cannot overflow for |ia|, |ib| < 2^24: the
// slope is used only when the points are at distinct times less than 2^16
// frames apart (always, within a segment; the bound keeps the divisor
// positive whatever a scribbled cursor holds), t - tb <= 63 and
// |ib - ia| < 2^23. Go's / truncates toward zero, as a GLSL port must.
func predict(ta, tb, t uint32, ia, ib int32, pm uint32) int32 {
	d := ib - ia
	if pm == predHold || tb <= ta || tb-ta >= 1<<16 || t-tb > 63 || d <= -(1<<23) || d >= 1<<23 {
		return ib
	}
	den := int32(tb - ta)
	if pm == predHalf {
		den *= 2
	}
	return ib + d*int32(t-tb)/den
}

func zigzag(r int32) uint32   { return uint32(r<<1) ^ uint32(r>>31) }
func unzigzag(u uint32) int32 { return int32(u>>1) ^ -int32(u&1) }

// riceLen is the code length of u with parameter k.
func riceLen(u uint32, k uint32) int {
	if q := u >> k; q < riceEscape {
		return int(q) + 1 + int(k)
	}
	return riceEscape + 32
}

// bestRiceK returns the parameter with the shortest total code.
func bestRiceK(us []uint32, maxK uint32) (k uint32, total int) {
	total = math.MaxInt
	for kk := uint32(0); kk <= maxK; kk++ {
		n := 0
		for _, u := range us {
			n += riceLen(u, kk)
		}
		if n < total {
			k, total = kk, n
		}
	}
	return k, total
}

// bitWriter appends LSB-first bit fields.
type bitWriter struct {
	words []uint32
	n     uint64 // bits written
}

func (w *bitWriter) write(v uint32, nbits int) {
	if nbits == 0 {
		return
	}
	v &= uint32(uint64(1)<<nbits - 1)
	for nbits > 0 {
		wi := int(w.n >> 5)
		for wi >= len(w.words) {
			w.words = append(w.words, 0)
		}
		sh := int(w.n & 31)
		w.words[wi] |= v << sh
		take := min(32-sh, nbits)
		v = uint32(uint64(v) >> take)
		nbits -= take
		w.n += uint64(take)
	}
}

// rice writes u: q = u>>k zero bits, a one, then the k low bits; or, for
// q >= riceEscape, riceEscape zeros and u in 32 bits.
func (w *bitWriter) rice(u uint32, k uint32) {
	if q := u >> k; q < riceEscape {
		w.write(0, int(q))
		w.write(1, 1)
		w.write(u, int(k))
		return
	}
	w.write(0, riceEscape)
	w.write(u, 32)
}

// readBits reads n <= 32 bits at bit position pos. The caller guarantees
// words[pos>>5+1] exists (streams end with two padding words).
func readBits(words []uint32, pos uint32, n uint32) uint32 {
	i := pos >> 5
	x := uint64(words[i]) | uint64(words[i+1])<<32
	return uint32(x>>(pos&31)) & uint32(uint64(1)<<n-1)
}

// readRice decodes a Rice code at pos and returns the value and the new
// position.
func readRice(words []uint32, pos uint32, k uint32) (uint32, uint32) {
	q := uint32(bits.TrailingZeros32(readBits(words, pos, 32)))
	if q >= riceEscape {
		return readBits(words, pos+riceEscape, 32), pos + riceEscape + 32
	}
	pos += q + 1
	return q<<k | readBits(words, pos, k), pos + k
}

// bitBuf reads a bit stream through a 64-bit buffer: the sampler's hot
// path. Refills read whole words; a read that starts inside the stream
// stays inside its padding (see streamPadWords).
type bitBuf struct {
	words []uint32
	buf   uint64 // next bits, LSB first
	n     uint32 // valid bits in buf (32..64 after a refill)
	next  uint32 // index of the next word to load
}

func (b *bitBuf) seek(words []uint32, pos uint32) {
	i := pos >> 5
	b.words = words
	b.buf = (uint64(words[i]) | uint64(words[i+1])<<32) >> (pos & 31)
	b.n = 64 - pos&31
	b.next = i + 2
}

// pos returns the bit position of the next unread bit.
func (b *bitBuf) pos() uint32 { return b.next*32 - b.n }

func (b *bitBuf) refill() { b.buf, b.n, b.next = fill(b.words, b.buf, b.n, b.next) }

// fill tops up a bit buffer held in locals to at least 32 bits.
func fill(words []uint32, buf uint64, n, next uint32) (uint64, uint32, uint32) {
	if n < 32 {
		buf |= uint64(words[next]) << n
		n += 32
		next++
	}
	return buf, n, next
}

// bits reads n <= 32 bits.
func (b *bitBuf) bits(n uint32) uint32 {
	b.refill()
	v := uint32(b.buf) & uint32(uint64(1)<<n-1)
	b.buf >>= n
	b.n -= n
	return v
}

// rice decodes a Rice code with parameter k.
func (b *bitBuf) rice(k uint32) uint32 {
	if u, l, ok := riceFast(b.buf, b.n, k); ok {
		b.buf >>= l
		b.n -= l
		return u
	}
	return b.riceSlow(k)
}

// riceFast decodes a short Rice code from the front of buf (n valid bits)
// and returns its value and length; ok is false for codes that need more
// bits or the escape (riceSlow handles them). Small enough to inline.
func riceFast(buf uint64, n, k uint32) (u, l uint32, ok bool) {
	q := uint32(bits.TrailingZeros64(buf))
	l = q + 1 + k
	return q<<k | uint32(buf>>(q+1))&(1<<k-1), l, l <= n && q < riceEscape
}

func (b *bitBuf) riceSlow(k uint32) uint32 {
	b.refill()
	// Decode at the position, then reload there.
	u, p := readRice(b.words, b.pos(), k)
	b.seek(b.words, p)
	return u
}

// bitsFor returns the number of bits needed to store 0..n.
func bitsFor(n int) int { return bits.Len(uint(n)) }

// BitSquid reference quantisation (Frykholm, "The BitSquid low level
// animation system", 2009, https://bitsquid.blogspot.com/2009/11/), used
// only to measure what it costs in error: 10-bit smallest-three rotations
// and 16-bit positions over -10..10 m.

func bitsquidRotation(v [4]float64) [4]float64 {
	big := 0
	for i := 1; i < 4; i++ {
		if math.Abs(v[i]) > math.Abs(v[big]) {
			big = i
		}
	}
	if v[big] < 0 {
		v = [4]float64(Quat(v).Neg())
	}
	const b = 10
	step := math.Sqrt2 / float64(1<<b-1)
	var r [4]float64
	s := 1.0
	for i := range 4 {
		if i == big {
			continue
		}
		x := math.Round((v[i]+1/math.Sqrt2)/step)*step - 1/math.Sqrt2
		r[i] = x
		s -= x * x
	}
	r[big] = math.Sqrt(math.Max(0, s))
	return r
}

func bitsquidPosition(v [4]float64) [4]float64 {
	step := 20.0 / 65535
	for i := range 3 {
		x := math.Max(-10, math.Min(10, v[i]))
		v[i] = math.Round((x+10)/step)*step - 10
	}
	return v
}
