package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// acyclicProgram is a random program with no wait-for cycle: roots are
// ranked by index, and a task of root i (its kernel, or a child's) waits
// only for its own children and for roots ranked below i (finished,
// running or queued), and depends only on those. Everything a task waits
// for ranks lower or is its own descendant, so no task can need one that
// needs it: every wait must end, and none may fail with ErrDeadlock.
type acyclicProgram struct {
	s         *Scheduler
	roots     []atomic.Uint64
	deadlocks atomic.Int32
	others    atomic.Int32 // other errors: none are expected either
	mu        sync.Mutex
	first     error // the first error seen
}

const (
	kAcycRoot KernelID = 200 + iota
	kAcycChild
	kAcycLeaf
	kAcycHalf
)

// Params: [0] the root's rank, [1] the depth left, [2] the choice seed.
func (p *acyclicProgram) note(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, ErrDeadlock) {
		p.deadlocks.Add(1)
	} else {
		p.others.Add(1)
	}
	p.mu.Lock()
	if p.first == nil {
		p.first = err
	}
	p.mu.Unlock()
}

// lower returns a root ranked below rank that has been added, or NoTask.
func (p *acyclicProgram) lower(rank uint32, r *rand.Rand) TaskID {
	if rank == 0 {
		return NoTask
	}
	return TaskID(p.roots[r.IntN(int(rank))].Load())
}

func (p *acyclicProgram) kernel(c *Ctx, d *TaskData) error {
	rank, depth := d.Params[0], d.Params[1]
	r := rand.New(rand.NewPCG(uint64(d.Params[2]), uint64(rank)))
	var kids [4]TaskID
	n := 0
	if depth > 0 {
		n = 1 + r.IntN(len(kids))
	}
	for i := range n {
		t := Task{Kernel: kAcycChild, Parent: c.Current()}
		if depth == 1 {
			t.Kernel = kAcycLeaf
		}
		t.Data.Params = [8]uint32{rank, depth - 1, r.Uint32()}
		switch r.IntN(4) {
		case 0:
			t.Dependency = p.lower(rank, r)
		case 1:
			if i > 0 {
				t.Dependency = kids[r.IntN(i)] // an earlier sibling
			}
		}
		id, err := c.Add(&t)
		if err != nil {
			return err
		}
		kids[i] = id
	}
	if r.IntN(3) == 0 {
		// Split some of the work with Join: each half waits for a lower
		// root or for a leaf child of this task it adds (the halves run
		// as part of it), wherever it runs.
		a := Call{Kernel: kAcycHalf, Params: Params{rank, 0, r.Uint32()}}
		b := Call{Kernel: kAcycHalf, Params: Params{rank, 0, r.Uint32()}}
		if err := c.Join(&a, &b); err != nil {
			p.note(err)
			return err
		}
	}
	// Wait for unrelated lower roots and for the children, interleaved.
	for i := range n + 2 {
		var id TaskID
		if i < n && r.IntN(2) == 0 {
			id = kids[i]
		} else if o := p.lower(rank, r); o != NoTask && r.IntN(3) == 0 {
			id = o
		} else if i < n {
			id = kids[i]
		} else {
			continue
		}
		var err error
		if r.IntN(3) == 0 {
			err = p.s.Wait(id) // through the caller's look-up (caller.go)
		} else {
			err = c.Wait(id)
		}
		if errors.Is(err, ErrDeadlock) {
			p.note(err)
			return err
		}
	}
	return nil
}

// half is a Join half of a task of root rank (Params as for kernel).
func (p *acyclicProgram) half(c *Ctx, d *TaskData) error {
	rank := d.Params[0]
	r := rand.New(rand.NewPCG(uint64(d.Params[2]), uint64(rank)))
	var id TaskID
	if o := p.lower(rank, r); o != NoTask && r.IntN(2) == 0 {
		id = o
	} else {
		var err error
		if id, err = c.Add(&Task{Kernel: kAcycLeaf, Parent: c.Current()}); err != nil {
			return err
		}
	}
	return c.Wait(id)
}

// runAcyclic builds and runs one program: roots added by several
// goroutines that are no threads, in rank order per goroutine (a root
// waits for lower roots only once they are added), each waited for.
func runAcyclic(t *testing.T, seed uint64, workers, adders, nroots int) *acyclicProgram {
	p := &acyclicProgram{roots: make([]atomic.Uint64, nroots)}
	reg := NewRegistry()
	for _, k := range []KernelID{kAcycRoot, kAcycChild} {
		must(t, reg.Register(k, Kernel{Name: fmt.Sprint("acyclic", k), CPU: p.kernel}))
	}
	must(t, reg.Register(kAcycLeaf, Kernel{Name: "leaf", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kAcycHalf, Kernel{Name: "half", CPU: p.half}))
	s, err := New(Config{Kernels: reg, Workers: workers, SpinRounds: 64})
	must(t, err)
	p.s = s
	var wg sync.WaitGroup
	var next atomic.Int32
	for range adders {
		wg.Go(func() {
			var mine []TaskID
			for {
				i := int(next.Add(1)) - 1
				if i >= nroots {
					break
				}
				task := Task{Kernel: kAcycRoot}
				task.Data.Params = [8]uint32{uint32(i), uint32(1 + i%3), uint32(seed)*1000003 + uint32(i)}
				id, err := s.Add(&task)
				if err != nil {
					p.note(err)
					continue
				}
				p.roots[i].Store(uint64(id))
				mine = append(mine, id)
			}
			for _, id := range mine {
				p.note(s.Wait(id))
			}
		})
	}
	within(t, 30*time.Second, fmt.Sprintf("acyclic program %d", seed), func() {
		wg.Wait()
		must(t, s.Close())
	})
	return p
}

// No valid acyclic program gets ErrDeadlock: kernels that add children,
// wait for them and for unrelated lower-ranked tasks (finished, running
// or queued, which never wait back; through Ctx.Wait and Scheduler.Wait),
// some splitting work with Join whose halves wait too,
// with dependencies, on 1 to 8 workers and 2 or 3 goroutines adding and
// waiting. A wait that helped
// with such a task on top of its kernel deadlocked (the walk reported
// it); one that hands the thread over cannot.
func TestAcyclicProgramsNeverDeadlock(t *testing.T) {
	const programs = 150
	var deadlocks, others, hit int32
	for seed := range uint64(programs) {
		workers := 1 + int(seed%8)
		adders := 2 + int(seed/8%2)
		p := runAcyclic(t, seed, workers, adders, 24)
		if n := p.deadlocks.Load(); n > 0 {
			deadlocks += n
			hit++
			if hit == 1 {
				t.Logf("program %d (workers %d): %v", seed, workers, p.first)
			}
		}
		if n := p.others.Load(); n > 0 {
			others += n
			t.Errorf("program %d: %d errors other than ErrDeadlock: %v", seed, n, p.first)
		}
	}
	if deadlocks > 0 {
		t.Errorf("ErrDeadlock %d times in %d of %d acyclic programs, want none", deadlocks, hit, programs)
	}
}

// A kernel that waits for a task it holds (Create, not yet Run) only
// after its own wait returns: the wait finds an unrelated task P, whose
// kernel needs the held task H (through Ctx.Wait, Scheduler.Wait, a task
// that depends on H, or an Event the holder signals). Helping ran P on
// top of the holder, which then could never Run H: a hang. Handed over,
// P waits on another goroutine, the holder resumes once its own child is
// done, and runs H.
func TestWaitForTaskHeldUnderIt(t *testing.T) {
	const kHolder, kP, kB KernelID = 210, 211, 212
	shapes := []string{"Ctx.Wait", "Scheduler.Wait", "dependency", "Event"}
	for _, workers := range []int{1, 2} {
		for _, shape := range shapes {
			var held atomic.Uint64
			var pErr atomic.Pointer[error]
			reg := NewRegistry()
			var s *Scheduler
			var ev *Event
			must(t, reg.Register(kB, Kernel{Name: "B", CPU: func(*Ctx, *TaskData) error { return nil }}))
			must(t, reg.Register(kP, Kernel{Name: "P", CPU: func(c *Ctx, _ *TaskData) error {
				h := TaskID(held.Load())
				var err error
				switch shape {
				case "Ctx.Wait":
					err = c.Wait(h)
				case "Scheduler.Wait":
					err = s.Wait(h)
				case "dependency":
					var q TaskID
					if q, err = c.Add(&Task{Kernel: kB, Dependency: h}); err == nil {
						err = c.Wait(q)
					}
				case "Event":
					c.WaitEvent(ev)
					if !ev.IsSet() {
						err = errors.New("WaitEvent returned without the event")
					}
				}
				pErr.Store(&err)
				return err
			}}))
			must(t, reg.Register(kHolder, Kernel{Name: "holder", CPU: func(c *Ctx, _ *TaskData) error {
				h, err := c.Create(&Task{})
				if err != nil {
					return err
				}
				held.Store(uint64(h))
				b, err := c.Add(&Task{Kernel: kB, Parent: c.Current()})
				if err != nil {
					return err
				}
				// Pushed last, popped first: the wait for B finds P.
				if _, err := c.Add(&Task{Kernel: kP}); err != nil {
					return err
				}
				if err := c.Wait(b); err != nil {
					return err
				}
				if ev != nil {
					ev.Signal()
				}
				return c.Run(h)
			}}))
			var err error
			s, err = New(Config{Kernels: reg, Workers: workers, SpinRounds: 64})
			must(t, err)
			if shape == "Event" {
				ev = s.NewEvent()
			}
			name := fmt.Sprintf("%s on %d workers", shape, workers)
			within(t, 20*time.Second, name, func() {
				k, err := s.Add(&Task{Kernel: kHolder})
				must(t, err)
				if err := s.Wait(k); err != nil {
					t.Errorf("%s: holder: %v", name, err)
				}
				must(t, s.Close())
			})
			if p := pErr.Load(); p == nil || *p != nil {
				t.Errorf("%s: P: %v, want it to run and succeed", name, derefErr(p))
			}
		}
	}
}

// Real cycles are still reported when a wait hands its thread over: the
// walk follows the kernels suspended in parked waits as it follows those
// of sleeping threads. A waits for X, which depends on C; the wait finds
// C and hands it over (or another worker takes C); C waits for A. One of
// the two waits fails with ErrDeadlock naming A, X and C, and everything
// then finishes. A task waiting for itself still gets ErrSelfDepend, and
// a child waiting for its parent ErrDeadlock.
func TestDeadlockThroughHandedOverWait(t *testing.T) {
	const kA, kC, kLeaf, kParent, kChild KernelID = 220, 221, 222, 223, 224
	var a, x, c atomic.Uint64
	var aErr, cErr, childErr atomic.Pointer[error]
	reg := NewRegistry()
	must(t, reg.Register(kLeaf, Kernel{Name: "leaf", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kC, Kernel{Name: "C", CPU: func(cx *Ctx, _ *TaskData) error {
		err := cx.Wait(TaskID(a.Load()))
		cErr.Store(&err)
		return err
	}}))
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: func(cx *Ctx, _ *TaskData) error {
		a.Store(uint64(cx.Current()))
		ci, err := cx.Add(&Task{Kernel: kC})
		if err != nil {
			return err
		}
		c.Store(uint64(ci))
		xi, err := cx.Add(&Task{Kernel: kLeaf, Dependency: ci})
		if err != nil {
			return err
		}
		x.Store(uint64(xi))
		if err := cx.Wait(cx.Current()); !errors.Is(err, ErrSelfDepend) {
			return fmt.Errorf("Wait on its own task: %v, want ErrSelfDepend", err)
		}
		err = cx.Wait(xi)
		aErr.Store(&err)
		return nil
	}}))
	must(t, reg.Register(kChild, Kernel{Name: "child", CPU: func(cx *Ctx, d *TaskData) error {
		err := cx.Wait(TaskID(uint64(d.Params[0]) | uint64(d.Params[1])<<32))
		childErr.Store(&err)
		return err
	}}))
	must(t, reg.Register(kParent, Kernel{Name: "parent", CPU: func(cx *Ctx, _ *TaskData) error {
		me := uint64(cx.Current())
		t := Task{Kernel: kChild, Parent: cx.Current()}
		t.Data.Params[0], t.Data.Params[1] = uint32(me), uint32(me>>32)
		ch, err := cx.Add(&t)
		if err != nil {
			return err
		}
		return cx.Wait(ch)
	}}))
	for _, workers := range []int{1, 2, 4} {
		s, err := New(Config{Kernels: reg, Workers: workers, SpinRounds: 64})
		must(t, err)
		name := fmt.Sprintf("%d workers", workers)
		within(t, 20*time.Second, name, func() {
			ai, err := s.Add(&Task{Kernel: kA})
			must(t, err)
			if err := s.Wait(ai); err != nil {
				t.Errorf("%s: A: %v", name, err)
			}
			e := cErr.Load()
			if e == nil || !errors.Is(*e, ErrDeadlock) {
				e = aErr.Load()
			}
			if e == nil || !errors.Is(*e, ErrDeadlock) {
				t.Fatalf("%s: A's wait for X: %v; C's wait for A: %v; want ErrDeadlock from one", name, derefErr(aErr.Load()), derefErr(cErr.Load()))
			}
			for _, id := range []uint64{a.Load(), x.Load(), c.Load()} {
				if !strings.Contains((*e).Error(), TaskID(id).String()) {
					t.Errorf("%s: the error does not name %v: %v", name, TaskID(id), *e)
				}
			}
			p, err := s.Add(&Task{Kernel: kParent})
			must(t, err)
			s.Wait(p)
			if e := childErr.Load(); e == nil || !errors.Is(*e, ErrDeadlock) {
				t.Errorf("%s: a child's wait for its parent: %v, want ErrDeadlock", name, derefErr(e))
			}
			must(t, s.Close())
		})
	}
}

// Close ends every goroutine that served a worker: the runners that took
// it over from waiting kernels, free or not, exit with the worker.
func TestCloseEndsRunners(t *testing.T) {
	before := runtime.NumGoroutine()
	const kWait, kSet KernelID = 230, 231
	const flows = 12
	reg := NewRegistry()
	var s *Scheduler
	var ev [flows + 1]*Event
	must(t, reg.Register(kWait, Kernel{Name: "wait", CPU: func(c *Ctx, d *TaskData) error {
		c.WaitEvent(ev[d.Params[0]])
		return nil
	}}))
	must(t, reg.Register(kSet, Kernel{Name: "set", CPU: func(c *Ctx, d *TaskData) error {
		ev[d.Params[0]+1].Signal()
		return nil
	}}))
	s, err := New(Config{Kernels: reg, Workers: 2, SpinRounds: 64})
	must(t, err)
	for i := range ev {
		ev[i] = s.NewEvent()
	}
	var last TaskID
	for i := flows - 1; i >= 0; i-- { // the last flow first: each waits on the next's
		w := Task{Kernel: kWait}
		w.Data.Params[0] = uint32(i)
		wi, err := s.Add(&w)
		must(t, err)
		st := Task{Kernel: kSet, Dependency: wi}
		st.Data.Params[0] = uint32(i)
		id, err := s.Add(&st)
		must(t, err)
		if i == flows-1 {
			last = id
		}
	}
	time.Sleep(5 * time.Millisecond)
	ev[0].Signal()
	within(t, 20*time.Second, "event chain", func() {
		must(t, s.Wait(last))
		must(t, s.Close())
	})
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before New", n, before)
	}
}

// derefErr is what a recorded error pointer holds, for messages.
func derefErr(p *error) any {
	if p == nil {
		return "never recorded"
	}
	return *p
}

// A worker's Wait runs the awaited task and its descendants on the
// waiting kernel's own goroutine, and hands anything else to another one;
// the kernel resumes on its goroutine with its Ctx as it left it (the
// task running, the index, the RunInPlace data of its in-place calls).
// P, in place, adds its child C (which waits for its own child G) and an
// unrelated task U, and waits for C. With U pushed first, the wait finds
// C and then G: both run on P's goroutine. With U pushed last, the wait
// finds U and hands it over; U, in place too, waits for an event P sets
// once C is done, and P then runs another kernel in place, which on a
// RunInPlace stack shared by the thread would overwrite U's data.
func TestWaitRunsSubtreeHandsOverTheRest(t *testing.T) {
	const kP, kIPP, kC, kG, kU, kIPU, kLeaf KernelID = 240, 241, 242, 243, 244, 245, 246
	var gP, gC, gG, gU atomic.Uintptr
	var pTask TaskID
	var uLast bool
	var problems sync.Map
	bad := func(what string) { problems.Store(what, true) }
	reg := NewRegistry()
	var ev *Event
	must(t, reg.Register(kLeaf, Kernel{Name: "leaf", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kG, Kernel{Name: "G", CPU: func(*Ctx, *TaskData) error { gG.Store(getg()); return nil }}))
	must(t, reg.Register(kC, Kernel{Name: "C", CPU: func(c *Ctx, _ *TaskData) error {
		gC.Store(getg())
		g, err := c.Add(&Task{Kernel: kG, Parent: c.Current()})
		if err != nil {
			return err
		}
		return c.Wait(g)
	}}))
	must(t, reg.Register(kIPU, Kernel{Name: "U in place", CPU: func(c *Ctx, d *TaskData) error {
		c.WaitEvent(ev)
		if d.Params[0] != 222 {
			bad(fmt.Sprintf("U's in-place data changed under it: %d", d.Params[0]))
		}
		return nil
	}}))
	must(t, reg.Register(kU, Kernel{Name: "U", CPU: func(c *Ctx, _ *TaskData) error {
		gU.Store(getg())
		tk := Task{Kernel: kIPU}
		tk.Data.Params[0] = 222
		return c.RunInPlace(&tk)
	}}))
	must(t, reg.Register(kIPP, Kernel{Name: "P in place", CPU: func(c *Ctx, d *TaskData) error {
		if !uLast {
			if _, err := c.Add(&Task{Kernel: kU}); err != nil {
				return err
			}
		}
		cid, err := c.Add(&Task{Kernel: kC, Parent: c.Current()})
		if err != nil {
			return err
		}
		if uLast {
			if _, err := c.Add(&Task{Kernel: kU}); err != nil {
				return err
			}
		}
		if err := c.Wait(cid); err != nil {
			return err
		}
		if getg() != gP.Load() || c.Current() != pTask || c.Index() != 0 {
			bad("P resumed on another goroutine, or with another Ctx state")
		}
		if d.Params[0] != 111 {
			bad(fmt.Sprintf("P's in-place data changed under it: %d", d.Params[0]))
		}
		return nil
	}}))
	must(t, reg.Register(kP, Kernel{Name: "P", CPU: func(c *Ctx, _ *TaskData) error {
		gP.Store(getg())
		pTask = c.Current()
		tk := Task{Kernel: kIPP}
		tk.Data.Params[0] = 111
		if err := c.RunInPlace(&tk); err != nil {
			return err
		}
		tk = Task{Kernel: kLeaf}
		tk.Data.Params[0] = 333
		if err := c.RunInPlace(&tk); err != nil {
			return err
		}
		ev.Signal()
		return nil
	}}))
	for _, last := range []bool{false, true} {
		uLast = last
		gP.Store(0)
		gC.Store(0)
		gG.Store(0)
		gU.Store(0)
		s, err := New(Config{Kernels: reg, Workers: 1, SpinRounds: 64})
		must(t, err)
		ev = s.NewEvent()
		within(t, 20*time.Second, "P, C, G and U", func() {
			p, err := s.Add(&Task{Kernel: kP})
			must(t, err)
			must(t, s.Wait(p))
			must(t, s.Close())
		})
		if !last && (gC.Load() != gP.Load() || gG.Load() != gP.Load()) {
			t.Error("the awaited child and its own child did not run on the waiting kernel's goroutine")
		}
		if last && (gU.Load() == 0 || gU.Load() == gP.Load()) {
			t.Error("the unrelated task ran on top of the waiting kernel")
		}
		problems.Range(func(k, _ any) bool { t.Errorf("U pushed last %v: %v", last, k); return true })
		problems.Clear()
	}
}

// One real cycle, two parked waits in it: A waits for X (which depends
// on C), C waits for A; both park (C's wait finds U, a long unrelated
// kernel). One cycle fails one wait, as for sleeping threads
// (cycleLocked): a parked wait that found the cycle is marked done under
// idleMu, and the other wait's walk skips it, so A gets ErrDepFailed
// through X, not an ErrDeadlock of its own.
func TestOneCycleFailsOneParkedWait(t *testing.T) {
	const kA, kC, kU, kLeaf KernelID = 310, 311, 312, 313
	reg := NewRegistry()
	var aTask atomic.Uint64
	var aErr, cErr atomic.Pointer[error]
	must(t, reg.Register(kLeaf, Kernel{Name: "leaf", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kU, Kernel{Name: "U", CPU: func(*Ctx, *TaskData) error { time.Sleep(100 * time.Millisecond); return nil }}))
	must(t, reg.Register(kC, Kernel{Name: "C", CPU: func(c *Ctx, _ *TaskData) error {
		err := c.Wait(TaskID(aTask.Load()))
		cErr.Store(&err)
		return err
	}}))
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: func(c *Ctx, _ *TaskData) error {
		aTask.Store(uint64(c.Current()))
		if _, err := c.Add(&Task{Kernel: kU}); err != nil {
			return err
		}
		ci, err := c.Add(&Task{Kernel: kC})
		if err != nil {
			return err
		}
		xi, err := c.Add(&Task{Kernel: kLeaf, Dependency: ci})
		if err != nil {
			return err
		}
		err = c.Wait(xi)
		aErr.Store(&err)
		return nil
	}}))
	fails := 0
	const runs = 10
	for range runs {
		aErr.Store(nil)
		cErr.Store(nil)
		s, err := New(Config{Kernels: reg, Workers: 1, SpinRounds: 64})
		must(t, err)
		within(t, 10*time.Second, "cycle", func() {
			ai, err := s.Add(&Task{Kernel: kA})
			must(t, err)
			s.Wait(ai)
			must(t, s.Close())
		})
		a, c := aErr.Load(), cErr.Load()
		if a != nil && c != nil && errors.Is(*a, ErrDeadlock) && !errors.Is(*a, ErrDepFailed) && errors.Is(*c, ErrDeadlock) {
			fails++
			if fails == 1 {
				t.Logf("A: %v\nC: %v", *a, *c)
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d of %d runs: both waits of one cycle failed with ErrDeadlock", fails, runs)
	}
}

// A Wait on a worker runs a task it found on its own stack only when the
// task descends from the awaited one; past an abandoned ancestor (whose
// slot keeps its generation while its kernel runs) it does not, since the
// awaited task no longer needs that subtree. X, a child of abandoned
// A (A a child of T0), waits for K, which waits for T0: acyclic (T0 does
// not need X), so X must not run on top of K and fail with ErrDeadlock.
func TestWaitRunsNothingPastAbandonedAncestor(t *testing.T) {
	const kA, kK, kX, kB KernelID = 300, 301, 302, 303
	reg := NewRegistry()
	gateA, gateB := make(chan struct{}), make(chan struct{})
	started := make(chan struct{}, 2)
	var kTask atomic.Uint64
	var xErr atomic.Pointer[error]
	var gK, gX atomic.Uintptr
	must(t, reg.Register(kB, Kernel{Name: "B", CPU: func(c *Ctx, _ *TaskData) error {
		started <- struct{}{}
		<-gateB
		return nil
	}}))
	must(t, reg.Register(kX, Kernel{Name: "X", CPU: func(c *Ctx, _ *TaskData) error {
		gX.Store(getg())
		err := c.Wait(TaskID(kTask.Load()))
		xErr.Store(&err)
		return err
	}}))
	must(t, reg.Register(kA, Kernel{Name: "A", CPU: func(c *Ctx, _ *TaskData) error {
		if _, err := c.Add(&Task{Kernel: kX, Parent: c.Current()}); err != nil {
			return err
		}
		started <- struct{}{}
		<-gateA // a hung kernel, abandoned
		return nil
	}}))
	must(t, reg.Register(kK, Kernel{Name: "K", CPU: func(c *Ctx, d *TaskData) error {
		gK.Store(getg())
		return c.Wait(TaskID(uint64(d.Params[0]) | uint64(d.Params[1])<<32))
	}}))
	s, err := New(Config{Kernels: reg, Workers: 2, SpinRounds: 64})
	must(t, err)
	t0, err := s.Create(&Task{})
	must(t, err)
	y, err := s.Create(&Task{Parent: t0}) // keeps T0 open
	must(t, err)
	_, err = s.Add(&Task{Kernel: kB})
	must(t, err)
	a, err := s.Add(&Task{Kernel: kA, Parent: t0})
	must(t, err)
	must(t, s.Run(t0))
	<-started
	<-started
	must(t, s.Abandon(a, errors.New("hung")))
	kt := Task{Kernel: kK, Priority: PriorityHigh} // found before X
	kt.Data.Params[0], kt.Data.Params[1] = uint32(t0), uint32(uint64(t0)>>32)
	k, err := s.Add(&kt)
	must(t, err)
	kTask.Store(uint64(k))
	close(gateB) // B's worker runs K, whose wait for T0 finds X
	time.Sleep(50 * time.Millisecond)
	must(t, s.Run(y)) // T0 completes; K returns; X's wait can end
	within(t, 10*time.Second, "K", func() {
		s.Wait(k)
		for xErr.Load() == nil {
			time.Sleep(time.Millisecond)
		}
	})
	if e := *xErr.Load(); errors.Is(e, ErrDeadlock) {
		t.Errorf("X (on K's goroutine: %v): Wait for K: %v; want no ErrDeadlock (acyclic: T0 no longer needs X)", gX.Load() == gK.Load(), e)
	}
	close(gateA)
	s.Close()
}

// Two runners of one worker both blocked in Add's back-pressure: neither
// resumes the other (alloc parks with NoTask, "ready at once", so they
// would swap for ever, each swap resetting the stuck clock), and both
// Creates return, nil or ErrPoolDeadlock, within a few seconds.
func TestBackPressureRunnersDoNotSwapForever(t *testing.T) {
	const kK0, kU, kB KernelID = 330, 331, 332
	reg := NewRegistry()
	errs := make(chan error, 2)
	must(t, reg.Register(kB, Kernel{Name: "B", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kU, Kernel{Name: "U", CPU: func(c *Ctx, _ *TaskData) error {
		for { // fill the pool with held tasks; the last Create blocks
			if _, err := c.Create(&Task{}); err != nil {
				errs <- err
				return err
			}
		}
	}}))
	must(t, reg.Register(kK0, Kernel{Name: "K0", CPU: func(c *Ctx, _ *TaskData) error {
		b, err := c.Add(&Task{Kernel: kB, Parent: c.Current()})
		if err != nil {
			return err
		}
		if _, err := c.Add(&Task{Kernel: kU}); err != nil { // popped first: handed over
			return err
		}
		if err := c.Wait(b); err != nil {
			return err
		}
		_, err = c.Create(&Task{}) // the pool is full
		errs <- err
		return err
	}}))
	s, err := New(Config{Kernels: reg, Workers: 1, PoolSize: 64, SpinRounds: 64})
	must(t, err)
	if _, err := s.Add(&Task{Kernel: kK0}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(3 * time.Second)
	for i := 0; i < 2; i++ {
		select {
		case err := <-errs:
			if err != nil && !errors.Is(err, ErrPoolDeadlock) {
				t.Errorf("Create: %v, want ErrPoolDeadlock", err)
			}
		case <-deadline:
			t.Fatalf("%d of 2 blocked Creates returned after 3s", i)
		}
	}
	s.Close()
}
