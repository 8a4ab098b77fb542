package format

import "fmt"

// Limits every importer, the compressor and the blob loader enforce.
const (
	MaxBones  = 1024    // bones per skeleton
	MaxFrames = 1 << 22 // samples per clip (float32 frame numbers stay exact)
	// MaxClipSamples bounds frames × tracks of an imported clip (about
	// 1.2 GB in memory), so a short hostile file cannot ask for more.
	MaxClipSamples = 1 << 25
)

// TrackKind says which part of a bone transform a track animates.
type TrackKind uint8

// Track kinds. A clip has three tracks per bone, at index bone*3+kind.
const (
	TrackTranslation TrackKind = 0
	TrackRotation    TrackKind = 1
	TrackScale       TrackKind = 2
)

func (k TrackKind) String() string {
	switch k {
	case TrackTranslation:
		return "translation"
	case TrackRotation:
		return "rotation"
	case TrackScale:
		return "scale"
	}
	return fmt.Sprintf("TrackKind(%d)", uint8(k))
}
