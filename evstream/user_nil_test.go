package evstream_test

import (
	"errors"
	"testing"

	"github.com/vkjobs/vkjobs/evstream"
)

// TestUserPutNil: Put of a nil pointer is ErrNilValue and writes nothing
// (it panicked in unsafe.Slice).
func TestUserPutNil(t *testing.T) {
	type plain struct{ A, B uint32 }
	w := evstream.NewWriter(evstream.NewBuffer(256))
	if err := evstream.Put(w, 1, &plain{1, 2}); err != nil {
		t.Fatal(err)
	}
	n := w.Len()
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Put(nil) panicked: %v", r)
			}
		}()
		return evstream.Put[plain](w, 1, nil)
	}()
	if !errors.Is(err, evstream.ErrNilValue) {
		t.Errorf("Put(nil) = %v, want ErrNilValue", err)
	}
	if w.Len() != n {
		t.Errorf("Put(nil) wrote: length %d -> %d", n, w.Len())
	}
}
