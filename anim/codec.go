package anim

import "fmt"

// Codec selects how offline.Compress stores a clip's animated tracks
// (offline.CompressOptions.Codec; ClipView.Codec tells a loaded clip's).
//
// CodecCurve (the default) fits Hermite curves and entropy-codes their
// points in playback order: the best ratio, but the sampler reads the
// stream in order, so a pose costs what the clip's data rate delivered
// since the previous pose (cheap when holding, dear at low playback rates
// on dense data) and a seek decodes from its segment's start.
//
// CodecUniform stores every frame of every animated track, at a bit
// width (ACL's ladder, 0 to 19 bits per component) and range chosen per
// track and per segment of UniformSegmentFrames frames by a greedy rate
// search against the virtual-vertex error; rotations drop the component
// that stays largest over the segment. A pose decodes its two frames
// directly (frame-addressable, no cursor state), so it costs the same at
// any playback rate, backwards and on seeks (on amd64 with AVX2 the
// decoding runs in assembly); the price is the ratio, most at tight
// tolerances: at 0.01 cm on motion capture about ACL's, where the curve
// codec's is well above it. The uniform codec also bounds the maximum
// error closely (about 1.1 × Tolerance: the search bounds every vertex of
// every segment), where the curve codec's maximum is about 1.7 ×
// Tolerance, and compresses more slowly. Choose it when seeks, scrubbing,
// low playback rates, a predictable per-pose cost or sampling time matter
// more than memory (cmd/crowd -codec uniform). Ratios, errors and
// decoding times of both, beside ACL's on the same clips, are in
// BENCHMARKS.md, section "anim"; so is the measurement that ruled out a
// frame-addressable variant with dropped frames (keyed uniform) as the
// one codec with both the ratio and the speed.
type Codec uint8

const (
	// CodecCurve is the Hermite-curve codec (the zero value, default).
	CodecCurve Codec = iota
	// CodecUniform is the uniformly sampled, frame-addressable codec.
	CodecUniform
)

// String returns "curve" or "uniform".
func (c Codec) String() string {
	switch c {
	case CodecCurve:
		return "curve"
	case CodecUniform:
		return "uniform"
	}
	return fmt.Sprintf("Codec(%d)", uint8(c))
}

// ParseCodec parses "curve" or "uniform" (the form String returns).
func ParseCodec(s string) (Codec, error) {
	switch s {
	case "curve":
		return CodecCurve, nil
	case "uniform":
		return CodecUniform, nil
	}
	return 0, fmt.Errorf("anim: unknown codec %q (want curve or uniform)", s)
}
