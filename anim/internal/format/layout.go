package format

import "hash/crc32"

// Blob layout (all fields little-endian 32-bit words; all offsets in bytes
// and multiples of 4; see doc.go for the full picture):
//
//	blob header (12 words), offsets from the blob start
//	  0 magic "ANIM"   1 version   2 blob size   3 CRC-32C of bytes [16, size)
//	  4 skeleton count 5 skeleton directory  6 clip count  7 clip directory
//	  8..11 zero
//	directories: one uint32 offset (from the blob start) per record
//	skeleton record (8 words), offsets from the record start
//	  0 "SKEL" 1 record size 2 bones 3 parents (int32 × bones)
//	  4 rest pose (12 float32 × bones) 5 names (string table)
//	  6 inverse bind (16 float32 × bones, or 0) 7 skin joints (int32 × bones, or 0)
//	clip record (24 words), offsets from the record start
//	  0 "CLIP" 1 record size 2 skeleton (signed offset to its record)
//	  3 bones 4 rate (float32 Hz) 5 frames 6 segment frames 7 segments
//	  8 animated tracks 9 flags (0 curve, 1 uniform)
//	  10 default pose (12 float32 × bones: T, R, S) 11 track table (8 words each)
//	  12 segment table (segments+1 bit offsets) 13 stream 14 stream words
//	  15 events 16 event table (2 words each) 17 name 18 name length
//	  19 cursor words 20 tolerance (float32 m)
//	  21 uniform: clip range table (8 float32 per track), curve: zero  22..23 zero
//	track descriptor (4 words)
//	  0 bone | kind<<16   1 bits of a segment's first indices   2 grid step (float32)   3 zero
//	event (2 words): time (float32 s), type | bone<<16
//	string table of n strings: n+1 uint32 offsets into the bytes that follow
const (
	BlobMagic      = 0x4D494E41 // "ANIM"
	BlobVersion    = 3
	SkelTag        = 0x4C454B53 // "SKEL"
	ClipTag        = 0x50494C43 // "CLIP"
	BlobHeaderSize = 48
	SkelHeaderSize = 32
	ClipHeaderSize = 96
	TrackDescWords = 4
)

// Clip header word indices.
const (
	ChTag = iota
	ChSize
	ChSkeleton
	ChBones
	ChRate
	ChFrames
	ChSegFrames
	ChSegments
	ChSlots
	ChFlags
	ChDefault
	ChTracks
	ChSegTable
	ChStream
	ChStreamWords
	ChEvents
	ChEventTable
	ChName
	ChNameLen
	ChCursorWords
	ChTolerance
	ChRanges // uniform clips: clip range table (zero for curve clips)
)

var Castagnoli = crc32.MakeTable(crc32.Castagnoli)
