package anim

import (
	"sort"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// A seek index holds, for each segment of a curve clip, snapshots of the
// cursor slots as the sampler leaves them at some of the segment's need
// frames. Blob.BuildSeekIndex builds it in memory from the blob's words,
// on request only (see its doc); it is not part of the blob: the format
// and the GLSL port are unchanged, and the GPU still seeks from the
// segment's start.
//
// Why a snapshot gives the reference's cursor: on a valid stream the
// record loop is a state machine whose state (every slot's ring frames
// and indices, head, parameters and t2, t3; the stream position; the
// next need frame) once every need frame up to F is read depends only on
// the segment and F, and a seek to any local frame at or after F goes on
// from that state exactly as the reference goes on from the segment's
// header. A seek leaves every slot with four fresh points (the count
// saturates), so the evaluation after it recomputes every value and
// coefficient word from the ring's integers: the words a snapshot does
// not hold (values, cubic, 1/length) are rewritten before they are read.
// Only seeks use it: a cursor that matches its clip and segment is read
// on from where it is, scribbled or not, as the reference does.
//
// A snapshot is taken after a need frame once the stream bits read since
// the previous one (or the segment's start) reach its own size divided
// by seekDensity, so a clip's index holds at most seekDensity times its
// stream's words (plus one word per track and segment, and three per
// segment), and a seek reads at most about that many bits past its
// snapshot; clips with few points per track get few snapshots. A
// snapshot holds what the state needs and no more: the heads two bits
// each, per slot the ring's four frames (16 bits each: a segment has at
// most 65535 frames) and its points' three or four indices (as many as
// the segment's mode stores; the fourth word of a three-component point
// is 0 in every ring the loop writes); a slot's parameters are the
// segment's, once per segment, and t2, t3 are the frames of the ring's
// last two points.
type seekIndex struct {
	nslot    int
	segFirst []uint32 // segment s's snapshots are [segFirst[s], segFirst[s+1])
	params   []uint32 // per segment, per slot: its coding parameters
	frame    []uint32 // per snapshot: the need frame it was taken after
	at       []uint32 // per snapshot: its first word in data
	data     []uint32 // per snapshot: pos, next, heads, then per slot the ring
}

// seekDensity is how many times its stream's size a clip's seek index may
// take (see seekIndex): more snapshots make seeks read fewer records.
const seekDensity = 4

// seekTable is a blob's seek indexes, one per clip (nil for uniform clips
// and clips without animated tracks), in the blob's clip order.
type seekTable struct {
	clips []uint32
	idx   []*seekIndex
}

// buildSeekTable builds the seek index of every curve clip of a
// validated blob (clips: its clip offsets, sorted).
func buildSeekTable(words []uint32, clips []uint32) seekTable {
	t := seekTable{clips: clips, idx: make([]*seekIndex, len(clips))}
	for i, off := range clips {
		t.idx[i] = buildSeekIndex(words, off)
	}
	return t
}

// of returns clip's seek index, or nil (also for a nil table: no index
// built).
func (t *seekTable) of(clip uint32) *seekIndex {
	if t == nil {
		return nil
	}
	i := sort.Search(len(t.clips), func(i int) bool { return t.clips[i] >= clip })
	if i < len(t.clips) && t.clips[i] == clip {
		return t.idx[i]
	}
	return nil
}

// buildSeekIndex runs the fast path's record loop (needPass, bit for bit
// the reference's) over every segment of a validated curve clip and
// snapshots the slots along the way. It returns nil for a uniform clip, a
// clip without animated tracks, or a stream the loop does not walk as
// valid data does (the next need frame always later).
func buildSeekIndex(words []uint32, clip uint32) *seekIndex {
	h := words[clip/4 : clip/4+format.ClipHeaderSize/4]
	nslot := int(h[format.ChSlots])
	if h[format.ChFlags] != 0 || nslot == 0 {
		return nil
	}
	frames := h[format.ChFrames]
	L := h[format.ChSegFrames]
	nseg := h[format.ChSegments]
	tracks := words[clip/4+h[format.ChTracks]/4:]
	tracks = tracks[:nslot*format.TrackDescWords]
	segt := words[clip/4+h[format.ChSegTable]/4:]
	stream := words[clip/4+h[format.ChStream]/4:]
	stream = stream[:h[format.ChStreamWords]]
	slots := make([]uint32, nslot*CursorSlotWords)
	ix := &seekIndex{nslot: nslot, segFirst: make([]uint32, 0, nseg+1), params: make([]uint32, 0, int(nseg)*nslot)}
	for seg := range nseg {
		ix.segFirst = append(ix.segFirst, uint32(len(ix.frame)))
		segStart, segStop := segt[seg], segt[seg+1]
		segEnd := min(L, frames-1-seg*L)
		pos, next := seekSegment(stream, tracks, slots, segStart, segEnd)
		size := 2 + (nslot+15)/16
		for s := range nslot {
			params := slots[s*CursorSlotWords+format.SlParams]
			ix.params = append(ix.params, params)
			size += 2 + 4*format.NcompOf(tracks[s*format.TrackDescWords]>>16, params&7)
		}
		gap := uint32(32*size) / seekDensity
		last := segStart
		for next != format.NoNeed && pos < segStop {
			F := next
			pos, next = needPass(stream, tracks, slots, F, segEnd, segStop, pos)
			if next <= F {
				return nil
			}
			if pos-last < gap || next == format.NoNeed || pos >= segStop {
				continue
			}
			last = pos
			ix.frame = append(ix.frame, F)
			ix.at = append(ix.at, uint32(len(ix.data)))
			ix.data = append(ix.data, pos, next)
			heads := len(ix.data)
			ix.data = append(ix.data, make([]uint32, (nslot+15)/16)...)
			for s := range nslot {
				cs := (*slotWords)(slots[s*CursorSlotWords:])
				ix.data[heads+s/16] |= (cs[format.SlHead] & 3) << (2 * (s % 16))
				r := ringOf(cs)
				ix.data = append(ix.data, r[0][0]|r[1][0]<<16, r[2][0]|r[3][0]<<16)
				nc := format.NcompOf(tracks[s*format.TrackDescWords]>>16, cs[format.SlParams]&7)
				for e := range r {
					ix.data = append(ix.data, r[e][1:1+nc]...)
				}
			}
		}
	}
	ix.segFirst = append(ix.segFirst, uint32(len(ix.frame)))
	return ix
}

// seek puts the slots where the reference's seek to local frame local of
// segment seg leaves them once it has read every need frame up to the
// latest snapshot at or before local, and returns that position and next
// need frame; without a snapshot there (or without an index) it is
// seekSegment, which reads the segment's header.
func (ix *seekIndex) seek(stream, tracks, slots []uint32, seg, segStart, segEnd uint32, local float32) (uint32, uint32) {
	if ix == nil || int(seg)+1 >= len(ix.segFirst) || len(slots) != ix.nslot*CursorSlotWords {
		return seekSegment(stream, tracks, slots, segStart, segEnd)
	}
	k := -1
	for j := ix.segFirst[seg]; j < ix.segFirst[seg+1] && float32(ix.frame[j]) <= local; j++ {
		k = int(j)
	}
	if k < 0 {
		return seekSegment(stream, tracks, slots, segStart, segEnd)
	}
	d := ix.data[ix.at[k]:]
	pos, next := d[0], d[1]
	heads := d[2:]
	d = d[2+(ix.nslot+15)/16:]
	params := ix.params[int(seg)*ix.nslot : int(seg+1)*ix.nslot]
	for s := range ix.nslot {
		cs := (*slotWords)(slots[s*CursorSlotWords:])
		p := params[s]
		nc := format.NcompOf(tracks[s*format.TrackDescWords]>>16, p&7)
		head := heads[s/16] >> (2 * (s % 16)) & 3
		r := ringOf(cs)
		r[0][0], r[1][0], r[2][0], r[3][0] = d[0]&0xffff, d[0]>>16, d[1]&0xffff, d[1]>>16
		d = d[2:]
		for e := range r {
			r[e][4] = 0
			copy(r[e][1:1+nc], d[:nc])
			d = d[nc:]
		}
		cs[format.SlHead], cs[format.SlFresh], cs[format.SlParams] = head, 4, p
		cs[format.SlT2], cs[format.SlT3] = r[(head+2)&3][0], r[(head+3)&3][0]
	}
	return pos, next
}

// words returns the index's size in 32-bit words.
func (ix *seekIndex) words() int {
	if ix == nil {
		return 0
	}
	return len(ix.segFirst) + len(ix.params) + len(ix.frame) + len(ix.at) + len(ix.data)
}
