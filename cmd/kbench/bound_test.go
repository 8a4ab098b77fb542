package main

import (
	"strings"
	"testing"
)

// TestFraction: a bound's fraction is its fastest sample over the
// kernel's fastest sample of the same rounds, so load that slows rounds
// does not move it; the spread is the range of the rounds' own ratios,
// and rounds without a kernel time are left out.
func TestFraction(t *testing.T) {
	near := func(a, b float64) bool { return a > b-1e-12 && a < b+1e-12 }
	load := []float64{1, 3, 1.1, 2.5, 1.05, 4, 1.2}
	copies, kernel := make([]float64, len(load)), make([]float64, len(load))
	for i, f := range load {
		copies[i], kernel[i] = 0.8*f, 1.0*f // the copy takes 80% of the kernel's time
	}
	if f := fraction(copies, kernel); !near(f.value, 0.8) || !near(f.lo, 0.8) || !near(f.hi, 0.8) {
		t.Fatalf("fraction under load moving both alike: %+v, want 0.8 in every round", f)
	}
	// One round whose kernel alone was slowed: the figure stays, the
	// spread shows it.
	kernel[3] *= 2
	if f := fraction(copies, kernel); !near(f.value, 0.8) || !near(f.lo, 0.4) || !near(f.hi, 0.8) {
		t.Fatalf("one disturbed round: %+v, want 0.8, rounds 0.4-0.8", f)
	}
	// The kernel's fastest round disturbed the copy alone: the figure
	// drops below the rounds' ratios, never above the bound.
	copies[0] *= 3
	if f := fraction(copies, kernel); !near(f.value, 0.8*1.05/1) || f.value > 1 || !near(f.hi, 2.4) {
		t.Fatalf("the copy disturbed in the kernel's fastest round: %+v", f)
	}
	kernel[0] = 0
	if f := fraction(copies, kernel); !near(f.lo, 0.4) || !near(f.hi, 0.8) {
		t.Fatalf("a round without a kernel time counted: %+v", f)
	}
	if f := fraction(nil, nil); f != (spread{}) {
		t.Fatalf("no rounds: %+v", f)
	}
}

// TestBoundRounds: a round's bound is the slower of its copy and the
// compute bound; cpu-all's copy is the faster of one goroutine's and all
// goroutines' in that round.
func TestBoundRounds(t *testing.T) {
	b := boundRounds([]float64{1, 3, 2}, 2.5)
	if b[0] != 2.5 || b[1] != 3 || b[2] != 2.5 {
		t.Fatalf("boundRounds = %v", b)
	}
	f := fasterRounds([]float64{1, 4, 2}, []float64{2, 3, 2})
	if f[0] != 1 || f[1] != 3 || f[2] != 2 {
		t.Fatalf("fasterRounds = %v", f)
	}
}

// TestFractionAboveBoundMarked: the table gives a fraction with its
// spread, and a median above 100% as no figure, with a note that says
// why.
func TestFractionAboveBoundMarked(t *testing.T) {
	r := &Report{Kernels: []string{"k"}, Sizes: []int{1000}, Devices: []string{devCPU1, devCPUAll}}
	r.Copies = []Copy{{Kernel: "k", Size: 1000, Bytes: 8000, Seconds: 1e-6,
		Bounds: []Bound{{Device: devCPU1, Seconds: 1e-6, Kind: "copy"}, {Device: devCPUAll, Seconds: 1e-6, Kind: "copy"}}}}
	base := Result{Kernel: "k", Elem: "e", Size: 1000, Elements: 1000, Bytes: 8000, CopySeconds: 1e-6, BoundSeconds: 1e-6, BoundKind: "copy"}
	under, over := base, base
	under.Device, under.Seconds, under.ElemPerSec = devCPU1, 1.25e-6, 8e8
	under.CopyFraction, under.BoundFraction, under.BoundFractionMin, under.BoundFractionMax = 0.8, 0.8, 0.7, 0.9
	over.Device, over.Seconds, over.ElemPerSec = devCPUAll, 0.8e-6, 1.25e9
	over.CopyFraction, over.CopyFractionMin, over.CopyFractionMax = 1.25, 1.1, 1.3
	over.BoundFraction, over.BoundFractionMin, over.BoundFractionMax = 1.25, 1.1, 1.3
	r.Results = []Result{under, over}
	var b strings.Builder
	if err := r.writeTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"800 (80% 80% 70-90)", "1250 (over! over!)",
		"k 1e3, cpu-all: over! the copy's fastest sample is 1.25 of the kernel's (rounds 1.10-1.30)",
		"k 1e3, cpu-all: over! the copy bound's fastest sample is 1.25 of the kernel's (rounds 1.10-1.30)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "125%") {
		t.Errorf("a fraction above 100%% is printed as a figure:\n%s", out)
	}
}
