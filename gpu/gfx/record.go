package gfx

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/vkjobs/vkjobs/gpu"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/render"
)

var _ render.Recorder = (*Graphics)(nil)

// Render jobs (render.JobPacket.Job) this backend runs.
const (
	// JobClear clears the target inside the render pass
	// (vkCmdClearAttachments over the whole target): Params[0..3] are the
	// colour's float32 bits (math.Float32bits), Params[4] the depth's,
	// Params[5] says what: 1 colour, 2 depth, 0 or 3 both.
	JobClear uint32 = 1
)

// ClearJob returns a JobClear packet with sort key k.
func ClearJob(k render.SortKey, rgba [4]float32, depth float32, what uint32) render.JobPacket {
	j := render.JobPacket{Key: k, Job: JobClear}
	for i, c := range rgba {
		j.Params[i] = math.Float32bits(c)
	}
	j.Params[4] = math.Float32bits(depth)
	j.Params[5] = what
	return j
}

// errNotInFrame is returned by the per-range calls outside BeginFrame and
// EndFrame.
var errNotInFrame = errors.New("gpu: Graphics: recorder call outside BeginFrame/EndFrame")

// BeginFrame implements render.Recorder. It waits for the frame in flight
// that last used this frame's resources (its fence), resets the primary
// command buffer's pool (each worker resets its own at its first Begin of
// the frame, in parallel), acquires a swapchain
// image (recreating the swapchain first if the window was resized or the
// swapchain went out of date), and writes the View into the frame's
// uniform buffer. It returns ErrFrameSkipped, recording nothing, while a
// window is minimised. In steady state it allocates nothing; a frame with
// more workers or ranges than any before grows the per-worker state.
func (g *Graphics) BeginFrame(fi render.FrameInfo) error {
	if err := g.usable("BeginFrame"); err != nil {
		return err
	}
	if g.broken != nil {
		return g.broken
	}
	if err := g.dh.Usable(); err != nil {
		return err
	}
	if g.inFrame {
		// The previous frame never ended (a recorder panicked): submit it
		// as discarded so its synchronisation stays balanced.
		if err := g.EndFrame(errors.New("abandoned")); err != nil {
			return err
		}
	}
	if fi.Threads <= 0 || fi.Ranges < 0 {
		return fmt.Errorf("gpu: BeginFrame: bad frame %+v", fi)
	}
	f := &g.frames[g.cur]
	if err := g.ensureWorkers(f, fi.Threads); err != nil {
		return err
	}
	// Only the primary's pool is reset here; each worker resets its own
	// pool at its first range of the frame (Begin), in parallel.
	if r := g.t.FrameBegin(f.fence, true, uint64(g.opts.FenceTimeout), f.pools[:1]); r != vk.Success {
		if r == vk.Timeout {
			return fmt.Errorf("%w: the frame %d frames ago is not complete after %v", gpu.ErrTimeout, len(g.frames), g.opts.FenceTimeout)
		}
		return g.failVk("vkWaitForFences/vkResetCommandPool", r)
	}
	if g.sc != nil {
		if err := g.acquire(f.acquireSem); err != nil {
			if errors.Is(err, ErrFrameSkipped) {
				g.stats.Skipped++
			}
			return err
		}
		g.fb = g.sc.fbs[g.sc.index]
	} else {
		g.fb = g.off.fb
	}
	for i := range f.used {
		f.used[i] = 0
	}
	if cap(f.ranges) < fi.Ranges {
		f.ranges = make([]vk.CommandBuffer, fi.Ranges, fi.Ranges+fi.Ranges/4)
	}
	f.ranges = f.ranges[:fi.Ranges]
	clear(f.ranges)
	for i := range g.workers {
		g.workers[i].active, g.workers[i].draws = false, 0
	}
	copy(f.ubo.Mapped, unsafe.Slice((*byte)(unsafe.Pointer(&g.uniforms)), frameUniformBytes))
	g.clear = g.view.Clear
	g.nranges = fi.Ranges
	g.inFrame = true
	return nil
}

// worker returns worker w's state while it records a range, else nil.
func (g *Graphics) worker(w int) *gfxWorker {
	if w < 0 || w >= len(g.workers) || !g.workers[w].active {
		return nil
	}
	return &g.workers[w]
}

// Begin implements render.Recorder: worker w resets its command pool of
// this frame at its first range, takes the next secondary command buffer
// of the pool (allocating more only when a frame needs more than any
// before), begins it inside the render pass, binds the frame's uniforms
// and sets a viewport and scissor covering the target.
func (g *Graphics) Begin(w int, rg render.Range) error {
	if err := g.usable("Begin"); err != nil {
		return err
	}
	if !g.inFrame {
		return errNotInFrame
	}
	if w < 0 || w >= len(g.workers) {
		return fmt.Errorf("gpu: Begin: worker %d outside 0..%d", w, len(g.workers)-1)
	}
	if rg.Index < 0 || rg.Index >= g.nranges {
		return fmt.Errorf("gpu: Begin: range %d outside 0..%d", rg.Index, g.nranges-1)
	}
	ws := &g.workers[w]
	if ws.active {
		return fmt.Errorf("gpu: Begin: worker %d is still recording a range", w)
	}
	f := &g.frames[g.cur]
	if f.used[w] == 0 {
		// The worker's first range of the frame: recycle the secondaries
		// it recorded when this frame's resources were last used (their
		// execution completed: BeginFrame waited for the frame's fence).
		if r := g.t.ResetPool(f.pools[1+w]); r != vk.Success {
			return g.failVk("vkResetCommandPool", r)
		}
	}
	if f.used[w] == len(f.secs[w]) {
		more := make([]vk.CommandBuffer, max(4, len(f.secs[w])))
		if r := g.t.AllocCBs(f.pools[1+w], true, more); r != vk.Success {
			return g.failVk("vkAllocateCommandBuffers", r)
		}
		f.secs[w] = append(f.secs[w], more...)
	}
	cb := f.secs[w][f.used[w]]
	f.used[w]++
	if r := g.t.SecondaryBegin(cb, g.renderPass, g.fb, g.w, g.h, g.pipeLayout, f.set); r != vk.Success {
		return g.failVk("vkBeginCommandBuffer", r)
	}
	f.ranges[rg.Index] = cb
	*ws = gfxWorker{cb: cb, active: true, draws: ws.draws}
	return nil
}

// BindPipeline implements render.Recorder. An unknown ID is the range's
// error (ErrUnknownHandle); the range's later draws are skipped.
func (g *Graphics) BindPipeline(w int, id render.PipelineID) {
	ws := g.worker(w)
	if ws == nil || ws.err != nil {
		return
	}
	if id == 0 || int(id) > len(g.pipes) || g.pipes[id-1] == nil {
		ws.fail(fmt.Errorf("%w: pipeline %d is not registered in this Graphics", ErrUnknownHandle, id))
		return
	}
	p := g.pipes[id-1]
	ws.pipe = p
	g.t.BindPipeline(ws.cb, p.pipe)
}

// BindMesh implements render.Recorder: it binds the mesh's vertex buffer
// (binding 0), its instance buffer (binding 1) and its index buffer. An
// unknown ID is the range's error (ErrUnknownHandle).
func (g *Graphics) BindMesh(w int, id render.MeshID) {
	ws := g.worker(w)
	if ws == nil || ws.err != nil {
		return
	}
	if id == 0 || uint64(id) > uint64(len(g.meshes)) || g.meshes[id-1] == nil {
		ws.fail(fmt.Errorf("%w: mesh %d is not registered in this Graphics", ErrUnknownHandle, id))
		return
	}
	m := g.meshes[id-1]
	ws.mesh = m
	g.t.BindMesh(ws.cb, m.vbuf, m.voff, m.ibuf, m.ioff, m.indexType, m.inst, m.instOff)
}

// SetState implements render.Recorder: vkCmdSetViewport (depth 0..1) or
// vkCmdSetScissor. A viewport of zero area, or one that does not overlap
// the target, makes the following draws of the range no-ops (Vulkan
// forbids the first, and would draw nothing visible for the second; a
// viewport far outside the target would also break the device's
// viewportBoundsRange, which Vulkan forbids). A viewport's size is
// clamped to maxViewportDimensions. A scissor is intersected with the
// target, which selects the same pixels and keeps its offset non-negative
// and offset plus extent within int32, as Vulkan requires.
func (g *Graphics) SetState(w int, s *render.StatePacket) {
	ws := g.worker(w)
	if ws == nil || ws.err != nil {
		return
	}
	x, y, rw, rh := int64(s.Rect[0]), int64(s.Rect[1]), int64(s.Rect[2]), int64(s.Rect[3])
	tw, th := int64(g.w), int64(g.h)
	switch s.Kind {
	case render.StateViewport:
		rw = min(rw, int64(g.maxViewport[0]))
		rh = min(rh, int64(g.maxViewport[1]))
		// Overlapping the target bounds x and y by the viewport's size
		// and the target's, both within maxViewportDimensions, and Vulkan
		// guarantees viewportBoundsRange covers twice that.
		if rw <= 0 || rh <= 0 || x+rw <= 0 || y+rh <= 0 || x >= tw || y >= th {
			ws.culled = true
			return
		}
		ws.culled = false
		g.t.State(ws.cb, 0, float32(x), float32(y), float32(rw), float32(rh))
	case render.StateScissor:
		x0, y0 := min(max(x, 0), tw), min(max(y, 0), th)
		x1, y1 := min(max(x+max(rw, 0), 0), tw), min(max(y+max(rh, 0), 0), th)
		g.t.State(ws.cb, 1, float32(x0), float32(y0), float32(max(x1-x0, 0)), float32(max(y1-y0, 0)))
	default:
		ws.fail(fmt.Errorf("gpu: SetState: unknown state kind %d", s.Kind))
	}
}

// Draw implements render.Recorder: vkCmdPushConstants with the packet's
// model matrix and colour (render.DrawPacket.PushConstants, read in place),
// then vkCmdDrawIndexed(VertexCount, InstanceCount, FirstVertex, 0,
// Instance) for an indexed mesh or vkCmdDraw(VertexCount, InstanceCount,
// FirstVertex, Instance). A draw outside its mesh, or with no pipeline or
// mesh bound, is the range's error (ErrBadDraw, ErrUnknownHandle) and is
// not recorded.
func (g *Graphics) Draw(w int, d *render.DrawPacket) {
	ws := g.worker(w)
	if ws == nil || ws.err != nil {
		return
	}
	p, m := ws.pipe, ws.mesh
	switch {
	case p == nil || m == nil:
		ws.fail(fmt.Errorf("%w: draw with no pipeline or mesh bound", ErrBadDraw))
		return
	case p.id != d.Pipeline || m.id != d.Mesh:
		ws.fail(fmt.Errorf("%w: draw names pipeline %d and mesh %d while %d and %d are bound", ErrBadDraw, d.Pipeline, d.Mesh, p.id, m.id))
		return
	}
	indexed := m.indexType != 0
	limit := m.vcount
	if indexed {
		limit = m.icount
	}
	if d.VertexCount == 0 || d.InstanceCount == 0 || uint64(d.FirstVertex)+uint64(d.VertexCount) > uint64(limit) {
		ws.fail(fmt.Errorf("%w: %d vertices/indices from %d (%d instances) of mesh %d %q, which has %d",
			ErrBadDraw, d.VertexCount, d.FirstVertex, d.InstanceCount, m.id, m.name, limit))
		return
	}
	if p.instanced {
		if m.inst == 0 {
			ws.fail(fmt.Errorf("%w: instanced pipeline %d %q with mesh %d %q, which has no instance buffer", ErrBadDraw, p.id, p.name, m.id, m.name))
			return
		}
		if uint64(d.Instance)+uint64(d.InstanceCount) > uint64(m.instCount) {
			ws.fail(fmt.Errorf("%w: instances [%d, %d) of mesh %d %q, which has %d", ErrBadDraw,
				d.Instance, uint64(d.Instance)+uint64(d.InstanceCount), m.id, m.name, m.instCount))
			return
		}
	}
	if ws.culled {
		return
	}
	g.t.Draw(ws.cb, g.pipeLayout, (*byte)(unsafe.Pointer(&d.Model[0])), pushConstantBytes, indexed, d.VertexCount, d.InstanceCount, d.FirstVertex, d.Instance)
	ws.draws++
}

// Job implements render.Recorder: JobClear; any other job is the range's
// error (ErrUnknownJob).
func (g *Graphics) Job(w int, j *render.JobPacket) {
	ws := g.worker(w)
	if ws == nil || ws.err != nil {
		return
	}
	switch j.Job {
	case JobClear:
		what := j.Params[5] & 3
		if what == 0 {
			what = 3
		}
		var rgba [4]float32
		for i := range rgba {
			rgba[i] = math.Float32frombits(j.Params[i])
		}
		depth := math.Float32frombits(j.Params[4])
		if !(depth >= 0 && depth <= 1) {
			ws.fail(fmt.Errorf("gpu: JobClear: depth %v outside 0..1", depth))
			return
		}
		g.t.Clear(ws.cb, what, &rgba, depth, g.w, g.h)
	default:
		ws.fail(fmt.Errorf("%w: job %d", ErrUnknownJob, j.Job))
	}
}

// End implements render.Recorder: it ends the range's secondary command
// buffer and returns the range's first error.
func (g *Graphics) End(w int, rg render.Range) error {
	if err := g.usable("End"); err != nil {
		return err
	}
	ws := g.worker(w)
	if ws == nil {
		return fmt.Errorf("gpu: End range %d: worker %d is not recording", rg.Index, w)
	}
	ws.active = false
	err := ws.err
	if r := g.t.CbEnd(ws.cb); r != vk.Success && err == nil {
		err = g.failVk("vkEndCommandBuffer", r)
	}
	ws.pipe, ws.mesh = nil, nil
	return err
}

// EndFrame implements render.Recorder. Without a range error it records
// the frame's primary command buffer (a barrier making compute and host
// writes visible to vertex input; the render pass with the ranges'
// secondaries executed in range order; for an offscreen target a copy of
// the colour image into the frame's read-back buffer), submits it with
// the frame's fence and, for a window, presents. With a range error the
// frame is discarded: the primary executes no secondary, so the target
// shows only the clear colour, and EndFrame returns nil (render's Record
// returns the range error). A present that reports the swapchain out of
// date or suboptimal marks it for recreation at the next BeginFrame.
func (g *Graphics) EndFrame(rangeErr error) error {
	if err := g.usable("EndFrame"); err != nil {
		return err
	}
	if !g.inFrame {
		return errNotInFrame
	}
	g.inFrame = false
	f := &g.frames[g.cur]
	secs := f.ranges[:g.nranges]
	discard := rangeErr != nil
	draws := 0
	for i := range g.workers {
		ws := &g.workers[i]
		if ws.active {
			discard = true // a range never ended
			ws.active = false
		}
		draws += ws.draws
		ws.draws = 0
	}
	for _, cb := range secs {
		if cb == 0 {
			discard = true // a range never began
		}
	}
	if discard {
		secs = secs[:0]
		draws = 0
		g.stats.Discarded++
	}
	var copyImage uint64
	var copyBuf vk.Buffer
	if g.off != nil {
		copyImage, copyBuf = g.off.color.img, f.readback.Buf
	}
	if r := g.t.FrameRecord(f.primary, g.renderPass, g.fb, g.w, g.h, &g.clear, secs, copyImage, copyBuf); r != vk.Success {
		g.broken = g.failVk("vkEndCommandBuffer (primary)", r)
		return g.broken
	}
	if g.noSubmit {
		return nil
	}
	var waitSem, doneSem uint64
	if g.sc != nil {
		waitSem, doneSem = f.acquireSem, g.sc.done[g.sc.index]
	}
	var r vk.Result
	if g.dh.TakeSubmitFault() {
		r = vk.ErrorDeviceLost
	} else {
		g.dh.QueueLock().Lock()
		r = g.t.FrameSubmit(g.hnd.Queue, f.primary, waitSem, doneSem, f.fence)
		g.dh.QueueLock().Unlock()
	}
	if r != vk.Success {
		// The fence was reset and will not signal: frames cannot go on.
		g.broken = g.failVk("vkQueueSubmit", r)
		return g.broken
	}
	g.last = g.cur
	g.cur = (g.cur + 1) % len(g.frames)
	g.stats.Frames++
	g.stats.Draws += draws
	if g.sc == nil {
		return nil
	}
	g.dh.QueueLock().Lock()
	r = g.t.Present(g.hnd.Queue, g.sc.handle, g.sc.index, doneSem)
	g.dh.QueueLock().Unlock()
	switch r {
	case vk.Success:
	case vk.SuboptimalKHR, vk.ErrorOutOfDateKHR:
		g.sc.stale = true
	default:
		return g.failVk("vkQueuePresentKHR", r)
	}
	return nil
}
