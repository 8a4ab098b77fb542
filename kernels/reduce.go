package kernels

import (
	"math"

	"github.com/vkjobs/vkjobs/sched"
)

// Factors of the Reduce and Expand kernels.
const (
	SumFactor    = 256 // SumF32 and MinMaxF32: inputs per output
	Avg32Factor  = 32  // Avg32F32
	ExpandFactor = 8   // ExpandLerp: outputs per input
)

// reduceIO is the shared setup of the float32 Reduce kernels: the input
// (elements*factor values, of which validCount are used) and the output.
func reduceIO[O any](d *sched.TaskData, factor uint64) (x []float32, out []O, n uint64, err error) {
	if x, err = inSlice[float32](d, 0, 1); err != nil {
		return
	}
	if out, err = outSlice[O](d, 0, 1); err != nil {
		return
	}
	n = validCount(d, factor)
	if err = needLen("output", 0, len(out), uint64(d.End), "range end"); err != nil {
		return
	}
	err = needLen("input", 0, len(x), min(n, uint64(d.End)*factor), "range end x factor")
	return
}

// blockRange returns the valid inputs [lo, hi) of output item i.
func blockRange(i uint32, factor, n uint64) (lo, hi uint64) {
	lo = uint64(i) * factor
	hi = min(lo+factor, n)
	return lo, max(lo, hi)
}

// sumF32 writes out[i] = sum of inputs [256i, 256i+256) below the valid
// count. The Go loop adds in index order starting from 0 (bit-identical to
// the shader); with streamFast, whole blocks run sumBlocksAVX2, whose 32
// partial sums are within sumTolerance of it.
func sumF32(_ *sched.Ctx, d *sched.TaskData) error {
	x, out, n, err := reduceIO[float32](d, SumFactor)
	if err != nil {
		return err
	}
	begin := d.Begin
	if streamFast {
		if full := wholeBlocks(d.Begin, d.End, SumFactor, n); full > begin {
			sumBlocksAVX2(x[uint64(begin)*SumFactor:uint64(full)*SumFactor], out[begin:full], SumFactor, 1)
			begin = full
		}
	}
	for i := begin; i < d.End; i++ {
		lo, hi := blockRange(i, SumFactor, n)
		var acc float32
		for _, v := range x[lo:hi] {
			acc += v
		}
		out[i] = acc
	}
	return nil
}

// minMaxF32 writes out[i] = (min, max) of inputs [256i, 256i+256) below the
// valid count. NaNs are ignored; an empty block gives (+Inf, -Inf).
func minMaxF32(_ *sched.Ctx, d *sched.TaskData) error {
	x, out, n, err := reduceIO[MinMax](d, SumFactor)
	if err != nil {
		return err
	}
	begin := d.Begin
	if streamFast {
		if full := wholeBlocks(d.Begin, d.End, SumFactor, n); full > begin {
			minMaxBlocksAVX2(x[uint64(begin)*SumFactor:uint64(full)*SumFactor], out[begin:full])
			begin = full
		}
	}
	for i := begin; i < d.End; i++ {
		lo, hi := blockRange(i, SumFactor, n)
		mn, mx := minMaxGo(x[lo:hi])
		out[i] = MinMax{mn, mx}
	}
	return nil
}

// minMaxGo returns the min and max of x, ignoring NaNs; (+Inf, -Inf) when
// empty.
func minMaxGo(x []float32) (mn, mx float32) {
	mn, mx = float32(math.Inf(1)), float32(math.Inf(-1))
	for _, v := range x {
		if v < mn {
			mn = v
		}
		if v > mx {
			mx = v
		}
	}
	return mn, mx
}

// wholeBlocks returns the end of the run of items from begin (below end)
// whose blocks of factor inputs are all valid (below n): the items the
// assembly loops may take. It returns begin when there are none.
func wholeBlocks(begin, end uint32, factor, n uint64) uint32 {
	full := uint32(min(uint64(end), n/factor))
	return max(full, begin)
}

// sumTolerance is the bound on |fast - reference| of SumF32 and Avg32F32
// for a block of inputs x (see sumBlocksAVX2), scale 1 or 1/32.
func sumTolerance(x []float32, scale float64) float64 {
	var abs float64
	for _, v := range x {
		abs += math.Abs(float64(v))
	}
	return float64(len(x)+16) * 0x1p-24 * scale * abs
}

// avg32F32 writes out[i] = mean of inputs [32i, 32i+32) below the valid
// count: the sum times 1/32 for a full block (exact), the sum divided by the
// count for a partial one, 0 for an empty one. With streamFast, full blocks
// run sumBlocksAVX2 (within sumTolerance of the Go loop's index order).
func avg32F32(_ *sched.Ctx, d *sched.TaskData) error {
	x, out, n, err := reduceIO[float32](d, Avg32Factor)
	if err != nil {
		return err
	}
	begin := d.Begin
	if streamFast {
		if full := wholeBlocks(d.Begin, d.End, Avg32Factor, n); full > begin {
			sumBlocksAVX2(x[uint64(begin)*Avg32Factor:uint64(full)*Avg32Factor], out[begin:full], Avg32Factor, 1.0/Avg32Factor)
			begin = full
		}
	}
	for i := begin; i < d.End; i++ {
		lo, hi := blockRange(i, Avg32Factor, n)
		var acc float32
		for _, v := range x[lo:hi] {
			acc += v
		}
		switch c := hi - lo; {
		case c == Avg32Factor:
			out[i] = acc * (1.0 / Avg32Factor)
		case c > 0:
			out[i] = acc / float32(c)
		default:
			out[i] = 0
		}
	}
	return nil
}

// expandLerp writes outputs 8i+k = A + (B-A)*(k/8), k = 0..7, for input
// segment i. The explicit conversion keeps Go from fusing the multiply-add
// (the shader uses precise), so results are bit-identical; so are those of
// expandLerpAVX2, which streamFast selects.
func expandLerp(_ *sched.Ctx, d *sched.TaskData) error {
	seg, err := inSlice[Segment](d, 0, 1)
	if err != nil {
		return err
	}
	out, err := outSlice[float32](d, 0, 1)
	if err != nil {
		return err
	}
	if err := needLen("input", 0, len(seg), uint64(d.End), "range end"); err != nil {
		return err
	}
	if err := needLen("output", 0, len(out), uint64(d.End)*ExpandFactor, "range end x factor"); err != nil {
		return err
	}
	if streamFast {
		expandLerpAVX2(seg[d.Begin:d.End], out[d.Begin*ExpandFactor:d.End*ExpandFactor])
		return nil
	}
	for i := d.Begin; i < d.End; i++ {
		lerp8(seg[i], out[i*ExpandFactor:i*ExpandFactor+ExpandFactor])
	}
	return nil
}

// lerp8 writes segment s's 8 samples to o.
func lerp8(s Segment, o []float32) {
	delta := s.B - s.A
	for k := range o[:ExpandFactor] {
		o[k] = s.A + float32(delta*(float32(k)*(1.0/ExpandFactor)))
	}
}

// saxpy writes out[i] = a*x[i] + y[i], a = math.Float32frombits(Params[0]),
// rounding the product before the add (no fused multiply-add), like the
// shader; saxpyAVX2 (streamFast) computes the same bits. out may be y
// itself.
func saxpy(_ *sched.Ctx, d *sched.TaskData) error {
	x, err := inSlice[float32](d, 0, 1)
	if err != nil {
		return err
	}
	y, err := inSlice[float32](d, 1, 1)
	if err != nil {
		return err
	}
	out, err := outSlice[float32](d, 0, 1)
	if err != nil {
		return err
	}
	end := uint64(d.End)
	if err := needLen("input", 0, len(x), end, "range end"); err != nil {
		return err
	}
	if err := needLen("input", 1, len(y), end, "range end"); err != nil {
		return err
	}
	if err := needLen("output", 0, len(out), end, "range end"); err != nil {
		return err
	}
	a := math.Float32frombits(d.Params[0])
	x, y, out = x[d.Begin:d.End], y[d.Begin:d.End], out[d.Begin:d.End]
	y = y[:len(x)]
	out = out[:len(x)]
	if streamFast {
		saxpyAVX2(a, x, y, out)
		n := len(out) &^ 31
		x, y, out = x[n:], y[n:], out[n:]
	}
	for i, v := range x {
		out[i] = float32(a*v) + y[i]
	}
	return nil
}
