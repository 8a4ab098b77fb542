package sched

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// takeAll records items taken from a deque and fails on a duplicate.
type takeAll struct {
	t    testing.TB
	seen []atomic.Int32
}

func (a *takeAll) take(x uint32) {
	if n := a.seen[x].Add(1); n != 1 {
		a.t.Errorf("item %d taken %d times", x, n)
	}
}

func (a *takeAll) check() {
	for i := range a.seen {
		if n := a.seen[i].Load(); n != 1 {
			a.t.Errorf("item %d taken %d times", i, n)
		}
	}
}

// TestDequeBatchStealRacesPop forces the interleaving that deque.batching
// exists for: a thief reads top and bottom, the owner then pops down into
// the thief's range, and only then the thief's CAS of top comes. Without the
// flag the owner takes the last item of the thief's range without a CAS and
// the thief's CAS still succeeds: one item taken twice.
func TestDequeBatchStealRacesPop(t *testing.T) {
	for _, size := range []int{8, 20, 40, 100} {
		var d deque
		d.init(256)
		a := &takeAll{t: t, seen: make([]atomic.Int32, size)}
		for i := range size {
			if !d.push(uint32(i)) {
				t.Fatal("push refused")
			}
		}
		// The owner pops three quarters of the items while the thief
		// is between its reads and its CAS.
		stealBatchHook = func() {
			stealBatchHook = nil
			for range size * 3 / 4 {
				if x := d.pop(); x != noItem {
					a.take(x)
				}
			}
		}
		var got [stealBatch]uint32
		n := d.stealBatch(got[:])
		stealBatchHook = nil
		for _, x := range got[:n] {
			a.take(x)
		}
		for x := d.pop(); x != noItem; x = d.pop() {
			a.take(x)
		}
		if !d.empty() {
			t.Errorf("size %d: deque not empty after popping everything", size)
		}
		a.check()
	}
}

// TestDequeBatchSteal: an owner pushing and popping at random while
// thieves take single items and batches; every item is taken exactly once.
func TestDequeBatchSteal(t *testing.T) {
	const items = 200000
	var d deque
	d.init(64)
	a := &takeAll{t: t, seen: make([]atomic.Int32, items)}
	var taken atomic.Int64
	var wg sync.WaitGroup
	startThieves(&wg, &d, a, &taken, items, 3, func(i int) int { return 1 + i%stealBatch })
	r := rand.New(rand.NewPCG(1, 2))
	for next := uint32(0); next < items; {
		if r.IntN(3) != 0 && d.push(next) {
			next++
			continue
		}
		if x := d.pop(); x != noItem {
			a.take(x)
			taken.Add(1)
		}
	}
	for x := d.pop(); x != noItem; x = d.pop() {
		a.take(x)
		taken.Add(1)
	}
	wg.Wait()
	a.check()
}

// TestDequePopOwn: popOwn takes the newest item only when it is the item
// named and no thief can contend for it; otherwise it leaves the deque as
// it was, for pop to settle.
func TestDequePopOwn(t *testing.T) {
	var d deque
	d.init(8)
	for i := range uint32(4) {
		d.push(10 + i)
	}
	if d.popOwn(12) {
		t.Fatal("popOwn took 13 when asked for 12")
	}
	if !d.popOwn(13) {
		t.Fatal("popOwn refused the newest of four items")
	}
	d.batching.Store(1) // a batch thief between its reads and its CAS
	if d.popOwn(12) {
		t.Fatal("popOwn took an item while a batch steal was under way")
	}
	d.batching.Store(0)
	if x := d.steal(); x != 10 {
		t.Fatalf("steal = %d, want 10", x)
	}
	if x := d.steal(); x != 11 {
		t.Fatalf("steal = %d, want 11", x)
	}
	// One item left: a thief may be taking it, so popOwn leaves it to
	// pop's CAS.
	if d.popOwn(12) {
		t.Fatal("popOwn took the last item without a CAS")
	}
	if x := d.pop(); x != 12 {
		t.Fatalf("pop after refusals = %d, want 12", x)
	}
	if d.popOwn(12) || !d.empty() {
		t.Fatal("popOwn on an empty deque")
	}
}

// TestDequePopOwnRacesSteals: an owner that pushes and takes its newest
// item back as Join does (popOwn, then pop when it refuses) while thieves
// take single items and batches: every item is taken exactly once.
func TestDequePopOwnRacesSteals(t *testing.T) {
	const items = 200000
	var d deque
	d.init(64)
	a := &takeAll{t: t, seen: make([]atomic.Int32, items)}
	var taken atomic.Int64
	var wg sync.WaitGroup
	startThieves(&wg, &d, a, &taken, items, 2, func(i int) int { return 2 + i%(stealBatch-1) })
	r := rand.New(rand.NewPCG(3, 4))
	var mine []uint32 // pushed and not taken back by the owner, oldest first
	for next := uint32(0); next < items || len(mine) > 0; {
		if next < items && r.IntN(3) != 0 && d.push(next) {
			mine = append(mine, next)
			next++
			continue
		}
		if len(mine) == 0 {
			continue
		}
		x := mine[len(mine)-1]
		mine = mine[:len(mine)-1]
		if d.popOwn(x) {
			a.take(x)
			taken.Add(1)
			continue
		}
		switch y := d.pop(); y {
		case noItem:
			mine = mine[:0] // thieves took the rest
		case x:
			a.take(x)
			taken.Add(1)
		default:
			// A batch thief was under way and pop took the oldest
			// item, as a thief would: x is still queued.
			i := slices.Index(mine, y)
			if i < 0 {
				t.Fatalf("pop = %d, neither popOwn's %d nor an item still queued", y, x)
			}
			mine = append(slices.Delete(mine, i, i+1), x)
			a.take(y)
			taken.Add(1)
		}
	}
	wg.Wait()
	a.check()
}

// startThieves starts n thieves on d that take single items (steal) and
// batches of batch(i) items (stealBatch) in turn, every taken item to a,
// until taken reaches items; wg counts them.
func startThieves(wg *sync.WaitGroup, d *deque, a *takeAll, taken *atomic.Int64, items int64, n int, batch func(i int) int) {
	for th := range n {
		wg.Go(func() {
			var got [stealBatch]uint32
			for i := 0; taken.Load() < items; i++ {
				if (i+th)%n == 0 {
					if x := d.steal(); x != noItem {
						a.take(x)
						taken.Add(1)
					}
					continue
				}
				k := d.stealBatch(got[:batch(i)])
				for _, x := range got[:k] {
					a.take(x)
				}
				taken.Add(int64(k))
			}
		})
	}
}
