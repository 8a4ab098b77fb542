package kernels

import (
	"math"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// Tests of the AVX2 loops of stream_amd64.s against the Go loops (the
// reference): every streaming, reduce and expand kernel runs with
// streamFast set and cleared on the same inputs, over ranges that start
// and end inside the data, with partial last blocks, NaNs, infinities and
// signed zeros, and the outputs are compared by each kernel's stated
// tolerance (stream_amd64.go):
//
//	ScanReduceU32, ScanDownsweepU32, ExpandLerp, Saxpy   bit-exact
//	MinMaxF32                                            equal values (-0 == +0), NaNs ignored alike
//	SumF32, Avg32F32                                     |fast-go| <= sumTolerance of the block
//
// KERNELS_GO=1 clears streamFast for the whole test binary; these tests
// set it themselves, so they compare both paths whenever the CPU has AVX2.

// streamCase is one kernel's inputs: n items, the valid count, and the
// ranges run.
func streamData(t *testing.T, id sched.KernelID, n int, seed uint64) sched.TaskData {
	d := fixture(t, id, n)
	r := rng(seed)
	switch id {
	case SumF32, MinMaxF32, Avg32F32:
		x := sched.View[float32](d.In[0])
		// Cancellation, huge and tiny values, signed zeros, infinities and
		// NaNs (NaN and Inf only for MinMax: they make sums NaN on both
		// paths, which compares equal below anyway).
		for i := range x {
			switch r.IntN(40) {
			case 0:
				x[i] = float32(r.NormFloat64() * 1e30)
			case 1:
				x[i] = float32(r.NormFloat64() * 1e-30)
			case 2:
				x[i] = float32(math.Copysign(0, r.NormFloat64()))
			case 3:
				if id == MinMaxF32 {
					x[i] = float32(math.NaN())
				}
			case 4:
				if id == MinMaxF32 {
					x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
				}
			}
		}
	case Saxpy:
		d.Params[0] = math.Float32bits(float32(r.NormFloat64()))
	}
	return d
}

func TestStreamAsm(t *testing.T) {
	if !streamHasAsm {
		t.Skip("no AVX2 on this CPU: the Go loops are the only path")
	}
	defer func(f bool) { streamFast = f }(streamFast)
	ids := []sched.KernelID{SumF32, MinMaxF32, Avg32F32, ExpandLerp, ScanReduceU32, ScanDownsweepU32, Saxpy}
	for _, id := range ids {
		for _, n := range []int{1, 2, 7, 64, 133, 1000} {
			for _, valid := range []int{-1, 0, 1, 5} { // Params[0]: as the fixture, all, or cut after 1 or 5 inputs... of the last block
				d := streamData(t, id, n, uint64(n)*7+uint64(valid+1))
				switch id {
				case SumF32, MinMaxF32, Avg32F32, ScanReduceU32, ScanDownsweepU32:
					f := uint32(SumFactor)
					if id == Avg32F32 {
						f = Avg32Factor
					}
					if valid == 0 {
						d.Params[0] = 0
					} else if valid > 0 {
						d.Params[0] = uint32(n-1)*f + uint32(valid)
					}
				default:
					if valid > 0 {
						continue
					}
				}
				for _, r := range [][2]uint32{{0, uint32(n)}, {uint32(n) / 3, uint32(n) - uint32(n)/4}} {
					if r[0] >= r[1] {
						continue
					}
					streamFast = false
					clearOutputs(&d)
					if err := runDirect(t, id, &d, r[0], r[1]); err != nil {
						t.Fatal(err)
					}
					want := outputs(&d)
					streamFast = true
					clearOutputs(&d)
					if err := runDirect(t, id, &d, r[0], r[1]); err != nil {
						t.Fatal(err)
					}
					got := outputs(&d)
					compareStream(t, id, &d, got[0], want[0], n, r)
				}
			}
		}
	}
}

// compareStream compares the fast path's output with the Go loop's by the
// kernel's tolerance.
func compareStream(t *testing.T, id sched.KernelID, d *sched.TaskData, got, want []byte, n int, r [2]uint32) {
	t.Helper()
	g, w := f32bytes(got), f32bytes(want)
	switch id {
	case SumF32, Avg32F32:
		f, scale := uint64(SumFactor), 1.0
		if id == Avg32F32 {
			f, scale = Avg32Factor, 1.0/Avg32Factor
		}
		x := sched.View[float32](d.In[0])
		valid := validCount(d, f)
		for i := range g {
			lo, hi := blockRange(uint32(i), f, valid)
			tol := sumTolerance(x[lo:hi], scale)
			diff := math.Abs(float64(g[i]) - float64(w[i]))
			if !(diff <= tol) && !(g[i] != g[i] && w[i] != w[i]) && g[i] != w[i] {
				t.Fatalf("kernel %d, n %d, range %v, block %d: fast %v, go %v: |diff| %g > tolerance %g", id, n, r, i, g[i], w[i], diff, tol)
			}
		}
	case MinMaxF32:
		for i := range g {
			if g[i] != w[i] && !(g[i] != g[i] && w[i] != w[i]) {
				t.Fatalf("kernel %d, n %d, range %v, float %d: fast %v, go %v", id, n, r, i, g[i], w[i])
			}
		}
	default:
		if string(got) != string(want) {
			for i := range g {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					t.Fatalf("kernel %d, n %d, range %v, word %d: fast %#08x, go %#08x (bit-exact expected)", id, n, r, i, math.Float32bits(g[i]), math.Float32bits(w[i]))
				}
			}
		}
	}
}

// TestSumToleranceIsTight: the bound is not vacuous. A block whose
// index-order sum loses the small terms (1, then 2^24 ones... ) shows the
// two orders really differ, by less than the bound.
func TestSumToleranceIsTight(t *testing.T) {
	if !streamHasAsm {
		t.Skip("no AVX2 on this CPU")
	}
	defer func(f bool) { streamFast = f }(streamFast)
	x := make([]float32, SumFactor)
	x[0] = 1 << 24 // in index order every following 1 is lost (round to even)
	for i := 1; i < len(x); i++ {
		x[i] = 1
	}
	out := make([]float32, 1)
	d := reduceTask(x, out, 0)
	streamFast = false
	if err := sumF32(nil, &d); err != nil {
		t.Fatal(err)
	}
	ref := out[0]
	streamFast = true
	if err := sumF32(nil, &d); err != nil {
		t.Fatal(err)
	}
	fast := out[0]
	diff := math.Abs(float64(fast) - float64(ref))
	if ref != 1<<24 || diff == 0 || diff > sumTolerance(x, 1) {
		t.Fatalf("index order %v, fast %v: |diff| %g, tolerance %g", ref, fast, diff, sumTolerance(x, 1))
	}
	t.Logf("index order %v, fast %v (exact %v): |diff| %g <= tolerance %g", ref, fast, float64(1<<24+255), diff, sumTolerance(x, 1))
}
