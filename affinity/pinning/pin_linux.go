//go:build linux

package pinning

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxMaskWords bounds how long a mask getaffinity offers the kernel
// (MaxCPUID+1 bits).
const maxMaskWords = (MaxCPUID + 1) / wordBits

var allowedMu sync.Mutex

// getaffinity returns the affinity mask of thread tid (0: the calling
// thread). It starts with 1024 bits (unix.CPUSet's size) and doubles the
// buffer while the kernel answers EINVAL, which it does when the buffer is
// shorter than its own mask (machines with more than 1024 possible CPUs).
func getaffinity(tid int) (CPUSet, error) {
	for words := 1024 / wordBits; words <= maxMaskWords; words *= 2 {
		buf := make([]uint, words)
		r, _, e := unix.RawSyscall(unix.SYS_SCHED_GETAFFINITY, uintptr(tid),
			uintptr(words)*unsafe.Sizeof(uint(0)), uintptr(unsafe.Pointer(&buf[0])))
		if e == 0 {
			n := (int(r) + int(unsafe.Sizeof(uint(0))) - 1) / int(unsafe.Sizeof(uint(0)))
			return CPUSet{w: buf[:min(n, words)]}, nil
		}
		if e != unix.EINVAL {
			return CPUSet{}, fmt.Errorf("pinning: sched_getaffinity(%d): %w", tid, e)
		}
	}
	return CPUSet{}, fmt.Errorf("pinning: sched_getaffinity(%d): kernel mask longer than %d bits", tid, MaxCPUID+1)
}

// setaffinity sets the calling thread's mask (tid 0) to s.
func setaffinity(s CPUSet) error {
	w := s.words(1024 / wordBits)
	_, _, e := unix.RawSyscall(unix.SYS_SCHED_SETAFFINITY, 0,
		uintptr(len(w))*unsafe.Sizeof(uint(0)), uintptr(unsafe.Pointer(&w[0])))
	if e != 0 {
		return fmt.Errorf("pinning: sched_setaffinity(%s): %w", s, e)
	}
	return nil
}

// startMask is the process's affinity mask at start-up, read during
// package initialisation, which the Go runtime runs on the main thread
// before any goroutine could pin it.
var startMask, startErr = getaffinity(0)

// AllowedCPUs returns the process's allowed CPU set: its affinity mask at
// start-up, which reflects taskset, cgroup cpusets and container limits
// (not 0..NumCPU-1). Pinning threads does not change it. It is read once,
// during package initialisation; RefreshAllowedCPUs reads it again after
// the container's CPU set changed. The result is a copy.
func AllowedCPUs() (CPUSet, error) {
	allowedMu.Lock()
	defer allowedMu.Unlock()
	return startMask.Clone(), startErr
}

// RefreshAllowedCPUs re-reads the allowed set (after the container's CPU
// set changed) and returns it: the union of the masks of the process's
// threads (/proc/self/task). No single thread's mask will do, the main
// thread's included: a Pinner's hook runs on whatever thread the Go
// runtime gives a worker's goroutine, the main thread too, and leaves it
// pinned. Threads pinned by this package hold subsets of the allowed set,
// and the runtime's own threads (sysmon, the template thread that starts
// threads for locked goroutines) never run goroutines, so are never
// pinned: the union is the allowed set. Without /proc it reads the main
// thread's mask (sched_getaffinity on the process ID), which a pinned
// main thread makes too small.
func RefreshAllowedCPUs() (CPUSet, error) {
	s, err := threadsMask()
	if err != nil {
		if s, err = getaffinity(unix.Getpid()); err != nil {
			return CPUSet{}, err
		}
	}
	allowedMu.Lock()
	startMask, startErr = s, nil
	allowedMu.Unlock()
	return s.Clone(), nil
}

// threadsMask returns the union of the affinity masks of the process's
// threads. A thread that exits while it is read is skipped.
func threadsMask() (CPUSet, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return CPUSet{}, err
	}
	var u CPUSet
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		m, err := getaffinity(tid)
		if err != nil {
			continue // exited meanwhile (ESRCH)
		}
		for len(u.w) < len(m.w) {
			u.w = append(u.w, 0)
		}
		for i, w := range m.w {
			u.w[i] |= w
		}
	}
	if u.Count() == 0 {
		return CPUSet{}, fmt.Errorf("pinning: no thread's affinity mask readable in /proc/self/task")
	}
	return u, nil
}

// ThreadCPUs returns the calling thread's affinity mask. Meaningful only on
// a goroutine locked with runtime.LockOSThread: otherwise the goroutine
// may move to another thread right after the call.
func ThreadCPUs() (CPUSet, error) { return getaffinity(0) }

// PinCurrentThread restricts the calling OS thread to logical CPU cpu.
//
// Call it only from a goroutine locked with runtime.LockOSThread, and keep
// it locked while pinned: pinning acts on the OS thread, not the goroutine.
// An unlocked goroutine can move to another thread right after the call,
// and the pinned thread then runs arbitrary other goroutines on one CPU,
// fighting Go's own scheduler. (LockAndPin does the locking.) A goroutine
// that exits while locked takes its thread with it, so a pinned worker
// never leaks its mask to other goroutines.
//
// It fails (ErrNotAllowed) when cpu is not in the process's allowed set
// (AllowedCPUs), whatever the machine's CPU count; CPU IDs beyond 1024 are
// handled (the mask is as long as the ID needs).
func PinCurrentThread(cpu int) error {
	if cpu < 0 || cpu > MaxCPUID {
		return fmt.Errorf("pinning: pin to CPU %d: %w (IDs are 0..%d)", cpu, ErrNotAllowed, MaxCPUID)
	}
	allowed, err := AllowedCPUs()
	if err != nil {
		return err
	}
	if !allowed.Has(cpu) {
		return fmt.Errorf("pinning: pin to CPU %d: %w (allowed: %s)", cpu, ErrNotAllowed, allowed)
	}
	var s CPUSet
	s.Add(cpu)
	return setaffinity(s)
}

// PinCurrentThreadTo restricts the calling OS thread to the CPUs of set
// (for example a core's SMT siblings). Same rules as PinCurrentThread;
// every CPU of set must be allowed.
func PinCurrentThreadTo(set CPUSet) error {
	if set.Count() == 0 {
		return fmt.Errorf("pinning: pin to an empty CPU set: %w", ErrNotAllowed)
	}
	allowed, err := AllowedCPUs()
	if err != nil {
		return err
	}
	if !set.And(allowed).Equal(set) {
		return fmt.Errorf("pinning: pin to CPUs %s: %w (allowed: %s)", set, ErrNotAllowed, allowed)
	}
	return setaffinity(set)
}

// ToUnix converts s to a unix.CPUSet. unix.CPUSet holds CPU IDs below 1024
// only: for a set with a larger ID it returns an error instead of silently
// dropping it (unix.CPUSet.Set ignores such IDs).
func (s CPUSet) ToUnix() (unix.CPUSet, error) {
	var u unix.CPUSet
	if m := s.Max(); m >= len(u)*64 {
		return u, fmt.Errorf("pinning: CPU %d does not fit unix.CPUSet (%d bits): %w", m, len(u)*64, ErrCPUSetTooLarge)
	}
	for _, c := range s.CPUs() {
		u.Set(c)
	}
	return u, nil
}

// FromUnix converts a unix.CPUSet.
func FromUnix(u *unix.CPUSet) CPUSet {
	var s CPUSet
	for c := 0; c < len(u)*64; c++ {
		if u.IsSet(c) {
			s.Add(c)
		}
	}
	return s
}
