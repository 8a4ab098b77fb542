//go:build cgo

package anim_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// The GPU sampler (lavapipe) gives the CPU's poses and cursors bit for bit
// on the times the docs define specially (NaN, ±Inf, negative, past the
// end, exactly at keys and at the end), for curve and uniform clips, a
// one-bone clip under a wider pose stride, and cursors that move between
// clips from frame to frame.
func TestSampleGPUSpecialTimesMatchCPU(t *testing.T) {
	sk, c := animtest.Chain(6, 61, 30)
	sk1, c1 := animtest.Chain(1, 31, 30)
	var b offline.Builder
	s6, s1 := b.AddSkeleton(sk), b.AddSkeleton(sk1)
	for _, k := range []struct {
		s  int
		cc *offline.CompressedClip
	}{{s6, rvCompress(t, sk, c, anim.CodecCurve)}, {s6, rvCompress(t, sk, c, anim.CodecUniform)}, {s1, rvCompress(t, sk1, c1, anim.CodecCurve)}, {s1, rvCompress(t, sk1, c1, anim.CodecUniform)}} {
		if err := b.AddClip(k.s, k.cc); err != nil {
			t.Fatal(err)
		}
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	e := newGPUEnv(t)
	const n, bones = 48, 8
	cr := newCrowd(t, bl, n, bones, 11)
	inf := float32(math.Inf(1))
	special := []float32{float32(math.NaN()), inf, -inf, -1, 0, 1e30, float32(math.Copysign(0, -1)), 2, 1, 1.0 / 30, 0.5, 7.0 / 30}
	rng := rand.New(rand.NewPCG(5, 6))
	for frame := range 10 {
		for i := range n {
			cv := bl.Clip((i + frame) % bl.NumClips())
			cr.cpu.Inputs[i].Clip = cv.Offset()
			switch {
			case (i+frame)%3 == 0:
				cr.cpu.Inputs[i].Time = special[(i+frame)%len(special)]
			case (i+frame)%3 == 1:
				cr.cpu.Inputs[i].Time = cv.Duration()
			default:
				cr.cpu.Inputs[i].Time = float32(rng.IntN(cv.Frames())) / cv.Rate()
			}
		}
		cr.runCPU(t)
		e.run(t, cr.gpuTask(t))
		if !slices.Equal(cr.gpuPoses, cr.cpu.Poses) {
			for i := range cr.gpuPoses {
				if math.Float32bits(cr.gpuPoses[i]) != math.Float32bits(cr.cpu.Poses[i]) {
					ch := i / (bones * anim.PoseFloats)
					t.Fatalf("frame %d: character %d (clip %d, time %v): pose float %d: GPU %v, CPU %v", frame, ch,
						cr.cpu.Inputs[ch].Clip, cr.cpu.Inputs[ch].Time, i%(bones*anim.PoseFloats), cr.gpuPoses[i], cr.cpu.Poses[i])
				}
			}
		}
		if !slices.Equal(cr.gpuCur, cr.cpu.Cursors) {
			t.Fatalf("frame %d: GPU cursors differ from the CPU's", frame)
		}
	}
}
