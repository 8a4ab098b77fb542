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
func sampleUniform(words []uint32, clip uint32, h []uint32, f float32, pose []float32, kindOff *[4]int) {
	nt := int(h[format.ChSlots])
	frames := h[format.ChFrames]
	base := clip / 4
	tracks := words[base+h[format.ChTracks]/4:]
	tracks = tracks[:nt*format.TrackDescWords]
	ranges := words[base+h[format.ChRanges]/4:]
	ranges = ranges[:nt*8]
	segt := words[base+h[format.ChSegTable]/4:]
	segt = segt[:h[format.ChSegments]+1]
	stream := words[base+h[format.ChStream]/4:]
	stream = stream[:h[format.ChStreamWords]]
	sb := streamBytes(stream)

	f0 := uint32(f)
	alpha := f - float32(f0)
	f1 := min(f0+1, frames-1)
	shift := uint32(bits.TrailingZeros32(h[format.ChSegFrames])) & 31
	mask := uint32(1)<<shift - 1
	seg0, seg1 := segt[f0>>shift], segt[f1>>shift]
	data := uint32(format.UniformHeaderBytes(nt)) * 8
	bit0 := seg0 + data + (f0&mask)*stream[seg0>>5]
	bit1 := seg1 + data + (f1&mask)*stream[seg1>>5]
	var buf uniformBuf
	for i0 := 0; i0 < nt; i0 += uniformChunk {
		i1 := min(i0+uniformChunk, nt)
		rng := ranges[8*i0 : 8*i1]
		if seg0 == seg1 {
			bit0, bit1 = uniformDecodeSame(sb, rng, seg0, nt, i0, bit0, bit1, &buf)
		} else {
			bit0 = uniformDecodeFrame(sb, rng, seg0, nt, i0, bit0, &buf, 0)
			bit1 = uniformDecodeFrame(sb, rng, seg1, nt, i0, bit1, &buf, 1)
		}
		buf.place(tracks[format.TrackDescWords*i0:format.TrackDescWords*i1], kindOff, len(pose))
		uniformFinish(&buf, i1-i0, alpha, pose)
	}
}

// uniformChunk is how many tracks sampleUniform decodes per pass.
const uniformChunk = 32

// uniformBuf holds a chunk of tracks' two decoded frames, structure of
// arrays (the finish works on eight tracks at a time in its assembly
// version): stored component c (in stored order, format.UniformKeep) of
// track k's frame f is q[f][c][k]; drop[f][k] is the dropped component
// (translations and scales: 3, w); off[k] is the
// track's offset in the pose and mask[k] which of its four floats the
// finish writes (all ones: written; x, y, z for translations and scales,
// all four for rotations; none for tracks past the chunk's end).
type uniformBuf struct {
	q    [2][3][uniformChunk]float32
	drop [2][uniformChunk]uint32
	rot  [uniformChunk]int32 // -1: a rotation
	off  [uniformChunk]int32
	mask [uniformChunk][4]int32
}

// place fills off, rot and mask for the chunk's tracks (descriptors
// tracks; a pose of poseLen floats; validated: every offset + 4 is within
// it) and clears the lanes after them up to a multiple of eight.
func (b *uniformBuf) place(tracks []uint32, kindOff *[4]int, poseLen int) {
	n := len(tracks) / format.TrackDescWords
	for k := range n {
		d := tracks[format.TrackDescWords*k]
		kind := d >> 16
		o := int(d&0xffff)*PoseFloats + kindOff[kind&3]
		if o+4 > poseLen {
			o = 0 // not reached: validated clips fit the pose
		}
		r := -int32(b2u(kind == uint32(format.TrackRotation)))
		b.off[k&(uniformChunk-1)] = int32(o)
		b.rot[k&(uniformChunk-1)] = r
		b.mask[k&(uniformChunk-1)] = [4]int32{-1, -1, -1, r}
	}
	for k := n; k < uniformChunk && k&7 != 0; k++ {
		b.off[k], b.rot[k], b.mask[k] = 0, 0, [4]int32{}
	}
}

func b2u(x bool) uint32 {
	if x {
		return 1
	}
	return 0
}

// uniformDecodeSame decodes tracks [i0, i0+len(rng)/8) of two frames of
// the segment at stream bit seg, whose data for track i0 start at bits
// bit0 and bit1: each track's rate byte, ranges and dequantisation
// constants serve both. It returns the bit positions after the last.
func uniformDecodeSame(sb []byte, rng []uint32, seg uint32, nt, i0 int, bit0, bit1 uint32, buf *uniformBuf) (uint32, uint32) {
	rateAt := seg>>3 + 4 + uint32(i0)
	rngAt := seg>>3 + 4 + uint32(nt) + 6*uint32(i0)
	q0, q1 := &buf.q[0], &buf.q[1]
	for k := 0; 8*k+8 <= len(rng); k++ {
		rb := streamByte(sb, rateAt+uint32(k))
		code := rb & 15
		drop := rb >> 4 & 3
		n := format.UniformLadder[code]
		rg := load64(sb, rngAt+6*uint32(k))
		cr := (*[8]uint32)(rng[8*k : 8*k+8])
		// The stored components (format.UniformKeep[drop]), without a load.
		j0, j1, j2 := (drop-1)>>31, 1+(drop-2)>>31, 2+(drop-3)>>31
		kk := k & (uniformChunk - 1)
		buf.drop[0][kk], buf.drop[1][kk] = drop, drop
		if n == 0 {
			x := format.UniformDQ0(format.F32(cr[j0]), format.F32(cr[4|j0]), uint32(rg)&0xffff)
			y := format.UniformDQ0(format.F32(cr[j1]), format.F32(cr[4|j1]), uint32(rg>>16)&0xffff)
			z := format.UniformDQ0(format.F32(cr[j2]), format.F32(cr[4|j2]), uint32(rg>>32)&0xffff)
			q0[0][kk], q0[1][kk], q0[2][kk] = x, y, z
			q1[0][kk], q1[1][kk], q1[2][kk] = x, y, z
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
		q0[0][kk] = ax + float32(bx*float32(uint32(w0&m)))
		q0[1][kk] = ay + float32(by*float32(uint32(w0>>n&m)))
		q0[2][kk] = az + float32(bz*float32(uint32(w0>>(2*n)&m)))
		q1[0][kk] = ax + float32(bx*float32(uint32(w1&m)))
		q1[1][kk] = ay + float32(by*float32(uint32(w1>>n&m)))
		q1[2][kk] = az + float32(bz*float32(uint32(w1>>(2*n)&m)))
	}
	return bit0, bit1
}

// uniformDecodeFrame decodes tracks [i0, i0+len(rng)/8) of one frame of
// the segment at stream bit seg (track i0's data at bit) into buf's frame
// fr (0 or 1). It returns the bit position after the last.
func uniformDecodeFrame(sb []byte, rng []uint32, seg uint32, nt, i0 int, bit uint32, buf *uniformBuf, fr int) uint32 {
	rateAt := seg>>3 + 4 + uint32(i0)
	rngAt := seg>>3 + 4 + uint32(nt) + 6*uint32(i0)
	q := &buf.q[fr&1]
	drops := &buf.drop[fr&1]
	for k := 0; 8*k+8 <= len(rng); k++ {
		rb := streamByte(sb, rateAt+uint32(k))
		code := rb & 15
		drop := rb >> 4 & 3
		n := format.UniformLadder[code]
		rg := load64(sb, rngAt+6*uint32(k))
		cr := (*[8]uint32)(rng[8*k : 8*k+8])
		j0, j1, j2 := (drop-1)>>31, 1+(drop-2)>>31, 2+(drop-3)>>31
		kk := k & (uniformChunk - 1)
		drops[kk] = drop
		e0, e1, e2 := format.F32(cr[4|j0]), format.F32(cr[4|j1]), format.F32(cr[4|j2])
		if n == 0 {
			q[0][kk] = format.F32(cr[j0]) + float32(e0*float32(float32(uint32(rg)&0xffff)*format.U65535))
			q[1][kk] = format.F32(cr[j1]) + float32(e1*float32(float32(uint32(rg>>16)&0xffff)*format.U65535))
			q[2][kk] = format.F32(cr[j2]) + float32(e2*float32(float32(uint32(rg>>32)&0xffff)*format.U65535))
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
		q[0][kk] = ax + float32(bx*float32(uint32(w&m)))
		q[1][kk] = ay + float32(by*float32(uint32(w>>n&m)))
		q[2][kk] = az + float32(bz*float32(uint32(w>>(2*n)&m)))
	}
	return bit
}

// uniformFinishGo interpolates the chunk's first n decoded tracks into
// the pose: translations and scales linearly; rotations get their dropped
// component rebuilt and put in place (x, y, z, w: the order of the spec's
// sums), then the lerp of the pair aligned to one hemisphere, normalised
// (nlerp). uniformFinishAVX2 is the same, eight tracks at a time.
func uniformFinishGo(b *uniformBuf, n int, alpha float32, pose []float32) {
	for k := range min(n, uniformChunk) {
		o := int(b.off[k])
		p := pose[o : o+4 : o+4]
		a0, b0, c0 := b.q[0][0][k], b.q[0][1][k], b.q[0][2][k]
		a1, b1, c1 := b.q[1][0][k], b.q[1][1][k], b.q[1][2][k]
		if b.rot[k] == 0 {
			p[0] = a0 + float32((a1-a0)*alpha)
			p[1] = b0 + float32((b1-b0)*alpha)
			p[2] = c0 + float32((c1-c0)*alpha)
			continue
		}
		qx0, qy0, qz0, qw0 := uniformPlace(b.drop[0][k], a0, b0, c0)
		qx1, qy1, qz1, qw1 := uniformPlace(b.drop[1][k], a1, b1, c1)
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

// uniformFinish is uniformFinishAVX2 where the CPU has it (unless a test
// sets format.PureGo), else uniformFinishGo.
func uniformFinish(b *uniformBuf, n int, alpha float32, pose []float32) {
	if uniformFast && !format.PureGo {
		uniformFinishAVX2(b, (n+7)/8, alpha, pose)
		return
	}
	uniformFinishGo(b, n, alpha, pose)
}
