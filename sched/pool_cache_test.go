package sched

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolSlotsCachedByBlockedWorker: a worker's kernel adds and waits
// for some children (its worker's slot cache fills), then blocks on a Go
// channel until another goroutine has made its frame's gates. The gates
// and the kernel's task together fit the pool with room to spare, so
// every Create must get a slot: none may wait for ever on the free slots
// the blocked worker keeps in its cache. The gates are made by a
// registered thread and by a goroutine that is no thread (Scheduler.Create
// takes single slots from the shared list).
func TestPoolSlotsCachedByBlockedWorker(t *testing.T) {
	for _, caller := range []string{"registered thread", "no thread"} {
		t.Run(caller, func(t *testing.T) {
			const pool = 256
			s, err := New(Config{Workers: 2, PoolSize: pool})
			must(t, err)
			m, err := s.RegisterThread("main")
			must(t, err)
			create, run, wait := m.Create, m.Run, m.Wait
			if caller == "no thread" {
				create, run, wait = s.Create, s.Run, s.Wait
			}
			leaf := kernelOf(t, s, "leaf", func(*Ctx, *TaskData) error { return nil })
			proceed := make(chan struct{})
			inK := make(chan struct{})
			var cached atomic.Int32 // the worker's cache as the kernel blocks
			k := kernelOf(t, s, "k", func(c *Ctx, d *TaskData) error {
				for range 64 {
					id, err := c.Add(&Task{Kernel: leaf})
					if err != nil {
						return err
					}
					if err := c.Wait(id); err != nil {
						return err
					}
				}
				cached.Store(c.sc.count())
				close(inK)
				<-proceed // outside the scheduler, until the gates are made
				return nil
			})
			id, err := m.Add(&Task{Kernel: k})
			must(t, err)
			<-inK
			if cached.Load() == 0 {
				t.Fatalf("the kernel's worker caches no slot as it blocks: nothing is tested")
			}
			time.Sleep(10 * time.Millisecond) // the other worker goes idle
			const gates = pool - 8
			var held []TaskID
			within(t, 10*time.Second, "Create while a blocked worker caches slots", func() {
				for range gates {
					g, err := create(&Task{})
					if err != nil {
						t.Fatalf("Create %d of %d (pool %d, one task running): %v", len(held)+1, gates, pool, err)
					}
					held = append(held, g)
				}
			})
			close(proceed)
			must(t, wait(id))
			for _, g := range held {
				must(t, run(g))
			}
			for _, g := range held {
				must(t, wait(g))
			}
			must(t, s.Close())
		})
	}
}

// Workers' caches taken back while their kernels add children and the
// children complete (each Add and each completion a section of the
// worker's cache): every task runs once, and once all is done every slot
// is free exactly once (on the shared list or in a cache), none lost,
// none twice. No thread is registered, and the roots come from a
// goroutine that is no thread, so every cache taken is a worker's. The
// takers run as often as they can, so owner and taker meet inside their
// sections; with haveProcessFence the owner's side is plain stores.
func TestWorkerSlotCacheTakenWhileKernelsAdd(t *testing.T) {
	const pool, rounds, per, roots, takerCount = 256, 1500, 40, 2, 1
	s, err := New(Config{Workers: 2, PoolSize: pool})
	must(t, err)
	defer s.Close()
	t.Logf("process-wide fence: %v", haveProcessFence)
	var ran atomic.Int64
	leaf := kernelOf(t, s, "leaf", func(*Ctx, *TaskData) error { ran.Add(1); return nil })
	fan := kernelOf(t, s, "fan", func(c *Ctx, d *TaskData) error {
		for range per {
			if _, err := c.Add(&Task{Kernel: leaf, Parent: c.Current()}); err != nil {
				return err
			}
		}
		return nil
	})
	stopTakers := startTakers(s, takerCount)
	within(t, 60*time.Second, "kernels adding while workers' caches are taken back", func() {
		var ids [roots]TaskID
		for range rounds {
			for i := range ids {
				id, err := s.Add(&Task{Kernel: fan})
				must(t, err)
				ids[i] = id
			}
			for _, id := range ids {
				must(t, s.Wait(id))
			}
		}
	})
	takes := stopTakers()
	if got := ran.Load(); got != rounds*roots*per {
		t.Errorf("%d tasks ran, want %d", got, rounds*roots*per)
	}
	if takes == 0 {
		t.Errorf("no worker's cache was taken back: nothing was tested")
	}
	checkSlotsFreeOnce(t, s)
	t.Logf("%d caches taken back", takes)
}

// checkSlotsFreeOnce waits until s is idle (no task live, every worker
// asleep), then checks that every slot of the pool is free exactly once:
// on the shared list or in some thread's cache.
func checkSlotsFreeOnce(t *testing.T, s *Scheduler) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.Pending() != 0 || s.nIdle.Load() < int32(s.nwork); {
		if time.Now().After(deadline) {
			t.Fatalf("still busy after 10s (%d tasks live)", s.Pending())
		}
		time.Sleep(time.Millisecond)
	}
	s.freeMu.Lock()
	free := append([]uint32(nil), s.freeIdx...)
	s.freeMu.Unlock()
	for _, c := range s.threads {
		free = append(free, c.cache[:c.sc.count()]...)
	}
	seen := make(map[uint32]bool)
	for _, x := range free {
		if seen[x] {
			t.Errorf("slot %d is free twice", x)
		}
		seen[x] = true
	}
	if len(seen) != int(s.inPlaceSlot()) {
		t.Errorf("%d slots free, want all %d", len(seen), s.inPlaceSlot())
	}
}

// The exclusion between a cache's owner and a thread taking it back
// (slotCache), one step at a time: a taker leaves a cache alone while its
// owner is inside it, takes it whole once the owner is out, and an owner
// that finds a taker at work uses the shared list, leaving the cache to
// the taker. The stress tests above meet both sides by chance; this one
// does not depend on it.
func TestSlotCacheOwnerAndTakerExclude(t *testing.T) {
	s, m, k, _ := countingSched(t, Config{Workers: 1, PoolSize: 256})
	defer s.Close()
	cacheOnThread(t, s, m, k) // the worker sleeps: only m caches slots
	n := m.sc.count()
	if n <= 0 {
		t.Fatalf("m caches %d slots, want some", n)
	}

	if !m.sc.enter() {
		t.Fatalf("owner could not enter its own cache with no taker")
	}
	if s.reclaimCaches() {
		t.Errorf("reclaimCaches took a cache whose owner is inside it")
	}
	if got := m.sc.count(); got != n {
		t.Errorf("owner inside: cache holds %d slots after reclaimCaches, want %d", got, n)
	}
	if m.sc.stop.Load() {
		t.Errorf("reclaimCaches left the cache stopped")
	}
	m.sc.leave()

	m.sc.stop.Store(true) // a taker at work
	if m.sc.enter() {
		t.Errorf("owner entered a cache a taker is emptying")
	}
	id, err := m.Add(&Task{Kernel: k})
	must(t, err)
	must(t, m.Wait(id))
	if got := m.sc.count(); got != n {
		t.Errorf("taker at work: owner's Add left its cache at %d slots, want %d untouched", got, n)
	}
	m.sc.stop.Store(false)

	for deadline := time.Now().Add(10 * time.Second); s.nIdle.Load() < int32(s.nwork); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("worker still busy after 10s")
		}
	}
	n, free := m.sc.count(), s.nfree.Load()
	if !s.reclaimCaches() {
		t.Errorf("reclaimCaches took nothing from a cache of %d slots whose owner is out", n)
	}
	if got := m.sc.count(); got != 0 {
		t.Errorf("cache holds %d slots after reclaimCaches, want 0", got)
	}
	if got := s.nfree.Load(); got != free+n {
		t.Errorf("shared list holds %d slots after reclaimCaches, want %d+%d", got, free, n)
	}
	checkSlotsFreeOnce(t, s)
}
