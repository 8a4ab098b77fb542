package format

import (
	"math"
	"sync/atomic"
	"unsafe"
)

// F32 reads a blob word as the float32 it stores.
func F32(w uint32) float32 { return math.Float32frombits(w) }

// Cursor words (see doc.go). Header: clip offset, segment, stream bit
// position, local frame of the last sample, next need frame, and the
// clip's identity (CursorIdentity): a cursor moved to another blob, or to
// another concatenation of blobs, whose clip at the same offset holds
// other bytes is reset, not read with the other clip's state. Per track
// (CursorSlotWords):
//
//	0 ring head: index of the window's oldest point p0
//	1 fresh: how many of the newest points are not decoded to values yet
//	  (non-zero means the coefficients are stale)
//	2 t2, 3 t3: frames of the window's p2 and p3 (uint32)
//	4 t1 (float32), 5 1/(t2-t1) (float32): the evaluated interval
//	6 coding parameters of the segment
//	8..23 c0, c1, c2, c3 (vec4 each): the cubic of [p1, p2]
//	24..63 ring of four points, 10 words each: frame, indices[4], value[4]
const (
	CurClip  = 0
	CurSeg   = 1
	CurPos   = 2
	CurLocal = 3
	CurNext  = 4
	CurBlob  = 5

	// BlobCRCWord is the blob header word CurBlob copies for a clip
	// written without an identity (CursorIdentity).
	BlobCRCWord = 3

	SlHead    = 0
	SlFresh   = 1
	SlT2      = 2
	SlT3      = 3
	SlT1      = 4
	SlInvH    = 5
	SlParams  = 6
	SlCoef    = 8
	SlRing    = 24
	RingWords = 10
)

// NoNeed marks a segment whose tracks all hold their last point.
const NoNeed = math.MaxUint32

// SlowRecords counts readRecordSlow's records (tests check both paths
// are exercised).
var SlowRecords atomic.Uint64

// DecodePoint decodes ring entry e's indices (words 1..4) to its value
// (words 5..8): dequant, and a rotation aligned to the hemisphere of prev
// when prev is not nil.
func DecodePoint(e, prev *[RingWords]uint32, kind, mode uint32, step float32) {
	a0, a1, a2 := float32(int32(e[1]))*step, float32(int32(e[2]))*step, float32(int32(e[3]))*step
	v := [4]float32{a0, a1, a2, 0}
	if kind == uint32(TrackRotation) {
		if mode == ModeAll {
			v[3] = float32(int32(e[4])) * step
		} else {
			s := 1 - float32(a0*a0) - float32(a1*a1) - float32(a2*a2) // rounded products: see curve.go
			var big float32
			if s > 0 {
				big = float32(math.Sqrt(float64(s)))
			}
			switch mode {
			case 0:
				v = [4]float32{big, a0, a1, a2}
			case 1:
				v = [4]float32{a0, big, a1, a2}
			case 2:
				v = [4]float32{a0, a1, big, a2}
			default:
				v[3] = big
			}
		}
		if prev != nil && Dot4(&v, RingValue(prev)) < 0 {
			v[0], v[1], v[2], v[3] = -v[0], -v[1], -v[2], -v[3]
		}
	}
	e[5], e[6], e[7], e[8] = math.Float32bits(v[0]), math.Float32bits(v[1]), math.Float32bits(v[2]), math.Float32bits(v[3])
}

// RingValue is the decoded value (words 5..8) of a ring entry.
func RingValue(e *[RingWords]uint32) *[4]float32 {
	return (*[4]float32)(unsafe.Pointer(&e[5]))
}
