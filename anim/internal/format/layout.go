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
	ChRanges   // uniform clips: clip range table (zero for curve clips)
	ChIdentity // curve clips: the clip's identity for cursors (ClipIdentity), or 0
)

var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ClipIdentity is a curve clip's identity, stored in its header word
// ChIdentity by offline.Builder and checked by anim.Load: the CRC-32C of
// the clip record's bytes (rec, the whole record) without words ChIdentity
// and the one after it, or 1 where that is 0 (0 means "none"). Two clips
// with one identity hold the same bytes (up to a CRC collision), so a
// cursor's state for one is valid for the other at the same offset.
func ClipIdentity(rec []byte) uint32 {
	c := crc32.Checksum(rec[:4*ChIdentity], Castagnoli)
	c = crc32.Update(c, Castagnoli, rec[4*(ChIdentity+2):])
	if c == 0 {
		c = 1
	}
	return c
}

// CursorIdentity returns what a cursor's word CurBlob holds for the curve
// clip whose header words are h, in the blob words: the clip's identity
// (ClipIdentity), or for a clip written without one (blobs built before
// it) the checksum of the first blob in words (BlobCRCWord).
func CursorIdentity(words, h []uint32) uint32 {
	if id := h[ChIdentity]; id != 0 {
		return id
	}
	return words[BlobCRCWord]
}
