package sched

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Data races between tasks, refused when they are added (Config.CheckRaces).
//
//  1. Every streaming task declares the memory it reads (In) and writes
//     (Out): host ranges [SliceData(Bytes), +len(Bytes)) and device ranges
//     (Buffer, [Offset, Offset+Count*Stride)); a stream with both has both.
//     Where the task runs (CPU, GPU, SPU, Auto) plays no part.
//  2. The checker keeps a node per live task (all kinds: joins order
//     others), keyed by slot: its parent, dependency, children and
//     dependents, and its ranges. Only live tasks: a task that finished is
//     ordered before every task added after it, so complete forgets it
//     (before the generation bump, so whoever sees it finished adds after).
//  3. Order is over events S(T) (start) and E(T) (end): S(T) ≤ E(T),
//     E(child) ≤ E(parent), E(dependency) ≤ S(T). Nothing else orders tasks:
//     a child added from outside runs while its parent waits for its own
//     dependency, and a parent's kernel runs alongside its children. A task
//     X is ordered with Y iff E(X) reaches S(Y) or E(Y) reaches S(X); every
//     node on such a path is live, so the walk sees only live nodes.
//  4. A task is checked when it becomes runnable: at Add, or at Run for one
//     made with Create (held tasks are skipped until then). The check walks
//     back from S(Y) and forward from E(Y) (marks by epoch, O(live)), then
//     looks Y's ranges up in an index of the started live tasks' ranges
//     (sorted by buffer and start, writes and reads apart: a read looks
//     among the writes only) for one whose task is unmarked. Each pair is compared once, when the later one starts,
//     against the graph as it is then: an order added afterwards (a child
//     given to a task that Y already depends on) is not seen, so build a
//     join's children before adding what depends on it, or hold the join.
//  5. A hazard refuses Add (nothing is added) and fails the task at Run
//     (its dependents and parent then fail): a *RaceError, wrapping ErrRace.
//     The scheduler's own split pieces are not added, so they are never
//     compared with their task. One mutex; with the check off, one branch
//     on the config bool per Add, Run and completion.

// ErrRace: two tasks that may run at the same time touch the same memory
// and at least one writes it (Config.CheckRaces). The error is a
// *RaceError.
var ErrRace = errors.New("data race")

// RaceError describes a hazard refused by Config.CheckRaces: the task being
// added (or Run) and a live task that may run at the same time, the streams
// of each, and the bytes both touch.
type RaceError struct {
	Task, Other            TaskID
	Kernel, OtherKernel    KernelID
	Name, OtherName        string   // kernel names
	Where, OtherWhere      Affinity // as given (Auto is placed later)
	Stream, OtherStream    string   // "out[0] y"
	Writes, OtherWrites    bool
	Buffer                 BufferID // 0: host memory (addresses)
	Begin, End             uint64   // the overlap: addresses, or offsets in Buffer
	StreamBegin, StreamEnd uint64   // Task's stream range
	OtherBegin, OtherEnd   uint64   // Other's stream range
}

func (e *RaceError) Error() string {
	rw := func(w bool) string {
		if w {
			return "writes"
		}
		return "reads"
	}
	mem := "host memory"
	if e.Buffer != 0 {
		mem = fmt.Sprintf("buffer %d", e.Buffer)
	}
	return fmt.Sprintf("sched: %v: task %v (kernel %d %q, %v) %s %s [%#x, %#x) and task %v (kernel %d %q, %v) %s %s [%#x, %#x): %s bytes [%#x, %#x) (%d bytes) overlap, and no parent, dependency or join orders the two tasks",
		ErrRace,
		e.Task, e.Kernel, e.Name, e.Where, rw(e.Writes), e.Stream, e.StreamBegin, e.StreamEnd,
		e.Other, e.OtherKernel, e.OtherName, e.OtherWhere, rw(e.OtherWrites), e.OtherStream, e.OtherBegin, e.OtherEnd,
		mem, e.Begin, e.End, e.End-e.Begin)
}

func (e *RaceError) Unwrap() error { return ErrRace }

// raceRange is one stream's memory: host addresses (buf 0) or a range of a
// device buffer.
type raceRange struct {
	lo, hi uint64
	buf    BufferID
	write  bool
	stream uint8 // i for In[i], MaxStreams+i for Out[i]
}

type raceNode struct {
	id          TaskID // NoTask: the slot holds no tracked task
	parent, dep TaskID
	held        bool
	indexed     bool // its ranges are in the checker's index
	kern        *Kernel
	kernel      KernelID
	where       Affinity
	kids, deps  []uint32 // slots of children and dependents (checked against parent/dep)
	ranges      []raceRange
	// Marks of the current check (epochs): bE, E reaches Y's start;
	// bS, S reaches it; fE, fS, reached from Y's end.
	bE, bS, fE, fS uint32
}

type raceVisit struct {
	idx uint32
	end bool // E(T), else S(T)
}

type raceChecker struct {
	s     *Scheduler
	mu    sync.Mutex
	nodes []raceNode
	// The ranges of the started live tasks, writes and reads apart.
	writes, reads raceIndex
	epoch         uint32
	stack         []raceVisit
}

// raceCheckers holds each open scheduler's checker, by tag (the
// Scheduler's fields are not this file's): made on first use.
var raceCheckers [MaxSchedulers + 1]atomic.Pointer[raceChecker]

func (s *Scheduler) raceChecker() *raceChecker {
	p := &raceCheckers[s.id]
	if r := p.Load(); r != nil && r.s == s {
		return r
	}
	for {
		old := p.Load()
		if old != nil && old.s == s {
			return old
		}
		r := &raceChecker{s: s, nodes: make([]raceNode, len(s.slots))}
		if p.CompareAndSwap(old, r) {
			return r
		}
	}
}

// raceAdd records a task being added in slot idx (after its parent was
// held) and, unless it is held, checks it. On a hazard it gives back the
// parent and the slot and returns the error.
func (s *Scheduler) raceAdd(idx uint32, t *Task, k *Kernel, hold bool, c *Ctx) error {
	id := makeID(s.id, s.slots[idx].genLoad(), idx)
	if err := s.raceChecker().add(id, t, k, hold); err != nil {
		if t.Parent != NoTask {
			s.decOpen(t.Parent.index(), c)
		}
		s.putSlot(idx, c)
		return err
	}
	return nil
}

// raceRun checks a held task as Run starts it; on a hazard it fails the
// task and returns the error.
func (s *Scheduler) raceRun(id TaskID, c *Ctx) error {
	if err := s.raceChecker().run(id); err != nil {
		s.finish(id.index(), err, c)
		return err
	}
	return nil
}

// raceDone forgets a completing task (idx at generation gen).
func (s *Scheduler) raceDone(idx, gen uint32) {
	s.raceChecker().done(makeID(s.id, gen, idx))
}

func (r *raceChecker) node(id TaskID) *raceNode {
	if id == NoTask || id.sched() != r.s.id {
		return nil
	}
	n := &r.nodes[id.index()]
	if n.id != id {
		return nil
	}
	return n
}

func appendRanges(rs []raceRange, d *TaskData) []raceRange {
	for i := range 2 * MaxStreams {
		st, write := &d.In[i%MaxStreams], i >= MaxStreams
		if write {
			st = &d.Out[i-MaxStreams]
		}
		if len(st.Bytes) > 0 {
			lo := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(st.Bytes))))
			rs = append(rs, raceRange{lo: lo, hi: lo + uint64(len(st.Bytes)), write: write, stream: uint8(i)})
		}
		if n := uint64(st.Count) * uint64(st.Stride); st.Buffer != 0 && n > 0 {
			rs = append(rs, raceRange{lo: st.Offset, hi: st.Offset + n, buf: st.Buffer, write: write, stream: uint8(i)})
		}
	}
	return rs
}

func (r *raceChecker) add(id TaskID, t *Task, k *Kernel, hold bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := id.index()
	n := &r.nodes[idx]
	*n = raceNode{id: id, parent: t.Parent, dep: t.Dependency, held: hold, kern: k, kernel: t.Kernel, where: t.Affinity,
		kids: n.kids[:0], deps: n.deps[:0], ranges: appendRanges(n.ranges[:0], &t.Data)}
	if p := r.node(t.Parent); p != nil {
		p.kids = append(p.kids, idx)
	}
	if d := r.node(t.Dependency); d != nil {
		d.deps = append(d.deps, idx)
	}
	if hold || len(n.ranges) == 0 {
		return nil
	}
	if err := r.check(idx); err != nil {
		r.unlink(n)
		return err
	}
	r.index(idx, n)
	return nil
}

func (r *raceChecker) run(id TaskID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.node(id)
	if n == nil || !n.held {
		return nil
	}
	if len(n.ranges) > 0 {
		if err := r.check(id.index()); err != nil {
			return err // stays held here: never compared again
		}
		r.index(id.index(), n)
	}
	n.held = false
	return nil
}

func (r *raceChecker) done(id TaskID) {
	r.mu.Lock()
	if n := r.node(id); n != nil {
		r.unlink(n)
	}
	r.mu.Unlock()
}

// unlink forgets n: its parent's list drops it, its own lists empty.
func (r *raceChecker) unlink(n *raceNode) {
	idx := n.id.index()
	if p := r.node(n.parent); p != nil {
		for i, x := range p.kids {
			if x == idx {
				p.kids[i] = p.kids[len(p.kids)-1]
				p.kids = p.kids[:len(p.kids)-1]
				break
			}
		}
	}
	if d := r.node(n.dep); d != nil {
		for i, x := range d.deps {
			if x == idx {
				d.deps[i] = d.deps[len(d.deps)-1]
				d.deps = d.deps[:len(d.deps)-1]
				break
			}
		}
	}
	if n.indexed {
		for i := range n.ranges {
			a := &n.ranges[i]
			r.ix(a.write).remove(a, idx)
		}
	}
	n.id, n.indexed, n.kern = NoTask, false, nil
	n.kids, n.deps = n.kids[:0], n.deps[:0]
}

// check compares task y (slot idx) with every started live task that no
// chain of parents, dependencies and joins orders with it.
func (r *raceChecker) check(y uint32) error {
	r.epoch++
	if r.epoch == 0 { // wrapped: clear the marks
		for i := range r.nodes {
			n := &r.nodes[i]
			n.bE, n.bS, n.fE, n.fS = 0, 0, 0, 0
		}
		r.epoch = 1
	}
	ep := r.epoch
	// Back from S(y): what ends before y starts.
	st := append(r.stack[:0], raceVisit{y, false})
	r.nodes[y].bS = ep
	for len(st) > 0 {
		v := st[len(st)-1]
		st = st[:len(st)-1]
		n := &r.nodes[v.idx]
		if !v.end {
			if d := r.node(n.dep); d != nil && d.bE != ep {
				d.bE = ep
				st = append(st, raceVisit{n.dep.index(), true})
			}
			continue
		}
		if n.bS != ep {
			n.bS = ep
			st = append(st, raceVisit{v.idx, false})
		}
		for _, k := range n.kids {
			if kn := &r.nodes[k]; kn.id != NoTask && kn.parent == n.id && kn.bE != ep {
				kn.bE = ep
				st = append(st, raceVisit{k, true})
			}
		}
	}
	// Forward from E(y): what starts after y ends.
	st = append(st, raceVisit{y, true})
	r.nodes[y].fE = ep
	for len(st) > 0 {
		v := st[len(st)-1]
		st = st[:len(st)-1]
		n := &r.nodes[v.idx]
		if !v.end {
			if n.fE != ep {
				n.fE = ep
				st = append(st, raceVisit{v.idx, true})
			}
			continue
		}
		if p := r.node(n.parent); p != nil && p.fE != ep {
			p.fE = ep
			st = append(st, raceVisit{n.parent.index(), true})
		}
		for _, d := range n.deps {
			if dn := &r.nodes[d]; dn.id != NoTask && dn.dep == n.id && dn.fS != ep {
				dn.fS = ep
				st = append(st, raceVisit{d, false})
			}
		}
	}
	r.stack = st
	yn := &r.nodes[y]
	for i := range yn.ranges {
		a := &yn.ranges[i]
		if x, j, ok := r.writes.find(a, y, ep, r.nodes); ok {
			return r.report(yn, a, &r.nodes[x], &r.nodes[x].ranges[j])
		}
		if !a.write {
			continue
		}
		if x, j, ok := r.reads.find(a, y, ep, r.nodes); ok {
			return r.report(yn, a, &r.nodes[x], &r.nodes[x].ranges[j])
		}
	}
	return nil
}

func (r *raceChecker) ix(write bool) *raceIndex {
	if write {
		return &r.writes
	}
	return &r.reads
}

// index adds a started task's ranges to the index.
func (r *raceChecker) index(idx uint32, n *raceNode) {
	for i := range n.ranges {
		a := &n.ranges[i]
		r.ix(a.write).insert(a, idx, uint8(i))
	}
	n.indexed = true
}

// raceIndex holds ranges sorted by (buffer, start): those that may overlap
// [lo, hi) start in [lo-maxLen, hi), found by a binary search and a scan.
type raceIndex struct {
	ents   []raceEnt
	maxLen uint64 // the longest range since the index was last empty
}

type raceEnt struct {
	buf    BufferID
	lo, hi uint64
	owner  uint32 // slot
	rng    uint8  // index in the owner's ranges
}

func (x *raceIndex) search(buf BufferID, lo uint64) int {
	i, j := 0, len(x.ents)
	for i < j {
		h := int(uint(i+j) >> 1)
		if e := &x.ents[h]; e.buf < buf || e.buf == buf && e.lo < lo {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

func (x *raceIndex) insert(a *raceRange, owner uint32, rng uint8) {
	i := x.search(a.buf, a.lo)
	x.ents = append(x.ents, raceEnt{})
	copy(x.ents[i+1:], x.ents[i:])
	x.ents[i] = raceEnt{buf: a.buf, lo: a.lo, hi: a.hi, owner: owner, rng: rng}
	x.maxLen = max(x.maxLen, a.hi-a.lo)
}

func (x *raceIndex) remove(a *raceRange, owner uint32) {
	for i := x.search(a.buf, a.lo); i < len(x.ents) && x.ents[i].buf == a.buf && x.ents[i].lo == a.lo; i++ {
		if x.ents[i].owner == owner && x.ents[i].hi == a.hi {
			x.ents = append(x.ents[:i], x.ents[i+1:]...)
			break
		}
	}
	if len(x.ents) == 0 {
		x.maxLen = 0
	}
}

// find returns a range of the index that overlaps a and whose owner no
// order relates to task y (marks of epoch ep).
func (x *raceIndex) find(a *raceRange, y, ep uint32, nodes []raceNode) (owner uint32, rng int, ok bool) {
	from := uint64(0)
	if a.lo > x.maxLen {
		from = a.lo - x.maxLen
	}
	for i := x.search(a.buf, from); i < len(x.ents); i++ {
		e := &x.ents[i]
		if e.buf != a.buf || e.lo >= a.hi {
			break
		}
		if e.hi <= a.lo {
			continue
		}
		if n := &nodes[e.owner]; e.owner != y && n.bE != ep && n.fS != ep {
			return e.owner, int(e.rng), true
		}
	}
	return 0, 0, false
}

func streamName(k *Kernel, i uint8) string {
	dir, specs := "in", []StreamSpec(nil)
	if k != nil {
		specs = k.In
	}
	if i >= MaxStreams {
		i -= MaxStreams
		dir = "out"
		if k != nil {
			specs = k.Out
		}
	}
	if int(i) < len(specs) && specs[i].Name != "" {
		return fmt.Sprintf("%s[%d] %s", dir, i, specs[i].Name)
	}
	return fmt.Sprintf("%s[%d]", dir, i)
}

func (r *raceChecker) report(y *raceNode, a *raceRange, x *raceNode, b *raceRange) error {
	name := func(k *Kernel) string {
		if k == nil {
			return ""
		}
		return k.Name
	}
	return &RaceError{
		Task: y.id, Other: x.id, Kernel: y.kernel, OtherKernel: x.kernel,
		Name: name(y.kern), OtherName: name(x.kern), Where: y.where, OtherWhere: x.where,
		Stream: streamName(y.kern, a.stream), OtherStream: streamName(x.kern, b.stream),
		Writes: a.write, OtherWrites: b.write, Buffer: a.buf,
		Begin: max(a.lo, b.lo), End: min(a.hi, b.hi),
		StreamBegin: a.lo, StreamEnd: a.hi, OtherBegin: b.lo, OtherEnd: b.hi,
	}
}
