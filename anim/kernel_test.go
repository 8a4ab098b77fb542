package anim_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/sched"
)

// TestSampleKernelThroughScheduler runs the sampling kernel through a
// CPU scheduler for 0, 1, SampleGrain-1, SampleGrain+1 and 203 characters
// (mixed codecs, random times, grains 0, 1 and 5), frame after frame with
// the same cursors, and checks every pose against SampleJob.Run on a copy;
// unknown flag bits are refused.
func TestSampleKernelThroughScheduler(t *testing.T) {
	sk, c := animtest.Chain(7, 90, 30)
	var b offline.Builder
	si := b.AddSkeleton(sk)
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: codec, Tolerance: 0.001, SegmentSeconds: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddClip(si, cc); err != nil {
			t.Fatal(err)
		}
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	reg := sched.NewRegistry()
	sampleID, err := anim.RegisterSampleKernel(reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stride := max(blob.Clip(0).CursorWords(), blob.Clip(1).CursorWords())
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, anim.SampleGrain - 1, anim.SampleGrain + 1, 203} {
		for _, grain := range []uint32{0, 1, 5} {
			mk := func() anim.SampleJob {
				return anim.SampleJob{Blob: blob, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride),
					CursorStride: stride, Poses: make([]float32, n*7*anim.PoseFloats), Bones: 7}
			}
			viaSched, direct := mk(), mk()
			for frame := 0; frame < 6; frame++ {
				for i := range viaSched.Inputs {
					in := anim.SampleInput{Clip: blob.Clip(i % 2).Offset(), Time: float32(frame)*0.21 + rng.Float32()*0.05}
					if frame == 4 {
						in.Time = rng.Float32() * 4 // seeks back and past the end
					}
					viaSched.Inputs[i], direct.Inputs[i] = in, in
				}
				td, err := viaSched.TaskData(0)
				if err != nil {
					t.Fatalf("%d characters: TaskData: %v", n, err)
				}
				td.Grain = grain
				id, err := s.Add(&sched.Task{Kernel: sampleID, Data: td})
				if err == nil {
					err = s.Wait(id)
				}
				if err != nil {
					t.Fatalf("%d characters grain %d frame %d: %v", n, grain, frame, err)
				}
				if err := direct.Run(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(viaSched.Poses, direct.Poses) || !slices.Equal(viaSched.Cursors, direct.Cursors) {
					t.Fatalf("%d characters grain %d frame %d: the scheduler's poses or cursors differ from Run's", n, grain, frame)
				}
			}
		}
	}
	j := anim.SampleJob{Blob: blob, Inputs: make([]anim.SampleInput, 1), Cursors: make([]uint32, stride), CursorStride: stride, Poses: make([]float32, 7*anim.PoseFloats), Bones: 7}
	j.Inputs[0].Clip = blob.Clip(0).Offset()
	if _, err := j.TaskData(1 << 7); err == nil {
		t.Errorf("TaskData with an unknown flag bit: no error")
	} else {
		t.Logf("unknown flag: %v", err)
	}
}
