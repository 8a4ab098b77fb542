package render

import (
	"errors"
	"fmt"

	"github.com/vkjobs/vkjobs/sched"
)

// Recorder turns ranges of the sorted stream into backend commands: step 3
// of the design (package doc), display-list building. The Vulkan backend implements it with
// one secondary command buffer per range, allocated from a command pool per
// worker; CountingRecorder (validation, tests) and CommandRecorder (a CPU
// command encoder, benchmarks, headless runs) are the CPU implementations.
//
// Call protocol for one Record call:
//
//	BeginFrame                          once, on the caller's thread
//	  Begin(w, range)                   per range, on some worker w...
//	    SetState*                       the state in effect at the range start
//	    { BindPipeline? BindMesh? Draw | SetState | Job }*
//	  End(w, range)                     ...on the same worker
//	EndFrame                            once, on the caller's thread, after every End
//
// Ranges are recorded concurrently on different workers. The calls for one
// range come from one goroutine, in stream order, between its Begin and End;
// a worker records at most one range at a time, so state kept per worker
// (a VkCommandPool, a current command buffer) needs no lock. Worker indices
// are scheduler thread indices, 0 <= w < FrameInfo.Threads. The primary
// command buffer must execute the ranges in Range.Index order: that order is
// the sorted order.
//
// A secondary command buffer inherits no bound pipeline, vertex buffers or
// dynamic state, so the builder starts every range by re-issuing the state
// packets in effect there (SetState, in stream order), and calls BindPipeline and BindMesh
// before a range's first draw and whenever the draw's pipeline or mesh
// changes (and after a Job, which may have bound anything). Sorting by key
// keeps those calls few; RecordStats counts them.
//
// Pointer arguments alias the contexts' buffers and are valid only during
// the call. Per-draw methods return nothing: a recorder remembers the first
// error of a range and returns it from End. Every handle the builder passes
// was validated against the Registry by MergeSort.
type Recorder interface {
	// BeginFrame prepares f.Ranges ranges (e.g. resets this frame's
	// command pools and allocates secondaries). An error aborts Record
	// before any range starts; EndFrame is not called.
	BeginFrame(f FrameInfo) error
	// Begin starts recording range rg on worker w (vkBeginCommandBuffer
	// with render-pass inheritance).
	Begin(w int, rg Range) error
	// BindPipeline binds pipeline p (vkCmdBindPipeline).
	BindPipeline(w int, p PipelineID)
	// BindMesh binds mesh m's vertex and index buffers.
	BindMesh(w int, m MeshID)
	// SetState applies a dynamic state (vkCmdSetViewport, vkCmdSetScissor).
	SetState(w int, s *StatePacket)
	// Draw records a draw with the bound pipeline and mesh (push constants,
	// then vkCmdDraw or vkCmdDrawIndexed; see DrawPacket).
	Draw(w int, d *DrawPacket)
	// Job records a backend-defined render job.
	Job(w int, j *JobPacket)
	// End finishes range rg (vkEndCommandBuffer) and returns the range's
	// first error.
	End(w int, rg Range) error
	// EndFrame is called once every range finished, with the first range
	// error or nil: on nil, submit (execute the ranges in index order in
	// the primary command buffer); otherwise discard the frame. End was
	// called for every range whose Begin succeeded, unless the recorder
	// panicked. EndFrame's error is returned by Record.
	EndFrame(rangeErr error) error
}

// FrameInfo describes the frame being recorded.
type FrameInfo struct {
	Ranges  int // ranges to record, indexed 0..Ranges-1
	Threads int // worker indices are below this
	Packets int // packets in the sorted stream
}

// Range is a contiguous piece of the sorted stream recorded as a unit (one
// secondary command buffer).
type Range struct {
	Index int // position among the frame's ranges: execution order
	First int // index of its first packet in the sorted stream
	Count int // number of packets
	// Layer is the sort-key layer of the range's first packet. With
	// Config.SplitLayers no range spans two layers, so a backend that
	// draws layers in different render passes (shadow maps, then the
	// scene) can record each range for its layer's pass.
	Layer uint8
}

// RecordStats counts what Record issued.
type RecordStats struct {
	Ranges        int
	Draws         int
	States        int // SetState calls, including those re-issued at range starts
	Jobs          int
	PipelineBinds int
	MeshBinds     int
}

func (s *RecordStats) add(o *RecordStats) {
	s.Draws += o.Draws
	s.States += o.States
	s.Jobs += o.Jobs
	s.PipelineBinds += o.PipelineBinds
	s.MeshBinds += o.MeshBinds
}

// rangeState is the per-range scratch of Record, padded against false
// sharing between workers.
type rangeState struct {
	last    [NumStates]int32 // last state packet of each kind in the range, or -1
	inherit [NumStates]int32 // state packet in effect at the range start, or -1
	stats   RecordStats
	_       [64]byte
}

func stateScanKernel(c *sched.Ctx, d *sched.TaskData) error {
	d.Data.(*Renderer).stateScan(c, int(d.Params[0]))
	return nil
}

func recordKernel(c *sched.Ctx, d *sched.TaskData) error {
	d.Data.(*Renderer).record(c, int(d.Params[0]))
	return nil
}

// Record is step 3 of the design, display-list building: it splits the sorted stream into ranges
// (at most Config.Ranges, at least Config.MinRange packets each, sizes
// differing by at most one; see Config.SplitLayers) and records them in
// parallel through rec, one scheduler task per range; c helps while it
// waits. See Recorder for the call protocol.
//
// It returns what it issued and the first error of BeginFrame, of a range
// (wrapped with its index; a panicking Recorder is an error too) or of
// EndFrame, or ErrStale if a context was reset since MergeSort. In steady
// state it allocates nothing itself.
func (r *Renderer) Record(c *sched.Ctx, s *Sorted, rec Recorder) (RecordStats, error) {
	if c == nil || c.Scheduler() != r.s {
		return RecordStats{}, errors.New("render: Record: c must be a thread of the Renderer's scheduler")
	}
	if s == nil || rec == nil {
		return RecordStats{}, errors.New("render: Record: nil Sorted or Recorder")
	}
	if !s.Valid() {
		return RecordStats{}, ErrStale
	}
	n := s.Len()
	nr := r.split(s)
	r.rstate = grow(r.rstate, nr)
	r.rangeErr = grow(r.rangeErr, nr)
	for i := range nr {
		r.rangeErr[i] = nil
		st := &r.rstate[i]
		st.stats = RecordStats{}
		for k := range st.inherit {
			st.inherit[k], st.last[k] = -1, -1
		}
	}
	if err := rec.BeginFrame(FrameInfo{Ranges: nr, Threads: r.s.Threads(), Packets: n}); err != nil {
		return RecordStats{}, fmt.Errorf("render: Record: BeginFrame: %w", err)
	}
	r.rec, r.rsorted = rec, s
	defer func() { r.rec, r.rsorted = nil, nil }()

	var ferr error
	if s.stats.States > 0 && nr > 1 {
		// Find the state in effect at each range start: each range's last
		// state of each kind, in parallel, then a fold over the ranges.
		ferr = r.fork(c, r.k[2], nr, true, r.stateScan)
		var cur [NumStates]int32
		for k := range cur {
			cur[k] = -1
		}
		for i := range nr {
			st := &r.rstate[i]
			st.inherit = cur
			for k, j := range st.last {
				if j >= 0 {
					cur[k] = j
				}
			}
		}
	}
	if ferr == nil && nr > 0 {
		ferr = r.fork(c, r.k[3], nr, true, r.record)
	}
	stats := RecordStats{Ranges: nr}
	for i := range nr {
		stats.add(&r.rstate[i].stats)
		if ferr == nil && r.rangeErr[i] != nil {
			ferr = fmt.Errorf("render: Record: range %d: %w", i, r.rangeErr[i])
		}
	}
	if err := rec.EndFrame(ferr); err != nil {
		return stats, errors.Join(ferr, fmt.Errorf("render: Record: EndFrame: %w", err))
	}
	return stats, ferr
}

// split cuts the sorted stream into r.ranges and returns how many. Without
// SplitLayers: min(Ranges, n/MinRange) ranges (at least one), sizes
// differing by at most one. With it, the same within each layer's segment,
// the range budget shared in proportion to segment sizes, at least one
// range per non-empty layer.
func (r *Renderer) split(s *Sorted) int {
	n := s.Len()
	r.ranges = r.ranges[:0]
	if n == 0 {
		return 0
	}
	start := 0
	for start < n {
		end := n
		layer := uint8(s.items[start].key >> KeyLayerShift)
		if r.cfg.SplitLayers {
			last := SortKey(layer)<<KeyLayerShift | ^KeyLayerMask
			end = start + upperBound(s.items[start:], last)
		}
		m := end - start
		nr := max(1, min(r.cfg.Ranges*m/n, m/r.cfg.MinRange))
		base, rem := m/nr, m%nr
		for i := range nr {
			size := base
			if i < rem {
				size++
			}
			layer := uint8(s.items[start].key >> KeyLayerShift)
			r.ranges = append(r.ranges, Range{Index: len(r.ranges), First: start, Count: size, Layer: layer})
			start += size
		}
	}
	return len(r.ranges)
}

// stateScan finds range i's last state packet of each kind.
func (r *Renderer) stateScan(_ *sched.Ctx, i int) {
	rg := r.ranges[i]
	st := &r.rstate[i]
	s := r.rsorted
	for j := rg.First; j < rg.First+rg.Count; j++ {
		if s.items[j].kind == kindState {
			st.last[s.State(j).Kind] = int32(j)
		}
	}
}

// record records range i on the calling worker.
func (r *Renderer) record(c *sched.Ctx, i int) {
	w := c.Index()
	rg := r.ranges[i]
	st := &r.rstate[i]
	rec, s := r.rec, r.rsorted
	if err := rec.Begin(w, rg); err != nil {
		r.rangeErr[i] = err
		return
	}
	var stats RecordStats
	// Re-issue the inherited states in stream order, so a range's calls
	// stay in key order.
	in := st.inherit
	for a := 1; a < len(in); a++ {
		for b := a; b > 0 && uint32(in[b]) < uint32(in[b-1]); b-- { // -1 sorts last
			in[b], in[b-1] = in[b-1], in[b]
		}
	}
	for _, j := range in {
		if j >= 0 {
			rec.SetState(w, s.State(int(j)))
			stats.States++
		}
	}
	var pipe PipelineID
	var mesh MeshID
	items := s.items[rg.First : rg.First+rg.Count]
	for j := range items {
		it := &items[j]
		switch it.kind {
		case kindDraw:
			d := (*DrawPacket)(s.ptr(it))
			if d.Pipeline != pipe {
				pipe = d.Pipeline
				rec.BindPipeline(w, pipe)
				stats.PipelineBinds++
			}
			if d.Mesh != mesh {
				mesh = d.Mesh
				rec.BindMesh(w, mesh)
				stats.MeshBinds++
			}
			rec.Draw(w, d)
			stats.Draws++
		case kindState:
			rec.SetState(w, (*StatePacket)(s.ptr(it)))
			stats.States++
		case kindJob:
			rec.Job(w, (*JobPacket)(s.ptr(it)))
			stats.Jobs++
			pipe, mesh = 0, 0
		}
	}
	st.stats = stats
	r.rangeErr[i] = rec.End(w, rg)
}
