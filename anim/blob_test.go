package anim_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// TestBlobCorruptEveryOffset: a two-clip blob (curve and uniform, with
// events) truncated at every 4-byte boundary and with a byte flipped at
// every offset is refused by Load with a *BlobError (never a panic); the
// CRC catches what the tables do not.
func TestBlobCorruptEveryOffset(t *testing.T) {
	sk, c := animtest.Chain(3, 20, 30)
	c.Events = []anim.Event{{Time: 0, Type: 1}, {Time: float32(c.Duration()), Type: 2, Bone: 2}}
	var b offline.Builder
	s := b.AddSkeleton(sk)
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec, Tolerance: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddClip(s, cc); err != nil {
			t.Fatal(err)
		}
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anim.Load(data); err != nil {
		t.Fatal(err)
	}
	load := func(what string, d []byte) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s: Load panicked: %v", what, r)
			}
		}()
		_, err := anim.Load(d)
		var be *anim.BlobError
		if err == nil {
			t.Errorf("%s: loaded", what)
		} else if !errors.As(err, &be) {
			t.Errorf("%s: %T %v, want a *BlobError", what, err, err)
		}
	}
	for n := 0; n < len(data); n++ {
		load("truncated", append([]byte(nil), data[:n]...))
	}
	for i := range data {
		d := append([]byte(nil), data...)
		d[i] ^= 0x41
		load("byte flipped", d)
	}
	// a second blob appended with garbage after it
	two := append(append([]byte(nil), data...), data...)
	if blob, err := anim.Load(two); err != nil || blob.NumClips() != 4 {
		t.Errorf("two concatenated blobs: %v", err)
	}
	load("trailing garbage", append(append([]byte(nil), data...), 1, 2, 3, 4))
}

// TestBlobCorruptCRCFixed flips bits at every offset and then fixes
// the CRC (as a tool that rewrites blobs would), so the loader's own
// checks must refuse the damage: Load either refuses with a *BlobError or
// returns a blob whose every clip samples (both directions, any time)
// without a panic and with finite poses.
func TestBlobCorruptCRCFixed(t *testing.T) {
	sk, c := animtest.Chain(3, 40, 30)
	c.Events = []anim.Event{{Time: 0, Type: 1}, {Time: float32(c.Duration()), Type: 2, Bone: 2}}
	var b offline.Builder
	s := b.AddSkeleton(sk)
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec, Tolerance: 0.001, SegmentSeconds: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddClip(s, cc); err != nil {
			t.Fatal(err)
		}
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	loaded := 0
	for i := 16; i < len(data); i++ {
		for _, bit := range []byte{0x01, 0x10, 0x80} {
			d := append([]byte(nil), data...)
			d[i] ^= bit
			binary.LittleEndian.PutUint32(d[12:], crc32.Checksum(d[16:], tab))
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("byte %d ^ %#x: panic: %v", i, bit, r)
					}
				}()
				blob, err := anim.Load(d)
				if err != nil {
					var be *anim.BlobError
					if !errors.As(err, &be) {
						t.Errorf("byte %d ^ %#x: %T %v, want a *BlobError", i, bit, err, err)
					}
					return
				}
				loaded++
				for k := 0; k < blob.NumClips(); k++ {
					cv := blob.Clip(k)
					j := anim.SampleJob{
						Blob:         blob,
						Inputs:       make([]anim.SampleInput, 1),
						Cursors:      make([]uint32, cv.CursorWords()),
						CursorStride: cv.CursorWords(),
						Poses:        make([]float32, cv.Bones()*anim.PoseFloats),
						Bones:        cv.Bones(),
					}
					for _, tm := range []float32{0, 0.3, 0.7, 1.3, 0.1, 5} {
						j.Inputs[0] = anim.SampleInput{Clip: cv.Offset(), Time: tm}
						if err := j.Run(); err != nil {
							t.Errorf("byte %d ^ %#x: loaded, but sampling clip %d fails: %v", i, bit, k, err)
							return
						}
						for _, v := range j.Poses {
							if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
								t.Errorf("byte %d ^ %#x: loaded, but clip %d samples %v at %v s", i, bit, k, v, tm)
								return
							}
						}
					}
					cv.AppendEvents(nil, 0, 100)
					_ = cv.Name()
					_ = cv.Skeleton().Bones()
				}
			}()
		}
	}
	t.Logf("%d of %d corruptions loaded (and sampled finite poses)", loaded, 3*(len(data)-16))
}
