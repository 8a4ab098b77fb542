package sched

// Misuse shapes the users of other schedulers reported as hangs, written
// in this API. Each must complete, or end with an error naming its cause;
// none may hang. Each test bounds itself with a deadline, so a hang is a
// failure with a message, not a stuck test run. The outcome of each is
// the table in doc.go ("Misuse the peers' users reported").

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	kmInit KernelID = 70 + iota
	kmSet
	kmRunGraph
	kmLockWait
	kmLeaf
	kmOuter
	kmInner
	kmPinnedLoop
	kmFIFOWait
)

// Taskflow #756 (corun_until): flow i's first task works while waiting
// for future i, its second sets future i+1; the main thread sets future
// 0. Two workers, four flows: a helping wait ran flow j's first task on
// top of flow i's, and flow i could not return before flow j, whose event
// needs flow i: a hang. Here the futures are Events and the wait is
// WaitEvent, which hands the worker over instead: every flow completes.
func TestPeerMisuseCorunUntilChain(t *testing.T) {
	const flows = 4
	reg := NewRegistry()
	s, err := New(Config{Kernels: reg, Workers: 2})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	var ev [flows + 1]*Event
	for i := range ev {
		ev[i] = s.NewEvent()
	}
	must(t, reg.Register(kmInit, Kernel{Name: "init", CPU: func(c *Ctx, d *TaskData) error {
		c.WaitEvent(ev[d.Params[0]])
		if !ev[d.Params[0]].IsSet() {
			return errors.New("woken without the event (Close)")
		}
		return nil
	}}))
	must(t, reg.Register(kmSet, Kernel{Name: "set", CPU: func(_ *Ctx, d *TaskData) error {
		ev[d.Params[0]+1].Signal()
		return nil
	}}))
	var sets [flows]TaskID
	for i := range flows {
		ti := Task{Kernel: kmInit}
		ti.Data.Params[0] = uint32(i)
		init, err := m.Add(&ti)
		must(t, err)
		ts := Task{Kernel: kmSet, Dependency: init}
		ts.Data.Params[0] = uint32(i)
		sets[i], err = m.Add(&ts)
		must(t, err)
	}
	time.Sleep(5 * time.Millisecond) // let the workers take the first tasks
	ev[0].Signal()
	within(t, 30*time.Second, "corun_until chain", func() {
		for i, id := range sets {
			if err := m.Wait(id); err != nil {
				t.Errorf("flow %d: %v", i, err)
			}
		}
	})
	if !ev[flows].IsSet() {
		t.Fatal("the last flow did not set its successor's event")
	}
}

// The same flows with each future written as a held gate (Create): flow
// i's first task depends on gate i, its second runs gate i+1. No thread
// waits, so nothing can nest: every flow completes.
func TestPeerMisuseCorunUntilAsDependencies(t *testing.T) {
	const flows = 4
	reg := NewRegistry()
	s, err := New(Config{Kernels: reg, Workers: 2})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	var gates [flows + 1]TaskID
	for i := range gates {
		gates[i], err = m.Create(&Task{})
		must(t, err)
	}
	var ran atomic.Int32
	must(t, reg.Register(kmInit, Kernel{Name: "init", CPU: func(*Ctx, *TaskData) error { ran.Add(1); return nil }}))
	must(t, reg.Register(kmSet, Kernel{Name: "set", CPU: func(c *Ctx, d *TaskData) error {
		return c.Run(gates[d.Params[0]+1])
	}}))
	var sets [flows]TaskID
	for i := range flows {
		ti := Task{Kernel: kmInit, Dependency: gates[i]}
		init, err := m.Add(&ti)
		must(t, err)
		ts := Task{Kernel: kmSet, Dependency: init}
		ts.Data.Params[0] = uint32(i)
		sets[i], err = m.Add(&ts)
		must(t, err)
	}
	must(t, m.Run(gates[0]))
	within(t, 30*time.Second, "corun_until chain as dependencies", func() {
		for i, id := range sets {
			if err := m.Wait(id); err != nil {
				t.Errorf("flow %d: %v", i, err)
			}
		}
		must(t, m.Wait(gates[flows]))
	})
	if ran.Load() != flows {
		t.Fatalf("%d first tasks ran, want %d", ran.Load(), flows)
	}
}

// Taskflow #435 (run_and_wait): two tasks run the same taskflow and wait
// for it, at the same time. Here two kernels run one frame graph: one
// run proceeds, the other is refused with ErrGraphRunning (a graph runs
// once at a time), and then runs it again itself.
func TestPeerMisuseRunAndWaitSameGraph(t *testing.T) {
	reg := NewRegistry()
	s, err := New(Config{Kernels: reg, Workers: 2})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	var counter atomic.Int32
	must(t, reg.Register(kmLeaf, Kernel{Name: "count", CPU: func(*Ctx, *TaskData) error {
		counter.Add(1)
		time.Sleep(time.Millisecond)
		return nil
	}}))
	g := s.NewGraph()
	a, err := g.Add(&Task{Kernel: kmLeaf})
	must(t, err)
	b, err := g.Add(&Task{Kernel: kmLeaf})
	must(t, err)
	must(t, g.Precede(a, b))
	var refused atomic.Int32
	must(t, reg.Register(kmRunGraph, Kernel{Name: "run-graph", CPU: func(c *Ctx, _ *TaskData) error {
		for {
			err := g.RunCtx(c)
			if !errors.Is(err, ErrGraphRunning) {
				return err
			}
			refused.Add(1)
			time.Sleep(100 * time.Microsecond)
		}
	}}))
	c1, err := m.Add(&Task{Kernel: kmRunGraph})
	must(t, err)
	c2, err := m.Add(&Task{Kernel: kmRunGraph})
	must(t, err)
	within(t, 30*time.Second, "run_and_wait from two tasks", func() {
		must(t, m.Wait(c1))
		must(t, m.Wait(c2))
	})
	if got := counter.Load(); got != 4 {
		t.Fatalf("the graph's nodes ran %d times in all, want 4 (two runs)", got)
	}
}

// Taskflow #506 (nested tasks and a semaphore): a task holds a lock and
// waits for its children while other tasks want the lock. Two forms:
//   - The lock as the scheduler's order (a semaphore of one is a chain:
//     each holder depends on the previous): its helping Wait never runs
//     another holder, and everything completes.
//   - A Go mutex, invisible to any scheduler: threads that block in Lock
//     cannot run the holder's children. A helping Wait could hang; WaitFor
//     ends with ErrTimeout naming the task it waited for, and every task
//     ends, with that error or done.
func TestPeerMisuseNestedLockThenWait(t *testing.T) {
	reg := NewRegistry()
	s, err := New(Config{Kernels: reg, Workers: 2})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	var mu sync.Mutex
	var inside atomic.Int32
	must(t, reg.Register(kmLeaf, Kernel{Name: "leaf", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kmLockWait, Kernel{Name: "lock-then-wait", CPU: func(c *Ctx, d *TaskData) error {
		mutex := d.Params[0] == 1
		if mutex {
			mu.Lock()
			defer mu.Unlock()
		}
		if inside.Add(1) != 1 {
			return errors.New("two holders of the lock")
		}
		defer inside.Add(-1)
		for range 4 {
			id, err := c.Add(&Task{Kernel: kmLeaf})
			if err != nil {
				return err
			}
			if mutex {
				err = c.WaitFor(id, 200*time.Millisecond)
			} else {
				err = c.Wait(id)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}}))
	for _, mutex := range []uint32{0, 1} {
		var ids []TaskID
		prev := NoTask
		for range 16 {
			tk := Task{Kernel: kmLockWait}
			tk.Data.Params[0] = mutex
			if mutex == 0 {
				tk.Dependency = prev
			}
			id, err := m.Add(&tk)
			must(t, err)
			ids = append(ids, id)
			prev = id
		}
		timedOut := 0
		within(t, 60*time.Second, "a lock held across a wait", func() {
			for _, id := range ids {
				err := m.WaitFor(id, 30*time.Second)
				switch {
				case err == nil:
				case mutex == 1 && errors.Is(err, ErrTimeout) && strings.Contains(err.Error(), "lock-then-wait"):
					timedOut++
				default:
					t.Errorf("mutex=%d: %v", mutex, err)
				}
			}
		})
		t.Logf("mutex=%d: %d of %d holders timed out waiting for their children", mutex, timedOut, len(ids))
	}
}

// oneTBB #1316 (nested parallelism): each outer task runs an inner loop
// whose pieces wait for each other (a barrier), assuming they run at
// once. With two threads they cannot: here the barrier is an Event that
// the last piece signals, and WaitEvent lets the other pieces run
// meanwhile (a worker hands them to another goroutine, the registered
// thread runs them on top), so every outer task completes.
func TestPeerMisuseNestedBarrier(t *testing.T) {
	const outer, inner = 4, 6
	reg := NewRegistry()
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	type barrier struct {
		n  atomic.Int32
		ev *Event
	}
	var bars [outer]barrier
	for i := range bars {
		bars[i].ev = s.NewEvent()
	}
	must(t, reg.Register(kmInner, Kernel{Name: "inner", CPU: func(c *Ctx, d *TaskData) error {
		b := &bars[d.Params[0]]
		if b.n.Add(1) == inner {
			b.ev.Signal()
		}
		c.WaitEvent(b.ev)
		if !b.ev.IsSet() {
			return errors.New("barrier left by Close")
		}
		return nil
	}}))
	must(t, reg.Register(kmOuter, Kernel{Name: "outer", CPU: func(c *Ctx, d *TaskData) error {
		var ids [inner]TaskID
		for j := range ids {
			tk := Task{Kernel: kmInner}
			tk.Data.Params[0] = d.Params[0]
			var err error
			if ids[j], err = c.Add(&tk); err != nil {
				return err
			}
		}
		for _, id := range ids {
			if err := c.Wait(id); err != nil {
				return err
			}
		}
		return nil
	}}))
	var ids [outer]TaskID
	for i := range ids {
		tk := Task{Kernel: kmOuter}
		tk.Data.Params[0] = uint32(i)
		ids[i], err = m.Add(&tk)
		must(t, err)
	}
	within(t, 60*time.Second, "nested barrier", func() {
		for i, id := range ids {
			if err := m.Wait(id); err != nil && !errors.Is(err, ErrDeadlock) {
				t.Errorf("outer %d: %v", i, err)
			}
		}
	})
}

// oneTBB #2156 (a FIFO task enqueued during a wait, one slot): with one
// thread, a task added while that thread waits must still run. Here one
// worker and the main thread: a kernel adds a task and waits for it; the
// main thread waits for the kernel.
func TestPeerMisuseTaskAddedDuringWait(t *testing.T) {
	reg := NewRegistry()
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	must(t, reg.Register(kmLeaf, Kernel{Name: "leaf", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kmFIFOWait, Kernel{Name: "add-then-wait", CPU: func(c *Ctx, _ *TaskData) error {
		for range 100 {
			id, err := c.Add(&Task{Kernel: kmLeaf, Priority: PriorityLow})
			if err != nil {
				return err
			}
			if err := c.Wait(id); err != nil {
				return err
			}
		}
		return nil
	}}))
	id, err := m.Add(&Task{Kernel: kmFIFOWait})
	must(t, err)
	within(t, 30*time.Second, "a task added during a wait", func() { must(t, m.Wait(id)) })
}

// enkiTS #128 (a pinned task that loops until shutdown): a task pinned
// to a registered thread runs a loop that waits for work until the
// scheduler shuts down, and WaitforAllAndShutdown waited for it for ever.
// Here the loop waits in WaitEvent, which Close ends; Close returns.
func TestPeerMisusePinnedLoopAtClose(t *testing.T) {
	reg := NewRegistry()
	s, err := New(Config{Kernels: reg, Workers: 1, MainThreads: 2})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	io, err := s.RegisterThread("io")
	must(t, err)
	work := s.NewEvent()
	var loops atomic.Int32
	must(t, reg.Register(kmPinnedLoop, Kernel{Name: "pinned-loop", CPU: func(c *Ctx, _ *TaskData) error {
		for {
			c.WaitEvent(work)
			if !work.IsSet() {
				return nil // Close woke the wait: shut down
			}
			work.Reset()
			loops.Add(1)
		}
	}}))
	_, err = m.Add(&Task{Kernel: kmPinnedLoop, Affinity: OnThread(1)})
	must(t, err)
	ioDone := make(chan struct{})
	var closed atomic.Bool
	go func() {
		defer close(ioDone)
		for io.RunPinned() == 0 && !closed.Load() {
			time.Sleep(time.Millisecond)
		}
	}()
	// The loop is running (it took one piece of work) before Close: a
	// Close that came first would fail the queued task with ErrClosed,
	// another outcome, not this shape.
	work.Signal()
	for deadline := time.Now().Add(20 * time.Second); loops.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the pinned loop never ran")
		}
		time.Sleep(time.Millisecond)
	}
	within(t, 30*time.Second, "Close with a pinned loop", func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		closed.Store(true)
		<-ioDone
	})
}

// enkiTS #51 (WaitforAll and external threads): waiting for everything
// queued a task pinned to an external thread that never runs tasks. Here
// a registered thread that never serves its queue: Close fails its task
// with ErrClosed and returns, and the waiter sees the error.
func TestPeerMisuseWaitForAllUnservedThread(t *testing.T) {
	reg := NewRegistry()
	s, err := New(Config{Kernels: reg, Workers: 1, MainThreads: 2})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	_, err = s.RegisterThread("render") // never calls Wait or RunPinned
	must(t, err)
	must(t, reg.Register(kmLeaf, Kernel{Name: "leaf", CPU: func(*Ctx, *TaskData) error { return nil }}))
	id, err := m.Add(&Task{Kernel: kmLeaf, Affinity: OnThread(1)})
	must(t, err)
	// Waiting for it with a deadline says it has not run.
	if err := m.WaitFor(id, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitFor a task pinned to a thread that serves nothing: %v, want ErrTimeout", err)
	}
	within(t, 30*time.Second, "Close with an unserved pinned task", func() {
		if err := s.Close(); err != nil {
			t.Logf("Close: %v", err)
		}
	})
	if err := s.Err(id); !errors.Is(err, ErrClosed) {
		t.Fatalf("the unserved pinned task: %v, want ErrClosed", err)
	}
}
