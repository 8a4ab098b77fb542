package anim_test

import (
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

// swingBlob compresses the swing clip with codec into a loaded blob.
func swingBlob(t testing.TB, codec anim.Codec) (*offline.Skeleton, *anim.Blob) {
	t.Helper()
	sk, clip := swing()
	sk.InverseBind = [][16]float32{kernels.Identity(), {0: 1, 5: 1, 10: 1, 12: -0.5, 13: -1.5, 15: 1}}
	cc, err := offline.Compress(sk, clip, offline.CompressOptions{Tolerance: 0.001, Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	var b offline.Builder
	if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
		t.Fatal(err)
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	return sk, blob
}

// TestClipSampleIsSampleJob: ClipView.Sample writes the bits SampleJob
// writes for one character, with either codec, playing forward and
// seeking back.
func TestClipSampleIsSampleJob(t *testing.T) {
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		_, blob := swingBlob(t, codec)
		c := blob.Clip(0)
		cursor := make([]uint32, c.CursorWords())
		pose := make([]kernels.Transform, c.Bones())
		job := anim.SampleJob{Blob: blob, Inputs: make([]anim.SampleInput, 1), Cursors: make([]uint32, c.CursorWords()),
			CursorStride: c.CursorWords(), Poses: make([]float32, c.Bones()*anim.PoseFloats), Bones: c.Bones()}
		for _, tm := range []float32{0, 0.1, 0.55, 1.2, 2, 3, 0.3, -1} {
			if err := c.Sample(tm, cursor, pose); err != nil {
				t.Fatal(err)
			}
			job.Inputs[0] = anim.SampleInput{Clip: c.Offset(), Time: tm}
			if err := job.Run(); err != nil {
				t.Fatal(err)
			}
			want := kernels.TransformsOf(job.Poses)
			for b := range pose {
				if pose[b] != want[b] {
					t.Fatalf("%v at %v s, bone %d: Sample %v, SampleJob %v", codec, tm, b, pose[b], want[b])
				}
			}
		}
	}
}

// TestClipSampleRejects: a short pose or cursor, or a zero ClipView, is
// an error naming what is wrong.
func TestClipSampleRejects(t *testing.T) {
	_, blob := swingBlob(t, anim.CodecCurve)
	c := blob.Clip(0)
	pose := make([]kernels.Transform, 2)
	cursor := make([]uint32, c.CursorWords())
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"short pose", "pose holds 1 bones, the clip has 2", c.Sample(0, cursor, pose[:1])},
		{"short cursor", "cursor of 3 words", c.Sample(0, cursor[:3], pose)},
		{"zero view", "zero ClipView", anim.ClipView{}.Sample(0, cursor, pose)},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), "anim: Sample") || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestLocalToModelIsKernels: anim.LocalToModel (the flat batch form) is
// the kernels' Go reference, bit for bit, and the per-step chain agrees.
func TestLocalToModelIsKernels(t *testing.T) {
	_, blob := swingBlob(t, anim.CodecCurve)
	c := blob.Clip(0)
	parents := c.Skeleton().Parents(nil)
	pose := make([]kernels.Transform, c.Bones())
	if err := c.Sample(0.7, make([]uint32, c.CursorWords()), pose); err != nil {
		t.Fatal(err)
	}
	flat := make([]float32, c.Bones()*anim.ModelFloats)
	local := make([]float32, c.Bones()*anim.PoseFloats)
	copy(kernels.TransformsOf(local), pose)
	if err := anim.LocalToModel(parents, local, flat, 0, 1); err != nil {
		t.Fatal(err)
	}
	ref := make([]kernels.Mat4, c.Bones())
	if err := kernels.ToModelGo(parents, pose, ref); err != nil {
		t.Fatal(err)
	}
	for b, m := range kernels.Mat4sOf(flat) {
		if m != ref[b] {
			t.Fatalf("bone %d: anim.LocalToModel %v, kernels.ToModelGo %v", b, m, ref[b])
		}
	}
}

// TestInverseBindMatrices: the blob's inverse bind matrices as
// kernels.Mat4, the same values InverseBind gives as floats.
func TestInverseBindMatrices(t *testing.T) {
	sk, blob := swingBlob(t, anim.CodecCurve)
	s := blob.Clip(0).Skeleton()
	got := s.InverseBindMatrices(nil)
	if len(got) != 2 || got[1] != kernels.Mat4(sk.InverseBind[1]) || got[0] != kernels.Identity() {
		t.Fatalf("InverseBindMatrices: %v", got)
	}
	flat := s.InverseBind(nil)
	for i, m := range kernels.Mat4sOf(flat) {
		if m != got[i] {
			t.Fatalf("bone %d: %v, InverseBind %v", i, got[i], m)
		}
	}
}

// TestPerStepZeroAllocs: a character's step (sample, local-to-model with
// palette, LBS, DQS palette, DQS) allocates nothing.
func TestPerStepZeroAllocs(t *testing.T) {
	sk, blob := swingBlob(t, anim.CodecCurve)
	c := blob.Clip(0)
	n := c.Bones()
	cursor, local := make([]uint32, c.CursorWords()), make([]kernels.Transform, n)
	model, pal, dq := make([]kernels.Mat4, n), make([]kernels.Mat4, n), make([]kernels.DualQuat, n)
	verts, err := kernels.SkinVertices(nil, [][3]float32{{0.7, 1.5, 0}, {0.2, 1.5, 0}}, nil, [][4]uint16{{1}, {0, 1}}, [][4]float32{{1}, {0.5, 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]kernels.SkinnedVertex, len(verts))
	tm := float32(0)
	allocs := testing.AllocsPerRun(50, func() {
		tm += 1.0 / 30
		err = c.Sample(tm, cursor, local)
		if err == nil {
			err = kernels.ToModelSkin(sk.Parents, local, sk.InverseBind, model, pal)
		}
		if err == nil {
			err = kernels.LBS(verts, pal, out)
		}
		if err == nil {
			err = kernels.DualQuatPalette(pal, dq)
		}
		if err == nil {
			err = kernels.DQS(verts, dq, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per step, want 0", allocs)
	}
}
