package sched

import "unsafe"

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
