package format

import "errors"

// StreamPadWords zero words end every stream, so that a record read that
// starts inside the stream never reads outside it.
const StreamPadWords = 12

// SegLenOf returns the length in frames of segment s.
func SegLenOf(frames, segFrames, s int) int {
	return min(segFrames, frames-1-s*segFrames)
}

// PackParams packs coding parameters as the cursor stores them:
// mode | disc<<3 | kt<<4 | kc[c]<<(8+5c) | pm<<28 | lin<<30.
func PackParams(mode, disc, pm, kt, lin uint32, kc [4]uint32) uint32 {
	return mode | disc<<3 | kt<<4 | kc[0]<<8 | kc[1]<<13 | kc[2]<<18 | kc[3]<<23 | pm<<28 | lin<<30
}

// ErrNoClip is returned for clip offsets that name no clip of a blob.
var ErrNoClip = errors.New("not a clip of this blob")
