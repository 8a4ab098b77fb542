package offline_test

import (
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// TestOfflineMisuse: the offline API's other entry points refuse
// nonsense clearly: Resample to 0, negative, NaN or infinite rates; a
// compressed clip added to a skeleton of another bone count or index;
// Measure of a clip against another skeleton; SampleAt into a short pose.
func TestOfflineMisuse(t *testing.T) {
	sk, c := animtest.Chain(4, 30, 30)
	for _, r := range []float64{0, -30, math.NaN(), math.Inf(1), 1e5} {
		if _, err := c.Resample(r); err == nil {
			t.Errorf("Resample(%v): no error", r)
		} else {
			t.Logf("Resample(%v): %v", r, err)
		}
	}
	r, err := c.Resample(7)
	if err != nil || r.Validate(sk) != nil {
		t.Errorf("Resample(7): %v", err)
	}
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	sk3, _ := animtest.Chain(3, 2, 30)
	var b offline.Builder
	i3 := b.AddSkeleton(sk3)
	if err := b.AddClip(i3, cc); err == nil {
		t.Errorf("AddClip of a 4-bone clip to a 3-bone skeleton: no error")
	} else {
		t.Logf("bone count mismatch: %v", err)
	}
	for _, i := range []int{-1, 1, 99} {
		if err := b.AddClip(i, cc); err == nil {
			t.Errorf("AddClip(%d, ...) with one skeleton: no error", i)
		}
	}
	if _, err := offline.Compress(sk3, c, offline.CompressOptions{}); err == nil {
		t.Errorf("Compress of a 4-bone clip with a 3-bone skeleton: no error")
	}
	blob, cv := animtest.Blob(t, sk, cc)
	_ = blob
	if _, err := offline.Measure(sk3, c, cv); err == nil {
		t.Errorf("Measure with a 3-bone skeleton: no error")
	}
	if _, err := offline.Measure(sk, c, anim.ClipView{}); err == nil {
		t.Errorf("Measure of a zero ClipView: no error")
	}
	_, c8 := animtest.Chain(4, 31, 30)
	if _, err := offline.Measure(sk, c8, cv); err == nil {
		t.Errorf("Measure of a 31-frame source against a 30-frame clip: no error")
	}
	if err := c.SampleAt(0.1, make([]float32, 3*anim.PoseFloats)); err == nil {
		t.Errorf("SampleAt into a 3-bone pose of a 4-bone clip: no error")
	}
	pose := make([]float32, 4*anim.PoseFloats)
	for _, tm := range []float64{math.NaN(), -1, 1e9, math.Inf(-1)} {
		if err := c.SampleAt(tm, pose); err != nil {
			t.Errorf("SampleAt(%v): %v", tm, err)
		}
		for _, v := range pose {
			if math.IsNaN(float64(v)) {
				t.Errorf("SampleAt(%v): NaN in the pose", tm)
				break
			}
		}
	}
	for _, o := range []offline.ContactOptions{{Bones: []int{9}}, {Bones: []int{-1}}, {Up: 3}, {Up: -1}, {MaxSpeed: math.NaN()}, {MinDuration: -1}} {
		if _, err := offline.DetectFootContacts(sk, c, o); err == nil {
			t.Errorf("DetectFootContacts(%+v): no error", o)
		} else {
			t.Logf("DetectFootContacts(%+v): %v", o, err)
		}
	}
}

// TestNilArguments: nil skeletons, clips and compressed clips given
// to the offline API are errors naming them (each panicked with a nil
// pointer dereference), and Measure and BitSquidFloor validate the source
// clip against the skeleton (BitSquidFloor of a source whose track covers
// 5 of its 10 frames returned figures without a word).
func TestNilArguments(t *testing.T) {
	sk, c := animtest.Chain(3, 10, 30)
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
			_, bad := animtest.Chain(3, 10, 30)
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
