//go:build cgo

package anim_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/gpu"
)

// A blob whose curve clip is just under the loop budget together with a
// uniform clip of the same rig (the bound then adds the uniform term):
// characters alternating between the curve clip at its worst seek and the
// uniform clip, in one workgroup, sample bit for bit on lavapipe (host
// cursors and resident ones), so the bound counts the uniform path's
// loops too when lanes of one vector take both codecs.
func TestSampleGPULoopBoundMixedCodecs(t *testing.T) {
	e := newGPUEnv(t)
	budget := loopBudget(t, e)
	var (
		bl    *anim.Blob
		curve anim.ClipView
		unif  anim.ClipView
		bound int
	)
	for nb := 80; nb >= 60; nb -= 4 {
		sk, c := jitterClip(nb, 121, 120, uint64(nb), allBones)
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Passes: 1, OpenLoop: true, SegmentSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, cu := jitterClip(nb, 61, 30, uint64(nb)+1, allBones)
		cu.Name = "uniform"
		bl = mustLoad(t, blobOf(t, sk, cc, fastCompress(t, sk, cu, anim.CodecUniform)))
		curve, unif = bl.Clip(0), bl.Clip(1)
		if curve.Codec() != anim.CodecCurve {
			curve, unif = unif, curve
		}
		bound = anim.GPULoopBound(bl, curve.Bones(), max(curve.CursorWords(), unif.CursorWords()), false)
		if bound < budget {
			break
		}
	}
	if bound >= budget || float64(bound) < 0.85*float64(budget) {
		t.Fatalf("bound %d, budget %d: the case does not test the bound near the budget", bound, budget)
	}
	tracks, rounds, perRound, worst := anim.ClipLoops(bl, curve.Offset())
	t.Logf("%d bones, curve clip: %d tracks, %d rounds, %d records a round; uniform clip: %d tracks; bound %d (%.3f budgets)",
		curve.Bones(), tracks, rounds, perRound, unif.AnimatedTracks(), bound, float64(bound)/float64(budget))
	stride := max(curve.CursorWords(), unif.CursorWords())
	for _, resident := range []bool{false, true} {
		const n = anim.SampleLocalSize
		g := newGPUCPU(t, e, bl, n, curve.Bones(), stride, resident)
		in := make([]anim.SampleInput, n)
		for i := range in {
			if i%2 == 0 {
				in[i] = anim.SampleInput{Clip: curve.Offset(), Time: worst}
			} else {
				in[i] = anim.SampleInput{Clip: unif.Offset(), Time: float32(i%61) / 30}
			}
		}
		d, err := g.stepWith(t, sampleID, in)
		if err != nil {
			t.Fatalf("resident %v: %v", resident, err)
		}
		if d != "" {
			t.Errorf("resident %v: bound %d under the budget %d, yet: %s", resident, bound, budget, d)
		}
	}
}

// A mid-size rig under the budget: characters with fresh cursors seek to
// every frame of its segments (and between frames), a workgroup at a
// time, with host cursors and with resident ones (SampleInPlace); every
// pose and cursor matches the CPU's bit for bit.
func TestSampleGPUSeekEveryFrameMidRig(t *testing.T) {
	sk, c := jitterClip(32, 241, 120, 7, allBones)
	bl := mustLoad(t, blobOf(t, sk, fastCompress(t, sk, c, anim.CodecCurve)))
	cv := bl.Clip(0)
	e := newGPUEnv(t)
	if b := e.dev.LoopBudget(); b > 0 && anim.GPULoopBound(bl, cv.Bones(), cv.CursorWords(), false) >= int(b) {
		t.Fatalf("the rig is over the budget: the case tests nothing")
	}
	const n = anim.SampleLocalSize
	for _, resident := range []bool{false, true} {
		g := newGPUCPU(t, e, bl, n, cv.Bones(), cv.CursorWords(), resident)
		fresh := make([]uint32, n*cv.CursorWords())
		in := make([]anim.SampleInput, n)
		for _, half := range []float32{0, 0.5} {
			for f0 := 0; f0 < 241; f0 += n {
				for i := range in {
					in[i] = anim.SampleInput{Clip: cv.Offset(), Time: min(float32(f0+i)+half, 240) / 120}
				}
				g.setCursors(t, fresh)
				if d := g.step(t, in); d != "" {
					t.Fatalf("resident %v, seeks to frames %d..%d (+%v): %s", resident, f0, f0+n-1, half, d)
				}
			}
		}
	}
}

// The refusal is the blob's: a task that samples only a tiny clip of a
// blob that also holds a clip over the budget is refused, naming the big
// clip, and so is it when the two come from concatenated blobs (the bound
// is the maximum over all of them); the tiny clip in a blob of its own is
// sampled.
func TestSampleGPURefusalIsTheBlobs(t *testing.T) {
	e := newGPUEnv(t)
	budget := loopBudget(t, e)
	skB, cB := jitterClip(96, 121, 120, 96, allBones)
	big, err := offline.Compress(skB, cB, offline.CompressOptions{Passes: 1, OpenLoop: true, SegmentSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	big.Name = "big"
	skT, cT := jitterClip(2, 31, 30, 2, allBones)
	tiny := fastCompress(t, skT, cT, anim.CodecCurve)
	tiny.Name = "tiny"
	tinyBlob := blobOf(t, skT, tiny)
	bigBlob := blobOf(t, skB, big)
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"one blob", blobOf(t, skT, tiny, skB, big)},
		{"tiny then big, concatenated", append(append([]byte(nil), tinyBlob...), bigBlob...)},
		{"big then tiny, concatenated", append(append([]byte(nil), bigBlob...), tinyBlob...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			bl := mustLoad(t, c.data)
			var tc anim.ClipView
			for i := range bl.NumClips() {
				if cv := bl.Clip(i); cv.Name() == "tiny" {
					tc = cv
				}
			}
			stride := 0
			for i := range bl.NumClips() {
				stride = max(stride, bl.Clip(i).CursorWords())
			}
			g := newGPUCPU(t, e, bl, 4, tc.Bones(), stride, false)
			in := []anim.SampleInput{{Clip: tc.Offset(), Time: 0.5}, {Clip: tc.Offset(), Time: 0.2}, {Clip: tc.Offset()}, {Clip: tc.Offset(), Time: 1}}
			_, err := g.stepWith(t, sampleID, in)
			if !errors.Is(err, gpu.ErrRefused) || !strings.Contains(err.Error(), `clip "big"`) {
				t.Fatalf("bound %d, budget %d: err %v, want ErrRefused naming clip \"big\"", anim.GPULoopBound(bl, tc.Bones(), stride, false), budget, err)
			}
		})
	}
	bl := mustLoad(t, tinyBlob)
	tc := bl.Clip(0)
	g := newGPUCPU(t, e, bl, 4, tc.Bones(), tc.CursorWords(), false)
	in := []anim.SampleInput{{Clip: tc.Offset(), Time: 0.5}, {Clip: tc.Offset(), Time: 0.2}, {Clip: tc.Offset()}, {Clip: tc.Offset(), Time: 1}}
	if d, err := g.stepWith(t, sampleID, in); err != nil || d != "" {
		t.Fatalf("tiny clip alone: err %v, differs: %s", err, d)
	}
}

// A uniform clip of MaxBones bones with every track animated (the most
// animated tracks a uniform clip may have, the bound then some four
// fifths of lavapipe's budget, nearly all of it the uniform term; four
// frames, since compressing it dominates the test's time): admitted, and
// sampled bit for bit, host and resident cursors, at frames and between
// them.
func TestSampleGPUUniformAllTracksMaxBones(t *testing.T) {
	if testing.Short() || os.Getenv("VKJOBS_ANIM_LONG") == "" {
		t.Skip("about 25 s of compression: set VKJOBS_ANIM_LONG=1")
	}
	sk, c := jitterClip(anim.MaxBones, 4, 30, 11, allBones)
	cc := fastCompress(t, sk, c, anim.CodecUniform)
	bl := mustLoad(t, blobOf(t, sk, cc))
	cv := bl.Clip(0)
	e := newGPUEnv(t)
	bound := anim.GPULoopBound(bl, cv.Bones(), cv.CursorWords(), false)
	if b := int(e.dev.LoopBudget()); b > 0 {
		t.Logf("%d animated tracks: bound %d (%.3f budgets)", cv.AnimatedTracks(), bound, float64(bound)/float64(b))
		if bound >= b {
			t.Fatalf("bound %d over the budget %d: the case tests nothing", bound, b)
		}
	}
	const n = anim.SampleLocalSize
	for _, resident := range []bool{false, true} {
		g := newGPUCPU(t, e, bl, n, cv.Bones(), cv.CursorWords(), resident)
		in := make([]anim.SampleInput, n)
		for step := range 3 {
			for i := range in {
				in[i] = anim.SampleInput{Clip: cv.Offset(), Time: float32(i%4)/30 + float32(step)/90}
			}
			if d := g.step(t, in); d != "" {
				t.Fatalf("resident %v, step %d: %s", resident, step, d)
			}
		}
	}
}
