package render

import (
	"errors"
	"fmt"
	"math"
)

// SortKey is the 64-bit key that orders packets in the merged stream:
// packets are sorted by the unsigned value of their key, ascending, and
// packets with equal keys keep their submission order (context index, then
// position in the context). Build one with Key.Encode; read it with Decode.
//
// Bit layout (bit 63 is the most significant). The top 25 bits are shared;
// the low 39 bits depend on the translucency bit T:
//
//	 63      56 55               40  39  38                  24 23                     0
//	+----------+-------------------+---+---------------------+------------------------+
//	| layer  8 |   sequence   16   | T |    pipeline  15     |   depth 24, near first  |  T=0 opaque
//	+----------+-------------------+---+---------------------+------------------------+
//	| layer  8 |   sequence   16   | T |  ~depth 24, far first     |    pipeline 15     |  T=1 translucent
//	+----------+-------------------+---+---------------------------+--------------------+
//	                                    38                        15 14                0
//
// The fields, most significant first:
//
//   - layer: the render pass or view (shadow maps, scene, HUD...); lower
//     layers are recorded first.
//   - sequence: for ordered passes (UI, debug overlays) the submitter numbers
//     its packets and the sequence dominates everything below it. In sorted
//     passes it is 0 and pipeline and depth decide.
//   - T: opaque (0) packets of a layer and sequence come before translucent
//     (1) ones.
//   - opaque: grouped by pipeline (fewest pipeline binds), then front to
//     back inside a pipeline (early depth rejection).
//   - translucent: back to front (correct blending), the depth stored
//     inverted; the pipeline only breaks ties.
//
// Depth is 24 bits produced by QuantizeDepth from a non-negative view depth.
type SortKey uint64

// Field widths, shifts and masks of the key. The masks of each layout are
// disjoint and together cover all 64 bits (TestKeyLayout).
const (
	KeyLayerBits       = 8
	KeySequenceBits    = 16
	KeyTranslucentBits = 1
	KeyPipelineBits    = 15
	KeyDepthBits       = 24

	KeyLayerShift       = 56
	KeySequenceShift    = 40
	KeyTranslucentShift = 39

	// Opaque layout (T=0).
	KeyOpaquePipelineShift = 24
	KeyOpaqueDepthShift    = 0
	// Translucent layout (T=1).
	KeyTranslucentDepthShift    = 15
	KeyTranslucentPipelineShift = 0

	KeyLayerMask       SortKey = (1<<KeyLayerBits - 1) << KeyLayerShift
	KeySequenceMask    SortKey = (1<<KeySequenceBits - 1) << KeySequenceShift
	KeyTranslucentMask SortKey = (1<<KeyTranslucentBits - 1) << KeyTranslucentShift

	KeyOpaquePipelineMask      SortKey = (1<<KeyPipelineBits - 1) << KeyOpaquePipelineShift
	KeyOpaqueDepthMask         SortKey = (1<<KeyDepthBits - 1) << KeyOpaqueDepthShift
	KeyTranslucentDepthMask    SortKey = (1<<KeyDepthBits - 1) << KeyTranslucentDepthShift
	KeyTranslucentPipelineMask SortKey = (1<<KeyPipelineBits - 1) << KeyTranslucentPipelineShift

	// MaxKeyPipeline and MaxDepth are the largest values the fields hold.
	MaxKeyPipeline = 1<<KeyPipelineBits - 1
	MaxDepth       = 1<<KeyDepthBits - 1
)

// ErrKeyRange is returned by Encode when a field does not fit its bits.
var ErrKeyRange = errors.New("render: sort key field out of range")

// Key is the decoded form of a SortKey.
type Key struct {
	Layer       uint8
	Sequence    uint16
	Translucent bool
	// Pipeline orders packets by state; normally the draw's PipelineID
	// (Registry IDs always fit), at most MaxKeyPipeline.
	Pipeline uint16
	// Depth is a quantized view depth (QuantizeDepth), at most MaxDepth;
	// larger is farther.
	Depth uint32
}

// Encode packs k into a SortKey. It returns ErrKeyRange if Pipeline or
// Depth do not fit their fields.
func (k Key) Encode() (SortKey, error) {
	if k.Pipeline > MaxKeyPipeline || k.Depth > MaxDepth {
		return 0, fmt.Errorf("%w: pipeline %d (max %d), depth %d (max %d)", ErrKeyRange, k.Pipeline, MaxKeyPipeline, k.Depth, MaxDepth)
	}
	s := SortKey(k.Layer)<<KeyLayerShift | SortKey(k.Sequence)<<KeySequenceShift
	if k.Translucent {
		s |= KeyTranslucentMask
		s |= SortKey(MaxDepth-k.Depth) << KeyTranslucentDepthShift
		s |= SortKey(k.Pipeline) << KeyTranslucentPipelineShift
	} else {
		s |= SortKey(k.Pipeline) << KeyOpaquePipelineShift
		s |= SortKey(k.Depth) << KeyOpaqueDepthShift
	}
	return s, nil
}

// Decode unpacks a SortKey; Decode(Encode(k)) == k for every valid k.
func (s SortKey) Decode() Key {
	k := Key{
		Layer:       uint8((s & KeyLayerMask) >> KeyLayerShift),
		Sequence:    uint16((s & KeySequenceMask) >> KeySequenceShift),
		Translucent: s&KeyTranslucentMask != 0,
	}
	if k.Translucent {
		k.Depth = MaxDepth - uint32((s&KeyTranslucentDepthMask)>>KeyTranslucentDepthShift)
		k.Pipeline = uint16((s & KeyTranslucentPipelineMask) >> KeyTranslucentPipelineShift)
	} else {
		k.Depth = uint32((s & KeyOpaqueDepthMask) >> KeyOpaqueDepthShift)
		k.Pipeline = uint16((s & KeyOpaquePipelineMask) >> KeyOpaquePipelineShift)
	}
	return k
}

// String formats the decoded key.
func (s SortKey) String() string {
	k := s.Decode()
	t := "opaque"
	if k.Translucent {
		t = "translucent"
	}
	return fmt.Sprintf("key{layer %d seq %d %s pipeline %d depth %d}", k.Layer, k.Sequence, t, k.Pipeline, k.Depth)
}

// QuantizeDepth maps a view-space depth (distance from the camera, >= 0) to
// the key's 24-bit depth, preserving order: a <= b implies QuantizeDepth(a)
// <= QuantizeDepth(b). It keeps the float's exponent and top 16 mantissa
// bits, so the relative precision is about 1.5e-5 at any distance, with no
// near/far range to configure. Negative depths and -0 map to 0, +Inf to
// 0xff0000 (above every finite depth), NaN to MaxDepth.
func QuantizeDepth(d float32) uint32 {
	if d != d {
		return MaxDepth
	}
	if d <= 0 {
		return 0
	}
	// Positive float bits are ordered like the floats; bit 31 is 0, so
	// bits>>7 fits 24 bits (+Inf is 0x7f800000>>7 = 0xff0000).
	return math.Float32bits(d) >> 7
}
