package offline

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// benchCrowd builds a crowd: n characters, each on one of the CMU clips
// at its own start time, with cursors, inputs and poses sized once.
type benchCrowd struct {
	job   anim.SampleJob
	start []float32
	durs  []float32
}

func newBenchCrowd(tb testing.TB, bl *anim.Blob, n int) *benchCrowd {
	rng := rand.New(rand.NewSource(1))
	bc := &benchCrowd{}
	stride, bones := 0, 0
	for i := range bl.NumClips() {
		stride = max(stride, bl.Clip(i).CursorWords())
		bones = max(bones, bl.Clip(i).Bones())
	}
	bc.job = anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride),
		CursorStride: stride, Poses: make([]float32, n*bones*anim.PoseFloats), Bones: bones}
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
// (31 bones) at its own time, playing forward at a game frame rate, on one
// goroutine and on all cores; ns/bone is per bone per pose. The source is
// 120 Hz motion capture compressed at cm (the error target), or first
// resampled to 30 Hz (src=30Hz), as a game would ship it; at 120 Hz
// source, 30 Hz playback reads about four curve points per track per
// pose. "hold" re-samples the same time (evaluation and the default pose
// only); "seek" jumps to a random time every pose. With one goroutine it
// also reports cpu-ns/bone, the thread's CPU time (wall time on a loaded
// machine includes other processes' turns on the core). The uniform-...
// configurations are the same clips compressed with CodecUniform, so the
// two codecs compare in one process; reference-cm=0.01 samples the
// default clips with the curve sampler's reference code (format.PureGo),
// the one the GLSL port follows, beside its fast path (cm=0.01);
// seekindex-cm=0.01 is cm=0.01 with the blob's seek index built
// (Blob.BuildSeekIndex), which only seeks use.
func BenchmarkSample(b *testing.B) {
	type config struct {
		name  string
		cm    string
		hz    float64
		codec anim.Codec
	}
	configs := []config{{"cm=0.01", "0.01", 0, anim.CodecCurve}, {"cm=0.1", "0.1", 0, anim.CodecCurve}, {"cm=1", "1", 0, anim.CodecCurve}, {"cm=0.1/src=30Hz", "0.1", 30, anim.CodecCurve},
		{"uniform-cm=0.01", "0.01", 0, anim.CodecUniform}, {"uniform-cm=0.1", "0.1", 0, anim.CodecUniform},
		{"uniform-purego-cm=0.01", "0.01", 0, anim.CodecUniform}, {"reference-cm=0.01", "0.01", 0, anim.CodecCurve},
		{"seekindex-cm=0.01", "0.01", 0, anim.CodecCurve}}
	const n = 64
	for _, cf := range configs {
		var bl *anim.Blob
		for _, hz := range []float32{0, 30, 60, 120, -1} {
			if hz == 120 && cf.hz == 30 {
				continue
			}
			for _, par := range []int{1, runtime.GOMAXPROCS(0)} {
				name := fmt.Sprintf("%s/forward%gHz/goroutines=%d", cf.name, hz, par)
				switch hz {
				case 0:
					name = fmt.Sprintf("%s/hold/goroutines=%d", cf.name, par)
				case -1:
					name = fmt.Sprintf("%s/seek/goroutines=%d", cf.name, par)
				}
				b.Run(name, func(b *testing.B) {
					if strings.Contains(cf.name, "purego") || strings.HasPrefix(cf.name, "reference") {
						format.PureGo = true
						defer func() { format.PureGo = false }()
					}
					if bl == nil {
						switch {
						case strings.HasPrefix(cf.name, "seekindex"):
							// A blob of its own: the others sample without one.
							var err error
							if bl, err = anim.Load(cmuBlob(b).Bytes()); err != nil {
								b.Fatal(err)
							}
							bl.BuildSeekIndex()
						case cf.cm == "0.01" && cf.hz == 0 && cf.codec == anim.CodecCurve:
							bl = cmuBlob(b)
						default:
							bl = cmuBlobCodec(b, cf.cm, cf.hz, cf.codec)
						}
					}
					bc := newBenchCrowd(b, bl, n)
					bc.setTime(0)
					if err := bc.job.Run(); err != nil {
						b.Fatal(err)
					}
					sp := newSplitter(&bc.job, par)
					defer sp.stop()
					if par == 1 {
						// The calling thread's CPU time too: on a shared,
						// loaded machine wall time includes other
						// processes' turns on the core.
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
					}
					cpu0 := threadCPU()
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
						sp.run(b)
					}
					bones := float64(b.N) * n * 31
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/bones, "ns/bone")
					if par == 1 {
						b.ReportMetric(float64(threadCPU()-cpu0)/bones, "cpu-ns/bone")
					}
				})
			}
		}
	}
}

// splitter runs a job's range split over par goroutines that live for
// the whole benchmark (as a scheduler's workers do), so the harness itself
// allocates nothing per pose. The helpers spin on a generation counter
// for a while before they sleep on a channel (as a scheduler's workers
// spin before they park): a pose of the crowd is tens of microseconds of
// work, about what waking a parked thread costs on a virtual machine, and
// the benchmark measures the kernel's scaling, not the wake-up; on a
// loaded machine, where a spinning helper may have no core, they sleep.
type splitter struct {
	job      *anim.SampleJob
	par      int
	gen      atomic.Uint64 // pose number; helpers start a range when it moves
	left     atomic.Int64  // helpers still running this pose
	sleeping []atomic.Bool
	wake     []chan struct{}
	quit     atomic.Bool
	errs     []error
}

func newSplitter(job *anim.SampleJob, par int) *splitter {
	s := &splitter{job: job, par: par, errs: make([]error, par), sleeping: make([]atomic.Bool, par), wake: make([]chan struct{}, par)}
	for p := 1; p < par; p++ {
		s.wake[p] = make(chan struct{}, 1)
		go s.helper(p)
	}
	return s
}

func (s *splitter) helper(p int) {
	seen := uint64(0)
	for spins := 0; ; {
		if g := s.gen.Load(); g != seen {
			seen, spins = g, 0
			n := len(s.job.Inputs)
			s.errs[p] = s.job.RunRange(p*n/s.par, (p+1)*n/s.par)
			s.left.Add(-1)
			continue
		}
		if s.quit.Load() {
			return
		}
		if spins++; spins < 1<<12 {
			if spins%64 == 0 {
				runtime.Gosched()
			}
			continue
		}
		s.sleeping[p].Store(true)
		if s.gen.Load() != seen || s.quit.Load() {
			s.sleeping[p].Store(false)
			continue
		}
		<-s.wake[p] // a stale token only costs a loop
		spins = 0
	}
}

func (s *splitter) kick() {
	for p := 1; p < s.par; p++ {
		if s.sleeping[p].Swap(false) {
			select {
			case s.wake[p] <- struct{}{}:
			default: // a token is already waiting
			}
		}
	}
}

func (s *splitter) run(b *testing.B) {
	n := len(s.job.Inputs)
	s.left.Store(int64(s.par - 1))
	s.gen.Add(1)
	s.kick()
	if err := s.job.RunRange(0, n/s.par); err != nil {
		b.Fatal(err)
	}
	for s.left.Load() != 0 {
		runtime.Gosched()
	}
	for _, err := range s.errs[1:] {
		if err != nil {
			b.Fatal(err)
		}
	}
}

func (s *splitter) stop() {
	s.quit.Store(true)
	s.kick()
}

// threadCPU returns the calling thread's CPU time in nanoseconds
// (RUSAGE_THREAD), 0 where unavailable.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1: RUSAGE_THREAD on Linux
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
