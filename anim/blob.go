package anim

import (
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// Cursor layout: CursorHeaderWords, then CursorSlotWords per animated track.
const (
	CursorHeaderWords = 8
	CursorSlotWords   = 64
)

// Blob is a loaded, validated resource blob: one or more blobs written by
// offline.Builder and concatenated. Clips and skeletons are named by their byte
// offset in the whole byte slice. A Blob is read-only and safe for
// concurrent use.
type Blob struct {
	data      []byte
	words     []uint32
	clips     []uint32 // absolute byte offsets, sorted
	skels     []uint32
	seeks     atomic.Pointer[seekTable] // the curve clips' seek indexes, once BuildSeekIndex built them
	seeksOnce sync.Once
	loops     gpuLoops // what the GPU sampler's loop passes depend on (gpu_bound.go)
}

// BlobError reports a corrupt or truncated blob: where and what.
type BlobError struct {
	Offset int // byte offset of the bad record or field
	Msg    string
}

func (e *BlobError) Error() string { return fmt.Sprintf("anim blob: byte %d: %s", e.Offset, e.Msg) }

// ReadBlob loads a blob file with one read, then validates it (Load).
func ReadBlob(path string) (*Blob, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Load validates data (every header, offset, count, table and stream
// record of every concatenated blob) and returns a Blob that refers to it
// (data must not be modified afterwards). Corrupt or truncated data is an
// error, never a panic.
func Load(data []byte) (*Blob, error) {
	if len(data) == 0 {
		return nil, &BlobError{0, "empty"}
	}
	if len(data)%4 != 0 {
		return nil, &BlobError{len(data), fmt.Sprintf("size %d is not a multiple of 4", len(data))}
	}
	b := &Blob{data: data, words: wordsOf(data)}
	for off := 0; off < len(data); {
		size, err := b.validateBlob(off)
		if err != nil {
			return nil, err
		}
		off += size
	}
	sort.Slice(b.clips, func(i, j int) bool { return b.clips[i] < b.clips[j] })
	sort.Slice(b.skels, func(i, j int) bool { return b.skels[i] < b.skels[j] })
	return b, nil
}

// Bytes returns the blob's bytes (do not modify them).
func (b *Blob) Bytes() []byte { return b.data }

// BuildSeekIndex builds, in memory, a seek index for each of the blob's
// curve clips and returns the bytes the indexes take (the first call
// builds them; later calls return the same size). With it, the CPU
// sampler's seeks (a jump back, to another clip or across a segment)
// start from the nearest earlier snapshot of the cursor state instead of
// the segment's start, with the same poses bit for bit; forward playback
// and the GPU sampler are unchanged. It trades memory for seek time: a
// clip's index takes at most four times its stream (SeekIndexBytes), so a
// blob that relies on it costs memory beyond its compressed size. Worth
// it for scrubbing, replays and random access; a crowd that plays forward
// does not need it. It is safe to call while jobs sample the blob: they
// use the index from their next call.
func (b *Blob) BuildSeekIndex() int {
	b.seeksOnce.Do(func() {
		t := buildSeekTable(b.words, b.clips)
		b.seeks.Store(&t)
	})
	return b.SeekIndexBytes()
}

// SeekIndexBytes returns the bytes the blob's seek indexes take in memory
// (0 before BuildSeekIndex).
func (b *Blob) SeekIndexBytes() int {
	t := b.seeks.Load()
	if t == nil {
		return 0
	}
	n := 0
	for _, ix := range t.idx {
		if ix != nil {
			n += 4 * ix.words()
		}
	}
	return n
}

// Words returns the blob as little-endian words, the form GPU buffers and
// the sampler read (do not modify them).
func (b *Blob) Words() []uint32 { return b.words }

// NumClips returns the number of clips in all concatenated blobs.
func (b *Blob) NumClips() int { return len(b.clips) }

// Clip returns clip i (0 <= i < NumClips), in offset order.
func (b *Blob) Clip(i int) ClipView { return ClipView{b, b.clips[i]} }

// ClipAt returns the clip whose record starts at byte offset off.
func (b *Blob) ClipAt(off uint32) (ClipView, error) {
	if !b.isClip(off) {
		return ClipView{}, fmt.Errorf("anim: offset %d: %w", off, format.ErrNoClip)
	}
	return ClipView{b, off}, nil
}

func (b *Blob) isClip(off uint32) bool {
	i := sort.Search(len(b.clips), func(i int) bool { return b.clips[i] >= off })
	return i < len(b.clips) && b.clips[i] == off
}

// ClipByName returns the first clip with the given name.
func (b *Blob) ClipByName(name string) (ClipView, bool) {
	for _, off := range b.clips {
		c := ClipView{b, off}
		if c.Name() == name {
			return c, true
		}
	}
	return ClipView{}, false
}

// NumSkeletons returns the number of skeletons.
func (b *Blob) NumSkeletons() int { return len(b.skels) }

// Skeleton returns skeleton i, in offset order.
func (b *Blob) Skeleton(i int) SkeletonView { return SkeletonView{b, b.skels[i]} }

// validateBlob checks the blob starting at byte off and returns its size.
func (b *Blob) validateBlob(off int) (int, error) {
	bad := func(at int, format string, args ...any) error {
		return &BlobError{at, fmt.Sprintf(format, args...)}
	}
	rest := len(b.data) - off
	if rest < format.BlobHeaderSize {
		return 0, bad(off, "truncated header (%d bytes)", rest)
	}
	w := b.words[off/4:]
	if w[0] != format.BlobMagic {
		return 0, bad(off, "bad magic %#x", w[0])
	}
	if w[1] != format.BlobVersion {
		// Older versions are refused, not read: version 3 added the end
		// pair bit to the segment headers of tracks with discontinuities,
		// so a version 2 stream would decode wrong. Rebuild the blob.
		return 0, bad(off+4, "version %d, want %d (blobs of other versions are not read: rebuild it with this version's offline.Builder)", w[1], format.BlobVersion)
	}
	size := int(w[2])
	if size < format.BlobHeaderSize || size > rest || size%4 != 0 {
		return 0, bad(off+8, "blob size %d with %d bytes left", size, rest)
	}
	if sum := crc32.Checksum(b.data[off+16:off+size], format.Castagnoli); sum != w[3] {
		return 0, bad(off+12, "checksum %#x, data has %#x", w[3], sum)
	}
	for i := 8; i < 12; i++ {
		if w[i] != 0 {
			return 0, bad(off+4*i, "reserved word %d is %d", i, w[i])
		}
	}
	dir := func(countWord int) ([]uint32, error) {
		n, at := int(w[countWord]), int(w[countWord+1])
		if at%4 != 0 || at < format.BlobHeaderSize || at > size || n > (size-at)/4 {
			return nil, bad(off+4*countWord, "directory of %d entries at %d outside the %d-byte blob", n, at, size)
		}
		return w[at/4 : at/4+n], nil
	}
	skels, err := dir(4)
	if err != nil {
		return 0, err
	}
	clips, err := dir(6)
	if err != nil {
		return 0, err
	}
	skelBones := map[uint32]int{}
	for i, so := range skels {
		if so%4 != 0 || so < format.BlobHeaderSize || int(so) > size-format.SkelHeaderSize {
			return 0, bad(off+int(w[5])+4*i, "skeleton %d at %d outside the blob", i, so)
		}
		n, err := b.validateSkeleton(off+int(so), off+size)
		if err != nil {
			return 0, err
		}
		if _, dup := skelBones[uint32(off)+so]; dup {
			return 0, bad(off+int(w[5])+4*i, "skeleton %d listed twice", i)
		}
		skelBones[uint32(off)+so] = n
		b.skels = append(b.skels, uint32(off)+so)
	}
	seen := map[uint32]bool{}
	for i, co := range clips {
		if co%4 != 0 || co < format.BlobHeaderSize || int(co) > size-format.ClipHeaderSize {
			return 0, bad(off+int(w[7])+4*i, "clip %d at %d outside the blob", i, co)
		}
		if seen[co] {
			return 0, bad(off+int(w[7])+4*i, "clip %d listed twice", i)
		}
		seen[co] = true
		if err := b.validateClip(off+int(co), off+size, skelBones); err != nil {
			return 0, err
		}
		b.clips = append(b.clips, uint32(off)+co)
	}
	return size, nil
}

// table checks that count elements of elemWords words at record-relative
// offset rel lie inside a record [rec, rec+size).
func table(rec, size int, rel uint32, count, elemWords int) (int, bool) {
	if rel%4 != 0 || int(rel) > size || count < 0 || elemWords < 0 {
		return 0, false
	}
	if elemWords > 0 && count > (size-int(rel))/(4*elemWords) {
		return 0, false
	}
	return rec + int(rel), true
}

func (b *Blob) finiteRange(at, n int) bool {
	for i := range n {
		if v := float64(math.Float32frombits(b.words[at/4+i])); !format.Finite(v) {
			return false
		}
	}
	return true
}

// validateString checks a string table of n strings at byte at, inside a
// record ending at end.
func (b *Blob) validateString(at, end, n int) bool {
	if at < 0 || at%4 != 0 || n+1 > (end-at)/4 {
		return false
	}
	chars := at + 4*(n+1)
	prev := uint32(0)
	for i := 0; i <= n; i++ {
		o := b.words[at/4+i]
		if o < prev || int(o) > end-chars {
			return false
		}
		prev = o
	}
	return true
}

func (b *Blob) validateSkeleton(rec, blobEnd int) (int, error) {
	bad := func(at int, format string, args ...any) error {
		return &BlobError{at, "skeleton: " + fmt.Sprintf(format, args...)}
	}
	w := b.words[rec/4:]
	if w[0] != format.SkelTag {
		return 0, bad(rec, "bad tag %#x", w[0])
	}
	size := int(w[1])
	if size < format.SkelHeaderSize || size > blobEnd-rec || size%4 != 0 {
		return 0, bad(rec+4, "record size %d", size)
	}
	n := int(w[2])
	if n < 1 || n > MaxBones {
		return 0, bad(rec+8, "%d bones (1..%d)", n, MaxBones)
	}
	par, ok := table(rec, size, w[3], n, 1)
	if !ok {
		return 0, bad(rec+12, "parents table outside the record")
	}
	for i := range n {
		p := int32(b.words[par/4+i])
		if p < -1 || int(p) >= i {
			return 0, bad(par+4*i, "bone %d has parent %d; parents must come first", i, p)
		}
	}
	rest, ok := table(rec, size, w[4], n, 12)
	if !ok {
		return 0, bad(rec+16, "rest pose outside the record")
	}
	if !b.finiteRange(rest, 12*n) {
		return 0, bad(rest, "rest pose is not finite")
	}
	if _, ok := table(rec, size, w[5], 0, 0); !ok || !b.validateString(rec+int(w[5]), rec+size, n+1) {
		return 0, bad(rec+20, "bad name table")
	}
	if w[6] != 0 {
		ib, ok := table(rec, size, w[6], n, 16)
		if !ok {
			return 0, bad(rec+24, "inverse bind matrices outside the record")
		}
		if !b.finiteRange(ib, 16*n) {
			return 0, bad(ib, "inverse bind matrices not finite")
		}
	}
	if w[7] != 0 {
		sj, ok := table(rec, size, w[7], n, 1)
		if !ok {
			return 0, bad(rec+28, "skin joints outside the record")
		}
		for i := range n {
			if j := b.words[sj/4+i]; j >= uint32(n) {
				return 0, bad(sj+4*i, "skin joint %d of %d", j, n)
			}
		}
	}
	return n, nil
}

func (b *Blob) validateClip(rec, blobEnd int, skelBones map[uint32]int) error {
	bad := func(at int, format string, args ...any) error {
		return &BlobError{at, "clip: " + fmt.Sprintf(format, args...)}
	}
	w := b.words[rec/4:]
	if w[format.ChTag] != format.ClipTag {
		return bad(rec, "bad tag %#x", w[format.ChTag])
	}
	size := int(w[format.ChSize])
	if size < format.ClipHeaderSize || size > blobEnd-rec || size%4 != 0 {
		return bad(rec+4*format.ChSize, "record size %d", size)
	}
	flags := w[format.ChFlags]
	if flags > format.ClipUniform {
		return bad(rec+4*format.ChFlags, "flags %#x (0 curve, 1 uniform)", flags)
	}
	for i := format.ChRanges; i < format.ClipHeaderSize/4; i++ {
		if w[i] != 0 && !(i == format.ChRanges && flags == format.ClipUniform) && i != format.ChIdentity {
			return bad(rec+4*i, "reserved word %d is %d", i, w[i])
		}
	}
	skel := uint32(int64(rec) + int64(int32(w[format.ChSkeleton])))
	nb, ok := skelBones[skel]
	if !ok {
		return bad(rec+4*format.ChSkeleton, "skeleton offset %d names no skeleton of this blob", int32(w[format.ChSkeleton]))
	}
	if int(w[format.ChBones]) != nb {
		return bad(rec+4*format.ChBones, "%d bones, skeleton has %d", w[format.ChBones], nb)
	}
	rate := float64(math.Float32frombits(w[format.ChRate]))
	if !(rate > 0) || rate > 1e4 {
		return bad(rec+4*format.ChRate, "rate %v", rate)
	}
	frames := int(w[format.ChFrames])
	if frames < 1 || frames > MaxFrames {
		return bad(rec+4*format.ChFrames, "%d frames", frames)
	}
	if flags == format.ClipUniform {
		if err := b.validateUniformClip(rec, size, nb, frames, rate); err != nil {
			return err
		}
		if w[format.ChIdentity] != 0 { // uniform clips keep no cursor state
			return bad(rec+4*format.ChIdentity, "reserved word %d is %d", format.ChIdentity, w[format.ChIdentity])
		}
		b.loops.add(clipLoops{off: uint32(rec), uniform: true, slots: w[format.ChSlots]})
		return nil
	}
	L := int(w[format.ChSegFrames])
	if L < 1 || L > 1<<16-1 {
		return bad(rec+4*format.ChSegFrames, "segment frames %d", L)
	}
	nseg := int(w[format.ChSegments])
	if want := max(1, (frames-1+L-1)/L); nseg != want {
		return bad(rec+4*format.ChSegments, "%d segments, %d frames of %d need %d", nseg, frames, L, want)
	}
	if frames > 1 && L > frames-1 {
		return bad(rec+4*format.ChSegFrames, "segment frames %d exceed the clip", L)
	}
	nslot := int(w[format.ChSlots])
	if nslot > 3*nb {
		return bad(rec+4*format.ChSlots, "%d animated tracks for %d bones", nslot, nb)
	}
	if nslot > 0 && frames < 2 {
		return bad(rec+4*format.ChSlots, "animated tracks in a one-frame clip")
	}
	if int(w[format.ChCursorWords]) != CursorHeaderWords+CursorSlotWords*nslot {
		return bad(rec+4*format.ChCursorWords, "cursor words %d", w[format.ChCursorWords])
	}
	def, ok := table(rec, size, w[format.ChDefault], nb, 12)
	if !ok {
		return bad(rec+4*format.ChDefault, "default pose outside the record")
	}
	if !b.finiteRange(def, 12*nb) {
		return bad(def, "default pose not finite")
	}
	tracks, ok := table(rec, size, w[format.ChTracks], nslot, format.TrackDescWords)
	if !ok {
		return bad(rec+4*format.ChTracks, "track table outside the record")
	}
	used := map[uint32]bool{}
	for s := range nslot {
		at := tracks + 4*format.TrackDescWords*s
		d := b.words[at/4:]
		bone, kind := d[0]&0xffff, d[0]>>16
		if int(bone) >= nb || kind > 2 {
			return bad(at, "track %d: bone %d kind %d", s, bone, kind)
		}
		if used[d[0]] {
			return bad(at, "track %d: bone %d kind %d twice", s, bone, kind)
		}
		used[d[0]] = true
		if d[1] < 2 || d[1] > format.MaxIndexBits+2 {
			return bad(at+4, "track %d: first-point width %d bits", s, d[1])
		}
		// The step bounds the decoded values as the uniform codec's ranges
		// do: |index| < 2^MaxIndexBits, so with step <= maxCurveStep every
		// value, cubic coefficient and a rotation's squared length stays
		// finite in float32 (a finite but huge step decodes to Inf and NaN
		// poses). No compressor writes a step anywhere near it.
		if st := float64(format.F32(d[2])); !(st > 0) || !format.Finite(st) || st > maxCurveStep {
			return bad(at+8, "track %d: step %v (want > 0 and <= %v)", s, st, float64(maxCurveStep))
		}
		if d[3] != 0 {
			return bad(at+12, "track %d: reserved word %d", s, d[3])
		}
	}
	segt, ok := table(rec, size, w[format.ChSegTable], nseg+1, 1)
	if !ok {
		return bad(rec+4*format.ChSegTable, "segment table outside the record")
	}
	nw := int(w[format.ChStreamWords])
	stream, ok := table(rec, size, w[format.ChStream], nw, 1)
	if !ok || nw < 1 {
		return bad(rec+4*format.ChStream, "stream of %d words outside the record", nw)
	}
	prev := uint32(0)
	for s := 0; s <= nseg; s++ {
		v := b.words[segt/4+s]
		if (s == 0 && v != 0) || v < prev || nw < format.StreamPadWords || uint64(v) > uint64(nw-format.StreamPadWords)*32 {
			return bad(segt+4*s, "segment %d starts at bit %d (stream has %d words)", s, v, nw)
		}
		prev = v
	}
	if err := b.validateEventsName(rec, size, nb, frames, rate); err != nil {
		return err
	}
	cl := clipLoops{off: uint32(rec), slots: uint32(nslot)}
	if err := b.validateStream(rec, stream, nw, segt, tracks, nslot, nseg, frames, L, &cl); err != nil {
		return err
	}
	// Last, so that a record edited by hand (its blob checksum redone)
	// is refused for what is wrong in it rather than for its identity.
	if id := w[format.ChIdentity]; id != 0 {
		if want := format.ClipIdentity(b.data[rec : rec+size]); id != want {
			return bad(rec+4*format.ChIdentity, "identity %#x, record has %#x", id, want)
		}
	}
	b.loops.add(cl)
	return nil
}

// validateEventsName checks a clip record's event table and name.
func (b *Blob) validateEventsName(rec, size, nb, frames int, rate float64) error {
	bad := func(at int, format string, args ...any) error {
		return &BlobError{at, "clip: " + fmt.Sprintf(format, args...)}
	}
	w := b.words[rec/4:]
	nev := int(w[format.ChEvents])
	evt, ok := table(rec, size, w[format.ChEventTable], nev, 2)
	if !ok {
		return bad(rec+4*format.ChEventTable, "event table outside the record")
	}
	dur := float32(0)
	if frames > 1 {
		dur = float32(float64(frames-1) / rate)
	}
	last := float32(0)
	for i := range nev {
		t := math.Float32frombits(b.words[evt/4+2*i])
		tb := b.words[evt/4+2*i+1]
		if !(t >= last) || t > dur*(1+1e-6) || int(tb>>16) >= nb {
			return bad(evt+8*i, "event %d: time %v (after %v, clip %v s), bone %d", i, t, last, dur, tb>>16)
		}
		last = t
	}
	if _, ok := table(rec, size, w[format.ChName], int(w[format.ChNameLen]), 0); !ok || int(w[format.ChName])+int(w[format.ChNameLen]) > size {
		return bad(rec+4*format.ChName, "name outside the record")
	}
	return nil
}

// validateUniformClip checks the rest of a uniform clip record (flags 1;
// the common header fields are checked): segment length and count, track
// and range tables, the segment table and every segment's header, so that
// sampling any frame reads only inside the record's stream and padding.
func (b *Blob) validateUniformClip(rec, size, nb, frames int, rate float64) error {
	bad := func(at int, format string, args ...any) error {
		return &BlobError{at, "uniform clip: " + fmt.Sprintf(format, args...)}
	}
	w := b.words[rec/4:]
	L := int(w[format.ChSegFrames])
	if L < 2 || L > 256 || L&(L-1) != 0 {
		return bad(rec+4*format.ChSegFrames, "segment frames %d (a power of two in 2..256)", L)
	}
	nseg := int(w[format.ChSegments])
	if want := (frames + L - 1) / L; nseg != want {
		return bad(rec+4*format.ChSegments, "%d segments, %d frames of %d need %d", nseg, frames, L, want)
	}
	nt := int(w[format.ChSlots])
	if nt > 3*nb {
		return bad(rec+4*format.ChSlots, "%d animated tracks for %d bones", nt, nb)
	}
	if int(w[format.ChCursorWords]) != CursorHeaderWords {
		return bad(rec+4*format.ChCursorWords, "cursor words %d, want %d", w[format.ChCursorWords], CursorHeaderWords)
	}
	def, ok := table(rec, size, w[format.ChDefault], nb, 12)
	if !ok {
		return bad(rec+4*format.ChDefault, "default pose outside the record")
	}
	if !b.finiteRange(def, 12*nb) {
		return bad(def, "default pose not finite")
	}
	tracks, ok := table(rec, size, w[format.ChTracks], nt, format.TrackDescWords)
	if !ok {
		return bad(rec+4*format.ChTracks, "track table outside the record")
	}
	used := map[uint32]bool{}
	for i := range nt {
		at := tracks + 4*format.TrackDescWords*i
		d := b.words[at/4 : at/4+format.TrackDescWords]
		bone, kind := d[0]&0xffff, d[0]>>16
		if int(bone) >= nb || kind > 2 {
			return bad(at, "track %d: bone %d kind %d", i, bone, kind)
		}
		if used[d[0]] {
			return bad(at, "track %d: bone %d kind %d twice", i, bone, kind)
		}
		used[d[0]] = true
		for k := 1; k < format.TrackDescWords; k++ {
			if d[k] != 0 {
				return bad(at+4*k, "track %d: reserved word %d is %d", i, k, d[k])
			}
		}
	}
	ranges, ok := table(rec, size, w[format.ChRanges], nt, 8)
	if !ok || (nt > 0 && w[format.ChRanges] < format.ClipHeaderSize) {
		return bad(rec+4*format.ChRanges, "range table outside the record")
	}
	for i := range nt {
		at := ranges + 32*i
		kind := b.words[tracks/4+format.TrackDescWords*i] >> 16
		r := b.words[at/4 : at/4+8]
		for k := range 4 {
			lo, ext := float64(format.F32(r[k])), float64(format.F32(r[4+k]))
			// Bounded so that decoding stays finite: a rotation's
			// components lie in [-1, 1] (with room for rounding), and
			// translations and scales far beyond any world stay far below
			// float32 overflow.
			ok := format.Finite(lo) && format.Finite(ext) && ext >= 0 && math.Abs(lo) <= 1e18 && ext <= 1e18
			if kind == uint32(format.TrackRotation) {
				ok = ok && lo >= -1.001 && lo+ext <= 1.001
			}
			if !ok {
				return bad(at+4*k, "track %d: range component %d: min %v extent %v", i, k, lo, ext)
			}
			if k == 3 && kind != uint32(format.TrackRotation) && (r[3] != 0 || r[7] != 0) {
				return bad(at+12, "track %d: range component 3 of a %v track is not zero", i, format.TrackKind(kind))
			}
		}
	}
	segt, ok := table(rec, size, w[format.ChSegTable], nseg+1, 1)
	if !ok {
		return bad(rec+4*format.ChSegTable, "segment table outside the record")
	}
	nw := int(w[format.ChStreamWords])
	stream, ok := table(rec, size, w[format.ChStream], nw, 1)
	if !ok || nw < format.StreamPadWords {
		return bad(rec+4*format.ChStream, "stream of %d words outside the record (or shorter than its padding)", nw)
	}
	dataBits := uint64(nw-format.StreamPadWords) * 32
	prev := uint32(0)
	for s := 0; s <= nseg; s++ {
		v := b.words[segt/4+s]
		if (s == 0 && v != 0) || v%32 != 0 || v < prev || uint64(v) > dataBits || (s == nseg && uint64(v) != dataBits) {
			return bad(segt+4*s, "segment table entry %d is bit %d (stream data has %d bits)", s, v, dataBits)
		}
		prev = v
	}
	if err := b.validateEventsName(rec, size, nb, frames, rate); err != nil {
		return err
	}
	// Every segment: FB, rate bytes, size.
	words := b.words[stream/4 : stream/4+nw]
	D := uint64(format.UniformHeaderBytes(nt))
	for s := range nseg {
		start, end := b.words[segt/4+s], b.words[segt/4+s+1]
		sbad := func(at uint32, format string, args ...any) error {
			return &BlobError{stream + int(at/8), fmt.Sprintf("uniform clip at %d: segment %d: ", rec, s) + fmt.Sprintf(format, args...)}
		}
		if uint64(end-start) < 8*D {
			return sbad(start, "%d bits, the header of %d tracks needs %d", end-start, nt, 8*D)
		}
		sw := words[start/32:]
		fb := uint64(0)
		for i := range nt {
			byteAt := 4 + i
			rb := sw[byteAt/4] >> (8 * (byteAt % 4)) & 0xff
			drop := rb >> 4 & 3
			kind := b.words[tracks/4+format.TrackDescWords*i] >> 16
			if rb>>6 != 0 {
				return sbad(start+uint32(8*byteAt), "track %d: rate byte %#x has reserved bits set", i, rb)
			}
			if kind != uint32(format.TrackRotation) && drop != 3 {
				return sbad(start+uint32(8*byteAt), "track %d: rate byte %#x drops component %d of a %v track", i, rb, drop, format.TrackKind(kind))
			}
			fb += 3 * uint64(format.UniformLadder[rb&15])
		}
		if uint64(sw[0]) != fb {
			return sbad(start, "frame bits FB %d, the rate codes sum to %d", sw[0], fb)
		}
		sf := uint64(min(L, frames-s*L))
		if need := 8*D + sf*fb; uint64(end-start) < need {
			return sbad(start, "%d bits, %d frames of %d bits need %d", end-start, sf, fb, need)
		}
	}
	return nil
}

// validateStream decodes every segment exactly as the sampler does,
// checking coding parameters, times, index ranges, playback order and that
// every segment ends where the table says, so that sampling a valid blob
// never reads outside it and always terminates. It also records in cl
// what the GPU sampler's loop passes depend on: the most need frames
// (record rounds) of a segment and the most records of one need frame.
// maxCurveStep is the largest quantisation step the loader accepts for a
// curve track: indices stay below 2^MaxIndexBits, so values stay below
// 2^56 and their squares far below float32's 2^128.
const maxCurveStep = 1 << 32

func (b *Blob) validateStream(rec, stream, nw, segt, tracks, nslot, nseg, frames, L int, cl *clipLoops) error {
	words := b.words[stream/4 : stream/4+nw]
	type st struct {
		t2, t3, params, kind uint32
		i2, i3               [4]int32
	}
	state := make([]st, nslot)
	const lim = int32(1)<<format.MaxIndexBits - 1
	inRange := func(idx *[4]int32) bool {
		for _, v := range idx {
			if v > lim || v < -lim {
				return false
			}
		}
		return true
	}
	for s := range nseg {
		pos := b.words[segt/4+s]
		end := b.words[segt/4+s+1]
		segEnd := uint32(format.SegLenOf(frames, L, s))
		bad := func(format string, args ...any) error {
			return &BlobError{stream + int(pos/8), fmt.Sprintf("clip at %d: segment %d: ", rec, s) + fmt.Sprintf(format, args...)}
		}
		var br format.BitBuf
		for k := range nslot {
			d := b.words[tracks/4+format.TrackDescWords*k:]
			kind := d[0] >> 16
			if pos >= end {
				return bad("header truncated at track %d", k)
			}
			br.Seek(words, pos)
			params := readParams(&br, kind)
			mode := params & 7
			if mode > format.ModeAll || (kind != uint32(format.TrackRotation) && mode != 0) || params>>28&3 >= format.NumPreds {
				return bad("track %d: mode %d predictor %d", k, mode, params>>28&3)
			}
			for c := range format.NcompOf(kind, mode) {
				if kc := params >> (8 + 5*c) & 31; kc > format.MaxRiceK {
					return bad("track %d: Rice parameter %d", k, kc)
				}
			}
			endPair := params&format.ParamEndPair != 0
			if endPair && s != nseg-1 {
				return bad("track %d: an end pair (a discontinuity at the segment end) outside the clip's last segment", k)
			}
			var i1 [4]int32
			for c := range format.NcompOf(kind, mode) {
				v := br.Bits(d[1])
				i1[c] = int32(v<<(32-d[1])) >> (32 - d[1])
			}
			if pos = br.Pos(); pos > end {
				return bad("header truncated at track %d", k)
			}
			t2, i2 := readPoint(&br, params, kind, 0, 0, &i1, &i1)
			t3, i3 := t2, i2
			if pos = br.Pos(); pos > end || t2 > segEnd || !inRange(&i1) || !inRange(&i2) {
				return bad("track %d: bad second point (frame %d of %d)", k, t2, segEnd)
			}
			if t2 != segEnd || endPair {
				t3, i3 = readPoint(&br, params, kind, 0, t2, &i1, &i2)
				if pos = br.Pos(); pos > end || t3 > segEnd || t3 < t2 || (t3 == 0) || !inRange(&i3) {
					return bad("track %d: bad third point (frames 0, %d, %d of %d)", k, t2, t3, segEnd)
				}
			}
			state[k] = st{t2: t2, t3: t3, params: params, kind: kind, i2: i2, i3: i3}
		}
		next := uint32(format.NoNeed)
		for k := range state {
			if format.MorePoints(state[k].params, state[k].t2, state[k].t3, segEnd) && state[k].t2 < next {
				next = state[k].t2
			}
		}
		rounds := uint32(0)
		for pos < end {
			if next == format.NoNeed {
				return bad("data after every track's last point")
			}
			F := next
			next = format.NoNeed
			rounds++
			records := uint32(0)
			for k := range state {
				sp := &state[k]
				for sp.t2 == F && format.MorePoints(sp.params, sp.t2, sp.t3, segEnd) {
					records++
					if pos >= end {
						return bad("track %d: missing record (needed at frame %d)", k, F)
					}
					br.Seek(words, pos)
					t, idx := readPoint(&br, sp.params, sp.kind, sp.t2, sp.t3, &sp.i2, &sp.i3)
					pos = br.Pos()
					if pos > end || t > segEnd || t < sp.t3 || (t == sp.t3 && sp.t3 == sp.t2) || !inRange(&idx) {
						return bad("track %d: bad record (frame %d after %d, %d; segment end %d)", k, t, sp.t2, sp.t3, segEnd)
					}
					sp.t2, sp.t3, sp.i2, sp.i3 = sp.t3, t, sp.i3, idx
				}
				if format.MorePoints(sp.params, sp.t2, sp.t3, segEnd) && sp.t2 < next {
					next = sp.t2
				}
			}
			if next <= F {
				return bad("records out of playback order at frame %d", F)
			}
			cl.perRound = max(cl.perRound, records)
			if rounds > cl.rounds {
				cl.rounds, cl.seg, cl.last = rounds, uint32(s), F
			}
		}
		if pos != end {
			return bad("ends at bit %d, table says %d", pos, end)
		}
		for k := range state {
			if sp := &state[k]; format.MorePoints(sp.params, sp.t2, sp.t3, segEnd) {
				if sp.t3 == segEnd {
					return bad("track %d: its end pair has one point at the segment end %d", k, segEnd)
				}
				return bad("track %d ends at frame %d, before the segment end %d", k, sp.t3, segEnd)
			}
		}
	}
	return nil
}

// ClipView reads a clip record of a loaded Blob. Its methods do not
// allocate unless they say so.
type ClipView struct {
	b   *Blob
	off uint32
}

func (c ClipView) w(i int) uint32 { return c.b.words[c.off/4+uint32(i)] }

// Offset is the clip's byte offset in the blob: the value SampleInput.Clip takes.
func (c ClipView) Offset() uint32 { return c.off }

// Blob is the blob the clip is in.
func (c ClipView) Blob() *Blob { return c.b }

// Name returns the clip name (allocates).
func (c ClipView) Name() string {
	at := c.off + c.w(format.ChName)
	return string(c.b.data[at : at+c.w(format.ChNameLen)])
}

// Bones returns the number of bones.
func (c ClipView) Bones() int { return int(c.w(format.ChBones)) }

// Rate returns the sample rate in Hz.
func (c ClipView) Rate() float32 { return math.Float32frombits(c.w(format.ChRate)) }

// Frames returns the number of samples.
func (c ClipView) Frames() int { return int(c.w(format.ChFrames)) }

// Duration returns the clip length in seconds.
func (c ClipView) Duration() float32 {
	if c.Frames() <= 1 {
		return 0
	}
	return float32(c.Frames()-1) / c.Rate()
}

// Codec returns the codec the clip was compressed with (its record's flags).
func (c ClipView) Codec() Codec {
	if c.w(format.ChFlags) == format.ClipUniform {
		return CodecUniform
	}
	return CodecCurve
}

// CursorWords is the cursor size (uint32 words) this clip needs per character.
func (c ClipView) CursorWords() int { return int(c.w(format.ChCursorWords)) }

// AnimatedTracks returns the number of tracks stored in the stream (the
// others are constant, in the default pose).
func (c ClipView) AnimatedTracks() int { return int(c.w(format.ChSlots)) }

// Bytes returns the size of the clip record.
func (c ClipView) Bytes() int { return int(c.w(format.ChSize)) }

// Skeleton returns the clip's skeleton.
func (c ClipView) Skeleton() SkeletonView {
	return SkeletonView{c.b, uint32(int64(c.off) + int64(int32(c.w(format.ChSkeleton))))}
}

// NumEvents returns the number of events.
func (c ClipView) NumEvents() int { return int(c.w(format.ChEvents)) }

// Event returns event i (0 <= i < NumEvents), events sorted by time.
func (c ClipView) Event(i int) Event {
	at := c.off/4 + c.w(format.ChEventTable)/4 + uint32(2*i)
	tb := c.b.words[at+1]
	return Event{Time: math.Float32frombits(c.b.words[at]), Type: uint16(tb), Bone: uint16(tb >> 16)}
}

// EventRange returns the indices [first, end) of the events with
// t0 <= time < t1. For a looping window that wraps past the clip end, call
// it twice ([t0, Duration] then [0, t1)); to include an event at exactly
// Duration use a t1 above it.
func (c ClipView) EventRange(t0, t1 float32) (first, end int) {
	n := c.NumEvents()
	base := c.off/4 + c.w(format.ChEventTable)/4
	lower := func(t float32) int {
		lo, hi := 0, n
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if math.Float32frombits(c.b.words[base+uint32(2*m)]) < t {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo
	}
	first = lower(t0)
	end = lower(t1)
	if end < first {
		end = first
	}
	return first, end
}

// AppendEvents appends the events with t0 <= time < t1 to dst and returns
// it; it allocates only when dst lacks capacity.
func (c ClipView) AppendEvents(dst []Event, t0, t1 float32) []Event {
	i, j := c.EventRange(t0, t1)
	for ; i < j; i++ {
		dst = append(dst, c.Event(i))
	}
	return dst
}

// SkeletonView reads a skeleton record of a loaded Blob.
type SkeletonView struct {
	b   *Blob
	off uint32
}

func (s SkeletonView) w(i int) uint32 { return s.b.words[s.off/4+uint32(i)] }

// Bones returns the number of bones.
func (s SkeletonView) Bones() int { return int(s.w(2)) }

// Parent returns bone i's parent, -1 for a root.
func (s SkeletonView) Parent(i int) int32 { return int32(s.b.words[s.off/4+s.w(3)/4+uint32(i)]) }

// Parents appends every bone's parent to dst (the form LocalToModel takes).
func (s SkeletonView) Parents(dst []int32) []int32 {
	for i := range s.Bones() {
		dst = append(dst, s.Parent(i))
	}
	return dst
}

// RestPose appends the rest pose in the local pose layout (PoseFloats per
// bone: rotation, translation, scale).
func (s SkeletonView) RestPose(dst []float32) []float32 {
	base := s.off/4 + s.w(4)/4
	for b := range uint32(s.Bones()) {
		w := s.b.words[base+12*b : base+12*b+12]
		for _, i := range [12]int{4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11} {
			dst = append(dst, math.Float32frombits(w[i]))
		}
	}
	return dst
}

// BoneName returns bone i's name (allocates).
func (s SkeletonView) BoneName(i int) string { return s.str(i) }

// Name returns the skeleton's name (allocates).
func (s SkeletonView) Name() string { return s.str(s.Bones()) }

func (s SkeletonView) str(i int) string {
	tab := s.off + s.w(5)
	n := s.Bones() + 1
	chars := tab + uint32(4*(n+1))
	a, e := s.b.words[tab/4+uint32(i)], s.b.words[tab/4+uint32(i)+1]
	return string(s.b.data[chars+a : chars+e])
}

// InverseBind appends the inverse bind matrices (16 floats per bone,
// column-major) to dst, or returns dst unchanged when there are none.
func (s SkeletonView) InverseBind(dst []float32) []float32 {
	if s.w(6) == 0 {
		return dst
	}
	base := s.off/4 + s.w(6)/4
	for i := range uint32(16 * s.Bones()) {
		dst = append(dst, math.Float32frombits(s.b.words[base+i]))
	}
	return dst
}
