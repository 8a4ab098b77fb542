//go:build cgo

package anim_test

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/internal/animtest/fixture"
	"github.com/vkjobs/vkjobs/anim/internal/format"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/sched"
)

// uniformPrefix returns the first n frames of c as a dense clip (every
// track sampled at every frame; discontinuities keep their right-hand
// value, as Clip.Pose gives them), so that tests compress a short clip
// quickly.
func uniformPrefix(c *offline.Clip, n int) *offline.Clip {
	n = min(n, c.Frames)
	nb := c.NumBones()
	p := &offline.Clip{Name: c.Name + fmt.Sprintf("[:%d]", n), Rate: c.Rate, Frames: n, Tracks: make([]offline.Track, 3*nb)}
	for i := range p.Tracks {
		p.Tracks[i] = offline.Track{Frames: make([]int32, n), Values: make([][4]float64, n)}
	}
	pose := make([]offline.Transform, nb)
	for f := range n {
		c.Pose(f, pose)
		for b, tr := range pose {
			for k, v := range [3][4]float64{
				offline.TrackTranslation: {tr.T[0], tr.T[1], tr.T[2], 0},
				offline.TrackRotation:    [4]float64(tr.R),
				offline.TrackScale:       {tr.S[0], tr.S[1], tr.S[2], 0},
			} {
				p.Tracks[3*b+k].Frames[f] = int32(f)
				p.Tracks[3*b+k].Values[f] = v
			}
		}
	}
	for b := range nb {
		fixture.Continuous(p.Tracks[3*b+int(offline.TrackRotation)].Values)
	}
	return p
}

var uniMix struct {
	once sync.Once
	data []byte
	err  error
}

// uniformMixBlob is one blob of curve and uniform clips, built once per
// test binary in well under a second (it compresses short clips only):
// per CMU clip its first 160 frames (1.3 s) as a curve
// clip (1 s segments) and as two uniform clips: 01_01 at 0.0001 cm (up
// to 19 bits per component) and at 1 cm with 2-frame segments (low bit
// rates, segment-constant tracks, a boundary every other frame), 01_03 at
// 0.01 cm with 16- and 256-frame segments; on the synthetic skeleton a
// hand spinning 1.5 turns a second beside a discontinuity (rotations whose
// dropped component changes from segment to segment) as a uniform and a
// curve clip. (The uniform clip without animated tracks is
// TestSampleGPUUniformConstantClip's.)
func uniformMixBlob(tb testing.TB) *anim.Blob {
	tb.Helper()
	ims := animtest.CMUImports(tb)
	uniMix.once.Do(func() { uniMix.data, uniMix.err = buildUniformMix(ims) })
	if uniMix.err != nil {
		tb.Fatal(uniMix.err)
	}
	bl, err := anim.Load(uniMix.data)
	if err != nil {
		tb.Fatal(err)
	}
	return bl
}

func buildUniformMix(ims []*offline.Import) ([]byte, error) {
	var b offline.Builder
	uni := func(tol float64, L int) offline.CompressOptions {
		return offline.CompressOptions{Codec: anim.CodecUniform, Tolerance: tol, UniformSegmentFrames: L, Passes: 1}
	}
	add := func(sk *offline.Skeleton, si int, c *offline.Clip, opts ...offline.CompressOptions) error {
		for _, o := range opts {
			cc, err := offline.Compress(sk, c, o)
			if err != nil {
				return err
			}
			if err := b.AddClip(si, cc); err != nil {
				return err
			}
		}
		return nil
	}
	for i, im := range ims { // 01_01, 01_03
		short := uniformPrefix(im.Clips[0], 160)
		opts := [][]offline.CompressOptions{{uni(1e-6, 0), uni(1e-2, 2)}, {uni(1e-4, 0), uni(1e-4, 256)}}[i]
		if err := add(im.Skeleton, b.AddSkeleton(im.Skeleton), short, append(opts, offline.CompressOptions{Passes: 1})...); err != nil {
			return nil, err
		}
	}
	spin := animtest.SpinClip(120, 50)
	sk := animtest.SynthSkeleton()
	si := b.AddSkeleton(sk)
	if err := add(sk, si, spin, uni(1e-4, 0), offline.CompressOptions{SegmentSeconds: 2, Passes: 1}); err != nil {
		return nil, err
	}
	return b.Bytes()
}

func isUniformClip(c anim.ClipView) bool { return c.Codec() == anim.CodecUniform }

// uniformCoverage counts what the blob's uniform segments exercise: bit
// rates, constant-over-segment tracks, rotations by dropped component.
func uniformCoverage(bl *anim.Blob) map[string]int {
	seen := map[string]int{}
	for i := range bl.NumClips() {
		c := bl.Clip(i)
		if !isUniformClip(c) {
			continue
		}
		h := bl.Words()[c.Offset()/4:]
		nt := int(h[format.ChSlots])
		if nt == 0 {
			seen["uniform clip without animated tracks"]++
			continue
		}
		tracks := h[h[format.ChTracks]/4:]
		segt := h[h[format.ChSegTable]/4:]
		stream := h[h[format.ChStream]/4:]
		for s := range int(h[format.ChSegments]) {
			seg := stream[segt[s]/32:]
			for k := range nt {
				rb := seg[(4+k)/4] >> (8 * ((4 + k) % 4)) & 0xff
				bits := format.UniformLadder[rb&15]
				switch {
				case bits == 0:
					seen["segment-constant track"]++
				case bits == 19:
					seen["19-bit track"]++
				case bits <= 6:
					seen["3..6-bit track"]++
				}
				if tracks[k*format.TrackDescWords]>>16 == uint32(offline.TrackRotation) {
					seen[fmt.Sprintf("rotation dropping component %d", rb>>4&3)]++
				}
			}
		}
	}
	return seen
}

// uniformTimes gives character i a time on its clip that stresses the
// uniform sampler: exactly on a frame (t = f/rate), between frames, at a
// segment boundary (the last frame of a segment, the first of the next,
// between them), 0, the end, beyond either end, NaN and infinities, or
// anywhere.
func uniformTimes(rng *rand.Rand, c anim.ClipView, round, i int) float32 {
	rate, frames := c.Rate(), c.Frames()
	L := int(c.Blob().Words()[c.Offset()/4+format.ChSegFrames])
	dur := c.Duration()
	f := rng.Intn(frames)
	switch (i + round) % 12 {
	case 0, 1:
		return float32(f) / rate
	case 2:
		return (float32(f) + rng.Float32()) / rate
	case 3:
		if L < frames {
			s := 1 + rng.Intn((frames-1)/L)
			return (float32(s*L) - []float32{1, 0, 0.5, 1e-4, 0.9995}[rng.Intn(5)]) / rate
		}
		return float32(f) / rate
	case 4:
		return 0
	case 5:
		return dur
	case 6:
		return dur + 0.5 + rng.Float32()
	case 7:
		return -rng.Float32() - 1e-6
	case 8:
		return []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[rng.Intn(3)]
	case 9:
		return dur - 1e-4
	}
	return rng.Float32() * dur
}

// The GPU samples uniform clips as the CPU does, curve and uniform
// characters mixed in one dispatch: 480 characters over the curve and
// uniform clips of uniformMixBlob, each at its own time (see
// uniformTimes), for both pose layouts, with the cursors copied by the
// shader (separate host streams: the output starts scribbled and must end
// equal to the CPU's cursors word for word, uniform characters' cursors
// copied unchanged) and GPU-resident in place (SampleInPlace). A few
// frames play forward (curve cursors carry over), the others jump.
func TestSampleGPUUniformMatchesCPU(t *testing.T) {
	bl := uniformMixBlob(t)
	seen := uniformCoverage(bl)
	for _, what := range []string{"segment-constant track", "19-bit track", "3..6-bit track",
		"rotation dropping component 0", "rotation dropping component 1", "rotation dropping component 2", "rotation dropping component 3"} {
		if seen[what] == 0 {
			t.Errorf("the blob's uniform clips have no %s", what)
		}
	}
	t.Logf("uniform track segments: %v", seen)
	var uniClips, curveClips []anim.ClipView
	for i := range bl.NumClips() {
		if c := bl.Clip(i); isUniformClip(c) {
			uniClips = append(uniClips, c)
		} else {
			curveClips = append(curveClips, c)
		}
	}
	e := newGPUEnv(t)
	const n, bones = 480, 33
	stride := 0
	for i := range bl.NumClips() {
		stride = max(stride, bl.Clip(i).CursorWords())
	}
	for _, flags := range []uint32{0} {
		for _, inPlace := range []bool{false, true} {
			t.Run(fmt.Sprintf("inplace=%v", inPlace), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(flags) + 10))
				cpu := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride),
					CursorStride: stride, Poses: make([]float32, n*bones*anim.PoseFloats), Bones: bones}
				clips := make([]anim.ClipView, n)
				for i := range n {
					if i%3 == 0 {
						clips[i] = curveClips[rng.Intn(len(curveClips))]
					} else {
						clips[i] = uniClips[rng.Intn(len(uniClips))]
						// Uniform characters' cursors are never read or
						// written: any content is copied through as is.
						for k := range stride {
							cpu.Cursors[i*stride+k] = rng.Uint32()
						}
					}
					cpu.Inputs[i].Clip = clips[i].Offset()
				}
				gpuCur := slices.Clone(cpu.Cursors)
				gpuPoses := make([]float32, len(cpu.Poses))
				var curBuf *gpu.Buffer
				if inPlace {
					curBuf = newBuffer(t, e.dev, 4*len(gpuCur), bytesOf(gpuCur))
				}
				var maxd float64
				differ, rounds, crossed := 0, 0, 0
				for round := range 8 {
					for i := range n {
						if round > 0 && round < 4 && clips[i].Frames() > 1 {
							// forward playback, one 60 Hz frame
							if x := cpu.Inputs[i].Time; x >= 0 && x < clips[i].Duration()-0.1 {
								cpu.Inputs[i].Time = x + 1.0/60
								continue
							}
						}
						cpu.Inputs[i].Time = uniformTimes(rng, clips[i], round, i)
					}
					// CPU: the kernel's CPU function, in place.
					runKernelCPU(t, cpu, flags)
					// GPU.
					gd := taskDataWith(t, cpu, gpuCur, gpuPoses, flags)
					var out []uint32
					if inPlace {
						gd.In[2] = curBuf.Stream(uint32(4*stride), n, 0)
						gd.Out[1] = gd.In[2]
						gd.Params[2] |= anim.SampleInPlace
					} else {
						out = make([]uint32, len(gpuCur))
						for k := range out {
							out[k] = 0xdeadbeef
						}
						gd.Out[1] = sched.Stream{Bytes: bytesOf(out), Stride: uint32(4 * stride), Count: n}
					}
					clear(gpuPoses)
					e.run(t, sched.Task{Kernel: sampleID, Affinity: sched.GPU, Data: gd})
					for i, in := range cpu.Inputs {
						// Count uniform characters between two frames of
						// different segments (float64 suffices here).
						c := clips[i]
						x := float64(in.Time) * float64(c.Rate())
						L := int(c.Blob().Words()[c.Offset()/4+format.ChSegFrames])
						if isUniformClip(c) && x > 0 && x < float64(c.Frames()-1) && x != math.Floor(x) && int(x)/L != (int(x)+1)/L {
							crossed++
						}
					}
					what := fmt.Sprintf("round %d", round)
					m, df := poseDiff(t, what, gpuPoses, cpu.Poses, bones)
					maxd, differ, rounds = max(maxd, m), differ+df, rounds+1
					if !inPlace {
						for k := range out {
							if out[k] != cpu.Cursors[k] {
								i := k / stride
								t.Fatalf("%s: character %d (uniform %v) cursor word %d: gpu %#x, cpu %#x", what, i,
									isUniformClip(clips[i]), k%stride, out[k], cpu.Cursors[k])
							}
						}
						copy(gpuCur, out)
					}
				}
				if inPlace {
					got := make([]uint32, len(gpuCur))
					if err := curBuf.Read(0, bytesOf(got)); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, cpu.Cursors) {
						t.Error("GPU-resident cursors differ from the CPU's after the last round")
					}
				}
				if crossed == 0 {
					t.Error("no uniform character sampled between two segments")
				}
				t.Logf("%d characters x %d rounds (%d uniform samples across a segment boundary): %d of %d floats differ from the CPU's, by at most %.3g (tolerance %g)",
					n, rounds, crossed, differ, rounds*len(gpuPoses), maxd, gpuPoseTol)
			})
		}
	}
}

// Odd uniform data on the GPU: the uniform clips' words past their
// headers (default pose, tracks, ranges, segment table, stream) scribbled
// in the GPU's copy of the blob, and headers with impossible values
// (unknown flags, more animated tracks than 3 per bone): no hang, no
// validation message, and curve characters in the same dispatch still
// equal the CPU's; unknown flags give the identity pose.
func TestSampleGPUUniformBadData(t *testing.T) {
	bl := uniformMixBlob(t)
	e := newGPUEnv(t)
	const n, bones = 96, 33
	rng := rand.New(rand.NewSource(11))
	stride := 0
	var uni []anim.ClipView
	var curve []anim.ClipView
	for i := range bl.NumClips() {
		c := bl.Clip(i)
		stride = max(stride, c.CursorWords())
		if isUniformClip(c) {
			uni = append(uni, c)
		} else {
			curve = append(curve, c)
		}
	}
	cpu := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride),
		CursorStride: stride, Poses: make([]float32, n*bones*anim.PoseFloats), Bones: bones}
	for i := range n {
		c := uni[i%len(uni)]
		if i%2 == 0 {
			c = curve[i/2%len(curve)]
		}
		cpu.Inputs[i] = anim.SampleInput{Clip: c.Offset(), Time: rng.Float32() * c.Duration()}
	}
	runKernelCPU(t, cpu, 0)
	gpuCur := make([]uint32, len(cpu.Cursors))
	gpuPoses := make([]float32, len(cpu.Poses))
	for round := range 6 {
		words := slices.Clone(bl.Words())
		for _, c := range uni {
			h := words[c.Offset()/4:]
			size := int(h[format.ChSize]) / 4
			for k := format.ClipHeaderSize / 4; k < size; k++ {
				if rng.Intn(4) == 0 {
					h[k] = rng.Uint32()
					if rng.Intn(2) == 0 {
						h[k] &= 0x3f3f3f3f // plausible rate bytes and small offsets
					}
				}
			}
			switch round {
			case 3:
				h[format.ChFlags] = 2 + uint32(rng.Intn(100))
			case 4:
				h[format.ChSlots] = 3*h[format.ChBones] + 1
			case 5:
				h[format.ChSegTable], h[format.ChRanges], h[format.ChStreamWords] = rng.Uint32(), rng.Uint32(), rng.Uint32()
			}
		}
		gd := taskDataWith(t, cpu, gpuCur, gpuPoses, 0)
		gd.In[0] = sched.Stream{Bytes: bytesOf(words), Stride: 4, Count: uint32(len(words))}
		e.run(t, sched.Task{Kernel: sampleID, Affinity: sched.GPU, Data: gd})
		for i := 0; i < n; i += 2 {
			o := i * bones * anim.PoseFloats
			poseDiff(t, fmt.Sprintf("round %d, curve character %d", round, i), gpuPoses[o:o+bones*anim.PoseFloats], cpu.Poses[o:o+bones*anim.PoseFloats], bones)
		}
		if round == 3 || round == 4 {
			id := []float32{0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0}
			for i := 1; i < n; i += 2 {
				for b := range bones {
					if p := gpuPoses[(i*bones+b)*anim.PoseFloats:][:anim.PoseFloats]; !slices.Equal(p, id) {
						t.Fatalf("round %d: character %d bone %d: %v, want the identity", round, i, b, p)
					}
				}
			}
		}
	}
}

// A uniform clip without animated tracks (a one-frame clip: every track
// constant) in one dispatch with a curve clip: the default pose (and the
// identity beyond its bones) at any time, the cursors copied through, as
// the CPU does.
func TestSampleGPUUniformConstantClip(t *testing.T) {
	sk := animtest.SynthSkeleton()
	var ccs []*offline.CompressedClip
	for _, c := range []struct {
		clip *offline.Clip
		opt  offline.CompressOptions
	}{{animtest.SynthClip(1, 30, 0), offline.CompressOptions{Codec: anim.CodecUniform}}, {animtest.SynthClip(60, 30, 20), offline.CompressOptions{Passes: 1}}} {
		cc, err := offline.Compress(sk, c.clip, c.opt)
		if err != nil {
			t.Fatalf("%v: %v", c.opt.Codec, err)
		}
		ccs = append(ccs, cc)
	}
	bl, _ := animtest.Blob(t, sk, ccs[0], ccs[1:]...)
	if c := bl.Clip(0); !isUniformClip(c) || c.AnimatedTracks() != 0 {
		t.Fatalf("clip 0: codec %v, %d animated tracks", c.Codec(), c.AnimatedTracks())
	}
	e := newGPUEnv(t)
	const n, bones = 40, 6
	rng := rand.New(rand.NewSource(12))
	stride := bl.Clip(1).CursorWords()
	cpu := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride),
		CursorStride: stride, Poses: make([]float32, n*bones*anim.PoseFloats), Bones: bones}
	for i := range n {
		c := bl.Clip(i % 2)
		cpu.Inputs[i] = anim.SampleInput{Clip: c.Offset(), Time: uniformTimes(rng, c, 0, i)}
		if i%2 == 0 {
			for k := range stride {
				cpu.Cursors[i*stride+k] = rng.Uint32()
			}
		}
	}
	for _, flags := range []uint32{0} {
		gpuCur := slices.Clone(cpu.Cursors)
		runKernelCPU(t, cpu, flags)
		gpuPoses := make([]float32, len(cpu.Poses))
		gd := taskDataWith(t, cpu, gpuCur, gpuPoses, flags)
		e.run(t, sched.Task{Kernel: sampleID, Affinity: sched.GPU, Data: gd})
		poseDiff(t, fmt.Sprintf("flags %d", flags), gpuPoses, cpu.Poses, bones)
		if !slices.Equal(gpuCur, cpu.Cursors) {
			t.Fatalf("flags %d: GPU cursors differ from the CPU's", flags)
		}
	}
}
