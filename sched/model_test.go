package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestModel is a model-based randomized test of the scheduler. Each round
// draws a random graph (a model: what each task is, its parent, its
// dependency, what it will do when it runs), builds it from several
// goroutines at once (a registered thread through its Ctx, plain
// goroutines through the Scheduler) and from inside running kernels, and
// checks what happened against what the model predicts:
//
//   - every task's kernel ran exactly once, or never if its dependency
//     failed, and every element of a streaming task ran exactly once;
//   - no kernel started before its dependency, and all the dependency's
//     descendants, had finished; no Wait returned before the task's whole
//     subtree had finished (a parent completes after its children);
//   - every task's error is the one propagation predicts (its kernel's
//     error or panic, ErrDepFailed, ErrChildFailed), naming the task;
//   - tasks pinned to a registered thread ran there, every range of them;
//   - nothing hangs: a round that does not finish in time fails with every
//     goroutine's stack.
//
// The graphs mix joins (empty held parents), held tasks (Create, then Run,
// by a goroutine drawn at random, once every builder has added their
// children), priorities, pinned and streaming tasks with random grains,
// kernels that fail or panic, kernels that add children and wait for one
// (through their Ctx or through the Scheduler), and, in one round of four,
// Close racing with the running graph (then every Wait must still return,
// and every task that succeeded must have run exactly once).
//
// It runs for about modelBudget, or VKJOBS_SOAK (make soak) if set; make
// test runs it under -race with GOMAXPROCS 1, 2, 4 and 8.
func TestModel(t *testing.T) {
	budget := modelBudget
	if soak, _ := time.ParseDuration(os.Getenv("VKJOBS_SOAK")); soak > 0 {
		budget = soak
	}
	if testing.Short() {
		budget /= 4
	}
	start := time.Now()
	var tasks, elements int64
	rounds := 0
	for ; rounds < 3 || time.Since(start) < budget; rounds++ {
		seed := uint64(time.Now().UnixNano())
		if rounds < 3 {
			seed = uint64(rounds) // the first rounds are the same every run
		}
		n, e := modelRound(t, seed, rounds%4 == 3)
		tasks += n
		elements += e
		if t.Failed() {
			return
		}
	}
	t.Logf("soak: %d rounds, %d tasks, %d stream elements in %v (GOMAXPROCS %d)", rounds, tasks, elements,
		time.Since(start).Round(time.Millisecond), runtime.GOMAXPROCS(0))
}

// modelBudget is how long TestModel runs by default (under -race a round
// of a few thousand tasks takes tens of milliseconds).
const modelBudget = 4 * time.Second

const (
	kModelSimple KernelID = 60 + iota
	kModelStream
)

type modelKind int

const (
	mSimple modelKind = iota
	mFail
	mPanic
	mStream
	mJoin // an empty held parent (KernelNone)
)

var errModel = errors.New("model kernel failed")

type mNode struct {
	r          *modelRun
	idx        int
	kind       modelKind
	held       bool
	parent     *mNode
	dep        *mNode
	aff        Affinity
	prio       Priority
	elems      uint32
	grain      uint32
	failAt     int64 // streaming: the element whose range fails; -1 none
	spawn      int   // children its kernel adds
	waitChild  bool  // its kernel waits for its first child
	dynamic    bool  // added by a kernel
	builder    int   // which goroutine adds it
	runner     int   // which goroutine Runs it (held tasks)
	id         atomic.Uint64
	added      atomic.Bool
	ready      chan struct{} // closed once added (or once it cannot be)
	runs       atomic.Int32
	ended      atomic.Int64 // clock when its kernel's work ended; 0 not yet
	left       atomic.Int64 // streaming: elements not yet run
	marks      []atomic.Uint32
	mu         sync.Mutex
	kids       []*mNode // static and dynamic children
	staticKids []*mNode
}

type modelRun struct {
	s         *Scheduler
	closeMode bool
	clock     atomic.Int64
	mu        sync.Mutex
	viol      []string
	dyn       []*mNode
	seedRng   atomic.Uint64
}

func (r *modelRun) violate(format string, args ...any) {
	r.mu.Lock()
	if len(r.viol) < 20 {
		r.viol = append(r.viol, fmt.Sprintf(format, args...))
	}
	r.mu.Unlock()
}

// unfinished returns a task of n's subtree whose kernel has not finished
// its work (nil if none). Only for a subtree that succeeded (every kernel
// in it ran). A held task runs after all its static children were added
// (or refused), so its subtree is known by the time it completes.
func (r *modelRun) unfinished(n *mNode) *mNode {
	if !n.added.Load() {
		return nil // refused by a closing scheduler: not in the subtree
	}
	if n.kind != mJoin && n.ended.Load() == 0 {
		return n
	}
	n.mu.Lock()
	kids := append([]*mNode(nil), n.kids...)
	n.mu.Unlock()
	for _, k := range kids {
		if u := r.unfinished(k); u != nil {
			return u
		}
	}
	return nil
}

func modelKernel(c *Ctx, d *TaskData) error {
	n := d.Data.(*mNode)
	r := n.r
	if n.dep != nil {
		if u := r.unfinished(n.dep); u != nil {
			r.violate("task %d started before task %d (in the subtree of its dependency %d) finished", n.idx, u.idx, n.dep.idx)
		}
	}
	if i, ok := n.aff.Thread(); ok && c.Index() != r.s.Workers()+i {
		r.violate("task %d pinned to thread(%d) ran [%d, %d) on thread %d", n.idx, i, d.Begin, d.End, c.Index())
	}
	if n.kind == mStream {
		for e := d.Begin; e < d.End; e++ {
			if v := n.marks[e].Add(1); v != 1 {
				r.violate("task %d: element %d ran %d times", n.idx, e, v)
			}
		}
		n.runs.Add(1)
		if n.left.Add(-int64(d.End-d.Begin)) == 0 {
			n.ended.Store(r.clock.Add(1))
		}
		if n.failAt >= int64(d.Begin) && n.failAt < int64(d.End) {
			return fmt.Errorf("task %d element %d: %w", n.idx, n.failAt, errModel)
		}
		return nil
	}
	if v := n.runs.Add(1); v != 1 {
		r.violate("task %d ran %d times", n.idx, v)
	}
	rng := rand.New(rand.NewPCG(uint64(n.idx), r.seedRng.Load()))
	for k := range n.spawn {
		child := &mNode{r: r, idx: -1, kind: mSimple, parent: n, dynamic: true, failAt: -1, ready: make(chan struct{})}
		if rng.IntN(3) == 0 {
			child.kind = mStream
			child.elems, child.grain = uint32(rng.IntN(400)), uint32(1+rng.IntN(64))
			child.marks = make([]atomic.Uint32, child.elems)
			child.left.Store(int64(child.elems))
		}
		if rng.IntN(4) == 0 {
			child.aff = OnThread(1)
		}
		child.prio = Priority(rng.IntN(3) - 1)
		r.mu.Lock()
		child.idx = -(len(r.dyn) + 1)
		r.dyn = append(r.dyn, child)
		r.mu.Unlock()
		n.mu.Lock()
		n.kids = append(n.kids, child)
		n.mu.Unlock()
		id, err := c.Add(child.task(c.Current()))
		if err != nil {
			if !r.closeMode || !errors.Is(err, ErrClosed) {
				r.violate("task %d: Add of a child from its kernel: %v", n.idx, err)
			}
			child.kind = mJoin // never added: nothing to wait for
			close(child.ready)
			continue
		}
		child.id.Store(uint64(id))
		child.added.Store(true)
		close(child.ready)
		if k == 0 && n.waitChild {
			wait := c.Wait
			if rng.IntN(2) == 0 {
				wait = r.s.Wait // finds the thread by goroutine, then helps as c.Wait
			}
			err := wait(id)
			if err == nil && r.unfinished(child) != nil {
				r.violate("task %d: Wait for its child %d returned before the child finished", n.idx, child.idx)
			}
			if err != nil && !r.closeMode {
				r.violate("task %d: Wait for its child %d: %v", n.idx, child.idx, err)
			}
		}
	}
	n.ended.Store(r.clock.Add(1))
	switch n.kind {
	case mFail:
		return fmt.Errorf("task %d: %w", n.idx, errModel)
	case mPanic:
		panic(fmt.Sprintf("model task %d panics", n.idx))
	}
	return nil
}

// task returns the Task that adds n.
func (n *mNode) task(parent TaskID) *Task {
	t := &Task{Kernel: kModelSimple, Affinity: n.aff, Priority: n.prio, Parent: parent}
	if n.dep != nil {
		t.Dependency = TaskID(n.dep.id.Load())
	}
	switch n.kind {
	case mJoin:
		t.Kernel = KernelNone
		return t
	case mStream:
		t.Kernel = kModelStream
		t.Data.Elements, t.Data.Grain = n.elems, n.grain
	}
	t.Data.Data = n
	return t
}

func modelRound(t *testing.T, seed uint64, closeMode bool) (tasks, elements int64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	n := 200 + rng.IntN(1800)
	if closeMode {
		n = 100 + rng.IntN(600)
	}
	r := &modelRun{closeMode: closeMode}
	r.seedRng.Store(seed)
	nodes := make([]*mNode, n)
	var held []*mNode
	// reaches reports whether a's completion needs b's (through
	// dependencies and children): a dependency from a child of b on a
	// closes a cycle, which the model does not draw.
	var reaches func(a, b *mNode, seen map[*mNode]bool) bool
	reaches = func(a, b *mNode, seen map[*mNode]bool) bool {
		if a == b {
			return true
		}
		if seen[a] {
			return false
		}
		seen[a] = true
		if a.dep != nil && reaches(a.dep, b, seen) {
			return true
		}
		for _, k := range a.staticKids {
			if reaches(k, b, seen) {
				return true
			}
		}
		return false
	}
	const builders = 3
	for i := range nodes {
		nd := &mNode{r: r, idx: i, parent: nil, failAt: -1, ready: make(chan struct{}), builder: rng.IntN(builders), runner: rng.IntN(builders)}
		nodes[i] = nd
		switch x := rng.IntN(100); {
		case x < 8:
			nd.kind, nd.held = mJoin, true
		case x < 14:
			nd.kind, nd.held = mSimple, true
		case x < 19:
			nd.kind = mFail
		case x < 22:
			nd.kind = mPanic
		case x < 45:
			nd.kind = mStream
			nd.elems = uint32(rng.IntN(3000))
			nd.grain = uint32(1 + rng.IntN(512))
			if rng.IntN(10) == 0 {
				nd.grain = 0 // the kernel's default
			}
			if nd.elems > 0 && rng.IntN(12) == 0 {
				nd.failAt = int64(rng.IntN(int(nd.elems)))
			}
			nd.marks = make([]atomic.Uint32, nd.elems)
			nd.left.Store(int64(nd.elems))
		default:
			nd.kind = mSimple
		}
		if rng.IntN(6) == 0 && nd.kind != mJoin {
			nd.aff = OnThread(rng.IntN(2))
		}
		nd.prio = Priority(rng.IntN(3) - 1)
		if (nd.kind == mSimple || nd.kind == mFail) && rng.IntN(5) == 0 {
			nd.spawn = 1 + rng.IntN(3)
			nd.waitChild = rng.IntN(2) == 0
		}
		if len(held) > 0 && rng.IntN(2) == 0 {
			nd.parent = held[rng.IntN(len(held))]
		}
		if i > 0 && rng.IntN(3) == 0 {
			d := nodes[rng.IntN(i)]
			if nd.parent == nil || !reaches(d, nd.parent, map[*mNode]bool{}) {
				nd.dep = d
			}
		}
		if nd.parent != nil {
			nd.parent.staticKids = append(nd.parent.staticKids, nd)
			nd.parent.kids = append(nd.parent.kids, nd)
		}
		if nd.held {
			held = append(held, nd)
		}
	}

	reg := NewRegistry()
	must(t, reg.Register(kModelSimple, Kernel{Name: "model", CPU: modelKernel}))
	must(t, reg.Register(kModelStream, Kernel{Name: "model_stream", Kind: Streaming, Grain: 97, CPU: modelKernel}))
	s, err := New(Config{Kernels: reg, Workers: 1 + rng.IntN(4), MainThreads: 2, PoolSize: 8 * n,
		SpinRounds: []int{0, 16, 256}[rng.IntN(3)]})
	must(t, err)
	r.s = s
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("round seed %d (close %v, %d tasks, %d workers): "+format,
			append([]any{seed, closeMode, n, s.Workers()}, args...)...)
	}

	within(t, 60*time.Second, fmt.Sprintf("model round seed %d", seed), func() {
		var regWG sync.WaitGroup
		var ctx [2]*Ctx
		done := s.NewEvent()
		// Thread 1 serves its pinned tasks until the round ends.
		regWG.Add(1)
		c1ready := make(chan struct{})
		go func() {
			defer regWG.Done()
			c, err := s.RegisterThread("model1")
			if err != nil {
				t.Error(err)
				close(c1ready)
				return
			}
			ctx[1] = c
			close(c1ready)
			c.WaitEvent(done)
		}()
		<-c1ready
		// Thread 0 registers before Close can race: RegisterThread on a
		// closed scheduler fails with ErrClosed.
		c0, err := s.RegisterThread("model0")
		must(t, err)
		ctx[0] = c0
		var closeErr error
		closed := make(chan struct{})
		if closeMode {
			delay := time.Duration(rng.IntN(3000)) * time.Microsecond
			go func() {
				time.Sleep(delay)
				closeErr = s.Close()
				close(closed)
			}()
		}
		// Builders: 0 is registered thread 0 (Ctx calls), the others plain
		// goroutines (Scheduler calls). Each adds its nodes in order,
		// waiting for their parents and dependencies to exist.
		var addWG, buildWG sync.WaitGroup
		addWG.Add(builders)
		build := func(b int, c *Ctx) {
			add, create, run := s.Add, s.Create, s.Run
			if c != nil {
				add, create, run = c.Add, c.Create, c.Run
			}
			for _, nd := range nodes {
				if nd.builder != b {
					continue
				}
				var parent TaskID
				ok := true
				for _, x := range []*mNode{nd.parent, nd.dep} {
					if x != nil {
						<-x.ready
						ok = ok && x.added.Load()
					}
				}
				if nd.parent != nil {
					parent = TaskID(nd.parent.id.Load())
				}
				if !ok { // closed: its parent or dependency was refused
					close(nd.ready)
					continue
				}
				tk := nd.task(parent)
				var id TaskID
				var err error
				if nd.held {
					id, err = create(tk)
				} else {
					id, err = add(tk)
				}
				if err != nil {
					// Closing, Close may have failed the held parent.
					if !closeMode || !errors.Is(err, ErrClosed) && !errors.Is(err, ErrParentDone) {
						fail("task %d: Add: %v", nd.idx, err)
					}
					close(nd.ready)
					continue
				}
				nd.id.Store(uint64(id))
				nd.added.Store(true)
				close(nd.ready)
			}
			addWG.Done()
			addWG.Wait() // every static child is added: run the held tasks
			for _, nd := range nodes {
				if !nd.held || nd.runner != b || !nd.added.Load() {
					continue
				}
				if err := run(TaskID(nd.id.Load())); err != nil && !closeMode {
					fail("task %d: Run: %v", nd.idx, err)
				}
			}
		}
		for b := 1; b < builders; b++ {
			buildWG.Go(func() { build(b, nil) })
		}
		build(0, c0)
		buildWG.Wait()
		// Thread 0 waits for every task, in random order.
		errs := make([]error, n)
		order := rng.Perm(n)
		for _, i := range order {
			nd := nodes[i]
			if !nd.added.Load() {
				continue
			}
			errs[i] = c0.Wait(TaskID(nd.id.Load()))
			if errs[i] == nil {
				if u := r.unfinished(nd); u != nil {
					fail("Wait for task %d returned nil before task %d of its subtree finished", i, u.idx)
				}
			}
		}
		done.Signal()
		regWG.Wait()
		if closeMode {
			<-closed
			if closeErr != nil {
				fail("Close: %v", closeErr)
			}
			for _, i := range order {
				if nd := nodes[i]; nd.added.Load() {
					if err := s.Wait(TaskID(nd.id.Load())); (err == nil) != (errs[i] == nil) {
						fail("task %d: Wait after Close: %v, during: %v", i, err, errs[i])
					}
				}
			}
		} else if err := s.Close(); err != nil {
			fail("Close: %v", err)
		}

		// Compare with the model.
		var fails func(nd *mNode) bool
		memo := map[*mNode]bool{}
		fails = func(nd *mNode) bool {
			if v, ok := memo[nd]; ok {
				return v
			}
			v := nd.dep != nil && fails(nd.dep) || nd.kind == mFail || nd.kind == mPanic || nd.failAt >= 0
			for _, k := range nd.staticKids {
				v = fails(k) || v
			}
			memo[nd] = v
			return v
		}
		for i, nd := range nodes {
			if !nd.added.Load() {
				continue
			}
			tasks++
			elements += int64(nd.elems)
			err := errs[i]
			id := TaskID(nd.id.Load())
			if closeMode {
				checkClosedNode(nd, err, fail)
				continue
			}
			depFailed := nd.dep != nil && fails(nd.dep)
			own := nd.kind == mFail || nd.kind == mPanic || nd.failAt >= 0
			kidFailed := false
			for _, k := range nd.staticKids {
				kidFailed = kidFailed || fails(k)
			}
			runs := nd.runs.Load()
			switch {
			case depFailed:
				// Children do not wait for their parent's dependency:
				// one that failed first may have set the error.
				if !errors.Is(err, ErrDepFailed) && !(kidFailed && errors.Is(err, ErrChildFailed)) {
					fail("task %d: dependency %d failed, error %v", i, nd.dep.idx, err)
				}
				if runs != 0 {
					fail("task %d ran %d times after its dependency failed", i, runs)
				}
				continue
			case nd.kind == mStream:
				for e := range nd.marks {
					if v := nd.marks[e].Load(); v != 1 {
						fail("task %d: element %d ran %d times", i, e, v)
						break
					}
				}
			case nd.kind != mJoin && runs != 1:
				fail("task %d ran %d times", i, runs)
			}
			var te *TaskError
			if (own || kidFailed) && (!errors.As(err, &te) || te.Task != id) {
				fail("task %d failed with %v: not a TaskError naming %v", i, err, id)
			}
			ownErr := nd.kind == mPanic && errors.Is(err, ErrKernelPanic) || nd.kind != mPanic && errors.Is(err, errModel) && !errors.Is(err, ErrChildFailed)
			switch {
			case own && kidFailed:
				if !ownErr && !errors.Is(err, ErrChildFailed) {
					fail("task %d (fails, and a child fails): error %v", i, err)
				}
			case own:
				if !ownErr {
					fail("task %d (kind %d fails): error %v", i, nd.kind, err)
				}
			case kidFailed:
				if !errors.Is(err, ErrChildFailed) {
					fail("task %d (a child fails): error %v", i, err)
				}
			case err != nil:
				fail("task %d should succeed: %v", i, err)
			}
		}
		for _, nd := range r.dyn {
			if !nd.added.Load() || closeMode {
				continue
			}
			tasks++
			if nd.kind == mStream {
				elements += int64(nd.elems)
				for e := range nd.marks {
					if v := nd.marks[e].Load(); v != 1 {
						fail("dynamic child of task %d: element %d ran %d times", nd.parent.idx, e, v)
						break
					}
				}
			} else if v := nd.runs.Load(); v != 1 {
				fail("dynamic child of task %d ran %d times", nd.parent.idx, v)
			}
		}
		if len(r.viol) > 0 {
			fail("%d violations seen by kernels:\n%s", len(r.viol), strings.Join(r.viol, "\n"))
		}
	})
	return tasks, elements
}

// checkClosedNode checks a task of a round that Close raced with: it ran
// at most once (every element at most once), and if it succeeded it ran
// exactly once; its error, if any, has a cause the model knows.
func checkClosedNode(nd *mNode, err error, fail func(string, ...any)) {
	runs := nd.runs.Load()
	if nd.kind == mStream {
		all := true
		for e := range nd.marks {
			v := nd.marks[e].Load()
			if v > 1 {
				fail("task %d: element %d ran %d times", nd.idx, e, v)
			}
			all = all && v == 1
		}
		if err == nil && !all {
			fail("task %d succeeded, but not every element ran", nd.idx)
		}
	} else if nd.kind != mJoin && (runs > 1 || err == nil && runs != 1) {
		fail("task %d ran %d times (error %v)", nd.idx, runs, err)
	}
	if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrDepFailed) && !errors.Is(err, ErrChildFailed) &&
		!errors.Is(err, ErrKernelPanic) && !errors.Is(err, errModel) {
		fail("task %d: unexpected error %v", nd.idx, err)
	}
}
