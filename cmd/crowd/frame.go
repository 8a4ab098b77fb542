package main

import (
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// Pipeline stages: which stage each phase belongs to for -pipeline N.
// A stage of frame f starts when the previous stage of frame f and the
// same stage of frame f-1 have completed, so each stage runs one frame
// at a time and consecutive frames overlap stage by stage.
//
//	N=1  [sample lm skin events gather sort record present]
//	N=2  [sample lm skin] [events gather sort record present]
//	N=3  [sample] [lm skin] [events gather sort record present]
//	N=4  [sample] [lm skin] [events gather sort record] [present]
//
// With N=4, recording frame f also waits for the submit of frame f-1 (a
// gfx.Graphics frame begins only after the previous one ended), so the
// submit overlaps the events, gathering and sorting of the next frame.
func stagesFor(n int) (stageOf [numPhases]int) {
	for ph := range stageOf {
		switch n {
		case 1:
			stageOf[ph] = 0
		case 2:
			if ph > phSkin {
				stageOf[ph] = 1
			}
		default:
			switch {
			case ph == phSample:
				stageOf[ph] = 0
			case ph <= phSkin:
				stageOf[ph] = 1
			case ph == phPresent && n >= 4:
				stageOf[ph] = 3
			default:
				stageOf[ph] = 2
			}
		}
	}
	return stageOf
}

// frameTasks are the IDs of one frame's phase tasks (the last of each
// phase: the gather phase is represented by the join of its jobs).
type frameTasks [numPhases]sched.TaskID

// issue builds frame f's task graph on the main thread (immediate mode:
// tasks are created and linked as they are described; nothing is built
// ahead):
//
//	clock --> sample --> procedural --> local-to-model --> skin ----------+
//	  |                                                                   v
//	  +--> events --> gather x J --> join --> merge-n-sort --> record --> submit/present
//
// plus the stage edges of the frame pipeline (see stagesFor). Every task
// is created held, registered with the statistics, then started. Adding
// tasks allocates nothing. This is the dynamic frame (-graph=false);
// graph.go builds the same tasks and edges once as frame graphs, from the
// same task descriptions (clockTask, sampleTask, ...).
func (a *app) issue(f int) error {
	fb := a.beginFrame(f)
	clk, err := fb.sample()
	if err != nil {
		return err
	}
	if err := fb.localToModel(); err != nil {
		return err
	}
	if err := fb.skin(); err != nil {
		return err
	}
	if err := fb.events(clk); err != nil {
		return err
	}
	if err := fb.gather(); err != nil {
		return err
	}
	if err := fb.sort(); err != nil {
		return err
	}
	if err := fb.record(); err != nil {
		return err
	}
	if err := fb.present(); err != nil {
		return err
	}
	a.prev = fb.cur
	a.done[f%len(a.done)] = fb.cur[phPresent]
	return nil
}

// frameBuild is frame f being issued: its frame set (si), its slot in the
// statistics ring, and the phase tasks issued so far.
type frameBuild struct {
	a    *app
	f    int
	si   int
	set  *frameSet
	ring int
	cur  frameTasks
}

// beginFrame readies frame f's set (events cleared, camera placed) and
// statistics slot, and returns the frame to issue into.
func (a *app) beginFrame(f int) frameBuild {
	w := a.w
	si := f % len(w.sets)
	set := &w.sets[si]
	set.frame = f
	set.dt = a.dt
	set.vset = f % len(w.vsets)
	for t := range set.events {
		set.events[t].Reset()
	}
	aspect := float32(a.cfg.width) / float32(a.cfg.height)
	if a.win != nil {
		if fw, fh := a.win.size(); fw > 0 && fh > 0 {
			aspect = float32(fw) / float32(fh)
		}
	}
	set.cam.set(w.halfX, w.halfZ, max(a.rig.Height, 1), aspect, a.orbit)

	ring := f % ringFrames
	if f >= ringFrames/2 {
		a.st.harvest(f-ringFrames/2, &a.stageOf)
	}
	a.st.ring[ring].reset(f, sched.Nanotime())
	if a.tr != nil {
		a.tr.Frame(f)
	}
	return frameBuild{a: a, f: f, si: si, set: set, ring: ring}
}

// lastOf returns the last task of a stage among ft's phases.
func (fb *frameBuild) lastOf(stage int, ft *frameTasks) sched.TaskID {
	var id sched.TaskID
	for ph := range numPhases {
		if fb.a.stageOf[ph] == stage && ft[ph] != sched.NoTask {
			id = ft[ph]
		}
	}
	return id
}

// stageDeps joins a phase's natural dependencies n0 and n1 and, when it is
// the first phase of its stage, the stage edges: the previous stage of
// this frame and this stage of the previous frame.
func (fb *frameBuild) stageDeps(ph int, n0, n1 sched.TaskID) (sched.TaskID, error) {
	a := fb.a
	sg := a.stageOf[ph]
	firstOfStage := true
	for p := 0; p < ph; p++ {
		if a.stageOf[p] == sg {
			firstOfStage = false
		}
	}
	var extra [2]sched.TaskID
	if firstOfStage {
		if sg > 0 {
			extra[0] = fb.lastOf(sg-1, &fb.cur)
		}
		extra[1] = fb.lastOf(sg, &a.prev)
	}
	return a.join(a.main, n0, n1, extra[0], extra[1])
}

// add creates t held, registers it with the statistics as phase ph, and
// starts it.
func (fb *frameBuild) add(ph int, t *sched.Task) (sched.TaskID, error) {
	c := fb.a.main
	id, err := c.Create(t)
	if err != nil {
		return sched.NoTask, fmt.Errorf("frame %d %s: %w", fb.f, phaseNames[ph], err)
	}
	fb.a.st.track(id, fb.ring, ph)
	if err := c.Run(id); err != nil {
		return sched.NoTask, err
	}
	return id, nil
}

// sample issues the clock (advance, sampler inputs, events), anim's
// sampling kernel and the procedural bones; it returns the clock task,
// which also wrote the frame's events.
func (fb *frameBuild) sample() (clk sched.TaskID, err error) {
	a, set := fb.a, fb.set
	dep, err := fb.stageDeps(phSample, sched.NoTask, sched.NoTask)
	if err != nil {
		return sched.NoTask, err
	}
	t := &a.task
	a.clockTask(t, fb.si)
	t.Dependency = dep
	if clk, err = fb.add(phSample, t); err != nil {
		return sched.NoTask, err
	}
	a.sampleTask(t, set)
	t.Dependency = clk
	smp, err := fb.add(phSample, t)
	if err != nil {
		return sched.NoTask, err
	}
	a.proceduralTask(t, set)
	t.Dependency = smp
	if fb.cur[phSample], err = fb.add(phSample, t); err != nil {
		return sched.NoTask, err
	}
	return clk, nil
}

// clockTask describes the clock of frame set si (its time step is
// Params[1], the bits of a.dt).
func (a *app) clockTask(t *sched.Task, si int) {
	w := a.w
	*t = sched.Task{Kernel: kClock}
	t.Data.Data = a
	t.Data.Elements = uint32(w.n)
	t.Data.Grain = 64
	t.Data.Params[0] = uint32(si)
	t.Data.Params[1] = math.Float32bits(a.dt)
	t.Data.In[0] = sched.StreamOf(w.chars)
	t.Data.Out[0] = sched.StreamOf(w.clocks)
	t.Data.Out[1] = sched.StreamOf(w.inputs)
}

// sampleTask describes anim's sampling into set's poses.
func (a *app) sampleTask(t *sched.Task, set *frameSet) {
	w := a.w
	nb, nchar := uint32(w.bones), uint32(w.n)
	sw := a.sampleWhere
	*t = sched.Task{Kernel: a.kSample, Affinity: sw}
	t.Data.Data = w.blob
	t.Data.Elements = nchar
	t.Data.Params[0], t.Data.Params[1] = nb, uint32(w.stride)
	if sw == sched.GPU || sw == sched.Auto {
		t.Data.Params[2] = anim.SampleInPlace // one buffer holds both cursor streams
	}
	t.Data.In[0] = w.blobMem.stream(sw, 4, uint32(len(w.blob.Words())))
	t.Data.In[1] = sched.StreamOf(w.inputs)
	t.Data.In[2] = w.cursors.stream(sw, uint32(w.stride*4), nchar)
	t.Data.Out[0] = set.local.stream(sw, nb*48, nchar)
	t.Data.Out[1] = t.Data.In[2]
}

// proceduralTask describes the procedural bones, written into set's poses.
func (a *app) proceduralTask(t *sched.Task, set *frameSet) {
	w := a.w
	nb, nchar := uint32(w.bones), uint32(w.n)
	*t = sched.Task{Kernel: kProcedural}
	t.Data.Data = a
	t.Data.Elements = nchar
	t.Data.Grain = 64
	t.Data.In[0] = sched.StreamOf(w.chars)
	t.Data.In[1] = sched.StreamOf(w.clocks)
	t.Data.Out[0] = sched.Stream{Bytes: set.local.host, Stride: nb * 48, Count: nchar}
}

// localToModel issues the model matrices and the skinning palette.
func (fb *frameBuild) localToModel() error {
	a := fb.a
	dep, err := fb.stageDeps(phLTM, fb.cur[phSample], sched.NoTask)
	if err != nil {
		return err
	}
	t := &a.task
	a.ltmTask(t, fb.set)
	t.Dependency = dep
	if fb.cur[phLTM], err = fb.add(phLTM, t); err != nil {
		return err
	}
	return a.mark(fb.ring, phLTM, phSample, fb.cur[phLTM], a.ltmWhere)
}

// ltmTask describes local-to-model and the palette of set.
func (a *app) ltmTask(t *sched.Task, set *frameSet) {
	w := a.w
	nb, nchar := uint32(w.bones), uint32(w.n)
	lw := a.ltmWhere
	*t = sched.Task{Kernel: kernels.LocalToModelSkin, Affinity: lw}
	t.Data.Elements = nchar
	t.Data.Params[0] = nb
	t.Data.In[0] = set.local.stream(lw, nb*48, nchar)
	if lw == sched.GPU && set.local.buf != nil && !set.local.mapped {
		// The poses were written by the CPU into Go memory (sampling and
		// the procedural bones run there when the device memory is not
		// host-visible: allocSets): name them as a host mirror, so that
		// the executor uploads them before the dispatch. The buffer
		// alone would be bytes nobody wrote.
		t.Data.In[0].Bytes = set.local.host
	}
	t.Data.In[1] = w.parents.stream(lw, 4, nb)
	t.Data.In[2] = w.invBind.stream(lw, 64, nb)
	t.Data.Out[0] = set.model.stream(lw, nb*64, nchar)
	t.Data.Out[1] = set.palette.stream(lw, nb*64, nchar)
}

// skin issues the skinning of every character's vertices.
func (fb *frameBuild) skin() error {
	a := fb.a
	dep, err := fb.stageDeps(phSkin, fb.cur[phLTM], sched.NoTask)
	if err != nil {
		return err
	}
	if fb.cur[phSkin], err = a.issueSkin(fb.ring, fb.set, dep); err != nil {
		return err
	}
	return a.mark(fb.ring, phSkin, phLTM, fb.cur[phSkin], a.skinWhere)
}

// events issues the handling of the events the clock wrote.
func (fb *frameBuild) events(clk sched.TaskID) error {
	return fb.addFrameTask(phEvents, kEvents, sched.AnyWorker, clk, sched.NoTask)
}

// gather issues one job per render context, under a join.
func (fb *frameBuild) gather() error {
	a, c := fb.a, fb.a.main
	t := &a.task
	*t = sched.Task{}
	gj, err := c.Create(t)
	if err != nil {
		return err
	}
	for j := range a.draw.ctxs {
		*t = sched.Task{Kernel: kGather, Parent: gj, Dependency: fb.cur[phEvents]}
		t.Data.Data = a
		t.Data.Params[0] = uint32(fb.si)
		t.Data.Params[1] = uint32(j)
		id, err := c.Create(t)
		if err != nil {
			return err
		}
		a.st.track(id, fb.ring, phGather)
		if err := c.Run(id); err != nil {
			return err
		}
	}
	if err := c.Run(gj); err != nil {
		return err
	}
	fb.cur[phGather] = gj
	return nil
}

// sort issues the merge-n-sort of the gathered contexts.
func (fb *frameBuild) sort() error {
	return fb.addFrameTask(phSort, kSort, sched.AnyWorker, fb.cur[phGather], sched.NoTask)
}

// record issues the recording of the sorted frame. Recording frame f
// begins a Graphics frame, which must follow the previous frame's end (its
// submit): with -pipeline 4, where submit is a stage of its own, this is
// what orders them.
func (fb *frameBuild) record() error {
	return fb.addFrameTask(phRecord, kRecord, sched.AnyWorker, fb.cur[phSort], fb.a.prev[phPresent])
}

// present issues submit/present: after recording and after the vertices
// it draws are skinned; on the main thread, which talks to the window.
func (fb *frameBuild) present() error {
	return fb.addFrameTask(phPresent, kPresent, sched.OnThread(0), fb.cur[phRecord], fb.cur[phSkin])
}

// addFrameTask issues phase ph as one task of kernel k on the app and the
// frame's set (Params[0]), after n0 and n1 and the stage edges.
func (fb *frameBuild) addFrameTask(ph int, k sched.KernelID, where sched.Affinity, n0, n1 sched.TaskID) error {
	dep, err := fb.stageDeps(ph, n0, n1)
	if err != nil {
		return err
	}
	t := &fb.a.task
	*t = sched.Task{Kernel: k, Affinity: where, Dependency: dep}
	t.Data.Data = fb.a
	t.Data.Params[0] = uint32(fb.si)
	fb.cur[ph], err = fb.add(ph, t)
	return err
}

// issueSkin adds the skinning of set's characters: one task over every
// vertex of every character (one bind-pose mesh, a palette per
// character), or for the SPU executor one task per group of characters
// whose palettes fit its local store.
func (a *app) issueSkin(ring int, set *frameSet, dep sched.TaskID) (sched.TaskID, error) {
	w := a.w
	c := a.main
	t := &a.task
	vs := &w.vsets[set.vset]
	sw := a.skinWhere
	if sw == sched.GPU && a.uniformGroup > 0 {
		return a.issueSkinUniform(ring, set, dep)
	}
	if sw != sched.SPU {
		a.skinTask(t, set, vs)
		t.Dependency = dep
		id, err := c.Create(t)
		if err != nil {
			return sched.NoTask, err
		}
		a.st.track(id, ring, phSkin)
		return id, c.Run(id)
	}
	return a.issueGroups(ring, dep, a.cfg.spuGroup, func(t *sched.Task, first, k int) { a.skinSPUTask(t, set, vs, first, k) })
}

// skinGroups returns how many characters one skinning task takes, 0 for
// one task over the whole crowd (skinTask); with groups, skinGroupTask
// describes each.
func (a *app) skinGroups() int {
	switch {
	case a.skinWhere == sched.GPU && a.uniformGroup > 0:
		return a.uniformGroup
	case a.skinWhere == sched.SPU:
		return a.cfg.spuGroup
	}
	return 0
}

// skinGroupTask describes the skinning of the k characters from first
// (see skinGroups), its Parent and Dependency unset.
func (a *app) skinGroupTask(t *sched.Task, set *frameSet, vs *vertexSet, first, k int) {
	*t = sched.Task{}
	if a.skinWhere == sched.SPU {
		a.skinSPUTask(t, set, vs, first, k)
	} else {
		a.skinUniformTask(t, set, vs, first, k)
	}
}

// skinTask describes the skinning of every vertex of every character (one
// bind-pose mesh, a palette per character) from set's palettes into vs.
func (a *app) skinTask(t *sched.Task, set *frameSet, vs *vertexSet) {
	w := a.w
	nb, nv := uint32(w.bones), uint32(w.verts)
	sw := a.skinWhere
	*t = sched.Task{Kernel: kernels.SkinLBS, Affinity: sw}
	t.Data.Elements = uint32(w.n) * nv
	t.Data.Params[0], t.Data.Params[1] = nv, nb
	t.Data.In[0] = w.bindVerts.stream(sw, 48, nv)
	t.Data.In[1] = set.palette.stream(sw, 64, uint32(w.n)*nb)
	t.Data.Out[0] = vs.skinned.stream(sw, 24, uint32(w.n)*nv)
}

// skinSPUTask fills t (its Parent and Dependency kept) with the SPU
// skinning of k characters from first: item i is vertex i of spuVerts (G
// copies of the mesh whose palette bases step by B), streamed through the
// local store; the group's palette is a Whole stream small enough to fit
// beside it.
func (a *app) skinSPUTask(t *sched.Task, set *frameSet, vs *vertexSet, first, k int) {
	w := a.w
	nb, nv := uint32(w.bones), uint32(w.verts)
	t.Kernel, t.Affinity = kSkinSPU, sched.SPU
	t.Data.Elements = uint32(k) * nv
	t.Data.Params[0], t.Data.Params[1] = 0, nb
	t.Data.In[0] = sched.Stream{Bytes: asBytes(w.spuVerts), Stride: 48, Count: uint32(len(w.spuVerts))}
	pb := first * w.bones * 64
	t.Data.In[1] = sched.Stream{Bytes: set.palette.host[pb : pb+k*w.bones*64], Stride: 64, Count: uint32(k) * nb}
	vb := first * w.verts * 24
	t.Data.Out[0] = sched.Stream{Bytes: vs.skinned.host[vb : vb+k*w.verts*24], Stride: 24, Count: uint32(k) * nv}
}

// issueGroups adds, under a join that it returns, one task per group of
// at most g characters, each depending on dep: fill describes the task of
// the k characters from first (t comes with its Parent and Dependency).
func (a *app) issueGroups(ring int, dep sched.TaskID, g int, fill func(t *sched.Task, first, k int)) (sched.TaskID, error) {
	c := a.main
	t := &a.task
	*t = sched.Task{Dependency: dep}
	join, err := c.Create(t)
	if err != nil {
		return sched.NoTask, err
	}
	for first := 0; first < a.w.n; first += g {
		*t = sched.Task{Parent: join, Dependency: dep}
		fill(t, first, min(g, a.w.n-first))
		id, err := c.Create(t)
		if err != nil {
			return sched.NoTask, err
		}
		a.st.track(id, ring, phSkin)
		if err := c.Run(id); err != nil {
			return sched.NoTask, err
		}
	}
	return join, c.Run(join)
}

// mark times a phase that did not run on the CPU workers. A GPU task's
// own timestamps do not measure it on lavapipe (both are taken at the top
// of the pipe), and an executor reports after the task completed, so a
// small CPU task depending on the phase records when its completion was
// seen; the phase is taken to start when the phase before it stopped
// (that is when it became runnable).
func (a *app) mark(ring, ph, after int, phase sched.TaskID, where sched.Affinity) error {
	if where == sched.AnyWorker {
		return nil
	}
	t := &a.joinTask
	*t = sched.Task{Kernel: kMark, Dependency: phase}
	t.Data.Data = a
	t.Data.Params[0], t.Data.Params[1], t.Data.Params[2] = uint32(ring), uint32(ph), uint32(after)
	_, err := a.main.Add(t)
	return err
}

// markKernel (kMark): see app.mark. Params: ring slot, phase, the phase
// before it.
func markKernel(_ *sched.Ctx, d *sched.TaskData) error {
	a := d.Data.(*app)
	rec := &a.st.ring[d.Params[0]]
	ph, after := d.Params[1], d.Params[2]
	if s := rec.stop[after].Load(); s > 0 {
		atomicMin(&rec.start[ph], s)
	}
	atomicMax(&rec.stop[ph], sched.Nanotime())
	return nil
}

// issueSkinUniform adds GPU skinning with the palette in a uniform block
// (kernels.SkinLBSUniform: faster than a storage buffer on lavapipe), one
// task per group of characters whose palettes fit the block's 1024
// matrices. Each task binds the full 64 KiB block from its group's offset
// in the palette buffer (which is padded for the last group).
func (a *app) issueSkinUniform(ring int, set *frameSet, dep sched.TaskID) (sched.TaskID, error) {
	vs := &a.w.vsets[set.vset]
	return a.issueGroups(ring, dep, a.uniformGroup, func(t *sched.Task, first, k int) { a.skinUniformTask(t, set, vs, first, k) })
}

// skinUniformTask fills t (its Parent and Dependency kept) with the
// uniform-palette skinning of k characters from first.
func (a *app) skinUniformTask(t *sched.Task, set *frameSet, vs *vertexSet, first, k int) {
	w := a.w
	nb, nv := uint32(w.bones), uint32(w.verts)
	t.Kernel, t.Affinity = kernels.SkinLBSUniform, sched.GPU
	t.Data.Elements = uint32(k) * nv
	t.Data.Params[0], t.Data.Params[1] = nv, nb
	t.Data.In[0] = w.bindVerts.stream(sched.GPU, 48, nv)
	t.Data.In[1] = set.palette.stream(sched.GPU, 64, kernels.UniformLBSBones)
	t.Data.In[1].Offset = uint64(first * w.bones * 64)
	t.Data.Out[0] = vs.skinned.stream(sched.GPU, 24, uint32(k)*nv)
	t.Data.Out[0].Offset = uint64(first * w.verts * 24)
}

// join returns a task that completes when all of deps (NoTask entries
// ignored) have: the dependency itself when there is one, else an empty
// held parent with one empty child depending on each (the BitSquid join:
// a task has one dependency, so several become children of a join).
func (a *app) join(c *sched.Ctx, d0, d1, d2, d3 sched.TaskID) (sched.TaskID, error) {
	deps := [4]sched.TaskID{d0, d1, d2, d3}
	var uniq [4]sched.TaskID
	n := 0
outer:
	for _, d := range deps {
		if d == sched.NoTask || a.s.IsFinished(d) {
			continue
		}
		for _, u := range uniq[:n] {
			if u == d {
				continue outer
			}
		}
		uniq[n] = d
		n++
	}
	switch n {
	case 0:
		return sched.NoTask, nil
	case 1:
		return uniq[0], nil
	}
	t := &a.joinTask
	*t = sched.Task{}
	j, err := c.Create(t)
	if err != nil {
		return sched.NoTask, err
	}
	for _, d := range uniq[:n] {
		*t = sched.Task{Parent: j, Dependency: d}
		if _, err := c.Add(t); err != nil {
			return sched.NoTask, err
		}
	}
	return j, c.Run(j)
}

// uniformGroup returns how many characters one uniform-palette skinning
// task takes: as many as fit the block's kernels.UniformLBSBones matrices,
// fewer if needed so that every group's palette and output offsets are
// multiples of the device's binding alignments (256 bytes on many desktop
// GPUs: 11 characters of 90 bones start at 63360-byte steps, which 256
// does not divide; 10 do). 0 means no group size works (the storage-buffer
// kernel is used instead).
func uniformGroup(bones, verts int, storageAlign, uniformAlign uint64) int {
	for g := kernels.UniformLBSBones / bones; g >= 1; g-- {
		if uint64(g*bones*64)%uniformAlign == 0 && uint64(g*verts*24)%storageAlign == 0 {
			return g
		}
	}
	return 0
}
