package sched

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
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
