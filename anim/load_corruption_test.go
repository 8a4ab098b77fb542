package anim_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

func corpusBlob(t testing.TB) []byte {
	sk := edgeSkeleton([]int32{-1, 0, 1, 0})
	sk.InverseBind = make([][16]float32, 4)
	for i := range sk.InverseBind {
		sk.InverseBind[i] = kernels.Identity()
		sk.InverseBind[i][13] = -0.05 * float32(i)
	}
	sk.SkinJoint = []int32{0, 1, 2, 3}
	var ccs []*offline.CompressedClip
	for i, fr := range []int{1, 2, 40, 40} {
		c := edgeClip(fmt.Sprintf("clip%d", i), 4, fr, 30, 4)
		if fr > 2 {
			c.Events = []anim.Event{{Time: 0, Type: 1}, {Time: 0.5, Type: 2, Bone: 3}, {Time: float32(c.Duration()), Type: 1, Bone: 2}}
		}
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.001, Codec: anim.Codec(i % 2), SegmentSeconds: 0.4, UniformSegmentFrames: 8})
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, cc)
	}
	return edgeBlob(t, sk, ccs...).Bytes()
}

// exercise uses every runtime call on a loaded blob; it must not panic.
// It returns how many sampled floats were not finite.
func exercise(bl *anim.Blob) (nonFinite int) {
	pose := make([]kernels.Transform, 64)
	for i := range bl.NumClips() {
		cv := bl.Clip(i)
		_ = cv.Name()
		_ = cv.Codec()
		_ = cv.Rate()
		_ = cv.Frames()
		_ = cv.AnimatedTracks()
		_ = cv.Bytes()
		d := cv.Duration()
		ev := cv.AppendEvents(nil, -1, d+1)
		for k := range cv.NumEvents() {
			_ = cv.Event(k)
		}
		_ = ev
		sv := cv.Skeleton()
		_ = sv.Name()
		par := sv.Parents(nil)
		for b := range sv.Bones() {
			_ = sv.BoneName(b)
		}
		rest := sv.RestPose(nil)
		_ = sv.InverseBind(nil)
		_ = sv.InverseBindMatrices(nil)
		if len(par) > 0 {
			model := make([]float32, len(par)*16)
			_ = anim.LocalToModel(par, rest, model, 0, 1)
		}
		if cv.Bones() > len(pose) || cv.CursorWords() > 1<<16 {
			continue
		}
		cur := make([]uint32, cv.CursorWords())
		for _, tm := range []float32{0, d / 3, d / 2, d, d / 4, float32(math.NaN()), 1e9, d * 0.9, 0.01} {
			if err := cv.Sample(tm, cur, pose); err != nil {
				continue
			}
			for _, p := range pose[:cv.Bones()] {
				for _, x := range append(append(p.Rot[:], p.Trans[:]...), p.Scale[:]...) {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						nonFinite++
					}
				}
			}
		}
		job := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: cv.Offset(), Time: d / 2}, {Clip: cv.Offset(), Time: 0}},
			Cursors: make([]uint32, 2*max(8, cv.CursorWords())), CursorStride: max(8, cv.CursorWords()), Poses: make([]float32, 2*max(1, cv.Bones())*12), Bones: max(1, cv.Bones())}
		_ = job.Run()
	}
	for i := range bl.NumSkeletons() {
		sv := bl.Skeleton(i)
		_ = sv.Name()
		_ = sv.Parents(nil)
		_ = sv.RestPose(nil)
		_ = sv.InverseBind(nil)
	}
	_, _ = bl.ClipByName("clip2")
	return nonFinite
}

func loadNoPanic(t *testing.T, what string, data []byte) (bl *anim.Blob, nonFinite int, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v", what, r)
		}
	}()
	bl, err = anim.Load(data)
	if err == nil {
		nonFinite = exercise(bl)
	}
	return bl, nonFinite, err
}

// Load refuses a blob truncated anywhere and never panics on corruption;
// whatever it accepts, every runtime call survives.
func TestLoadCorruption(t *testing.T) {
	data := corpusBlob(t)
	t.Logf("blob %d bytes", len(data))
	if bl, nf, err := loadNoPanic(t, "pristine", data); err != nil || nf != 0 {
		t.Fatalf("pristine: %v, %d non-finite", err, nf)
	} else if bl.NumClips() != 4 {
		t.Fatal("clips")
	}
	deadline := time.Now().Add(4 * time.Minute)
	for n := range len(data) {
		d := append([]byte(nil), data[:n]...)
		if _, _, err := loadNoPanic(t, fmt.Sprintf("truncated to %d", n), d); err == nil {
			t.Errorf("truncated to %d of %d bytes: accepted", n, len(data))
		}
	}
	// Concatenated with a truncated second copy.
	for n := 1; n < len(data); n += 4 {
		d := append(append([]byte(nil), data...), data[:n]...)
		if _, _, err := loadNoPanic(t, fmt.Sprintf("concat+%d", n), d); err == nil {
			t.Errorf("blob + %d bytes of another: accepted", n)
		}
	}
	accepted, nonFin := 0, 0
	for bit := range len(data) * 8 {
		if time.Now().After(deadline) {
			t.Logf("bit flips stopped at %d", bit)
			break
		}
		d := append([]byte(nil), data...)
		d[bit/8] ^= 1 << (bit % 8)
		fixCRC(d)
		_, nf, err := loadNoPanic(t, fmt.Sprintf("bit %d flipped", bit), d)
		if err == nil {
			accepted++
			if nf > 0 {
				nonFin++
				if nonFin <= 5 {
					t.Logf("bit %d (byte %d) flipped: accepted, %d non-finite pose floats", bit, bit/8, nf)
				}
			}
		}
	}
	t.Logf("single bit flips: %d accepted, %d of them sample non-finite", accepted, nonFin)
	for it := range 30000 {
		if time.Now().After(deadline) {
			break
		}
		rr := rand.New(rand.NewPCG(uint64(it), 9))
		d := append([]byte(nil), data...)
		for range 1 + rr.IntN(6) {
			d[16+rr.IntN(len(d)-16)] = byte(rr.Uint32())
		}
		fixCRC(d)
		if _, nf, err := loadNoPanic(t, fmt.Sprintf("random corruption %d", it), d); err == nil && nf > 0 {
			t.Logf("random corruption %d: accepted, %d non-finite pose floats", it, nf)
		}
	}
	special := []uint32{0, 0xffffffff, 0x7fc00000, 0x7f800000, 0xff800000, 0x80000000, 0x7fffffff, 1, 0x00800000, 0x4b800000}
	r := rand.New(rand.NewPCG(4, 4))
	for w := 0; w+4 <= len(data); w += 4 {
		for _, v := range special {
			d := append([]byte(nil), data...)
			binary.LittleEndian.PutUint32(d[w:], v)
			fixCRC(d)
			if _, nf, err := loadNoPanic(t, fmt.Sprintf("word %d = %#x", w/4, v), d); err == nil && nf > 0 {
				t.Logf("word %d = %#x: accepted, %d non-finite pose floats", w/4, v, nf)
			}
		}
		d := append([]byte(nil), data...)
		binary.LittleEndian.PutUint32(d[w:], r.Uint32())
		fixCRC(d)
		loadNoPanic(t, fmt.Sprintf("word %d random", w/4), d)
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fixCRC rewrites the blob's checksum so that a corruption reaches the
// structural validation (the checksum alone would refuse it).
func fixCRC(d []byte) {
	size := int(binary.LittleEndian.Uint32(d[8:]))
	if size < 64 || size > len(d) {
		return
	}
	binary.LittleEndian.PutUint32(d[12:], crc32.Checksum(d[16:size], castagnoli))
}
