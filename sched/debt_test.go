package sched

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDebtPaidOnce: a thread defers decrements of two parents' open
// counts (switching between them, as it does when it runs children of
// one and then of the other) while another goroutine keeps paying its
// debt the way Abandon does. Every decrement must be paid exactly once:
// paid twice, a parent's count would reach zero early; never, it would
// stay open.
func TestDebtPaidOnce(t *testing.T) {
	s, err := New(Config{Workers: 1})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	const n = 200000
	var parents [2]TaskID
	for i := range parents {
		parents[i], err = m.Create(&Task{})
		must(t, err)
		atomic.AddInt32(&s.slots[parents[i].index()].open, n) // n children, done
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				m.takeDebt(nil)
			}
		}
	})
	r := rand.New(rand.NewPCG(3, 4))
	var left [2]int
	left[0], left[1] = n, n
	for left[0]+left[1] > 0 {
		i := r.IntN(2)
		for k := 1 + r.IntN(40); k > 0 && left[i] > 0; k-- {
			m.deferDec(parents[i].index() + 1)
			left[i]--
		}
		if r.IntN(8) == 0 {
			m.flushDec()
		}
	}
	m.flushDec()
	close(stop)
	wg.Wait()
	for _, p := range parents {
		if o := atomic.LoadInt32(&s.slots[p.index()].open); o != 1 || s.IsFinished(p) {
			t.Errorf("parent %v: open %d (want 1: only its own work), finished %v", p, o, s.IsFinished(p))
			continue
		}
		must(t, m.Run(p))
		must(t, m.Wait(p))
	}
}

// TestRunPinnedRunsReadiedDependents: P's children and a dependent of P
// are all pinned to this thread; one RunPinned runs the children, which
// complete P, and then the dependent (a deferred parent decrement must not
// leave it for the next call).
func TestRunPinnedRunsReadiedDependents(t *testing.T) {
	r := newRecorder(16)
	s, m := start(t, Config{Workers: 1}, r, nil)
	p, err := m.Create(&Task{})
	must(t, err)
	for i := range 3 {
		tk := rec(i)
		tk.Parent = p
		tk.Affinity = OnThread(0)
		_, err := m.Add(tk)
		must(t, err)
	}
	d := rec(5)
	d.Dependency = p
	d.Affinity = OnThread(0)
	did, err := m.Add(d)
	must(t, err)
	must(t, m.Run(p))
	// Let the worker run P's own (empty) work: only the pinned children keep it open.
	for atomic.LoadInt32(&s.slots[p.index()].open) != 3 {
		time.Sleep(time.Millisecond)
	}
	if n := m.RunPinned(); n != 4 || !s.IsFinished(did) {
		t.Errorf("RunPinned ran %d tasks, want 4 (3 children, then the dependent P's completion readied); dependent finished: %v", n, s.IsFinished(did))
	}
}
