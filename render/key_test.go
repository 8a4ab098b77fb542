package render

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestKeyLayout checks each field's mask against its declared shift and
// width, and that the fields of each layout are disjoint and cover all 64
// bits.
func TestKeyLayout(t *testing.T) {
	type field struct {
		name        string
		mask        SortKey
		shift, bits int
	}
	shared := []field{
		{"layer", KeyLayerMask, KeyLayerShift, KeyLayerBits},
		{"sequence", KeySequenceMask, KeySequenceShift, KeySequenceBits},
		{"translucent", KeyTranslucentMask, KeyTranslucentShift, KeyTranslucentBits},
	}
	layouts := map[string][]field{
		"opaque": append(shared[:3:3],
			field{"pipeline", KeyOpaquePipelineMask, KeyOpaquePipelineShift, KeyPipelineBits},
			field{"depth", KeyOpaqueDepthMask, KeyOpaqueDepthShift, KeyDepthBits}),
		"translucent": append(shared[:3:3],
			field{"depth", KeyTranslucentDepthMask, KeyTranslucentDepthShift, KeyDepthBits},
			field{"pipeline", KeyTranslucentPipelineMask, KeyTranslucentPipelineShift, KeyPipelineBits}),
	}
	for name, fields := range layouts {
		var all SortKey
		prevShift := 64
		for _, f := range fields {
			if bits.OnesCount64(uint64(f.mask)) != f.bits || uint64(f.mask>>f.shift) != 1<<f.bits-1 {
				t.Errorf("%s %s: mask %#x is not %d bits at %d", name, f.name, uint64(f.mask), f.bits, f.shift)
			}
			if all&f.mask != 0 {
				t.Errorf("%s %s overlaps an earlier field", name, f.name)
			}
			if f.shift+f.bits != prevShift {
				t.Errorf("%s %s: ends at bit %d, previous field starts at %d (fields must be listed high to low, no gaps)", name, f.name, f.shift+f.bits, prevShift)
			}
			prevShift = f.shift
			all |= f.mask
		}
		if all != ^SortKey(0) || prevShift != 0 {
			t.Errorf("%s: fields cover %#x, not all 64 bits", name, uint64(all))
		}
	}
}

func randKey(rng *rand.Rand) Key {
	return Key{
		Layer:       uint8(rng.Uint32()),
		Sequence:    uint16(rng.Uint32()),
		Translucent: rng.IntN(2) == 0,
		Pipeline:    uint16(rng.IntN(MaxKeyPipeline + 1)),
		Depth:       uint32(rng.IntN(MaxDepth + 1)),
	}
}

func TestKeyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edge := []Key{{}, {Layer: 255, Sequence: 65535, Translucent: true, Pipeline: MaxKeyPipeline, Depth: MaxDepth},
		{Translucent: true}, {Pipeline: MaxKeyPipeline, Depth: MaxDepth}}
	for i := range 100000 {
		k := randKey(rng)
		if i < len(edge) {
			k = edge[i]
		}
		s, err := k.Encode()
		must(t, err)
		if got := s.Decode(); got != k {
			t.Fatalf("Decode(Encode(%+v)) = %+v", k, got)
		}
	}
	if s, _ := (Key{Layer: 1, Translucent: true, Pipeline: 3, Depth: 7}).Encode(); s.String() != "key{layer 1 seq 0 translucent pipeline 3 depth 7}" {
		t.Fatal(s.String())
	}
}

func TestKeyRange(t *testing.T) {
	for _, k := range []Key{{Pipeline: MaxKeyPipeline + 1}, {Depth: MaxDepth + 1}, {Translucent: true, Depth: math.MaxUint32}} {
		if _, err := k.Encode(); !errors.Is(err, ErrKeyRange) {
			t.Errorf("%+v: err %v", k, err)
		}
	}
}

func enc(t *testing.T, k Key) SortKey {
	s, err := k.Encode()
	must(t, err)
	return s
}

// TestKeyOrder checks the ordering rules the layout promises, on random
// pairs of keys that differ in one field.
func TestKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	less := func(a, b Key) bool { return enc(t, a) < enc(t, b) }
	for range 20000 {
		a, b := randKey(rng), randKey(rng)
		// Layer dominates everything.
		if a.Layer != b.Layer && less(a, b) != (a.Layer < b.Layer) {
			t.Fatalf("layer does not dominate: %+v %+v", a, b)
		}
		// Within a layer, the sequence dominates.
		b.Layer = a.Layer
		if a.Sequence != b.Sequence && less(a, b) != (a.Sequence < b.Sequence) {
			t.Fatalf("sequence does not dominate: %+v %+v", a, b)
		}
		// Within a layer and sequence, opaque comes before translucent.
		b.Sequence = a.Sequence
		if a.Translucent != b.Translucent && less(a, b) != b.Translucent {
			t.Fatalf("opaque not before translucent: %+v %+v", a, b)
		}
		b.Translucent = a.Translucent
		if !a.Translucent {
			// Opaque: grouped by pipeline, then front to back.
			if a.Pipeline != b.Pipeline && less(a, b) != (a.Pipeline < b.Pipeline) {
				t.Fatalf("opaque not grouped by pipeline: %+v %+v", a, b)
			}
			b.Pipeline = a.Pipeline
			if a.Depth != b.Depth && less(a, b) != (a.Depth < b.Depth) {
				t.Fatalf("opaque not front to back: %+v %+v", a, b)
			}
		} else {
			// Translucent: back to front whatever the pipeline.
			if a.Depth != b.Depth && less(a, b) != (a.Depth > b.Depth) {
				t.Fatalf("translucent not back to front: %+v %+v", a, b)
			}
			b.Depth = a.Depth
			if a.Pipeline != b.Pipeline && less(a, b) != (a.Pipeline < b.Pipeline) {
				t.Fatalf("translucent ties not broken by pipeline: %+v %+v", a, b)
			}
		}
	}
}

func TestQuantizeDepth(t *testing.T) {
	cases := map[float32]uint32{0: 0, -1: 0, float32(math.Copysign(0, -1)): 0, float32(math.Inf(1)): 0xff0000,
		float32(math.NaN()): MaxDepth, float32(math.Inf(-1)): 0}
	for d, want := range cases {
		if d != d {
			continue // NaN keys are never found in a map; checked below
		}
		if got := QuantizeDepth(d); got != want {
			t.Errorf("QuantizeDepth(%v) = %#x, want %#x", d, got, want)
		}
	}
	if QuantizeDepth(float32(math.NaN())) != MaxDepth {
		t.Error("NaN")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		a, b := rng.Float32()*1000, rng.Float32()*1000
		if a > b {
			a, b = b, a
		}
		qa, qb := QuantizeDepth(a), QuantizeDepth(b)
		if qa > qb || qb > MaxDepth {
			t.Fatalf("not monotone: %v->%d %v->%d", a, qa, b, qb)
		}
		if b > a*1.0001 && qa == qb {
			t.Fatalf("precision lost: %v and %v both %d", a, b, qa)
		}
	}
}
