package evstream

import (
	"bytes"
	"errors"
	"math"
	"sync"
	"testing"
)

// marker is a zero-size event: its type is all it says (a frame end, a
// flush request). Put accepts it; View must give it back.
type marker struct{}

func TestViewZeroSizeEvent(t *testing.T) {
	w := NewWriter(NewBuffer(64))
	var m marker
	if err := Put(w, tOdd, &m); err != nil {
		t.Fatalf("Put of a zero-size event: %v", err)
	}
	if w.Len() != HeaderSize {
		t.Fatalf("Len %d, want %d", w.Len(), HeaderSize)
	}
	r := NewReader(w.Bytes())
	if !r.Next() {
		t.Fatalf("no record: %v", r.Err())
	}
	if len(r.Payload()) != 0 {
		t.Fatalf("payload of %d bytes, want 0", len(r.Payload()))
	}
	v, err := View[marker](r.Payload())
	if err != nil || v == nil {
		t.Fatalf("View of the zero-size payload Put wrote: %v, %v", v, err)
	}
	// A non-empty payload is still not a marker.
	if _, err := View[marker]([]byte{1}); !errors.Is(err, ErrPayload) {
		t.Fatalf("View[marker] of 1 byte: %v, want ErrPayload", err)
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = View[marker](nil) }); a != 0 {
		t.Fatalf("View of a zero-size type: %v allocs", a)
	}
}

// Every payload size from 0 to 3 records' worth, in one stream, read back
// from an aligned and an unaligned copy: types, payloads, offsets and
// Consumed exact, and the stream a multiple of Align.
func TestRoundTripEverySize(t *testing.T) {
	const maxSize = 40
	total := 0
	for n := 0; n <= maxSize; n++ {
		total += RecordSize(n)
	}
	w := NewWriter(NewBuffer(total))
	for n := 0; n <= maxSize; n++ {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(n*31 + i + 1)
		}
		if err := w.Append(Type(n+1), p); err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
	}
	if w.Len() != total || w.Free() != 0 || w.Len()%Align != 0 {
		t.Fatalf("Len %d Free %d, want %d 0", w.Len(), w.Free(), total)
	}
	unaligned := make([]byte, total+1)[1:]
	copy(unaligned, w.Bytes())
	for _, in := range [][]byte{w.Bytes(), unaligned} {
		r := NewReader(in)
		off, n := 0, 0
		for r.Next() {
			if r.Type() != Type(n+1) || len(r.Payload()) != n || r.Offset() != off || r.PayloadOffset() != off+HeaderSize {
				t.Fatalf("record %d: type %d len %d at %d, want type %d len %d at %d", n, r.Type(), len(r.Payload()), r.Offset(), n+1, n, off)
			}
			for i, b := range r.Payload() {
				if b != byte(n*31+i+1) {
					t.Fatalf("record %d byte %d = %d", n, i, b)
				}
			}
			off += RecordSize(n)
			n++
			if r.Consumed() != off {
				t.Fatalf("Consumed %d, want %d", r.Consumed(), off)
			}
		}
		if r.Err() != nil || n != maxSize+1 {
			t.Fatalf("read %d records, err %v", n, r.Err())
		}
	}
	// A full buffer drops the next event, counts it, changes nothing.
	before := bytes.Clone(w.Bytes())
	if err := w.Append(1, nil); !errors.Is(err, ErrFull) || w.Dropped() != 1 || w.DroppedBytes() != HeaderSize {
		t.Fatalf("append to a full buffer: %v, dropped %d (%d B)", err, w.Dropped(), w.DroppedBytes())
	}
	if !bytes.Equal(before, w.Bytes()) {
		t.Fatal("a dropped event changed the stream")
	}
}

// Every cut of a valid stream: cuts at record boundaries read the records
// before them and no error; other cuts end in ErrTruncated at an offset
// inside the cut, after the records that fit.
func TestReaderEveryTruncation(t *testing.T) {
	w := NewWriter(NewBuffer(256))
	must(t, w.Append(1, []byte("a")))
	must(t, w.Append(2, nil))
	must(t, w.Append(3, bytes.Repeat([]byte{9}, 17)))
	full := w.Bytes()
	bounds := map[int]int{0: 0, 16: 1, 24: 2, 24 + RecordSize(17): 3}
	for cut := 0; cut <= len(full); cut++ {
		r := NewReader(full[:cut])
		n := 0
		for r.Next() {
			n++
		}
		if want, ok := bounds[cut]; ok {
			if r.Err() != nil || n != want {
				t.Fatalf("cut %d at a boundary: %d records, err %v", cut, n, r.Err())
			}
			continue
		}
		var e *Error
		if !errors.As(r.Err(), &e) || !errors.Is(r.Err(), ErrTruncated) {
			t.Fatalf("cut %d: err %v, want a truncation *Error", cut, r.Err())
		}
		if e.Offset < r.Consumed() || e.Offset > cut {
			t.Fatalf("cut %d: offset %d outside [%d, %d]", cut, e.Offset, r.Consumed(), cut)
		}
		if r.Next() || r.Type() != TypeInvalid || r.Payload() != nil {
			t.Fatalf("cut %d: Next after an error", cut)
		}
	}
}

// Each malformed header shape, with the offset and kind the error names.
func TestReaderRejectsMalformed(t *testing.T) {
	good := header(1, 1)
	good = append(good, 'x', 0, 0, 0, 0, 0, 0, 0)
	cases := []struct {
		name   string
		stream []byte
		kind   error
		off    int
	}{
		{"type 0", append(bytes.Clone(good), header(0, 0)...), ErrCorrupt, 16},
		{"size max uint32", append(bytes.Clone(good), header(5, 0xFFFFFFFF)...), ErrTruncated, 16},
		{"size one past the end", append(bytes.Clone(good), append(header(5, 9), make([]byte, 8)...)...), ErrTruncated, 16},
		{"padding missing", append(bytes.Clone(good), append(header(5, 1), 'y')...), ErrTruncated, 25},
		{"last padding byte set", append(bytes.Clone(good[:15]), 1), ErrCorrupt, 15},
		{"7 stray bytes", append(bytes.Clone(good), 1, 0, 0, 0, 0, 0, 0), ErrTruncated, 16},
	}
	for _, c := range cases {
		r := NewReader(c.stream)
		for r.Next() {
		}
		var e *Error
		if !errors.As(r.Err(), &e) || !errors.Is(r.Err(), c.kind) || e.Offset != c.off {
			t.Errorf("%s: err %v, want %v at %d", c.name, r.Err(), c.kind, c.off)
		}
	}
}

func TestWriterShapes(t *testing.T) {
	var zero Writer
	if _, err := zero.Alloc(1, 0); !errors.Is(err, ErrFull) || zero.Dropped() != 1 {
		t.Fatalf("zero Writer: %v, dropped %d", err, zero.Dropped())
	}
	if len(zero.Bytes()) != 0 {
		t.Fatalf("zero Writer Bytes %v", zero.Bytes())
	}
	w := NewWriter(NewBuffer(RecordSize(8)))
	if _, err := w.Alloc(TypeInvalid, 0); !errors.Is(err, ErrInvalidType) {
		t.Fatalf("type 0: %v", err)
	}
	if _, err := w.Alloc(1, -1); err == nil {
		t.Fatal("negative size accepted")
	}
	// The largest sizes, on 64- and 32-bit ints alike: past MaxPayload is
	// ErrTooLarge; up to it, an event that does not fit is dropped (where
	// int is 32 bits, the record size of math.MaxInt does not fit an int).
	var maxPayload uint64 = MaxPayload
	if uint64(math.MaxInt) > maxPayload {
		if _, err := w.Alloc(1, int(maxPayload+1)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("MaxPayload+1: %v", err)
		}
		if _, err := w.Alloc(1, int(maxPayload)); !errors.Is(err, ErrFull) {
			t.Fatalf("MaxPayload into 16 bytes: %v", err)
		}
		if w.Dropped() != 1 || uint64(w.DroppedBytes()) != HeaderSize+maxPayload+1 {
			t.Fatalf("dropped %d (%d B)", w.Dropped(), w.DroppedBytes())
		}
	} else {
		if _, err := w.Alloc(1, math.MaxInt); !errors.Is(err, ErrFull) || w.Dropped() != 1 {
			t.Fatalf("math.MaxInt into 16 bytes: %v", err)
		}
	}
	// Exactly full.
	if err := w.Append(1, []byte("12345678")); err != nil || w.Free() != 0 {
		t.Fatalf("exact fit: %v, free %d", err, w.Free())
	}
	// Load of a misaligned capture blocks appends until Reset; Load of
	// something too large changes nothing.
	if err := w.Load([]byte{1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(1, nil); !errors.Is(err, ErrMisaligned) {
		t.Fatalf("append after a misaligned Load: %v", err)
	}
	if err := w.Load(make([]byte, 17)); !errors.Is(err, ErrFull) || w.Len() != 3 {
		t.Fatalf("oversize Load: %v, Len %d", err, w.Len())
	}
	w.Reset()
	if err := w.Append(1, nil); err != nil || w.Len() != HeaderSize {
		t.Fatalf("append after Reset: %v", err)
	}
	// Load of its own stream (aliasing) is a no-op copy.
	s := bytes.Clone(w.Bytes())
	if err := w.Load(w.Bytes()); err != nil || !bytes.Equal(w.Bytes(), s) {
		t.Fatalf("self Load: %v", err)
	}
	if err := Put[pos](w, 1, nil); !errors.Is(err, ErrNilValue) {
		t.Fatalf("Put nil: %v", err)
	}
}

// Many Readers walk one finished stream at once.
func TestConcurrentReaders(t *testing.T) {
	w := NewWriter(NewBuffer(1 << 12))
	for i := range 50 {
		p := pos{ID: uint64(i)}
		must(t, Put(w, tPos, &p))
	}
	s := w.Bytes()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r := NewReader(s)
				var i uint64
				for r.Next() {
					q, err := View[pos](r.Payload())
					if err != nil || q.ID != i {
						errs <- errors.New("bad record")
						return
					}
					i++
				}
				if r.Err() != nil || i != 50 {
					errs <- r.Err()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
