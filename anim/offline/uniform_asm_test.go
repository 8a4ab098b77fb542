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
