package offline

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/vkjobs/vkjobs/anim"
)

// ContactOptions tune DetectFootContacts. The zero value means defaults.
type ContactOptions struct {
	// Bones are the bones to watch. nil picks bones named like toes
	// ("toe"), or else feet ("foot", "ankle").
	Bones []int
	// MaxSpeed is the model-space speed (m/s) below which a bone can be in
	// contact (default 0.3); it leaves contact above 1.5 × MaxSpeed.
	MaxSpeed float64
	// MaxHeight is how far (m) above its lowest point in the clip the bone
	// may be while in contact (default 0.08; negative disables the test).
	MaxHeight float64
	// MinDuration drops contacts shorter than this (s, default 0.1).
	MinDuration float64
	// Up is the up axis (0 x, 1 y, 2 z; default y, as BVH and glTF).
	Up int
}

// DetectFootContacts finds ground contacts of feet from their model-space
// height and speed and returns sorted events: EventFootDown when a contact
// starts after the first frame, EventFootUp when one ends before the last
// frame. Set the result as clip.Events to store it in the blob.
func DetectFootContacts(sk *Skeleton, c *Clip, opt ContactOptions) ([]anim.Event, error) {
	if sk == nil || c == nil {
		return nil, errors.New("anim: DetectFootContacts: nil skeleton or clip")
	}
	if err := c.Validate(sk); err != nil {
		return nil, err
	}
	if opt.MaxSpeed == 0 {
		opt.MaxSpeed = 0.3
	}
	if opt.MaxHeight == 0 {
		opt.MaxHeight = 0.08
	}
	if opt.MinDuration == 0 {
		opt.MinDuration = 0.1
	}
	if opt.Up == 0 {
		opt.Up = 1
	}
	if opt.Up < 0 || opt.Up > 2 || !(opt.MaxSpeed > 0) || !(opt.MinDuration >= 0) {
		return nil, fmt.Errorf("anim: DetectFootContacts: bad options %+v", opt)
	}
	bones := opt.Bones
	if bones == nil {
		bones = bonesNamed(sk, "toe")
		if len(bones) == 0 {
			bones = append(bonesNamed(sk, "foot"), bonesNamed(sk, "ankle")...)
		}
		if len(bones) == 0 {
			return nil, errors.New("anim: DetectFootContacts: no bone named like a toe or foot; pass ContactOptions.Bones")
		}
	}
	nb := sk.NumBones()
	for _, b := range bones {
		if b < 0 || b >= nb || b > math.MaxUint16 {
			return nil, fmt.Errorf("anim: DetectFootContacts: bone %d of %d", b, nb)
		}
	}
	// Model-space positions of the watched bones.
	pos := make([][]Vec3, len(bones))
	for i := range pos {
		pos[i] = make([]Vec3, c.Frames)
	}
	local := make([]Transform, nb)
	model := make([]mat4, nb)
	for f := range c.Frames {
		c.Pose(f, local)
		modelMatrices(sk.Parents, local, model)
		for i, b := range bones {
			pos[i][f] = Vec3{model[b][12], model[b][13], model[b][14]}
		}
	}
	var events []anim.Event
	minFrames := int(math.Ceil(opt.MinDuration * c.Rate))
	for i, b := range bones {
		p := pos[i]
		low := math.Inf(1)
		for _, v := range p {
			low = math.Min(low, v[opt.Up])
		}
		speed := func(f int) float64 {
			a, e := max(f-2, 0), min(f+2, c.Frames-1)
			if e == a {
				return 0
			}
			return p[e].Dist(p[a]) * c.Rate / float64(e-a)
		}

		near := func(f int) bool { return opt.MaxHeight < 0 || p[f][opt.Up]-low <= opt.MaxHeight }
		in, start := false, 0
		emit := func(s, e int) { // contact over frames [s, e)
			if e-s < minFrames {
				return
			}
			if s > 0 {
				events = append(events, anim.Event{Time: float32(float64(s) / c.Rate), Type: anim.EventFootDown, Bone: uint16(b)})
			}
			if e < c.Frames {
				events = append(events, anim.Event{Time: float32(float64(e) / c.Rate), Type: anim.EventFootUp, Bone: uint16(b)})
			}
		}
		for f := range c.Frames {
			v := speed(f)
			switch {
			case !in && v < opt.MaxSpeed && near(f):
				in, start = true, f
			case in && (v > 1.5*opt.MaxSpeed || !near(f)):
				in = false
				emit(start, f)
			}
		}
		if in {
			emit(start, c.Frames)
		}
	}
	sort.SliceStable(events, func(a, b int) bool {
		if events[a].Time != events[b].Time {
			return events[a].Time < events[b].Time
		}
		return events[a].Bone < events[b].Bone
	})
	return events, nil
}

func bonesNamed(sk *Skeleton, part string) []int {
	var r []int
	for i, n := range sk.Names {
		if strings.Contains(strings.ToLower(n), strings.ToLower(part)) {
			r = append(r, i)
		}
	}
	return r
}
