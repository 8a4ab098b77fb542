//go:build cgo

package anim_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// jitterClip is a clip of frames samples at rate Hz on a star skeleton of
// nb bones (every bone a child of the root, 10 cm away: a shallow
// hierarchy compresses quickly). The tracks of the bones in moving move by
// a random walk (every one animated, nearly every frame a curve point);
// the others hold their rest pose (constant: the default pose).
func jitterClip(nb, frames int, rate float64, seed uint64, moving func(bone int) bool) (*offline.Skeleton, *offline.Clip) {
	r := rand.New(rand.NewPCG(seed, 99))
	sk := &offline.Skeleton{Name: fmt.Sprintf("star%d", nb)}
	for b := range nb {
		sk.Names = append(sk.Names, fmt.Sprintf("b%d", b))
		p := int32(-1)
		tr := offline.IdentityTransform
		if b > 0 {
			p = 0
			tr.T = offline.Vec3{0, 0.1, 0}
		}
		sk.Parents = append(sk.Parents, p)
		sk.Rest = append(sk.Rest, tr)
	}
	c := &offline.Clip{Name: fmt.Sprintf("jitter%d", seed), Rate: rate, Frames: frames, Tracks: make([]offline.Track, 3*nb)}
	for b := range nb {
		tv := [4]float64{0, 0.1, 0, 0}
		if b == 0 {
			tv[1] = 0
		}
		var ang [3]float64
		sv := 1.0
		for f := range frames {
			if moving(b) {
				for k := range 3 {
					tv[k] += 0.002 * (r.Float64() - 0.5)
					ang[k] += 0.02 * (r.Float64() - 0.5)
				}
				sv += 0.002 * (r.Float64() - 0.5)
			}
			q := [4]float64{ang[0] / 2, ang[1] / 2, ang[2] / 2, 1}
			n := math.Sqrt(q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3])
			for k := range q {
				q[k] /= n
			}
			for k, v := range [3][4]float64{tv, q, {sv, sv, sv, 0}} {
				c.Tracks[3*b+k].Frames = append(c.Tracks[3*b+k].Frames, int32(f))
				c.Tracks[3*b+k].Values = append(c.Tracks[3*b+k].Values, v)
			}
		}
	}
	return sk, c
}

func allBones(int) bool { return true }

// fastCompress compresses once (no calibration), open loop: the tests
// here need blobs of given shapes, not calibrated errors.
func fastCompress(t testing.TB, sk *offline.Skeleton, c *offline.Clip, codec anim.Codec) *offline.CompressedClip {
	t.Helper()
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Passes: 1, OpenLoop: true, Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// blobOf builds one blob: each skeleton with its clips.
func blobOf(t testing.TB, parts ...any) []byte {
	t.Helper()
	var b offline.Builder
	si := -1
	for _, p := range parts {
		switch p := p.(type) {
		case *offline.Skeleton:
			si = b.AddSkeleton(p)
		case *offline.CompressedClip:
			if err := b.AddClip(si, p); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("blobOf: %T", p)
		}
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustLoad(t testing.TB, data []byte) *anim.Blob {
	t.Helper()
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	return bl
}

// gpuCPU runs one crowd on the CPU (SampleJob.Run: the reference) and on
// the GPU (the sampling kernel on lavapipe) side by side, each with its
// own cursors and poses. With resident set, the GPU's cursors live in one
// GPU buffer given as both cursor streams (SampleInPlace), and the blob
// in another; otherwise they are host slices (uploaded, copied from
// input 2 to output 1 by the shader, read back).
type gpuCPU struct {
	e        *gpuEnv
	bl       *anim.Blob
	bones    int
	stride   int
	resident bool
	blobBuf  *gpu.Buffer
	curBuf   *gpu.Buffer
	cpuCur   []uint32
	gpuCur   []uint32
	cpuPoses []float32
	gpuPoses []float32
}

func newGPUCPU(t testing.TB, e *gpuEnv, bl *anim.Blob, n, bones, stride int, resident bool) *gpuCPU {
	g := &gpuCPU{e: e, bl: bl, bones: bones, stride: stride, resident: resident,
		cpuCur: make([]uint32, n*stride), gpuCur: make([]uint32, n*stride),
		cpuPoses: make([]float32, n*bones*anim.PoseFloats), gpuPoses: make([]float32, n*bones*anim.PoseFloats)}
	if resident {
		g.blobBuf = newBuffer(t, e.dev, len(bl.Bytes()), bl.Bytes())
		g.curBuf = newBuffer(t, e.dev, 4*n*stride, nil)
	}
	return g
}

// setCursors sets both sides' cursors to cur (the GPU buffer too).
func (g *gpuCPU) setCursors(t testing.TB, cur []uint32) {
	t.Helper()
	copy(g.cpuCur, cur)
	copy(g.gpuCur, cur)
	if g.resident {
		if err := g.curBuf.Write(0, bytesOf(g.gpuCur)); err != nil {
			t.Fatal(err)
		}
	}
}

// agree reports whether GPU floats got equal the CPU's want as the docs
// promise: bit for bit on lavapipe, within gpuPoseTol elsewhere.
func (g *gpuCPU) agree(got, want []float32) bool {
	exact := g.e.dev.Selection().Chosen.Type == gpu.TypeCPU
	for k := range got {
		if math.Float32bits(got[k]) != math.Float32bits(want[k]) && (exact || !(math.Abs(float64(got[k])-float64(want[k])) <= gpuPoseTol)) {
			return false
		}
	}
	return true
}

// step samples in on both and returns where they first differ ("" when
// every pose float and cursor word is the same bit for bit, as the docs
// promise on lavapipe; on other devices, poses within gpuPoseTol).
func (g *gpuCPU) step(t testing.TB, in []anim.SampleInput) string {
	t.Helper()
	d, err := g.stepWith(t, sampleID, in)
	if err != nil {
		t.Fatalf("kernel %d on the GPU: %v", sampleID, err)
	}
	return d
}

// stepWith is step with the GPU task's kernel kid, returning the task's
// error (the CPU has sampled in then).
func (g *gpuCPU) stepWith(t testing.TB, kid sched.KernelID, in []anim.SampleInput) (string, error) {
	t.Helper()
	n := len(in)
	job := anim.SampleJob{Blob: g.bl, Inputs: in, Cursors: g.cpuCur, CursorStride: g.stride, Poses: g.cpuPoses, Bones: g.bones}
	if err := job.Run(); err != nil {
		t.Fatal(err)
	}
	d := taskDataWith(t, job, g.gpuCur, g.gpuPoses, 0)
	if g.resident {
		d.In[0] = g.blobBuf.Stream(4, uint32(len(g.bl.Words())), 0)
		d.In[2] = g.curBuf.Stream(uint32(4*g.stride), uint32(n), 0)
		d.Out[1] = d.In[2]
		d.Params[2] |= anim.SampleInPlace
	}
	clear(g.gpuPoses)
	done := make(chan struct{})
	timer := time.AfterFunc(20*time.Second, func() {
		select {
		case <-done:
		default:
			panic("GPU sampling task still running after 20 s")
		}
	})
	task := sched.Task{Kernel: kid, Affinity: sched.GPU, Data: d}
	id, err := g.e.main.Add(&task)
	if err == nil {
		err = g.e.main.Wait(id)
	}
	close(done)
	timer.Stop()
	if err != nil {
		return "", err
	}
	if g.resident {
		if err := g.curBuf.Read(0, bytesOf(g.gpuCur[:n*g.stride])); err != nil {
			t.Fatal(err)
		}
	}
	// On lavapipe (a CPU device) bit for bit; elsewhere within the
	// documented tolerance, and the cursors (which hold float values) are
	// not compared.
	exact := g.e.dev.Selection().Chosen.Type == gpu.TypeCPU
	ps := g.bones * anim.PoseFloats
	for k := range n * ps {
		gv, cv := g.gpuPoses[k], g.cpuPoses[k]
		if math.Float32bits(gv) != math.Float32bits(cv) && (exact || !(math.Abs(float64(gv)-float64(cv)) <= gpuPoseTol)) {
			ch := k / ps
			return fmt.Sprintf("character %d (clip %d, time %v): bone %d float %d: GPU %v, CPU %v", ch, in[ch].Clip, in[ch].Time, k%ps/anim.PoseFloats, k%anim.PoseFloats, gv, cv), nil
		}
	}
	if !exact {
		return "", nil
	}
	for k := range n * g.stride {
		if g.cpuCur[k] != g.gpuCur[k] {
			ch := k / g.stride
			return fmt.Sprintf("character %d (clip %d, time %v): cursor word %d: GPU %#x, CPU %#x", ch, in[ch].Clip, in[ch].Time, k%g.stride, g.gpuCur[k], g.cpuCur[k]), nil
		}
	}
	return "", nil
}

// stepOrRefused is step where the sampling kernel may refuse the task:
// on a device with a loop budget that the blob's bound for this task
// reaches, it expects the refusal (gpu.ErrRefused) and reports refused;
// elsewhere it expects the task to run and returns step's verdict.
func (g *gpuCPU) stepOrRefused(t testing.TB, in []anim.SampleInput) (diff string, refused bool) {
	t.Helper()
	budget := int(g.e.dev.LoopBudget())
	bound := anim.GPULoopBound(g.bl, g.bones, g.stride, g.resident)
	d, err := g.stepWith(t, sampleID, in)
	switch {
	case budget > 0 && bound >= budget:
		if !errors.Is(err, gpu.ErrRefused) {
			t.Fatalf("bound %d loop passes, device budget %d: want the kernel's refusal, got err %v (differs: %q)", bound, budget, err, d)
		}
		return "", true
	case err != nil:
		t.Fatalf("bound %d loop passes, device budget %d: %v", bound, budget, err)
	}
	return d, false
}

// A seek on the GPU reads every record of the segment up to the time
// (doc.go: "A seek on the GPU ... decodes from its segment's start"), and
// the docs promise the CPU's poses and cursors bit for bit "forward and
// after random seeks", whatever the clip. A rig of 64 bones with every
// track animated, sampled at 120 Hz in the default 1 s segments: 16
// characters with fresh cursors each seek to a different frame of the
// segment, with GPU-resident cursors (SampleInPlace: nothing to copy) and
// with host cursors.
func TestSampleGPUSeekLateInSegmentMatchesCPU(t *testing.T) {
	sk, c := jitterClip(64, 241, 120, 1, allBones)
	bl := mustLoad(t, blobOf(t, sk, fastCompress(t, sk, c, anim.CodecCurve)))
	cv := bl.Clip(0)
	e := newGPUEnv(t)
	for _, resident := range []bool{true, false} {
		t.Run(fmt.Sprintf("resident=%v", resident), func(t *testing.T) {
			const n = 16
			g := newGPUCPU(t, e, bl, n, cv.Bones(), cv.CursorWords(), resident)
			in := make([]anim.SampleInput, n)
			for i := range in {
				in[i] = anim.SampleInput{Clip: cv.Offset(), Time: float32(1+7*i) / 120} // frames 1..106 of segment 0
			}
			d, refused := g.stepOrRefused(t, in)
			if refused {
				return // beyond the device's loop budget: refused, as it must be
			}
			if d != "" {
				t.Errorf("%d animated tracks, seeks to frames 1..106 of a 120-frame segment: %s", cv.AnimatedTracks(), d)
			}
			// Then forward playback, frame by frame, to the segment's end:
			// a wrong seek must not leave the cursors wrong for what follows.
			bad := 0
			for fr := 1; fr <= 12; fr++ {
				for i := range in {
					in[i].Time = float32(1+7*i+fr) / 120
				}
				if d := g.step(t, in); d != "" {
					bad++
					if bad == 1 {
						t.Errorf("forward playback %d frames after the seeks: %s", fr, d)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of 12 forward frames after the seeks differ from the CPU's", bad)
			}
		})
	}
}

// Characters share nothing: a character's pose on the GPU does not depend
// on which other characters are in its dispatch. A one-bone character
// beside characters seeking late into the segments of a large rig (the
// same workgroup) gets the pose it gets alone.
func TestSampleGPUCharacterIndependentOfNeighbours(t *testing.T) {
	sk, c := jitterClip(64, 241, 120, 1, allBones)
	sk1, c1 := animtest.Chain(1, 31, 30)
	bl := mustLoad(t, blobOf(t, sk, fastCompress(t, sk, c, anim.CodecCurve), sk1, fastCompress(t, sk1, c1, anim.CodecCurve)))
	big, small := bl.Clip(0), bl.Clip(1)
	e := newGPUEnv(t)
	const n = anim.SampleLocalSize
	g := newGPUCPU(t, e, bl, n, big.Bones(), big.CursorWords(), true)
	in := make([]anim.SampleInput, n)
	for i := range in {
		in[i] = anim.SampleInput{Clip: big.Offset(), Time: float32(119-i) / 120}
	}
	in[1] = anim.SampleInput{Clip: small.Offset(), Time: 0.5}
	if _, refused := g.stepOrRefused(t, in); refused {
		return // beyond the device's loop budget: refused, as it must be
	}
	alone := newGPUCPU(t, e, bl, 1, big.Bones(), big.CursorWords(), true)
	if d := alone.step(t, in[1:2]); d != "" {
		t.Fatalf("the one-bone character alone: %s", d)
	}
	ps := big.Bones() * anim.PoseFloats
	if got, want := g.gpuPoses[ps:2*ps], alone.gpuPoses[:ps]; !slices.Equal(got, want) {
		t.Errorf("the one-bone character (clip %d at %v) beside %d characters seeking late into a %d-track clip: GPU pose %v, alone %v (CPU %v)",
			small.Offset(), in[1].Time, n-1, big.AnimatedTracks(), got[:anim.PoseFloats], want[:anim.PoseFloats], g.cpuPoses[ps:ps+anim.PoseFloats])
	}
}

// A skeleton of MaxBones bones (the most the format allows) on both
// codecs (a few animated tracks, the rest in the default pose), with a
// pose stride of MaxBones: the GPU equals the CPU bit for bit, host and
// resident cursors, forward and at special times; and sampling then
// kernels.LocalToModel on the GPU over a GPU-resident pose buffer equals
// the CPU chain (SampleJob, then anim.LocalToModel) within LocalToModel's
// 1e-4 relative tolerance.
func TestSampleGPUMaxBonesMatchesCPU(t *testing.T) {
	moving := func(b int) bool { return b == 0 || b%97 == 5 || b == anim.MaxBones-1 }
	sk, c := jitterClip(anim.MaxBones, 61, 30, 3, moving)
	bl := mustLoad(t, blobOf(t, sk, fastCompress(t, sk, c, anim.CodecCurve), fastCompress(t, sk, c, anim.CodecUniform)))
	stride := max(bl.Clip(0).CursorWords(), bl.Clip(1).CursorWords())
	e := newGPUEnv(t)
	const n = 20
	times := []float32{0, 0.1, 0.5, 0.51, 1.9, 2, 2.5, -1, float32(math.NaN()), 0.2}
	for _, resident := range []bool{false, true} {
		g := newGPUCPU(t, e, bl, n, anim.MaxBones, stride, resident)
		in := make([]anim.SampleInput, n)
		for fr, tm := range times {
			for i := range in {
				in[i] = anim.SampleInput{Clip: bl.Clip(i % 2).Offset(), Time: tm + float32(i/2)/30}
			}
			if d := g.step(t, in); d != "" {
				t.Fatalf("resident=%v, frame %d: %s", resident, fr, d)
			}
		}
	}

	// Sample into a GPU pose buffer, then local-to-model on the GPU.
	parents := bl.Skeleton(0).Parents(nil)
	g := newGPUCPU(t, e, bl, n, anim.MaxBones, stride, true)
	in := make([]anim.SampleInput, n)
	for i := range in {
		in[i] = anim.SampleInput{Clip: bl.Clip(i % 2).Offset(), Time: float32(i) / 10}
	}
	g.step(t, in) // the CPU's poses, and the cursors' state
	poseBuf := newBuffer(t, e.dev, n*anim.MaxBones*48, nil)
	job := anim.SampleJob{Blob: bl, Inputs: in, Cursors: g.gpuCur, CursorStride: stride, Poses: g.gpuPoses, Bones: anim.MaxBones}
	st := sched.Task{Kernel: sampleID, Affinity: sched.GPU, Data: taskDataWith(t, job, g.gpuCur, g.gpuPoses, 0)}
	st.Data.Out[0] = poseBuf.Stream(anim.MaxBones*48, n, 0)
	id1, err := e.main.Add(&st)
	if err != nil {
		t.Fatal(err)
	}
	gpuModel := make([]float32, n*anim.MaxBones*anim.ModelFloats)
	lt := sched.Task{Kernel: kernels.LocalToModel, Affinity: sched.GPU, Dependency: id1}
	lt.Data.Params[0] = anim.MaxBones
	lt.Data.Elements = n
	lt.Data.In[0] = poseBuf.Stream(anim.MaxBones*48, n, 0)
	lt.Data.In[1] = sched.StreamOf(parents)
	lt.Data.Out[0] = sched.Stream{Bytes: bytesOf(gpuModel), Stride: anim.MaxBones * 64, Count: n}
	id2, err := e.main.Add(&lt)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.main.Wait(id2); err != nil {
		t.Fatal(err)
	}
	cpuModel := make([]float32, len(gpuModel))
	if err := anim.LocalToModel(parents, g.cpuPoses, cpuModel, 0, n); err != nil {
		t.Fatal(err)
	}
	for k := range cpuModel {
		gv, w := float64(gpuModel[k]), float64(cpuModel[k])
		if !(math.Abs(gv-w) <= 1e-4*math.Max(1, math.Abs(w))) {
			t.Fatalf("model float %d (character %d bone %d): GPU %v, CPU %v", k, k/(anim.MaxBones*16), k/16%anim.MaxBones, gv, w)
		}
	}
}

// The blobs users build, on the GPU beside the CPU, bit for bit, every
// pose float and cursor word: two blobs concatenated (Load of several,
// both orders), each mixing both codecs; clips of one frame, clips whose
// tracks are all constant, one-bone skeletons; 1 and 10,000 characters
// each on its own clip and time (NaN, ±Inf, negative, past the end,
// looping forward, jumping back); cursors zeroed, cursors carried over from
// another blob's job, and characters moving between clips of the two
// blobs; host and GPU-resident cursors.
func TestSampleGPUUserBlobsMatchCPU(t *testing.T) {
	sk6, c6 := animtest.Chain(6, 61, 30)
	sk1, c1 := animtest.Chain(1, 31, 30)
	one := animtest.SynthClip(1, 30, 0) // one frame, on the synthetic skeleton
	skS := animtest.SynthSkeleton()
	still, _ := jitterClip(3, 20, 30, 4, func(int) bool { return false })
	_, stillC := jitterClip(3, 20, 30, 4, func(int) bool { return false })
	a := blobOf(t,
		sk6, rvCompress(t, sk6, c6, anim.CodecCurve), rvCompress(t, sk6, c6, anim.CodecUniform),
		sk1, rvCompress(t, sk1, c1, anim.CodecUniform), rvCompress(t, sk1, c1, anim.CodecCurve),
		skS, fastCompress(t, skS, one, anim.CodecCurve), fastCompress(t, skS, one, anim.CodecUniform))
	_, c6b := animtest.Chain(6, 45, 24)
	for i := 1; i < len(c6b.Tracks); i += 3 {
		for f, v := range c6b.Tracks[i].Values {
			c6b.Tracks[i].Values[f] = [4]float64{-v[1], v[0], -v[2], v[3]}
		}
	}
	b := blobOf(t,
		still, fastCompress(t, still, stillC, anim.CodecCurve), fastCompress(t, still, stillC, anim.CodecUniform),
		sk6, rvCompress(t, sk6, c6b, anim.CodecUniform), rvCompress(t, sk6, c6b, anim.CodecCurve))
	blobs := map[string]*anim.Blob{"A+B": mustLoad(t, slices.Concat(a, b)), "B+A": mustLoad(t, slices.Concat(b, a)), "B": mustLoad(t, b)}
	for _, name := range []string{"A+B", "B+A"} {
		bl := blobs[name]
		if bl.NumClips() != 10 {
			t.Fatalf("%s: %d clips", name, bl.NumClips())
		}
		seen := map[string]bool{}
		for i := range bl.NumClips() {
			cv := bl.Clip(i)
			seen[fmt.Sprint(cv.Codec())] = true
			if cv.Frames() == 1 {
				seen["one frame"] = true
			}
			if cv.AnimatedTracks() == 0 && cv.Frames() > 1 {
				seen["all tracks constant"] = true
			}
			if cv.Bones() == 1 {
				seen["one bone"] = true
			}
		}
		if len(seen) != 5 {
			t.Fatalf("%s: shapes %v", name, seen)
		}
	}
	e := newGPUEnv(t)
	inf := float32(math.Inf(1))
	special := []float32{float32(math.NaN()), inf, -inf, -0.5, 0, 1e30, float32(math.Copysign(0, -1))}
	const bones = 6
	stride := 0
	for _, bl := range blobs {
		for i := range bl.NumClips() {
			stride = max(stride, bl.Clip(i).CursorWords())
		}
	}
	for _, n := range []int{1, 10000} {
		for _, resident := range []bool{false, true} {
			t.Run(fmt.Sprintf("chars=%d/resident=%v", n, resident), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), 1))
				// Characters start on blob B alone, then their cursors move,
				// as they are, to the concatenations.
				g := newGPUCPU(t, e, blobs["B"], n, bones, stride, resident)
				in := make([]anim.SampleInput, n)
				start := make([]float32, n)
				pick := func(bl *anim.Blob) {
					for i := range in {
						cv := bl.Clip(rng.IntN(bl.NumClips()))
						in[i].Clip = cv.Offset()
						start[i] = rng.Float32() * 3
					}
				}
				for _, phase := range []string{"B", "A+B", "B+A"} {
					g.bl = blobs[phase]
					if resident {
						g.blobBuf = newBuffer(t, e.dev, len(g.bl.Bytes()), g.bl.Bytes())
					}
					pick(g.bl)
					for fr := range 8 {
						for i := range in {
							cv, err := g.bl.ClipAt(in[i].Clip)
							if err != nil {
								t.Fatal(err)
							}
							switch {
							case fr == 5 && i%3 == 0: // jump back
								in[i].Time = start[i] / 2
							case fr == 6 && i%4 == 1:
								in[i].Time = special[(i/4)%len(special)]
							case fr == 7 && i%5 == 2: // move to another clip
								in[i].Clip = g.bl.Clip(rng.IntN(g.bl.NumClips())).Offset()
							default: // forward, looping
								x := start[i] + float32(fr)/60
								if d := cv.Duration(); d > 0 {
									x = float32(math.Mod(float64(x), float64(d)))
								}
								in[i].Time = x
							}
						}
						if d := g.step(t, in); d != "" {
							t.Fatalf("blob %s, frame %d: %s", phase, fr, d)
						}
					}
				}
				// Zeroed cursors give what warm ones give (CPU reference).
				warm := slices.Clone(g.cpuPoses)
				g.setCursors(t, make([]uint32, len(g.cpuCur)))
				if d := g.step(t, in); d != "" {
					t.Fatalf("zeroed cursors: %s", d)
				}
				if !slices.Equal(warm, g.cpuPoses) {
					t.Fatal("zeroed cursors: the CPU's poses differ from the warm cursors'")
				}
			})
		}
	}
}

// Scribbled cursors (random words in the slots, or anywhere) crash or
// hang nothing on the GPU, and the docs say any content is safe. Alone in
// its dispatch, what the GPU makes of a scribbled cursor is what the CPU
// makes of it, bit for bit; beside valid characters in the same workgroup,
// the valid characters get the CPU's poses (TestSampleGPUBadData checks
// valid characters in other workgroups only).
func TestSampleGPUScribbledCursors(t *testing.T) {
	sk6, c6 := animtest.Chain(6, 61, 30)
	bl := mustLoad(t, blobOf(t, sk6, rvCompress(t, sk6, c6, anim.CodecCurve), rvCompress(t, sk6, c6, anim.CodecUniform)))
	cv := bl.Clip(0)
	stride := cv.CursorWords()
	e := newGPUEnv(t)
	scribble := func(rng *rand.Rand, c []uint32, header bool) {
		for k := range c {
			if (k >= anim.CursorHeaderWords || header) && rng.IntN(4) == 0 {
				c[k] = rng.Uint32() >> rng.UintN(32)
			}
		}
	}
	t.Run("alone", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 7))
		g := newGPUCPU(t, e, bl, 1, 6, stride, false)
		for trial := range 200 {
			in := []anim.SampleInput{{Clip: cv.Offset(), Time: float32(trial%60) / 30}}
			g.setCursors(t, make([]uint32, stride))
			if d := g.step(t, in); d != "" {
				t.Fatalf("trial %d, valid cursor: %s", trial, d)
			}
			cur := slices.Clone(g.cpuCur)
			scribble(rng, cur, trial%3 == 0)
			g.setCursors(t, cur)
			in[0].Time += 1.0 / 60
			if d := g.step(t, in); d != "" {
				t.Fatalf("trial %d, scribbled cursor: %s", trial, d)
			}
		}
	})
	t.Run("beside valid characters", func(t *testing.T) {
		const n = 256
		rng := rand.New(rand.NewPCG(8, 8))
		g := newGPUCPU(t, e, bl, n, 6, stride, false)
		in := make([]anim.SampleInput, n)
		bad := 0
		for round := range 12 {
			for i := range in {
				in[i] = anim.SampleInput{Clip: cv.Offset(), Time: float32(i%60)/30 + float32(round)/60}
			}
			g.setCursors(t, make([]uint32, n*stride))
			if d := g.step(t, in); d != "" {
				t.Fatalf("round %d, valid cursors: %s", round, d)
			}
			cur := slices.Clone(g.cpuCur)
			for i := 0; i < n; i += 2 { // even characters scribbled, odd ones valid
				scribble(rng, cur[i*stride:(i+1)*stride], round%3 == 0)
			}
			g.setCursors(t, cur)
			for i := range in {
				in[i].Time += 1.0 / 60
			}
			g.step(t, in)
			ps := 6 * anim.PoseFloats
			for i := 1; i < n; i += 2 {
				if got, want := g.gpuPoses[i*ps:(i+1)*ps], g.cpuPoses[i*ps:(i+1)*ps]; !g.agree(got, want) {
					if bad == 0 {
						t.Errorf("round %d: valid character %d (time %v) beside scribbled ones: GPU %v, CPU %v", round, i, in[i].Time, got[:4], want[:4])
					}
					bad++
				}
			}
		}
		if bad > 0 {
			t.Errorf("%d valid characters of %d got a wrong pose beside scribbled cursors", bad, 12*n/2)
		}
	})
}
