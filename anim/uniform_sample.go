package anim

import (
	"math"
	"math/bits"
	"unsafe"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// streamBytes returns the stream words as bytes (a view of the same
// memory, bounded by it): byte k of the blob's little-endian stream is
// streamByte(sb, k), and load64 reads 8 of them from any byte.
func streamBytes(stream []uint32) []byte {
	if len(stream) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&stream[0])), 4*len(stream))
}

// streamByte returns byte k of the little-endian stream.
func streamByte(sb []byte, k uint32) uint32 {
	if hostLittleEndian {
		return uint32(sb[k])
	}
	return uint32(sb[k&^3+3-k&3])
}

// load64 returns the 8 little-endian stream bytes from byte k (a stream
// read at bit b is load64(sb, b>>3) >> (b&7): at least 57 bits).
func load64(sb []byte, k uint32) uint64 {
	if hostLittleEndian {
		// One bounds check (of the last byte) instead of two, then an
		// unaligned 8-byte load, which amd64 and arm64 do in one
		// instruction.
		i := int(k)
		_ = sb[i+7]
		return *(*uint64)(unsafe.Pointer(&sb[i]))
	}
	sb = sb[k&^3 : k&^3+12]
	var v uint64
	for i := range uint32(8) {
		j := k&3 + i
		v |= uint64(sb[j&^3+3-j&3]) << (8 * i)
	}
	return v
}

// sampleUniform samples the animated tracks of a uniform clip (header h,
// validated) at frame position f (clamped and snapped by sampleOne, which
// has written the default pose) into pose. It reads no cursor: it decodes
// frames floor(f) and the next (each from its own segment) and
// interpolates, rotations as a normalised lerp in one hemisphere.
//
// Tracks go in chunks through two passes: decoding (short, independent
// integer and float work) into a small buffer on the stack, then the
// interpolation, whose rotations are long dependent chains (two square
// roots to rebuild, the hemisphere test, the norm's square root and
// division): kept short, consecutive tracks' chains overlap in the CPU.
//
// This is the pure-Go path and the reference; on amd64 CPUs with AVX2
// and BMI2 sampleUniformFast (uniform_amd64.go) computes the same poses,
// bit for bit, in assembly.
func sampleUniform(words []uint32, clip uint32, h []uint32, f float32, pose []float32, kindOff *[4]int) {
	if uniformFast && !format.PureGo {
		sampleUniformFast(words, clip, h, f, pose, kindOff)
		return
	}
	c := locateUniform(words, clip, h, f)
	nt, tracks, ranges, sb, alpha := c.nt, c.tracks, c.ranges, c.sb, c.alpha
	seg0, seg1, bit0, bit1 := c.seg0, c.seg1, c.bit0, c.bit1
	var buf [uniformChunk]uniformDecoded
	for i0 := 0; i0 < nt; i0 += uniformChunk {
		i1 := min(i0+uniformChunk, nt)
		rng := ranges[8*i0 : 8*i1]
		if seg0 == seg1 {
			bit0, bit1 = uniformDecodeSame(sb, rng, seg0, nt, i0, bit0, bit1, &buf)
		} else {
			bit0 = uniformDecodeFrame(sb, rng, seg0, nt, i0, bit0, &buf, 0)
			bit1 = uniformDecodeFrame(sb, rng, seg1, nt, i0, bit1, &buf, 3)
		}
		uniformFinish(buf[:i1-i0], tracks[format.TrackDescWords*i0:format.TrackDescWords*i1], kindOff, alpha, pose)
	}
}

// uniformChunk is how many tracks sampleUniform decodes per pass.
const uniformChunk = 32

// uniformDecoded is one track's two decoded frames: the three stored
// components of each (in stored order) and the dropped component of
// frame 0 | that of frame 1 << 8.
type uniformDecoded struct {
	v     [6]float32
	drops uint32
	_     uint32
}

// uniformDecodeSame decodes tracks [i0, i0+len(rng)/8) of two frames of
// the segment at stream bit seg, whose data for track i0 start at bits
// bit0 and bit1: each track's rate byte, ranges and dequantisation
// constants serve both. It returns the bit positions after the last.
func uniformDecodeSame(sb []byte, rng []uint32, seg uint32, nt, i0 int, bit0, bit1 uint32, buf *[uniformChunk]uniformDecoded) (uint32, uint32) {
	rateAt := seg>>3 + 4 + uint32(i0)
	rngAt := seg>>3 + 4 + uint32(nt) + 6*uint32(i0)
	for k := 0; 8*k+8 <= len(rng); k++ {
		rb := streamByte(sb, rateAt+uint32(k))
		code := rb & 15
		drop := rb >> 4 & 3
		n := format.UniformLadder[code]
		rg := load64(sb, rngAt+6*uint32(k))
		cr := (*[8]uint32)(rng[8*k : 8*k+8])
		// The stored components (format.UniformKeep[drop]), without a load.
		j0, j1, j2 := (drop-1)>>31, 1+(drop-2)>>31, 2+(drop-3)>>31
		e := &buf[k&(uniformChunk-1)]
		e.drops = drop | drop<<8
		v := &e.v
		if n == 0 {
			x := format.UniformDQ0(format.F32(cr[j0]), format.F32(cr[4|j0]), uint32(rg)&0xffff)
			y := format.UniformDQ0(format.F32(cr[j1]), format.F32(cr[4|j1]), uint32(rg>>16)&0xffff)
			z := format.UniformDQ0(format.F32(cr[j2]), format.F32(cr[4|j2]), uint32(rg>>32)&0xffff)
			v[0], v[1], v[2], v[3], v[4], v[5] = x, y, z, x, y, z
			continue
		}
		inv := format.UniformInv[code]
		e0, e1, e2 := format.F32(cr[4|j0]), format.F32(cr[4|j1]), format.F32(cr[4|j2])
		ax := format.F32(cr[j0]) + float32(e0*format.UniformByte[uint8(rg)])
		ay := format.F32(cr[j1]) + float32(e1*format.UniformByte[uint8(rg>>8)])
		az := format.F32(cr[j2]) + float32(e2*format.UniformByte[uint8(rg>>16)])
		bx := float32(float32(e0*format.UniformByte[uint8(rg>>24)]) * inv)
		by := float32(float32(e1*format.UniformByte[uint8(rg>>32)]) * inv)
		bz := float32(float32(e2*format.UniformByte[uint8(rg>>40)]) * inv)
		m := uint64(1)<<n - 1
		w0 := load64(sb, bit0>>3) >> (bit0 & 7)
		w1 := load64(sb, bit1>>3) >> (bit1 & 7)
		bit0 += 3 * n
		bit1 += 3 * n
		// (element by element: a composite literal goes through a
		// temporary on the stack)
		v[0] = ax + float32(bx*float32(uint32(w0&m)))
		v[1] = ay + float32(by*float32(uint32(w0>>n&m)))
		v[2] = az + float32(bz*float32(uint32(w0>>(2*n)&m)))
		v[3] = ax + float32(bx*float32(uint32(w1&m)))
		v[4] = ay + float32(by*float32(uint32(w1>>n&m)))
		v[5] = az + float32(bz*float32(uint32(w1>>(2*n)&m)))
	}
	return bit0, bit1
}

// uniformDecodeFrame decodes tracks [i0, i0+len(rng)/8) of one frame of
// the segment at stream bit seg (track i0's data at bit) into buf's
// components at+0..2 (at 0: frame 0; at 3: frame 1). It returns the bit
// position after the last.
func uniformDecodeFrame(sb []byte, rng []uint32, seg uint32, nt, i0 int, bit uint32, buf *[uniformChunk]uniformDecoded, at int) uint32 {
	rateAt := seg>>3 + 4 + uint32(i0)
	rngAt := seg>>3 + 4 + uint32(nt) + 6*uint32(i0)
	at &= 3
	for k := 0; 8*k+8 <= len(rng); k++ {
		rb := streamByte(sb, rateAt+uint32(k))
		code := rb & 15
		drop := rb >> 4 & 3
		n := format.UniformLadder[code]
		rg := load64(sb, rngAt+6*uint32(k))
		cr := (*[8]uint32)(rng[8*k : 8*k+8])
		j0, j1, j2 := (drop-1)>>31, 1+(drop-2)>>31, 2+(drop-3)>>31
		e := &buf[k&(uniformChunk-1)]
		if at == 0 {
			e.drops = drop
		} else {
			e.drops |= drop << 8
		}
		v := (*[3]float32)(e.v[at : at+3])
		e0, e1, e2 := format.F32(cr[4|j0]), format.F32(cr[4|j1]), format.F32(cr[4|j2])
		if n == 0 {
			v[0] = format.F32(cr[j0]) + float32(e0*float32(float32(uint32(rg)&0xffff)*format.U65535))
			v[1] = format.F32(cr[j1]) + float32(e1*float32(float32(uint32(rg>>16)&0xffff)*format.U65535))
			v[2] = format.F32(cr[j2]) + float32(e2*float32(float32(uint32(rg>>32)&0xffff)*format.U65535))
			continue
		}
		inv := format.UniformInv[code]
		m := uint64(1)<<n - 1
		w := load64(sb, bit>>3) >> (bit & 7)
		bit += 3 * n
		ax := format.F32(cr[j0]) + float32(e0*format.UniformByte[uint8(rg)])
		ay := format.F32(cr[j1]) + float32(e1*format.UniformByte[uint8(rg>>8)])
		az := format.F32(cr[j2]) + float32(e2*format.UniformByte[uint8(rg>>16)])
		bx := float32(float32(e0*format.UniformByte[uint8(rg>>24)]) * inv)
		by := float32(float32(e1*format.UniformByte[uint8(rg>>32)]) * inv)
		bz := float32(float32(e2*format.UniformByte[uint8(rg>>40)]) * inv)
		v[0] = ax + float32(bx*float32(uint32(w&m)))
		v[1] = ay + float32(by*float32(uint32(w>>n&m)))
		v[2] = az + float32(bz*float32(uint32(w>>(2*n)&m)))
	}
	return bit
}

// uniformFinish interpolates the decoded tracks (descriptors tracks) into
// the pose: translations and scales linearly; rotations get their dropped
// components rebuilt and put in place (x, y, z, w: the order of the
// spec's sums), then the lerp of the aligned pair, normalised.
func uniformFinish(buf []uniformDecoded, tracks []uint32, kindOff *[4]int, alpha float32, pose []float32) {
	for k := range buf {
		e := &buf[k]
		d := tracks[format.TrackDescWords*k]
		kind := d >> 16
		o := int(d&0xffff)*PoseFloats + kindOff[kind&3]
		p := pose[o : o+4 : o+4]
		v := &e.v
		if kind != uint32(format.TrackRotation) {
			p[0] = v[0] + float32((v[3]-v[0])*alpha)
			p[1] = v[1] + float32((v[4]-v[1])*alpha)
			p[2] = v[2] + float32((v[5]-v[2])*alpha)
			continue
		}
		qx0, qy0, qz0, qw0 := uniformPlace(e.drops&3, v[0], v[1], v[2])
		qx1, qy1, qz1, qw1 := uniformPlace(e.drops>>8&3, v[3], v[4], v[5])
		if float32(qx0*qx1)+float32(qy0*qy1)+float32(qz0*qz1)+float32(qw0*qw1) < 0 {
			qx1, qy1, qz1, qw1 = -qx1, -qy1, -qz1, -qw1
		}
		qx := qx0 + float32((qx1-qx0)*alpha)
		qy := qy0 + float32((qy1-qy0)*alpha)
		qz := qz0 + float32((qz1-qz0)*alpha)
		qw := qw0 + float32((qw1-qw0)*alpha)
		if nn := float32(qx*qx) + float32(qy*qy) + float32(qz*qz) + float32(qw*qw); nn > 0 {
			inv := 1 / float32(math.Sqrt(float64(nn)))
			p[0], p[1], p[2], p[3] = qx*inv, qy*inv, qz*inv, qw*inv
		} else {
			p[0], p[1], p[2], p[3] = 0, 0, 0, 1
		}
	}
}

// uniformPlace rebuilds a rotation from its three stored components a, b,
// c (in order) and returns x, y, z, w.
func uniformPlace(drop uint32, a, b, c float32) (x, y, z, w float32) {
	r := format.UniformRebuild(a, b, c)
	switch drop {
	case 0:
		return r, a, b, c
	case 1:
		return a, r, b, c
	case 2:
		return a, b, r, c
	}
	return a, b, c, r
}

// uniformAt is where a uniform clip's pose at frame f (fractional) is:
// the clip's arrays (track descriptors, ranges, the stream as bytes), the
// two frames' segments (stream bit positions) and the bit positions of
// their first track's data, and alpha, the weight of the second frame.
// sampleUniform and sampleUniformFast both start from it.
type uniformAt struct {
	nt                     int
	tracks, ranges         []uint32
	sb                     []byte
	alpha                  float32
	seg0, seg1, bit0, bit1 uint32
}

func locateUniform(words []uint32, clip uint32, h []uint32, f float32) (c uniformAt) {
	nt := int(h[format.ChSlots])
	frames := h[format.ChFrames]
	base := clip / 4
	c.nt = nt
	c.tracks = words[base+h[format.ChTracks]/4:][:nt*format.TrackDescWords]
	c.ranges = words[base+h[format.ChRanges]/4:][:nt*8]
	segt := words[base+h[format.ChSegTable]/4:]
	segt = segt[:h[format.ChSegments]+1]
	stream := words[base+h[format.ChStream]/4:]
	stream = stream[:h[format.ChStreamWords]]
	c.sb = streamBytes(stream)

	f0 := uint32(f)
	c.alpha = f - float32(f0)
	f1 := min(f0+1, frames-1)
	shift := uint32(bits.TrailingZeros32(h[format.ChSegFrames])) & 31
	mask := uint32(1)<<shift - 1
	c.seg0, c.seg1 = segt[f0>>shift], segt[f1>>shift]
	data := uint32(format.UniformHeaderBytes(nt)) * 8
	c.bit0 = c.seg0 + data + (f0&mask)*stream[c.seg0>>5]
	c.bit1 = c.seg1 + data + (f1&mask)*stream[c.seg1>>5]
	return c
}
