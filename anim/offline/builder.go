package offline

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// wbuf builds a record as words.
type wbuf struct{ w []uint32 }

func (b *wbuf) pos() uint32         { return uint32(len(b.w) * 4) }
func (b *wbuf) add(v ...uint32)     { b.w = append(b.w, v...) }
func (b *wbuf) f32(v float32)       { b.w = append(b.w, math.Float32bits(v)) }
func (b *wbuf) set(i int, v uint32) { b.w[i] = v }
func (b *wbuf) zeros(n int)         { b.w = append(b.w, make([]uint32, n)...) }
func (b *wbuf) bytes(s []byte) {
	for len(s)%4 != 0 {
		s = append(s[:len(s):len(s)], 0)
	}
	for i := 0; i < len(s); i += 4 {
		b.w = append(b.w, binary.LittleEndian.Uint32(s[i:]))
	}
}

// strings writes a string table.
func (b *wbuf) strings(ss []string) {
	off := uint32(0)
	b.add(0)
	var chars []byte
	for _, s := range ss {
		chars = append(chars, s...)
		off += uint32(len(s))
		b.add(off)
	}
	b.bytes(chars)
}

func encodeSkeleton(s *Skeleton) []uint32 {
	n := s.NumBones()
	var b wbuf
	b.zeros(format.SkelHeaderSize / 4)
	b.set(0, format.SkelTag)
	b.set(2, uint32(n))
	b.set(3, b.pos())
	for _, p := range s.Parents {
		b.add(uint32(p))
	}
	b.set(4, b.pos())
	for _, r := range s.Rest {
		for _, v := range storeWords(r) {
			b.f32(v)
		}
	}
	b.set(5, b.pos())
	b.strings(append(append([]string(nil), s.Names...), s.Name))
	if s.InverseBind != nil {
		b.set(6, b.pos())
		for _, m := range s.InverseBind {
			for _, v := range m {
				b.f32(v)
			}
		}
	}
	if s.SkinJoint != nil {
		b.set(7, b.pos())
		for _, j := range s.SkinJoint {
			b.add(uint32(j))
		}
	}
	b.set(1, b.pos())
	return b.w
}

// poseWords returns a transform in the local pose layout (anim.PoseFloats:
// rotation, translation, scale).
func poseWords(t Transform) [12]float32 {
	return [12]float32{
		float32(t.R[0]), float32(t.R[1]), float32(t.R[2]), float32(t.R[3]),
		float32(t.T[0]), float32(t.T[1]), float32(t.T[2]), 0,
		float32(t.S[0]), float32(t.S[1]), float32(t.S[2]), 0,
	}
}

// storeWords returns a transform in the blob's storage order for rest
// and default poses (translation, rotation, scale: the order of a
// bone's tracks).
func storeWords(t Transform) [12]float32 {
	return [12]float32{
		float32(t.T[0]), float32(t.T[1]), float32(t.T[2]), 0,
		float32(t.R[0]), float32(t.R[1]), float32(t.R[2]), float32(t.R[3]),
		float32(t.S[0]), float32(t.S[1]), float32(t.S[2]), 0,
	}
}

// encodeClip writes a clip record; skelRel is the offset from the record
// to its skeleton.
func (cc *CompressedClip) encodeClip(skelRel int32) []uint32 {
	var b wbuf
	b.zeros(format.ClipHeaderSize / 4)
	b.set(format.ChTag, format.ClipTag)
	b.set(format.ChSkeleton, uint32(skelRel))
	b.set(format.ChBones, uint32(cc.Bones))
	b.set(format.ChRate, math.Float32bits(float32(cc.Rate)))
	b.set(format.ChFrames, uint32(cc.Frames))
	b.set(format.ChSegFrames, uint32(cc.SegFrames))
	b.set(format.ChSegments, uint32(cc.numSegments()))
	b.set(format.ChTolerance, math.Float32bits(float32(cc.Tolerance)))
	if cc.Codec == anim.CodecUniform {
		b.set(format.ChFlags, format.ClipUniform)
		b.set(format.ChSlots, uint32(len(cc.uniTracks)))
		b.set(format.ChCursorWords, anim.CursorHeaderWords)
	} else {
		b.set(format.ChSlots, uint32(len(cc.slots)))
		b.set(format.ChCursorWords, uint32(anim.CursorHeaderWords+anim.CursorSlotWords*len(cc.slots)))
	}
	b.set(format.ChDefault, b.pos())
	for _, v := range cc.Default {
		b.f32(v)
	}
	b.set(format.ChTracks, b.pos())
	if cc.Codec == anim.CodecUniform {
		for _, t := range cc.uniTracks {
			b.add(t, 0, 0, 0)
		}
		b.set(format.ChRanges, b.pos())
		for _, v := range cc.uniRanges {
			b.f32(v)
		}
	}
	for _, sl := range cc.slots {
		b.add(uint32(sl.bone)|uint32(sl.kind)<<16, uint32(sl.absBits), math.Float32bits(sl.step), 0)
	}
	b.set(format.ChSegTable, b.pos())
	b.add(cc.segBits...)
	b.set(format.ChStream, b.pos())
	b.set(format.ChStreamWords, uint32(len(cc.stream)))
	b.add(cc.stream...)
	b.set(format.ChEvents, uint32(len(cc.Events)))
	b.set(format.ChEventTable, b.pos())
	for _, e := range cc.Events {
		b.f32(e.Time)
		b.add(uint32(e.Type) | uint32(e.Bone)<<16)
	}
	b.set(format.ChName, b.pos())
	b.set(format.ChNameLen, uint32(len(cc.Name)))
	b.bytes([]byte(cc.Name))
	b.set(format.ChSize, b.pos())
	return b.w
}

func (cc *CompressedClip) recordBytes() int { return len(cc.encodeClip(0)) * 4 }

// Builder collects skeletons and compressed clips and writes one blob.
// The zero value is ready to use.
type Builder struct {
	skels    []*Skeleton
	clips    []*CompressedClip
	clipSkel []int
}

// AddSkeleton adds a skeleton and returns its index for AddClip.
func (b *Builder) AddSkeleton(s *Skeleton) int {
	b.skels = append(b.skels, s)
	return len(b.skels) - 1
}

// AddClip adds a compressed clip of skeleton index skel.
func (b *Builder) AddClip(skel int, c *CompressedClip) error {
	if c == nil {
		return fmt.Errorf("anim: AddClip: nil clip")
	}
	if skel < 0 || skel >= len(b.skels) {
		return fmt.Errorf("anim: AddClip %q: skeleton %d of %d", c.Name, skel, len(b.skels))
	}
	if n := b.skels[skel].NumBones(); n != c.Bones {
		return fmt.Errorf("anim: AddClip %q: clip has %d bones, skeleton %d", c.Name, c.Bones, n)
	}
	b.clips = append(b.clips, c)
	b.clipSkel = append(b.clipSkel, skel)
	return nil
}

// Bytes writes the blob: header, directories, skeletons, clips.
func (b *Builder) Bytes() ([]byte, error) {
	for i, s := range b.skels {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("anim: Builder: skeleton %d: %w", i, err)
		}
	}
	var w wbuf
	w.zeros(format.BlobHeaderSize / 4)
	w.set(0, format.BlobMagic)
	w.set(1, format.BlobVersion)
	w.set(4, uint32(len(b.skels)))
	w.set(5, w.pos())
	w.zeros(len(b.skels))
	w.set(6, uint32(len(b.clips)))
	w.set(7, w.pos())
	w.zeros(len(b.clips))
	skelOff := make([]uint32, len(b.skels))
	for i, s := range b.skels {
		skelOff[i] = w.pos()
		w.set(format.BlobHeaderSize/4+i, skelOff[i])
		w.add(encodeSkeleton(s)...)
	}
	clipDir := int(w.w[7] / 4)
	clipOff := make([]uint32, len(b.clips))
	for i, c := range b.clips {
		clipOff[i] = w.pos()
		w.set(clipDir+i, clipOff[i])
		w.add(c.encodeClip(int32(skelOff[b.clipSkel[i]]) - int32(clipOff[i]))...)
	}
	w.set(2, w.pos())
	out := make([]byte, len(w.w)*4)
	for i, v := range w.w {
		binary.LittleEndian.PutUint32(out[4*i:], v)
	}
	// A curve clip's identity (format.ClipIdentity) covers its own bytes,
	// so it is written last, before the blob's checksum, which covers it.
	for i, c := range b.clips {
		if c.Codec != anim.CodecCurve {
			continue
		}
		rec := out[clipOff[i]:]
		rec = rec[:binary.LittleEndian.Uint32(rec[4*format.ChSize:])]
		binary.LittleEndian.PutUint32(rec[4*format.ChIdentity:], format.ClipIdentity(rec))
	}
	binary.LittleEndian.PutUint32(out[12:], crc32.Checksum(out[16:], format.Castagnoli))
	return out, nil
}
