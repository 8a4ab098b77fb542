package render

import "github.com/vkjobs/vkjobs/sched"

// The sort of merge-n-sort: a parallel, stable LSD radix sort of the
// (key, location) items of all contexts, one byte of the key per pass.
//
// The parse tasks leave each context's items in context order with the
// byte histograms of its keys and the mask of key bits that vary. A pass
// runs only for the bytes in which some keys differ (keys use few layers,
// sequences and pipelines, so usually 3 to 6 of the 8). Every pass is one
// fork of scatter tasks over contiguous blocks of its input, each writing
// its items, in order, at offsets computed from the blocks' histograms:
// digit-major then block order, which keeps the sort stable. The first pass
// reads the contexts themselves as its blocks, so the concatenation costs
// nothing; each scatter also counts the next pass's digits per destination
// block, so no pass needs a separate histogram sweep.
//
// Rejected: per-context sorts followed by a k-way merge of the N runs
// (the literal "merge" of "Parallel rendering"): the merge is
// branch-mispredict bound on interleaved keys and costs as much as all the
// radix passes.

// item is one packet of the sorted stream: its key and where its payload
// lies. 16 bytes, moved by value while sorting.
type item struct {
	key  SortKey
	off  uint32 // payload offset in the context's stream
	ctx  uint16 // context index
	kind uint8  // kindDraw, kindState or kindJob
	_    uint8
}

const (
	kindDraw uint8 = iota + 1
	kindState
	kindJob
)

// MaxContexts is the most contexts one MergeSort accepts.
const MaxContexts = 1 << 16

// radixState is the reusable state of the sort of one frame.
type radixState struct {
	n      int
	shifts [8]uint // the bytes to sort by, least significant first, as shifts
	npass  int
	pass   int    // the pass being run
	src    []item // input of passes >= 1
	dst    []item
	blocks int              // blocks of passes >= 1
	bnd    []int            // their boundaries: blocks+1 entries, bnd[blocks] = n
	off    [][256]uint32    // per block of a pass >= 1: its next output index per digit
	nh     [2][][256]uint32 // fused histograms: [task*blocks+dest block][digit], by pass parity
}

// plan sets up the passes for n items whose keys differ in the bits of diff,
// with the given number of blocks for passes >= 1.
func (x *radixState) plan(n int, diff SortKey, blocks, firstTasks int) {
	x.n = n
	x.npass = 0
	for b := uint(0); b < 64; b += 8 {
		if byte(diff>>b) != 0 {
			x.shifts[x.npass] = b
			x.npass++
		}
	}
	x.blocks = blocks
	x.bnd = grow(x.bnd, blocks+1)
	for j := range x.bnd {
		x.bnd[j] = int(int64(n) * int64(j) / int64(blocks))
	}
	x.off = grow(x.off, blocks)
	m := max(firstTasks, blocks) * blocks
	x.nh[0] = grow(x.nh[0], m)
	x.nh[1] = grow(x.nh[1], m)
}

// offsets turns per-block digit counts into per-block output offsets:
// digit-major, then block order. count(j) returns block j's histogram,
// out(j) where its offsets go (they may be the same array).
func offsets(blocks int, count func(j int, d int) uint32, out func(j int) *[256]uint32) {
	base := uint32(0)
	for d := range 256 {
		for j := range blocks {
			c := count(j, d)
			out(j)[d] = base
			base += c
		}
	}
}

// sortPasses runs the radix passes with tasks on c. Items start in the
// contexts' scratch; the sorted items end in r.rx.src.
func (r *Renderer) sortPasses(c *sched.Ctx, n int, diff SortKey) error {
	x := &r.rx
	nctx := len(r.ctxs)
	blocks := max(1, min(r.cfg.MergeTasks, (n+r.cfg.MergeGrain-1)/r.cfg.MergeGrain))
	x.plan(n, diff, blocks, nctx)
	r.bufA = grow(r.bufA, n)
	r.bufB = grow(r.bufB, n)
	x.src, x.dst = r.bufB, r.bufA
	if x.npass == 0 {
		// All keys are equal: the sorted stream is the concatenation.
		o := 0
		for i := range nctx {
			o += copy(r.bufA[o:], r.per[i].a)
		}
		x.src = r.bufA
		return nil
	}
	for x.pass = 0; x.pass < x.npass; x.pass++ {
		p := x.pass
		shift := x.shifts[p]
		tasks := blocks
		if p == 0 {
			// The contexts are the first pass's blocks; their histograms
			// come from the parse.
			tasks = nctx
			offsets(nctx, func(j, d int) uint32 { return r.per[j].hist[shift/8][d] },
				func(j int) *[256]uint32 { return &r.per[j].hist[shift/8] })
		} else {
			prev := x.nh[(p-1)&1]
			ptasks := blocks
			if p == 1 {
				ptasks = nctx
			}
			offsets(blocks, func(j, d int) uint32 {
				s := uint32(0)
				for t := range ptasks {
					s += prev[t*blocks+j][d]
				}
				return s
			}, func(j int) *[256]uint32 { return &x.off[j] })
		}
		parallel := n >= r.cfg.MergeGrain
		if err := r.fork(c, r.k[1], tasks, parallel, r.scatter); err != nil {
			return err
		}
		x.src, x.dst = x.dst, x.src
	}
	return nil
}

func scatterKernel(c *sched.Ctx, d *sched.TaskData) error {
	d.Data.(*Renderer).scatter(c, int(d.Params[0]))
	return nil
}

// scatter runs task t of the current pass: it moves its block's items to
// their offsets by the pass's digit and, unless this is the last pass,
// counts the next digit per destination block.
func (r *Renderer) scatter(_ *sched.Ctx, t int) {
	x := &r.rx
	var src []item
	var off *[256]uint32
	shift := x.shifts[x.pass]
	if x.pass == 0 {
		src, off = r.per[t].a, &r.per[t].hist[shift/8]
	} else {
		src, off = x.src[x.bnd[t]:x.bnd[t+1]], &x.off[t]
	}
	dst := x.dst[:x.n]
	if x.pass+1 == x.npass {
		for i := range src {
			d := byte(src[i].key >> shift)
			dst[off[d]] = src[i]
			off[d]++
		}
		return
	}
	nshift := x.shifts[x.pass+1]
	nb := x.blocks
	nh := x.nh[x.pass&1][t*nb : (t+1)*nb]
	clear(nh)
	bnd := x.bnd
	// blk[d]: the destination block of digit d's next item. Offsets only
	// grow within a digit, so it only moves forward.
	var blk [256]int32
	for d := range blk {
		b := 0
		for b+1 < nb && int(off[d]) >= bnd[b+1] {
			b++
		}
		blk[d] = int32(b)
	}
	for i := range src {
		k := src[i].key
		d := byte(k >> shift)
		o := off[d]
		dst[o] = src[i]
		off[d] = o + 1
		b := blk[d]
		for int(o) >= bnd[b+1] {
			b++
		}
		blk[d] = b
		nh[b][byte(k>>nshift)]++
	}
}

// upperBound returns the number of items in a, sorted by key, with key <= k.
func upperBound(a []item, k SortKey) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m].key <= k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
