package offline

import "github.com/vkjobs/vkjobs/anim/internal/format"

// Limits every importer, the compressor and the blob loader enforce
// (anim.MaxBones and anim.MaxFrames are the same constants).
const (
	MaxBones  = format.MaxBones  // bones per skeleton
	MaxFrames = format.MaxFrames // samples per clip (float32 frame numbers stay exact)
	// MaxClipSamples bounds frames × tracks of an imported clip (about
	// 1.2 GB in memory), so a short hostile file cannot ask for more.
	MaxClipSamples = format.MaxClipSamples
)

// TrackKind says which part of a bone transform a track animates. It is
// the blob's track kind too, so the type lives with the format.
type TrackKind = format.TrackKind

// Track kinds. A clip has three tracks per bone, at index bone*3+kind.
const (
	TrackTranslation = format.TrackTranslation
	TrackRotation    = format.TrackRotation
	TrackScale       = format.TrackScale
)
