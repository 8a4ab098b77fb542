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
// reads the contexts themselves, in place, one task per context (or per
// run of whole contexts when they are many and small), so the
// concatenation costs nothing; each scatter also counts the next pass's
// digits per destination block, so no pass needs a separate histogram
// sweep.
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
//
// Its memory is linear in the items. The count matrices nh hold one row of
// blocks histograms (1 KiB each) per task: runs rows after pass 0, blocks
// rows after the others. taskCounts keeps blocks*blocks*64 <= n and
// runs*blocks*64 <= max(n, 64*blocks*blocks), so each matrix takes at most
// 16 bytes per item (or one histogram, for a frame of a single block):
// together less than the 48 bytes per item of the three item arrays (the
// contexts' scratch, bufA and bufB). Bounding MergeTasks alone would not
// do: matrices of tasks*blocks rows grow with its square whatever the
// frame's size, and with the contexts times the blocks if pass 0 always
// had one task per context; and a frame of few items split into many
// blocks spends more on counting than on moving.
type radixState struct {
	n      int
	shifts [8]uint // the bytes to sort by, least significant first, as shifts
	npass  int
	pass   int    // the pass being run
	src    []item // input of passes >= 1
	dst    []item
	blocks int              // tasks of passes >= 1, and the blocks the counts are kept per
	runs   int              // tasks of pass 0: runs of whole contexts
	bnd    []int            // blocks of passes >= 1: blocks+1 item boundaries, bnd[blocks] = n
	grp    []int            // runs of pass 0: runs+1 context boundaries, grp[runs] = contexts
	off    [][256]uint32    // per block of a pass >= 1: its next output index per digit
	nh     [2][][256]uint32 // fused histograms: [task*blocks+dest block][digit], by pass parity
}

// minItemsPerCount: a frame of n items is sorted by few enough tasks that
// each task's row of counts (one histogram per block) is matched by at
// least minItemsPerCount items per histogram: tasks*blocks*minItemsPerCount
// <= n, so the count matrices stay linear in n (see radixState).
const minItemsPerCount = 64

// taskCounts returns the tasks of a frame of n items in nctx contexts:
// blocks, the tasks of passes >= 1 (one per grain items, at most tasks, at
// most sqrt(n/minItemsPerCount)), and runs, those of pass 0 (one per
// context, at most max(blocks, n/(minItemsPerCount*blocks))). Pass 0 keeps
// one context per task when it can, as the contexts are its natural
// blocks; it groups them only when they are many and small.
func taskCounts(n, nctx, grain, tasks int) (blocks, runs int) {
	b := min(tasks, (n+grain-1)/grain)
	for b > 1 && b*b*minItemsPerCount > n {
		b--
	}
	b = max(1, b)
	return b, max(1, min(nctx, max(b, n/(minItemsPerCount*b))))
}

// plan sets up the passes for n items whose keys differ in the bits of diff,
// in the given numbers of blocks and runs.
func (x *radixState) plan(n int, diff SortKey, blocks, runs int) {
	x.n = n
	x.npass = 0
	for b := uint(0); b < 64; b += 8 {
		if byte(diff>>b) != 0 {
			x.shifts[x.npass] = b
			x.npass++
		}
	}
	x.blocks, x.runs = blocks, runs
	x.bnd = grow(x.bnd, blocks+1)
	for j := range x.bnd {
		x.bnd[j] = int(int64(n) * int64(j) / int64(blocks))
	}
	x.off = grow(x.off, blocks)
	x.nh[0] = grow(x.nh[0], max(runs, blocks)*blocks)
	x.nh[1] = grow(x.nh[1], blocks*blocks)
}

// group splits the contexts, in order, into x.runs runs of about
// x.n/x.runs items each: the tasks of pass 0. A context larger than that
// makes the runs after it shorter or empty; it is never split, since pass 0
// reads each context's items in place with its own offsets.
func (x *radixState) group(per []ctxScratch) {
	x.grp = grow(x.grp, x.runs+1)
	x.grp[0] = 0
	g, pre := 0, 0
	for i := range per {
		gi := min(x.runs-1, int(int64(pre)*int64(x.runs)/int64(max(x.n, 1))))
		for g < gi {
			g++
			x.grp[g] = i
		}
		pre += len(per[i].a)
	}
	for g < x.runs {
		g++
		x.grp[g] = len(per)
	}
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
	blocks, runs := taskCounts(n, nctx, r.cfg.MergeGrain, r.cfg.MergeTasks)
	x.plan(n, diff, blocks, runs)
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
	x.group(r.per[:nctx])
	for x.pass = 0; x.pass < x.npass; x.pass++ {
		p := x.pass
		shift := x.shifts[p]
		tasks := blocks
		if p == 0 {
			// The contexts are the first pass's input, each scattered with
			// its own offsets; their histograms come from the parse.
			tasks = runs
			offsets(nctx, func(j, d int) uint32 { return r.per[j].hist[shift/8][d] },
				func(j int) *[256]uint32 { return &r.per[j].hist[shift/8] })
		} else {
			prev := x.nh[(p-1)&1]
			ptasks := blocks
			if p == 1 {
				ptasks = runs
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

// scatter runs task t of the current pass: it moves its items (a block,
// or in pass 0 a run of contexts) to their offsets by the pass's digit
// and, unless this is the last pass, counts the next digit per destination
// block into its row of the count matrix.
func (r *Renderer) scatter(_ *sched.Ctx, t int) {
	x := &r.rx
	var nh [][256]uint32
	if x.pass+1 < x.npass {
		nh = x.nh[x.pass&1][t*x.blocks : (t+1)*x.blocks]
		clear(nh)
	}
	// blk[d]: the destination block of digit d's next item. Offsets only
	// grow within a digit, across the contexts of a run too (offsets are
	// digit-major, then context order), so it only moves forward.
	var blk [256]int32
	if x.pass > 0 {
		x.scatterPart(x.src[x.bnd[t]:x.bnd[t+1]], &x.off[t], nh, &blk)
		return
	}
	h := x.shifts[0] / 8
	for j := x.grp[t]; j < x.grp[t+1]; j++ {
		x.scatterPart(r.per[j].a, &r.per[j].hist[h], nh, &blk)
	}
}

// scatterPart moves src's items to their offsets off by the current pass's
// digit and, when nh is not nil, counts the next pass's digit into nh per
// destination block, which *pblk tracks per digit from part to part.
func (x *radixState) scatterPart(src []item, off *[256]uint32, nh [][256]uint32, pblk *[256]int32) {
	shift := x.shifts[x.pass]
	dst := x.dst[:x.n]
	if nh == nil {
		for i := range src {
			d := byte(src[i].key >> shift)
			dst[off[d]] = src[i]
			off[d]++
		}
		return
	}
	nshift := x.shifts[x.pass+1]
	bnd := x.bnd
	blk := *pblk // a local copy: through the pointer, every store would reload it
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
	*pblk = blk
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
