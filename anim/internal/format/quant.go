package format

import (
	"math"
	"math/bits"

	"github.com/vkjobs/vkjobs/anim/vmath"
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
	// RiceEscape is the longest unary prefix; a prefix of RiceEscape zeros
	// is followed by the raw value in 32 bits.
	RiceEscape = 24
	MaxRiceK   = 24
	ModeAll    = 4 // rotation mode: all four components stored
	// RotModeMin is the smallest magnitude the dropped rotation component
	// may reach within a segment (keeps the rebuild well conditioned).
	RotModeMin = 0.4
)

// NcompOf returns the number of stored components.
func NcompOf(kind, mode uint32) int {
	if kind == uint32(TrackRotation) && mode == ModeAll {
		return 4
	}
	return 3
}

// Dequant rebuilds a point's value from its stored indices.
func Dequant(kind, mode uint32, step float32, idx *[4]int32) [4]float32 {
	var e [RingWords]uint32
	e[1], e[2], e[3], e[4] = uint32(idx[0]), uint32(idx[1]), uint32(idx[2]), uint32(idx[3])
	DecodePoint(&e, nil, kind, mode, step)
	return *RingValue(&e)
}

// Quantize returns the stored indices of v for a track segment.
func Quantize(kind TrackKind, mode uint32, step float32, v [4]float64) [4]int32 {
	var idx [4]int32
	q := func(x float64) int32 {
		r := math.Round(x / float64(step))
		lim := float64(int32(1)<<MaxIndexBits - 1)
		return int32(math.Max(-lim, math.Min(lim, r)))
	}
	if kind != TrackRotation || mode == ModeAll {
		for c := range NcompOf(uint32(kind), mode) {
			idx[c] = q(v[c])
		}
		return idx
	}
	if v[mode] < 0 {
		v = [4]float64(vmath.Quat(v).Neg())
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

// RotationMode picks the component to drop over a segment's samples.
func RotationMode(vals [][4]float64) uint32 {
	best, bestMin := uint32(ModeAll), RotModeMin
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
	PredHold = 0 // the previous point's indices (best for jittery data)
	PredLine = 1 // linear extrapolation through the two previous points
	PredHalf = 2 // half that slope
	NumPreds = 3
)

// Predict extrapolates the index of a point at time t from the track's
// two previous points (ta, ia) and (tb, ib), tb >= ta, with predictor pm,
// in int32 arithmetic that cannot overflow for |ia|, |ib| < 2^24: the
// slope is used only when the points are at distinct times less than 2^16
// frames apart (always, within a segment; the bound keeps the divisor
// positive whatever a scribbled cursor holds), t - tb <= 63 and
// |ib - ia| < 2^23. Go's / truncates toward zero, as a GLSL port must.
func Predict(ta, tb, t uint32, ia, ib int32, pm uint32) int32 {
	d := ib - ia
	if pm == PredHold || tb <= ta || tb-ta >= 1<<16 || t-tb > 63 || d <= -(1<<23) || d >= 1<<23 {
		return ib
	}
	den := int32(tb - ta)
	if pm == PredHalf {
		den *= 2
	}
	return ib + d*int32(t-tb)/den
}

func Zigzag(r int32) uint32   { return uint32(r<<1) ^ uint32(r>>31) }
func Unzigzag(u uint32) int32 { return int32(u>>1) ^ -int32(u&1) }

// RiceLen is the code length of u with parameter k.
func RiceLen(u uint32, k uint32) int {
	if q := u >> k; q < RiceEscape {
		return int(q) + 1 + int(k)
	}
	return RiceEscape + 32
}

// BestRiceK returns the parameter with the shortest total code.
func BestRiceK(us []uint32, maxK uint32) (k uint32, total int) {
	total = math.MaxInt
	for kk := uint32(0); kk <= maxK; kk++ {
		n := 0
		for _, u := range us {
			n += RiceLen(u, kk)
		}
		if n < total {
			k, total = kk, n
		}
	}
	return k, total
}

// BitWriter appends LSB-first bit fields.
type BitWriter struct {
	Words []uint32
	N     uint64 // bits written
}

func (w *BitWriter) Write(v uint32, nbits int) {
	if nbits == 0 {
		return
	}
	v &= uint32(uint64(1)<<nbits - 1)
	for nbits > 0 {
		wi := int(w.N >> 5)
		for wi >= len(w.Words) {
			w.Words = append(w.Words, 0)
		}
		sh := int(w.N & 31)
		w.Words[wi] |= v << sh
		take := min(32-sh, nbits)
		v = uint32(uint64(v) >> take)
		nbits -= take
		w.N += uint64(take)
	}
}

// rice writes u: q = u>>k zero bits, a one, then the k low bits; or, for
// q >= RiceEscape, RiceEscape zeros and u in 32 bits.
func (w *BitWriter) Rice(u uint32, k uint32) {
	if q := u >> k; q < RiceEscape {
		w.Write(0, int(q))
		w.Write(1, 1)
		w.Write(u, int(k))
		return
	}
	w.Write(0, RiceEscape)
	w.Write(u, 32)
}

// ReadBits reads n <= 32 bits at bit position pos. The caller guarantees
// words[pos>>5+1] exists (streams end with two padding words).
func ReadBits(words []uint32, pos uint32, n uint32) uint32 {
	i := pos >> 5
	x := uint64(words[i]) | uint64(words[i+1])<<32
	return uint32(x>>(pos&31)) & uint32(uint64(1)<<n-1)
}

// ReadRice decodes a Rice code at pos and returns the value and the new
// position.
func ReadRice(words []uint32, pos uint32, k uint32) (uint32, uint32) {
	q := uint32(bits.TrailingZeros32(ReadBits(words, pos, 32)))
	if q >= RiceEscape {
		return ReadBits(words, pos+RiceEscape, 32), pos + RiceEscape + 32
	}
	pos += q + 1
	return q<<k | ReadBits(words, pos, k), pos + k
}

// BitBuf reads a bit stream through a 64-bit buffer: the sampler's hot
// path. Refills read whole words; a read that starts inside the stream
// stays inside its padding (see StreamPadWords).
type BitBuf struct {
	Words []uint32
	Buf   uint64 // next bits, LSB first
	N     uint32 // valid bits in buf (32..64 after a refill)
	Next  uint32 // index of the next word to load
}

func (b *BitBuf) Seek(words []uint32, pos uint32) {
	i := pos >> 5
	b.Words = words
	b.Buf = (uint64(words[i]) | uint64(words[i+1])<<32) >> (pos & 31)
	b.N = 64 - pos&31
	b.Next = i + 2
}

// pos returns the bit position of the next unread bit.
func (b *BitBuf) Pos() uint32 { return b.Next*32 - b.N }

func (b *BitBuf) Refill() { b.Buf, b.N, b.Next = Fill(b.Words, b.Buf, b.N, b.Next) }

// Fill tops up a bit buffer held in locals to at least 32 bits.
func Fill(words []uint32, buf uint64, n, next uint32) (uint64, uint32, uint32) {
	if n < 32 {
		buf |= uint64(words[next]) << n
		n += 32
		next++
	}
	return buf, n, next
}

// bits reads n <= 32 bits.
func (b *BitBuf) Bits(n uint32) uint32 {
	b.Refill()
	v := uint32(b.Buf) & uint32(uint64(1)<<n-1)
	b.Buf >>= n
	b.N -= n
	return v
}

// rice decodes a Rice code with parameter k.
func (b *BitBuf) Rice(k uint32) uint32 {
	if u, l, ok := RiceFast(b.Buf, b.N, k); ok {
		b.Buf >>= l
		b.N -= l
		return u
	}
	return b.RiceSlow(k)
}

// RiceFast decodes a short Rice code from the front of buf (n valid bits)
// and returns its value and length; ok is false for codes that need more
// bits or the escape (riceSlow handles them). Small enough to inline.
func RiceFast(buf uint64, n, k uint32) (u, l uint32, ok bool) {
	q := uint32(bits.TrailingZeros64(buf))
	l = q + 1 + k
	return q<<k | uint32(buf>>(q+1))&(1<<k-1), l, l <= n && q < RiceEscape
}

func (b *BitBuf) RiceSlow(k uint32) uint32 {
	b.Refill()
	// Decode at the position, then reload there.
	u, p := ReadRice(b.Words, b.Pos(), k)
	b.Seek(b.Words, p)
	return u
}

// BitsFor returns the number of bits needed to store 0..n.
func BitsFor(n int) int { return bits.Len(uint(n)) }

// BitSquid reference quantisation (Frykholm, "The BitSquid low level
// animation system", 2009, https://bitsquid.blogspot.com/2009/11/), used
// only to measure what it costs in error: 10-bit smallest-three rotations
// and 16-bit positions over -10..10 m.

func BitsquidRotation(v [4]float64) [4]float64 {
	big := 0
	for i := 1; i < 4; i++ {
		if math.Abs(v[i]) > math.Abs(v[big]) {
			big = i
		}
	}
	if v[big] < 0 {
		v = [4]float64(vmath.Quat(v).Neg())
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

func BitsquidPosition(v [4]float64) [4]float64 {
	step := 20.0 / 65535
	for i := range 3 {
		x := math.Max(-10, math.Min(10, v[i]))
		v[i] = math.Round((x+10)/step)*step - 10
	}
	return v
}
