package sched

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// Data races between tasks, refused when they are added (Config.CheckRaces).
//
//  1. Every streaming task declares the memory it reads (In) and writes
//     (Out): host ranges [SliceData(Bytes), +len(Bytes)) and device ranges
//     (Buffer, [Offset, Offset+Count*Stride)); a stream with both has both.
//     Where the task runs (CPU, GPU, SPU, Auto) plays no part.
//  2. The checker keeps a node per live task (all kinds: joins order
//     others), keyed by slot: its parent, dependency, its children and
//     dependents (intrusive lists through the nodes: linking allocates
//     nothing), and its ranges. Only live tasks: a task that finished is
//     ordered before every task added after it, so complete forgets it
//     (before the generation bump, so whoever sees it finished adds after).
//  3. Order is over events S(T) (start) and E(T) (end): S(T) ≤ E(T),
//     E(child) ≤ E(parent), E(dependency) ≤ S(T). Nothing else orders tasks:
//     a child added from outside runs while its parent waits for its own
//     dependency, a parent's kernel runs alongside its children, and a
//     kernel's Wait is not an order (a task a kernel adds without a parent
//     and waits for is compared with that kernel's task). A task X is
//     ordered with Y iff E(X) reaches S(Y) or E(Y) reaches S(X); every node
//     on such a path is live, so the walk sees only live nodes.
//  4. A task is checked when it starts: at Add, or at Run for one made with
//     Create (held tasks are skipped until then). The check walks back from
//     S(Y) and forward from E(Y) (marks by epoch, O(live)), then looks Y's
//     ranges up in an index of the started live tasks' ranges (sorted by
//     buffer and start, writes and reads apart: a read looks among the
//     writes only) for one whose task is unmarked.
//  5. Each pair is compared once, when the later of the two starts,
//     against the orders as they are then. Every order the walk follows is
//     real, and orders are only ever added, so a pair found ordered stays
//     ordered: no hazard between two started tasks is missed. A pair can
//     be refused that a later task would have ordered: Z, added after Y,
//     a child of a task P that Y waits for (P held, or running a kernel
//     that adds Z) and itself depending on X, makes X end before Y starts;
//     Y compared with X before Z existed is refused. Add Z before Y, or
//     make Y with Create and Run it once Z is added
//     (TestRaceOrderAddedLater). Rejected: deferring Y's check while a
//     task it waits for is held (Add would succeed and the hazard surface
//     later as a failure of a task not yet started, away from the call
//     that made it).
//  6. A hazard refuses Add (nothing is added) and fails the task at Run
//     (its dependents and parent then fail): a *RaceError, wrapping ErrRace.
//     The scheduler's own split pieces are not added, so they are never
//     compared with their task. A task run in place (Ctx.RunInPlace) is a
//     call inside its caller's kernel, not a task: it is not checked.
//     Frame graphs: graph_race.go. One mutex; with the check off, one
//     branch on the config bool per Add, Run and completion (and graph
//     run).

// ErrRace: two tasks that may run at the same time touch the same memory
// and at least one writes it (Config.CheckRaces). The error is a
// *RaceError.
var ErrRace = errors.New("data race")

// RaceError describes a hazard refused by Config.CheckRaces: the task being
// added (or Run) and a live task that may run at the same time, the streams
// of each, and the bytes both touch. Task is NoTask for a task refused by
// Add: it was never added, and the ID it would have had goes to the next
// task in its slot (a held task refused by Run keeps its ID: it fails).
// A side that is a frame graph's node has its node in Node (OtherNode),
// and -1 there otherwise; its Task is the run's root task, or NoTask when
// two nodes of one graph race (graph_race.go).
type RaceError struct {
	Task, Other            TaskID
	Node, OtherNode        GraphNode
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
	who := func(id TaskID, n GraphNode) string {
		switch {
		case n < 0 && id == NoTask:
			return "the task being added"
		case n < 0:
			return fmt.Sprintf("task %v", id)
		case id == NoTask:
			return fmt.Sprintf("graph node %d", n)
		}
		return fmt.Sprintf("graph node %d (run %v)", n, id)
	}
	mem := "host memory"
	if e.Buffer != 0 {
		mem = fmt.Sprintf("buffer %d", e.Buffer)
	}
	order := "no parent, dependency or join orders the two tasks"
	if e.Node >= 0 && e.OtherNode >= 0 {
		order = "no chain of Precede edges orders the two nodes"
	}
	return fmt.Sprintf("sched: %v: %s (kernel %d %q, %v) %s %s [%#x, %#x) and %s (kernel %d %q, %v) %s %s [%#x, %#x): %s bytes [%#x, %#x) (%d bytes) overlap, and %s",
		ErrRace,
		who(e.Task, e.Node), e.Kernel, e.Name, e.Where, rw(e.Writes), e.Stream, e.StreamBegin, e.StreamEnd,
		who(e.Other, e.OtherNode), e.OtherKernel, e.OtherName, e.OtherWhere, rw(e.OtherWrites), e.OtherStream, e.OtherBegin, e.OtherEnd,
		mem, e.Begin, e.End, e.End-e.Begin, order)
}

func (e *RaceError) Unwrap() error { return ErrRace }

// raceRange is one stream's memory: host addresses (buf 0) or a range of a
// device buffer.
type raceRange struct {
	lo, hi uint64
	buf    BufferID
	write  bool
	stream uint8  // i for In[i], MaxStreams+i for Out[i]
	node   uint32 // a graph's stream: its node + 1; 0: the task's own
}

type raceNode struct {
	id          TaskID // NoTask: the slot holds no tracked task
	parent, dep TaskID
	held        bool
	indexed     bool // its ranges are in the checker's index
	kern        *Kernel
	kernel      KernelID
	where       Affinity
	// Children (list 0) and dependents (list 1): intrusive doubly linked
	// lists through the nodes, so linking and unlinking a task allocates
	// nothing and takes O(1).
	l      [2]raceLinks
	ranges []raceRange
	// A graph run's root (graph_race.go): ranges is the graph's list and
	// gr its index (read only while the root lives), spare the slot's own.
	graph *Graph
	gr    *graphRace
	spare []raceRange
	// Marks of the current check (epochs): bE, E reaches Y's start;
	// bS, S reaches it; fE, fS, reached from Y's end.
	bE, bS, fE, fS uint32
}

// raceLinks is a node's list k: its head (the first member's slot + 1; 0:
// empty), and the node's own place in its parent's (dependency's) list.
type raceLinks struct {
	head, prev, next uint32 // slot + 1; 0: none
	in               bool   // on its parent's (dependency's) list
}

const (
	raceKids = 0
	raceDeps = 1
)

// push puts slot idx first on owner's list k.
func (r *raceChecker) push(owner *raceNode, k int, idx uint32) {
	n := &r.nodes[idx]
	n.l[k].prev, n.l[k].next, n.l[k].in = 0, owner.l[k].head, true
	if h := owner.l[k].head; h != 0 {
		r.nodes[h-1].l[k].prev = idx + 1
	}
	owner.l[k].head = idx + 1
}

// drop takes slot idx off owner's list k.
func (r *raceChecker) drop(owner *raceNode, k int, idx uint32) {
	n := &r.nodes[idx]
	if p := n.l[k].prev; p != 0 {
		r.nodes[p-1].l[k].next = n.l[k].next
	} else {
		owner.l[k].head = n.l[k].next
	}
	if x := n.l[k].next; x != 0 {
		r.nodes[x-1].l[k].prev = n.l[k].prev
	}
	n.l[k].prev, n.l[k].next, n.l[k].in = 0, 0, false
}

// detach empties n's list k (its members outlive it: the dependents of a
// finished dependency).
func (r *raceChecker) detach(n *raceNode, k int) {
	for x := n.l[k].head; x != 0; {
		m := &r.nodes[x-1].l[k]
		x = m.next
		m.prev, m.next, m.in = 0, 0, false
	}
	n.l[k].head = 0
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
	// Frame graphs (graph_race.go): each graph's last checked ranges, and
	// the slots of the live graph runs' roots, whose ranges are in their
	// graph's own index, not in writes and reads.
	graphs map[weak.Pointer[Graph]]*graphRace
	groots []uint32
}

// raceCheckers holds each open scheduler's checker, by tag (the
// Scheduler's fields are not this file's): made on first use.
var raceCheckers [MaxSchedulers + 1]atomic.Pointer[raceChecker]

// raceChecker returns s's checker, made and stored in raceCheckers on
// first use.
//
// Once Close stops the workers (stopping), a checker made is not stored:
// Close forgets s's checker (raceForget) and then releases the tag, and
// an Add or a completion that raced with Close and gets here after that
// would otherwise put s back in the table, keeping it alive, and could
// replace the checker of the tag's next owner, which would lose its live
// tasks and miss their races. A checker made that late knows none of
// s's tasks in any case (the stored one was forgotten, or never made),
// and what is added then fails with ErrClosed (lateAdd): not storing it
// loses nothing.
// The order of the atomics makes it sound: a next owner's checker is
// stored after releaseTag, so after stopping, and whoever loads it then
// sees stopping and stores nothing; a checker stored before stopping is
// seen by raceForget, or by the look at stopping after the store, which
// takes it out again.
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
		r := newRaceChecker(s)
		if s.stopping.Load() {
			return r
		}
		if p.CompareAndSwap(old, r) {
			if s.stopping.Load() {
				p.CompareAndSwap(r, nil) // raceForget may have looked already
			}
			return r
		}
	}
}

// newRaceChecker gives each slot's node room for four ranges, carved from
// one array: slots are taken in an order that walks the whole pool, so
// lists grown on first use would allocate in every frame until each slot
// had been used once. A task with more grows its slot's list once.
func newRaceChecker(s *Scheduler) *raceChecker {
	const rngs = 4
	n := len(s.slots)
	r := &raceChecker{s: s, nodes: make([]raceNode, n)}
	rs := make([]raceRange, rngs*n)
	for i := range r.nodes {
		r.nodes[i].ranges = rs[rngs*i : rngs*i : rngs*(i+1)]
	}
	return r
}

// raceForget drops s's checker from raceCheckers at the end of Close,
// before the tag is released: the table is global and the checker points
// at s, so a closed scheduler (its pool, the checker's nodes) would
// otherwise stay reachable until another scheduler that checks races took
// its tag, which is given out again only after every other tag.
func (s *Scheduler) raceForget() {
	p := &raceCheckers[s.id]
	if r := p.Load(); r != nil && r.s == s {
		p.CompareAndSwap(r, nil)
	}
}

// raceAddHook, when set (tests only), is called with the scheduler as
// raceAdd begins: a test stops an Add there until Close is over.
var raceAddHook atomic.Pointer[func(*Scheduler)]

// raceAdd records a task being added in slot idx (after its parent was
// held) and, unless it is held, checks it. On a hazard it gives back the
// parent and the slot and returns the error.
func (s *Scheduler) raceAdd(idx uint32, t *Task, k *Kernel, hold bool, c *Ctx) error {
	if h := raceAddHook.Load(); h != nil {
		(*h)(s)
	}
	id := makeID(s.id, s.slots[idx].genLoad(), idx)
	if err := s.raceChecker().add(id, t, k, hold); err != nil {
		// The task was never added: the ID it would have had is the
		// next task's in this slot (a refused Add moves no generation),
		// so the error must not name it.
		if re, ok := err.(*RaceError); ok && re.Task == id {
			re.Task = NoTask
		}
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

// appendRanges appends d's ranges (node: a graph node + 1, or 0).
func appendRanges(rs []raceRange, d *TaskData, node uint32) []raceRange {
	for i := range d.In {
		rs = appendStream(rs, &d.In[i], false, uint8(i), node)
	}
	for i := range d.Out {
		rs = appendStream(rs, &d.Out[i], true, uint8(MaxStreams+i), node)
	}
	return rs
}

func appendStream(rs []raceRange, st *Stream, write bool, stream uint8, node uint32) []raceRange {
	if len(st.Bytes) > 0 {
		lo := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(st.Bytes))))
		rs = append(rs, raceRange{lo: lo, hi: lo + uint64(len(st.Bytes)), write: write, stream: stream, node: node})
	}
	if st.Buffer != 0 {
		if n := uint64(st.Count) * uint64(st.Stride); n > 0 {
			rs = append(rs, raceRange{lo: st.Offset, hi: st.Offset + n, buf: st.Buffer, write: write, stream: stream, node: node})
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
		ranges: appendRanges(n.ranges[:0], &t.Data, 0)}
	if p := r.node(t.Parent); p != nil {
		r.push(p, raceKids, idx)
	}
	if d := r.node(t.Dependency); d != nil {
		r.push(d, raceDeps, idx)
	}
	if hold || len(n.ranges) == 0 {
		return nil
	}
	if err := r.check(idx, NoTask); err != nil {
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
		if err := r.check(id.index(), NoTask); err != nil {
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

// unlink forgets n: its parent's and dependency's lists drop it, its own
// lists empty.
func (r *raceChecker) unlink(n *raceNode) {
	idx := n.id.index()
	if p := r.node(n.parent); p != nil && n.l[raceKids].in {
		r.drop(p, raceKids, idx)
	}
	if d := r.node(n.dep); d != nil && n.l[raceDeps].in {
		r.drop(d, raceDeps, idx)
	}
	r.detach(n, raceKids)
	r.detach(n, raceDeps)
	if n.indexed {
		for i := range n.ranges {
			a := &n.ranges[i]
			r.ix(a.write).remove(a, idx)
		}
	}
	if n.graph != nil {
		r.dropGraphRoot(n, idx)
	}
	n.id, n.indexed, n.kern = NoTask, false, nil
}

// check compares task y (slot idx) with every started live task that no
// chain of parents, dependencies and joins orders with it.
func (r *raceChecker) check(y uint32, skip TaskID) error {
	ep := r.mark(y, skip)
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
	return r.checkGraphs(y, ep)
}

// mark marks, in a new epoch, the live tasks ordered with task y (slot):
// bE or fS set. skip (a task whose kernel runs y inside its call: a graph
// run's caller) and, when y descends from a graph run's root, that root
// are marked too.
func (r *raceChecker) mark(y uint32, skip TaskID) uint32 {
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
		for x := n.l[raceKids].head; x != 0; x = r.nodes[x-1].l[raceKids].next {
			if kn := &r.nodes[x-1]; kn.bE != ep {
				kn.bE = ep
				st = append(st, raceVisit{x - 1, true})
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
		for x := n.l[raceDeps].head; x != 0; x = r.nodes[x-1].l[raceDeps].next {
			if dn := &r.nodes[x-1]; dn.fS != ep {
				dn.fS = ep
				st = append(st, raceVisit{x - 1, false})
			}
		}
	}
	r.stack = st
	// A graph run's descendants (its runners, dynamic nodes and what
	// their kernels add) are not compared with the run's root, which
	// stands for the graph's nodes: the graph orders them (graph_race.go).
	if len(r.groots) > 0 {
		for p := r.node(r.nodes[y].parent); p != nil; p = r.node(p.parent) {
			if p.graph != nil {
				p.bE = ep
			}
		}
	}
	if n := r.node(skip); n != nil {
		n.bE = ep
	}
	return ep
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
		r.ix(a.write).insert(a, idx, i)
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
	rng    int    // index in the owner's ranges
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

func (x *raceIndex) insert(a *raceRange, owner uint32, rng int) {
	i := x.search(a.buf, a.lo)
	x.ents = append(x.ents, raceEnt{})
	copy(x.ents[i+1:], x.ents[i:])
	x.ents[i] = raceEnt{buf: a.buf, lo: a.lo, hi: a.hi, owner: owner, rng: rng}
	x.maxLen = max(x.maxLen, a.hi-a.lo)
}

// add appends a range; sort restores the order (a graph's index, built
// at once).
func (x *raceIndex) add(a *raceRange, owner uint32, rng int) {
	x.ents = append(x.ents, raceEnt{buf: a.buf, lo: a.lo, hi: a.hi, owner: owner, rng: rng})
	x.maxLen = max(x.maxLen, a.hi-a.lo)
}

func (x *raceIndex) sort() {
	slices.SortFunc(x.ents, func(a, b raceEnt) int {
		if c := cmp.Compare(a.buf, b.buf); c != 0 {
			return c
		}
		return cmp.Compare(a.lo, b.lo)
	})
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

// overlap returns the first range of the index that overlaps a, whoever
// owns it (a graph's index: one owner).
func (x *raceIndex) overlap(a *raceRange) (rng int, ok bool) {
	from := uint64(0)
	if a.lo > x.maxLen {
		from = a.lo - x.maxLen
	}
	for i := x.search(a.buf, from); i < len(x.ents); i++ {
		e := &x.ents[i]
		if e.buf != a.buf || e.lo >= a.hi {
			break
		}
		if e.hi > a.lo {
			return e.rng, true
		}
	}
	return 0, false
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
			return e.owner, e.rng, true
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

// raceSide is one side of a hazard: a task, or a graph's node.
type raceSide struct {
	id     TaskID
	node   GraphNode // -1: a task
	kernel KernelID
	kern   *Kernel
	where  Affinity
}

// side names who owns range a of task node n: the task, or the graph node
// the range came from.
func (n *raceNode) side(a *raceRange) raceSide {
	if n.graph != nil && a.node > 0 {
		return n.graph.raceSide(n.id, int(a.node-1))
	}
	return raceSide{id: n.id, node: -1, kernel: n.kernel, kern: n.kern, where: n.where}
}

func (r *raceChecker) report(y *raceNode, a *raceRange, x *raceNode, b *raceRange) error {
	return raceReport(y.side(a), a, x.side(b), b)
}

func raceReport(y raceSide, a *raceRange, x raceSide, b *raceRange) error {
	name := func(k *Kernel) string {
		if k == nil {
			return ""
		}
		return k.Name
	}
	return &RaceError{
		Task: y.id, Other: x.id, Node: y.node, OtherNode: x.node, Kernel: y.kernel, OtherKernel: x.kernel,
		Name: name(y.kern), OtherName: name(x.kern), Where: y.where, OtherWhere: x.where,
		Stream: streamName(y.kern, a.stream), OtherStream: streamName(x.kern, b.stream),
		Writes: a.write, OtherWrites: b.write, Buffer: a.buf,
		Begin: max(a.lo, b.lo), End: min(a.hi, b.hi),
		StreamBegin: a.lo, StreamEnd: a.hi, OtherBegin: b.lo, OtherEnd: b.hi,
	}
}

// ChecksRaces reports whether s refuses data races (Config.CheckRaces, set
// or turned on by the environment variable EnvCheckRaces).
func (s *Scheduler) ChecksRaces() bool { return s.cfg.CheckRaces }
