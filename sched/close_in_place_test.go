package sched

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// Kernels of the tests below.
const (
	kInPlaceCloser KernelID = 1 // calls Scheduler.Close
	kInPlaceNop    KernelID = 2
	kInPlacePanic  KernelID = 3
	kInPlaceGoexit KernelID = 4
)

// inPlaceCloseSched makes a scheduler whose closer kernel sends what
// Scheduler.Close returned, called from the kernel, to closeErr.
func inPlaceCloseSched(t *testing.T, closeErr chan<- error) *Scheduler {
	t.Helper()
	var s *Scheduler
	reg := NewRegistry()
	must(t, reg.Register(kInPlaceCloser, Kernel{Name: "closer", CPU: func(*Ctx, *TaskData) error {
		closeErr <- s.Close()
		return nil
	}}))
	must(t, reg.Register(kInPlaceNop, Kernel{Name: "nop", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kInPlacePanic, Kernel{Name: "panic", CPU: func(*Ctx, *TaskData) error { panic("kernel bug") }}))
	must(t, reg.Register(kInPlaceGoexit, Kernel{Name: "goexit", CPU: func(*Ctx, *TaskData) error {
		runtime.Goexit()
		return nil
	}}))
	var err error
	s, err = New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	return s
}

// inPlaceCloseCall runs, through registered thread m, a call (how) whose
// closer kernel runs in place (or, for "Wait", as a task pinned to m).
func inPlaceCloseCall(m *Ctx, how string) error {
	switch how {
	case "Join b":
		return m.Join(&Call{Kernel: kInPlaceNop}, &Call{Kernel: kInPlaceCloser})
	case "Join a":
		// a may be stolen by the worker: Close then runs in a task
		// there, and fails as well.
		return m.Join(&Call{Kernel: kInPlaceCloser}, &Call{Kernel: kInPlaceNop})
	case "RunInPlace":
		return m.RunInPlace(&Task{Kernel: kInPlaceCloser})
	case "JoinTasks":
		return m.JoinTasks(&Task{Kernel: kInPlaceNop}, &Task{Kernel: kInPlaceCloser})
	case "Wait":
		id, err := m.Add(&Task{Kernel: kInPlaceCloser, Affinity: OnThread(0)})
		if err != nil {
			return err
		}
		return m.Wait(id)
	}
	panic("unknown call " + how)
}

var inPlaceCloseCalls = []string{"Join b", "Join a", "RunInPlace", "JoinTasks", "Wait"}

// checkCloseFromInPlaceKernel runs one call whose kernel calls Close, on
// registered thread m from the goroutine that registered it (handed
// false) or from another one it handed the Ctx to: Close fails with
// ErrCloseInKernel and closes nothing (an Add from outside still
// succeeds); once the call returned, Close from that same goroutine
// closes (no mark is left behind).
func checkCloseFromInPlaceKernel(t *testing.T, how string, handed bool) {
	closeErr := make(chan error, 2)
	s := inPlaceCloseSched(t, closeErr)
	type result struct{ call, after, close error }
	done := make(chan result, 1)
	var m *Ctx
	if handed {
		var err error
		m, err = s.RegisterThread("main")
		must(t, err)
	}
	go func() {
		var r result
		if !handed {
			if m, r.call = s.RegisterThread("main"); r.call != nil {
				done <- r
				return
			}
		}
		r.call = inPlaceCloseCall(m, how)
		// The scheduler is still open: an Add from outside succeeds.
		id, err := s.Add(&Task{Kernel: kInPlaceNop})
		if err == nil {
			err = s.Wait(id)
		}
		r.after = err
		r.close = s.Close()
		done <- r
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10s", how)
	}
	if r.call != nil {
		t.Errorf("%s: the call failed: %v", how, r.call)
	}
	select {
	case err := <-closeErr:
		t.Logf("%s: Close from the kernel: %v", how, err)
		if !errors.Is(err, ErrCloseInKernel) {
			t.Errorf("%s: Close from the kernel returned %v, want ErrCloseInKernel", how, err)
		}
	default:
		t.Errorf("%s: the closer kernel did not run", how)
	}
	if r.after != nil {
		t.Errorf("%s: an Add after the refused Close: %v (the scheduler was closed under the kernel)", how, r.after)
	}
	if r.close != nil {
		t.Errorf("%s: Close after the call, from the same goroutine: %v", how, r.close)
	}
	if g := atomic.LoadInt64(&m.inPlaceG); g != 0 {
		t.Errorf("%s: the thread's in-place mark is left set (%#x)", how, g)
	}
}

// TestCloseFromInPlaceCallOnHandedRegisteredThread: a registered thread's
// Ctx handed to another goroutine, which runs a kernel in place (either
// half of a Join, RunInPlace, JoinTasks) or in a Wait, that calls
// Scheduler.Close: Close fails with ErrCloseInKernel and closes nothing.
func TestCloseFromInPlaceCallOnHandedRegisteredThread(t *testing.T) {
	for _, how := range inPlaceCloseCalls {
		checkCloseFromInPlaceKernel(t, how, true)
	}
}

// TestCloseFromInPlaceCallOnRegisteringGoroutine: the same calls made by
// the goroutine that registered the thread.
func TestCloseFromInPlaceCallOnRegisteringGoroutine(t *testing.T) {
	for _, how := range inPlaceCloseCalls {
		checkCloseFromInPlaceKernel(t, how, false)
	}
}

// TestInPlaceMarkClearedWhenKernelPanicsOrExits: the mark that tells
// Close of a kernel run in place is gone once the outermost call ends by
// a kernel's panic, or by runtime.Goexit unwinding the goroutine (a
// stale g could later be another goroutine's), and Close then closes.
func TestInPlaceMarkClearedWhenKernelPanicsOrExits(t *testing.T) {
	for _, kid := range []KernelID{kInPlacePanic, kInPlaceGoexit} {
		for _, how := range []string{"RunInPlace", "Join", "JoinTasks"} {
			s := inPlaceCloseSched(t, make(chan error, 1))
			m, err := s.RegisterThread("main")
			must(t, err)
			errc := make(chan error, 1)
			go func() {
				defer close(errc)
				switch how {
				case "RunInPlace":
					errc <- m.RunInPlace(&Task{Kernel: kid})
				case "Join":
					errc <- m.Join(&Call{Kernel: kInPlaceNop}, &Call{Kernel: kid})
				case "JoinTasks":
					errc <- m.JoinTasks(&Task{Kernel: kInPlaceNop}, &Task{Kernel: kid})
				}
			}()
			within(t, 10*time.Second, how, func() {
				err := <-errc
				if kid == kInPlacePanic && !errors.Is(err, ErrKernelPanic) {
					t.Errorf("%s of a panicking kernel: %v, want ErrKernelPanic", how, err)
				}
			})
			if g := atomic.LoadInt64(&m.inPlaceG); g != 0 {
				t.Errorf("%s, kernel %d: the in-place mark is left set (%#x)", how, kid, g)
			}
			within(t, 10*time.Second, "Close", func() { must(t, s.Close()) })
		}
	}
}

// TestRaceCheckerNotStoredByAddAfterClose: an Add that passed the closed
// check before Close began and records its task in the race checker
// only after Close ended (forced by a hook) neither puts the closed
// scheduler's checker back in the global table nor replaces the checker
// of the tag's next owner there; the task fails with ErrClosed.
func TestRaceCheckerNotStoredByAddAfterClose(t *testing.T) {
	for _, nextOwner := range []bool{false, true} {
		reg := NewRegistry()
		must(t, reg.Register(kRvCopy, Kernel{Name: "copy", Kind: Streaming,
			Out: []StreamSpec{{Name: "dst", Rate: Whole}}, CPU: func(*Ctx, *TaskData) error { return nil }}))
		s, err := New(Config{Workers: 1, Kernels: reg, CheckRaces: true})
		must(t, err)
		entered, release := make(chan struct{}), make(chan struct{})
		hook := func(hs *Scheduler) {
			if hs == s {
				close(entered)
				<-release
			}
		}
		raceAddHook.Store(&hook)
		type result struct {
			id  TaskID
			err error
		}
		added := make(chan result, 1)
		go func() {
			id, err := s.Add(cp(nil, make([]byte, 64), NoTask))
			added <- result{id, err}
		}()
		within(t, 10*time.Second, "the Add reaching the race check", func() { <-entered })
		within(t, 10*time.Second, "Close", func() { must(t, s.Close()) })
		p := &raceCheckers[s.id]
		if r := p.Load(); r != nil && r.s == s {
			t.Fatal("the checker is in the table after Close")
		}
		var next *raceChecker
		if nextOwner {
			// The tag's next owner, with its checker made.
			other, err := New(Config{Workers: 1, Kernels: NewRegistry()})
			must(t, err)
			defer other.Close()
			next = newRaceChecker(other)
			p.Store(next)
		}
		close(release)
		var res result
		within(t, 10*time.Second, "the Add", func() { res = <-added })
		raceAddHook.Store(nil)
		if res.err == nil {
			within(t, 10*time.Second, "Wait", func() { res.err = s.Wait(res.id) })
		}
		t.Logf("next owner %v: the Add after Close: %v", nextOwner, res.err)
		if !errors.Is(res.err, ErrClosed) {
			t.Errorf("next owner %v: the task added as Close ended: %v, want ErrClosed", nextOwner, res.err)
		}
		r := p.Load()
		switch {
		case nextOwner && r != next:
			t.Errorf("the late Add replaced the next owner's checker in the table (now %p, the closed scheduler's: %v)", r, r != nil && r.s == s)
		case !nextOwner && r != nil:
			t.Errorf("the late Add put a checker in the table (the closed scheduler's: %v)", r.s == s)
		}
		p.CompareAndSwap(r, nil)
	}
}
