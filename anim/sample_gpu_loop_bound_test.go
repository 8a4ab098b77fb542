//go:build cgo

package anim_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// loopBudget returns the device's loop budget, skipping the test on a
// device without one (the bound matters only where the driver rations
// loop passes: lavapipe).
func loopBudget(t *testing.T, e *gpuEnv) int {
	t.Helper()
	b := int(e.dev.LoopBudget())
	if b == 0 {
		t.Skipf("device %q has no loop budget", e.dev.Name())
	}
	return b
}

// uncheckedEnv is a GPU environment whose registry also holds the
// sampling kernel without its Admit (the same shader, named
// anim_sample_unchecked), to see what the device computes for a task the
// kernel refuses; it returns that kernel's ID.
func uncheckedEnv(t *testing.T) (*gpuEnv, sched.KernelID) {
	t.Helper()
	reg := sampleRegistry(t)
	k, err := anim.SampleKernel()
	if err != nil {
		t.Fatal(err)
	}
	b := *bind.Of(&k)
	b.Admit = nil
	k.GPU, k.Name = &b, "anim_sample_unchecked"
	id, err := reg.RegisterBlock("unchecked", []sched.Kernel{k})
	if err != nil {
		t.Fatal(err)
	}
	return newGPUEnvWith(t, reg), id
}

// boundClip is a one-clip blob of a star rig of nb bones with every track
// animated nearly every frame (jitterClip: a curve point at about every
// frame, so a need frame reads about one record per track), 121 frames
// at 120 Hz in segments of segSeconds.
func boundClip(t *testing.T, nb int, segSeconds float64) (*anim.Blob, anim.ClipView) {
	t.Helper()
	sk, c := jitterClip(nb, 121, 120, uint64(nb), allBones)
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Passes: 1, OpenLoop: true, SegmentSeconds: segSeconds})
	if err != nil {
		t.Fatal(err)
	}
	bl := mustLoad(t, blobOf(t, sk, cc))
	return bl, bl.Clip(0)
}

// worstSeek samples one SIMD vector's worth of characters (the workgroup)
// with fresh host cursors (so the cursor copy counts too) at the clip's
// worst seek, on the CPU and with kernel kid on the GPU: where they
// first differ, or the task's error.
func worstSeek(t *testing.T, e *gpuEnv, kid sched.KernelID, bl *anim.Blob, cv anim.ClipView) (string, error) {
	t.Helper()
	_, _, _, worst := anim.ClipLoops(bl, cv.Offset())
	const n = anim.SampleLocalSize
	g := newGPUCPU(t, e, bl, n, cv.Bones(), cv.CursorWords(), false)
	in := make([]anim.SampleInput, n)
	for i := range in {
		in[i] = anim.SampleInput{Clip: cv.Offset(), Time: worst}
	}
	return g.stepWith(t, kid, in)
}

// The bound the sampling kernel checks its tasks against holds, and is
// not loose, on lavapipe: a clip whose bound is just under the budget
// samples bit for bit at its worst seek (every character there, host
// cursors), and one whose bound is barely over it does go wrong there
// when the check is bypassed (the same shader without Admit). A loop
// added to the shader without its term in the bound fails the first;
// a bound grown loose fails the second.
func TestSampleGPULoopBoundHolds(t *testing.T) {
	e, unchecked := uncheckedEnv(t)
	budget := loopBudget(t, e)
	for _, c := range []struct {
		bones  int
		lo, hi float64 // the bound's range, in budgets, for the case to test what it says
		within bool
	}{
		{bones: 80, lo: 0.9, hi: 1, within: true},
		{bones: 100, lo: 1.15, hi: 1.25, within: false},
	} {
		t.Run(fmt.Sprintf("bones=%d", c.bones), func(t *testing.T) {
			bl, cv := boundClip(t, c.bones, 1)
			tracks, rounds, perRound, worst := anim.ClipLoops(bl, cv.Offset())
			bound := anim.GPULoopBound(bl, cv.Bones(), cv.CursorWords(), false)
			t.Logf("%d animated tracks, %d need frames in a segment, %d records at one, worst seek %v s: bound %d (%.3f budgets)",
				tracks, rounds, perRound, worst, bound, float64(bound)/float64(budget))
			if r := float64(bound) / float64(budget); !(r >= c.lo && r < c.hi) {
				t.Fatalf("bound %d is %.3f budgets, want [%v, %v): the case no longer tests what it says (change its bones)", bound, r, c.lo, c.hi)
			}
			d, err := worstSeek(t, e, unchecked, bl, cv)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.within && d != "":
				t.Errorf("bound %d under the budget %d, yet the worst seek differs from the CPU: %s (the bound misses a loop of the shader)", bound, budget, d)
			case !c.within && d == "":
				t.Errorf("bound %d over the budget %d, yet the worst seek matches the CPU: the bound is loose by more than %.0f%%", bound, budget, 100*(c.hi-1))
			}
		})
	}
}

// On a device with a loop budget the sampling kernel refuses a task whose
// blob holds a clip that could need more loop passes, with an error that
// names the clip, its bound, the budget and what to do, and dispatches
// nothing; the same clip in shorter segments is sampled bit for bit.
func TestSampleGPURefusesClipOverLoopBudget(t *testing.T) {
	e := newGPUEnv(t)
	budget := loopBudget(t, e)
	bl, cv := boundClip(t, 96, 1)
	bound := anim.GPULoopBound(bl, cv.Bones(), cv.CursorWords(), false)
	if bound < budget {
		t.Fatalf("bound %d under the budget %d: the case tests nothing", bound, budget)
	}
	tasks := e.exec.Stats().Tasks
	_, err := worstSeek(t, e, sampleID, bl, cv)
	if !errors.Is(err, gpu.ErrRefused) {
		t.Fatalf("a clip with a bound of %d loop passes, budget %d: err %v, want gpu.ErrRefused", bound, budget, err)
	}
	for _, want := range []string{fmt.Sprintf("clip %q", cv.Name()), fmt.Sprint(bound), fmt.Sprint(budget), "SegmentSeconds", "CPU"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %s: %v", want, err)
		}
	}
	if got := e.exec.Stats().Tasks; got != tasks {
		t.Errorf("the refused task was dispatched (executor tasks %d -> %d)", tasks, got)
	}
	// The same clip in half-second segments fits.
	bl2, cv2 := boundClip(t, 96, 0.5)
	if b2 := anim.GPULoopBound(bl2, cv2.Bones(), cv2.CursorWords(), false); b2 >= budget {
		t.Fatalf("half-second segments: bound %d, budget %d", b2, budget)
	}
	d, err := worstSeek(t, e, sampleID, bl2, cv2)
	if err != nil || d != "" {
		t.Fatalf("half-second segments, worst seek: err %v, differs: %s", err, d)
	}
}

// The kernel's Admit allocates nothing when it admits a task (it runs for
// every GPU task), on a device with a budget and on one without.
func TestSampleAdmitAllocs(t *testing.T) {
	k, err := anim.SampleKernel()
	if err != nil {
		t.Fatal(err)
	}
	admit := bind.Of(&k).Admit
	if admit == nil {
		t.Fatal("the sampling kernel has no Admit")
	}
	sk, c := jitterClip(4, 31, 30, 1, allBones)
	bl := mustLoad(t, blobOf(t, sk, fastCompress(t, sk, c, anim.CodecCurve)))
	cv := bl.Clip(0)
	job := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, 4), Cursors: make([]uint32, 4*cv.CursorWords()), CursorStride: cv.CursorWords(), Poses: make([]float32, 4*cv.Bones()*anim.PoseFloats), Bones: cv.Bones()}
	for i := range job.Inputs {
		job.Inputs[i].Clip = cv.Offset()
	}
	td, err := job.TaskData(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []bind.Device{{Name: "llvmpipe", LoopBudget: gpu.LavapipeLoopBudget}, {Name: "a GPU"}} {
		if err := admit(&dev, &td); err != nil {
			t.Fatalf("%+v: %v", dev, err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = admit(&dev, &td) }); n != 0 {
			t.Errorf("%+v: Admit allocates %v times per task", dev, n)
		}
	}
	// Without the blob as Data there is nothing to check the budget
	// against: refused where there is a budget.
	td.Data = nil
	if err := admit(&bind.Device{Name: "llvmpipe", LoopBudget: gpu.LavapipeLoopBudget}, &td); err == nil {
		t.Error("a task without its *anim.Blob as Data admitted on a device with a loop budget")
	}
}
