package xmath

import "testing"

func TestPow2(t *testing.T) {
	for n, want := range map[int]int{-3: 1, 0: 1, 1: 1, 2: 2, 3: 4, 4096: 4096, 4097: 8192} {
		if got := Pow2(n); got != want {
			t.Errorf("Pow2(%d) = %d, want %d", n, got, want)
		}
	}
	if got := Pow2(uint64(1)<<40 + 1); got != 1<<41 {
		t.Errorf("Pow2(2^40+1) = %d", got)
	}
}

func TestMedian(t *testing.T) {
	x := []float64{3, 1, 2, 10}
	if got := Median(x); got != 2.5 {
		t.Errorf("Median(%v) = %g, want 2.5", x, got)
	}
	if x[0] != 3 {
		t.Errorf("Median sorted its argument: %v", x)
	}
	if got := Median([]int64{5, 1, 9}); got != 5 {
		t.Errorf("Median of 5,1,9 = %d", got)
	}
	if got := Median[float64](nil); got != 0 {
		t.Errorf("Median(nil) = %g", got)
	}
}
