//go:build windows && amd64 && !race

package sched

import "syscall"

// processFence makes every processor that runs a thread of the process
// flush its write queue before it returns (FlushProcessWriteBuffers, the
// asymmetric fence that .NET's garbage collector and folly's
// asymmetricHeavyBarrier use on Windows): the same guarantee as
// membarrier's PRIVATE_EXPEDITED on Linux (fence_linux_amd64.go), which
// lets the owner of a thread's slot cache announce itself with plain
// stores (see slotCache) while the taker, on its slow path, pays for the
// fence.
func processFence() {
	flushProcessWriteBuffers.Call()
}

var flushProcessWriteBuffers = syscall.NewLazyDLL("kernel32.dll").NewProc("FlushProcessWriteBuffers")

// haveProcessFence is whether kernel32 has FlushProcessWriteBuffers (every
// Windows since Vista); without it the owner stores with a locked
// instruction instead.
var haveProcessFence = flushProcessWriteBuffers.Find() == nil
