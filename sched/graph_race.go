package sched

// Frame graphs under Config.CheckRaces (race.go checks dynamic tasks).
//
//  1. Between a graph's nodes. Nodes run in place (no slot, no Add), so
//     the per-task check never sees them; the graph is checked as a whole
//     when a run starts, unless it is as it was at one of the last two
//     checks that passed. Any two nodes whose streams overlap, at least
//     one writing, and that no chain of Precede edges orders, fail the
//     run before any node runs: a *RaceError naming both nodes (Node,
//     OtherNode), kernels, streams and the overlap. A graph that failed
//     is checked again at each run. The graph keeps two sets of ranges
//     that passed, each with its nodes' and edges' count and its index
//     (step 3), so that a graph re-pointed (SetData) between two buffer
//     sets every run, double buffering, the common engine pattern, is
//     checked once per set. Each run compares the nodes' streams with a
//     checked set (a read-only pass over the nodes): first with the one
//     the previous run switched to, if it switched, else with the one it
//     used; then with the other. Only when neither matches are the
//     ranges derived again (into spare arrays) and checked below; they
//     replace the set used longer ago only if they pass, so a third set
//     that fails displaces neither. Rejected: one set (every run of a
//     double-buffered graph redid the pair check, which allocates); more
//     sets (each costs a failed pass over the nodes per run, and a ring
//     of three or more buffer sets is rare: such a graph is checked at
//     every run, as a graph changed every run is).
//  2. The pairs. The ranges sorted by (buffer, start) are swept once with
//     the writes and the reads still open apart: a range meets the open
//     writes, a write the open reads too. Each pair, oriented along a
//     topological order, is ordered iff the earlier node reaches the later
//     one. Reachability is computed for 64 earlier nodes at a time: a word
//     per node, OR-ed into the successors in topological order, so the
//     cost is (nodes + edges) × sources / 64 and the memory a word per
//     node. Rejected: a node × node reachability matrix (N² bits: 1.2 GB
//     at 100,000 nodes); a search per pair (the number of pairs times the
//     edges, when many nodes read what one writes).
//  3. Against dynamic tasks. The run's root (the held join every runner
//     and every dynamic node of the run is a child of) stands for the
//     nodes in the task checker: it is checked when the run starts,
//     against every live task, and stays live until the run ends, so a
//     task added during the run that races any node is refused at its Add.
//     The nodes' ranges do not enter the task index: the graph keeps its
//     own, sorted by the pair check and unchanged while the graph is, and
//     the checker searches the live roots' indexes after its own. At the
//     run's start the smaller side is walked: the live tasks' ranges
//     looked up in the graph's index (a frame's few tasks against a large
//     graph), or the graph's ranges in the task index. The root's own
//     descendants (runners, dynamic nodes, children a node's kernel adds)
//     are not compared with the root: among the nodes step 1 decides, and
//     a child a kernel adds is ordered with the node's successors only by
//     the kernel's own Wait, which the checker does not model (such
//     children are still compared with every other task). A graph run
//     from a kernel (RunCtx) is not compared with the task whose kernel
//     runs it: that kernel waits for the run. A graph run from a node's
//     kernel is a run of its own, compared with the outer graph's root
//     like any task: its nodes may not touch what the outer graph's nodes
//     write (the node that runs it included), nor write what they read.
//     Rejected: putting the nodes' ranges in the task index at each run
//     (a sort of the index per run, several times the cost of running a
//     small node in place).
//  4. Cost. Off, one branch per run. On, a pass over the nodes per run
//     (their streams compared with a checked set's ranges), the live tasks
//     looked up in the graph's index, and nothing allocated in a steady
//     state, one buffer set or two alternating: the root points at the
//     graph's checked ranges.

import (
	"cmp"
	"runtime"
	"slices"
	"unsafe"
	"weak"
)

// graphRace is a graph's state under the check: the set of ranges the
// last run used (a live run's root reads its ranges and index through
// the raceNode's gr) and the set checked before it (step 1).
type graphRace struct {
	rangeSet
	other rangeSet
	// spare holds the arrays a set's ranges are derived into (those of
	// the set it replaced, or of a set that failed), so a set that fails
	// the check displaces neither checked one.
	spare rangeSet
	// switched: the last run switched sets (or derived one), so the next
	// one, if the buffers alternate, matches other.
	switched bool
}

// rangeSet is a set of ranges a graph's nodes had and how it fared.
type rangeSet struct {
	ranges []raceRange // every node's, in node order; node = its index + 1
	nodes  int         // the graph's nodes and edges when checked
	edges  int
	// checked: ranges, nodes and edges passed the pair check (false
	// also while a set's arrays are being reused for another).
	checked bool
	// ranges' writes and reads sorted by (buffer, start), built with the
	// pair check: the index a live run's root is looked up in.
	w, rd raceIndex
}

// build sorts the ranges into st.w and st.rd.
func (st *rangeSet) build() {
	st.w, st.rd = raceIndex{ents: st.w.ents[:0]}, raceIndex{ents: st.rd.ents[:0]}
	for i := range st.ranges {
		a := &st.ranges[i]
		if a.write {
			st.w.add(a, 0, i)
		} else {
			st.rd.add(a, 0, i)
		}
	}
	st.w.sort()
	st.rd.sort()
}

// matches reports whether set passed the pair check for the graph as it
// is: its nodes and edges, and the ranges of the nodes' streams.
func (g *Graph) matches(set *rangeSet) bool {
	return set.checked && set.nodes == len(g.hot) && set.edges == len(g.edges) && g.sameRanges(set.ranges)
}

// pickSet makes st's current set one that matches the graph as it is:
// the current or the other (the other first if the last run switched).
// It reports false if neither matches.
func (g *Graph) pickSet(st *graphRace) bool {
	if !st.switched && g.matches(&st.rangeSet) {
		return true
	}
	if g.matches(&st.other) {
		st.rangeSet, st.other = st.other, st.rangeSet
		st.switched = true
		return true
	}
	if st.switched && g.matches(&st.rangeSet) {
		st.switched = false
		return true
	}
	return false
}

// raceCheck checks the run whose root (held, childless) was just made:
// the graph's nodes among themselves if it changed, then the nodes against
// the live tasks. On a hazard the root is released and the run fails.
func (g *Graph) raceCheck(c *Ctx) error {
	r := g.s.raceChecker()
	st := r.graphState(g)
	if !g.pickSet(st) {
		// Derive the ranges into the spare arrays; they become the
		// current set only if they pass, and the set used longer ago
		// the spare.
		nw := &st.spare
		nw.checked = false
		nw.ranges = nw.ranges[:0]
		for i := range g.data {
			nw.ranges = appendRanges(nw.ranges, &g.data[i], uint32(i)+1)
		}
		if err := g.racePairs(nw.ranges); err != nil {
			g.raceRelease(c)
			return err
		}
		nw.build()
		nw.nodes, nw.edges, nw.checked = len(g.hot), len(g.edges), true
		st.rangeSet, st.other, st.spare = st.spare, st.rangeSet, st.other
		st.switched = true
	}
	cur := NoTask
	if c != nil {
		cur = c.current
	}
	if err := r.graphRoot(g, st, cur); err != nil {
		g.raceRelease(c)
		return err
	}
	return nil
}

// sameRanges reports whether the nodes' streams still give rs (read
// only: a run of an unchanged graph writes nothing here).
func (g *Graph) sameRanges(rs []raceRange) bool {
	k := 0
	ok := true
	for i := range g.data {
		d, node := &g.data[i], uint32(i)+1
		for j := range d.In {
			if st := &d.In[j]; len(st.Bytes) != 0 || st.Buffer != 0 {
				if k, ok = matchStream(rs, k, st, uint8(j), node); !ok {
					return false
				}
			}
		}
		for j := range d.Out {
			if st := &d.Out[j]; len(st.Bytes) != 0 || st.Buffer != 0 {
				if k, ok = matchStream(rs, k, st, uint8(MaxStreams+j), node); !ok {
					return false
				}
			}
		}
	}
	return k == len(rs)
}

// matchStream reports whether rs[k:] starts with what appendStream would
// append for st, and returns the index past it.
func matchStream(rs []raceRange, k int, st *Stream, stream uint8, node uint32) (int, bool) {
	if len(st.Bytes) > 0 {
		lo := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(st.Bytes))))
		if k >= len(rs) || rs[k] != (raceRange{lo: lo, hi: lo + uint64(len(st.Bytes)), write: stream >= MaxStreams, stream: stream, node: node}) {
			return k, false
		}
		k++
	}
	if st.Buffer != 0 {
		if n := uint64(st.Count) * uint64(st.Stride); n > 0 {
			if k >= len(rs) || rs[k] != (raceRange{lo: st.Offset, hi: st.Offset + n, buf: st.Buffer, write: stream >= MaxStreams, stream: stream, node: node}) {
				return k, false
			}
			k++
		}
	}
	return k, true
}

// raceRelease runs the root of a run refused before any runner was added
// (a held task never finishes, and its slot would stay taken until Close)
// and returns without waiting for it: the root of a Start depends on its
// afters, which may be held by the caller (a gate it Runs once Start
// returned) and would then never finish. The root has no child and, in
// the checker, no ranges: its completion touches nothing of the graph.
func (g *Graph) raceRelease(c *Ctx) {
	if c != nil {
		c.Run(g.root)
		return
	}
	g.s.Run(g.root)
}

// graphState returns g's state, made on first use and dropped when g is
// collected (the map holds g weakly).
func (r *raceChecker) graphState(g *Graph) *graphRace {
	wp := weak.Make(g)
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.graphs[wp]; st != nil {
		return st
	}
	if r.graphs == nil {
		r.graphs = make(map[weak.Pointer[Graph]]*graphRace)
	}
	st := &graphRace{}
	r.graphs[wp] = st
	runtime.AddCleanup(g, func(wp weak.Pointer[Graph]) {
		r.mu.Lock()
		delete(r.graphs, wp)
		r.mu.Unlock()
	}, wp)
	return st
}

// graphRoot gives the run's root the nodes' ranges and checks it against
// the live tasks but skip (the task whose kernel runs the graph): the
// task index's entries are looked up in the graph's index when they are
// fewer than the graph's ranges (a frame's few live tasks against a large
// graph), else the graph's ranges in the task index. The root's ranges
// stay in the graph's index, which checkGraphs searches.
func (r *raceChecker) graphRoot(g *Graph, st *graphRace, skip TaskID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.node(g.root)
	if n == nil || len(st.ranges) == 0 {
		return nil
	}
	idx := g.root.index()
	n.spare, n.ranges, n.graph, n.gr = n.ranges, st.ranges, g, st
	ep := r.mark(idx, skip)
	var err error
	if len(r.writes.ents)+len(r.reads.ents) < len(st.ranges) {
		err = r.tasksInGraph(n, idx, ep)
	} else {
		err = r.graphInTasks(n, idx, ep)
	}
	if err == nil {
		err = r.checkGraphs(idx, ep)
	}
	if err != nil {
		n.graph, n.gr, n.ranges, n.spare = nil, nil, n.spare, nil
		return err
	}
	r.groots = append(r.groots, idx)
	n.held = false // checked: Run(root) has nothing left to check
	return nil
}

// tasksInGraph looks each unordered task's range up in root n's graph
// index: a write among its writes and reads, a read among its writes.
func (r *raceChecker) tasksInGraph(n *raceNode, idx, ep uint32) error {
	for _, ix := range [2]*raceIndex{&r.writes, &r.reads} {
		for i := range ix.ents {
			e := &ix.ents[i]
			x := &r.nodes[e.owner]
			if e.owner == idx || x.bE == ep || x.fS == ep {
				continue
			}
			b := &x.ranges[e.rng]
			if j, ok := n.gr.w.overlap(b); ok {
				return r.report(n, &n.ranges[j], x, b)
			}
			if !b.write {
				continue
			}
			if j, ok := n.gr.rd.overlap(b); ok {
				return r.report(n, &n.ranges[j], x, b)
			}
		}
	}
	return nil
}

// graphInTasks looks each of root n's ranges up in the task index.
func (r *raceChecker) graphInTasks(n *raceNode, idx, ep uint32) error {
	for i := range n.ranges {
		a := &n.ranges[i]
		if x, j, ok := r.writes.find(a, idx, ep, r.nodes); ok {
			return r.report(n, a, &r.nodes[x], &r.nodes[x].ranges[j])
		}
		if !a.write {
			continue
		}
		if x, j, ok := r.reads.find(a, idx, ep, r.nodes); ok {
			return r.report(n, a, &r.nodes[x], &r.nodes[x].ranges[j])
		}
	}
	return nil
}

// checkGraphs compares task y (slot; marks of epoch ep) with the live
// graph runs' roots that no order relates to it, in their graphs' indexes.
func (r *raceChecker) checkGraphs(y, ep uint32) error {
	yn := &r.nodes[y]
	for _, o := range r.groots {
		on := &r.nodes[o]
		if o == y || on.bE == ep || on.fS == ep {
			continue
		}
		for i := range yn.ranges {
			a := &yn.ranges[i]
			if j, ok := on.gr.w.overlap(a); ok {
				return r.report(yn, a, on, &on.ranges[j])
			}
			if !a.write {
				continue
			}
			if j, ok := on.gr.rd.overlap(a); ok {
				return r.report(yn, a, on, &on.ranges[j])
			}
		}
	}
	return nil
}

// dropGraphRoot forgets a graph run's root (slot idx): off the live list,
// its slot's own range list back.
func (r *raceChecker) dropGraphRoot(n *raceNode, idx uint32) {
	if i := slices.Index(r.groots, idx); i >= 0 {
		r.groots[i] = r.groots[len(r.groots)-1]
		r.groots = r.groots[:len(r.groots)-1]
	}
	n.graph, n.gr, n.ranges, n.spare = nil, nil, n.spare, nil
}

// raceSide names node n of the run whose root is root.
func (g *Graph) raceSide(root TaskID, n int) raceSide {
	t := &g.task[n]
	return raceSide{id: root, node: GraphNode(n), kernel: t.kernel, kern: t.k, where: t.affinity}
}

// racePairs refuses two nodes whose ranges (rs, node order) overlap, one
// writing, with no chain of Precede edges between them (g.edges, as
// built; the graph is sealed, so they have no cycle).
func (g *Graph) racePairs(rs []raceRange) error {
	ord := make([]int32, len(rs))
	for i := range ord {
		ord[i] = int32(i)
	}
	slices.SortFunc(ord, func(a, b int32) int {
		x, y := &rs[a], &rs[b]
		if c := cmp.Compare(x.buf, y.buf); c != 0 {
			return c
		}
		return cmp.Compare(x.lo, y.lo)
	})
	// The sweep: the open writes and reads of the current buffer, pruned
	// of those that end before the range at hand when they are scanned.
	type pair struct{ a, b int32 } // ranges; a's node comes first in pos
	var pairs []pair
	var openW, openR []int32
	buf := BufferID(0)
	meet := func(open []int32, i int32) []int32 {
		a := &rs[i]
		k := 0
		for _, j := range open {
			b := &rs[j]
			if b.hi <= a.lo {
				continue
			}
			open[k] = j
			k++
			if b.node != a.node {
				pairs = append(pairs, pair{j, i})
			}
		}
		return open[:k]
	}
	for n, i := range ord {
		a := &rs[i]
		if n == 0 || a.buf != buf {
			buf, openW, openR = a.buf, openW[:0], openR[:0]
		}
		openW = meet(openW, i)
		if a.write {
			openR = meet(openR, i)
			openW = append(openW, i)
		} else {
			openR = append(openR, i)
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	// The edges as built (Precede), in CSR, and a topological order of
	// them (the seal refused cycles). Not the seal's layout: a GPU
	// segment's contraction (step 6 of graph.go) runs a member's
	// successors after every member of the segment, an order the program
	// did not ask for and that a run without the segment (no
	// SegmentExecutor, or NewSegment failed) does not give; the verdict
	// must not depend on the executor. Two members of one segment are
	// unordered here (equal predecessors, no edge between them).
	nn := len(g.hot)
	cnt := make([]int32, nn+1)
	for _, e := range g.edges {
		cnt[e[0]+1]++
	}
	for i := 1; i <= nn; i++ {
		cnt[i] += cnt[i-1]
	}
	succ := make([]int32, len(g.edges))
	next := append([]int32(nil), cnt[:nn]...)
	left := make([]int32, nn)
	for _, e := range g.edges {
		succ[next[e[0]]] = e[1]
		next[e[0]]++
		left[e[1]]++
	}
	pos := make([]int32, nn)
	topo := make([]int32, 0, nn)
	for i := range left {
		if left[i] == 0 {
			topo = append(topo, int32(i))
		}
	}
	for k := 0; k < len(topo); k++ {
		x := topo[k]
		pos[x] = int32(k)
		for _, y := range succ[cnt[x]:cnt[x+1]] {
			if left[y]--; left[y] == 0 {
				topo = append(topo, y)
			}
		}
	}
	node := func(i int32) int32 { return int32(rs[i].node) - 1 }
	for k := range pairs {
		if p := &pairs[k]; pos[node(p.a)] > pos[node(p.b)] {
			p.a, p.b = p.b, p.a
		}
	}
	slices.SortFunc(pairs, func(x, y pair) int {
		if c := cmp.Compare(pos[node(x.a)], pos[node(y.a)]); c != 0 {
			return c
		}
		return cmp.Compare(pos[node(x.b)], pos[node(y.b)])
	})
	// Reachability from up to 64 sources at a time: bit[s] is source s's
	// bit in the chunk, reach[x] the sources of the chunk x is reached
	// from (itself included).
	reach := make([]uint64, nn)
	bit := make([]uint8, nn)
	for k := 0; k < len(pairs); {
		clear(reach)
		first, srcs, last := node(pairs[k].a), 0, int32(0)
		end := k
		for ; end < len(pairs); end++ {
			s := node(pairs[end].a)
			if reach[s] == 0 {
				if srcs == 64 {
					break
				}
				bit[s] = uint8(srcs)
				reach[s] = 1 << srcs
				srcs++
			}
			last = max(last, pos[node(pairs[end].b)])
		}
		for p := pos[first]; p < last; p++ {
			x := topo[p]
			if m := reach[x]; m != 0 {
				for _, y := range succ[cnt[x]:cnt[x+1]] {
					reach[y] |= m
				}
			}
		}
		for ; k < end; k++ {
			p := &pairs[k]
			if reach[node(p.b)]&(1<<bit[node(p.a)]) == 0 {
				a, b := &rs[p.a], &rs[p.b]
				return raceReport(g.raceSide(NoTask, int(node(p.b))), b, g.raceSide(NoTask, int(node(p.a))), a)
			}
		}
	}
	return nil
}
