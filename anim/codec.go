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
// any playback rate, backwards and on seeks; the price is the ratio, most
// at tight tolerances. Measured on CMU 01_01 + 01_03 (120 Hz, 31 bones;
// animc; BenchmarkSample, CPU ns per bone per pose on one thread of a
// 2-core machine, medians of 3):
//
//	               ratio   p99 / max at 3 cm    hold  fwd120Hz  fwd60Hz  fwd30Hz  seek
//	curve   0.01   22.0:1  0.0100 / 0.017 cm     8.9      48       75      133    1368
//	uniform 0.01   14.1:1  0.0099 / 0.011 cm    19.0      19.3     19.3     19.4    19.1
//	curve   0.1    43.0:1  0.0995 / 0.174 cm     8.9      39       62      103    1059
//	uniform 0.1    21.7:1  0.0994 / 0.109 cm    18.6      19.0     19.0     19.4    19.0
//
// (uniform per clip: 14.5 and 13.9:1 at 0.01 cm, 22.4 and 21.3:1 at
// 0.1 cm; compressing both clips takes 11-15 s per tolerance on 2
// cores, with two calibration passes, against 5-8 s for curves.) The
// uniform codec also bounds the maximum error closely (about 1.1 ×
// Tolerance: the search bounds every vertex of every segment), where the
// curve codec's maximum is about 1.7 × Tolerance. Choose it when seeks,
// scrubbing, low playback rates, a predictable per-pose cost or sampling
// time matter more than memory (cmd/crowd -codec uniform: the sampling
// kernel's time 0.56×).
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
