package sched

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingSched makes a scheduler with one registered thread (registered by
// the calling goroutine) and a kernel that counts its runs.
func countingSched(t *testing.T, cfg Config) (*Scheduler, *Ctx, KernelID, *atomic.Int64) {
	t.Helper()
	reg := NewRegistry()
	ran := new(atomic.Int64)
	k, err := reg.RegisterNext(Kernel{Name: "count", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return nil }})
	must(t, err)
	cfg.Kernels = reg
	s, err := New(cfg)
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	return s, m, k, ran
}

// cacheOnThread has registered thread m add and wait for a batch of tasks,
// then return to other work: its slot cache keeps free slots the shared
// list lacks. Once the workers sleep (a sleeping worker keeps no cache),
// a slot that is neither free nor live is one m keeps; m adds single tasks
// until it keeps one (at most a cache's worth: a refill leaves all but
// one of its batch cached), and the test fails if it never does, which
// would leave the test that follows without its subject.
func cacheOnThread(t *testing.T, s *Scheduler, m *Ctx, k KernelID) {
	t.Helper()
	var ids []TaskID
	for range 10 {
		id, err := m.Add(&Task{Kernel: k})
		must(t, err)
		ids = append(ids, id)
	}
	for _, id := range ids {
		must(t, m.Wait(id))
	}
	pool := int(s.inPlaceSlot())
	for i := 0; ; i++ {
		for deadline := time.Now().Add(10 * time.Second); s.Pending() != 0 || s.nIdle.Load() < int32(s.nwork); {
			if time.Now().After(deadline) {
				t.Fatalf("workers still busy after 10s (%d tasks live)", s.Pending())
			}
			time.Sleep(time.Millisecond)
		}
		if pool-int(s.nfree.Load()) > 0 {
			return
		}
		if i > slotCacheSize {
			t.Fatalf("no free slot is cached after %d Adds from the registered thread: nothing to test", i)
		}
		_, err := m.Add(&Task{Kernel: k})
		must(t, err)
	}
}

// fillBehindGate has a goroutine that is no scheduler thread create a
// held gate and add dependents of it until the pool holds pool tasks or an
// Add fails; it returns the gate, the dependents and the error.
func fillBehindGate(s *Scheduler, k KernelID, pool int) (TaskID, []TaskID, error) {
	type result struct {
		gate TaskID
		deps []TaskID
		err  error
	}
	done := make(chan result)
	go func() {
		var r result
		defer func() { done <- r }()
		if r.gate, r.err = s.Create(&Task{}); r.err != nil {
			return
		}
		for len(r.deps) < pool-1 {
			id, err := s.Add(&Task{Kernel: k, Dependency: r.gate})
			if err != nil {
				r.err = err
				return
			}
			r.deps = append(r.deps, id)
		}
	}()
	r := <-done
	return r.gate, r.deps, r.err
}

// A registered thread that added and waited for a batch and then left
// the scheduler keeps free slots in its cache. Another goroutine that
// fills the pool with a held gate and its dependents must get every slot
// that holds no live task: the cached ones are taken back, not counted as
// a full pool with nothing to run.
func TestPoolFullWithSlotsCachedByIdleThread(t *testing.T) {
	for _, pool := range []int{64, 1024} {
		t.Run(fmt.Sprint(pool), func(t *testing.T) {
			s, m, k, ran := countingSched(t, Config{Workers: 2, PoolSize: pool})
			defer s.Close()
			cacheOnThread(t, s, m, k)
			var gate TaskID
			var deps []TaskID
			within(t, 20*time.Second, "filling the pool behind a gate", func() {
				var err error
				gate, deps, err = fillBehindGate(s, k, pool)
				if err != nil {
					t.Errorf("after %d of %d dependents of the gate: %v", len(deps), pool-1, err)
				}
			})
			if gate == NoTask {
				return
			}
			before := ran.Load()
			must(t, s.Run(gate))
			for _, id := range deps {
				must(t, m.Wait(id))
			}
			if got := ran.Load() - before; got != int64(len(deps)) {
				t.Errorf("%d dependents ran, want %d", got, len(deps))
			}
		})
	}
}

// Slow is not dead: goroutine G1 holds a gate and Runs it 100 ms later,
// after work of its own outside the scheduler, while G2 adds more
// dependents of the gate than the pool holds. G2's Adds wait for the Run
// (back-pressure); they must not fail with ErrPoolDeadlock. G2 is a
// goroutine that is no thread, then a registered thread.
func TestPoolFullWhileGateRunLater(t *testing.T) {
	const pool, n = 64, 200
	for _, fromThread := range []bool{false, true} {
		t.Run(fmt.Sprintf("thread=%v", fromThread), func(t *testing.T) {
			reg := NewRegistry()
			var ran atomic.Int64
			k, err := reg.RegisterNext(Kernel{Name: "count", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return nil }})
			must(t, err)
			s, err := New(Config{Kernels: reg, Workers: 2, PoolSize: pool})
			must(t, err)
			defer s.Close()
			gates := make(chan TaskID)
			g1 := make(chan error, 1)
			go func() { // G1
				gate, err := s.Create(&Task{})
				if err != nil {
					g1 <- err
					close(gates)
					return
				}
				gates <- gate
				time.Sleep(100 * time.Millisecond)
				g1 <- s.Run(gate)
			}()
			within(t, 20*time.Second, "dependents of a gate Run 100 ms later", func() { // G2
				gate, ok := <-gates
				if !ok {
					t.Errorf("G1's Create: %v", <-g1)
					return
				}
				add, wait := s.Add, s.Wait
				if fromThread {
					m, err := s.RegisterThread("G2")
					must(t, err)
					add, wait = m.Add, m.Wait
				}
				var ids []TaskID
				for i := range n {
					id, err := add(&Task{Kernel: k, Dependency: gate})
					if err != nil {
						t.Errorf("dependent %d of %d (pool %d): %v", i, n, pool, err)
						break
					}
					ids = append(ids, id)
				}
				if err := <-g1; err != nil {
					t.Errorf("G1's Run: %v", err)
				}
				for _, id := range ids {
					if err := wait(id); err != nil {
						t.Errorf("Wait: %v", err)
					}
				}
				if got := ran.Load(); got != int64(len(ids)) || len(ids) != n {
					t.Errorf("%d of %d dependents ran (%d added)", got, n, len(ids))
				}
			})
		})
	}
}

// A true dead end, where nobody will ever Run the gate, is still reported
// by ErrPoolDeadlock in bounded time, and only once the pool is really
// full: with slots cached by an idle registered thread, the gate and its
// dependents fill every slot first, and the error counts them all live.
func TestPoolDeadEndStillReported(t *testing.T) {
	const pool = 64
	s, m, k, _ := countingSched(t, Config{Workers: 2, PoolSize: pool})
	defer s.Close()
	cacheOnThread(t, s, m, k)
	var gate TaskID
	var deps []TaskID
	var err error
	within(t, 20*time.Second, "Add into a pool that nobody will drain", func() {
		gate, deps, err = fillBehindGate(s, k, pool)
		if err == nil {
			_, err = s.Add(&Task{Kernel: k, Dependency: gate})
		}
	})
	if !errors.Is(err, ErrPoolDeadlock) {
		t.Fatalf("Add with a full pool nobody drains: %v, want ErrPoolDeadlock", err)
	}
	if len(deps) != pool-1 {
		t.Errorf("dead end reported after %d dependents of the gate, want %d (the gate and they fill the pool)", len(deps), pool-1)
	}
	if want := fmt.Sprintf("%d of the pool's %d slots hold unfinished tasks", pool, pool); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	must(t, s.Run(gate))
	for _, id := range deps {
		must(t, m.Wait(id))
	}
}

// Config.PoolStallLimit bounds the wait of a stuck Add: a short limit
// reports the dead end soon, and a negative one waits for a Run however
// late (here later than the default limit).
func TestPoolStallLimit(t *testing.T) {
	const pool = 16
	t.Run("short", func(t *testing.T) {
		s, _, k, _ := countingSched(t, Config{Workers: 1, PoolSize: pool, PoolStallLimit: 30 * time.Millisecond})
		defer s.Close()
		var err error
		var gate TaskID
		within(t, 20*time.Second, "Add with a short stall limit", func() {
			gate, _, err = fillBehindGate(s, k, pool+1)
		})
		if !errors.Is(err, ErrPoolDeadlock) || !strings.Contains(err.Error(), "PoolStallLimit") {
			t.Errorf("Add past a full pool: %v, want ErrPoolDeadlock naming PoolStallLimit", err)
		}
		must(t, s.Run(gate))
	})
	t.Run("none", func(t *testing.T) {
		s, m, k, ran := countingSched(t, Config{Workers: 1, PoolSize: pool, PoolStallLimit: -1})
		defer s.Close()
		gate, deps, err := fillBehindGate(s, k, pool)
		must(t, err)
		type added struct {
			id  TaskID
			err error
		}
		late := make(chan added, 1)
		go func() {
			id, err := s.Add(&Task{Kernel: k, Dependency: gate})
			late <- added{id, err}
		}()
		select {
		case a := <-late:
			t.Fatalf("Add into a pool full behind a gate returned before the Run: %v", a.err)
		case <-time.After(defaultPoolStall + defaultPoolStall/2):
		}
		must(t, s.Run(gate))
		var a added
		within(t, 20*time.Second, "Add after the late Run", func() { a = <-late })
		if a.err != nil {
			t.Fatalf("Add blocked before the Run: %v", a.err)
		}
		for _, id := range append(deps, a.id) {
			must(t, m.Wait(id))
		}
		if got := ran.Load(); got != int64(len(deps)+1) {
			t.Errorf("%d tasks ran, want %d", got, len(deps)+1)
		}
	})
}

// The registered thread's slot cache, whose slots other Adds may take back,
// allocates nothing in steady state: batches larger than the pool, of
// tasks slower than their Adds, added from the thread (its Adds wait for
// slots, taking back caches, and its cache spills and refills) and from a
// goroutine that is no thread at once.
func TestRegisteredThreadSlotCacheAllocatesNothing(t *testing.T) {
	const pool, n = 64, 300
	s, m, _, _ := countingSched(t, Config{Workers: 2, PoolSize: pool})
	defer s.Close()
	var ran atomic.Int64
	k, err := s.Kernels().RegisterNext(Kernel{Name: "slow", CPU: func(_ *Ctx, d *TaskData) error {
		// Slow enough that two workers cannot keep up with two adders
		// (with or without the race detector), so the pool fills.
		x := d.Params[0]
		for range 2000 {
			x = spinWork(x)
		}
		d.Params[1] = x
		ran.Add(1)
		return nil
	}})
	must(t, err)
	start, done := make(chan TaskID), make(chan error)
	go func() {
		for root := range start {
			var err error
			for range n / 2 {
				if _, err = s.Add(&Task{Kernel: k, Parent: root}); err != nil {
					break
				}
			}
			done <- err
		}
	}()
	defer close(start)
	var waited atomic.Bool // an Add waited for a slot: back-pressure was exercised
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s.poolWait.Load() > 0 {
				waited.Store(true)
			}
			runtime.Gosched()
		}
	}()
	run := func() {
		root, err := m.Create(&Task{})
		must(t, err)
		start <- root
		for range n / 2 {
			_, err := m.Add(&Task{Kernel: k, Parent: root})
			must(t, err)
		}
		must(t, <-done)
		must(t, m.Run(root))
		must(t, m.Wait(root))
	}
	run() // warm up: timers, stacks
	before := ran.Load()
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Errorf("%.1f allocations per batch of %d tasks through a pool of %d, want 0", a, n, pool)
	}
	if got := ran.Load() - before; got != 21*n {
		t.Errorf("%d tasks ran, want %d", got, 21*n)
	}
	if !waited.Load() {
		t.Errorf("no Add waited for a slot: the pool never filled, nothing was tested")
	}
}

// A registered thread's cache taken back while its owner adds and runs
// tasks: every task runs once, and once all is done every slot is free
// exactly once (on the shared list or in a cache), none lost, none twice.
// The takers run as often as they can, so owner and taker meet inside
// their sections; with haveProcessFence the owner's side is plain stores.
func TestSlotCacheTakenWhileOwnerAdds(t *testing.T) {
	const pool, rounds, per, takerCount = 256, 3000, 60, 1
	s, m, k, ran := countingSched(t, Config{Workers: 1, PoolSize: pool})
	defer s.Close()
	t.Logf("process-wide fence: %v", haveProcessFence)
	stopTakers := startTakers(s, takerCount)
	within(t, 60*time.Second, "adding while the cache is taken back", func() {
		for range rounds {
			root, err := m.Create(&Task{})
			must(t, err)
			for range per {
				_, err := m.Add(&Task{Kernel: k, Parent: root})
				must(t, err)
			}
			must(t, m.Run(root))
			must(t, m.Wait(root))
		}
	})
	takes := stopTakers()
	if got := ran.Load(); got != rounds*per {
		t.Errorf("%d tasks ran, want %d", got, rounds*per)
	}
	if takes == 0 {
		t.Errorf("no cache was taken back: nothing was tested")
	}
	checkSlotsFreeOnce(t, s)
	t.Logf("%d caches taken back", takes)
}

// TestPoolStallLimitRestartsAfterABreak: an Add fails only once the pool
// has stayed stuck for Config.PoolStallLimit without a break. A Run of a
// held task that ran (the pool was not stuck while it ran) but freed no
// slot (it waits for a held child) is such a break, though the blocked
// Add sleeps through it: the limit counts again from there.
func TestPoolStallLimitRestartsAfterABreak(t *testing.T) {
	const pool = 16
	const limit = 400 * time.Millisecond
	reg := NewRegistry()
	k, err := reg.RegisterNext(Kernel{Name: "nop", CPU: func(*Ctx, *TaskData) error { return nil }})
	must(t, err)
	s, err := New(Config{Kernels: reg, Workers: 1, PoolSize: pool, PoolStallLimit: limit})
	must(t, err)
	defer s.Close()
	p, err := s.Create(&Task{Kernel: k})
	must(t, err)
	c, err := s.Create(&Task{Kernel: k, Parent: p})
	must(t, err)
	gate, err := s.Create(&Task{})
	must(t, err)
	var ids []TaskID
	for len(ids) < pool-3 {
		id, err := s.Add(&Task{Kernel: k, Dependency: gate})
		must(t, err)
		ids = append(ids, id)
	}
	type added struct {
		id  TaskID
		err error
		at  time.Duration
	}
	late := make(chan added, 1)
	start := time.Now()
	go func() {
		id, err := s.Add(&Task{Kernel: k, Dependency: gate})
		late <- added{id, err, time.Since(start)}
	}()
	time.Sleep(250 * time.Millisecond)
	must(t, s.Run(p)) // p runs (a break), then waits for its held child c
	select {
	case a := <-late:
		if errors.Is(a.err, ErrPoolDeadlock) {
			t.Errorf("Add failed %v after it began, %v after a Run that ran a task (limit %v): %v", a.at, a.at-250*time.Millisecond, limit, a.err)
		} else {
			t.Errorf("Add returned early: %v", a.err)
		}
		must(t, s.Run(c))
		must(t, s.Run(gate))
		return
	case <-time.After(300 * time.Millisecond): // t = 550 ms < 250+limit
	}
	must(t, s.Run(c))
	must(t, s.Run(gate))
	a := <-late
	if a.err != nil {
		t.Fatal(a.err)
	}
}

// startTakers starts n goroutines that take back slot caches
// (reclaimCaches) as often as they can, so that owners and takers meet
// inside their sections; the function it returns stops them and returns
// how many takes moved slots.
func startTakers(s *Scheduler, n int) (stop func() int64) {
	done := make(chan struct{})
	var takes atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if s.reclaimCaches() {
					takes.Add(1)
				}
			}
		}()
	}
	return func() int64 {
		close(done)
		wg.Wait()
		return takes.Load()
	}
}
