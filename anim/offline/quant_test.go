package offline

import (
	"math"
	"math/rand"
	"testing"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

func randomQuat(rng *rand.Rand) Quat {
	for {
		q := Quat{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		if n := q.Norm(); n > 1e-3 {
			return q.Scale(1 / n)
		}
	}
}

// Vector components round-trip within half a grid step (plus float32
// rounding of the product).
func TestQuantiseVectorBound(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, step := range []float32{1e-5, 3e-4, 0.01} {
		for range 2000 {
			v := [4]float64{rng.NormFloat64() * 3, rng.NormFloat64() * 3, rng.NormFloat64() * 3, 0}
			idx := format.Quantize(TrackTranslation, 0, step, v)
			d := format.Dequant(uint32(TrackTranslation), 0, step, &idx)
			for c := range 3 {
				bound := float64(step)/2 + math.Abs(v[c])*1.2e-7
				if e := math.Abs(float64(d[c]) - v[c]); e > bound {
					t.Fatalf("step %g: component %d of %v decodes to %v (error %g > %g)", step, c, v, d, e, bound)
				}
			}
		}
	}
}

// Rotations in every mode round-trip within a bound proportional to the
// step: three stored components each within step/2, and the rebuilt one
// (at least format.RotModeMin) within 1.5·step/format.RotModeMin; angle = 2|Δq|.
func TestQuantiseRotationBound(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, step := range []float32{2e-5, 1e-4, 1e-3} {
		worst := 0.0
		for range 4000 {
			q := randomQuat(rng)
			mode := format.RotationMode([][4]float64{[4]float64(q)})
			idx := format.Quantize(TrackRotation, mode, step, [4]float64(q))
			d := format.Dequant(uint32(TrackRotation), mode, step, &idx)
			dq := Quat{float64(d[0]), float64(d[1]), float64(d[2]), float64(d[3])}
			a := quatAngle(q, dq.Normalized())
			bound := 2 * math.Sqrt(3*math.Pow(float64(step)/2, 2)+math.Pow(1.5*float64(step)/format.RotModeMin, 2))
			if a > bound*1.01+1e-6 {
				t.Fatalf("step %g mode %d: %v decodes to %v, angle %g > %g", step, mode, q, d, a, bound)
			}
			worst = max(worst, a/float64(step))
		}
		if worst < 0.5 {
			t.Errorf("step %g: worst error %g steps: the test is not exercising rounding", step, worst)
		}
	}
}

// Mode choice: the dropped component stays at least format.RotModeMin over the
// samples; all four are kept when none does.
func TestRotationMode(t *testing.T) {
	mostlyW := [][4]float64{{0.1, 0, 0, 0.99}, {0, 0.5, 0, 0.86}}
	if m := format.RotationMode(mostlyW); m != 3 {
		t.Errorf("mode %d, want 3 (w)", m)
	}
	spin := [][4]float64{{0, 0, 0, 1}, {0, 0, 1, 0}} // 180° about z: w and z both reach 0
	if m := format.RotationMode(spin); m != format.ModeAll {
		t.Errorf("mode %d, want all four (%d)", m, format.ModeAll)
	}
}

// BitSquid's own figures (Frykholm, "The BitSquid low level animation
// system", 2009): 16 bits over -10..10 m is a 0.3 mm step (error
// at most 0.15 mm); 10-bit smallest three has precision 0.0014 (error per
// component at most 0.0007).
func TestBitSquidQuantisationFigures(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for range 5000 {
		v := [4]float64{rng.Float64()*20 - 10, rng.Float64()*20 - 10, rng.Float64()*20 - 10, 0}
		d := format.BitsquidPosition(v)
		for c := range 3 {
			if e := math.Abs(d[c] - v[c]); e > 0.000153 {
				t.Fatalf("position error %g m > 0.15 mm", e)
			}
		}
		q := randomQuat(rng)
		r := format.BitsquidRotation([4]float64(q))
		if r[0]*q[0]+r[1]*q[1]+r[2]*q[2]+r[3]*q[3] < 0 {
			r = [4]float64(Quat(r).Neg())
		}
		for c := range 4 {
			if e := math.Abs(r[c] - q[c]); e > 0.0025 { // 0.0007 stored, the rebuilt one larger
				t.Fatalf("rotation %v -> %v: component error %g", q, r, e)
			}
		}
	}
}

// Rice codes, zigzag and raw fields survive a write/read round trip,
// through both readers (escapes included).
func TestBitsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	type item struct {
		kind int // 0 raw, 1 rice, 2 signed
		v, k uint32
	}
	var items []item
	var w format.BitWriter
	for range 5000 {
		switch rng.Intn(3) {
		case 0:
			n := uint32(rng.Intn(33))
			v := rng.Uint32() & uint32(uint64(1)<<n-1)
			items = append(items, item{0, v, n})
			w.Write(v, int(n))
		case 1:
			k := uint32(rng.Intn(format.MaxRiceK + 1))
			v := uint32(rng.ExpFloat64() * float64(uint64(1)<<k) * 3)
			if rng.Intn(50) == 0 {
				v = rng.Uint32() // escape
			}
			items = append(items, item{1, v, k})
			w.Rice(v, k)
		case 2:
			r := int32(rng.Intn(1<<20) - 1<<19)
			items = append(items, item{2, format.Zigzag(r), 0})
			w.Rice(format.Zigzag(r), 7)
		}
	}
	end := uint32(w.N)
	w.Words = append(w.Words, make([]uint32, format.StreamPadWords)...)
	pos := uint32(0)
	var br format.BitBuf
	br.Seek(w.Words, 0)
	for i, it := range items {
		var got, got2 uint32
		switch it.kind {
		case 0:
			got = format.ReadBits(w.Words, pos, it.k)
			pos += it.k
			got2 = br.Bits(it.k)
		case 1:
			got, pos = format.ReadRice(w.Words, pos, it.k)
			got2 = br.Rice(it.k)
		case 2:
			got, pos = format.ReadRice(w.Words, pos, 7)
			got2 = br.Rice(7)
			if format.Unzigzag(got) != format.Unzigzag(it.v) {
				t.Fatalf("item %d: zigzag %d", i, format.Unzigzag(got))
			}
		}
		if got != it.v || got2 != it.v || br.Pos() != pos {
			t.Fatalf("item %d %+v: read %d and %d, positions %d and %d", i, it, got, got2, pos, br.Pos())
		}
	}
	if pos != end {
		t.Fatalf("read %d bits of %d", pos, end)
	}
	for _, r := range []int32{0, 1, -1, 1 << 30, -1 << 30, math.MaxInt32, math.MinInt32} {
		if format.Unzigzag(format.Zigzag(r)) != r {
			t.Errorf("zigzag(%d) does not round-trip", r)
		}
	}
}

// Predictors: known answers, and no int32 overflow at the extremes.
func TestPredict(t *testing.T) {
	cases := []struct {
		ta, tb, t uint32
		ia, ib    int32
		pm        uint32
		want      int32
	}{
		{0, 1, 2, 10, 20, format.PredLine, 30},
		{0, 2, 3, 10, 20, format.PredLine, 25},
		{0, 1, 2, 10, 20, format.PredHalf, 25},
		{0, 1, 2, 10, 20, format.PredHold, 20},
		{1, 1, 2, 10, 20, format.PredLine, 20},   // discontinuity: hold
		{0, 1, 100, 10, 20, format.PredLine, 20}, // too far: hold
		{0, 1, 2, -(1 << 23) + 1, 1<<23 - 1, format.PredLine, 1<<23 - 1},
		{0, 1, 64, -(1 << 22), 1 << 22, format.PredLine, 1 << 22}, // slope 2^23: hold
		{0, 1, 64, -(1 << 22) + 1, 1 << 22, format.PredLine, 1<<22 + 63*(1<<23-1)},
	}
	for _, c := range cases {
		if got := format.Predict(c.ta, c.tb, c.t, c.ia, c.ib, c.pm); got != c.want {
			t.Errorf("predict(%d,%d,%d,%d,%d,%d) = %d, want %d", c.ta, c.tb, c.t, c.ia, c.ib, c.pm, got, c.want)
		}
	}
}
