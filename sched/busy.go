package sched

import (
	"sync/atomic"
	"unsafe"
)

// enterBusy and leaveBusy mark the owner inside an entry point that may
// run tasks (Wait, WaitEvent, RunPinned, RunOne): busy, which
// Close and the back-pressure dead-end check read (quiescentExcept). Only
// the owner writes busy, so a plain store suffices (storeRelease32; atomic
// under the race detector and off amd64). Rejected: a locked add, two
// locked instructions per Wait, a call that a kernel spawning and waiting
// for children makes once per child. Readers load busy
// atomically; the owner's next locked instruction (the fence of the
// deque pop it makes before it runs anything) publishes the store, and
// both readers confirm what they see over a while anyway.
//
// On a registered thread the outermost entry also records the calling
// goroutine's g (busyG), so that a call without a Ctx made by a kernel it
// runs (Scheduler.Close, Scheduler.Wait) finds this thread even when the
// Ctx was handed to a goroutine other than the one that registered it
// (callerCtx goes by the registering goroutine otherwise): Close from
// such a kernel waited for its own thread for ever, and a Wait there ran
// nothing.
func (c *Ctx) enterBusy() {
	p := (*uint32)(unsafe.Pointer(&c.busy))
	b := c.busy.Load()
	if b == 0 && !c.worker {
		storeRelease64(&c.busyG, int64(getg()))
	}
	storeRelease32(p, uint32(b+1))
}

func (c *Ctx) leaveBusy() {
	p := (*uint32)(unsafe.Pointer(&c.busy))
	b := c.busy.Load() - 1
	if b == 0 && !c.worker {
		storeRelease64(&c.busyG, 0)
	}
	storeRelease32(p, uint32(b))
}

// A kernel run in place (RunInPlace, Join, JoinTasks) on a registered
// thread with no task's kernel running there (the program's own thread
// splitting its work) runs with c.running 0, outside any entry above:
// Close from it would see no kernel, close the scheduler under it and
// return. So the outermost such call records the calling goroutine's g
// (inPlaceG) for its whole length, and Close fails from that goroutine
// with ErrCloseInKernel; callerCtx finds the thread by it too, whichever
// goroutine registered it, as it does by busyG.
//
// Only that outermost call pays (inPlaceOuter is true there: a call and
// two plain stores, with a deferred call to clear the mark however the
// call ends, a panic or runtime.Goexit included: a stale g could be
// another goroutine's later). Other calls pay the loads of inPlaceOuter
// only, and a Join nested in another in-place call not even those: it
// tests the in-place stack's depths, which it loads anyway (a kernel runs
// in place only above a slot or record of that stack, so depths of 0
// mean that none does). Rejected: marking busy (enterBusy) instead, which
// would make Close from another goroutine wait for the in-place kernel
// (busy threads are not idle), a change of what Close waits for; and
// telling the kernel by the in-place stack's depth (inPlaceKernel), which
// the registering goroutine cannot read while another goroutine uses
// its Ctx.

// inPlaceOuter reports whether an in-place call on c is the outermost on
// a registered thread with no task's kernel running (see above). Owner
// only.
func (c *Ctx) inPlaceOuter() bool {
	return c.inPlaceG == 0 && !c.worker && c.running == 0
}

// enterInPlace marks the calling goroutine as running c's outermost
// in-place call; leaveInPlace clears the mark. Where getg cannot be read
// the mark is 1: callerCtx then goes by goroutine ID and finds only the
// registering goroutine, which inPlaceBy takes for the marker.
func (c *Ctx) enterInPlace() {
	g := int64(getg())
	if g == 0 {
		g = 1
	}
	storeRelease64(&c.inPlaceG, g)
}

func (c *Ctx) leaveInPlace() { storeRelease64(&c.inPlaceG, 0) }

// inPlaceBy reports whether the goroutine whose g is me (0: unknown, off
// amd64) is inside c's outermost in-place call: a kernel runs there.
func (c *Ctx) inPlaceBy(me uintptr) bool {
	m := uintptr(atomic.LoadInt64(&c.inPlaceG))
	return m != 0 && (m == me || me == 0)
}
