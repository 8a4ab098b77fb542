//go:build linux

package pinning

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"golang.org/x/sys/unix"
)

// within runs f on its own goroutine and fails the test if it has not
// returned after d: a hang becomes a failure, not a stuck test binary.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestPlanOfHandBuiltTopology: Topology's fields are exported, and a
// program reserving a core for its render thread drops it from Cores (or
// builds a topology with CPUs only). Plan must give a plan over the cores
// it is given, never loop.
func TestPlanOfHandBuiltTopology(t *testing.T) {
	sys := fstest.MapFS{"online": {Data: []byte("0-3")}}
	for cpu, sib := range []string{"0,2", "1,3", "0,2", "1,3"} {
		sys[fmt.Sprintf("cpu%d/topology/thread_siblings_list", cpu)] = &fstest.MapFile{Data: []byte(sib)}
	}
	topo := DiscoverFS(sys, CPUSet{})
	// Reserve core 0 (CPUs 0 and 2) for the render thread.
	reserved := *topo
	reserved.Cores = topo.Cores[1:]
	var plan []int
	within(t, 5*time.Second, "Plan of a topology with a core removed", func() { plan = Plan(&reserved, 3) })
	for _, cpu := range plan {
		if cpu != 1 && cpu != 3 {
			t.Fatalf("Plan with core 0 reserved = %v: uses a reserved CPU", plan)
		}
	}
	if len(plan) != 3 {
		t.Fatalf("Plan(_, 3) = %v: want 3 CPUs", plan)
	}
	// CPUs only, no cores: each CPU counts as its own core.
	only := &Topology{CPUs: []CPU{{ID: 4}, {ID: 6}}}
	within(t, 5*time.Second, "Plan of a topology without cores", func() { plan = Plan(only, 0) })
	if !reflect.DeepEqual(plan, []int{4, 6}) {
		t.Fatalf("Plan of CPUs 4, 6 without cores = %v, want [4 6]", plan)
	}
}

// TestPlanShapes: zero, negative and more workers than CPUs.
func TestPlanShapes(t *testing.T) {
	topo := DiscoverFS(fstest.MapFS{"online": {Data: []byte("2,5,7")}}, CPUSet{})
	for _, c := range []struct {
		workers int
		want    []int
	}{
		{0, []int{2, 5, 7}},
		{-5, []int{2, 5, 7}},
		{1, []int{2}},
		{7, []int{2, 5, 7, 2, 5, 7, 2}},
	} {
		if got := Plan(topo, c.workers); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Plan(%d workers) = %v, want %v", c.workers, got, c.want)
		}
	}
	if got := Plan(nil, 4); got != nil {
		t.Errorf("Plan(nil) = %v", got)
	}
	if got := Plan(&Topology{}, 4); got != nil {
		t.Errorf("Plan(empty) = %v", got)
	}
}

// TestRefreshAllowedCPUsAfterPinnerOnMainThread: a Pinner's hook runs on
// whatever OS thread the Go runtime gives the worker's goroutine, the
// process's main thread included, and leaves that thread pinned (it is
// never unlocked). The program never pinned the main thread itself, so
// RefreshAllowedCPUs must still return the process's allowed set, and
// pinning to any allowed CPU must still work.
func TestRefreshAllowedCPUsAfterPinnerOnMainThread(t *testing.T) {
	if !pinSupported {
		t.Skip("no thread affinity on this OS")
	}
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if allowed.Count() < 2 {
		t.Skip("one allowed CPU: a pinned thread's mask is the allowed set")
	}
	t.Cleanup(func() { restoreMainThread(t, allowed) })
	p := NewPinner([]int{allowed.Max()})
	onMain := false
	for i := 0; i < 1000 && !onMain; i++ {
		ch := make(chan bool)
		go func() {
			p.OnWorkerStart(0) // locked for the goroutine's life, as under sched
			ch <- onMainThread()
		}()
		onMain = <-ch
		runtime.Gosched()
	}
	if !onMain {
		t.Skip("no worker goroutine ran on the main thread")
	}
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	got, err := RefreshAllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(allowed) {
		t.Fatalf("RefreshAllowedCPUs = %v after a worker pinned the main thread; the allowed set is %v", got, allowed)
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		old, err := ThreadCPUs()
		if err == nil {
			err = PinCurrentThread(allowed.CPUs()[0])
			if rerr := setaffinity(old); err == nil {
				err = rerr
			}
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("pinning to allowed CPU %d after the refresh: %v", allowed.CPUs()[0], err)
	}
}

// TestParseCPUListShapes: what the kernel writes, and what it never does.
func TestParseCPUListShapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\n", ""},
		{"0-0", "0"},
		{" 1 - 3 ", "1-3"},
		{"4194303", "4194303"},
		{"3,3,3", "3"},
		{"0-5,2-3", "0-5"},
	} {
		s, err := ParseCPUList(c.in)
		if err != nil || s.String() != c.want {
			t.Errorf("ParseCPUList(%q) = %q, %v; want %q", c.in, s, err, c.want)
		}
	}
	for _, bad := range []string{",", "0,", "1-2-3", "4194304", "0-4194304", "a-b", "--1", "0x3"} {
		s, err := ParseCPUList(bad)
		if err == nil {
			t.Errorf("ParseCPUList(%q) accepted: %v", bad, s)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("ParseCPUList(%q): error %q does not quote the list", bad, err)
		}
	}
}

// TestCPUSetLargeAndEdges: sets past unix.CPUSet's 1024 bits, empty
// sets, removal of absent and negative IDs.
func TestCPUSetLargeAndEdges(t *testing.T) {
	var s CPUSet
	s.Remove(-1)
	s.Remove(1 << 20)
	if s.Count() != 0 || s.String() != "" || len(s.CPUs()) != 0 {
		t.Fatalf("empty set after removals: %v", s)
	}
	s.Add(MaxCPUID)
	if s.Max() != MaxCPUID || s.Count() != 1 {
		t.Fatalf("set with MaxCPUID: max %d count %d", s.Max(), s.Count())
	}
	if _, err := s.ToUnix(); !errors.Is(err, ErrCPUSetTooLarge) {
		t.Fatalf("ToUnix of CPU %d: %v", MaxCPUID, err)
	}
	s.Remove(MaxCPUID)
	if s.Max() != -1 || !s.Equal(CPUSet{}) {
		t.Fatalf("set after removing its only CPU: max %d, equal to empty %v", s.Max(), s.Equal(CPUSet{}))
	}
	if u, err := s.ToUnix(); err != nil || u.Count() != 0 {
		t.Fatalf("ToUnix of an empty set: %v, %d CPUs", err, u.Count())
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "4194304") {
			t.Fatalf("Add(MaxCPUID+1): recover %v", r)
		}
	}()
	s.Add(MaxCPUID + 1)
}

// TestPinErrorsNameTheCPU: errors for CPUs beyond the machine name the
// CPU and the allowed set.
func TestPinErrorsNameTheCPU(t *testing.T) {
	if !pinSupported {
		t.Skip("no thread affinity on this OS")
	}
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 4)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- PinCurrentThread(4000)
		var s CPUSet
		s.Add(allowed.Max())
		s.Add(4000)
		errc <- PinCurrentThreadTo(s)
		_, err := LockAndPin(-3)
		errc <- err
		mine, err := ThreadCPUs()
		if err == nil && !mine.Equal(allowed) {
			err = fmt.Errorf("thread mask %v after refused pins, want %v", mine, allowed)
		}
		errc <- err
	}()
	for i, want := range []string{"CPU 4000", "4000", "CPU -3", ""} {
		err := <-errc
		if want == "" {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), allowed.String()) && i < 2 {
			t.Errorf("refused pin %d: %v; want ErrNotAllowed naming %q and the allowed set %v", i, err, want, allowed)
		}
	}
}

// TestPinnerConcurrentHooks: many worker goroutines starting at once,
// some with indices beyond the plan (wrapped) or negative (ignored).
func TestPinnerConcurrentHooks(t *testing.T) {
	if !pinSupported {
		t.Skip("no thread affinity on this OS")
	}
	plan := Plan(Discover(), 0)
	p := NewPinner(plan)
	var wg sync.WaitGroup
	bad := make(chan string, 64)
	for i := -2; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.OnWorkerStart(i)
			m, err := ThreadCPUs()
			switch {
			case err != nil:
				bad <- err.Error()
			case i >= 0 && (m.Count() != 1 || !m.Has(plan[i%len(plan)])):
				bad <- fmt.Sprintf("worker %d on %v, want %d", i, m, plan[i%len(plan)])
			}
		}()
	}
	wg.Wait()
	close(bad)
	for b := range bad {
		t.Error(b)
	}
	if p.Pinned() != 30 || p.Err() != nil {
		t.Fatalf("Pinned %d, Err %v; want 30, nil", p.Pinned(), p.Err())
	}
	// An empty plan pins nothing and never locks.
	empty := NewPinner(nil)
	within(t, 5*time.Second, "empty Pinner hook", func() { empty.OnWorkerStart(0) })
	if empty.Pinned() != 0 || empty.Err() != nil {
		t.Fatalf("empty plan: Pinned %d, Err %v", empty.Pinned(), empty.Err())
	}
}

// TestDiscoverFSAllowedOutsideOnline: an allowed set disjoint from the
// online CPUs (a stale mask) falls back to the mask; one partly outside
// keeps the intersection.
func TestDiscoverFSAllowedOutsideOnline(t *testing.T) {
	sys := fstest.MapFS{"online": {Data: []byte("0-3")}}
	far, _ := ParseCPUList("2000-2001")
	topo := DiscoverFS(sys, far)
	if !strings.HasPrefix(topo.Source, "fallback") || !topo.Allowed.Equal(far) || topo.NumCPU() != 2 {
		t.Fatalf("disjoint allowed set: %v", topo)
	}
	part, _ := ParseCPUList("3-5")
	topo = DiscoverFS(sys, part)
	if topo.NumCPU() != 1 || topo.CPUs[0].ID != 3 || topo.Siblings(3) == nil || topo.Siblings(4) != nil {
		t.Fatalf("partly allowed: %v", topo)
	}
}

// onMainThread reports whether the calling goroutine runs on the
// process's main thread (its thread ID is the process ID).
func onMainThread() bool { return unix.Gettid() == unix.Getpid() }

// restoreMainThread gives the main thread back the mask set, from
// whichever thread runs this (sched_setaffinity takes a thread ID).
func restoreMainThread(t *testing.T, set CPUSet) {
	u, err := set.ToUnix()
	if err == nil {
		err = unix.SchedSetaffinity(unix.Getpid(), &u)
	}
	if err != nil {
		t.Errorf("restoring the main thread's mask: %v", err)
	}
	allowedMu.Lock()
	startMask, startErr = set.Clone(), nil
	allowedMu.Unlock()
}
