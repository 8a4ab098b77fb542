//go:build linux

package pinning

import (
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPinCurrentThread pins a locked goroutine's thread to each allowed CPU
// in turn and reads the mask back with unix.SchedGetaffinity, then
// restores it.
func TestPinCurrentThread(t *testing.T) {
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := ThreadCPUs()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := setaffinity(before); err != nil {
			t.Fatalf("restoring the thread's mask: %v", err)
		}
	}()
	for _, cpu := range allowed.CPUs() {
		if err := PinCurrentThread(cpu); err != nil {
			t.Fatalf("PinCurrentThread(%d): %v", cpu, err)
		}
		var u unix.CPUSet
		if err := unix.SchedGetaffinity(0, &u); err != nil {
			t.Fatal(err)
		}
		if u.Count() != 1 || !u.IsSet(cpu) {
			t.Fatalf("after pinning to CPU %d the thread's mask has %d CPUs", cpu, u.Count())
		}
		mine, err := ThreadCPUs()
		if err != nil || mine.String() != FromUnix(&u).String() {
			t.Fatalf("ThreadCPUs = %v (%v), SchedGetaffinity = %v", mine, err, FromUnix(&u))
		}
		// The process's allowed set is unchanged by pinning a thread.
		if again, _ := AllowedCPUs(); !again.Equal(allowed) {
			t.Fatalf("AllowedCPUs changed from %v to %v by pinning a thread", allowed, again)
		}
	}
	// CPUs outside the allowed set, including IDs beyond 1024 bits.
	for _, cpu := range []int{allowed.Max() + 1, 1024, 5000, MaxCPUID + 1, -1} {
		if allowed.Has(cpu) {
			continue
		}
		if err := PinCurrentThread(cpu); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("PinCurrentThread(%d) = %v, want ErrNotAllowed", cpu, err)
		}
	}
	var bad CPUSet
	bad.Add(5000)
	if err := PinCurrentThreadTo(bad); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("PinCurrentThreadTo(5000) = %v", err)
	}
	if err := PinCurrentThreadTo(CPUSet{}); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("PinCurrentThreadTo(empty) = %v", err)
	}
	if err := PinCurrentThreadTo(allowed); err != nil {
		t.Errorf("PinCurrentThreadTo(allowed) = %v", err)
	}
}

func TestLockAndPin(t *testing.T) {
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := allowed.Max()
	done := make(chan error)
	go func() {
		unpin, err := LockAndPin(cpu)
		if err != nil {
			done <- err
			return
		}
		mine, _ := ThreadCPUs()
		if mine.Count() != 1 || !mine.Has(cpu) {
			t.Errorf("pinned mask %v, want %d", mine, cpu)
		}
		if err := unpin(); err != nil {
			done <- err
			return
		}
		if err := unpin(); err != nil { // idempotent
			done <- err
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := LockAndPin(-1); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("LockAndPin(-1) = %v", err)
	}
}

// TestPinnerHook runs the worker-start hook the way a scheduler worker
// would: on a fresh goroutine that then keeps its thread.
func TestPinnerHook(t *testing.T) {
	topo := Discover()
	plan := Plan(topo, 2)
	p := NewPinner(plan)
	for i := range 2 {
		res := make(chan CPUSet)
		go func() {
			p.OnWorkerStart(i)
			m, _ := ThreadCPUs()
			res <- m
			// The goroutine exits locked: its pinned thread exits too.
		}()
		if m := <-res; m.Count() != 1 || !m.Has(plan[i]) {
			t.Fatalf("worker %d mask %v, want %d", i, m, plan[i])
		}
	}
	if p.Pinned() != 2 || p.Err() != nil {
		t.Fatalf("Pinned %d, Err %v", p.Pinned(), p.Err())
	}
	bad := NewPinner([]int{MaxCPUID})
	res := make(chan struct{})
	go func() { bad.OnWorkerStart(0); res <- struct{}{} }()
	<-res
	if bad.Pinned() != 0 || !errors.Is(bad.Err(), ErrNotAllowed) {
		t.Fatalf("bad plan: pinned %d, err %v", bad.Pinned(), bad.Err())
	}
}

// TestToUnix: a fixed 1024-bit mask cannot hold CPU 2047: refused, not
// truncated.
func TestToUnix(t *testing.T) {
	big, _ := ParseCPUList("0,1000-1100,2047")
	if _, err := big.ToUnix(); !errors.Is(err, ErrCPUSetTooLarge) {
		t.Fatalf("ToUnix of a set with CPU 2047: %v, want ErrCPUSetTooLarge", err)
	}
	small, _ := ParseCPUList("0-3,1023")
	u, err := small.ToUnix()
	if err != nil || u.Count() != 5 || !FromUnix(&u).Equal(small) {
		t.Fatalf("ToUnix/FromUnix of %v: %v", small, err)
	}
}
