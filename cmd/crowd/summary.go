package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/sched"
)

// Performance goals of the demo (printed, not asserted).
const (
	goalAnimate = 2 * time.Millisecond     // sampling + local-to-model, 1000 x 90 bones, 2 cores
	goalSim     = 16600 * time.Microsecond // the simulation part of a frame (60 Hz)
)

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

// summary prints what the run did and measured.
func (a *app) summary() {
	out := a.out
	var timed []frameResult
	for _, fr := range a.st.frames {
		if fr.frame >= a.warm {
			timed = append(timed, fr)
		}
	}
	wall := a.t1.Sub(a.t0)
	fmt.Fprintf(out, "\n== crowd summary ==\n")
	a.summarizeSetup(out, wall)
	if a.s.ChecksRaces() {
		// A race fails the run, so a summary means none was found. The
		// check slows every Add: the figures below are a checked run's.
		val := ""
		if a.dev != nil && (a.cfg.validate || a.cfg.check) {
			val = ", Vulkan validation on"
		}
		fmt.Fprintf(out, "checked run: data races between tasks refused (none found)%s\n", val)
	}
	a.summarizeFrames(out, timed, wall)
	a.summarizePhases(out, timed)
	a.summarizeGoals(out, timed)
	a.summarizePlacement(out)
	a.summarizeCosts(out, wall)
	a.summarizeRender(out)
	if n := a.st.unknown.Load(); n > 0 {
		fmt.Fprintf(out, "(%d timing reports arrived too late to be counted)\n", n)
	}
}

// summarizeSetup prints the scene, the device and target, the placement
// of the kernels and the number of frames.
func (a *app) summarizeSetup(out io.Writer, wall time.Duration) {
	cfg, w := a.cfg, a.w
	if extra := w.bones - a.rig.SourceBones; extra > 0 {
		fmt.Fprintf(out, "scene: %d characters x %d bones (%s; %d procedural bones: %s)\n", w.n, w.bones, a.rig.Source, extra, strings.Join(a.rig.Chains, ", "))
	} else {
		fmt.Fprintf(out, "scene: %d characters x %d bones (%s; no procedural bones)\n", w.n, w.bones, a.rig.Source)
	}
	fmt.Fprintf(out, "mesh: %s, %d vertices and %d triangles per character (%d vertices skinned per frame)\n", a.rig.Mesh.Name, w.verts, len(a.rig.Mesh.Indices)/3, w.verts*w.n)
	dev := "none: " + fmt.Sprint(a.devErr)
	if a.dev != nil {
		dev = a.dev.Selection().Chosen.Name
	}
	target := "rendering skipped (no Vulkan)"
	if a.dev != nil {
		target = "rendering off (-render=false)"
	}
	if a.draw.gfx != nil {
		if a.win != nil {
			target = "window"
		} else {
			target = fmt.Sprintf("offscreen %dx%d", cfg.width, cfg.height)
		}
	}
	fmt.Fprintf(out, "setup: %v (content %v); device: %s; target: %s\n", a.setupTime.Round(time.Millisecond), a.rigTime.Round(time.Millisecond), dev, target)
	fmt.Fprintf(out, "offload: %s (sample %v, local-to-model %v, skin %v); pipeline: %d stage(s), %d buffer sets, %d vertex sets; %d scheduler threads\n",
		cfg.offload, a.sampleWhere, a.ltmWhere, a.skinWhere, cfg.pipeline, len(w.sets), len(w.vsets), a.s.Threads())
	fmt.Fprintf(out, "frames: %d (%d timed after %d warm-up) in %v", a.timedFrames+a.warm, a.timedFrames, a.warm, wall.Round(time.Millisecond))
	if a.stopped != nil {
		fmt.Fprintf(out, "; stopped early by %v", a.stopped)
	}
	fmt.Fprintln(out)
}

// summarizeFrames prints the frame time (frame to frame, at submit) and
// the latency from issue to submit of the timed frames.
func (a *app) summarizeFrames(out io.Writer, timed []frameResult, wall time.Duration) {
	var ft []int64
	for i := 1; i < len(timed); i++ {
		if timed[i].frame == timed[i-1].frame+1 && timed[i].present > 0 && timed[i-1].present > 0 {
			ft = append(ft, timed[i].present-timed[i-1].present)
		}
	}
	d := distOf(ft)
	if d.n > 0 {
		fmt.Fprintf(out, "frame time: median %s, 95th percentile %s (%.1f frames/s; frame to frame, at submit)\n", ms(d.median), ms(d.p95), 1e9/float64(d.median))
	} else if a.timedFrames > 0 {
		fmt.Fprintf(out, "frame time: mean %s\n", ms(wall/time.Duration(a.timedFrames)))
	}
	var lat []int64
	for _, fr := range timed {
		lat = append(lat, fr.latency)
	}
	if d := distOf(lat); d.n > 0 {
		fmt.Fprintf(out, "latency (frame issued to submitted): median %s, 95th percentile %s\n", ms(d.median), ms(d.p95))
	}
}

// summarizePhases prints each phase's median and 95th percentile and each
// pipeline stage's median.
func (a *app) summarizePhases(out io.Writer, timed []frameResult) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "phase\tstage\tmedian\tp95\t\n")
	for ph := range numPhases {
		var v []int64
		for _, fr := range timed {
			v = append(v, fr.phase[ph])
		}
		d := distOf(v)
		if d.n == 0 {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t\n", phaseNames[ph], a.stageOf[ph])
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", phaseNames[ph], a.stageOf[ph], ms(d.median), ms(d.p95))
	}
	tw.Flush()
	nst := a.stageOf[numPhases-1] + 1
	for sg := range nst {
		var v []int64
		var names []string
		for ph := range numPhases {
			if a.stageOf[ph] == sg {
				names = append(names, phaseNames[ph])
			}
		}
		for _, fr := range timed {
			v = append(v, fr.stage[sg])
		}
		fmt.Fprintf(out, "stage %d [%s]: median %s\n", sg, strings.Join(names, ", "), ms(distOf(v).median))
	}
}

// summarizeGoals prints the animation and simulation times against the
// demo's goals.
func (a *app) summarizeGoals(out io.Writer, timed []frameResult) {
	var sim, ani []int64
	for _, fr := range timed {
		sim, ani = append(sim, fr.sim), append(ani, fr.animate)
	}
	ds, da := distOf(sim), distOf(ani)
	verdict := func(d, goal time.Duration) string {
		if d <= goal {
			return "goal met"
		}
		return "goal missed"
	}
	fmt.Fprintf(out, "sampling + local-to-model (%d x %d bones): median %s, p95 %s (goal <= %s for 1000 x 90 on 2 cores: %s)\n",
		a.w.n, a.w.bones, ms(da.median), ms(da.p95), ms(goalAnimate), verdict(da.median, goalAnimate))
	fmt.Fprintf(out, "simulation (sample + local-to-model + skin): median %s, p95 %s (goal <= %s: %s)\n",
		ms(ds.median), ms(ds.p95), ms(goalSim), verdict(ds.median, goalSim))
}

// summarizePlacement prints where each kernel ran, where sampling ran, the
// run's notes and the executors' and the placer's work.
func (a *app) summarizePlacement(out io.Writer) {
	st := a.st
	fmt.Fprintf(out, "where kernels ran (invocations, work items; split pieces count one each):\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	a.reg.Each(func(id sched.KernelID, k *sched.Kernel) {
		if int(id) >= len(st.kernels) || id == sched.KernelNone {
			return
		}
		var cells []string
		for dv := range numDevs {
			c := &st.kernels[id][dv]
			if n := c.calls.Load(); n > 0 {
				cells = append(cells, fmt.Sprintf("%s %d calls, %d items, %s busy", devNames[dv], n, c.items.Load(), ms(time.Duration(c.ns.Load()))))
			}
		}
		if len(cells) > 0 {
			fmt.Fprintf(tw, "  %s\t%s\n", k.Name, strings.Join(cells, "; "))
		}
	})
	tw.Flush()
	switch a.sampleWhere {
	case sched.GPU:
		fmt.Fprintf(out, "sampling ran on the GPU (anim's sampling kernel %q, cursors and poses GPU-resident; the procedural bones written into the poses by the CPU)\n", anim.SampleKernelName)
	case sched.Auto:
		fmt.Fprintf(out, "sampling placed by the Placer (anim's sampling kernel %q: CPU function and GPU shader)\n", anim.SampleKernelName)
	default:
		fmt.Fprintf(out, "sampling ran on the CPU workers (anim's sampling kernel %q)\n", anim.SampleKernelName)
	}
	for _, n := range a.notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	if a.exec != nil {
		es := a.exec.Stats()
		fmt.Fprintf(out, "gpu executor: %d submits, %d tasks, dispatch %s, upload %s (%d B), read-back %s (%d B)\n",
			es.Submits, es.Tasks, ms(es.Dispatch), ms(es.Upload), es.BytesUp, ms(es.Readback), es.BytesDown)
	}
	if a.spu != nil {
		ss := a.spu.Stats()
		fmt.Fprintf(out, "spu executor: %d jobs, %d chunks, compute %s, DMA %s, stalls %s, %d B in, %d B out\n",
			ss.Jobs, ss.Chunks, ms(ss.Compute), ms(ss.DMA), ms(ss.Stall), ss.BytesIn, ss.BytesOut)
	}
	if a.placer != nil {
		fmt.Fprintf(out, "auto placement: the placement Placer (learned cost model) decided each local-to-model and skin task\n")
	}
}

// summarizeCosts prints the CPU utilisation, the allocations per frame and
// the footsteps counted from the animation's events.
func (a *app) summarizeCosts(out io.Writer, wall time.Duration) {
	w := a.w
	cpu := func(r *timeval) float64 { return float64(r.Sec) + float64(r.Usec)/1e6 }
	used := cpu(&a.ru1.Utime) + cpu(&a.ru1.Stime) - cpu(&a.ru0.Utime) - cpu(&a.ru0.Stime)
	if wall > 0 {
		cores := float64(numCPU())
		fmt.Fprintf(out, "CPU utilisation: %.0f%% (process CPU time %.2f s / wall %.2f s / %d cores; lavapipe's threads included)\n",
			100*used/wall.Seconds()/cores, used, wall.Seconds(), int(cores))
	}
	mallocs := a.m1.Mallocs - a.m0.Mallocs
	if a.timedFrames > 0 {
		fmt.Fprintf(out, "allocations: %.2f per frame (%d heap allocations, %d bytes over %d timed frames; runtime.MemStats)\n",
			float64(mallocs)/float64(a.timedFrames), mallocs, a.m1.TotalAlloc-a.m0.TotalAlloc, a.timedFrames)
	}
	steps := w.footsteps - a.steps0
	simT := a.simTime - a.simTime0
	if simT > 0 && wall > 0 {
		fmt.Fprintf(out, "footsteps: %d in %.1f s of animation = %.1f per second of animation, %.1f per second of wall time (%d in total; %d foot lifts, %d other events skipped, %d dropped)\n",
			steps, simT, float64(steps)/simT, float64(steps)/wall.Seconds(), w.footsteps, w.footUps, w.unknownEvents, w.droppedEvents)
	}
}

// summarizeRender prints what the last frame sorted, recorded and drew.
func (a *app) summarizeRender(out io.Writer) {
	dr := &a.draw
	rs := dr.lastRecord
	var visible int64
	for i := range dr.visible {
		visible += dr.visible[i].n
	}
	fmt.Fprintf(out, "render (last frame): %d of %d characters in view, %d packets sorted from %d contexts, %d draws in %d ranges, %d pipeline and %d mesh binds",
		visible, a.w.n, dr.lastSort.Packets, dr.lastSort.Contexts, rs.Draws, rs.Ranges, rs.PipelineBinds, rs.MeshBinds)
	if dr.gfx != nil {
		gs := dr.gfx.Stats()
		fmt.Fprintf(out, "; Vulkan: %d frames submitted, %d draws, %d discarded, %d skipped", gs.Frames, gs.Draws, gs.Discarded, gs.Skipped)
	} else {
		fmt.Fprintf(out, "; recorded into CPU command lists (render.CommandRecorder), nothing drawn")
	}
	if dr.frameErrs > 0 {
		fmt.Fprintf(out, "; %d frames dropped packets", dr.frameErrs)
	}
	fmt.Fprintln(out)
}
