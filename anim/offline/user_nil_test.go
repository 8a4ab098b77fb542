package offline_test

import (
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim/offline"
)

// TestUserNilArguments: nil skeletons, clips and compressed clips given
// to the offline API are errors naming them (each panicked with a nil
// pointer dereference), and Measure and BitSquidFloor validate the source
// clip against the skeleton (BitSquidFloor of a source whose track covers
// 5 of its 10 frames returned figures without a word).
func TestUserNilArguments(t *testing.T) {
	sk, c := userChain(3, 10, 30)
	cases := map[string]func() error{
		"Compress(nil, c)":  func() error { _, err := offline.Compress(nil, c, offline.CompressOptions{}); return err },
		"Compress(sk, nil)": func() error { _, err := offline.Compress(sk, nil, offline.CompressOptions{}); return err },
		"DetectFootContacts(nil, c)": func() error {
			_, err := offline.DetectFootContacts(nil, c, offline.ContactOptions{Bones: []int{2}})
			return err
		},
		"DetectFootContacts(sk, nil)": func() error { _, err := offline.DetectFootContacts(sk, nil, offline.ContactOptions{}); return err },
		"BitSquidFloor(nil, c)":       func() error { _, err := offline.BitSquidFloor(nil, c); return err },
		"BitSquidFloor(sk, nil)":      func() error { _, err := offline.BitSquidFloor(sk, nil); return err },
		"Clip.Validate of nil":        func() error { var n *offline.Clip; return n.Validate(sk) },
		"Skeleton.Validate of nil":    func() error { var n *offline.Skeleton; return n.Validate() },
		"Builder.AddClip(0, nil)": func() error {
			var b offline.Builder
			return b.AddClip(b.AddSkeleton(sk), nil)
		},
		"Builder.AddSkeleton(nil)": func() error {
			var b offline.Builder
			b.AddSkeleton(nil)
			_, err := b.Bytes()
			return err
		},
		"BitSquidFloor of a short track": func() error {
			_, bad := userChain(3, 10, 30)
			bad.Tracks[4].Values = bad.Tracks[4].Values[:5]
			bad.Tracks[4].Frames = bad.Tracks[4].Frames[:5]
			_, err := offline.BitSquidFloor(sk, bad)
			return err
		},
	}
	for name, f := range cases {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic: %v", name, r)
				}
			}()
			return f()
		}()
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.Contains(err.Error(), "nil") && !strings.Contains(err.Error(), "frames") {
			t.Errorf("%s: error %q says neither nil nor what is short", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}
