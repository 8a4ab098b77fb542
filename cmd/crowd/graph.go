package main

import (
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/sched"
)

// The frame as frame graphs (-graph, the default): the tasks and edges of
// a frame are the same every frame, so they are built once, as
// sched.Graphs, and replayed; a frame only starts its graphs (issueGraph)
// and writes the few parameters that change (the time step, the
// statistics slot). See "The frame as graphs" in doc.go.
//
// The frame is cut into groups of consecutive phases, one graph each: the
// pipeline's stages (stagesFor), with record in a group of its own when
// submit/present is a stage of its own (-pipeline 4: recording frame f
// waits for frame f-1's submit, which may overlap frame f's events,
// gathering and sorting). Group k of frame f starts (Graph.Start's after)
// once group k-1 of frame f and the last group of the same stage of frame
// f-1 have finished, and the record group also after frame f-1's present:
// exactly the stage edges of the dynamic frame (issue), so the frames
// overlap as much as they do there. Edges between phases of one group are
// graph edges; those between groups are implied by the order of the
// groups (phases are in stage order).
//
// A graph names its buffers, so there is a copy of every group's graph
// per buffer set and vertex set: frame f runs copy f mod C, where C is
// the number of vertex sets, which graph mode rounds up to a multiple of
// the pipeline depth N (frame f's buffer set is f mod N, its vertex set f
// mod C: both fixed per copy). A copy's previous run (frame f-C, C >= N)
// has finished when frame f is issued: the loop waits for frame f-N,
// whose last group followed every group of every earlier frame.
//
// Each phase is framed by two timing nodes (kStamp) that record when it
// became ready and when its last node finished into the statistics slot
// of the frame (their Params[0], written per frame): a graph's nodes are
// no tasks the statistics could track (the Observer still sees each node
// run, for the per-kernel counts and the trace). They cost two calls per
// phase, in place.
//
// Rejected: one graph per frame copy with the whole pipeline inside
// (stage edges across frames are edges between runs, which a graph
// cannot have: the pipeline would become serial); a graph per phase
// (a Start, a join and a runner per phase cost more than the dynamic
// tasks they replace).

// frameGraphs is the frame as graphs: copies x groups.
type frameGraphs struct {
	groups    []phaseGroup
	copies    [][]groupGraph // [copy][group]
	prev      []sched.TaskID // the previous frame's joins, by group
	cur       []sched.TaskID // this frame's
	stageLast [4]int         // the last group of each stage
	// recAfter is present's group when record begins a group of its own
	// (submit/present a stage of its own): record's group also waits
	// for the previous frame's run of it. -1 otherwise.
	recAfter int
}

// phaseGroup is phases [lo, hi) of one stage.
type phaseGroup struct{ lo, hi, stage int }

// groupGraph is one group's graph and its per-frame parameters.
type groupGraph struct {
	g      *sched.Graph
	clock  sched.GraphNode   // the clock node (its time step), or -1
	stamps []sched.GraphNode // timing nodes: Params[0] is the statistics slot
}

// phaseGroups cuts the phases into groups (see the top of this file).
func phaseGroups(stageOf *[numPhases]int) []phaseGroup {
	var gs []phaseGroup
	for ph := range numPhases {
		split := ph == phRecord && stageOf[phPresent] != stageOf[phRecord]
		if len(gs) == 0 || stageOf[ph] != gs[len(gs)-1].stage || split {
			gs = append(gs, phaseGroup{lo: ph, hi: ph, stage: stageOf[ph]})
		}
		gs[len(gs)-1].hi = ph + 1
	}
	return gs
}

// buildGraphs builds every copy of every group's graph.
func (a *app) buildGraphs() error {
	fg := &frameGraphs{groups: phaseGroups(&a.stageOf), recAfter: -1}
	for k, gr := range fg.groups {
		fg.stageLast[gr.stage] = k
		if gr.lo == phRecord && a.stageOf[phPresent] != a.stageOf[phRecord] {
			fg.recAfter = len(fg.groups) - 1 // present's group: the last
		}
	}
	fg.prev = make([]sched.TaskID, len(fg.groups))
	fg.cur = make([]sched.TaskID, len(fg.groups))
	fg.copies = make([][]groupGraph, len(a.w.vsets))
	for ci := range fg.copies {
		gg, err := a.buildCopy(fg.groups, ci)
		if err != nil {
			return fmt.Errorf("building the frame graphs (copy %d): %w", ci, err)
		}
		fg.copies[ci] = gg
	}
	a.fg = fg
	return nil
}

// copyBuilder adds one copy's nodes to the graph of their phase's group.
type copyBuilder struct {
	a           *app
	gg          []groupGraph
	groupOf     [numPhases]int
	entry, exit [numPhases]sched.GraphNode // each phase's timing nodes
	err         error
}

func (b *copyBuilder) add(ph int, t *sched.Task) sched.GraphNode {
	if b.err != nil {
		return -1
	}
	n, err := b.gg[b.groupOf[ph]].g.Add(t)
	if err != nil {
		b.err = fmt.Errorf("%s: %w", phaseNames[ph], err)
	}
	return n
}

// edge orders x (of phase px) before y (of phase py) when both are in one
// group; across groups the groups' order does.
func (b *copyBuilder) edge(px int, x sched.GraphNode, py int, y sched.GraphNode) {
	if b.err != nil || b.groupOf[px] != b.groupOf[py] {
		return
	}
	b.err = b.gg[b.groupOf[px]].g.Precede(x, y)
}

// stamp adds a timing node of phase ph: the start of the phase (it
// precedes the phase's nodes) or its stop (it follows them).
func (b *copyBuilder) stamp(ph int, stop bool) sched.GraphNode {
	t := &b.a.joinTask
	*t = sched.Task{Kernel: kStamp}
	t.Data.Data = b.a
	t.Data.Params[1] = uint32(ph)
	if stop {
		t.Data.Params[2] = 1
	}
	n := b.add(ph, t)
	if b.err == nil {
		g := &b.gg[b.groupOf[ph]]
		g.stamps = append(g.stamps, n)
	}
	return n
}

// phase adds phase ph's timing nodes around its nodes xs: entry before
// each, exit after each.
func (b *copyBuilder) phase(ph int, xs ...sched.GraphNode) {
	b.entry[ph], b.exit[ph] = b.stamp(ph, false), b.stamp(ph, true)
	for _, x := range xs {
		b.edge(ph, b.entry[ph], ph, x)
		b.edge(ph, x, ph, b.exit[ph])
	}
}

// after orders phase ph after x (of phase px): x precedes ph's entry.
func (b *copyBuilder) after(ph int, px int, x sched.GraphNode) {
	b.edge(px, x, ph, b.entry[ph])
}

// buildCopy builds copy ci's graphs: buffer set ci mod N, vertex set ci.
// The edges are those of the dynamic frame (issue), each phase framed by
// its timing nodes.
func (a *app) buildCopy(groups []phaseGroup, ci int) ([]groupGraph, error) {
	w := a.w
	si := ci % len(w.sets)
	set, vs := &w.sets[si], &w.vsets[ci]
	b := &copyBuilder{a: a, gg: make([]groupGraph, len(groups))}
	for k, gr := range groups {
		b.gg[k] = groupGraph{g: a.s.NewGraph(), clock: -1}
		for ph := gr.lo; ph < gr.hi; ph++ {
			b.groupOf[ph] = k
		}
	}
	t := &a.task
	a.clockTask(t, si)
	clk := b.add(phSample, t)
	b.gg[b.groupOf[phSample]].clock = clk
	a.sampleTask(t, set)
	smp := b.add(phSample, t)
	b.edge(phSample, clk, phSample, smp)
	a.proceduralTask(t, set)
	proc := b.add(phSample, t)
	b.edge(phSample, smp, phSample, proc)
	b.phase(phSample, clk, proc)

	a.ltmTask(t, set)
	b.phase(phLTM, b.add(phLTM, t))
	b.after(phLTM, phSample, b.exit[phSample])

	var skins []sched.GraphNode
	if g := a.skinGroups(); g > 0 {
		for first := 0; first < w.n; first += g {
			a.skinGroupTask(t, set, vs, first, min(g, w.n-first))
			skins = append(skins, b.add(phSkin, t))
		}
	} else {
		a.skinTask(t, set, vs)
		skins = append(skins, b.add(phSkin, t))
	}
	b.phase(phSkin, skins...)
	b.after(phSkin, phLTM, b.exit[phLTM])

	frameTask := func(ph int, k sched.KernelID, where sched.Affinity, j int) sched.GraphNode {
		*t = sched.Task{Kernel: k, Affinity: where}
		t.Data.Data = a
		t.Data.Params[0] = uint32(si)
		t.Data.Params[1] = uint32(j)
		return b.add(ph, t)
	}
	b.phase(phEvents, frameTask(phEvents, kEvents, sched.AnyWorker, 0))
	b.after(phEvents, phSample, clk) // the clock wrote the events
	var gathers []sched.GraphNode
	for j := range a.draw.ctxs {
		gathers = append(gathers, frameTask(phGather, kGather, sched.AnyWorker, j))
	}
	b.phase(phGather, gathers...)
	b.after(phGather, phEvents, b.exit[phEvents])
	b.phase(phSort, frameTask(phSort, kSort, sched.AnyWorker, 0))
	b.after(phSort, phGather, b.exit[phGather])
	b.phase(phRecord, frameTask(phRecord, kRecord, sched.AnyWorker, 0))
	b.after(phRecord, phSort, b.exit[phSort])
	b.phase(phPresent, frameTask(phPresent, kPresent, sched.OnThread(0), 0))
	b.after(phPresent, phRecord, b.exit[phRecord])
	b.after(phPresent, phSkin, b.exit[phSkin]) // it draws the skinned vertices
	if b.err != nil {
		return nil, b.err
	}
	return b.gg, nil
}

// stampKernel (kStamp) records a frame graph's phase boundary in the
// statistics. Params: ring slot, phase, 0 for its start or 1 for its stop.
func stampKernel(_ *sched.Ctx, d *sched.TaskData) error {
	a := d.Data.(*app)
	rec := &a.st.ring[d.Params[0]]
	if d.Params[2] == 0 {
		atomicMin(&rec.start[d.Params[1]], sched.Nanotime())
	} else {
		atomicMax(&rec.stop[d.Params[1]], sched.Nanotime())
	}
	return nil
}

// issueGraph issues frame f: its parameters, then its groups' runs in
// order, each after the runs it follows (see the top of this file).
// Nothing here allocates.
func (a *app) issueGraph(f int) error {
	fb := a.beginFrame(f)
	fg := a.fg
	gg := fg.copies[f%len(fg.copies)]
	for k := range gg {
		g := &gg[k]
		if g.clock >= 0 {
			g.g.Params(g.clock)[1] = math.Float32bits(a.dt)
		}
		for _, m := range g.stamps {
			g.g.Params(m)[0] = uint32(fb.ring)
		}
	}
	c := a.main
	before := sched.NoTask
	for k := range gg {
		extra := sched.NoTask
		if fg.groups[k].lo == phRecord && fg.recAfter >= 0 {
			extra = fg.prev[fg.recAfter]
		}
		id, err := gg[k].g.Start(c, before, fg.prev[fg.stageLast[fg.groups[k].stage]], extra)
		if err != nil {
			return fmt.Errorf("frame %d: starting the graph of %s..%s: %w", f, phaseNames[fg.groups[k].lo], phaseNames[fg.groups[k].hi-1], err)
		}
		fg.cur[k], before = id, id
	}
	fg.prev, fg.cur = fg.cur, fg.prev
	a.done[f%len(a.done)] = before
	return nil
}
