package evstream_test

// A user's view of the event stream: streams from elsewhere (a capture, a
// peer) may be garbage. Reading them must end, report an error for what does
// not parse, and never hand out a payload beyond the buffer.

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/vkjobs/vkjobs/evstream"
)

type userEvent struct {
	A, B uint32
	C    float32
	D    uint32
}

// readAll walks r to the end with a bound on the records (each record is at
// least one header long, so a reader that does not advance is caught).
func readAll(t *testing.T, buf []byte) (n int, err error) {
	t.Helper()
	r := evstream.NewReader(buf)
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
		_, _ = evstream.View[userEvent](p) // must not panic whatever the size
	}
	if r.Consumed() > len(buf) {
		t.Fatalf("consumed %d of %d bytes", r.Consumed(), len(buf))
	}
	return n, r.Err()
}

func validStream(t *testing.T, records int) []byte {
	t.Helper()
	w := evstream.NewWriter(evstream.NewBuffer(64 * records))
	for i := 0; i < records; i++ {
		var err error
		if i%3 == 0 {
			err = w.Append(evstream.Type(7+i), make([]byte, i%13))
		} else {
			err = evstream.Put(w, evstream.Type(100), &userEvent{A: uint32(i)})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return append([]byte(nil), w.Bytes()...)
}

// TestUserReaderGarbage: random bytes, truncations and header corruptions of
// a valid stream: every walk ends; a truncated stream reports an error.
func TestUserReaderGarbage(t *testing.T) {
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

// TestUserWriterLoadAndView: Load of garbage into a Writer, then appends;
// View with the wrong size or alignment; Put of an oversized record.
func TestUserWriterLoadAndView(t *testing.T) {
	w := evstream.NewWriter(evstream.NewBuffer(256))
	if err := w.Load(make([]byte, 1000)); err == nil {
		t.Errorf("Load of 1000 bytes into 256 accepted")
	}
	if err := w.Load([]byte{1, 2, 3}); err != nil {
		t.Fatalf("Load of 3 bytes: %v", err)
	}
	if err := evstream.Put(w, 1, &userEvent{}); err == nil {
		t.Errorf("append after a misaligned Load accepted")
	}
	w.Reset()
	if err := evstream.Put(w, 1, &userEvent{A: 5}); err != nil {
		t.Fatalf("Put after Reset: %v", err)
	}
	big := make([]byte, 1<<20)
	if err := w.Append(2, big); err == nil {
		t.Errorf("a record larger than the buffer accepted")
	}
	if _, err := w.Alloc(2, -1); err == nil {
		t.Errorf("Alloc of -1 bytes accepted")
	}
	r := evstream.NewReader(w.Bytes())
	if !r.Next() {
		t.Fatalf("no record: %v", r.Err())
	}
	if v, err := evstream.View[userEvent](r.Payload()); err != nil || v.A != 5 {
		t.Errorf("View: %+v, %v", v, err)
	}
	if _, err := evstream.View[[3]userEvent](r.Payload()); err == nil {
		t.Errorf("View of a larger type accepted")
	}
	if _, err := evstream.View[userEvent](nil); err == nil {
		t.Errorf("View of nil accepted")
	}
	odd := make([]byte, 17)
	if _, err := evstream.View[userEvent](odd[1:]); err == nil {
		t.Errorf("View of a misaligned payload accepted")
	}
}
