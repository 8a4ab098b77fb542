package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/render"
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

// checkHostMemory refuses, before the crowd is allocated, a -count whose
// host memory (hostBytes) exceeds the memory available (Linux
// MemAvailable, or a.memAvailable): without it a crowd too large for the
// machine died of out-of-memory, or drove it into swap, in the middle of
// the setup. Where the available memory cannot be read the check is
// skipped: the run then fails as the allocation does.
func (a *app) checkHostMemory() error {
	avail := a.memAvailable
	if avail == nil {
		avail = memAvailable
	}
	free, ok := avail()
	if !ok {
		return nil
	}
	need := a.hostBytes(a.cfg.count)
	if need <= free {
		return nil
	}
	// The estimate grows with the count: the largest count that fits.
	lo, hi := 0, a.cfg.count // hostBytes(lo) <= free or lo == 0; hostBytes(hi) > free
	for hi-lo > 1 {
		if m := (lo + hi) / 2; a.hostBytes(m) <= free {
			lo = m
		} else {
			hi = m
		}
	}
	return fmt.Errorf("-count %d does not fit the host memory: the crowd takes about %d bytes (%.1f GiB), %d bytes (%.1f GiB) are available; at most %d characters fit",
		a.cfg.count, need, float64(need)/(1<<30), free, float64(free)/(1<<30), lo)
}

// hostBytes estimates the host memory a crowd of n characters takes: the
// world's per-character arrays (newWorld), the buffers allocSets makes in
// host memory (planBuffers), and the drawing's render contexts and
// registered meshes (setupDrawing). A buffer wanted on the device counts
// when there is no device or the device's memory is host memory (a CPU
// device such as lavapipe); on a GPU its memory is checked as it is
// allocated (fitErr). The renderer's sort scratch and command lists, a few
// tens of bytes per draw, and the Go runtime's own overhead come on top:
// this is a lower bound, close for large crowds (the buffers dominate).
func (a *app) hostBytes(n int) uint64 {
	p := a.planBuffers(n)
	deviceIsHost := a.dev == nil || a.dev.Limits().CPU
	host := func(size int, onDevice bool) uint64 {
		if onDevice && !deviceIsHost {
			return 0
		}
		return uint64(size)
	}
	b := host(p.cursors, p.onGPU) + host(p.blob, p.onGPU) + host(p.parents, p.onGPU) +
		host(p.invBind, p.onGPU) + host(p.bindVerts, p.onGPU)
	b += uint64(p.spuVerts) * uint64(unsafe.Sizeof(kernels.SkinVertex{}))
	perSet := host(p.local, p.onGPU) + host(p.model, p.onGPU) + host(p.palette, p.onGPU) +
		uint64(p.eventWriters)*uint64(p.eventCap)
	b += uint64(p.sets) * perSet
	b += uint64(p.vsets) * host(p.skinned, p.draw || p.onGPU)
	// newWorld: chars, clocks, inputs, place, centre, colour, flash, and
	// the layout's positions.
	perChar := unsafe.Sizeof(character{}) + unsafe.Sizeof(clock{}) + unsafe.Sizeof(anim.SampleInput{}) +
		unsafe.Sizeof([16]float32{}) + unsafe.Sizeof([3]float32{}) + unsafe.Sizeof([4]float32{}) +
		unsafe.Sizeof(uint8(0)) + unsafe.Sizeof([3]float32{})
	b += uint64(n) * uint64(perChar)
	// setupDrawing: the gather jobs' contexts, one draw per character
	// plus the scene's, and one registered mesh per character and vertex
	// set.
	jobs := gatherJobs(p.eventWriters, n)
	b += uint64(jobs) * uint64(((n+jobs-1)/jobs+sceneDraws)*render.DrawRecordSize)
	b += uint64(p.vsets) * uint64(n) * uint64(unsafe.Sizeof(render.Mesh{}))
	return b
}

// memAvailable returns Linux's estimate of the memory available to start
// new work without swapping (MemAvailable in /proc/meminfo), false where
// it cannot be read (not Linux, or a kernel older than 3.14).
func memAvailable() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return parseMemAvailable(f)
}

// parseMemAvailable reads the MemAvailable line ("MemAvailable: 123 kB")
// of a /proc/meminfo.
func parseMemAvailable(r io.Reader) (uint64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "MemAvailable:" || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || kb > math.MaxUint64/1024 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}
