package sched

import (
	"time"
)

// Sleeping and waking: the idle list, and the lost wake-up.
//
//  1. An idle thread looks for work for a bounded while (Config.SpinRounds
//     rounds) without yielding its P. Every yieldEvery (16) rounds it
//     yields the CPU, not the P (spinPause): on cores shared with other
//     programs the thread that has the work may be queued behind the
//     spinning one. Waking a sleeping thread (a futex wake and the
//     runtime's M hand-off) takes far longer than a task, so a thread that
//     slept between the dependent stages of a frame joined the next stage
//     late. Rejected: runtime.Gosched between rounds: it puts the
//     goroutine on the global run queue without waking an idle P, so a
//     worker that had just woken another goroutine (queued on its own P)
//     would stand runnable while the other core idled. The spin is bounded, so an
//     idle scheduler costs no CPU. A Wait for a task that an executor holds
//     does not spin (see Ctx.Wait).
//  2. A thread that goes to sleep (sleep) pays its debt, returns its
//     cached slots, registers as idle under idleMu (a locked increment of
//     nIdle), and then re-checks every queue and what it waits for.
//  3. A thread that queues work first publishes it and then looks for
//     sleepers (nIdle), waking one (wakeOne) or the thread it is for
//     (wakeThread): whichever of the two comes second sees the other.
//  4. That needs a store-load fence on both sides. The sleeper has one, but
//     a fence in every push nearly doubled the cost of a task handed
//     between two cores, so a push publishes with a plain store and x86 may
//     let its look for sleepers pass that store: a push racing with a
//     thread's falling asleep can go unannounced. The next push wakes the
//     thread anyway (it reads the settled count); for the case with no next
//     push, a sleeping thread rechecks the queues 1, 5, 21 and 85 ms after
//     falling asleep (recheckSleep to recheckLast), then waits for a token
//     alone (TestLostWakeUpRecovered forces the case). A Wait in a kernel
//     goes on looking for a wait-for cycle every recheckWatch (hang.go).
//  5. A waker takes the thread off the idle list under idleMu, then sends a
//     token on its channel (signal, which never blocks). A token can come
//     late: a thread that wakes takes itself off the list if it is still
//     there (removeIdle) and drops a token that arrives meanwhile.
//  6. A completion that has waiters wakes the threads that wait
//     (wakeWaiters), and those with a runner parked in a wait
//     (handoff.go: the sleeping holder resumes it), and the goroutines
//     waiting outside the scheduler (extCond); a freed slot wakes an Add
//     blocked on a full pool (notifyFree, pool.go); Close wakes every
//     thread (wakeAll).

// wakeOne wakes one sleeping thread (new CPU work arrived).
func (s *Scheduler) wakeOne() {
	s.idleMu.Lock()
	var t *Ctx
	for i := len(s.idle) - 1; i >= 0; i-- {
		if s.idle[i].worker || s.idle[i].waiting.Load() {
			t = s.idle[i]
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.nIdle.Add(-1)
			s.activity.Add(1)
			break
		}
	}
	s.idleMu.Unlock()
	if t != nil {
		// No Gosched: the woken goroutine waits in this P's run-next
		// slot only until an idle P steals it (the runtime wakes one);
		// yielding here put this goroutine on the global run queue,
		// where no idle P is woken for it (see Config.SpinRounds).
		t.signal()
	}
}

// wakeThread wakes t if it sleeps (pinned work for it arrived).
func (s *Scheduler) wakeThread(t *Ctx) {
	s.idleMu.Lock()
	found := false
	for i, x := range s.idle {
		if x == t {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.nIdle.Add(-1)
			s.activity.Add(1)
			found = true
			break
		}
	}
	s.idleMu.Unlock()
	if found {
		t.signal()
	}
}

// removeIdle takes t off the idle list if it is there (t itself, after a
// wake-up: a spurious one, from a token a waker sent late, leaves t listed)
// and reports whether it was.
func (s *Scheduler) removeIdle(t *Ctx) bool {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	for i, x := range s.idle {
		if x == t {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.nIdle.Add(-1)
			s.activity.Add(1)
			return true
		}
	}
	return false
}

// wakeWaiters wakes every sleeping waiter (a waited-for task completed).
func (s *Scheduler) wakeWaiters() {
	if s.extWait.Load() > 0 {
		s.extMu.Lock()
		s.extCond.Broadcast()
		s.extMu.Unlock()
	}
	s.idleMu.Lock()
	var buf [8]*Ctx
	woken := buf[:0]
	for i := 0; i < len(s.idle); {
		if t := s.idle[i]; t.waiting.Load() || t.nparked.Load() > 0 {
			woken = append(woken, t)
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.nIdle.Add(-1)
			s.activity.Add(1)
			continue
		}
		i++
	}
	s.idleMu.Unlock()
	for _, t := range woken {
		t.signal()
	}
}

func (s *Scheduler) wakeAll() {
	s.idleMu.Lock()
	// Copied out, and the list truncated rather than dropped, so that
	// sleeping again does not grow a new list (no allocation per wake).
	var buf [16]*Ctx
	woken := append(buf[:0], s.idle...)
	s.idle = s.idle[:0]
	s.nIdle.Store(0)
	s.activity.Add(uint64(len(woken)))
	s.idleMu.Unlock()
	for _, t := range woken {
		t.signal()
	}
}

// hasWork reports whether any queue this thread may serve holds work.
func (c *Ctx) hasWork() bool {
	s := c.s
	if !c.worker && c.npinned.Load() > 0 {
		return true
	}
	for lv := range s.inject {
		if s.inject[lv].n.Load() > 0 {
			return true
		}
		for _, t := range s.threads {
			if !t.dq[lv].empty() {
				return true
			}
		}
	}
	return false
}

// sleep parks the thread until woken. It registers as idle first and then
// re-checks for work and for the wait condition, so a push or completion
// that raced with it is never missed.
func (c *Ctx) sleep(id TaskID, e *Event) {
	s := c.s
	c.flushDec() // no debt is held asleep
	c.flushSlots()
	s.idleMu.Lock()
	s.idle = append(s.idle, c)
	s.nIdle.Add(1)
	// A Wait in a kernel looks for a wait-for cycle now, listed and under
	// the lock, so that of two threads that close one and go to sleep
	// together the second sees the first; and again at each recheck
	// below, for as long as it sleeps: a link of the cycle may be made
	// after every thread in it went to sleep (an Add from elsewhere), or
	// a thread that saw the cycle and failed its wait may not have
	// broken it (its kernel returned, but its task still needs a child).
	watch := id != NoTask && c.nouter > 0
	if watch && c.cycleLocked(id) {
		s.idleMu.Unlock()
		s.wakeWaiters() // the others in the cycle look again
		return
	}
	s.idleMu.Unlock()
	if s.poolWait.Load() > 0 {
		// An Add blocked on a full pool looks for a dead end when the
		// threads go idle (see alloc).
		s.extMu.Lock()
		s.extCond.Broadcast()
		s.extMu.Unlock()
	}
	if c.hasWork() || (id != NoTask && s.IsFinished(id)) || (e != nil && (e.IsSet() || s.drained.Load())) || (c.worker && s.stopping.Load()) || c.readyParked() != nil {
		s.removeIdle(c)
		select { // drop a token a waker may have sent meanwhile
		case <-c.wake:
		default:
		}
		return
	}
	// Wait for a token, looking for work once more at each recheck. A
	// push publishes its item with a plain store and then reads nIdle
	// without a fence (a fence per push doubled the cost of a task shared
	// between two cores), so on x86 its read can pass its own store and
	// miss a thread that registers as idle at that instant, while that
	// thread's re-check misses the store still in the pusher's buffer. The
	// next push wakes it anyway; the recheck bounds the wait when no push
	// comes (the pusher then blocked outside the scheduler). The race can
	// only happen as the thread goes to sleep (a push after that reads the
	// increment), so the rechecks back off (waits of 1, 4, 16 and 64 ms:
	// 1, 5, 21 and 85 ms after falling asleep), and then the thread waits
	// for a token alone: an idle thread costs no periodic wake-ups. A Wait
	// in a kernel (watch) goes on looking for a cycle every recheckWatch.
	for d := recheckSleep; ; d = min(4*d, recheckWatch) {
		if d > recheckLast && !watch {
			<-c.wake
			s.removeIdle(c)
			return
		}
		c.timer.Reset(d)
		select {
		case <-c.wake:
			c.timer.Stop()
			// A token can be stale (a waker took us off the list while we
			// were re-checking, and signalled after we left): then we are
			// still listed.
			s.removeIdle(c)
			return
		case <-c.timer.C:
			if c.hasWork() || c.readyParked() != nil {
				s.removeIdle(c)
				select { // drop a token a waker may have sent meanwhile
				case <-c.wake:
				default:
				}
				return
			}
			if watch {
				s.idleMu.Lock()
				found := c.cycleLocked(id)
				s.idleMu.Unlock()
				if found {
					select { // drop a token a waker may have sent meanwhile
					case <-c.wake:
					default:
					}
					s.wakeWaiters()
					return
				}
			}
		}
	}
}

// spinPause is called on every idle round before the thread sleeps: every
// yieldEvery rounds (a fraction of a microsecond of looking) it lets the
// OS run another thread on this CPU (osYield). On a quiet machine nobody else is
// runnable and the call returns at once. When the cores are shared with
// other programs, a spinning thread otherwise holds a CPU that the thread
// with the work (often the one it waits for) is queued for; the
// measurement is in BENCHMARKS.md (section sched-peers). It is not
// Gosched, which moves the goroutine to the global run queue
// (Config.SpinRounds).
func spinPause(spins int) {
	if spins%yieldEvery == 0 {
		osYield()
	}
}

// yieldEvery is how many idle rounds pass between two osYields.
const yieldEvery = 16

// recheckSleep and recheckLast: the first and last delay after which a
// sleeping thread looks for work that a push racing with its sleep left
// unannounced (see sleep); each delay is four times the previous.
const (
	recheckSleep = time.Millisecond
	recheckLast  = 64 * time.Millisecond
	// recheckWatch is how often a Wait in a kernel that sleeps looks for
	// a wait-for cycle once the rechecks have backed off (see sleep).
	recheckWatch = 256 * time.Millisecond
)

func (c *Ctx) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
