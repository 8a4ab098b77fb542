package anim

import "github.com/vkjobs/vkjobs/anim/internal/format"

// Limits the blob loader enforces (and package offline's importers and
// compressor with it: they are the same constants).
const (
	MaxBones  = format.MaxBones  // bones per skeleton
	MaxFrames = format.MaxFrames // samples per clip (float32 frame numbers stay exact)
)
