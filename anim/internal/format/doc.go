// Package format holds what package anim (the runtime) and package
// anim/offline (the importers and the compressor) must agree on bit for
// bit: the blob's header words and cursor layout, the limits, track
// kinds, quantisation and the bit reader and writer, the Hermite curve
// arithmetic, and the uniform codec's tables. It is internal: the blob
// format is not an API, and its names are exported only so that the two
// halves share one copy. This documentation is the format's
// specification; package anim's documentation describes the design
// around it (curve fitting, the error metric, quantisation, the codecs,
// the samplers).
//
// # The stream: curve points in playback order
//
// A segment's stream begins with a header per animated track, in track
// order: coding parameters, the first point raw, then the second and (if
// the second is not the segment end) third points. After the headers come
// the remaining points of all tracks, interleaved in the order playback
// needs them: with a window of four points p0..p3 per track evaluating
// [p1, p2], the point after p3 is needed when playback reaches p2. Records
// are sorted by that need frame, ties in track order. The sampler keeps
// one cursor per track (its window) and one read position per character;
// at each need frame it visits the tracks whose p2 is at that frame, in
// track order, and each reads its next record: the stream order is implied
// by the cursors, so records need no track id. Sampling forward therefore
// reads the stream linearly, each point once. Random seeks (going back,
// changing clip or segment) reload the segment header and read forward
// from there, so their cost is bounded by the segment length.
//
// # The blob
//
// A blob is one byte slice of plain little-endian 32-bit records that
// refer to each other by offsets only. It is written with one
// offline.Builder.Bytes and loaded with one read plus anim.Load, which validates every
// offset, count and table and decodes every segment as the sampler would
// (a corrupt or truncated blob is an *anim.BlobError, never a panic or an
// out-of-bounds read). Blobs can be concatenated byte-wise: anim.Load walks
// them one after another; clips are named by their byte offset in the
// whole slice (anim.ClipView.Offset, anim.SampleInput.Clip). Offsets inside a blob
// are relative to the record that holds them (directories: to the blob
// start), so a blob moves without patching.
//
//	blob header, 12 words (offsets from the blob start)
//	  0 magic "ANIM"  1 version (3)  2 blob size in bytes
//	  3 CRC-32C of bytes [16, size)
//	  4 skeleton count  5 skeleton directory  6 clip count  7 clip directory
//	  8..11 zero
//	directory: one uint32 offset per record
//
//	skeleton record, 8 words (offsets from the record start)
//	  0 "SKEL"  1 record size  2 bones  3 parents (int32 each, -1 root)
//	  4 rest pose (12 float32 per bone: translation, rotation, scale)
//	  5 names (string table: bone names, then the skeleton name)
//	  6 inverse bind matrices (16 float32 per bone) or 0
//	  7 skin joint of each bone (int32) or 0
//
//	clip record, 24 words (offsets from the record start)
//	  0 "CLIP"  1 record size  2 skeleton (signed offset to its record)
//	  3 bones  4 rate (float32 Hz)  5 frames  6 frames per segment
//	  7 segments  8 animated tracks  9 flags (0 curve, 1 uniform)
//	  10 default pose (12 float32 per bone, as the rest pose)  11 track table
//	  12 segment table (segments+1 bit offsets into the stream)
//	  13 stream  14 stream words (ends with 12 zero words of padding)
//	  15 event count  16 event table  17 name  18 name length
//	  19 cursor words per character  20 tolerance (float32 m)
//	  21 uniform clips: range table (8 float32 per track), else 0
//	  22 curve clips: identity (ClipIdentity: CRC-32C of the record's bytes
//	  without words 22 and 23, 1 where that is 0), or 0 in blobs written
//	  before it; uniform clips 0  23 zero
//	track descriptor, 4 words
//	  0 bone | kind<<16 (0 translation, 1 rotation, 2 scale)
//	  1 bit width of a segment's first indices  2 grid step (float32)  3 0
//	event, 2 words: time (float32 s), type | bone<<16
//	string table of n strings: n+1 uint32 end offsets, then the bytes
//
//	segment, per animated track in track order (bits, LSB first):
//	  mode 3 | disc 1 | predictor 2 | time Rice k 4 | linear 1 |
//	  end pair 1 (only when disc is 1) | Rice k 5 per component
//	  first point: each component signed, (track width) bits
//	  second point, third point (unless the second is at the segment end
//	  and there is no end pair)
//	then records, in need order: a point = Rice(time delta - 1 + disc),
//	  then per component Rice(zigzag(index - prediction))
//	end pair: the track's last two points are both at the segment end,
//	  the value held up to the end, then the end's own value (only in a
//	  clip's last segment: a discontinuity at the clip's last frame, such
//	  as a glTF STEP key at its last time). The second is read, as any
//	  point, when playback reaches the point two before it; sampling at
//	  the segment end (the clip's end) evaluates the zero-length interval
//	  between the two, the second's value, and any time before it the
//	  interval that ends on the first (whose outgoing tangent is then
//	  one-sided). Version 2 blobs (no end pair bit) are refused.
//	Rice(u, k): q = u>>k zero bits, a one, k low bits; q >= 24: 24 zeros,
//	  then u in 32 bits
//
// # The uniform clip
//
// CompressOptions{Codec: CodecUniform} (package anim/offline) stores
// every frame of every animated track at a bit rate chosen per track and
// per segment (package anim's documentation, "The uniform codec"):
//
//	uniform clip record: the clip record above with flags 1; frames per
//	  segment a power of two in 2..256; segments = ceil(frames / L);
//	  track descriptor words 1..3 zero; cursor words CursorHeaderWords
//	  (unused); word 21 the range table; the segment table in bits,
//	  multiples of 32, the last the stream's data size
//	segment (bytes): uint32 bits per frame FB; per track a rate byte
//	  (code | dropped component<<4; 3 for translations and scales); per
//	  track 6 range bytes (min then extent, 8 bits each per stored
//	  component; for code 0 three uint16 values); frame data from the next
//	  word boundary, frame l at bit l*FB: per track 3 components of
//	  ladder[code] bits, LSB first
//	value = min + ext*(r_min/255) + ext*(r_ext/255)/(2^n - 1) * q
//	  (float32, in this order; code 0: min + ext*(u16/65535))
package format
