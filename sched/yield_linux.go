package sched

import "syscall"

// osYield gives the CPU to another runnable OS thread, if there is one
// (sched_yield), and returns at once otherwise. It does not yield the Go
// P: the goroutine stays on its thread (see spinPause). A raw system call,
// as the runtime's own osyield: it never blocks.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
