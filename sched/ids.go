package sched

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// IDs: tags, generations, checks, and the errors of finished tasks.
//
//  1. New takes a tag, unique among open schedulers (takeTag), and a first
//     generation above any that an earlier holder of the tag issued. A
//     TaskID packs the tag, the slot's generation and the slot index (see
//     TaskID).
//  2. Completing a task bumps its slot's generation: an old ID then reads
//     as finished (IsFinished), never as a wrong task. A child that Add
//     ran in place because the pool was full (inplace.go) takes the next
//     generation of the in-place slot, which holds no task: its ID reads
//     as finished from the start.
//  3. Every ID a caller gives is checked (checkID): another scheduler's is
//     refused (ErrForeignTask) however many schedulers a process makes, one
//     never issued with ErrNotIssued. NoTask costs one compare.
//  4. A failed task's error is recorded before its generation moves
//     (recordFailure), in a table bounded by Config.MaxRetainedErrors, so
//     Wait and Err still report it for a stale ID; the oldest are dropped
//     and counted (DroppedErrors).
//  5. Close frees the tag (releaseTag); the next holder starts above the
//     newest generation of the slots.

// tags hands out the tags of TaskIDs (see TaskID): used marks the tags of
// open schedulers; next[t] is the first generation a new holder of tag t
// starts its slots at, above every generation its holders issued; last is
// the tag given out last (tags go round, so a freed tag is reused late).
var tags struct {
	mu   sync.Mutex
	used [MaxSchedulers + 1]bool
	next [MaxSchedulers + 1]uint32
	last uint16
}

// takeTag reserves a tag and its first generation for a new scheduler.
func takeTag() (uint16, uint32, bool) {
	tags.mu.Lock()
	defer tags.mu.Unlock()
	for i := 0; i < MaxSchedulers; i++ {
		t := uint16(int(tags.last)%MaxSchedulers + 1) // 1..MaxSchedulers; 0 is NoTask's
		tags.last = t
		if !tags.used[t] {
			tags.used[t] = true
			if tags.next[t] == 0 {
				tags.next[t] = 1
			}
			return t, tags.next[t], true
		}
	}
	return 0, 0, false
}

// releaseTag frees s's tag once s issues no more IDs (end of Close): the
// next holder starts above the newest generation of s's slots.
func (s *Scheduler) releaseTag() {
	var top uint32 // highest generation above the base, in modular distance
	for i := range s.slots {
		top = max(top, s.slots[i].genLoad()-s.genBase)
	}
	tags.mu.Lock()
	// The margin covers the few generations an Add that raced with Close
	// can still use up after this (see lateAdd).
	tags.next[s.id] = s.genBase + top + 1 + 1<<16
	tags.used[s.id] = false
	tags.mu.Unlock()
}

// IsFinished reports whether the task completed (with or without error).
// Stale IDs (the slot was reused) report true. NoTask reports true.
func (s *Scheduler) IsFinished(id TaskID) bool {
	if id == NoTask {
		return true
	}
	idx := id.index()
	if id.sched() != s.id || int(idx) >= len(s.slots) {
		return true
	}
	h := s.slots[idx].deps.Load()
	return uint32(h>>32) != id.gen() || uint32(h) == depsAbandoned
}

// Err returns a finished task's error (nil if it succeeded or has not
// finished). Errors of stale IDs are kept up to Config.MaxRetainedErrors.
func (s *Scheduler) Err(id TaskID) error {
	if !s.IsFinished(id) || s.nFailed.Load() == 0 {
		return nil
	}
	s.failMu.Lock()
	e := s.failed[id]
	s.failMu.Unlock()
	if e == nil {
		return nil
	}
	return e
}

// DroppedErrors reports how many task errors were dropped because more than
// MaxRetainedErrors failures were retained.
func (s *Scheduler) DroppedErrors() int64 { return s.dropped.Load() }

// ForgetErrors drops every retained task error.
func (s *Scheduler) ForgetErrors() {
	s.failMu.Lock()
	clear(s.failed)
	s.failFIFO = s.failFIFO[:0]
	s.nFailed.Store(0)
	s.failMu.Unlock()
}

func (s *Scheduler) recordFailure(e *TaskError) {
	s.failMu.Lock()
	s.recordFailureLocked(e)
	s.failMu.Unlock()
}

// recordFailureLocked is recordFailure with failMu held.
func (s *Scheduler) recordFailureLocked(e *TaskError) {
	if len(s.failFIFO) >= s.cfg.MaxRetainedErrors {
		old := s.failFIFO[0]
		s.failFIFO = s.failFIFO[1:]
		delete(s.failed, old)
		s.dropped.Add(1)
	}
	s.failed[e.Task] = e
	s.failFIFO = append(s.failFIFO, e.Task)
	s.nFailed.Store(int64(len(s.failed)))
}

// checkID validates an ID given by a caller.
func (s *Scheduler) checkID(id TaskID, what string) error {
	if id == NoTask {
		return nil // inlined: Add checks a parent and a dependency, mostly none
	}
	return s.checkIDSlow(id, what)
}

// checkIDSlow is checkID for an ID that is not NoTask.
//
// The slot's generation says whether an ID of it was issued: below it,
// the task finished (and was issued); above it, never issued; equal, the
// slot holds that generation's task, or is free for it. The open count
// tells those apart: a free slot's is -1 (freeOpen: New stores it, and
// complete, lifecycle.go, stores it after the generation bump), a task's
// is positive until its last decrement and 0 from then until the bump
// (complete: recording its error, the race check's bookkeeping, then the
// bump), however long the completing thread is descheduled there. The
// loads are ordered generation, open count, generation again, so a task
// that finishes (or is added and finishes) during the call reads as
// issued, never as unknown. One state answers "issued" for an ID not
// issued yet: a slot read between the bump and the store of -1, under
// the new generation, which the slot's next task is about to take; that
// is an ID forged with the very generation Add hands out next, in a
// window of a few instructions, and the answer is true a moment later.
//
// Rejected: telling a free slot from a completing one by waiting for the
// bump (a bounded wait misreports a completing thread descheduled longer
// than the bound, and makes every forged ID pay the wait), or by the
// task's error (a task that succeeded leaves none).
func (s *Scheduler) checkIDSlow(id TaskID, what string) error {
	if id.sched() != s.id || int32(id.gen()-s.genBase) < 0 {
		// The tag is ours only while we are open, and an ID of an earlier
		// holder of the tag has a generation below our base (see TaskID).
		return fmt.Errorf("sched: %s %v: %w", what, id, ErrForeignTask)
	}
	idx := id.index()
	if int(idx) >= len(s.slots) {
		return fmt.Errorf("sched: %s %v: %w", what, id, ErrNotIssued)
	}
	sl := &s.slots[idx]
	g := sl.genLoad()
	d := int32(id.gen() - g)
	if d < 0 || (d == 0 && atomic.LoadInt32(&sl.open) != freeOpen) {
		return nil // finished, open, or completing (issued in each case)
	}
	if d == 0 && sl.genLoad() != g {
		return nil // finished during the loads: the generation only grows
	}
	return fmt.Errorf("sched: %s %v: %w", what, id, ErrNotIssued)
}
