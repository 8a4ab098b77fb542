//go:build linux && amd64 && !race

package sched

import "syscall"

// processFence makes every running thread of the process execute a full
// memory barrier before it returns (membarrier(2),
// MEMBARRIER_CMD_PRIVATE_EXPEDITED): a store that a thread made before
// that point is visible to the caller afterwards, and a load the thread
// makes after it sees what the caller stored before the call. A thread
// that is not running gets the same from its next context switch. It lets
// the owner of a thread's slot cache announce itself with plain
// stores (see slotCache): the taker, on its slow path, pays for the fence
// the owner leaves out. About a microsecond.
func processFence() {
	syscall.Syscall(sysMembarrier, membarrierPrivateExpedited, 0, 0)
}

// haveProcessFence is whether processFence works here: the kernel has the
// command (Linux 4.14 and later) and lets this process register for it (a
// sandbox may refuse the system call). Without it the owner stores with a
// locked instruction instead.
var haveProcessFence = registerProcessFence()

const (
	sysMembarrier                      = 324 // amd64
	membarrierQuery                    = 0
	membarrierPrivateExpedited         = 1 << 3
	membarrierRegisterPrivateExpedited = 1 << 4
)

func registerProcessFence() bool {
	cmds, _, errno := syscall.Syscall(sysMembarrier, membarrierQuery, 0, 0)
	if errno != 0 || cmds&membarrierPrivateExpedited == 0 {
		return false
	}
	_, _, errno = syscall.Syscall(sysMembarrier, membarrierRegisterPrivateExpedited, 0, 0)
	return errno == 0
}
