package render

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/vkjobs/vkjobs/evstream"
)

// CountingRecorder is a Recorder that records nothing but checks the
// protocol and counts what it is given, per range. It catches: calls
// outside Begin/End, a worker recording two ranges at once, a range begun
// twice or never, a draw before its pipeline or mesh is bound or with a
// different one bound, packets out of key order within a range, and (when
// Registry is set) handles the registry does not know. Use it in tests and
// to dry-run a frame without a GPU.
type CountingRecorder struct {
	// Registry, when set, re-validates every draw's handles.
	Registry *Registry
	// Keep records each range's packet keys in RangeCount.Keys (this
	// allocates; for tests).
	Keep bool

	frame   FrameInfo
	frames  int
	workers []countWorker
	ranges  []RangeCount
	mu      sync.Mutex
	err     error // a call naming a worker index out of range
}

// RangeCount is what a CountingRecorder saw for one range.
type RangeCount struct {
	Range  Range
	Worker int
	Begun  bool
	Ended  bool
	RecordStats
	FirstKey, LastKey SortKey
	Keys              []SortKey // when Keep
}

type countWorker struct {
	active bool
	rg     int
	pipe   PipelineID
	mesh   MeshID
	n      int
	last   SortKey
	err    error
	_      [64]byte
}

// BeginFrame implements Recorder.
func (r *CountingRecorder) BeginFrame(f FrameInfo) error {
	if f.Ranges < 0 || f.Threads <= 0 {
		return fmt.Errorf("counting recorder: bad frame %+v", f)
	}
	r.frame = f
	r.frames++
	r.err = nil
	r.workers = grow(r.workers, f.Threads)
	for i := range r.workers {
		r.workers[i] = countWorker{}
	}
	if cap(r.ranges) < f.Ranges {
		nr := make([]RangeCount, f.Ranges)
		copy(nr, r.ranges[:cap(r.ranges)]) // keep the Keys buffers
		r.ranges = nr
	}
	r.ranges = r.ranges[:f.Ranges]
	for i := range r.ranges {
		r.ranges[i] = RangeCount{Keys: r.ranges[i].Keys[:0]}
	}
	return nil
}

func (r *CountingRecorder) worker(w int, what string) *countWorker {
	if w < 0 || w >= len(r.workers) {
		r.mu.Lock()
		if r.err == nil {
			r.err = fmt.Errorf("counting recorder: %s on worker %d outside 0..%d", what, w, len(r.workers)-1)
		}
		r.mu.Unlock()
		return nil
	}
	cw := &r.workers[w]
	if !cw.active {
		if cw.err == nil {
			cw.err = fmt.Errorf("counting recorder: %s on worker %d outside Begin/End", what, w)
		}
		return nil
	}
	return cw
}

func (r *CountingRecorder) packet(cw *countWorker, k SortKey) {
	rc := &r.ranges[cw.rg]
	if cw.n == 0 {
		rc.FirstKey = k
	} else if k < cw.last && cw.err == nil {
		cw.err = fmt.Errorf("counting recorder: range %d packet %d: key %v after %v: not sorted", cw.rg, cw.n, k, cw.last)
	}
	cw.last = k
	rc.LastKey = k
	cw.n++
	if r.Keep {
		rc.Keys = append(rc.Keys, k)
	}
}

// Begin implements Recorder.
func (r *CountingRecorder) Begin(w int, rg Range) error {
	if w < 0 || w >= len(r.workers) {
		return fmt.Errorf("counting recorder: Begin: worker %d outside 0..%d", w, len(r.workers)-1)
	}
	if rg.Index < 0 || rg.Index >= len(r.ranges) {
		return fmt.Errorf("counting recorder: Begin: range %d outside 0..%d", rg.Index, len(r.ranges)-1)
	}
	cw := &r.workers[w]
	if cw.active {
		return fmt.Errorf("counting recorder: Begin range %d: worker %d is still recording range %d", rg.Index, w, cw.rg)
	}
	rc := &r.ranges[rg.Index]
	if rc.Begun {
		return fmt.Errorf("counting recorder: range %d begun twice", rg.Index)
	}
	rc.Begun, rc.Range, rc.Worker = true, rg, w
	*cw = countWorker{active: true, rg: rg.Index}
	return nil
}

// BindPipeline implements Recorder.
func (r *CountingRecorder) BindPipeline(w int, p PipelineID) {
	if cw := r.worker(w, "BindPipeline"); cw != nil {
		cw.pipe = p
		r.ranges[cw.rg].PipelineBinds++
	}
}

// BindMesh implements Recorder.
func (r *CountingRecorder) BindMesh(w int, m MeshID) {
	if cw := r.worker(w, "BindMesh"); cw != nil {
		cw.mesh = m
		r.ranges[cw.rg].MeshBinds++
	}
}

// SetState implements Recorder.
func (r *CountingRecorder) SetState(w int, s *StatePacket) {
	if cw := r.worker(w, "SetState"); cw != nil {
		r.ranges[cw.rg].States++
		r.packet(cw, s.Key)
	}
}

// Draw implements Recorder.
func (r *CountingRecorder) Draw(w int, d *DrawPacket) {
	cw := r.worker(w, "Draw")
	if cw == nil {
		return
	}
	r.ranges[cw.rg].Draws++
	r.packet(cw, d.Key)
	if cw.err != nil {
		return
	}
	switch {
	case cw.pipe == 0 || cw.pipe != d.Pipeline:
		cw.err = fmt.Errorf("counting recorder: range %d: draw with pipeline %d while %d is bound", cw.rg, d.Pipeline, cw.pipe)
	case cw.mesh == 0 || cw.mesh != d.Mesh:
		cw.err = fmt.Errorf("counting recorder: range %d: draw with mesh %d while %d is bound", cw.rg, d.Mesh, cw.mesh)
	case r.Registry != nil:
		var p Problem
		if !r.Registry.checkDraw(d, &p) {
			cw.err = fmt.Errorf("counting recorder: range %d: %w: %s", cw.rg, p.Kind, p.detail())
		}
	}
}

// Job implements Recorder.
func (r *CountingRecorder) Job(w int, j *JobPacket) {
	if cw := r.worker(w, "Job"); cw != nil {
		r.ranges[cw.rg].Jobs++
		r.packet(cw, j.Key)
		cw.pipe, cw.mesh = 0, 0 // a job may bind anything: expect re-binds
	}
}

// End implements Recorder.
func (r *CountingRecorder) End(w int, rg Range) error {
	if w < 0 || w >= len(r.workers) {
		return fmt.Errorf("counting recorder: End: worker %d outside 0..%d", w, len(r.workers)-1)
	}
	cw := &r.workers[w]
	if !cw.active || cw.rg != rg.Index {
		return fmt.Errorf("counting recorder: End range %d on worker %d, which is not recording it", rg.Index, w)
	}
	cw.active = false
	r.ranges[rg.Index].Ended = true
	err := cw.err
	cw.err = nil
	return err
}

// EndFrame implements Recorder: it checks every range was begun and ended
// and that no call came outside a range.
func (r *CountingRecorder) EndFrame(rangeErr error) error {
	if r.err != nil {
		return r.err
	}
	for i := range r.workers {
		if err := r.workers[i].err; err != nil {
			return err
		}
	}
	if rangeErr != nil {
		return nil
	}
	for i := range r.ranges {
		if rc := &r.ranges[i]; !rc.Begun || !rc.Ended {
			return fmt.Errorf("counting recorder: range %d begun %v, ended %v", i, rc.Begun, rc.Ended)
		}
	}
	return nil
}

// Frame returns the last frame's FrameInfo and how many frames began.
func (r *CountingRecorder) Frame() (FrameInfo, int) { return r.frame, r.frames }

// Ranges returns what each range of the last frame saw, in range order.
func (r *CountingRecorder) Ranges() []RangeCount { return r.ranges }

// Totals sums the last frame's ranges.
func (r *CountingRecorder) Totals() RecordStats {
	t := RecordStats{Ranges: len(r.ranges)}
	for i := range r.ranges {
		t.add(&r.ranges[i].RecordStats)
	}
	return t
}

// Command types written by CommandRecorder.
const (
	CmdBindPipeline evstream.Type = 1 // payload: uint32 PipelineID (4 bytes)
	CmdBindMesh     evstream.Type = 2 // payload: uint32 MeshID (4 bytes)
	CmdSetState     evstream.Type = 3 // payload: StatePacket
	CmdDraw         evstream.Type = 4 // payload: CmdDrawArgs
	CmdJob          evstream.Type = 5 // payload: JobPacket
)

// CmdDrawArgs is the payload of a CmdDraw command: what a GPU draw needs
// after the CPU's per-draw work.
type CmdDrawArgs struct {
	MVP           [16]float32 // ViewProj × Model, column-major
	Color         [4]float32
	FirstVertex   uint32
	VertexCount   uint32
	Instance      uint32
	InstanceCount uint32
}

// CommandRecorder is a Recorder that does the per-draw CPU work of a real
// backend without a GPU: for each draw it computes the model-view-projection
// matrix and encodes a CmdDraw command, with binds and states, into the
// range's command list, a evstream over a buffer it keeps per range (a
// software secondary command buffer). Its lists are grown in BeginFrame and
// Begin and reused; steady-state recording allocates nothing.
type CommandRecorder struct {
	// ViewProj is the camera's view-projection matrix, column-major.
	ViewProj [16]float32

	lists  []cmdList // grown to the largest frame; lists past ranges are stale
	ranges int       // the last frame's ranges
	cur    []int     // per worker: the range it records
}

type cmdList struct {
	w   evstream.Writer
	err error
	_   [64]byte
}

// BeginFrame implements Recorder.
func (r *CommandRecorder) BeginFrame(f FrameInfo) error {
	if len(r.lists) < f.Ranges {
		r.lists = append(r.lists, make([]cmdList, f.Ranges-len(r.lists))...)
	}
	r.cur = grow(r.cur, f.Threads)
	r.ranges = f.Ranges
	return nil
}

// cmdRecordMax bounds the command bytes one packet can produce.
const cmdRecordMax = 2*(evstream.HeaderSize+8) + evstream.HeaderSize + int(unsafe.Sizeof(CmdDrawArgs{}))

// Begin implements Recorder.
func (r *CommandRecorder) Begin(w int, rg Range) error {
	l := &r.lists[rg.Index]
	need := (rg.Count + int(NumStates)) * cmdRecordMax
	if l.w.Cap() < need {
		l.w.Init(evstream.NewBuffer(need + need/4))
	}
	l.w.Reset()
	l.err = nil
	r.cur[w] = rg.Index
	return nil
}

func (r *CommandRecorder) list(w int) *cmdList { return &r.lists[r.cur[w]] }

func (l *cmdList) check(err error) {
	if err != nil && l.err == nil {
		l.err = err
	}
}

// BindPipeline implements Recorder.
func (r *CommandRecorder) BindPipeline(w int, p PipelineID) {
	l := r.list(w)
	l.check(evstream.Put(&l.w, CmdBindPipeline, &p))
}

// BindMesh implements Recorder.
func (r *CommandRecorder) BindMesh(w int, m MeshID) {
	l := r.list(w)
	l.check(evstream.Put(&l.w, CmdBindMesh, &m))
}

// SetState implements Recorder.
func (r *CommandRecorder) SetState(w int, s *StatePacket) {
	l := r.list(w)
	l.check(evstream.Put(&l.w, CmdSetState, s))
}

// Job implements Recorder.
func (r *CommandRecorder) Job(w int, j *JobPacket) {
	l := r.list(w)
	l.check(evstream.Put(&l.w, CmdJob, j))
}

// Draw implements Recorder.
func (r *CommandRecorder) Draw(w int, d *DrawPacket) {
	l := r.list(w)
	p, err := l.w.Alloc(CmdDraw, int(unsafe.Sizeof(CmdDrawArgs{})))
	if err != nil {
		l.check(err)
		return
	}
	a := (*CmdDrawArgs)(unsafe.Pointer(&p[0]))
	mul4(&a.MVP, &r.ViewProj, &d.Model)
	a.Color = d.Color
	a.FirstVertex, a.VertexCount = d.FirstVertex, d.VertexCount
	a.Instance, a.InstanceCount = d.Instance, d.InstanceCount
}

// End implements Recorder.
func (r *CommandRecorder) End(w int, rg Range) error {
	return r.lists[rg.Index].err
}

// EndFrame implements Recorder.
func (r *CommandRecorder) EndFrame(rangeErr error) error { return nil }

// Commands returns range i's command list from the last frame: an evstream
// of Cmd* records, valid until the next BeginFrame. It is nil for an i
// outside the last frame's ranges (an older, larger frame's lists are kept
// for reuse, not returned).
func (r *CommandRecorder) Commands(i int) []byte {
	if i < 0 || i >= r.ranges {
		return nil
	}
	return r.lists[i].w.Bytes()
}

// mul4 sets o = a × b for column-major 4×4 matrices.
func mul4(o, a, b *[16]float32) {
	for c := 0; c < 4; c++ {
		b0, b1, b2, b3 := b[4*c], b[4*c+1], b[4*c+2], b[4*c+3]
		for r := 0; r < 4; r++ {
			o[4*c+r] = a[r]*b0 + a[4+r]*b1 + a[8+r]*b2 + a[12+r]*b3
		}
	}
}

var _ Recorder = (*CountingRecorder)(nil)
var _ Recorder = (*CommandRecorder)(nil)
