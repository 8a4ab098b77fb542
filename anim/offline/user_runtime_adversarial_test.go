package offline_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// TestUserLocalToModelBadParents: parents out of order, cyclic, out of
// range, or buffers of the wrong size are errors and nothing is written.
func TestUserLocalToModelBadParents(t *testing.T) {
	local := make([]float32, 4*anim.PoseFloats)
	for b := 0; b < 4; b++ {
		local[b*anim.PoseFloats+3] = 1
		local[b*anim.PoseFloats+8], local[b*anim.PoseFloats+9], local[b*anim.PoseFloats+10] = 1, 1, 1
	}
	for _, tc := range []struct {
		name    string
		parents []int32
		local   int
		model   int
		b, e    int
	}{
		{"child before parent", []int32{-1, 2, 0, 1}, 4, 4, 0, 1},
		{"self parent", []int32{-1, 1, 1, 2}, 4, 4, 0, 1},
		{"parent out of range", []int32{-1, 0, 9, 2}, 4, 4, 0, 1},
		{"parent -2", []int32{-1, 0, -2, 2}, 4, 4, 0, 1},
		{"short local", []int32{-1, 0, 1, 2}, 3, 4, 0, 1},
		{"short model", []int32{-1, 0, 1, 2}, 4, 3, 0, 1},
		{"end past the poses", []int32{-1, 0, 1, 2}, 4, 4, 0, 2},
		{"begin > end", []int32{-1, 0, 1, 2}, 4, 4, 1, 0},
		{"negative begin", []int32{-1, 0, 1, 2}, 4, 4, -1, 1},
	} {
		model := make([]float32, tc.model*anim.ModelFloats)
		for i := range model {
			model[i] = 7
		}
		err := anim.LocalToModel(tc.parents, local[:tc.local*anim.PoseFloats], model, tc.b, tc.e)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		for i, v := range model {
			if v != 7 {
				t.Errorf("%s: model[%d] written (%v) despite the error", tc.name, i, v)
				break
			}
		}
	}
}

// TestUserSampleJobMismatched: pose buffers too short, strides below the
// clip's, clip offsets that name no clip and a nil blob are errors that
// say what is wrong, and Run writes nothing then.
func TestUserSampleJobMismatched(t *testing.T) {
	sk, c := userChain(5, 20, 30)
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	blob, cv := userBlob(t, sk, cc)
	good := func() anim.SampleJob {
		return anim.SampleJob{
			Blob:         blob,
			Inputs:       []anim.SampleInput{{Clip: cv.Offset(), Time: 0.3}, {Clip: cv.Offset(), Time: 0.1}},
			Cursors:      make([]uint32, 2*cv.CursorWords()),
			CursorStride: cv.CursorWords(),
			Poses:        make([]float32, 2*5*anim.PoseFloats),
			Bones:        5,
		}
	}
	g := good()
	if err := g.Run(); err != nil {
		t.Fatalf("good job: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(j *anim.SampleJob)
		want string
	}{
		{"nil blob", func(j *anim.SampleJob) { j.Blob = nil }, "lob"},
		{"short poses", func(j *anim.SampleJob) { j.Poses = j.Poses[:len(j.Poses)-1] }, "ose"},
		{"bones below the clip's", func(j *anim.SampleJob) { j.Bones = 4; j.Poses = j.Poses[:2*4*anim.PoseFloats] }, "ones"},
		{"short cursors", func(j *anim.SampleJob) { j.Cursors = j.Cursors[:len(j.Cursors)-1] }, "ursor"},
		{"stride below the clip's", func(j *anim.SampleJob) { j.CursorStride--; j.Cursors = j.Cursors[:2*j.CursorStride] }, "ursor"},
		{"zero stride", func(j *anim.SampleJob) { j.CursorStride = 0 }, "ursor"},
		{"clip offset 0", func(j *anim.SampleJob) { j.Inputs[1].Clip = 0 }, "clip"},
		{"clip offset misaligned", func(j *anim.SampleJob) { j.Inputs[1].Clip = cv.Offset() + 2 }, "clip"},
		{"clip offset past the blob", func(j *anim.SampleJob) { j.Inputs[1].Clip = math.MaxUint32 }, "clip"},
		{"negative bones", func(j *anim.SampleJob) { j.Bones = -5 }, "ones"},
	} {
		j := good()
		tc.mod(&j)
		for i := range j.Poses {
			j.Poses[i] = 7
		}
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = errors.New("panic")
					t.Errorf("%s: Run panicked: %v", tc.name, r)
				}
			}()
			return j.Run()
		}()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
			t.Errorf("%s: error %q does not name %q", tc.name, err, tc.want)
		}
		t.Logf("%s: %v", tc.name, err)
		for i, v := range j.Poses {
			if v != 7 {
				t.Errorf("%s: pose[%d] written despite the error", tc.name, i)
				break
			}
		}
		if err := j.RunRange(1, 0); err == nil {
			t.Errorf("%s: RunRange(1, 0): no error", tc.name)
		}
	}
	j := good()
	for _, r := range [][2]int{{-1, 1}, {0, 3}, {2, 1}} {
		if err := j.RunRange(r[0], r[1]); err == nil {
			t.Errorf("RunRange(%d, %d) of 2 characters: no error", r[0], r[1])
		}
	}
}

// TestUserEventsAtEnds: events at 0 and at exactly the clip's duration
// survive compression and the blob; EventRange finds them as documented
// (an event at Duration needs t1 above it), and odd windows (NaN, empty,
// reversed) return nothing rather than everything.
func TestUserEventsAtEnds(t *testing.T) {
	sk, c := userChain(3, 31, 30)
	d := c.Duration()
	c.Events = []anim.Event{{Time: 0, Type: 1, Bone: 0}, {Time: float32(d / 2), Type: 2, Bone: 1}, {Time: float32(d), Type: 3, Bone: 2}}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		_, cv := userBlob(t, sk, cc)
		if cv.NumEvents() != 3 {
			t.Fatalf("%v: %d events", codec, cv.NumEvents())
		}
		dur := cv.Duration()
		check := func(t0, t1 float32, want ...uint16) {
			t.Helper()
			got := cv.AppendEvents(nil, t0, t1)
			var types []uint16
			for _, e := range got {
				types = append(types, e.Type)
			}
			if len(types) != len(want) {
				t.Errorf("%v: events in [%v, %v) = %v, want %v", codec, t0, t1, types, want)
				return
			}
			for i := range want {
				if types[i] != want[i] {
					t.Errorf("%v: events in [%v, %v) = %v, want %v", codec, t0, t1, types, want)
				}
			}
		}
		check(0, dur, 1, 2)
		check(0, math.Nextafter32(dur, 2*dur), 1, 2, 3)
		check(dur, dur+1, 3)
		check(0, 0)
		check(-1, 0)
		check(-1, math.Nextafter32(0, 1), 1)
		check(dur, 0)
		nan := float32(math.NaN())
		check(nan, nan)
		check(float32(math.Inf(-1)), float32(math.Inf(1)), 1, 2, 3)
	}
	// an event past the end is refused naming it
	c.Events = append(c.Events, anim.Event{Time: float32(d) + 0.01, Type: 4})
	if _, err := offline.Compress(sk, c, offline.CompressOptions{}); err == nil || !strings.Contains(err.Error(), "event") {
		t.Errorf("event past the end: %v", err)
	}
}

// TestUserBlobCorruptEveryOffset: a two-clip blob (curve and uniform, with
// events) truncated at every 4-byte boundary and with a byte flipped at
// every offset is refused by Load with a *BlobError (never a panic); the
// CRC catches what the tables do not.
func TestUserBlobCorruptEveryOffset(t *testing.T) {
	sk, c := userChain(3, 20, 30)
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

// TestUserBlobCorruptCRCFixed flips bits at every offset and then fixes
// the CRC (as a tool that rewrites blobs would), so the loader's own
// checks must refuse the damage: Load either refuses with a *BlobError or
// returns a blob whose every clip samples (both directions, any time)
// without a panic and with finite poses.
func TestUserBlobCorruptCRCFixed(t *testing.T) {
	sk, c := userChain(3, 40, 30)
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
