package anim

import "github.com/vkjobs/vkjobs/anim/internal/format"

// SeekIndexSize returns the seek index of the clip at byte offset off:
// its snapshots and its size in words (0, 0 without one).
func SeekIndexSize(b *Blob, off uint32) (snapshots, words int) {
	ix := b.seeks.Load().of(off)
	if ix == nil {
		return 0, 0
	}
	return len(ix.frame), ix.words()
}

// SeekDensity is seekDensity: how many times its stream's words a clip's
// seek index may take, besides a word per track and segment and three
// per segment.
const SeekDensity = seekDensity

// GPULoopBound is the sampling kernel's bound on the loop passes of one
// GPU invocation (one SIMD vector on lavapipe) for a task on b with
// these Params (gpu_bound.go).
func GPULoopBound(b *Blob, bones, stride int, inPlace bool) int {
	return int(b.gpuLoopBound(uint32(bones), uint32(stride), inPlace))
}

// ClipLoops returns the figures of the bound for the clip at off: its
// animated tracks, the most need frames of one of its segments, the most
// records read at one need frame, and the time of its worst seek (the
// last need frame of its busiest segment).
func ClipLoops(b *Blob, off uint32) (tracks, rounds, perRound int, worst float32) {
	for _, c := range b.loops.clips {
		if c.off == off {
			cv := ClipView{b, off}
			L := cv.w(format.ChSegFrames)
			return int(c.slots), int(c.rounds), int(c.perRound), float32(c.seg*L+c.last) / cv.Rate()
		}
	}
	return 0, 0, 0, 0
}
