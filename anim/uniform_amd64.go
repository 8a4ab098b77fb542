//go:build !purego

package anim

import (
	"golang.org/x/sys/cpu"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// uniformHasAsm reports whether this CPU can run uniformFinishAVX2 and
// uniformDecodeSameAVX2.
var uniformHasAsm = cpu.X86.HasAVX2 && cpu.X86.HasBMI2

// uniformFast selects sampleUniformFast in sampleUniform (tests set
// format.PureGo to run the pure-Go path on the same machine).
var uniformFast = uniformHasAsm

// uniformFinishAVX2 is uniformFinish in AVX2 assembly (uniform_amd64.s)
// over the buffer's first n tracks, eight at a time (lanes), then
// transposed to (x, y, z, w) per track and stored under a mask (x, y, z,
// and w for a rotation; lanes past n store nothing): the same float32
// operations in the same order, without fused multiply-adds (sqrt and
// division are correctly rounded in both), so its poses are the Go
// path's bit for bit (TestUniformFinishAsm). Every offset in off must
// leave 4 floats in the pose (place's and uniformDecodeSameAVX2's do).
//
//go:noescape
func uniformFinishAVX2(b *uniformBuf, n int, alpha float32, pose []float32)

// uniformConsts are the tables uniformDecodeSameAVX2 reads (byte offsets
// 0, 64, 128, 132, 144, 208, 720: the assembly's): the bit ladder and
// 1/(2^n - 1) by rate code, 1/255 and 1/65535, the VPERMILPS control
// that picks the stored components (j0, j1, j2) by dropped component,
// and by rate code each stored component's shift (0, n, 2n) and mask
// 2^n - 1 as qwords.
type uniformConsts struct {
	ladder       [16]uint32
	inv          [16]float32
	u255, u65535 float32
	_            [2]uint32
	perm         [4][4]uint32
	shift, mask  [16][4]uint64
}

var uniformK = func() (k uniformConsts) {
	k.ladder, k.inv, k.u255, k.u65535 = format.UniformLadder, format.UniformInv, format.U255, format.U65535
	for d, kp := range format.UniformKeep {
		k.perm[d] = [4]uint32{uint32(kp[0]), uint32(kp[1]), uint32(kp[2]), 3}
	}
	for c, n := range format.UniformLadder {
		k.shift[c] = [4]uint64{0, uint64(n), 2 * uint64(n), 0}
		m := uint64(1)<<n - 1
		k.mask[c] = [4]uint64{m, m, m, m}
	}
	return k
}()

// uniformDecodeSameAVX2 is uniformDecodeSame's loop in AVX2 and BMI2
// assembly (uniform_amd64.s), into a uniformBuf: one track per iteration
// with its three components in the lanes of a register, the same float32
// operations in the same order (TestUniformAsmMatchesGo). It also fills
// the buffer's off and rot from the tracks' descriptors, as place does
// (an offset that would leave fewer than 4 of the pose's poseLen >= 4
// floats becomes 0). rateAt and rngAt are the byte offsets in sb of the
// first track's rate byte and range bytes, bit0 and bit1 the bit
// positions of its two frames' data; the caller has checked that every
// read is within sb (rng holds the n tracks' clip ranges). It returns the
// bit positions after the last track. (A version that took eight tracks
// at a time with gathers was slower than the Go loop on the development
// machine: see BENCHMARKS.md.)
//
//go:noescape
func uniformDecodeSameAVX2(sb []byte, rng []uint32, rateAt, rngAt, bit0, bit1 uint32, n int, buf *uniformBuf, k *uniformConsts, tracks []uint32, kindOff *[4]int, poseLen int) (uint32, uint32)

// sampleUniformFast is sampleUniform's fast path on amd64 CPUs with AVX2
// and BMI2: the same poses, bit for bit (TestUniformAsmMatchesGo in
// package offline, TestUniformFinishAsm), with the decoding of a chunk of
// tracks whose two frames share a segment (15 poses in 16) and the
// finish in assembly. The chunk's buffer is a structure of arrays
// (uniformBuf) so that the finish takes eight tracks at a time.
func sampleUniformFast(words []uint32, clip uint32, h []uint32, f float32, pose []float32, kindOff *[4]int) {
	if len(pose) < PoseFloats {
		return // not reached: a clip has a bone, and writeDefaultPose wrote it
	}
	c := locateUniform(words, clip, h, f)
	nt, tracks, ranges, sb, alpha := c.nt, c.tracks, c.ranges, c.sb, c.alpha
	seg0, seg1, bit0, bit1 := c.seg0, c.seg1, c.bit0, c.bit1
	var buf uniformBuf
	for i0 := 0; i0 < nt; i0 += uniformChunk {
		i1 := min(i0+uniformChunk, nt)
		rng := ranges[8*i0 : 8*i1]
		n := i1 - i0
		rateAt := seg0>>3 + 4 + uint32(i0)
		rngAt := seg0>>3 + 4 + uint32(nt) + 6*uint32(i0)
		// Every read of the assembly within the stream (always, for a
		// validated clip: the stream ends with padding words).
		tr := tracks[format.TrackDescWords*i0 : format.TrackDescWords*i1]
		if seg0 == seg1 && uint64(rngAt)+uint64(6*n)+8 <= uint64(len(sb)) &&
			(uint64(max(bit0, bit1))+uint64(3*19*n))/8+8 <= uint64(len(sb)) {
			bit0, bit1 = uniformDecodeSameAVX2(sb, rng, rateAt, rngAt, bit0, bit1, n, &buf, &uniformK, tr, kindOff, len(pose))
		} else {
			bit0 = uniformDecodeFrameBuf(sb, rng, seg0, nt, i0, bit0, &buf, 0)
			bit1 = uniformDecodeFrameBuf(sb, rng, seg1, nt, i0, bit1, &buf, 1)
			buf.place(tr, kindOff, len(pose))
		}
		uniformFinishAVX2(&buf, n, alpha, pose)
	}
}

// uniformBuf holds a chunk of tracks' two decoded frames, structure of
// arrays (the finish works on eight tracks at a time): stored component
// c (in stored order, format.UniformKeep) of track k's frame f is
// q[f][c][k]; drop[f][k] is the dropped component (translations and
// scales: 3, w); rot[k] is -1 for a rotation (the finish stores x, y, z
// and w) and 0 for a translation or scale (x, y, z); off[k] is the
// track's offset in the pose.
type uniformBuf struct {
	q    [2][3][uniformChunk]float32
	drop [2][uniformChunk]uint32
	rot  [uniformChunk]int32
	off  [uniformChunk]int32
}

// place fills off and rot for the chunk's tracks (descriptors tracks),
// as uniformDecodeSameAVX2 does: an offset that would leave fewer than 4
// of the pose's poseLen floats (none, in a validated clip) becomes 0.
func (b *uniformBuf) place(tracks []uint32, kindOff *[4]int, poseLen int) {
	for k := range min(len(tracks)/format.TrackDescWords, uniformChunk) {
		d := tracks[format.TrackDescWords*k]
		kind := d >> 16
		o := int(d&0xffff)*PoseFloats + kindOff[kind&3]
		if o+4 > poseLen {
			o = 0
		}
		b.off[k] = int32(o)
		b.rot[k] = 0
		if kind == uint32(format.TrackRotation) {
			b.rot[k] = -1
		}
	}
}

// uniformDecodeFrameBuf is uniformDecodeFrame into a uniformBuf: it decodes tracks [i0, i0+len(rng)/8) of one frame of
// the segment at stream bit seg (track i0's data at bit) into buf's frame
// fr (0 or 1). It returns the bit position after the last.
func uniformDecodeFrameBuf(sb []byte, rng []uint32, seg uint32, nt, i0 int, bit uint32, buf *uniformBuf, fr int) uint32 {
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
