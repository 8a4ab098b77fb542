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
// local-to-model 1e-4*max(1,|cpu|), MinMaxF32 exact with -0 == +0, the
// rest bit-exact (kbench's reductions use full blocks and normal floats).

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
	rel, byValue := tolerance(w.id)
	for i, wb := range want {
		if wb == nil {
			continue
		}
		gb := got[i]
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
