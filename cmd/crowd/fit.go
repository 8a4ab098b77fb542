package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// What a crowd needs of the device, checked before the first frame, so that
// a crowd too large for it fails at once with the figures, never with a
// fence time-out in the middle of a frame.

// checkFits refuses a run whose GPU bindings exceed the device's
// maxStorageBufferRange (with -offload gpu, auto or spu sharing the
// device), naming the buffer and the largest -count that fits. Memory is
// checked as it is allocated (gpu.ErrOutOfMemory: see fitErr).
func (a *app) checkFits() error {
	if a.dev == nil || a.exec == nil {
		return nil
	}
	l := a.dev.Limits()
	n, nb, nv := uint64(a.w.n), uint64(a.w.bones), uint64(a.w.verts)
	type binding struct {
		name           string
		perChar, extra uint64
	}
	// The buffers a GPU task binds whole (sampling, local-to-model); the
	// skinned vertices are bound per group of characters, except on the
	// storage-palette path (uniformGroup 0).
	bs := []binding{
		{"model-space matrices (64 bytes x bones)", 64 * nb, 0},
		{"local transforms (48 bytes x bones)", 48 * nb, 0},
		{"skinning palettes (64 bytes x bones)", 64 * nb, kernels.UniformPaletteBytes},
		{"sampling cursors", 4 * uint64(a.w.stride), 0},
	}
	if a.uniformGroup == 0 {
		bs = append(bs, binding{"skinned vertices (24 bytes x vertices)", 24 * nv, 0})
	}
	var worst *binding
	fit := n
	for i, b := range bs {
		if b.perChar == 0 || b.perChar*n+b.extra <= l.MaxStorageBufferRange {
			continue
		}
		if m := (l.MaxStorageBufferRange - min(b.extra, l.MaxStorageBufferRange)) / b.perChar; m < fit {
			worst, fit = &bs[i], m
		}
	}
	if worst != nil {
		return fmt.Errorf("-count %d does not fit the device: the %s of one frame take %d bytes in one GPU binding, more than its maxStorageBufferRange of %d bytes; at most %d characters fit (or use -offload cpu)",
			n, worst.name, worst.perChar*n+worst.extra, l.MaxStorageBufferRange, fit)
	}
	return nil
}

// checkSPUFits refuses, before the first frame, a -spu-group whose
// skinning task does not fit the SPU executor's local store (the group's
// palettes are one Whole stream), naming the largest group that fits;
// without it the first frame failed deep in the task graph. It asks the
// executor's own planner (spu.Executor.Fits) about the first group's real
// task, so the two cannot disagree. Call it after allocSets.
func (a *app) checkSPUFits() error {
	if a.spu == nil || a.skinWhere != sched.SPU {
		return nil
	}
	k := a.reg.Lookup(kSkinSPU)
	fits := func(g int) bool {
		var t sched.Task
		a.skinSPUTask(&t, &a.w.sets[0], &a.w.vsets[0], 0, g)
		t.Data.End = t.Data.Elements
		return a.spu.Fits(k, &t.Data)
	}
	g := min(a.cfg.spuGroup, a.w.n)
	if fits(g) {
		return nil
	}
	lo, hi := 0, g // fits(lo) or lo == 0; !fits(hi)
	for hi-lo > 1 {
		if m := (lo + hi) / 2; fits(m) {
			lo = m
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return fmt.Errorf("-offload spu: the skinning of one character (%d bones, %d vertices) does not fit the SPU local store of %d bytes", a.w.bones, a.w.verts, a.spu.LocalStore())
	}
	return fmt.Errorf("-spu-group %d does not fit the SPU local store of %d bytes: the palettes of %d characters x %d bones take %d bytes; at most %d characters per group fit",
		a.cfg.spuGroup, a.spu.LocalStore(), g, a.w.bones, g*a.w.bones*64, lo)
}

// fitErr explains an allocation that does not fit the device's memory.
func (a *app) fitErr(err error) error {
	if !errors.Is(err, gpu.ErrOutOfMemory) || a.dev == nil {
		return err
	}
	l := a.dev.Limits()
	return fmt.Errorf("-count %d does not fit the device's memory (%.1f GiB; %.1f GiB already allocated): lower -count: %w",
		a.cfg.count, float64(l.DeviceMemory)/(1<<30), float64(l.DeviceMemoryUsed)/(1<<30), err)
}

// fenceTimeout bounds each wait for a frame or a GPU batch. On a GPU the
// packages' default (10 s) stands: a frame that takes that long is hung.
// On a CPU device (lavapipe) a frame's duration grows with the crowd, and
// its threads compete with the simulation's, so the bound grows by 1 µs
// per triangle and per vertex (several times what they cost there), over
// the 10 s base. Zero means the default.
func (a *app) fenceTimeout() time.Duration {
	if a.dev == nil || !a.dev.Limits().CPU || a.rig == nil {
		return 0
	}
	n := time.Duration(a.cfg.count)
	perChar := time.Duration(len(a.rig.Mesh.Indices)/3+len(a.rig.Mesh.Vertices)) * time.Microsecond
	return 10*time.Second + n*perChar
}
