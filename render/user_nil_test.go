package render_test

import (
	"errors"
	"testing"

	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/render"
)

// TestUserSubmitNil: Draw, SetState and Job of a nil packet are errors
// (evstream.ErrNilValue) that submit nothing; they panicked.
func TestUserSubmitNil(t *testing.T) {
	c, err := render.NewContext(1024)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"Draw":     func() error { return c.Draw(nil) },
		"SetState": func() error { return c.SetState(nil) },
		"Job":      func() error { return c.Job(nil) },
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s(nil) panicked: %v", name, r)
				}
			}()
			if err := f(); !errors.Is(err, evstream.ErrNilValue) {
				t.Errorf("%s(nil) = %v, want evstream.ErrNilValue", name, err)
			}
		}()
	}
	if c.Packets() != 0 || c.Len() != 0 || c.Dropped() != 0 {
		t.Errorf("after nil submissions: %d packets, %d bytes, %d dropped", c.Packets(), c.Len(), c.Dropped())
	}
}
