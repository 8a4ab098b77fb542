//go:build amd64 && !purego

package anim

import (
	"math"
	"math/rand"
	"slices"
	"testing"
	"unsafe"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// TestCurvePassAsm checks that the curve codec's record loop in assembly
// (curvePassAsm, through needPassAsm) writes needPass's slot words and
// returns its position and next need frame, bit for bit: one to five
// slots, random streams (short codes, random bits, long and escape codes),
// every Rice parameter, predictor, mode and track kind, point spacings
// that take divisors 1, 2 and others and the hold, index differences at
// the 2^23 limit, any ring head and fresh count, slots at and off the
// need frame, with and without points left (end pairs included), and a
// segment end that stops the loop. It also checks that the assembly, not
// only the Go code it leaves records to, read most records and every
// kind of prediction. (A record the assembly leaves to the Go code must
// find the slot as the records before it left it: the Go code then reads
// it from there, and the slots are compared after the whole pass.)
func TestCurvePassAsm(t *testing.T) {
	if !curveHasAsm {
		t.Skip("no BMI2 on this CPU (or a purego build)")
	}
	rng := rand.New(rand.NewSource(1))
	stream := make([]uint32, 64)
	var asmRead, left int
	seen := map[string]int{}
	for iter := range 100000 {
		for i := range stream {
			switch iter % 4 {
			case 0, 1: // mostly ones: short codes
				stream[i] = rng.Uint32() | rng.Uint32() | rng.Uint32()
			case 2:
				stream[i] = rng.Uint32()
			default: // sparse: long codes and escapes
				stream[i] = rng.Uint32() & rng.Uint32() & rng.Uint32() & rng.Uint32()
			}
		}
		nslot := 1 + rng.Intn(5)
		slots := make([]uint32, nslot*CursorSlotWords)
		tracks := make([]uint32, nslot*format.TrackDescWords)
		for s := range nslot {
			tracks[s*format.TrackDescWords] = uint32(rng.Intn(3))<<16 | uint32(s)
			randomSlot(rng, (*slotWords)(slots[s*CursorSlotWords:]))
		}
		F := slots[format.SlT2]
		for s := 1; s < nslot; s++ {
			if rng.Intn(2) == 0 {
				slots[s*CursorSlotWords+format.SlT2] = F
			}
		}
		segEnd := uint32(1 << 30)
		if rng.Intn(4) == 0 { // no points left unless an end pair is ahead
			segEnd = slots[format.SlT3]
		}
		pos := uint32(rng.Intn(20 * 32))
		segStop := uint32(32 * 32)
		if rng.Intn(4) == 0 {
			segStop = pos + uint32(rng.Intn(64))
		}

		a, g := slices.Clone(slots), slices.Clone(slots)
		pa, na := needPassAsm(stream, tracks, a, F, segEnd, segStop, pos)
		pg, ng := needPass(stream, tracks, g, F, segEnd, segStop, pos)
		if pa != pg || na != ng || !slices.Equal(a, g) {
			t.Fatalf("iteration %d (%d slots, F %d, segEnd %d, segStop %d, pos %d): assembly pos %d next %d, Go pos %d next %d\nassembly slots %v\nGo slots %v\nbefore %v",
				iter, nslot, F, segEnd, segStop, pos, pa, na, pg, ng, a, g, slots)
		}

		// The assembly alone, up to the first record it leaves to Go.
		o := slices.Clone(slots)
		s, _, _ := curvePassAsm(unsafe.Pointer(&stream[0]), len(stream), &tracks[0], &o[0], 0, nslot, F, segEnd, segStop, pos, format.NoNeed)
		if s < nslot {
			left++
		}
		cs, ca := slots[:CursorSlotWords], o[:CursorSlotWords]
		if ca[format.SlHead] == cs[format.SlHead] || ca[format.SlT2] == cs[format.SlT2] && ca[format.SlT3] == cs[format.SlT3] {
			continue // slot 0 read nothing in assembly
		}
		asmRead++
		t2, t3, params := cs[format.SlT2], cs[format.SlT3], cs[format.SlParams]
		pm := params >> 28 & 3
		den := t3 - t2
		if pm == format.PredHalf {
			den *= 2
		}
		switch t := ca[format.SlT2]; { // the first record's point: p3 after it, p2 after the pass
		case pm == format.PredHold || t3 <= t2 || t3-t2 >= 1<<16 || t-t3 > 63:
			seen["hold"]++
		case den == 1:
			seen["divisor 1"]++
		case den == 2:
			seen["divisor 2"]++
		default:
			seen["divisor n"]++
		}
		if tracks[0]>>16 == uint32(format.TrackRotation) && params&7 == format.ModeAll {
			seen["four components"]++
		}
	}
	t.Logf("assembly read slot 0's record %d times, left a record to Go %d times; %v", asmRead, left, seen)
	if asmRead < 20000 || left < 1000 {
		t.Errorf("assembly read %d records and left %d: the test does not exercise both", asmRead, left)
	}
	for _, k := range []string{"hold", "divisor 1", "divisor 2", "divisor n", "four components"} {
		if seen[k] < 100 {
			t.Errorf("%s: %d records read by the assembly", k, seen[k])
		}
	}
}

// randomSlot fills a cursor slot for TestCurvePassAsm: random words, then
// small Rice parameters mostly, four-component rotations, fresh counts,
// point spacings and ring indices that take every path of a record.
func randomSlot(rng *rand.Rand, cs *slotWords) {
	for i := range cs {
		cs[i] = rng.Uint32()
	}
	params := rng.Uint32()
	if rng.Intn(4) > 0 {
		params &^= 0xf<<4 | 0x1f<<8 | 0x1f<<13 | 0x1f<<18 | 0x1f<<23
		params |= uint32(rng.Intn(4))<<4 | uint32(rng.Intn(12))<<8 | uint32(rng.Intn(12))<<13 |
			uint32(rng.Intn(12))<<18 | uint32(rng.Intn(12))<<23
	}
	if rng.Intn(3) == 0 {
		params = params&^7 | format.ModeAll
	}
	cs[format.SlParams] = params
	switch rng.Intn(8) {
	case 0:
		cs[format.SlFresh] = 0xffffffff
	case 1, 2, 3:
		cs[format.SlFresh] = uint32(rng.Intn(6))
	}
	t2 := uint32(rng.Intn(200))
	switch rng.Intn(6) {
	case 0, 1:
		cs[format.SlT2], cs[format.SlT3] = t2, t2+1
	case 2:
		cs[format.SlT2], cs[format.SlT3] = t2, t2+2
	case 3:
		cs[format.SlT2], cs[format.SlT3] = t2, t2+uint32(rng.Intn(70000))
	case 4:
		cs[format.SlT2], cs[format.SlT3] = t2, t2-uint32(rng.Intn(3))
	}
	ring := ringOf(cs)
	base := rng.Int31n(1<<20) - 1<<19
	for e := range ring {
		for c := 1; c <= 4; c++ {
			switch rng.Intn(6) {
			case 0:
				ring[e][c] = rng.Uint32()
			case 1: // a difference at the 2^23 limit
				ring[e][c] = uint32(base + [4]int32{1<<23 - 1, 1 << 23, -(1<<23 - 1), -(1 << 23)}[rng.Intn(4)])
			default:
				ring[e][c] = uint32(base + rng.Int31n(2000) - 1000)
			}
		}
	}
}

// TestCurveDecodeAsm checks that the assembly point decoding
// (curveDecodeAsm) writes decodeFresh's values bit for bit: every fresh
// count (above 4 too), ring head and rotation mode (the dropped
// component's four places, four stored components, the modes no
// compressor writes), translations and scales, indices from small to
// extreme, grid steps that make the squared sum exceed 1 (no square
// root) or overflow, previous points in either hemisphere, zero and NaN.
func TestCurveDecodeAsm(t *testing.T) {
	if !curveHasAsm {
		t.Skip("no BMI2 on this CPU (or a purego build)")
	}
	rng := rand.New(rand.NewSource(2))
	var negated, rooted int
	for iter := range 200000 {
		var cs slotWords
		for i := range cs {
			cs[i] = rng.Uint32()
		}
		cs[format.SlParams] = cs[format.SlParams]&^7 | uint32(rng.Intn(8))
		if rng.Intn(4) > 0 {
			cs[format.SlFresh] = uint32(rng.Intn(5))
		}
		step := float32(1) / float32(int32(1)<<uint(10+rng.Intn(10)))
		switch rng.Intn(10) {
		case 0:
			step = float32(rng.NormFloat64() * 1e30)
		case 1:
			step = float32(math.NaN())
		case 2:
			step = 0
		}
		ring := ringOf(&cs)
		for e := range ring {
			for c := 1; c <= 4; c++ {
				if rng.Intn(8) > 0 {
					// Within the unit ball mostly, in the step's units.
					ring[e][c] = uint32(int32(rng.NormFloat64() / math.Sqrt(3) / float64(step)))
				}
			}
			for c := 5; c <= 8; c++ {
				switch rng.Intn(8) {
				case 0:
					ring[e][c] = math.Float32bits(float32(math.NaN()))
				case 1:
					ring[e][c] = 0
				default:
					ring[e][c] = math.Float32bits(float32(rng.NormFloat64()))
				}
			}
		}
		rot := rng.Intn(3) > 0
		a, g := cs, cs
		var r uint32
		if rot {
			r = 1
		}
		curveDecodeAsm(&a, r, step)
		decodeFresh(ringOf(&g), g[format.SlHead]&3, g[format.SlParams]&7, min(g[format.SlFresh], 4), rot, step)
		if a != g {
			t.Fatalf("iteration %d (rot %v, mode %d, head %d, fresh %d, step %g):\nassembly %v\nGo       %v\nbefore   %v",
				iter, rot, cs[format.SlParams]&7, cs[format.SlHead]&3, cs[format.SlFresh], step, a, g, cs)
		}
		// How many points took the hemisphere flip and the square root.
		head, fresh := cs[format.SlHead]&3, min(cs[format.SlFresh], 4)
		for k := 4 - fresh; k < 4 && rot; k++ {
			v := *format.RingValue(&ringOf(&g)[(head+k)&3])
			if k > 0 && cs[format.SlParams]&7 < 4 && math.Signbit(float64(v[cs[format.SlParams]&7])) {
				negated++ // the rebuilt component is >= 0 before the flip
			}
			if cs[format.SlParams]&7 < 4 && v[cs[format.SlParams]&7] != 0 {
				rooted++
			}
		}
	}
	t.Logf("%d points negated, %d with a rebuilt component", negated, rooted)
	if negated < 1000 || rooted < 1000 {
		t.Errorf("%d points negated, %d with a rebuilt component: the test does not exercise both", negated, rooted)
	}
}

// TestCurveFinishAsm checks that the assembly finish of the curve
// evaluation (curveFinishAVX) stores storeTrack's floats bit for bit and
// nothing else: one to eight lanes, rotations and translations or scales
// mixed, components of every size (tiny, huge, zero of either sign,
// infinite, NaN) so that |q|² underflows, overflows, is 0 or NaN, and
// lanes whose places in the pose are in any order.
func TestCurveFinishAsm(t *testing.T) {
	if !curveHasAVX {
		t.Skip("no AVX on this CPU (or a purego build)")
	}
	rng := rand.New(rand.NewSource(3))
	comp := func() float32 {
		switch rng.Intn(12) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return float32(math.Inf(1 - 2*rng.Intn(2)))
		case 3:
			return float32(math.NaN())
		case 4:
			return float32(rng.NormFloat64() * 1e-23)
		case 5:
			return float32(rng.NormFloat64() * 1e20)
		default:
			return float32(rng.NormFloat64())
		}
	}
	var identity, normalised int
	for iter := range 100000 {
		n := 1 + rng.Intn(8)
		pose := make([]float32, 9*PoseFloats)
		for i := range pose {
			pose[i] = float32(rng.NormFloat64())
		}
		want := slices.Clone(pose)
		var buf curveFinishBuf
		places := rng.Perm(len(pose) / 4)
		for j := range 8 {
			for c := range 4 {
				buf.v[c][j] = comp()
			}
			if rng.Intn(20) == 0 { // all four tiny: |q|² underflows to 0
				for c := range 4 {
					buf.v[c][j] = float32(rng.NormFloat64() * 1e-30)
				}
			}
			buf.off[j] = int32(4 * places[j])
			if rng.Intn(3) > 0 {
				buf.rot[j] = -1
			}
		}
		for j := range n {
			o := buf.off[j]
			p := (*[4]float32)(want[o : o+4])
			rot := buf.rot[j] != 0
			if !rot {
				buf.v[3][j] = pose[o+3] // the pose's own, as sampleCurve fills it
			}
			storeTrack(p, buf.v[0][j], buf.v[1][j], buf.v[2][j], buf.v[3][j], rot)
			if rot && *p == [4]float32{0, 0, 0, 1} {
				identity++
			} else if rot {
				normalised++
			}
		}
		curveFinishAVX(&buf, n, pose)
		for i := range pose {
			if math.Float32bits(pose[i]) != math.Float32bits(want[i]) {
				t.Fatalf("iteration %d (%d lanes), pose float %d: assembly %v, Go %v\nbuffer %+v", iter, n, i, pose[i], want[i], buf)
			}
		}
	}
	if identity < 1000 || normalised < 1000 {
		t.Errorf("%d rotations fell back to the identity, %d normalised: the test does not exercise both", identity, normalised)
	}
}
