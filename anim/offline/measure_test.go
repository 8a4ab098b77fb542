package offline_test

import (
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// TestMeasureDistances: Measure and BitSquidFloor without a distance
// are errors (they returned an empty slice and no error, so a caller's
// stats[0] panicked), and so are NaN, infinite and negative distances
// (they were measured without a word); 0 (the joints themselves) and
// ordinary distances measure.
func TestMeasureDistances(t *testing.T) {
	sk, c := animtest.Chain(3, 20, 30)
	cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	_, cv := animtest.Blob(t, sk, cc)
	for _, ds := range [][]float64{nil, {math.NaN()}, {0.03, math.Inf(1)}, {-0.03}} {
		if st, err := offline.Measure(sk, c, cv, ds...); err == nil {
			t.Errorf("Measure at %v: %d stats and no error", ds, len(st))
		} else if !strings.Contains(err.Error(), "distance") {
			t.Errorf("Measure at %v: error %q does not name the distance", ds, err)
		} else {
			t.Logf("Measure at %v: %v", ds, err)
		}
		if _, err := offline.BitSquidFloor(sk, c, ds...); err == nil {
			t.Errorf("BitSquidFloor at %v: no error", ds)
		}
	}
	st, err := offline.Measure(sk, c, cv, 0, 0.03, 1)
	if err != nil || len(st) != 3 {
		t.Fatalf("Measure at 0, 0.03, 1: %v", err)
	}
	for _, s := range st {
		if !(s.P99 >= 0) || !(s.Max >= s.P99) {
			t.Errorf("distance %v: p99 %v max %v", s.Distance, s.P99, s.Max)
		}
	}
}
