package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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

func TestExactlyOnceAndHierarchy(t *testing.T) {
	for _, w := range workerCounts {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			const n = 2000
			r := newRecorder(n + 1)
			s, m := start(t, Config{Workers: w}, r, nil)
			root, err := m.Create(&Task{})
			must(t, err)
			// A parent whose kernel adds children while it runs.
			p := rec(n)
			p.Parent = root
			for i := 0; i < n; i++ {
				c := rec(i)
				c.Parent = root
				_, err := m.Add(c)
				must(t, err)
			}
			must(t, m.Run(root))
			must(t, m.Wait(root))
			for i := 0; i < n; i++ {
				if got := r.runs[i].Load(); got != 1 {
					t.Fatalf("task %d ran %d times", i, got)
				}
			}
			if !s.IsFinished(root) {
				t.Fatal("root not finished after Wait")
			}
			if s.Pending() != 0 {
				t.Fatalf("%d tasks still pending", s.Pending())
			}
		})
	}
}

func TestChildrenAddedWhileParentRuns(t *testing.T) {
	const kSpawn KernelID = 50
	reg := NewRegistry()
	var leaves atomic.Int32
	var parentDoneBeforeChildren atomic.Bool
	must(t, reg.Register(kSpawn, Kernel{Name: "spawn", CPU: func(c *Ctx, d *TaskData) error {
		if d.Params[0] == 0 {
			leaves.Add(1)
			time.Sleep(time.Microsecond)
			return nil
		}
		for i := 0; i < 3; i++ {
			var ch Task
			ch.Kernel = kSpawn
			ch.Parent = c.Current()
			ch.Data.Params[0] = d.Params[0] - 1
			if _, err := c.Add(&ch); err != nil {
				return err
			}
		}
		return nil
	}}))
	s, m := start(t, Config{Kernels: reg, Workers: 2}, nil, nil)
	var root Task
	root.Kernel = kSpawn
	root.Data.Params[0] = 5
	id, err := m.Add(&root)
	must(t, err)
	must(t, m.Wait(id))
	if got := leaves.Load(); got != 243 {
		t.Fatalf("leaves %d, want 3^5=243", got)
	}
	if parentDoneBeforeChildren.Load() || s.Pending() != 0 {
		t.Fatal("parent completed before its children")
	}
}

func TestDependencyOrdering(t *testing.T) {
	for _, w := range workerCounts {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			const n = 500
			r := newRecorder(n)
			_, m := start(t, Config{Workers: w}, r, nil)
			// A chain: i depends on i-1.
			var prev TaskID
			for i := 0; i < n; i++ {
				tk := rec(i)
				tk.Dependency = prev
				id, err := m.Add(tk)
				must(t, err)
				prev = id
			}
			must(t, m.Wait(prev))
			r.mu.Lock()
			defer r.mu.Unlock()
			if !slices.IsSorted(r.order) || len(r.order) != n {
				t.Fatalf("chain ran out of order: %v", r.order[:min(20, len(r.order))])
			}
		})
	}
}

func TestJoin(t *testing.T) {
	const n = 64
	r := newRecorder(n + 1)
	_, m := start(t, Config{Workers: 3}, r, nil)
	join, err := m.Create(&Task{})
	must(t, err)
	for i := 0; i < n; i++ {
		tk := rec(i)
		tk.Parent = join
		_, err := m.Add(tk)
		must(t, err)
	}
	after := rec(n)
	after.Dependency = join
	last, err := m.Add(after)
	must(t, err)
	must(t, m.Run(join))
	must(t, m.Wait(last))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.order[len(r.order)-1] != n || len(r.order) != n+1 {
		t.Fatalf("task after the join did not run last: %v", r.order)
	}
}

func TestErrorPropagation(t *testing.T) {
	for _, kern := range []KernelID{kFail, kPanic} {
		t.Run(fmt.Sprint(kern), func(t *testing.T) {
			r := newRecorder(4)
			s, m := start(t, Config{Workers: 2}, r, nil)
			parent, err := m.Create(&Task{})
			must(t, err)
			bad := &Task{Kernel: kern, Parent: parent}
			bad.Data.Params[0] = 7
			badID, err := m.Add(bad)
			must(t, err)
			dep := rec(0)
			dep.Dependency = badID
			depID, err := m.Add(dep)
			must(t, err)
			dep2 := rec(1)
			dep2.Dependency = depID
			dep2ID, err := m.Add(dep2)
			must(t, err)
			must(t, m.Run(parent))

			err = m.Wait(badID)
			var te *TaskError
			if !errors.As(err, &te) || te.Task != badID || te.Kernel != kern {
				t.Fatalf("bad task error %v does not name task %v kernel %d", err, badID, kern)
			}
			if kern == kPanic && !errors.Is(err, ErrKernelPanic) {
				t.Fatalf("panic error %v", err)
			}
			if kern == kFail && !strings.Contains(err.Error(), "boom 7") {
				t.Fatalf("error %v lost the kernel's message", err)
			}
			for _, id := range []TaskID{depID, dep2ID} {
				if err := m.Wait(id); !errors.Is(err, ErrDepFailed) {
					t.Fatalf("dependent %v: %v, want ErrDepFailed", id, err)
				}
			}
			if r.runs[0].Load() != 0 || r.runs[1].Load() != 0 {
				t.Fatal("a dependent of a failed task ran")
			}
			if err := m.Wait(parent); !errors.Is(err, ErrChildFailed) {
				t.Fatalf("parent: %v, want ErrChildFailed", err)
			}
			// A dependency added after the failure fails at once.
			late := rec(2)
			late.Dependency = badID
			lateID, err := m.Add(late)
			must(t, err)
			if err := m.Wait(lateID); !errors.Is(err, ErrDepFailed) {
				t.Fatalf("late dependent: %v", err)
			}
			// The scheduler stays usable.
			ok, err := m.Add(rec(3))
			must(t, err)
			must(t, m.Wait(ok))
			if r.runs[3].Load() != 1 {
				t.Fatal("scheduler unusable after a failure")
			}
			_ = s
		})
	}
}

func TestBadInput(t *testing.T) {
	s, m := start(t, Config{Workers: 1}, newRecorder(1), nil)
	other, om := start(t, Config{Workers: 1}, newRecorder(1), nil)
	_ = other
	foreign, err := om.Create(&Task{})
	must(t, err)
	x := make([]uint32, 10)
	y := make([]uint32, 9)
	held, err := m.Create(&Task{})
	must(t, err)
	cases := []struct {
		name string
		task Task
		want error
	}{
		{"unknown kernel", Task{Kernel: 999}, ErrUnknownKernel},
		{"foreign parent", Task{Parent: foreign}, ErrForeignTask},
		{"foreign dependency", Task{Dependency: foreign}, ErrForeignTask},
		{"never issued", Task{Dependency: makeID(s.id, 77, 5)}, ErrNotIssued},
		{"depends on parent", Task{Parent: held, Dependency: held}, ErrSelfDepend},
		{"bad affinity", Task{Affinity: OnThread(3)}, ErrBadAffinity},
		{"no gpu", Task{Affinity: GPU}, ErrNoExecutor},
		{"bad priority", Task{Priority: 9}, ErrBadPriority},
	}
	for _, c := range cases {
		if _, err := m.Add(&c.task); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// Stream shape mismatches name the stream.
	bad := []Task{
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{StreamOf(x)}, Out: [4]Stream{StreamOf(y)}}},
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{StreamOf(x)}}},
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{{Bytes: make([]byte, 8), Stride: 4, Count: 10}}, Out: [4]Stream{StreamOf(x)}}},
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{StreamOf(make([]uint16, 10))}, Out: [4]Stream{StreamOf(x)}}},
		{Kernel: kRange, Data: TaskData{Elements: 10, In: [4]Stream{StreamOf(x), StreamOf(x)}, Out: [4]Stream{StreamOf(x)}}},
		{Kernel: kAvg32, Data: TaskData{Elements: 2, In: [4]Stream{StreamOf(make([]float32, 63))}, Out: [4]Stream{StreamOf(make([]float32, 2))}}},
	}
	for i, b := range bad {
		if _, err := m.Add(&b); err == nil || !strings.Contains(err.Error(), "stream") {
			t.Errorf("bad streams %d: %v", i, err)
		}
	}
	if err := m.Run(held); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(held); err == nil {
		t.Error("second Run accepted")
	}
	must(t, m.Wait(held))
	// Registry misuse.
	reg := NewRegistry()
	if err := reg.Register(0, Kernel{Name: "x", CPU: func(*Ctx, *TaskData) error { return nil }}); err == nil {
		t.Error("registered kernel 0")
	}
	if err := reg.Register(1, Kernel{Name: "x"}); err == nil {
		t.Error("registered kernel without CPU")
	}
	if err := reg.Register(1, Kernel{Name: "x", Kind: Reduce, CPU: func(*Ctx, *TaskData) error { return nil }}); err == nil {
		t.Error("registered reduce kernel without factor")
	}
	// After Close.
	s2, m2 := start(t, Config{Workers: 1}, newRecorder(1), nil)
	must(t, s2.Close())
	if _, err := m2.Add(rec(0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if _, err := s2.Add(rec(0)); !errors.Is(err, ErrClosed) {
		t.Errorf("foreign Add after Close: %v", err)
	}
}

// TestStress runs large random task graphs (nested parents, children added
// from running kernels, dependencies, joins, priorities, registered-thread
// affinity, streaming splits, failing kernels) and checks that every task ran
// exactly once or, if an ancestor of its dependency chain failed, never; that
// no task started before its dependency ended; that no parent completed
// before its children; and that each task's error is what propagation
// predicts. VKJOBS_SOAK=3m (make soak) runs rounds for that long.
func TestStress(t *testing.T) {
	soak, _ := time.ParseDuration(os.Getenv("VKJOBS_SOAK"))
	rounds, n := 8, 2000
	if testing.Short() {
		rounds = 2
	}
	start := time.Now()
	var tasks int64
	for round := 0; ; round++ {
		if soak == 0 && round >= rounds || soak > 0 && time.Since(start) > soak {
			break
		}
		if soak > 0 {
			n = 20000
		}
		tasks += int64(stressRound(t, uint64(round), n))
		if t.Failed() {
			return
		}
	}
	if soak > 0 {
		t.Logf("soak: %d tasks in %v (%.0f tasks/s), goroutines now %d", tasks, time.Since(start).Round(time.Second),
			float64(tasks)/time.Since(start).Seconds(), runtime.NumGoroutine())
	}
}

type stressNode struct {
	parent, dep    int // -1 for none
	fails          bool
	held           bool // a parent: created held, run after its static children
	spawn          int  // children it adds while running (indices spawnBase...)
	spawnBase      int
	start, end     atomic.Int64
	runs           atomic.Int32
	id             TaskID
	witness        int // node that depends on this parent (checks completion order), -1
	isWitnessFor   int
	dynamicChildOf int
}

func stressRound(t *testing.T, seed uint64, n int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	var clock atomic.Int64
	// Static nodes 0..n-1, then dynamic children.
	nodes := make([]*stressNode, n)
	for i := range nodes {
		nodes[i] = &stressNode{parent: -1, dep: -1, witness: -1, isWitnessFor: -1, dynamicChildOf: -1}
	}
	var heldIdx []int
	// out[x] lists the nodes that cannot complete before x completes
	// (x's dependents, x's parent). A dependency d for node i with
	// parent p closes a cycle, a deadlock by construction, if p already
	// reaches d: such dependencies are not generated.
	out := make([][]int, n)
	for i := 0; i < n; i++ {
		nd := nodes[i]
		if i > 0 && rng.IntN(3) == 0 && len(heldIdx) > 0 {
			nd.parent = heldIdx[rng.IntN(len(heldIdx))]
		}
		if i > 0 && rng.IntN(3) == 0 {
			d := rng.IntN(i)
			if nd.parent < 0 || !reaches(out, nd.parent, d) {
				nd.dep = d
			}
		}
		if nd.dep >= 0 {
			out[nd.dep] = append(out[nd.dep], i)
		}
		if nd.parent >= 0 {
			out[i] = append(out[i], nd.parent)
		}
		nd.fails = rng.IntN(200) == 0
		if rng.IntN(10) == 0 {
			nd.held = true
			heldIdx = append(heldIdx, i)
		}
		if rng.IntN(20) == 0 {
			nd.spawn = 1 + rng.IntN(4)
		}
	}
	// Dynamic children and witnesses get indices after the static nodes.
	for i := 0; i < n; i++ {
		if nodes[i].spawn > 0 {
			nodes[i].spawnBase = len(nodes)
			for k := 0; k < nodes[i].spawn; k++ {
				nodes = append(nodes, &stressNode{parent: i, dep: -1, witness: -1, isWitnessFor: -1, dynamicChildOf: i})
			}
		}
	}
	for _, p := range heldIdx {
		w := len(nodes)
		nodes = append(nodes, &stressNode{parent: -1, dep: p, witness: -1, isWitnessFor: p, dynamicChildOf: -1})
		nodes[p].witness = w
	}
	reg := NewRegistry()
	const kS KernelID = 1
	must(t, reg.Register(kS, Kernel{Name: "stress", CPU: func(c *Ctx, d *TaskData) error {
		nd := nodes[d.Params[0]]
		nd.start.Store(clock.Add(1))
		nd.runs.Add(1)
		for i := 0; i < int(d.Params[1]); i++ {
			runtime.Gosched()
		}
		for k := 0; k < nd.spawn; k++ {
			var ch Task
			ch.Kernel = kS
			ch.Parent = c.Current()
			ch.Data.Params[0] = uint32(nd.spawnBase + k)
			if _, err := c.Add(&ch); err != nil {
				return err
			}
		}
		nd.end.Store(clock.Add(1))
		if nd.fails {
			return errors.New("injected failure")
		}
		return nil
	}}))
	s, err := New(Config{Kernels: reg, Workers: 1 + int(seed%4), MainThreads: 2, PoolSize: 2 * n})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	other, err := s.RegisterThread("render")
	must(t, err)
	done := s.NewEvent()
	var wg sync.WaitGroup
	wg.Go(func() { other.WaitEvent(done) })
	add := func(i int) {
		nd := nodes[i]
		var tk Task
		tk.Kernel = kS
		tk.Data.Params[0] = uint32(i)
		tk.Data.Params[1] = uint32(rng.IntN(3))
		tk.Priority = Priority(rng.IntN(3) - 1)
		switch rng.IntN(8) {
		case 0:
			tk.Affinity = OnThread(0)
		case 1:
			tk.Affinity = OnThread(1)
		}
		if nd.parent >= 0 {
			tk.Parent = nodes[nd.parent].id
		}
		if nd.dep >= 0 {
			tk.Dependency = nodes[nd.dep].id
		}
		var id TaskID
		var err error
		if nd.held {
			id, err = m.Create(&tk)
		} else {
			id, err = m.Add(&tk)
		}
		must(t, err)
		nd.id = id
	}
	staticN := n
	for i := 0; i < staticN; i++ {
		add(i)
	}
	for i := staticN; i < len(nodes); i++ {
		if nodes[i].isWitnessFor >= 0 {
			add(i)
		}
	}
	// Start the held parents (children first: reverse order of creation).
	for k := len(heldIdx) - 1; k >= 0; k-- {
		must(t, m.Run(nodes[heldIdx[k]].id))
	}
	for i := range nodes {
		if nodes[i].dynamicChildOf < 0 {
			m.Wait(nodes[i].id)
		}
	}
	done.Signal()
	wg.Wait()
	// Expected failures: own failure, failed dependency, failed child.
	var fail func(i int) bool
	memo := make([]int8, len(nodes))
	fail = func(i int) bool {
		if memo[i] != 0 {
			return memo[i] > 0
		}
		memo[i] = -1
		nd := nodes[i]
		f := nd.dep >= 0 && fail(nd.dep)
		if !f && nd.fails {
			f = true
		}
		if !f {
			for j := range nodes {
				if nodes[j].parent == i && fail(j) {
					f = true
					break
				}
			}
		}
		if f {
			memo[i] = 1
		}
		return f
	}
	for i, nd := range nodes {
		depFailed := nd.dep >= 0 && fail(nd.dep)
		parentGone := nd.dynamicChildOf >= 0 && nodes[nd.dynamicChildOf].runs.Load() == 0
		want := int32(1)
		if depFailed || parentGone {
			want = 0
		}
		if r := nd.runs.Load(); r != want {
			t.Fatalf("seed %d: node %d ran %d times, want %d", seed, i, r, want)
		}
		if want == 0 {
			continue
		}
		if nd.dep >= 0 && nd.start.Load() < nodes[nd.dep].end.Load() {
			t.Fatalf("seed %d: node %d started before its dependency %d ended", seed, i, nd.dep)
		}
		if p := nd.isWitnessFor; p >= 0 {
			for j := range nodes {
				if nodes[j].parent == p && nodes[j].runs.Load() > 0 && nodes[j].end.Load() > nd.start.Load() {
					t.Fatalf("seed %d: parent %d completed before its child %d ended", seed, p, j)
				}
			}
		}
		if nd.dynamicChildOf < 0 {
			got := s.Err(nd.id) != nil
			if got != fail(i) {
				t.Fatalf("seed %d: node %d error %v, want failure=%v", seed, i, s.Err(nd.id), fail(i))
			}
		}
	}
	must(t, s.Close())
	return len(nodes)
}
