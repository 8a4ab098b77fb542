package evstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

const (
	tPos  Type = 1
	tName Type = 2
	tOdd  Type = 77 // a type the test consumers do not know
)

type pos struct {
	ID      uint64
	X, Y, Z float32
	_       uint32
}

func TestRoundTrip(t *testing.T) {
	w := NewWriter(NewBuffer(256))
	p := pos{ID: 7, X: 1, Y: 2, Z: 3}
	if err := Put(w, tPos, &p); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(tName, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(tOdd, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Len(), RecordSize(24)+RecordSize(3)+RecordSize(0); got != want {
		t.Fatalf("Len %d, want %d", got, want)
	}
	r := NewReader(w.Bytes())
	var seen []Type
	for r.Next() {
		seen = append(seen, r.Type())
		switch r.Type() {
		case tPos:
			q, err := View[pos](r.Payload())
			if err != nil {
				t.Fatal(err)
			}
			if *q != p {
				t.Fatalf("pos %+v, want %+v", *q, p)
			}
			if r.Offset() != 0 || r.PayloadOffset() != HeaderSize {
				t.Fatalf("offsets %d %d", r.Offset(), r.PayloadOffset())
			}
		case tName:
			if string(r.Payload()) != "abc" {
				t.Fatalf("name %q", r.Payload())
			}
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if len(seen) != 3 || seen[0] != tPos || seen[1] != tName || seen[2] != tOdd {
		t.Fatalf("types %v", seen)
	}
	if r.Consumed() != w.Len() {
		t.Fatalf("consumed %d of %d", r.Consumed(), w.Len())
	}
}

// TestSkipUnknown: a consumer that knows only tPos sees every tPos event,
// in order, whatever else is interleaved, because sizes let it skip.
func TestSkipUnknown(t *testing.T) {
	w := NewWriter(NewBuffer(4096))
	for i := range 20 {
		p := pos{ID: uint64(i)}
		must(t, Put(w, tPos, &p))
		must(t, w.Append(tOdd, make([]byte, i))) // every size 0..19: all paddings
	}
	r := NewReader(w.Bytes())
	next := uint64(0)
	for r.Next() {
		if r.Type() != tPos {
			continue
		}
		q, err := View[pos](r.Payload())
		must(t, err)
		if q.ID != next {
			t.Fatalf("got id %d, want %d", q.ID, next)
		}
		next++
	}
	must(t, r.Err())
	if next != 20 {
		t.Fatalf("saw %d", next)
	}
}

func TestWriterFull(t *testing.T) {
	w := NewWriter(NewBuffer(40))
	p := pos{}
	must(t, Put(w, tPos, &p)) // 32 bytes
	if err := Put(w, tPos, &p); !errors.Is(err, ErrFull) {
		t.Fatalf("err %v, want ErrFull", err)
	}
	if err := w.Append(tName, []byte("123456789")); !errors.Is(err, ErrFull) {
		t.Fatalf("err %v, want ErrFull", err)
	}
	must(t, w.Append(tName, nil)) // 8 bytes still fit exactly
	if w.Dropped() != 2 || w.DroppedBytes() != 32+24 {
		t.Fatalf("dropped %d (%d bytes)", w.Dropped(), w.DroppedBytes())
	}
	if w.Free() != 0 || w.Len() != 40 || w.Cap() != 40 {
		t.Fatalf("len %d free %d", w.Len(), w.Free())
	}
	w.Reset()
	if w.Dropped() != 0 || w.Len() != 0 {
		t.Fatal("Reset kept state")
	}
	var zero Writer
	if err := zero.Append(tName, nil); !errors.Is(err, ErrFull) || zero.Dropped() != 1 {
		t.Fatalf("zero writer: %v", err)
	}
}

func TestWriterRejects(t *testing.T) {
	w := NewWriter(NewBuffer(64))
	if err := w.Append(TypeInvalid, nil); !errors.Is(err, ErrInvalidType) {
		t.Fatal(err)
	}
	if _, err := w.Alloc(tName, -1); !errors.Is(err, ErrPayload) || !strings.Contains(err.Error(), "negative size -1") {
		t.Fatal(err)
	}
	if err := w.Load(make([]byte, 65)); !errors.Is(err, ErrFull) {
		t.Fatal(err)
	}
	must(t, w.Load(make([]byte, 5)))
	if err := w.Append(tName, nil); !errors.Is(err, ErrMisaligned) {
		t.Fatal(err)
	}
	if w.Dropped() != 0 {
		t.Fatal("rejections are not drops")
	}
}

func TestAllocClearsPadding(t *testing.T) {
	buf := NewBuffer(64)
	for i := range buf {
		buf[i] = 0xff
	}
	w := NewWriter(buf)
	p, err := w.Alloc(tName, 3)
	must(t, err)
	copy(p, "xyz")
	r := NewReader(w.Bytes())
	if !r.Next() || string(r.Payload()) != "xyz" {
		t.Fatalf("read back: %v", r.Err())
	}
}

func TestView(t *testing.T) {
	buf := NewBuffer(64)
	if !Aligned(buf) {
		t.Fatal("NewBuffer not aligned")
	}
	if _, err := View[pos](buf[:24]); err != nil {
		t.Fatal(err)
	}
	if _, err := View[pos](buf[:23]); !errors.Is(err, ErrPayload) {
		t.Fatal("short payload accepted")
	}
	if _, err := View[pos](buf[1:25]); !errors.Is(err, ErrPayload) {
		t.Fatal("misaligned payload accepted")
	}
	if _, err := View[struct{}](buf[:1]); !errors.Is(err, ErrPayload) {
		t.Fatal("non-empty payload accepted for a zero-size type")
	}
}

func header(t Type, size uint32) []byte {
	var h [8]byte
	binary.LittleEndian.PutUint32(h[:], uint32(t))
	binary.LittleEndian.PutUint32(h[4:], size)
	return h[:]
}

// TestBadStreams enumerates every way a stream can be malformed and checks
// the error kind and the byte offset it names.
func TestBadStreams(t *testing.T) {
	good := append(header(tName, 3), 'a', 'b', 'c', 0, 0, 0, 0, 0) // 16 bytes
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name   string
		stream []byte
		kind   error
		offset int
		n      int // records read before the error
	}{
		{"header cut", cat(good, []byte{1, 0, 0}), ErrTruncated, 16, 1},
		{"type zero", cat(good, header(0, 0)), ErrCorrupt, 16, 1},
		{"zeroed buffer", make([]byte, 32), ErrCorrupt, 0, 0},
		{"size past end", cat(good, header(tName, 9), make([]byte, 8)), ErrTruncated, 16, 1},
		{"huge size", cat(header(tName, 0xffffffff), make([]byte, 8)), ErrTruncated, 0, 0},
		{"padding missing", cat(good, header(tName, 3), []byte{1, 2, 3}), ErrTruncated, 27, 1},
		{"padding partial", cat(header(tName, 1), []byte{1, 0, 0}), ErrTruncated, 9, 0},
		{"padding dirty", cat(good, header(tName, 1), []byte{1, 0, 0, 0, 9, 0, 0, 0}), ErrCorrupt, 28, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(c.stream)
			n := 0
			for r.Next() {
				n++
			}
			var e *Error
			if !errors.As(r.Err(), &e) {
				t.Fatalf("err %v, want *Error", r.Err())
			}
			if !errors.Is(e, c.kind) || e.Offset != c.offset || n != c.n {
				t.Fatalf("got %v after %d records (offset %d), want %v at %d after %d", e, n, e.Offset, c.kind, c.offset, c.n)
			}
			if r.Next() || r.Type() != TypeInvalid || r.Payload() != nil {
				t.Fatal("reader continued after an error")
			}
			if r.Consumed() != 16*c.n {
				t.Fatalf("consumed %d", r.Consumed())
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	for _, b := range [][]byte{nil, {}} {
		r := NewReader(b)
		if r.Next() || r.Err() != nil {
			t.Fatal("empty stream")
		}
	}
	var r Reader
	if r.Next() || r.Err() != nil {
		t.Fatal("zero Reader")
	}
}

func TestZeroAllocs(t *testing.T) {
	w := NewWriter(NewBuffer(1 << 16))
	payload := []byte("hello")
	p := pos{ID: 1}
	a := testing.AllocsPerRun(100, func() {
		w.Reset()
		for range 100 {
			_ = Put(w, tPos, &p)
			_ = w.Append(tName, payload)
		}
	})
	if a != 0 {
		t.Fatalf("write: %v allocs/run", a)
	}
	stream := w.Bytes()
	var sum uint64
	a = testing.AllocsPerRun(100, func() {
		r := NewReader(stream)
		for r.Next() {
			if r.Type() == tPos {
				q, _ := View[pos](r.Payload())
				sum += q.ID
			}
		}
	})
	if a != 0 {
		t.Fatalf("read: %v allocs/run", a)
	}
	full := NewWriter(NewBuffer(8))
	a = testing.AllocsPerRun(100, func() { _ = Put(full, tPos, &p) })
	if a != 0 {
		t.Fatalf("dropping: %v allocs/run", a)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func BenchmarkWrite(b *testing.B) {
	w := NewWriter(NewBuffer(1 << 20))
	p := pos{ID: 1}
	b.ReportAllocs()
	b.SetBytes(int64(RecordSize(24)))
	for b.Loop() {
		if Put(w, tPos, &p) != nil {
			w.Reset()
		}
	}
}

func BenchmarkRead(b *testing.B) {
	w := NewWriter(NewBuffer(1 << 20))
	p := pos{ID: 1}
	for Put(w, tPos, &p) == nil {
	}
	stream := w.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	var sum uint64
	for b.Loop() {
		r := NewReader(stream)
		for r.Next() {
			q, _ := View[pos](r.Payload())
			sum += q.ID
		}
	}
}

// TestPutNil: Put of a nil pointer is ErrNilValue and writes nothing,
// never a panic.
func TestPutNil(t *testing.T) {
	type plain struct{ A, B uint32 }
	w := NewWriter(NewBuffer(256))
	if err := Put(w, 1, &plain{1, 2}); err != nil {
		t.Fatal(err)
	}
	n := w.Len()
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Put(nil) panicked: %v", r)
			}
		}()
		return Put[plain](w, 1, nil)
	}()
	if !errors.Is(err, ErrNilValue) {
		t.Errorf("Put(nil) = %v, want ErrNilValue", err)
	}
	if w.Len() != n {
		t.Errorf("Put(nil) wrote: length %d -> %d", n, w.Len())
	}
}

// Streams from elsewhere (a capture, a peer) may be garbage. Reading them
// must end, report an error for what does not parse, and never hand out a
// payload beyond the buffer.

type garbageEvent struct {
	A, B uint32
	C    float32
	D    uint32
}

// readAll walks r to the end with a bound on the records (each record is at
// least one header long, so a reader that does not advance is caught).
func readAll(t *testing.T, buf []byte) (n int, err error) {
	t.Helper()
	r := NewReader(buf)
	last := -1
	for r.Next() {
		n++
		if n > len(buf)/4+1 {
			t.Fatalf("reader returned %d records from %d bytes: it does not advance", n, len(buf))
		}
		off := r.PayloadOffset()
		p := r.Payload()
		if off < 0 || off+len(p) > len(buf) || r.Offset() <= last {
			t.Fatalf("record %d: payload [%d,%d) outside %d bytes or offset %d not after %d", n, off, off+len(p), len(buf), r.Offset(), last)
		}
		last = r.Offset()
		_, _ = View[garbageEvent](p) // must not panic whatever the size
	}
	if r.Consumed() > len(buf) {
		t.Fatalf("consumed %d of %d bytes", r.Consumed(), len(buf))
	}
	return n, r.Err()
}

func validStream(t *testing.T, records int) []byte {
	t.Helper()
	w := NewWriter(NewBuffer(64 * records))
	for i := 0; i < records; i++ {
		var err error
		if i%3 == 0 {
			err = w.Append(Type(7+i), make([]byte, i%13))
		} else {
			err = Put(w, Type(100), &garbageEvent{A: uint32(i)})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return append([]byte(nil), w.Bytes()...)
}

// TestReaderGarbage: random bytes, truncations and header corruptions of
// a valid stream: every walk ends; a truncated stream reports an error.
func TestReaderGarbage(t *testing.T) {
	good := validStream(t, 40)
	if n, err := readAll(t, good); err != nil || n != 40 {
		t.Fatalf("valid stream: %d records, %v", n, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for cut := 1; cut < len(good); cut++ {
		n, err := readAll(t, good[:cut])
		if n > 40 {
			t.Fatalf("cut %d: %d records", cut, n)
		}
		_ = err
	}
	// A cut inside a record's payload must not pass as a whole stream.
	if _, err := readAll(t, good[:len(good)-4]); err == nil {
		t.Errorf("stream cut 4 bytes short read without an error")
	}
	for i := 0; i < 2000; i++ {
		b := append([]byte(nil), good...)
		for k := 0; k < 1+rng.IntN(4); k++ {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		readAll(t, b)
		// Header words set to extremes.
		c := append([]byte(nil), good...)
		p := 4 * rng.IntN(len(c)/4)
		binary.LittleEndian.PutUint32(c[p:], []uint32{0, 1, 3, 0x7fffffff, 0xffffffff, 0xfffffffc, uint32(len(c))}[rng.IntN(7)])
		readAll(t, c)
		// Pure noise of odd lengths.
		n := make([]byte, rng.IntN(300))
		for j := range n {
			n[j] = byte(rng.Uint32())
		}
		readAll(t, n)
	}
	if n, err := readAll(t, nil); n != 0 || err != nil {
		t.Errorf("nil stream: %d records, %v", n, err)
	}
}

// TestWriterLoadAndView: Load of garbage into a Writer, then appends;
// View with the wrong size or alignment; Put of an oversized record.
func TestWriterLoadAndView(t *testing.T) {
	w := NewWriter(NewBuffer(256))
	if err := w.Load(make([]byte, 1000)); err == nil {
		t.Errorf("Load of 1000 bytes into 256 accepted")
	}
	if err := w.Load([]byte{1, 2, 3}); err != nil {
		t.Fatalf("Load of 3 bytes: %v", err)
	}
	if err := Put(w, 1, &garbageEvent{}); err == nil {
		t.Errorf("append after a misaligned Load accepted")
	}
	w.Reset()
	if err := Put(w, 1, &garbageEvent{A: 5}); err != nil {
		t.Fatalf("Put after Reset: %v", err)
	}
	big := make([]byte, 1<<20)
	if err := w.Append(2, big); err == nil {
		t.Errorf("a record larger than the buffer accepted")
	}
	if _, err := w.Alloc(2, -1); err == nil {
		t.Errorf("Alloc of -1 bytes accepted")
	}
	r := NewReader(w.Bytes())
	if !r.Next() {
		t.Fatalf("no record: %v", r.Err())
	}
	if v, err := View[garbageEvent](r.Payload()); err != nil || v.A != 5 {
		t.Errorf("View: %+v, %v", v, err)
	}
	if _, err := View[[3]garbageEvent](r.Payload()); err == nil {
		t.Errorf("View of a larger type accepted")
	}
	if _, err := View[garbageEvent](nil); err == nil {
		t.Errorf("View of nil accepted")
	}
	odd := make([]byte, 17)
	if _, err := View[garbageEvent](odd[1:]); err == nil {
		t.Errorf("View of a misaligned payload accepted")
	}
}
