package offline_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

func userBVH(channels, motion string) string {
	return "HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS " + channels + "\n JOINT Leg\n {\n  OFFSET 0 -10 0\n  CHANNELS 3 Zrotation Xrotation Yrotation\n  End Site\n  {\n   OFFSET 0 -10 0\n  }\n }\n}\nMOTION\n" + motion
}

// TestBVHUserMistakes: hand-written BVH files with the mistakes users
// make are refused with a *ParseError naming the file and the line; the
// well-formed edge cases (one frame, a CMU-named file of two frames)
// import to what they say.
func TestBVHUserMistakes(t *testing.T) {
	six := "6 Xposition Yposition Zposition Zrotation Xrotation Yrotation"
	bad := map[string]string{
		"frame time 0":           userBVH(six, "Frames: 2\nFrame Time: 0\n0 0 0 0 0 0 0 0 0\n0 0 0 0 0 0 0 0 0\n"),
		"frame time negative":    userBVH(six, "Frames: 2\nFrame Time: -0.01\n0 0 0 0 0 0 0 0 0\n0 0 0 0 0 0 0 0 0\n"),
		"frame time NaN":         userBVH(six, "Frames: 2\nFrame Time: NaN\n0 0 0 0 0 0 0 0 0\n0 0 0 0 0 0 0 0 0\n"),
		"frame time Inf":         userBVH(six, "Frames: 2\nFrame Time: +Inf\n0 0 0 0 0 0 0 0 0\n0 0 0 0 0 0 0 0 0\n"),
		"frames 0":               userBVH(six, "Frames: 0\nFrame Time: 0.01\n"),
		"frames negative":        userBVH(six, "Frames: -3\nFrame Time: 0.01\n"),
		"frames huge":            userBVH(six, "Frames: 99999999999\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n"),
		"frames missing":         userBVH(six, "Frames: 3\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n"),
		"short frame line":       userBVH(six, "Frames: 2\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n0 0 0 0 0 0 0 0\n"),
		"long frame line":        userBVH(six, "Frames: 1\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0 0\n"),
		"NaN value":              userBVH(six, "Frames: 1\nFrame Time: 0.01\n0 0 0 0 NaN 0 0 0 0\n"),
		"Inf value":              userBVH(six, "Frames: 1\nFrame Time: 0.01\n0 Inf 0 0 0 0 0 0 0\n"),
		"huge value":             userBVH(six, "Frames: 1\nFrame Time: 0.01\n1e300 0 0 0 0 0 0 0 0\n"),
		"word value":             userBVH(six, "Frames: 1\nFrame Time: 0.01\n0 0 zero 0 0 0 0 0 0\n"),
		"unknown channel":        userBVH("6 Xposition Yposition Zposition Zrotation Xrotation Wrotation", "Frames: 1\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n"),
		"channel count too high": userBVH("7 Xposition Yposition Zposition Zrotation Xrotation Yrotation", "Frames: 1\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n"),
		"channel count negative": userBVH("-1", "Frames: 1\nFrame Time: 0.01\n0 0 0\n"),
		"duplicate channel":      userBVH("6 Xposition Xposition Zposition Zrotation Xrotation Yrotation", "Frames: 1\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n"),
		"no MOTION":              strings.Split(userBVH(six, ""), "MOTION")[0],
		"empty":                  "",
		"unclosed brace":         strings.TrimSuffix(strings.Split(userBVH(six, ""), "MOTION")[0], "}\n") + "MOTION\nFrames: 1\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n",
		"offset NaN":             strings.Replace(userBVH(six, "Frames: 1\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n"), "OFFSET 0 -10 0", "OFFSET 0 NaN 0", 1),
		"offset short":           strings.Replace(userBVH(six, "Frames: 1\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n"), "OFFSET 0 -10 0", "OFFSET 0 -10", 1),
	}
	for name, src := range bad {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic: %v", name, r)
				}
			}()
			imp, err := offline.ParseBVH("user.bvh", []byte(src), offline.BVHOptions{})
			var pe *offline.ParseError
			if err == nil {
				var c *offline.Clip
				if len(imp.Clips) > 0 {
					c = imp.Clips[0]
				}
				msg := ""
				if c != nil {
					if err := c.Validate(imp.Skeleton); err != nil {
						msg = " (clip invalid: " + err.Error() + ")"
					}
					msg += fmt.Sprintf(" %d frames at %v Hz", c.Frames, c.Rate)
				}
				t.Errorf("%s: imported%s, want a *ParseError", name, msg)
				return
			}
			if !errors.As(err, &pe) || pe.File != "user.bvh" {
				t.Errorf("%s: %T %v, want a *ParseError naming user.bvh", name, err, err)
				return
			}
			t.Logf("%s: %v", name, err)
		}()
	}
	imp, err := offline.ParseBVH("user.bvh", []byte(userBVH(six, "Frames: 1\nFrame Time: 0.01\n1 2 3 0 0 0 0 0 90\n")), offline.BVHOptions{})
	if err != nil {
		t.Fatalf("one frame: %v", err)
	}
	if c := imp.Clips[0]; c.Frames != 1 || math.Abs(c.Rate-100) > 1e-9 || math.Abs(c.Tracks[0].Values[0][0]-0.01) > 1e-12 {
		t.Errorf("one frame: %d frames at %v Hz, root at %v", c.Frames, c.Rate, c.Tracks[0].Values[0])
	}
	// A CMU-named file with one frame has no frame after the T-pose to keep.
	_, err = offline.ParseBVH("01_01.bvh", []byte(userBVH(six, "Frames: 1\nFrame Time: 0.01\n1 2 3 0 0 0 0 0 90\n")), offline.BVHOptions{})
	t.Logf("CMU-named, one frame: %v", err)
	imp, err = offline.ParseBVH("01_01.bvh", []byte(userBVH(six, "Frames: 2\nFrame Time: 0.01\n1 2 3 0 0 0 0 0 90\n1 2 3 0 0 0 0 0 90\n")), offline.BVHOptions{})
	if err != nil || imp.Clips[0].Frames != 1 {
		t.Errorf("CMU-named, two frames: %v", err)
	}
}

// TestHugeValuesRefused: translations, scales and rest offsets beyond
// what a float32 pose holds are refused by Validate (so by the importers
// and Compress) naming the bone and frame. The curve codec used to
// compress a 1e28 m translation "successfully", its result 5e20 m off with
// no error (the uniform codec refused it).
func TestHugeValuesRefused(t *testing.T) {
	sk, c := animtest.Chain(3, 5, 30)
	c.Tracks[3].Values[2][0] = 1e28
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		_, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec})
		if err == nil || !strings.Contains(err.Error(), "bone 1 translation: frame 2") {
			t.Errorf("%v: a 1e28 m translation: %v", codec, err)
		}
	}
	sk, c = animtest.Chain(3, 5, 30)
	for i := range c.Tracks[8].Values {
		c.Tracks[8].Values[i][1] = -2e18
	}
	if err := c.Validate(sk); err == nil || !strings.Contains(err.Error(), "bone 2 scale") {
		t.Errorf("a -2e18 scale: %v", err)
	}
	sk, c = animtest.Chain(3, 5, 30)
	sk.Rest[2].T[2] = 1e19
	if _, err := offline.Compress(sk, c, offline.CompressOptions{}); err == nil || !strings.Contains(err.Error(), "bone 2") {
		t.Errorf("a 1e19 m rest offset: %v", err)
	}
	sk, c = animtest.Chain(3, 5, 30)
	c.Tracks[0].Values[0][0] = 1e18 // the limit itself is fine
	if err := c.Validate(sk); err != nil {
		t.Errorf("a 1e18 m translation: %v", err)
	}
}
