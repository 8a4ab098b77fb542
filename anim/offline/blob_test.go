package offline

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// richBlob is a small blob with every optional table: events, inverse
// bind matrices, skin joints, a discontinuity.
func richBlob(tb testing.TB) []byte {
	tb.Helper()
	return richSynthBlob(tb, CompressOptions{SegmentSeconds: 0.5})
}

// richSynthBlob is richBlob's skeleton and clip compressed with opt.
func richSynthBlob(tb testing.TB, opt CompressOptions) []byte {
	tb.Helper()
	sk := synthSkeleton()
	sk.InverseBind = make([][16]float32, 4)
	for b := range sk.InverseBind {
		sk.InverseBind[b] = [16]float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, float32(-b), 0, 0, 1}
	}
	sk.SkinJoint = []int32{3, 2, 1, 0}
	c := synthClip(61, 30, 40)
	c.Events = []anim.Event{{Time: 0.5, Type: anim.EventFootDown, Bone: 3}, {Time: 1.0, Type: anim.EventFootUp, Bone: 3}, {Time: 1.5, Type: anim.EventFootDown, Bone: 2}}
	_, data := compressBlob(tb, sk, c, opt)
	return data
}

func fixChecksum(data []byte) {
	size := binary.LittleEndian.Uint32(data[8:])
	if int(size) <= len(data) && size >= 16 {
		binary.LittleEndian.PutUint32(data[12:], crc32.Checksum(data[16:size], format.Castagnoli))
	}
}

// mutWord, mutFloat and mutByte are blob mutations for wantBlobError:
// they store v at byte offset off.
func mutWord(off, v uint32) func([]byte) []byte {
	return func(d []byte) []byte { binary.LittleEndian.PutUint32(d[off:], v); return d }
}

func mutFloat(off uint32, v float32) func([]byte) []byte { return mutWord(off, math.Float32bits(v)) }

func mutByte(off uint32, v byte) func([]byte) []byte {
	return func(d []byte) []byte { d[off] = v; return d }
}

// wantBlobError loads a copy of good changed by mut (its checksum
// recomputed unless keepSum, so that the field check itself is reached)
// and fails the test unless that gives a *BlobError containing want.
func wantBlobError(t *testing.T, good []byte, name, want string, mut func([]byte) []byte, keepSum bool) {
	t.Helper()
	d := mut(append([]byte(nil), good...))
	if !keepSum && len(d) >= 16 {
		fixChecksum(d)
	}
	_, err := anim.Load(d)
	var be *anim.BlobError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want a BlobError containing %q", name, err, want)
	}
}

// checkTruncations fails the test when a truncation of good loads.
func checkTruncations(t *testing.T, good []byte) {
	t.Helper()
	for n := 0; n < len(good); n++ {
		if _, err := anim.Load(good[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: loaded", n, len(good))
		}
	}
}

// checkCorruption flips 1 to 3 random bits (rng seeded with seed) of 3000
// copies of good and recomputes their checksums: Load must not panic, and
// whatever loads must sample without panicking (exercise).
func checkCorruption(t *testing.T, good []byte, seed int64) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	loaded := 0
	for range 3000 {
		d := append([]byte(nil), good...)
		for range 1 + rng.Intn(3) {
			i := rng.Intn(len(d))
			d[i] ^= byte(1 << rng.Intn(8))
		}
		fixChecksum(d)
		if bl, err := anim.Load(d); err == nil {
			loaded++
			exercise(bl)
		}
	}
	t.Logf("%d of 3000 corrupted blobs still valid", loaded)
}

func TestBlobRoundTrip(t *testing.T) {
	data := richBlob(t)
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if bl.NumClips() != 1 || bl.NumSkeletons() != 1 {
		t.Fatalf("%d clips, %d skeletons", bl.NumClips(), bl.NumSkeletons())
	}
	c := bl.Clip(0)
	sk := c.Skeleton()
	if c.Name() != "synth" || sk.Name() != "synth" || sk.BoneName(2) != "arm" || c.Bones() != 4 || sk.Bones() != 4 {
		t.Errorf("names/bones: %q %q %q %d %d", c.Name(), sk.Name(), sk.BoneName(2), c.Bones(), sk.Bones())
	}
	if c.Rate() != 30 || c.Frames() != 61 || c.Duration() != 2 {
		t.Errorf("rate %v frames %d duration %v", c.Rate(), c.Frames(), c.Duration())
	}
	if got := sk.Parents(nil); !slices.Equal(got, []int32{-1, 0, 1, 2}) {
		t.Errorf("parents %v", got)
	}
	if rest := sk.RestPose(nil); len(rest) != 48 || rest[5] != 1 || rest[3] != 1 {
		t.Errorf("rest pose %v", rest)
	}
	if ib := sk.InverseBind(nil); len(ib) != 64 || ib[16*3+12] != -3 {
		t.Errorf("inverse bind %v", ib)
	}
	if n := c.NumEvents(); n != 3 || c.Event(2) != (anim.Event{Time: 1.5, Type: anim.EventFootDown, Bone: 2}) {
		t.Errorf("events: %d, %+v", n, c.Event(2))
	}
	if _, err := bl.ClipAt(c.Offset() + 4); err == nil {
		t.Error("ClipAt accepted a non-clip offset")
	}
	if got, ok := bl.ClipByName("synth"); !ok || got != c {
		t.Error("ClipByName")
	}
}

// Blobs concatenate byte-wise: both halves load, and clips sample as when
// loaded alone.
func TestBlobConcatenation(t *testing.T) {
	a := richBlob(t)
	_, b := synthBlob(t, synthClip(91, 30, 0), CompressOptions{Tolerance: 0.001})
	both := append(append([]byte(nil), a...), b...)
	bl, err := anim.Load(both)
	if err != nil {
		t.Fatal(err)
	}
	if bl.NumClips() != 2 || bl.NumSkeletons() != 2 {
		t.Fatalf("%d clips, %d skeletons", bl.NumClips(), bl.NumSkeletons())
	}
	alone, err := anim.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	c2 := bl.Clip(1)
	if c2.Offset() != alone.Clip(0).Offset()+uint32(len(a)) {
		t.Errorf("second clip at %d", c2.Offset())
	}
	for _, tm := range []float32{0, 0.7, 2.5, 3} {
		if !slices.Equal(sampleAt(t, c2, tm), sampleAt(t, alone.Clip(0), tm)) {
			t.Errorf("t=%v: concatenated clip samples differently", tm)
		}
	}
	if c2.Skeleton().Bones() != 4 {
		t.Error("second clip's skeleton")
	}
}

// Every field of the format that Load checks, corrupted one at a time
// (checksum recomputed so the field check itself is reached), gives a
// *BlobError that names it.
func TestBlobInvalid(t *testing.T) {
	good := richBlob(t)
	le := binary.LittleEndian
	w := func(d []byte, off uint32) uint32 { return le.Uint32(d[off:]) }
	S := w(good, w(good, 20))                  // skeleton record
	C := w(good, w(good, 28))                  // clip record
	tracks := C + w(good, C+4*format.ChTracks) // track table
	segt := C + w(good, C+4*format.ChSegTable) // segment table
	stream := C + w(good, C+4*format.ChStream) // stream
	events := C + w(good, C+4*format.ChEventTable)
	set, setF := mutWord, mutFloat
	nan := float32(math.NaN())
	cases := []struct {
		name, want string
		mut        func([]byte) []byte
		keepSum    bool
	}{
		{"empty", "empty", func(d []byte) []byte { return d[:0] }, false},
		{"odd size", "multiple of 4", func(d []byte) []byte { return d[:len(d)-3] }, false},
		{"truncated header", "truncated header", func(d []byte) []byte { return d[:44] }, false},
		{"truncated body", "blob size", func(d []byte) []byte { return d[:len(d)-4] }, false},
		{"trailing bytes", "truncated header", func(d []byte) []byte { return append(d, 0, 0, 0, 0, 0, 0, 0, 0) }, false},
		{"bad magic", "bad magic", set(0, 0x12345678), false},
		{"bad version", "version", set(4, 1), false},
		{"size too large", "blob size", set(8, uint32(len(good))+4), false},
		{"size unaligned", "blob size", set(8, uint32(len(good))-2), false},
		{"checksum", "checksum", func(d []byte) []byte { d[len(d)-20] ^= 1; return d }, true},
		{"reserved header word", "reserved word", set(32, 1), false},
		{"skeleton directory count", "directory", set(16, 1<<20), false},
		{"clip directory offset", "directory", set(28, uint32(len(good))+8), false},
		{"skeleton offset unaligned", "skeleton 0 at", set(w(good, 20), S+2), false},
		{"skeleton tag", "skeleton: bad tag", set(S, 0), false},
		{"skeleton size", "skeleton: record size", set(S+4, 1<<30), false},
		{"skeleton no bones", "0 bones", set(S+8, 0), false},
		{"skeleton too many bones", "bones (1..", set(S+8, MaxBones+1), false},
		{"skeleton parents outside", "parents table outside", set(S+12, 1<<20), false},
		{"parent after child", "parents must come first", set(S+w(good, S+12)+4, 2), false},
		{"rest pose NaN", "rest pose is not finite", setF(S+w(good, S+16)+20, nan), false},
		{"name table", "name table", set(S+w(good, S+20)+8, 1<<20), false},
		{"inverse bind NaN", "inverse bind", setF(S+w(good, S+24)+8, nan), false},
		{"skin joint range", "skin joint", set(S+w(good, S+28), 9), false},
		{"clip offset unaligned", "clip 0 at", set(w(good, 28), C+1), false},
		{"clip tag", "clip: bad tag", set(C, 0), false},
		{"clip size", "clip: record size", set(C+4*format.ChSize, 8), false},
		{"clip skeleton offset", "names no skeleton", set(C+4*format.ChSkeleton, 4), false},
		{"clip bones", "bones, skeleton has", set(C+4*format.ChBones, 5), false},
		{"clip rate", "rate", setF(C+4*format.ChRate, 0), false},
		{"clip rate NaN", "rate", setF(C+4*format.ChRate, nan), false},
		{"clip frames", "frames", set(C+4*format.ChFrames, 0), false},
		{"segment frames", "segment frames", set(C+4*format.ChSegFrames, 0), false},
		{"segment count", "segments", set(C+4*format.ChSegments, 9), false},
		{"animated tracks", "animated tracks", set(C+4*format.ChSlots, 13), false},
		{"flags", "flags", set(C+4*format.ChFlags, 2), false},
		{"flags uniform on a curve record", "uniform clip", set(C+4*format.ChFlags, format.ClipUniform), false},
		{"range table word of a curve clip", "reserved word 21", set(C+4*format.ChRanges, 96), false},
		{"cursor words", "cursor words", set(C+4*format.ChCursorWords, 5), false},
		{"reserved clip word", "reserved word", set(C+4*23, 1), false},
		{"default pose outside", "default pose outside", set(C+4*format.ChDefault, 1<<20), false},
		{"default pose NaN", "default pose not finite", setF(C+w(good, C+4*format.ChDefault)+8, nan), false},
		{"track table outside", "track table outside", set(C+4*format.ChTracks, 1<<20), false},
		{"track bone", "track 0: bone", set(tracks, 7), false},
		{"track kind", "kind 3", set(tracks, 3<<16), false},
		{"track twice", "twice", set(tracks+16, w(good, tracks)), false},
		{"track first-point width", "first-point width", set(tracks+4, 40), false},
		{"track step", "step", setF(tracks+8, 0), false},
		{"track step NaN", "step", setF(tracks+8, nan), false},
		{"track reserved", "reserved word", set(tracks+12, 1), false},
		{"segment table outside", "segment table outside", set(C+4*format.ChSegTable, 1<<20), false},
		{"segment start", "segment 0 starts", set(segt, 8), false},
		{"segment order", "segment 2 starts", set(segt+8, 1), false},
		{"stream words", "segment", set(C+4*format.ChStreamWords, 3), false},
		{"stream header", "segment 0", set(stream, 0xffffffff), false},
		{"stream record", "segment", func(d []byte) []byte {
			end := w(d, segt+4) / 8 // first segment's records end here
			for i := end - 8; i < end; i++ {
				d[stream+i] ^= 0x5a
			}
			return d
		}, false},
		{"event table outside", "event table outside", set(C+4*format.ChEventTable, 1<<20), false},
		{"event order", "event 1", setF(events+8, 0.1), false},
		{"event NaN", "event 0", setF(events, nan), false},
		{"event beyond clip", "event 2", setF(events+16, 9), false},
		{"event bone", "event 0", set(events+4, uint32(anim.EventFootDown)|7<<16), false},
		{"name outside", "name outside", set(C+4*format.ChNameLen, 1<<20), false},
	}
	for _, tc := range cases {
		wantBlobError(t, good, tc.name, tc.want, tc.mut, tc.keepSum)
	}
}

// Every truncation is an error, never a panic.
func TestBlobTruncations(t *testing.T) {
	checkTruncations(t, richBlob(t))
}

// Random corruption with a valid checksum never panics, and whatever
// loads samples without panicking.
func TestBlobCorruption(t *testing.T) {
	checkCorruption(t, richBlob(t), 8)
}

// exercise samples every clip of a blob at a few times and runs
// local-to-model on the result.
func exercise(bl *anim.Blob) {
	for i := range bl.NumClips() {
		c := bl.Clip(i)
		nb := c.Bones()
		j := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: c.Offset()}}, Cursors: make([]uint32, c.CursorWords()),
			CursorStride: c.CursorWords(), Poses: make([]float32, nb*anim.PoseFloats), Bones: nb}
		for _, tm := range []float32{0, 0.3, 1.1, 0.2, 1e9} {
			j.Inputs[0].Time = tm
			if err := j.Run(); err != nil {
				panic(err)
			}
		}
		model := make([]float32, nb*anim.ModelFloats)
		if err := anim.LocalToModel(c.Skeleton().Parents(nil), j.Poses, model, 0, 1); err != nil {
			panic(err)
		}
		c.AppendEvents(nil, 0, 10)
		_ = c.Name() + c.Skeleton().Name()
	}
}

func FuzzBlob(f *testing.F) {
	good := richBlob(f)
	f.Add(good)
	_, other := synthBlob(f, synthClip(31, 30, 0), CompressOptions{})
	f.Add(append(append([]byte(nil), good...), other...))
	// Uniform clips: alone, and after a curve blob.
	uni := richUniformBlob(f)
	f.Add(uni)
	f.Add(append(append([]byte(nil), other...), uni...))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Give mutations a valid checksum half of the time, so the
		// fuzzer reaches the field checks.
		if len(data) >= 16 && len(data)%2 == 0 {
			fixChecksum(data)
		}
		bl, err := anim.Load(data)
		if err != nil {
			var be *anim.BlobError
			if !errors.As(err, &be) {
				t.Fatalf("error %v is not a *BlobError", err)
			}
			return
		}
		exercise(bl)
	})
}
