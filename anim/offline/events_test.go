package offline

import (
	"math"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
)

// On the CMU jumps clip both feet land and lift repeatedly: down and up
// alternate per foot, events are sorted, and they reach the blob.
func TestFootContactsCMU(t *testing.T) {
	ims, _, data := cmuData(t)
	ev := ims[0].Clips[0].Events
	sk := ims[0].Skeleton
	perBone := map[uint16][]anim.Event{}
	for i, e := range ev {
		if i > 0 && e.Time < ev[i-1].Time {
			t.Fatal("events not sorted")
		}
		perBone[e.Bone] = append(perBone[e.Bone], e)
	}
	for _, name := range []string{"LeftToeBase", "RightToeBase"} {
		b := uint16(bonesNamed(sk, name)[0])
		es := perBone[b]
		downs := 0
		for i, e := range es {
			if e.Type == anim.EventFootDown {
				downs++
			}
			if i > 0 && e.Type == es[i-1].Type {
				t.Errorf("%s: two %d events in a row at %v s", name, e.Type, e.Time)
			}
		}
		if downs < 8 {
			t.Errorf("%s: %d footfalls in %v s of forward jumps", name, downs, ims[0].Clips[0].Duration())
		}
	}
	if len(perBone) != 2 {
		t.Errorf("events on %d bones, want the two toes", len(perBone))
	}
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if c := bl.Clip(0); c.NumEvents() != len(ev) || c.Event(3) != ev[3] {
		t.Errorf("blob holds %d events", c.NumEvents())
	}
}

// A foot that slides, then rests on the ground, then lifts: one contact
// from when it stops to when it leaves.
func TestFootContactsSynthetic(t *testing.T) {
	sk := &Skeleton{Names: []string{"hips", "LeftFoot"}, Parents: []int32{-1, 0},
		Rest: []Transform{IdentityTransform, {T: Vec3{0, -0.9, 0}, R: IdentityQuat, S: Vec3{1, 1, 1}}}}
	const frames, rate = 121, 60.0
	c := &Clip{Name: "step", Rate: rate, Frames: frames, Tracks: make([]Track, 6)}
	hips := Track{}
	for f := range frames {
		x, y := 0.0, 1.0
		switch {
		case f < 30: // moving fast
			x = float64(f) * 0.02
		case f < 90: // planted
			x = 0.6
		default: // lifting
			x, y = 0.6, 1+float64(f-90)*0.01
		}
		hips.Frames = append(hips.Frames, int32(f))
		hips.Values = append(hips.Values, [4]float64{x, y, 0, 0})
	}
	c.Tracks[0] = hips
	c.Tracks[1] = constantTrack(frames, [4]float64(IdentityQuat))
	c.Tracks[2] = constantTrack(frames, [4]float64{1, 1, 1, 0})
	c.Tracks[3] = constantTrack(frames, [4]float64{0, -0.9, 0, 0})
	c.Tracks[4] = constantTrack(frames, [4]float64(IdentityQuat))
	c.Tracks[5] = constantTrack(frames, [4]float64{1, 1, 1, 0})
	ev, err := DetectFootContacts(sk, c, ContactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 2 || ev[0].Type != anim.EventFootDown || ev[1].Type != anim.EventFootUp || ev[0].Bone != 1 {
		t.Fatalf("events %+v", ev)
	}
	if math.Abs(float64(ev[0].Time)-30/rate) > 3/rate || math.Abs(float64(ev[1].Time)-90/rate) > 6/rate {
		t.Errorf("contact from %v to %v s, want about 0.5 to 1.5", ev[0].Time, ev[1].Time)
	}
	if _, err := DetectFootContacts(sk, c, ContactOptions{Bones: []int{5}}); err == nil {
		t.Error("bone 5 of 2 accepted")
	}
	sk.Names[1] = "paw"
	if _, err := DetectFootContacts(sk, c, ContactOptions{}); err == nil {
		t.Error("no foot bone, no error")
	}
}

// Windows [t0, t1) partition the events; a looping window is two calls.
func TestEventRange(t *testing.T) {
	bl := cmuBlob(t)
	c := bl.Clip(0)
	n := c.NumEvents()
	total := 0
	for t0 := float32(0); t0 < c.Duration()+1; t0 += 1.0 / 30 {
		i, j := c.EventRange(t0, t0+1.0/30)
		for k := i; k < j; k++ {
			if e := c.Event(k); e.Time < t0 || e.Time >= t0+1.0/30 {
				t.Fatalf("event %d at %v outside [%v, %v)", k, e.Time, t0, t0+1.0/30)
			}
		}
		total += j - i
	}
	if total != n {
		t.Errorf("windows hold %d of %d events", total, n)
	}
	// Looping from 20 s to 1 s after the end.
	a := c.AppendEvents(nil, 20, c.Duration()+1)
	a = c.AppendEvents(a, 0, 1)
	i0, j0 := c.EventRange(20, 100)
	i1, j1 := c.EventRange(0, 1)
	if len(a) != (j0-i0)+(j1-i1) || len(a) == 0 {
		t.Errorf("looping window: %d events", len(a))
	}
	if i, j := c.EventRange(5, 4); i != j {
		t.Error("empty window returned events")
	}
}
