package pinning

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Errors of the pinning functions (wrapped; test with errors.Is).
var (
	// ErrNotAllowed: the CPU is not in the process's allowed set.
	ErrNotAllowed = errors.New("CPU not in the process's allowed set")
	// ErrUnsupported: this OS offers no thread affinity to this package.
	ErrUnsupported = errors.New("thread pinning not supported on this OS")
	// ErrCPUSetTooLarge: a set holds a CPU ID that a fixed-size mask
	// (unix.CPUSet, 1024 bits) cannot represent.
	ErrCPUSetTooLarge = errors.New("CPU ID beyond the mask's size")
)

// LockAndPin locks the calling goroutine to its OS thread
// (runtime.LockOSThread) and pins that thread to cpu. The returned unpin
// restores the thread's previous mask and then unlocks the goroutine; call
// it on the same goroutine, once. If restoring fails, unpin leaves the
// goroutine locked (so the pinned thread dies with the goroutine instead of
// running other goroutines) and returns the error. On error LockAndPin
// unlocks again and pins nothing.
//
// Use it for registered scheduler threads (main, render) that want a CPU
// of their own; workers are pinned through a scheduler hook (Pinner).
func LockAndPin(cpu int) (unpin func() error, err error) {
	runtime.LockOSThread()
	old, err := ThreadCPUs()
	if err == nil {
		err = PinCurrentThread(cpu)
	}
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	var once sync.Once
	return func() error {
		var uerr error
		once.Do(func() {
			if uerr = setaffinity(old); uerr == nil {
				runtime.UnlockOSThread()
			}
		})
		return uerr
	}, nil
}

// Pinner pins scheduler worker threads according to a plan (see Plan).
// Pinning is off unless a program creates a Pinner and installs its
// OnWorkerStart as the scheduler's worker-start hook. The hook runs on
// each goroutine that serves a worker, before it runs any task (a worker
// may be served by several over its life, one at a time: see
// sched.Config.OnWorkerStart): it locks the goroutine to its OS thread for
// the goroutine's whole life (runtime.LockOSThread, never undone, so when
// the goroutine exits, at Scheduler.Close at the latest, its pinned thread
// exits too) and pins the thread to plan[index % len(plan)], the worker's
// CPU. Failures do not stop the worker (it runs unpinned); they are
// collected in Err.
// A Pinner is safe for concurrent use.
type Pinner struct {
	plan   []int
	pinned atomic.Int32
	mu     sync.Mutex
	errs   []error
}

// NewPinner returns a Pinner for plan (copied). An empty plan pins nothing.
func NewPinner(plan []int) *Pinner {
	return &Pinner{plan: append([]int(nil), plan...)}
}

// OnWorkerStart pins the calling worker thread: see Pinner. index is the
// worker's index (sched.Ctx.Index).
func (p *Pinner) OnWorkerStart(index int) {
	if len(p.plan) == 0 || index < 0 {
		return
	}
	runtime.LockOSThread()
	cpu := p.plan[index%len(p.plan)]
	if err := PinCurrentThread(cpu); err != nil {
		p.mu.Lock()
		p.errs = append(p.errs, fmt.Errorf("worker %d: %w", index, err))
		p.mu.Unlock()
		return
	}
	p.pinned.Add(1)
}

// Pinned returns how many worker goroutines were pinned: at least one per
// worker once each has started, more where waits handed workers to other
// goroutines.
func (p *Pinner) Pinned() int { return int(p.pinned.Load()) }

// Err returns the joined errors of workers that could not be pinned.
func (p *Pinner) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.errs...)
}
