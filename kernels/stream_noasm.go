//go:build !amd64 || purego

package kernels

// No assembly here: the streaming kernels always run their Go loops, and
// the functions below, with the assembly's contracts (stream_amd64.go), are
// never called.
var (
	streamHasAsm = false
	streamFast   = false
)

func sumBlocksAVX2(x []float32, out []float32, factor int, scale float32) {
	for i := range out {
		var acc float32
		for _, v := range x[factor*i : factor*(i+1)] {
			acc += v
		}
		out[i] = acc * scale
	}
}

func minMaxBlocksAVX2(x []float32, out []MinMax) {
	for i := range out {
		mn, mx := minMaxGo(x[SumFactor*i : SumFactor*(i+1)])
		out[i] = MinMax{mn, mx}
	}
}

func sumBlocksU32AVX2(x []uint32, out []uint32) {
	for i := range out {
		var acc uint32
		for _, v := range x[ScanBlock*i : ScanBlock*(i+1)] {
			acc += v
		}
		out[i] = acc
	}
}

func scanBlocksU32AVX2(offsets []uint32, x []uint32, out []uint32) {
	for i, acc := range offsets {
		o := out[ScanBlock*i : ScanBlock*(i+1)]
		for k, v := range x[ScanBlock*i : ScanBlock*(i+1)] {
			o[k] = acc
			acc += v
		}
	}
}

func saxpyAVX2(a float32, x, y, out []float32) {
	n := len(out) &^ 31
	for i, v := range x[:n] {
		out[i] = float32(a*v) + y[i]
	}
}

func expandLerpAVX2(seg []Segment, out []float32) {
	for i, s := range seg {
		lerp8(s, out[i*ExpandFactor:i*ExpandFactor+ExpandFactor])
	}
}
