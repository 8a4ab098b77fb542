package sched

import (
	"math/rand/v2"
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
	for th := range 3 {
		wg.Go(func() {
			var got [stealBatch]uint32
			for i := 0; taken.Load() < items; i++ {
				if (i+th)%3 == 0 {
					if x := d.steal(); x != noItem {
						a.take(x)
						taken.Add(1)
					}
					continue
				}
				n := d.stealBatch(got[:1+i%stealBatch])
				for _, x := range got[:n] {
					a.take(x)
				}
				taken.Add(int64(n))
			}
		})
	}
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
