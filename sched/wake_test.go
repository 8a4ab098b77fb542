package sched

import (
	"runtime"
	"testing"
	"time"
)

// TestLostWakeUpRecovered: a task reaches a deque without the wake-up a
// push normally sends (what the unfenced push can cause on x86, forced
// here), while the only worker sleeps and the registered thread that
// queued it never helps. The worker's periodic recheck runs it anyway.
//
// The rechecks cover the moments after the worker went to sleep (up to
// recheckLast), where such a push can happen; later pushes see it idle and
// wake it. So the forced push must come soon after the worker sleeps: one
// spin round (SpinRounds 1) and a poll without sleeps get it there; if a
// loaded machine still delayed this goroutine past the window, the test
// wakes the worker and skips rather than fail on the machine's timing.
func TestLostWakeUpRecovered(t *testing.T) {
	r := newRecorder(4)
	s, m := start(t, Config{Workers: 1, SpinRounds: 1}, r, nil)
	for deadline := time.Now().Add(time.Minute); s.nIdle.Load() < 1; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the worker never went to sleep")
		}
	}
	seen := time.Now()
	id, err := m.Create(rec(0))
	must(t, err)
	sl := &s.slots[id.index()]
	if !sl.held.CompareAndSwap(true, false) {
		t.Fatal("task not held")
	}
	if !m.dq[1].push(id.index()) { // queued without pushCPU's wake-up
		t.Fatal("push failed")
	}
	gap := time.Since(seen)
	done := make(chan error, 1)
	go func() { done <- s.Wait(id) }() // a foreign goroutine: does not help
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		if gap > recheckLast/2 {
			s.wakeAll()
			<-done
			t.Skipf("the push came %v after the worker was seen asleep, past the rechecks' window (%v): the machine delayed this goroutine", gap, recheckLast)
		}
		t.Fatalf("a task queued without a wake-up %v after the worker slept was not run within 10 s by the sleeping worker", gap)
	}
	if r.runs[0].Load() != 1 {
		t.Fatalf("ran %d times", r.runs[0].Load())
	}
}
