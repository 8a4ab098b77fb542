package sched

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// spinWork burns a little CPU per element, so a thief has time to steal.
func spinWork(n uint32) uint32 {
	x := n
	for i := 0; i < 20; i++ {
		x = x*1664525 + 1013904223
	}
	return x
}

// A streaming task pinned to a registered thread runs every range of it on
// that thread (it used to be split into pieces that workers stole).
func TestPinnedStreamingStaysOnThread(t *testing.T) {
	const kPinnedRange KernelID = 40
	var off, ranges, items atomic.Int64
	var sink atomic.Uint32
	reg := NewRegistry()
	var mainIndex atomic.Int32
	must(t, reg.Register(kPinnedRange, Kernel{Name: "pinned_range", Kind: Streaming, Grain: 64,
		CPU: func(c *Ctx, d *TaskData) error {
			if int32(c.Index()) != mainIndex.Load() {
				off.Add(1)
			}
			ranges.Add(1)
			items.Add(int64(d.End - d.Begin))
			var x uint32
			for i := d.Begin; i < d.End; i++ {
				x += spinWork(i)
			}
			sink.Add(x)
			return nil
		}}))
	for _, workers := range []int{1, 3} {
		s, err := New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		mainIndex.Store(int32(m.Index()))
		off.Store(0)
		ranges.Store(0)
		items.Store(0)
		const reps, n = 20, 1 << 14
		for range reps {
			tk := Task{Kernel: kPinnedRange, Affinity: OnThread(0)}
			tk.Data.Elements = n
			id, err := m.Add(&tk)
			must(t, err)
			must(t, m.Wait(id))
		}
		must(t, s.Close())
		if off.Load() != 0 {
			t.Errorf("workers %d: %d of %d ranges of a task pinned to thread(0) ran on a worker", workers, off.Load(), ranges.Load())
		}
		if items.Load() != reps*n {
			t.Errorf("workers %d: %d items ran, want %d", workers, items.Load(), reps*n)
		}
	}
}

// Element counts up to the type's limit are split (the piece count used to
// overflow for Elements > 2^32 - Grain, and the task ran as one call).
func TestHugeElementCountSplits(t *testing.T) {
	const kHuge KernelID = 41
	var calls, items atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kHuge, Kernel{Name: "huge", Kind: Streaming,
		CPU: func(c *Ctx, d *TaskData) error {
			calls.Add(1)
			items.Add(int64(d.End - d.Begin))
			if d.End < d.Begin {
				t.Errorf("range [%d, %d)", d.Begin, d.End)
			}
			return nil
		}}))
	s, err := New(Config{Kernels: reg, Workers: 2})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	for _, c := range []struct{ n, grain uint32 }{
		{1<<32 - 1, 1 << 26},
		{1<<32 - 1, 1<<32 - 1},
		{1<<32 - 1, 1 << 31},
		{1<<32 - 5, 1<<31 + 1},
		{1<<32 - 100, 1 << 24},
	} {
		calls.Store(0)
		items.Store(0)
		tk := Task{Kernel: kHuge}
		tk.Data.Elements, tk.Data.Grain = c.n, c.grain
		id, err := m.Add(&tk)
		must(t, err)
		must(t, m.Wait(id))
		if items.Load() != int64(c.n) {
			t.Errorf("elements %d grain %d: %d items ran", c.n, c.grain, items.Load())
		}
		want := int64(2) // at least two pieces when the count exceeds the grain
		if c.n <= c.grain {
			want = 1
		}
		if calls.Load() < want {
			t.Errorf("elements %d grain %d: %d calls, want at least %d", c.n, c.grain, calls.Load(), want)
		}
	}
}

// A TaskID of another scheduler is refused however many schedulers the
// process made: the tag in an ID used to be 8 bits and wrapped, so the
// 256th scheduler took the first one's live tasks for its own.
func TestForeignIDsAfterManySchedulers(t *testing.T) {
	first, err := New(Config{Workers: 1, PoolSize: 16})
	must(t, err)
	defer first.Close()
	held, err := first.Create(&Task{})
	must(t, err)
	defer first.Run(held)
	check := func(s *Scheduler, id TaskID, what string) {
		t.Helper()
		if _, err := s.Add(&Task{Dependency: id}); !errors.Is(err, ErrForeignTask) {
			t.Fatalf("%s: Add with a foreign dependency %v: %v, want ErrForeignTask", what, id, err)
		}
		if _, err := s.Add(&Task{Parent: id}); !errors.Is(err, ErrForeignTask) {
			t.Fatalf("%s: Add with a foreign parent %v: %v, want ErrForeignTask", what, id, err)
		}
		if err := s.Wait(id); !errors.Is(err, ErrForeignTask) {
			t.Fatalf("%s: Wait on a foreign %v: %v, want ErrForeignTask", what, id, err)
		}
	}
	// Many schedulers open at once, and many made and closed in turn.
	var open []*Scheduler
	for i := range 300 {
		s, err := New(Config{Workers: 1, PoolSize: 16})
		must(t, err)
		check(s, held, fmt.Sprintf("open scheduler %d", i+2))
		open = append(open, s)
	}
	for _, s := range open {
		must(t, s.Close())
	}
	for i := range 300 {
		s, err := New(Config{Workers: 1, PoolSize: 16})
		must(t, err)
		check(s, held, fmt.Sprintf("scheduler %d made after 300 closed", i+1))
		must(t, s.Close())
	}

	// A closed scheduler's tag, given out again, refuses the old IDs
	// (live and finished ones of the closed scheduler alike).
	old, err := New(Config{Workers: 1, PoolSize: 16})
	must(t, err)
	m, err := old.RegisterThread("main")
	must(t, err)
	var ids []TaskID
	for range 100 {
		id, err := m.Add(&Task{})
		must(t, err)
		must(t, m.Wait(id))
		ids = append(ids, id)
	}
	stuck, err := old.Create(&Task{})
	must(t, err)
	ids = append(ids, stuck)
	old.Close() // fails the held task: its ID is the newest generation of its slot
	tags.mu.Lock()
	tags.last = old.id - 1 // the next New takes old's tag
	tags.mu.Unlock()
	reuse, err := New(Config{Workers: 1, PoolSize: 16})
	must(t, err)
	defer reuse.Close()
	if reuse.id != old.id {
		t.Fatalf("tag %d not reused (got %d)", old.id, reuse.id)
	}
	for _, id := range ids {
		check(reuse, id, "scheduler on a reused tag")
	}
	// And its own IDs are not mistaken for foreign ones.
	rm, err := reuse.RegisterThread("main")
	must(t, err)
	for range 100 {
		id, err := rm.Add(&Task{})
		must(t, err)
		must(t, rm.Wait(id))
		if _, err := rm.Add(&Task{Dependency: id}); err != nil {
			t.Fatal(err)
		}
	}
}

// within runs f and fails the test if it has not returned after d: a hang
// becomes a failure with every goroutine's stack, not a stuck test binary.
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
		// Exit at once: a deferred Close would block on the same hang.
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "--- FAIL: %s: %s: still blocked after %v\n%s", t.Name(), what, d, buf[:runtime.Stack(buf, true)])
		os.Exit(1)
	}
}

// A cycle through parents and dependencies is refused by Add where it is
// cheap to see, and one that Add cannot see no longer hangs its waiters:
// Close fails its tasks (ErrCycle) and every Wait returns.
func TestCycles(t *testing.T) {
	s, err := New(Config{Workers: 2})
	must(t, err)
	defer s.Close()
	// X -> child C -> D -> X: D depends on X, C (X's child) on D.
	x, err := s.Create(&Task{})
	must(t, err)
	d, err := s.Add(&Task{Dependency: x})
	must(t, err)
	if _, err := s.Add(&Task{Parent: x, Dependency: d}); !errors.Is(err, ErrCycle) {
		t.Fatalf("Add closing the cycle X -> C -> D -> X: %v, want ErrCycle", err)
	}
	if _, err := s.Add(&Task{Parent: x, Dependency: x}); !errors.Is(err, ErrSelfDepend) {
		t.Fatalf("Add depending on its parent: %v, want ErrSelfDepend", err)
	}
	must(t, s.Run(x))
	must(t, s.Wait(x))
	must(t, s.Wait(d))

	// One step longer (X -> child C -> D -> E -> X): Add does not see it.
	x, err = s.Create(&Task{})
	must(t, err)
	e, err := s.Add(&Task{Dependency: x})
	must(t, err)
	d, err = s.Add(&Task{Dependency: e})
	must(t, err)
	c, err := s.Add(&Task{Parent: x, Dependency: d})
	must(t, err)
	must(t, s.Run(x))
	ids := []TaskID{x, c, d, e}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = s.Wait(id) })
	}
	within(t, 20*time.Second, "Close with a cycle", func() {
		if err := s.Close(); !errors.Is(err, ErrCycle) {
			t.Errorf("Close: %v, want an error naming the cycle", err)
		}
	})
	within(t, 20*time.Second, "Wait on the tasks of a cycle", wg.Wait)
	for i, id := range ids {
		if !errors.Is(errs[i], ErrCycle) && !errors.Is(errs[i], ErrClosed) {
			t.Errorf("Wait %v during Close: %v, want ErrCycle or ErrClosed", id, errs[i])
		}
		within(t, 20*time.Second, "Wait after Close", func() {
			if err := s.Wait(id); err == nil {
				t.Errorf("Wait %v after Close: nil, want an error", id)
			}
		})
	}
}

// The deadlock helping can make, built exactly: A waits for its child B;
// the waiting thread runs C meanwhile; C waits for D; D depends on A. The
// wait in C must fail (ErrDeadlock, naming the tasks) instead of sleeping
// forever; A then finishes, and D runs after it.
func TestHelpingWaitDeadlock(t *testing.T) {
	const kA, kB, kC, kD KernelID = 42, 43, 44, 45
	var a, c, d atomic.Uint64
	var cErr error
	var dRan atomic.Bool
	reg := NewRegistry()
	must(t, reg.Register(kB, Kernel{Name: "B", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kD, Kernel{Name: "D", CPU: func(*Ctx, *TaskData) error { dRan.Store(true); return nil }}))
	must(t, reg.Register(kC, Kernel{Name: "C", CPU: func(x *Ctx, _ *TaskData) error {
		id, err := x.Add(&Task{Kernel: kD, Dependency: TaskID(a.Load())})
		if err != nil {
			return err
		}
		d.Store(uint64(id))
		cErr = x.Wait(id)
		return cErr
	}}))
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: func(x *Ctx, _ *TaskData) error {
		a.Store(uint64(x.Current()))
		// Both pinned to this thread, C first: the wait for B runs C.
		id, err := x.Add(&Task{Kernel: kC, Affinity: OnThread(0)})
		if err != nil {
			return err
		}
		c.Store(uint64(id))
		b, err := x.Add(&Task{Kernel: kB, Affinity: OnThread(0), Parent: x.Current()})
		if err != nil {
			return err
		}
		return x.Wait(b)
	}}))
	for _, workers := range []int{1, 2} {
		s, err := New(Config{Kernels: reg, Workers: workers, SpinRounds: 64})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		dRan.Store(false)
		cErr = nil
		within(t, 20*time.Second, "A, C and D", func() {
			ida, err := m.Add(&Task{Kernel: kA, Affinity: OnThread(0)})
			must(t, err)
			if err := m.Wait(ida); err != nil {
				t.Errorf("A: %v", err)
			}
			if err := m.Wait(TaskID(c.Load())); !errors.Is(err, ErrDeadlock) {
				t.Errorf("C: %v, want ErrDeadlock", err)
			}
			if err := m.Wait(TaskID(d.Load())); err != nil || !dRan.Load() {
				t.Errorf("D: %v (ran %v)", err, dRan.Load())
			}
		})
		for _, id := range []TaskID{TaskID(a.Load()), TaskID(c.Load()), TaskID(d.Load())} {
			if cErr == nil || !strings.Contains(cErr.Error(), id.String()) {
				t.Errorf("the error does not name %v: %v", id, cErr)
			}
		}
		t.Log(cErr)
		must(t, s.Close())
	}
}

// Scheduler.Wait and Scheduler.Add's back-pressure called from a kernel
// on the only worker: they used to block the one thread that could run
// what they waited for. Now they run tasks meanwhile, as Ctx's do.
func TestSchedulerCallsFromKernel(t *testing.T) {
	const kInner, kWaiter, kAdder KernelID = 46, 47, 48
	var s *Scheduler
	var inner atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kInner, Kernel{Name: "inner", CPU: func(*Ctx, *TaskData) error { inner.Add(1); return nil }}))
	must(t, reg.Register(kWaiter, Kernel{Name: "waiter", CPU: func(*Ctx, *TaskData) error {
		id, err := s.Add(&Task{Kernel: kInner})
		if err != nil {
			return err
		}
		return s.Wait(id) // no Ctx used: the scheduler finds the thread
	}}))
	must(t, reg.Register(kAdder, Kernel{Name: "adder", CPU: func(*Ctx, *TaskData) error {
		for range 100 { // far more than the pool holds
			if _, err := s.Add(&Task{Kernel: kInner}); err != nil {
				return err
			}
		}
		return nil
	}}))
	var err error
	s, err = New(Config{Kernels: reg, Workers: 1, PoolSize: 16})
	must(t, err)
	defer s.Close()
	for _, k := range []KernelID{kWaiter, kAdder} {
		inner.Store(0)
		within(t, 20*time.Second, s.reg.Lookup(k).Name, func() {
			id, err := s.Add(&Task{Kernel: k})
			must(t, err)
			must(t, s.Wait(id))
		})
	}
	within(t, 20*time.Second, "Close", func() { must(t, s.Close()) })
}

// Back-pressure with nothing to run: a held task and more dependents than
// the pool holds, added from one goroutine. Add used to sleep until some
// other goroutine called Run; when none will, it now says so.
func TestBackPressureDeadEnd(t *testing.T) {
	for _, fromThread := range []bool{false, true} {
		s, err := New(Config{Workers: 2, PoolSize: 16})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		add, create, run := s.Add, s.Create, s.Run
		if fromThread {
			add, create, run = m.Add, m.Create, m.Run
		}
		root, err := create(&Task{})
		must(t, err)
		var added []TaskID
		within(t, 20*time.Second, "Add into a pool that cannot drain", func() {
			for range 40 {
				id, err := add(&Task{Dependency: root})
				if err != nil {
					if !errors.Is(err, ErrPoolDeadlock) {
						t.Errorf("Add: %v, want ErrPoolDeadlock", err)
					}
					t.Log(err)
					return
				}
				added = append(added, id)
			}
			t.Errorf("40 dependents of a held task added to a pool of 16")
		})
		// Running the held task drains the pool; Add works again.
		must(t, run(root))
		for _, id := range added {
			must(t, m.Wait(id))
		}
		id, err := add(&Task{Dependency: root})
		must(t, err)
		must(t, m.Wait(id))
		must(t, s.Close())
	}
}

// Priorities compare as they rank, the zero value is Normal, and values
// outside Low..High are refused.
func TestPriorityOrder(t *testing.T) {
	if !(PriorityLow < PriorityNormal && PriorityNormal < PriorityHigh) {
		t.Fatalf("low %d, normal %d, high %d: numeric order is not priority order", PriorityLow, PriorityNormal, PriorityHigh)
	}
	if (Task{}).Priority != PriorityNormal {
		t.Fatalf("the zero priority is %v", Task{}.Priority)
	}
	for _, p := range []Priority{PriorityLow, PriorityNormal, PriorityHigh} {
		if p.level() < 0 || p.level() >= numPriorities || (p < PriorityHigh && p.level() <= (p+1).level()) {
			t.Fatalf("%v has queue level %d", p, p.level())
		}
	}
	s, err := New(Config{Workers: 1})
	must(t, err)
	defer s.Close()
	for _, p := range []Priority{PriorityLow - 1, PriorityHigh + 1, 9} {
		if _, err := s.Add(&Task{Priority: p}); !errors.Is(err, ErrBadPriority) {
			t.Errorf("priority %d: %v, want ErrBadPriority", p, err)
		}
	}
}

// blockingPlacer holds the first Place call until release is closed: it
// stands for an Add from outside that is preempted between Add's check
// for Close and the queueing of its task.
type blockingPlacer struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (p *blockingPlacer) Place(KernelID, *Kernel, *TaskData) (Affinity, uint32) {
	p.once.Do(func() {
		close(p.entered)
		<-p.release
	})
	return AnyWorker, 0
}

// An Add that raced with Close (it passed the closed check, Close found
// the scheduler idle and stopped its workers, and only then the task was
// queued) used to leave the task queued for ever: its Wait hung. Now the
// late Add fails it with ErrClosed.
func TestAddRacingClose(t *testing.T) {
	const kLate KernelID = 49
	reg := NewRegistry()
	must(t, reg.Register(kLate, Kernel{Name: "late", CPU: func(*Ctx, *TaskData) error { return nil }}))
	p := &blockingPlacer{entered: make(chan struct{}), release: make(chan struct{})}
	s, err := New(Config{Kernels: reg, Workers: 1, Placer: p})
	must(t, err)
	added := make(chan TaskID, 1)
	go func() {
		id, err := s.Add(&Task{Kernel: kLate, Affinity: Auto})
		if err != nil {
			t.Error(err)
		}
		added <- id
	}()
	<-p.entered
	within(t, 20*time.Second, "Close", func() { must(t, s.Close()) })
	close(p.release)
	id := <-added
	within(t, 20*time.Second, "Wait for a task added as Close finished", func() {
		if err := s.Wait(id); !errors.Is(err, ErrClosed) {
			t.Errorf("Wait: %v, want ErrClosed", err)
		}
	})
	// The same for a held task: Create racing with Close.
	p2 := &blockingPlacer{entered: make(chan struct{}), release: make(chan struct{})}
	s2, err := New(Config{Kernels: reg, Workers: 1, Placer: p2})
	must(t, err)
	held, err := s2.Create(&Task{Kernel: kLate, Affinity: Auto})
	must(t, err)
	ran := make(chan error, 1)
	go func() { ran <- s2.Run(held) }()
	<-p2.entered
	within(t, 20*time.Second, "Close", func() { must(t, s2.Close()) })
	close(p2.release)
	must(t, <-ran)
	within(t, 20*time.Second, "Wait for a task Run as Close finished", func() {
		if err := s2.Wait(held); !errors.Is(err, ErrClosed) {
			t.Errorf("Wait: %v, want ErrClosed", err)
		}
	})
}

// The same deadlock across two threads: on thread 0, A waits for its child
// B and the thread runs C, which waits for D; on thread 1, E waits for its
// child F and the thread runs G, which waits for H. D depends on E and H on
// A: each thread's inner wait needs the kernel suspended on the other.
// Whichever thread goes to sleep last sees the other asleep and fails its
// wait with ErrDeadlock; everything then finishes.
func TestHelpingWaitDeadlockTwoThreads(t *testing.T) {
	const kA, kB, kC, kE, kG, kLeaf KernelID = 50, 51, 52, 53, 54, 55
	var a, e atomic.Uint64
	var cErr, gErr error
	reg := NewRegistry()
	leaf := func(*Ctx, *TaskData) error { return nil }
	must(t, reg.Register(kLeaf, Kernel{Name: "leaf", CPU: leaf}))
	must(t, reg.Register(kB, Kernel{Name: "B", CPU: leaf}))
	waiter := func(dep *atomic.Uint64, res *error) KernelFunc {
		return func(x *Ctx, _ *TaskData) error {
			id, err := x.Add(&Task{Kernel: kLeaf, Dependency: TaskID(dep.Load())})
			if err != nil {
				return err
			}
			*res = x.Wait(id)
			return *res
		}
	}
	must(t, reg.Register(kC, Kernel{Name: "C", CPU: waiter(&e, &cErr)})) // D depends on E
	must(t, reg.Register(kG, Kernel{Name: "G", CPU: waiter(&a, &gErr)})) // H depends on A
	outer := func(thread int, helper KernelID) KernelFunc {
		return func(x *Ctx, _ *TaskData) error {
			if _, err := x.Add(&Task{Kernel: helper, Affinity: OnThread(thread)}); err != nil {
				return err
			}
			b, err := x.Add(&Task{Kernel: kB, Affinity: OnThread(thread), Parent: x.Current()})
			if err != nil {
				return err
			}
			return x.Wait(b)
		}
	}
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: outer(0, kC)}))
	must(t, reg.Register(kE, Kernel{Name: "E", CPU: outer(1, kG)}))
	s, err := New(Config{Kernels: reg, Workers: 1, MainThreads: 2, SpinRounds: 64})
	must(t, err)
	ida, err := s.Add(&Task{Kernel: kA, Affinity: OnThread(0)})
	must(t, err)
	ide, err := s.Add(&Task{Kernel: kE, Affinity: OnThread(1)})
	must(t, err)
	a.Store(uint64(ida))
	e.Store(uint64(ide))
	within(t, 20*time.Second, "two threads each waiting on the other's suspended kernel", func() {
		var wg sync.WaitGroup
		for i, id := range []TaskID{ida, ide} {
			wg.Go(func() {
				c, err := s.RegisterThread(fmt.Sprint("thread", i))
				if err != nil {
					t.Error(err)
					return
				}
				if c.Index() != s.Workers()+i {
					t.Errorf("registered as thread %d", c.Index()-s.Workers())
				}
				if err := c.Wait(id); err != nil {
					t.Errorf("thread %d: %v", i, err)
				}
			})
			// Register in order: thread 0 first.
			for s.nreg.Load() <= int32(i) {
				time.Sleep(time.Millisecond)
			}
		}
		wg.Wait()
	})
	if !errors.Is(cErr, ErrDeadlock) && !errors.Is(gErr, ErrDeadlock) {
		t.Errorf("C: %v; G: %v; want ErrDeadlock from one of them", cErr, gErr)
	}
	t.Log(cErr, gErr)
	must(t, s.Close())
}

// Two kernels on two workers each add dependents of a held task until the
// pool is full: each is blocked in Add, so neither worker is idle, yet
// nothing can run. Both Adds must fail with ErrPoolDeadlock, not hang.
func TestBackPressureDeadEndTwoKernels(t *testing.T) {
	const kFill KernelID = 56
	var started atomic.Int32
	var root atomic.Uint64
	errs := make(chan error, 2)
	reg := NewRegistry()
	must(t, reg.Register(kFill, Kernel{Name: "fill", CPU: func(c *Ctx, _ *TaskData) error {
		started.Add(1)
		for started.Load() < 2 { // both kernels run at once, on two workers
			runtime.Gosched()
		}
		for {
			if _, err := c.Add(&Task{Dependency: TaskID(root.Load())}); err != nil {
				errs <- err
				return nil
			}
		}
	}}))
	s, err := New(Config{Kernels: reg, Workers: 2, PoolSize: 32})
	must(t, err)
	h, err := s.Create(&Task{})
	must(t, err)
	root.Store(uint64(h))
	within(t, 20*time.Second, "two kernels blocked in Add", func() {
		a, err := s.Add(&Task{Kernel: kFill})
		must(t, err)
		b, err := s.Add(&Task{Kernel: kFill})
		must(t, err)
		for range 2 {
			if err := <-errs; !errors.Is(err, ErrPoolDeadlock) {
				t.Errorf("Add: %v, want ErrPoolDeadlock", err)
			}
		}
		must(t, s.Wait(a))
		must(t, s.Wait(b))
		must(t, s.Run(h))
	})
	must(t, s.Close())
}

// Scheduler.Wait on a task that has not finished looks up the calling
// goroutine (is it a scheduler thread?): that costs no allocation.
func TestSchedulerWaitAllocatesNothing(t *testing.T) {
	const kSpin KernelID = 57
	reg := NewRegistry()
	must(t, reg.Register(kSpin, Kernel{Name: "spin", CPU: func(*Ctx, *TaskData) error {
		for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
		}
		return nil
	}}))
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	task := Task{Kernel: kSpin}
	if n := testing.AllocsPerRun(200, func() {
		id, err := s.Add(&task)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(id); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Add and Scheduler.Wait: %v allocations", n)
	}
}
