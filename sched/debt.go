package sched

import (
	"sync/atomic"
)

// The debt: deferred decrements of a parent's open count.
//
//  1. A thread that runs several children of one parent in a row owes the
//     parent one decrement of its open count per child (deferDec), so the
//     parent's counter stops moving between cores once per task.
//  2. It pays the debt with one atomic add (flushDec) when it turns to a
//     task with another parent, finds no work (before it sleeps), leaves
//     Wait, WaitEvent, RunPinned or RunOne, begins WaitFor, or waits for
//     that very parent; RunPinned pays it and runs what that readied. The
//     debt is never held while user code runs, except a kernel of another
//     child of the same parent, which the parent must wait for anyway, and
//     an Observer's TaskRan (which must not block): no completion is
//     delayed.
//  3. A thread in Wait that finds nothing to run also pays what other
//     threads owe the awaited task (payDebtsTo): paying early is always
//     correct, those children are done.
//  4. If a kernel hangs and is abandoned, its parent must fail at once, but
//     the stuck thread cannot pay, so Abandon pays every thread's debt
//     (takeDebt). Deferring must still cost no locked instruction per task
//     (one waits for the thread's earlier stores to drain, even a
//     compare-and-swap on the thread's own line). So the owner only adds,
//     with plain stores, to a counter owed (and names the parent in
//     debtParent, changed only when nothing is owed), and whoever pays, the
//     owner or another thread, advances a second counter paid to the owed
//     it read with a compare-and-swap and pays the difference: no decrement
//     is paid twice (TestDebtPaidOnce), and one that is deferred after a
//     payer read owed is left to the next payer (TestAbandonWithSiblingsDone).
//  5. Threads defer on one core too: no line moves there, but deferring
//     spares a locked add per task.

// payDebtsTo pays what any thread owes task id (see Ctx.deferDec): a
// thread that ran its last children holds their decrements until it runs
// a task of another parent or finds no work, and a waiter that has nothing
// to run need not wait for that (paying early is always correct). by is
// the calling thread, nil if none.
func (s *Scheduler) payDebtsTo(id TaskID, by *Ctx) {
	p := id.index() + 1
	for _, t := range s.threads {
		if t != by && atomic.LoadUint32(&t.debtParent) == p {
			t.takeDebt(by)
		}
	}
}

// payDebt applies n decrements of the open count of parent (index+1)
// that a thread deferred (Ctx.deferDec).
func (s *Scheduler) payDebt(parent uint32, n int64, c *Ctx) {
	p := parent - 1
	if atomic.AddInt32(&s.slots[p].open, -int32(n)) == 0 {
		s.complete(p, c, false)
	}
}

// deferDec records that a task this thread ran completed and owes its
// parent (index+1) a decrement of its open count. Consecutive children of
// one parent then cost one atomic add on the parent's line instead of one
// each, and the line does not move between threads per task. The debt is
// paid (flushDec) before this thread runs a task with another parent,
// whenever it finds no work (so before it sleeps), before any entry point
// (Wait, WaitEvent, RunPinned, RunOne) returns, when WaitFor begins, and
// when Wait waits for that parent. So it is only held while this thread keeps
// running children of the same parent, which cannot complete before those
// children anyway: no completion is delayed beyond that.
//
// Abandon must be able to pay the debt of a thread stuck in a kernel, so
// the debt is readable by other threads, yet deferring must not cost a
// locked instruction per task (a locked instruction waits for the
// thread's earlier stores to drain: a compare-and-swap here made a task
// handed between two cores measurably slower). So the owner only ever adds, with
// plain stores, to the counter owed, and whoever pays (flushDec, Abandon)
// advances paid to the owed it read with a CAS and pays the difference
// to debtParent. debtParent changes only when nothing is owed (after a
// flush); it is stored before owed, and Abandon loads paid, then owed,
// then debtParent: if its CAS from that paid succeeds, no flush came
// between, so every decrement it pays was deferred for that parent.
func (c *Ctx) deferDec(parent uint32) {
	o := c.owed
	if c.debtParent != parent {
		if o != c.paid.Load() {
			c.flushDec()
		}
		storeRelease32(&c.debtParent, parent)
	}
	storeRelease64(&c.owed, o+1)
}

// debt returns the parent (index+1) this thread owes decrements and how
// many (0 if none). Owner only.
func (c *Ctx) debt() (uint32, int64) {
	n := c.owed - c.paid.Load()
	if n == 0 {
		return 0, 0
	}
	return c.debtParent, n
}

// flushDec pays the pending parent decrements (see deferDec). Owner only.
func (c *Ctx) flushDec() {
	o := c.owed
	p := c.paid.Load()
	for p != o {
		if c.paid.CompareAndSwap(p, o) {
			c.s.payDebt(c.debtParent, o-p, c)
			return
		}
		p = c.paid.Load() // Abandon paid some of it
	}
}

// takeDebt pays, from another thread (by, nil if none), what c owes (see
// deferDec).
func (c *Ctx) takeDebt(by *Ctx) {
	p := c.paid.Load()
	o := atomic.LoadInt64(&c.owed)
	if o == p {
		return
	}
	parent := atomic.LoadUint32(&c.debtParent)
	if c.paid.CompareAndSwap(p, o) {
		c.s.payDebt(parent, o-p, by)
	}
}
