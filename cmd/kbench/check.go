package main

import (
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// Every device's result is checked against the one-goroutine CPU run, so a
// fast wrong answer cannot pass for a measurement. Tolerances are those of
// the kernels package documentation: skinning 2e-5*max(1,|cpu|),
// local-to-model 1e-4*max(1,|cpu|), MinMaxF32 exact with -0 == +0,
// SumF32 and Avg32F32 (full blocks) (factor+16) * 2^-24 * sum |x| of the
// block (times 1/32 for the average: the CPU's AVX2 loop adds 32 partial
// sums, the shader in index order), the rest bit-exact (kbench's
// reductions use full blocks and normal floats).

// tolerance returns kernel id's relative tolerance (0: exact) and whether
// floats are compared as values (so that -0 == +0) rather than as bits.
func tolerance(id sched.KernelID) (rel float64, byValue bool) {
	switch id {
	case kernels.SkinLBS, kernels.SkinLBSUniform, kernels.SkinDQS, kernels.SkinDQSUniform:
		return 2e-5, true
	case kernels.LocalToModel, kernels.LocalToModelSkin:
		return 1e-4, true
	case kernels.MinMaxF32:
		return 0, true
	}
	return 0, false
}

// snapshot copies the workload's output arrays (nil for inputs).
func snapshot(w *workload) [][]byte {
	out := make([][]byte, len(w.arrays))
	for i, a := range w.arrays {
		if a.out {
			out[i] = append([]byte(nil), a.data...)
		}
	}
	return out
}

// views returns the workload's output arrays themselves (nil for inputs).
func views(w *workload) [][]byte {
	out := make([][]byte, len(w.arrays))
	for i, a := range w.arrays {
		if a.out {
			out[i] = a.data
		}
	}
	return out
}

// poison fills the output arrays with a pattern no kernel writes, so that
// a device that skips its work fails the check.
func poison(w *workload) {
	for _, a := range w.arrays {
		if a.out {
			for i := range a.data {
				a.data[i] = 0xa5
			}
		}
	}
}

// compare checks got against want by the kernel's tolerance.
func compare(w *workload, dev string, want, got [][]byte) error {
	return compareAt(w, dev, want, got, 0)
}

// sumTolerance is the bound on |gpu - cpu| of output k of SumF32 or
// Avg32F32 (see the top of this file), or -1 for other kernels.
func sumTolerance(w *workload, k int) float64 {
	f, scale := kernels.SumFactor, 1.0
	switch w.id {
	case kernels.SumF32:
	case kernels.Avg32F32:
		f, scale = kernels.Avg32Factor, 1.0/kernels.Avg32Factor
	default:
		return -1
	}
	x := viewOf[float32](w.arrays[w.in[0]].data)
	var abs float64
	for _, v := range x[min(k*f, len(x)):min((k+1)*f, len(x))] {
		abs += math.Abs(float64(v))
	}
	return float64(f+16) * 0x1p-24 * scale * abs
}

// compareAt is compare for outputs that start at byte off of the
// workload's output arrays (a piece of a GPU buffer).
func compareAt(w *workload, dev string, want, got [][]byte, off int) error {
	rel, byValue := tolerance(w.id)
	for i, wb := range want {
		if wb == nil {
			continue
		}
		gb := got[i]
		if w.id == kernels.SumF32 || w.id == kernels.Avg32F32 {
			g, x := viewOf[float32](gb), viewOf[float32](wb)
			for k := range x {
				tol := sumTolerance(w, off/4+k)
				if d := math.Abs(float64(g[k]) - float64(x[k])); !(d <= tol) && math.Float32bits(g[k]) != math.Float32bits(x[k]) {
					return fmt.Errorf("%s on %s: output %q float %d is %v, the one-goroutine CPU run gives %v (tolerance %g: (factor+16) * 2^-24 * sum |x| of the block)",
						w.kern.Name, dev, w.arrays[i].name, off/4+k, g[k], x[k], tol)
				}
			}
			continue
		}
		if !byValue {
			if string(gb) != string(wb) {
				for k := range wb {
					if gb[k] != wb[k] {
						return fmt.Errorf("%s on %s: output %q differs from the one-goroutine CPU run at byte %d (bit-exact expected)", w.kern.Name, dev, w.arrays[i].name, k)
					}
				}
			}
			continue
		}
		g, x := viewOf[float32](gb), viewOf[float32](wb)
		for k := range x {
			d := math.Abs(float64(g[k]) - float64(x[k]))
			if !(d <= rel*math.Max(1, math.Abs(float64(x[k])))) && !(g[k] != g[k] && x[k] != x[k]) {
				return fmt.Errorf("%s on %s: output %q float %d is %v, the one-goroutine CPU run gives %v (tolerance %g*max(1,|cpu|))",
					w.kern.Name, dev, w.arrays[i].name, k, g[k], x[k], rel)
			}
		}
	}
	return nil
}
