package offline

import (
	"math"
	"math/rand"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// TestUniformAsmMatchesGo samples uniform clips (the CMU clips at 120 and
// 30 Hz, 0.01 cm) with the runtime's fast path (on amd64 with AVX2 and
// BMI2: the assembly decoding and finish) and with its pure-Go path
// (format.PureGo), 64 characters at once: forward at 60 Hz through
// segment boundaries, on every frame and halfway between frames, random
// seeks, and times before the start and past the end. The poses must be
// equal bit for bit. (Without the assembly both runs take the Go path.)
func TestUniformAsmMatchesGo(t *testing.T) {
	defer func() { format.PureGo = false }()
	for _, hz := range []float64{0, 30} {
		bl := cmuBlobCodec(t, "0.01", hz, anim.CodecUniform)
		bc := newBenchCrowd(t, bl, 64)
		rng := rand.New(rand.NewSource(7))
		times := make([][]float32, 0, 1200)
		for i := range 400 {
			ts := make([]float32, len(bc.job.Inputs))
			for c := range ts {
				switch {
				case i < 100: // forward at 60 Hz
					ts[c] = bc.start[c] + float32(i)/60
				case i < 200: // on frames and halfway
					ts[c] = float32(i-100+c*7) / 2 / bl.Clip(c%bl.NumClips()).Rate()
				case i < 210:
					ts[c] = float32(rng.NormFloat64()*3) + [2]float32{-1, 1e6}[i%2]
				default:
					ts[c] = rng.Float32() * bc.durs[c]
				}
			}
			times = append(times, ts)
		}
		poses := func(pure bool) []float32 {
			format.PureGo = pure
			var all []float32
			for _, ts := range times {
				for c := range bc.job.Inputs {
					bc.job.Inputs[c].Time = ts[c]
				}
				if err := bc.job.Run(); err != nil {
					t.Fatal(err)
				}
				all = append(all, bc.job.Poses...)
			}
			return all
		}
		fast, pure := poses(false), poses(true)
		n := len(bc.job.Poses)
		for i := range fast {
			if math.Float32bits(fast[i]) != math.Float32bits(pure[i]) {
				c := i % n / (bc.job.Bones * anim.PoseFloats)
				t.Fatalf("hz %g: pose %d, character %d (time %v), float %d: fast path %v, Go %v",
					hz, i/n, c, times[i/n][c], i%n%(bc.job.Bones*anim.PoseFloats), fast[i], pure[i])
			}
		}
	}
}

// TestUniformAsmManyTracks does the same on a synthetic chain of 14
// bones whose translations, rotations and scales all move (42 animated
// tracks: two chunks of the sampler), with 16-frame segments and with
// 2-frame ones (where most poses take two segments, the Go decoding of
// the fast path), characters on random times and on frame boundaries.
func TestUniformAsmManyTracks(t *testing.T) {
	defer func() { format.PureGo = false }()
	const nb, frames, rate = 14, 90, 30.0
	sk := &Skeleton{Name: "chain"}
	for b := range nb {
		sk.Names = append(sk.Names, string(rune('a'+b)))
		sk.Parents = append(sk.Parents, int32(b-1))
		sk.Rest = append(sk.Rest, Transform{T: Vec3{0, 0.1, 0}, R: IdentityQuat, S: Vec3{1, 1, 1}})
	}
	c := &Clip{Name: "chain", Rate: rate, Frames: frames, Tracks: make([]Track, 3*nb)}
	for b := range nb {
		for k := range 3 {
			tr := &c.Tracks[3*b+k]
			for f := range frames {
				x := float64(f)/rate + float64(b)
				var v [4]float64
				switch TrackKind(k) {
				case TrackTranslation:
					v = [4]float64{0.02 * math.Sin(x), 0.1 + 0.01*math.Cos(2*x), 0.005 * x, 0}
				case TrackRotation:
					v = [4]float64(axisAngle(b%3, 0.8*math.Sin(1.3*x)).Mul(axisAngle((b+1)%3, 0.3*x)))
				default:
					v = [4]float64{1 + 0.1*math.Sin(x), 1 - 0.05*math.Sin(0.5*x), 1, 0}
				}
				tr.Frames = append(tr.Frames, int32(f))
				tr.Values = append(tr.Values, v)
			}
			if TrackKind(k) == TrackRotation {
				makeContinuous(tr)
			}
		}
	}
	for _, L := range []int{16, 2} {
		cc, data := compressBlob(t, sk, c, CompressOptions{Codec: anim.CodecUniform, UniformSegmentFrames: L, Tolerance: 0.0005})
		if cc.Stats.AnimatedTracks <= 32 {
			t.Fatalf("%d animated tracks, want more than one chunk of 32", cc.Stats.AnimatedTracks)
		}
		bl := mustLoad(t, data)
		rng := rand.New(rand.NewSource(int64(L)))
		const n = 16
		job := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*bl.Clip(0).CursorWords()),
			CursorStride: bl.Clip(0).CursorWords(), Poses: make([]float32, n*(nb+1)*anim.PoseFloats), Bones: nb + 1}
		for i := range 300 {
			for ch := range job.Inputs {
				job.Inputs[ch].Clip = bl.Clip(0).Offset()
				job.Inputs[ch].Time = rng.Float32() * 3.1
				if i%2 == 0 {
					job.Inputs[ch].Time = float32(rng.Intn(frames)) / rate
				}
			}
			var got [2][]float32
			for p, pure := range []bool{false, true} {
				format.PureGo = pure
				if err := job.Run(); err != nil {
					t.Fatal(err)
				}
				got[p] = append([]float32(nil), job.Poses...)
			}
			for j := range got[0] {
				if math.Float32bits(got[0][j]) != math.Float32bits(got[1][j]) {
					ch := j / ((nb + 1) * anim.PoseFloats)
					t.Fatalf("L %d, time %v: float %d of character %d: fast path %v, Go %v", L, job.Inputs[ch].Time, j%((nb+1)*anim.PoseFloats), ch, got[0][j], got[1][j])
				}
			}
		}
	}
}
