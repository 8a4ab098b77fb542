package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// Each CPU result is also stated as a fraction of its bound: the time the
// kernel cannot beat on the cores its column uses, the larger of
//
//   - the copy bound: copy() of the kernel's bytes (in + out), on one
//     goroutine for cpu-1 and spu, on one or GOMAXPROCS goroutines,
//     whichever is faster, for cpu-all (measured at that size, in the
//     same rounds as the kernel: see boundRounds), and
//   - the compute bound: the kernel's arithmetic per element at this
//     core's peak throughput, times one core (cpu-1, spu) or GOMAXPROCS
//     cores (cpu-all).
//
// The peak is derived from the clock, measured (clockHz) rather than read
// from /proc/cpuinfo, whose "cpu MHz" is the nominal frequency of a virtual
// machine, not the turbo clock the kernels run at:
//
//   - float operations: 2 vector instructions of 8 float32 lanes per cycle
//     (AVX2: the two 256-bit FP ports of every Intel core since Haswell and
//     of AMD's since Zen 2), each add, multiply, min, max, square root or
//     division counting one lane operation, an FMA two;
//   - integer additions: 3 such instructions per cycle (three vector ALU
//     ports);
//   - CRC-32C: one CRC32 instruction on 8 bytes per cycle (its throughput on
//     Intel and AMD cores).
//
// Loads, stores, shuffles and gathers are not counted, so the bound is
// optimistic (a kernel cannot reach 100% of it); it is the one that shows
// how far a compute-heavy kernel is from the hardware. The kernels do not
// fuse multiply-adds where that would change the Go code's bits, so the
// float bound counts separate multiplies and adds.
type costModel struct {
	floatOps float64 // float32 lane operations per element
	intOps   float64 // uint32 lane additions per element
	crcBytes float64 // bytes through CRC32 per element
	note     string  // how the count was made
}

// Peak lane operations per cycle and core, as above.
const (
	floatLanesPerCycle = 2 * 8
	intLanesPerCycle   = 3 * 8
	crcBytesPerCycle   = 8
)

// costOf returns kernel id's arithmetic per element (kbench's element: a
// vertex, a bone, an input or output value, a 4-byte word), counted from
// the Go reference code on kbench's generated data.
func costOf(id sched.KernelID) costModel {
	switch id {
	case kernels.SkinLBS, kernels.SkinLBSUniform:
		// Blend 12 matrix elements from 4 weights (4 mul + 3 add) or, for
		// the half of kbench's vertices with weights 3 and 4 zero, 2 (2
		// mul + 1 add): 60 on average; position 18, normal 15, normalising
		// 10 (3 mul, 2 add, sqrt, div, 3 mul).
		return costModel{floatOps: 103, note: "blend 60 (half the vertices 2 joints), position 18, normal 15, normalise 10"}
	case kernels.SkinDQS, kernels.SkinDQSUniform:
		// Antipodal signs 21 (3 dot products), blend 8 x 7 = 56, length and
		// scale 17, translation 24, position 33, normal 30.
		return costModel{floatOps: 181, note: "signs 21, blend 56, normalise 17, translation 24, position 33, normal 30"}
	case kernels.LocalToModel:
		// T*R*S 33 (quaternion to basis 24, scale 9), model[parent] *
		// local as an affine product 63.
		return costModel{floatOps: 96, note: "T*R*S 33, parent * local 63 (affine)"}
	case kernels.LocalToModelSkin:
		return costModel{floatOps: 159, note: "T*R*S 33, parent * local 63, model * inverse bind 63"}
	case kernels.SumF32:
		return costModel{floatOps: 1, note: "1 add per input"}
	case kernels.MinMaxF32:
		return costModel{floatOps: 2, note: "1 min and 1 max per input"}
	case kernels.Avg32F32:
		return costModel{floatOps: 1 + 1.0/32, note: "1 add per input, 1 multiply per 32"}
	case kernels.ExpandLerp:
		return costModel{floatOps: 2 + 1.0/8, note: "1 multiply and 1 add per output, 1 subtract per 8"}
	case kernels.ScanReduceU32:
		return costModel{intOps: 1, note: "1 add per input"}
	case kernels.ScanDownsweepU32:
		return costModel{intOps: 1, note: "1 add per output"}
	case kernels.CRC32CBlocks:
		return costModel{crcBytes: 4, note: "4 bytes per word through CRC32"}
	case kernels.Saxpy:
		return costModel{floatOps: 2, note: "1 multiply and 1 add"}
	}
	return costModel{}
}

// computeSeconds returns the compute bound of n elements on one core at
// hz (0 when the clock is unknown).
func (c costModel) computeSeconds(n int, hz float64) float64 {
	if hz <= 0 {
		return 0
	}
	cycles := c.floatOps/floatLanesPerCycle + c.intOps/intLanesPerCycle + c.crcBytes/crcBytesPerCycle
	return float64(n) * cycles / hz
}

// clockHz measures the core clock: the fastest of several timed runs of a
// chain of dependent adds (one cycle each), so that the turbo clock the
// kernels run at counts. Where there is no such loop (not amd64) it reads
// /proc/cpuinfo's "cpu MHz", and else returns 0 (no compute bound).
func clockHz() (hz float64, source string) {
	if haveAddChain {
		const n = 1 << 20 // 8M cycles: a few milliseconds
		for range 7 {
			t0 := time.Now()
			adds := addChain(n)
			if d := time.Since(t0).Seconds(); d > 0 {
				hz = max(hz, float64(adds)/d)
			}
		}
		return hz, "measured: a chain of dependent adds, fastest of 7 runs"
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0, "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			if mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && mhz > 0 {
				return mhz * 1e6, "/proc/cpuinfo cpu MHz (nominal)"
			}
		}
	}
	return 0, "unknown"
}

// The bound and the kernel are timed in the same rounds of one process
// (measureAll: each round takes one sample of every device and of the
// copies, in turn), and a fraction of the bound compares like with like:
// the bound's fastest sample over the kernel's fastest sample of those
// rounds, each the run least disturbed by other processes. The fastest
// copy over the median kernel, as kbench first stated it, mixed two
// statistics (and with the copy measured apart from the kernel, at
// in-cache sizes where a copy swings from run to run, a figure could pass
// 100%). The spread is the range of the rounds' own ratios (the bound's
// sample over the kernel's sample of the same round): narrow on a quiet
// machine, wide where other work disturbed the run, which then says the
// fraction is not to be quoted. A fraction still above 100% is no figure
// of the kernel: its bound is not one (the kernel moves fewer bytes than
// its streams declare, or mostly reads, which a copy of as many bytes
// cannot), and the table marks it so.
//
// Rejected: the median of the rounds' ratios as the figure. The two
// samples of a round are taken one after the other, not at once, so load
// that comes and goes within a round makes each ratio noisy; for a kernel
// at its copy bound (ratio near 1) the median then lands above 100% about
// half the time.

// boundRounds is a column's bound per round: the slower of its copy
// sample and its compute bound.
func boundRounds(copies []float64, compute float64) []float64 {
	b := make([]float64, len(copies))
	for i, c := range copies {
		b[i] = max(c, compute)
	}
	return b
}

// fasterRounds is the faster of two copies per round (cpu-all may use one
// core or all).
func fasterRounds(a, b []float64) []float64 {
	f := make([]float64, len(a))
	for i := range a {
		f[i] = min(a[i], b[i])
	}
	return f
}

// spread is a figure and the range of the rounds around it.
type spread struct{ value, lo, hi float64 }

// fraction is the bound's fraction of the kernel's time: the fastest
// bound sample over the fastest kernel sample, with the range of the
// rounds' ratios (bound[i] / kernel[i]) as its spread. Rounds whose
// kernel sample is not positive are left out.
func fraction(bound, kernel []float64) spread {
	var fs, bs, ks []float64
	for i := range min(len(bound), len(kernel)) {
		if kernel[i] > 0 {
			fs = append(fs, bound[i]/kernel[i])
			bs = append(bs, bound[i])
			ks = append(ks, kernel[i])
		}
	}
	if len(fs) == 0 {
		return spread{}
	}
	return spread{slices.Min(bs) / slices.Min(ks), slices.Min(fs), slices.Max(fs)}
}

// fractionText is a fraction of a bound for the table: the figure and,
// when withRange, the range of the rounds' ratios; above 100% a mark that
// it is no figure (the notes after the table say why).
func fractionText(f, lo, hi float64, withRange bool) string {
	switch {
	case f > 1:
		return "over!"
	case withRange:
		return fmt.Sprintf("%2.0f%% %2.0f-%2.0f", 100*f, 100*lo, 100*hi)
	}
	return fmt.Sprintf("%2.0f%%", 100*f)
}

// overNotes returns the notes of the table for results whose copy or
// bound fraction is above 100%.
func overNotes(results []Result) []string {
	var notes []string
	note := func(x *Result, what string, f, lo, hi float64) {
		notes = append(notes, fmt.Sprintf("%s %s, %s: over! the %s's fastest sample is %.2f of the kernel's (rounds %.2f-%.2f): no figure; the kernel moves fewer bytes than its streams declare, or mostly reads, which a copy of as many bytes cannot (or, with a wide range of rounds, other work disturbed the run)",
			x.Kernel, formatSize(x.Size), x.Device, what, f, lo, hi))
	}
	for i := range results {
		x := &results[i]
		if x.CopyFraction > 1 {
			note(x, "copy", x.CopyFraction, x.CopyFractionMin, x.CopyFractionMax)
		}
		if x.BoundFraction > 1 {
			note(x, x.BoundKind+" bound", x.BoundFraction, x.BoundFractionMin, x.BoundFractionMax)
		}
	}
	return notes
}
