package anim

import (
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
)

// benchCrowd builds a crowd: n characters, each on one of the CMU clips
// at its own start time, with cursors, inputs and poses sized once.
type benchCrowd struct {
	job   SampleJob
	start []float32
	durs  []float32
}

func newBenchCrowd(tb testing.TB, bl *Blob, n int) *benchCrowd {
	rng := rand.New(rand.NewSource(1))
	bc := &benchCrowd{}
	stride, bones := 0, 0
	for i := range bl.NumClips() {
		stride = max(stride, bl.Clip(i).CursorWords())
		bones = max(bones, bl.Clip(i).Bones())
	}
	bc.job = SampleJob{Blob: bl, Inputs: make([]SampleInput, n), Cursors: make([]uint32, n*stride),
		CursorStride: stride, Poses: make([]float32, n*bones*PoseFloats), Bones: bones}
	for i := range n {
		c := bl.Clip(i % bl.NumClips())
		bc.job.Inputs[i].Clip = c.Offset()
		bc.durs = append(bc.durs, c.Duration())
		bc.start = append(bc.start, rng.Float32()*c.Duration())
	}
	return bc
}

// setTime puts every character at its start plus t, looping.
func (bc *benchCrowd) setTime(t float32) {
	for i := range bc.job.Inputs {
		x := bc.start[i] + t
		for x >= bc.durs[i] {
			x -= bc.durs[i]
		}
		bc.job.Inputs[i].Time = x
	}
}

// BenchmarkSample samples a crowd of 64 characters, each on a CMU clip
// (31 bones) at its own time, playing forward at a game frame rate (the
// source is 120 Hz, so 30 Hz reads about four curve points per track per
// pose), on one goroutine and on all cores. "hold" re-samples the same
// time (no stream reading: the cost of evaluation and the default pose);
// "seek" jumps to a random time each pose. Sub-benchmarks cm=... use
// clips compressed at that error target.
func BenchmarkSample(b *testing.B) {
	blobs := map[string]*Blob{"0.01": cmuBlob(b)}
	for _, cm := range []string{"0.1", "1"} {
		blobs[cm] = cmuBlobAt(b, cm)
	}
	const n = 64
	for _, cm := range []string{"0.01", "0.1", "1"} {
		bl := blobs[cm]
		for _, hz := range []float32{0, 30, 60, 120, -1} {
			for _, par := range []int{1, runtime.GOMAXPROCS(0)} {
				name := fmt.Sprintf("cm=%s/forward%gHz/goroutines=%d", cm, hz, par)
				switch hz {
				case 0:
					name = fmt.Sprintf("cm=%s/hold/goroutines=%d", cm, par)
				case -1:
					name = fmt.Sprintf("cm=%s/seek/goroutines=%d", cm, par)
				}
				if cm != "0.01" && (hz == 0 || hz == -1) {
					continue
				}
				b.Run(name, func(b *testing.B) {
					bc := newBenchCrowd(b, bl, n)
					bc.setTime(0)
					if err := bc.job.Run(); err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					frame := 0
					rng := rand.New(rand.NewSource(2))
					for b.Loop() {
						frame++
						switch {
						case hz > 0:
							bc.setTime(float32(frame) / hz)
						case hz < 0:
							bc.setTime(rng.Float32() * 40)
						}
						runSplit(b, &bc.job, par)
					}
					bones := float64(b.N) * n * 31
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/bones, "ns/bone")
				})
			}
		}
	}
}

// runSplit runs the job over par goroutines, as a scheduler would.
func runSplit(b *testing.B, j *SampleJob, par int) {
	if par == 1 {
		if err := j.Run(); err != nil {
			b.Fatal(err)
		}
		return
	}
	var wg sync.WaitGroup
	n := len(j.Inputs)
	for p := range par {
		wg.Go(func() {
			if err := j.RunRange(p*n/par, (p+1)*n/par); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
}
