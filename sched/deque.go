package sched

import (
	"sync"
	"sync/atomic"
)

// cacheLine is the padding unit that keeps hot per-thread fields apart.
const cacheLine = 64

// maxDefaultDeque caps the default deque capacity (Config.DequeSize
// defaults to the pool size): 16384 entries of 4 bytes, 192 KiB per thread
// for the three priority levels.
const maxDefaultDeque = 16384

// noItem is returned by queue operations that found nothing.
const noItem = ^uint32(0)

// deque is a fixed-capacity Chase-Lev work-stealing deque of slot indices.
// The owner pushes and pops at the bottom (LIFO, cache warm); thieves steal
// from the top (FIFO, oldest and usually largest work). Capacity is a power
// of two; a full deque refuses the push and the caller uses the shared
// overflow queue instead of growing (enkiTS's rule: never allocate on the
// hot path).
type deque struct {
	top atomic.Int64
	// batching is set while a thief takes several items with one CAS of
	// top (stealBatch); it shares top's line, which pop reads anyway.
	batching atomic.Int32
	_        [cacheLine - 12]byte
	bottom   int64 // atomic: written by storeRelease64 or atomic.StoreInt64
	_        [cacheLine - 8]byte
	mask     int64
	buf      []uint32 // atomic: written by storeRelease32, read atomically
	// topSeen is the owner's last read of top: top only grows, so while
	// bottom-topSeen < capacity the deque cannot be full and the owner
	// need not touch the line thieves write.
	topSeen int64
}

func (d *deque) init(capacity int) {
	d.buf = make([]uint32, capacity)
	d.mask = int64(capacity - 1)
}

// push adds x at the bottom. Owner only.
func (d *deque) push(x uint32) bool {
	b := d.bottom // only the owner writes bottom
	if b-d.topSeen > d.mask {
		d.topSeen = d.top.Load()
		if b-d.topSeen > d.mask {
			return false
		}
	}
	storeRelease32(&d.buf[b&d.mask], x)
	storeRelease64(&d.bottom, b+1)
	return true
}

// pop removes the newest item. Owner only.
func (d *deque) pop() uint32 {
	b := d.bottom - 1
	atomic.StoreInt64(&d.bottom, b)    // full fence: the top load must follow
	batching := d.batching.Load() != 0 // before top: see stealBatch
	t := d.top.Load()
	if t > b {
		storeRelease64(&d.bottom, b+1)
		return noItem
	}
	if batching && b-t < maxStealBatch {
		// A thief taking a batch may have read bottom before our
		// decrement, and its range may reach item b: leave b in place
		// and take the oldest item with a CAS, as a thief would.
		storeRelease64(&d.bottom, b+1)
		return d.steal()
	}
	x := atomic.LoadUint32(&d.buf[b&d.mask])
	if t == b {
		if !d.top.CompareAndSwap(t, t+1) {
			x = noItem
		}
		storeRelease64(&d.bottom, b+1)
	}
	return x
}

// steal removes the oldest item. Any thread.
func (d *deque) steal() uint32 {
	for {
		t := d.top.Load()
		b := atomic.LoadInt64(&d.bottom)
		if t >= b {
			return noItem
		}
		x := atomic.LoadUint32(&d.buf[t&d.mask])
		if d.top.CompareAndSwap(t, t+1) {
			return x
		}
	}
}

// maxStealBatch is the most items one stealBatch takes.
const maxStealBatch = 32

// stealBatch takes up to half of the items, at most len(dst) and
// maxStealBatch, the oldest first, with one CAS of top, and returns how
// many. It returns 0 when it cannot take two or more (fewer than four
// items, another thief is batching, or the CAS failed): use steal then.
// Any thread.
//
// Why one CAS of several items is safe: pop takes item b without a CAS
// when it read top t < b after storing bottom = b with a full fence. The
// thief sets batching with a locked instruction before it loads bottom,
// and pop loads batching between its fence and its load of top. So either
// the thief's load of bottom sees the pop's store (its range, at most half
// of what it saw, stays below b), or the pop sees batching set (unless the
// thief already cleared it, and then the pop's later load of top sees the
// thief's CAS). A pop that sees batching set with b-t < maxStealBatch,
// where a range taken from t could reach b, leaves b and takes the oldest
// item with a CAS instead, like a thief; with b-t >= maxStealBatch no
// range can reach b. TestDequeBatchStealRacesPop forces the race.
func (d *deque) stealBatch(dst []uint32) int {
	if !d.batching.CompareAndSwap(0, 1) {
		return 0
	}
	t := d.top.Load()
	b := atomic.LoadInt64(&d.bottom)
	n := min((b-t)/2, int64(len(dst)), maxStealBatch)
	if n < 2 {
		d.batching.Store(0)
		return 0
	}
	for i := int64(0); i < n; i++ {
		dst[i] = atomic.LoadUint32(&d.buf[(t+i)&d.mask])
	}
	if stealBatchHook != nil {
		stealBatchHook()
	}
	ok := d.top.CompareAndSwap(t, t+n)
	d.batching.Store(0)
	if !ok {
		return 0
	}
	return int(n)
}

// stealBatchHook, when set (tests only), runs between a batch thief's
// reads and its CAS, to force interleavings.
var stealBatchHook func()

func (d *deque) empty() bool { return d.top.Load() >= atomic.LoadInt64(&d.bottom) }

// ring is a mutex-protected FIFO of slot indices with a fixed capacity. It
// serves the shared injection queue (tasks added by goroutines that are not
// scheduler threads, and deque overflow) and each registered thread's pinned
// queue. Its capacity equals the task pool's, so it can never overflow.
type ring struct {
	n    atomic.Int32 // items queued; read without the lock as a hint
	mu   sync.Mutex
	head uint32
	buf  []uint32
	mask uint32
}

func (r *ring) init(capacity int) {
	r.buf = make([]uint32, capacity)
	r.mask = uint32(capacity - 1)
}

func (r *ring) push(x uint32) {
	r.mu.Lock()
	n := uint32(r.n.Load())
	r.buf[(r.head+n)&r.mask] = x
	r.n.Store(int32(n + 1))
	r.mu.Unlock()
}

func (r *ring) pop() uint32 {
	if r.n.Load() == 0 {
		return noItem
	}
	r.mu.Lock()
	n := r.n.Load()
	if n == 0 {
		r.mu.Unlock()
		return noItem
	}
	x := r.buf[r.head&r.mask]
	r.head++
	r.n.Store(n - 1)
	r.mu.Unlock()
	return x
}

// popOwn removes the newest item if it is x and no thief can contend for
// it (top is below it and no batch steal is under way): the owner's pop
// of its own Join entry without a call or a CAS. Otherwise it changes
// nothing and reports false: the caller then pops as usual (pop), which
// settles the rest. Owner only.
func (d *deque) popOwn(x uint32) bool {
	b := d.bottom - 1
	atomic.StoreInt64(&d.bottom, b) // full fence, as in pop
	// batching before top, as in pop (see stealBatch).
	if d.batching.Load() == 0 && d.top.Load() < b && atomic.LoadUint32(&d.buf[b&d.mask]) == x {
		return true
	}
	storeRelease64(&d.bottom, b+1)
	return false
}
