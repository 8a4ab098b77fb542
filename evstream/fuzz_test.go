package evstream

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReader feeds arbitrary bytes to a Reader. It must never panic, every
// record it yields must lie inside the stream at an aligned offset, an error
// must be an *Error naming an offset inside the stream, and re-writing the
// records it read must reproduce the well-formed prefix byte for byte.
func FuzzReader(f *testing.F) {
	w := NewWriter(NewBuffer(256))
	p := pos{ID: 1, X: 2}
	_ = Put(w, tPos, &p)
	_ = w.Append(tName, []byte("name"))
	_ = w.Append(tOdd, nil)
	f.Add(bytes.Clone(w.Bytes()))
	f.Add(bytes.Clone(w.Bytes()[:w.Len()-1]))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Copy into an aligned buffer so View's alignment check sees what a
		// real consumer would; also read the unaligned original.
		buf := NewBuffer(len(data))
		copy(buf, data)
		out := NewWriter(NewBuffer(len(data)))
		for _, in := range [][]byte{buf, data} {
			out.Reset()
			r := NewReader(in)
			last := -1
			for r.Next() {
				off := r.Offset()
				if off <= last || off%Align != 0 || off+HeaderSize+len(r.Payload()) > len(in) || r.Type() == TypeInvalid {
					t.Fatalf("bad record at %d (last %d, size %d, len %d)", off, last, len(r.Payload()), len(in))
				}
				last = off
				if err := out.Append(r.Type(), r.Payload()); err != nil {
					t.Fatalf("re-append: %v", err)
				}
				if r.Type() == tPos {
					_, _ = View[pos](r.Payload())
				}
			}
			if !bytes.Equal(out.Bytes(), in[:r.Consumed()]) {
				t.Fatalf("re-encoded prefix differs")
			}
			err := r.Err()
			if err == nil {
				if r.Consumed() != len(in) {
					t.Fatalf("no error but consumed %d of %d", r.Consumed(), len(in))
				}
				continue
			}
			var e *Error
			if !errors.As(err, &e) || (!errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt)) {
				t.Fatalf("error %v is not a stream *Error", err)
			}
			if e.Offset < r.Consumed() || e.Offset > len(in) || e.Error() == "" {
				t.Fatalf("error offset %d outside [%d, %d]", e.Offset, r.Consumed(), len(in))
			}
		}
	})
}
