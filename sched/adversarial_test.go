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

// Adversarial shapes users build, each under a watchdog (within): a hang
// fails the test with every goroutine's stack instead of stalling CI.

// Kernels that spawn and wait recursively through the Scheduler (no Ctx
// at hand: Scheduler.Wait finds the calling thread and helps), on 1, 2
// and 4 workers: every node runs once. Scheduler.Add queues on the shared
// FIFO, so such a tree runs breadth first and needs a pool that holds a
// level of it (in a pool of 64 it fails with ErrPoolDeadlock, an error
// rather than a hang; Ctx.Add runs it depth first).
func TestAdversarialRecursiveSchedulerCalls(t *testing.T) {
	const kNode KernelID = 100
	var s *Scheduler
	var runs atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kNode, Kernel{Name: "node", CPU: func(_ *Ctx, d *TaskData) error {
		runs.Add(1)
		depth := d.Params[0]
		if depth == 0 {
			return nil
		}
		var ids [3]TaskID
		for i := range ids {
			id, err := s.Add(&Task{Kernel: kNode, Data: TaskData{Params: Params{depth - 1}}})
			if err != nil {
				return err
			}
			ids[i] = id
		}
		for _, id := range ids {
			if err := s.Wait(id); err != nil {
				return err
			}
		}
		return nil
	}}))
	const depth = 7 // 3^0 + ... + 3^7 = 3280 nodes, each waiting on the way down
	want := int64(0)
	for p := int64(1); p <= 2187; p *= 3 {
		want += p
	}
	for _, workers := range []int{1, 2, 4} {
		var err error
		s, err = New(Config{Kernels: reg, Workers: workers, PoolSize: 4096})
		must(t, err)
		runs.Store(0)
		within(t, 60*time.Second, fmt.Sprintf("recursive tree on %d workers", workers), func() {
			root, err := s.Add(&Task{Kernel: kNode, Data: TaskData{Params: Params{depth}}})
			must(t, err)
			if err := s.Wait(root); err != nil {
				t.Errorf("%d workers: %v", workers, err)
			} else if runs.Load() != want {
				t.Errorf("%d workers: %d nodes ran, want %d", workers, runs.Load(), want)
			}
			must(t, s.Close())
		})
	}
}

// Huge fan-out and fan-in from inside kernels with back-pressure: a kernel
// adds 50,000 children of itself into a pool of 256 slots (Add helps run
// them), each child joins into one of 64 joins that a final task depends
// on through a join of joins. Every child runs once.
func TestAdversarialHugeFanOutIn(t *testing.T) {
	const kSpawn, kLeaf KernelID = 101, 102
	const n = 50000
	var leaves atomic.Int64
	var hits [n]atomic.Int32
	reg := NewRegistry()
	must(t, reg.Register(kLeaf, Kernel{Name: "leaf", CPU: func(_ *Ctx, d *TaskData) error {
		hits[d.Params[0]].Add(1)
		leaves.Add(1)
		return nil
	}}))
	must(t, reg.Register(kSpawn, Kernel{Name: "spawn", CPU: func(c *Ctx, d *TaskData) error {
		top, err := c.Create(&Task{Parent: c.Current()})
		if err != nil {
			return err
		}
		var joins [64]TaskID
		for j := range joins {
			if joins[j], err = c.Create(&Task{Parent: top}); err != nil {
				return err
			}
		}
		// The joins are held until every leaf is added, so they stay open.
		for i := range uint32(n) {
			if _, err := c.Add(&Task{Kernel: kLeaf, Parent: joins[i%64], Data: TaskData{Params: Params{i}}}); err != nil {
				return err
			}
		}
		for _, j := range joins {
			if err := c.Run(j); err != nil {
				return err
			}
		}
		return c.Run(top)
	}}))
	for _, workers := range []int{1, 2, 4} {
		leaves.Store(0)
		for i := range hits {
			hits[i].Store(0)
		}
		s, err := New(Config{Kernels: reg, Workers: workers, PoolSize: 256})
		must(t, err)
		within(t, 60*time.Second, fmt.Sprintf("fan-out on %d workers", workers), func() {
			sp, err := s.Add(&Task{Kernel: kSpawn})
			must(t, err)
			after, err := s.Add(&Task{Kernel: kLeaf, Dependency: sp, Data: TaskData{Params: Params{0}}})
			must(t, err)
			must(t, s.Wait(after))
			if got := leaves.Load(); got != n+1 {
				t.Errorf("%d workers: %d leaves ran, want %d", workers, got, n+1)
			}
			for i := 1; i < n; i++ {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("%d workers: leaf %d ran %d times", workers, i, h)
				}
			}
			must(t, s.Close())
		})
	}
}

// Close while many goroutines wait: for held tasks (never Run), for
// dependents of held tasks, for running kernels that wait in turn, and for
// tasks pinned to a registered thread that never serves. Every Wait
// returns; the held and pinned ones and their dependents fail with
// ErrClosed (or ErrDepFailed), the rest succeed.
func TestAdversarialCloseWithPendingWaits(t *testing.T) {
	const kSlow, kWaiter KernelID = 103, 104
	reg := NewRegistry()
	must(t, reg.Register(kSlow, Kernel{Name: "slow", CPU: func(*Ctx, *TaskData) error {
		time.Sleep(time.Millisecond)
		return nil
	}}))
	must(t, reg.Register(kWaiter, Kernel{Name: "waiter", CPU: func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: kSlow})
		if err != nil {
			return err
		}
		return c.Wait(id)
	}}))
	for round := range 5 {
		s, err := New(Config{Kernels: reg, Workers: 2, MainThreads: 2})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		type waited struct {
			id       TaskID
			mustFail bool
		}
		var ids []waited
		for i := range 40 {
			switch i % 4 {
			case 0:
				h, err := m.Create(&Task{Kernel: kSlow})
				must(t, err)
				d, err := m.Add(&Task{Kernel: kSlow, Dependency: h})
				must(t, err)
				ids = append(ids, waited{h, true}, waited{d, true})
			case 1:
				id, err := m.Add(&Task{Kernel: kWaiter})
				must(t, err)
				ids = append(ids, waited{id, false})
			case 2:
				id, err := m.Add(&Task{Kernel: kSlow, Affinity: OnThread(1)}) // thread 1 never registers
				must(t, err)
				ids = append(ids, waited{id, true})
			case 3:
				id, err := m.Add(&Task{Kernel: kSlow})
				must(t, err)
				ids = append(ids, waited{id, false})
			}
		}
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, w := range ids {
			wg.Go(func() { errs[i] = s.Wait(w.id) })
		}
		within(t, 20*time.Second, fmt.Sprintf("round %d: Close with %d waiters", round, len(ids)), func() {
			var cwg sync.WaitGroup
			for range 3 { // Close from several goroutines at once
				cwg.Go(func() { s.Close() })
			}
			cwg.Wait()
			wg.Wait()
		})
		for i, w := range ids {
			if w.mustFail && !errors.Is(errs[i], ErrClosed) && !errors.Is(errs[i], ErrDepFailed) {
				t.Errorf("round %d: Wait %v (held, pinned or dependent): %v, want ErrClosed", round, w.id, errs[i])
			}
			if !w.mustFail && errs[i] != nil {
				t.Errorf("round %d: Wait %v: %v", round, w.id, errs[i])
			}
		}
	}
}

// Panics and failures in the middle of a graph: a chain of stages, each a
// join of kernels, one of which panics in stage 3. Stage 3's join fails
// with ErrChildFailed naming ErrKernelPanic, later stages fail with
// ErrDepFailed without running, earlier ones succeed, and the workers
// survive to run the next graph.
func TestAdversarialPanicMidGraph(t *testing.T) {
	const kWork, kBoom KernelID = 105, 106
	var ran atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kWork, Kernel{Name: "work", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return nil }}))
	must(t, reg.Register(kBoom, Kernel{Name: "boom", CPU: func(_ *Ctx, d *TaskData) error {
		var s []int
		return fmt.Errorf("unreachable %d", s[d.Params[0]]) // out of range: a runtime panic
	}}))
	for _, workers := range []int{1, 2, 4} {
		s, err := New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		within(t, 20*time.Second, fmt.Sprintf("panicking graph on %d workers", workers), func() {
			for graph := range 3 {
				ran.Store(0)
				var stages []TaskID
				prev := NoTask
				for st := range 6 {
					j, err := m.Create(&Task{Dependency: prev})
					must(t, err)
					for i := range 50 {
						k := kWork
						if st == 3 && i == 17 {
							k = kBoom
						}
						_, err := m.Add(&Task{Kernel: k, Parent: j})
						must(t, err)
					}
					must(t, m.Run(j))
					stages = append(stages, j)
					prev = j
				}
				for st, j := range stages {
					err := m.Wait(j)
					switch {
					case st < 3 && err != nil:
						t.Errorf("graph %d stage %d: %v", graph, st, err)
					case st == 3 && (!errors.Is(err, ErrChildFailed) || !errors.Is(err, ErrKernelPanic)):
						t.Errorf("graph %d stage 3: %v, want ErrChildFailed wrapping ErrKernelPanic", graph, err)
					case st > 3 && !errors.Is(err, ErrDepFailed):
						t.Errorf("graph %d stage %d: %v, want ErrDepFailed", graph, st, err)
					}
				}
				// Stages 4 and 5 are held by their dependency, but their
				// children were added to them directly and ran.
				if got := ran.Load(); got != 6*50-1 {
					t.Errorf("graph %d: %d kernels ran, want %d", graph, got, 6*50-1)
				}
			}
			must(t, s.Close())
		})
	}
}

// Cancellation mid-graph: while a graph of chains runs on 1, 2 and 4
// workers, Abandon hits random tasks (queued, running, waiting for a
// dependency). Every Wait returns; an abandoned task's dependents fail
// with ErrDepFailed; no task runs twice; Close succeeds.
func TestAdversarialAbandonMidGraph(t *testing.T) {
	const kStep KernelID = 107
	const chains, length = 64, 20
	var hits [chains * length]atomic.Int32
	reg := NewRegistry()
	must(t, reg.Register(kStep, Kernel{Name: "step", CPU: func(_ *Ctx, d *TaskData) error {
		if spinWork(d.Params[0]) == 0 { // burn a little CPU, and use the result
			time.Sleep(time.Microsecond)
		}
		hits[d.Params[0]].Add(1)
		time.Sleep(20 * time.Microsecond)
		return nil
	}}))
	for _, workers := range []int{1, 2, 4} {
		for i := range hits {
			hits[i].Store(0)
		}
		s, err := New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		m, err := s.RegisterThread("main")
		must(t, err)
		ids := make([]TaskID, chains*length)
		for c := range chains {
			prev := NoTask
			for l := range length {
				i := c*length + l
				ids[i], err = m.Add(&Task{Kernel: kStep, Dependency: prev, Data: TaskData{Params: Params{uint32(i)}}})
				must(t, err)
				prev = ids[i]
			}
		}
		abandoned := make(map[int]bool)
		rng := uint32(workers)
		for range 40 {
			rng = rng*1664525 + 1013904223
			i := int(rng>>8) % len(ids)
			if s.Abandon(ids[i], errors.New("cancelled")) == nil {
				abandoned[i] = true
			}
			time.Sleep(50 * time.Microsecond)
		}
		within(t, 20*time.Second, fmt.Sprintf("abandoned graph on %d workers", workers), func() {
			for c := range chains {
				failed := false
				for l := range length {
					i := c*length + l
					err := m.Wait(ids[i])
					switch {
					case abandoned[i]:
						if !errors.Is(err, ErrAbandoned) {
							t.Errorf("abandoned %v: %v", ids[i], err)
						}
						failed = true
					case failed:
						if !errors.Is(err, ErrDepFailed) {
							t.Errorf("dependent %v of an abandoned task: %v", ids[i], err)
						}
					case err != nil:
						t.Errorf("%v: %v", ids[i], err)
					}
					if failed && !abandoned[i] && hits[i].Load() != 0 {
						t.Errorf("%v ran after its dependency was abandoned", ids[i])
					}
				}
			}
			must(t, s.Close())
		})
		for i := range hits {
			if h := hits[i].Load(); h > 1 {
				t.Errorf("task %d ran %d times", i, h)
			}
		}
	}
}

// Close called from a kernel used to wait for ever for that very kernel to
// return. It fails with ErrCloseInKernel and closes nothing; Close from
// outside then works.
func TestAdversarialCloseFromKernel(t *testing.T) {
	const kCloser KernelID = 108
	var s *Scheduler
	res := make(chan error, 1)
	reg := NewRegistry()
	must(t, reg.Register(kCloser, Kernel{Name: "closer", CPU: func(*Ctx, *TaskData) error {
		err := s.Close()
		res <- err
		return err
	}}))
	for _, workers := range []int{1, 2} {
		var err error
		s, err = New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		id, err := s.Add(&Task{Kernel: kCloser})
		must(t, err)
		within(t, 20*time.Second, "Close from a kernel", func() {
			if err := <-res; !errors.Is(err, ErrCloseInKernel) {
				t.Errorf("Close from a kernel: %v, want ErrCloseInKernel", err)
			}
			if err := s.Wait(id); !errors.Is(err, ErrCloseInKernel) {
				t.Errorf("the closer task: %v", err)
			}
			// Still open: more work runs, then Close from outside.
			id, err := s.Add(&Task{})
			must(t, err)
			must(t, s.Wait(id))
			must(t, s.Close())
		})
	}
}

// A kernel that calls runtime.Goexit (testing's t.Fatal in a kernel does)
// used to end its thread's goroutine with the task unfinished: every Wait
// on it, its dependents and Close hung. Now the task fails with
// ErrKernelPanic saying Goexit, kernels suspended under it on that
// goroutine fail too, a worker is replaced, and the scheduler goes on.
func TestKernelGoexit(t *testing.T) {
	const kExit, kOuter, kOK KernelID = 109, 110, 111
	var ran atomic.Int64
	reg := NewRegistry()
	must(t, reg.Register(kExit, Kernel{Name: "exit", CPU: func(*Ctx, *TaskData) error { runtime.Goexit(); return nil }}))
	must(t, reg.Register(kOK, Kernel{Name: "ok", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return nil }}))
	must(t, reg.Register(kOuter, Kernel{Name: "outer", CPU: func(c *Ctx, _ *TaskData) error {
		id, err := c.Add(&Task{Kernel: kExit, Parent: c.Current()})
		if err != nil {
			return err
		}
		return c.Wait(id) // runs it here (one worker): the goroutine exits under this kernel
	}}))
	isGoexit := func(err error) bool {
		return errors.Is(err, ErrKernelPanic) && strings.Contains(err.Error(), "Goexit")
	}
	s, err := New(Config{Kernels: reg, Workers: 1, MainThreads: 1})
	must(t, err)
	within(t, 20*time.Second, "Goexit in kernels", func() {
		for round := range 3 {
			x, err := s.Add(&Task{Kernel: kExit})
			must(t, err)
			dep, err := s.Add(&Task{Kernel: kOK, Dependency: x})
			must(t, err)
			if err := s.Wait(x); !isGoexit(err) {
				t.Errorf("round %d: a kernel that called Goexit: %v, want ErrKernelPanic naming Goexit", round, err)
			}
			if err := s.Wait(dep); !errors.Is(err, ErrDepFailed) {
				t.Errorf("round %d: its dependent: %v, want ErrDepFailed", round, err)
			}
			o, err := s.Add(&Task{Kernel: kOuter})
			must(t, err)
			if err := s.Wait(o); !isGoexit(err) {
				t.Errorf("round %d: a kernel suspended under the Goexit: %v, want ErrKernelPanic naming Goexit", round, err)
			}
			// The replaced worker runs what comes next.
			ok, err := s.Add(&Task{Kernel: kOK})
			must(t, err)
			must(t, s.Wait(ok))
		}
		// A registered thread whose goroutine runs such a kernel in Wait:
		// that goroutine ends, the task fails, others see it.
		p, err := s.Add(&Task{Kernel: kExit, Affinity: OnThread(0)}) // the first thread to register
		must(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := s.RegisterThread("doomed")
			if err != nil {
				t.Error(err)
				return
			}
			c.Wait(p)
			t.Error("Wait returned on a goroutine that should have exited")
		}()
		<-done
		if err := s.Wait(p); !isGoexit(err) {
			t.Errorf("pinned kernel that called Goexit: %v", err)
		}
		must(t, s.Close())
	})
	if ran.Load() != 3 {
		t.Errorf("%d tasks ran after the Goexits, want 3", ran.Load())
	}
}

// Close while a kernel and a registered thread wait for an Event that
// nobody signals: Close used to wait for ever for that kernel (whose
// thread spun, its sleep returning at once once the workers stopped).
// WaitEvent now returns once Close has run everything that can run.
func TestCloseWithUnsignalledEvent(t *testing.T) {
	const kEv KernelID = 112
	var e *Event
	started := make(chan struct{}, 1)
	reg := NewRegistry()
	must(t, reg.Register(kEv, Kernel{Name: "waits for an event", CPU: func(c *Ctx, _ *TaskData) error {
		started <- struct{}{}
		c.WaitEvent(e)
		if e.IsSet() {
			return errors.New("event set")
		}
		return nil
	}}))
	for _, workers := range []int{1, 2} {
		s, err := New(Config{Kernels: reg, Workers: workers})
		must(t, err)
		e = s.NewEvent()
		id, err := s.Add(&Task{Kernel: kEv})
		must(t, err)
		<-started
		mainDone := make(chan struct{})
		go func() {
			defer close(mainDone)
			m, err := s.RegisterThread("main")
			if err != nil {
				return // Close came first
			}
			m.WaitEvent(e)
		}()
		within(t, 20*time.Second, fmt.Sprintf("Close with an unsignalled event (%d workers)", workers), func() {
			must(t, s.Close())
			<-mainDone
			must(t, s.Wait(id))
		})
	}
}

// A simple kernel gets no streams (Add copies only its header, Params and
// Data), so Add refuses a simple task that names any: memory, a count or
// a device buffer in any of the eight streams. Stride and Offset alone
// name nothing and pass. (Add checks the three words of every stream at
// once, and looks at each only when one is set.)
func TestSimpleTaskRefusesStreams(t *testing.T) {
	const kSimple KernelID = 113
	reg := NewRegistry()
	must(t, reg.Register(kSimple, Kernel{Name: "simple", CPU: func(*Ctx, *TaskData) error { return nil }}))
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	buf := make([]byte, 16)
	for i := range 2 * MaxStreams {
		for field := range 5 {
			tk := Task{Kernel: kSimple}
			st := &tk.Data.In[i%MaxStreams]
			if i >= MaxStreams {
				st = &tk.Data.Out[i%MaxStreams]
			}
			switch field {
			case 0:
				st.Bytes = buf
			case 1:
				st.Bytes = buf[:0] // empty but not nil: still memory given
			case 2:
				st.Count = 1
			case 3:
				st.Buffer = 7
			case 4:
				st.Stride, st.Offset = 4, 64 // names nothing
			}
			id, err := s.Add(&tk)
			if field == 4 {
				if err != nil {
					t.Errorf("stream %d with only Stride and Offset: %v", i, err)
				} else {
					must(t, s.Wait(id))
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), "simple kernels take no streams") {
				t.Errorf("stream %d, field %d given to a simple kernel: %v, want an error", i, field, err)
			}
		}
	}
}
