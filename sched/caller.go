package sched

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Which thread is calling: for the calls made without a Ctx.
//
//  1. The goroutine that holds a worker records its runtime g and
//     goroutine ID as it takes the worker (its first, or one that a
//     waiting kernel handed it to, handoff.go), and the last clears the g
//     before it exits; RegisterThread records those of the registering
//     goroutine.
//  2. Scheduler.Wait, Scheduler.Add (its back-pressure, and its check
//     once closing: kernelMayAdd) and Close look the caller up, on their
//     slow paths only (the task has not finished, the pool is full, Close
//     began; Close always): by g first (getg, nanoseconds); a match on a
//     worker is final, a match on a registered thread is confirmed by
//     goroutine ID (goid, a stack trace: microseconds), since that
//     goroutine may have exited and its g been reused. Off amd64 every
//     look-up goes by goroutine ID.
//  3. Found on a scheduler thread, a wait or a blocked Add runs tasks as
//     the Ctx call does: blocking there could leave nobody to run the
//     awaited task. Close from a kernel there fails with ErrCloseInKernel.

// RegisterThread registers the calling thread (a goroutine that will call
// the returned Ctx's methods; lock it with runtime.LockOSThread if it must
// stay on one OS thread) as one of Config.MainThreads. Tasks with affinity
// OnThread(i) run only on the i-th registered thread, when it calls Wait,
// WaitEvent or RunPinned. It fails with ErrThreadsTaken when all are
// registered and with ErrClosed once Close has begun.
func (s *Scheduler) RegisterThread(name string) (*Ctx, error) {
	if s.closing.Load() {
		return nil, fmt.Errorf("sched: RegisterThread(%q): %w", name, ErrClosed)
	}
	i := int(s.nreg.Add(1)) - 1
	if i >= s.cfg.MainThreads {
		s.nreg.Add(-1)
		return nil, fmt.Errorf("sched: RegisterThread(%q): %w (%d)", name, ErrThreadsTaken, s.cfg.MainThreads)
	}
	c := s.threads[s.nwork+i]
	c.name = name
	c.g.Store(getg())
	c.goid.Store(goid())
	return c, nil
}

// callerCtx returns the scheduler thread the calling goroutine is (a
// worker, or the thread it registered), or nil. A goroutine that
// registered several threads hands all but one to other goroutines, and
// which one it kept is unknown: nil then. For the slow paths of calls
// made without a Ctx.
//
// It goes by the goroutine's runtime g first (getg, a few nanoseconds):
// no two live goroutines share one. A worker's recorded g is that of the
// live goroutine holding it (stored as it takes the worker, cleared before
// the last exits), so a match names the worker, and a kernel on a worker
// is found at once; a kernel parked in a wait makes no calls until it
// holds the worker again. A
// registered thread's was stored as it registered, and the goroutine may
// have exited since and its g been reused: a match there is confirmed by
// goroutine ID (goid, microseconds). A registered thread inside a Wait,
// WaitEvent, RunPinned or RunOne also holds the g of the goroutine making
// that call (busyG, busy.go), and one inside its outermost RunInPlace,
// Join or JoinTasks made outside any task that of the goroutine making
// it (inPlaceG): a match there is final, whichever goroutine registered
// the thread (a kernel it runs calls Close or Wait without its Ctx). Otherwise a g that matches nothing is no thread's: a worker's would match, and so would that of the goroutine
// that registered a thread, while it lives. Where getg is not available
// (not amd64) every look-up goes by goroutine ID.
func (s *Scheduler) callerCtx() *Ctx {
	if me := getg(); me != 0 {
		confirm := false
		for _, t := range s.threads {
			if t.g.Load() == me {
				if t.worker {
					return t
				}
				confirm = true
			}
			if !t.worker && (uintptr(atomic.LoadInt64(&t.busyG)) == me || uintptr(atomic.LoadInt64(&t.inPlaceG)) == me) {
				return t // inside a call on t now: alive, and t's (busy.go)
			}
		}
		if !confirm {
			return nil
		}
	}
	g := goid()
	var found *Ctx
	for _, t := range s.threads {
		if t.goid.Load() == g {
			if found != nil {
				return nil
			}
			found = t
		}
	}
	return found
}

var goidBufs = sync.Pool{New: func() any { return new([64]byte) }}

// goid returns the calling goroutine's ID, read from the first line of its
// stack trace ("goroutine 123 [running]:"). runtime.Stack walks the whole
// stack even into a 64-byte buffer, so its cost grows with the stack's
// depth: microseconds near the bottom of a stack, many times more under
// a deep one. Unlike a g, an ID is never reused; callerCtx asks for it
// only to confirm a registered thread (or everywhere, off amd64).
func goid() uint64 {
	buf := goidBufs.Get().(*[64]byte) // runtime.Stack's buffer escapes: reused, not allocated per call
	defer goidBufs.Put(buf)
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, ch := range b[len(prefix):] {
		if ch < '0' || ch > '9' {
			break
		}
		id = id*10 + uint64(ch-'0')
	}
	return id
}
