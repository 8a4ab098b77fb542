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
func (c *Ctx) enterBusy() {
	p := (*uint32)(unsafe.Pointer(&c.busy))
	storeRelease32(p, uint32(c.busy.Load()+1))
}

func (c *Ctx) leaveBusy() {
	p := (*uint32)(unsafe.Pointer(&c.busy))
	storeRelease32(p, uint32(c.busy.Load()-1))
}
