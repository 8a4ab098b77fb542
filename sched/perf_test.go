package sched

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestDequeHoldsBurst: a thread that readies 10,000 tasks at once keeps
// them all in its own deque with the default configuration. With the old
// default (1024 per level) 8,976 of them spilled into the shared queue,
// whose lock the thread and every thief then took per task: the slow mode
// of EmptyTask (2-3x), lasting as long as the adder stayed ahead.
func TestDequeHoldsBurst(t *testing.T) {
	const n = 10000
	reg := NewRegistry()
	var release atomic.Bool
	var started atomic.Bool
	must(t, reg.Register(1, Kernel{Name: "block", CPU: func(*Ctx, *TaskData) error {
		started.Store(true)
		for !release.Load() {
			time.Sleep(10 * time.Microsecond)
		}
		return nil
	}}))
	must(t, reg.Register(2, Kernel{Name: "empty", CPU: func(*Ctx, *TaskData) error { return nil }}))
	s, err := New(Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	// Keep the only worker busy, so that nobody takes tasks from main's
	// deque or from the shared queue while we look.
	blocker, err := s.Add(&Task{Kernel: 1})
	must(t, err)
	for !started.Load() {
		time.Sleep(10 * time.Microsecond)
	}
	gate, err := m.Create(&Task{})
	must(t, err)
	root, err := m.Create(&Task{})
	must(t, err)
	for range n {
		if _, err := m.Add(&Task{Kernel: 2, Parent: root, Dependency: gate}); err != nil {
			t.Fatal(err)
		}
	}
	must(t, m.Run(gate)) // readies all n on this thread
	lv := PriorityNormal.level()
	spilled := s.inject[lv].n.Load()
	held := m.dq[lv].bottom - m.dq[lv].top.Load()
	release.Store(true)
	must(t, m.Run(root))
	must(t, m.Wait(root))
	must(t, m.Wait(blocker))
	if spilled != 0 {
		t.Errorf("%d of %d readied tasks spilled into the shared queue (deque held %d)", spilled, n, held)
	}
}

// TestEmptyChainInline: empty tasks are completed where they become ready
// (Scheduler.ready), nested at most maxInline deep: a long chain of them,
// each depending on the previous, completes without a deep stack, and a
// wide fan of joins completes too.
func TestEmptyChainInline(t *testing.T) {
	s, err := New(Config{PoolSize: 1 << 16})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	const chain = 60000 // far deeper than maxInline, in a pool that holds it
	head, err := m.Create(&Task{})
	must(t, err)
	prev := head
	for range chain {
		if prev, err = m.Add(&Task{Dependency: prev}); err != nil {
			t.Fatal(err)
		}
	}
	must(t, m.Run(head))
	must(t, m.Wait(prev))
	if n := s.Pending(); n != 0 {
		t.Fatalf("%d tasks pending after the chain", n)
	}

	// Joins of joins: every level's join depends on the previous level's.
	root, err := m.Create(&Task{})
	must(t, err)
	prev = NoTask
	for range 1000 {
		j, err := m.Create(&Task{Dependency: prev, Parent: root})
		must(t, err)
		for range 4 {
			if _, err := m.Add(&Task{Parent: j, Dependency: prev}); err != nil {
				t.Fatal(err)
			}
		}
		must(t, m.Run(j))
		prev = j
	}
	must(t, m.Run(root))
	must(t, m.Wait(root))
}

// TestPeerShapesAllocateNothing: the shapes of the peer benchmarks (fib
// spawning and waiting inside kernels, the DAG's joins with dependencies,
// completed in place) allocate nothing per task in steady state.
func TestPeerShapesAllocateNothing(t *testing.T) {
	reg := NewRegistry()
	must(t, reg.Register(pkEmpty, Kernel{Name: "empty", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(pkFib, Kernel{Name: "fib", CPU: fibEveryKernel}))
	s, err := New(Config{Kernels: reg})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	var res uint32
	fib := testing.AllocsPerRun(20, func() {
		tk := Task{Kernel: pkFib}
		tk.Data.Params[0] = 15
		tk.Data.Data = &res
		id, err := m.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Wait(id); err != nil {
			t.Fatal(err)
		}
	})
	if res != 610 {
		t.Fatalf("fib(15) = %d", res)
	}
	const levels, width = 8, 8
	dag := testing.AllocsPerRun(50, func() {
		root, _ := m.Create(&Task{})
		node := Task{Kernel: pkEmpty, Parent: root}
		var prev, cur [width]TaskID
		for j := range width {
			cur[j], _ = m.Add(&node)
		}
		for range levels - 1 {
			prev = cur
			for j := range width {
				join, _ := m.Create(&Task{Dependency: prev[j]})
				m.Add(&Task{Parent: join, Dependency: prev[(j+1)%width]})
				m.Run(join)
				node.Dependency = join
				cur[j], _ = m.Add(&node)
			}
		}
		m.Run(root)
		if err := m.Wait(root); err != nil {
			t.Fatal(err)
		}
	})
	if fib != 0 || dag != 0 {
		t.Fatalf("allocations per run: fib(15) %.1f (1973 tasks), DAG %.1f (%d nodes)", fib, dag, levels*width)
	}
}
