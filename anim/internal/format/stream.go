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
// mode | disc<<3 | kt<<4 | kc[c]<<(8+5c) | pm<<28 | lin<<30 | end<<31
// (end: ParamEndPair).
func PackParams(mode, disc, pm, kt, lin, end uint32, kc [4]uint32) uint32 {
	return mode | disc<<3 | kt<<4 | kc[0]<<8 | kc[1]<<13 | kc[2]<<18 | kc[3]<<23 | pm<<28 | lin<<30 | end<<31
}

// ParamEndPair is the packed parameters' bit of a track whose segment
// ends with a discontinuity: two points at the segment end, the value
// held up to it and then the end's own value (a glTF STEP key at the
// clip's last time). Only a clip's last segment may have one: no other
// segment is sampled at its end frame (the next segment's start is).
const ParamEndPair = 1 << 31

// MorePoints reports whether a track whose window ends with points at
// local frames t2 and t3 has another point in its segment: the last
// point is at the segment end, and with an end pair (ParamEndPair) it is
// the second of the two points there.
func MorePoints(params, t2, t3, segEnd uint32) bool {
	return t3 != segEnd || (params&ParamEndPair != 0 && t2 != segEnd)
}

// ErrNoClip is returned for clip offsets that name no clip of a blob.
var ErrNoClip = errors.New("not a clip of this blob")
