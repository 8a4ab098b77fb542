package anim

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
