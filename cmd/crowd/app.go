package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/affinity/placement"
	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/cmd/crowd/internal/rig"
	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/internal/version"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/trace"
)

// defaultBones is the skeleton size of the BitSquid test scene (Niklas
// Frykholm, "Task Management -- A Practical Example", 2010): the CMU figure's
// 31 joints grown to 90 with procedural chains.
const defaultBones = 90

// defaultHeadlessFrames is the number of frames a run without a window
// renders when -frames is not given.
const defaultHeadlessFrames = 120

// defaultClipRate is the rate (Hz) the demo ships its clips at (-clip-rate).
const defaultClipRate = 30

// app is one run of the demo.
type app struct {
	cfg   *config
	title []byte // the window title's buffer
	out   io.Writer
	log   func(format string, args ...any)

	rig *rig.Rig
	w   *world

	dev    *gpu.Device
	devErr error // why there is no device
	exec   *gpu.Executor
	spu    *spu.Executor
	placer *placement.Placer
	win    *window

	reg  *sched.Registry
	s    *sched.Scheduler
	main *sched.Ctx
	tr   *trace.Recorder
	st   *stats

	// kSample is the sampling kernel's ID, handed out by reg
	// (anim.RegisterSampleKernel).
	kSample sched.KernelID

	sampleWhere         sched.Affinity
	ltmWhere, skinWhere sched.Affinity
	uniformGroup        int // characters per uniform-palette skinning task; 0 = storage-buffer skinning
	stageOf             [numPhases]int

	draw drawing

	task, joinTask sched.Task
	prev           frameTasks
	fg             *frameGraphs   // -graph: the frame as graphs (graph.go)
	done           []sched.TaskID // submit/present task of each frame in flight
	dt             float32
	orbit          float32
	simTime        float64

	// Timed window.
	warm        int
	t0, t1      time.Time
	ru0, ru1    syscall.Rusage
	m0, m1      runtime.MemStats
	timedFrames int
	setupTime   time.Duration
	rigTime     time.Duration
	steps0      int64
	simTime0    float64
	notes       []string

	// Stopping early: a signal received on stop ends the run after the
	// frames in flight (stopped records it); onStop, when set, runs then.
	stop    <-chan os.Signal
	onStop  func()
	stopped os.Signal
	issued  int // frames issued

	// memAvailable reports the host memory available for the crowd
	// (checkHostMemory); nil: /proc/meminfo's MemAvailable.
	memAvailable func() (uint64, bool)
}

// interrupted is run's error after a signal stopped the run: the outputs
// and the summary were written; main exits with 128 + the signal number,
// as a shell reports a process the signal killed.
type interrupted struct {
	sig    os.Signal
	frames int
}

func (e *interrupted) Error() string {
	return fmt.Sprintf("stopped by %v after %d frames (outputs written)", e.sig, e.frames)
}

// exitCode is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
func (e *interrupted) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// run runs the demo with the command-line arguments args, printing to
// stdout. It returns an error for bad flags, missing content, a requested
// offload that is not available, or a failure while running.
//
// SIGINT and SIGTERM stop the run after the frames in flight: the PNG, the
// trace and the summary are still written, and the error is an
// *interrupted. A second signal ends the process at once: the default
// action is restored as soon as the first arrives, not when the frame loop
// next looks (with a large crowd the loop waits minutes for a frame, and a
// second Ctrl-C was dropped meanwhile).
func run(args []string, stdout io.Writer) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stop, cancel := relaySignals(sigs, func() { signal.Reset(syscall.SIGINT, syscall.SIGTERM) })
	defer cancel()
	_, err := runApp(args, stdout, runOptions{stop: stop})
	return err
}

// relaySignals passes the first signal from sigs on to the returned
// channel (which the frame loop reads between frames) and calls reset at
// once, so that the next signal takes its default action whatever the
// loop is doing. cancel ends the relay.
func relaySignals(sigs <-chan os.Signal, reset func()) (stop <-chan os.Signal, cancel func()) {
	out := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			reset()
			out <- sig // buffered: never blocks
		case <-done:
		}
	}()
	var once sync.Once
	return out, func() { once.Do(func() { close(done) }) }
}

// runOptions are runApp's hooks beside the command line.
type runOptions struct {
	stop         <-chan os.Signal      // a value here stops the run as SIGINT does
	onStop       func()                // called once when the run stops early
	memAvailable func() (uint64, bool) // the host memory available (nil: MemAvailable)
}

// runApp is run, returning the finished (closed) app for inspection.
func runApp(args []string, stdout io.Writer, opts ...runOptions) (a *app, err error) {
	cfg, err := parseFlags(args, stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil
		}
		return nil, err
	}
	if cfg.version {
		fmt.Fprintln(stdout, version.String("crowd"))
		return nil, nil
	}
	a = &app{cfg: cfg, out: stdout}
	for _, o := range opts {
		a.stop, a.onStop, a.memAvailable = o.stop, o.onStop, o.memAvailable
	}
	a.log = func(format string, args ...any) {
		if !cfg.quiet {
			fmt.Fprintf(stdout, format, args...)
		}
	}
	defer func() {
		if cerr := a.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	start := time.Now()
	if err := a.setup(); err != nil {
		return a, err
	}
	a.setupTime = time.Since(start)
	if err := a.loop(); err != nil {
		return a, err
	}
	if err := a.finish(); err != nil {
		return a, err
	}
	if a.stopped != nil {
		return a, &interrupted{sig: a.stopped, frames: a.issued}
	}
	return a, nil
}

// setup builds the content, opens Vulkan (when there is any), the
// executors, the scheduler, the world and the drawing.
func (a *app) setup() error {
	cfg := a.cfg
	// Output files are checked now, not after the run: the trace and the
	// timeline always, the PNG when the run will be headless (again
	// below if the window cannot be opened).
	wantWindow := haveDisplay() && !cfg.headless
	if err := checkOutputs(cfg, !wantWindow); err != nil {
		return err
	}
	if err := a.loadRig(); err != nil {
		return err
	}
	if err := a.openTarget(wantWindow); err != nil {
		return err
	}
	if err := a.openDevice(); err != nil {
		return err
	}
	workers, err := a.startScheduler()
	if err != nil {
		return err
	}
	if err := a.setupWorld(); err != nil {
		return err
	}
	mode := "headless"
	if a.win != nil {
		mode = "window"
	}
	a.log("run: %d characters x %d bones, offload %s, pipeline %d, %s %dx%d, %d workers + main thread, %d frames\n",
		cfg.count, a.rig.Bones, cfg.offload, cfg.pipeline, mode, cfg.width, cfg.height, workers, cfg.frames)
	return nil
}

// loadRig builds the skeleton and clips (compressing them on a first run,
// which takes seconds: the log says so first).
func (a *app) loadRig() error {
	cfg := a.cfg
	src := "the CMU motion capture"
	if cfg.model != "" {
		src = cfg.model
	}
	a.log("loading %s (a first run compresses its clips, a few seconds; later runs read them from the cache)\n", src)
	t := time.Now()
	r, err := rig.Build(rig.Options{Bones: cfg.bones, Tolerance: cfg.tolerance / 100, Codec: cfg.codec, Rate: cfg.clipRate, Model: cfg.model, CacheDir: cfg.cacheDir})
	if err != nil {
		return err
	}
	a.rig = r
	a.rigTime = time.Since(t)
	how := "compressed"
	if r.Cached {
		how = "loaded from cache " + r.CachePath
	}
	a.log("content: %s, %d bones (%d procedural), %d clip(s) %s in %v\n", r.Source, r.Bones, r.Bones-r.SourceBones, len(r.Clips), how, a.rigTime.Round(time.Millisecond))
	for _, n := range r.Notes {
		a.log("  note: %s\n", n)
	}
	return nil
}

// openTarget opens the window when one is wanted and can be had, else
// renders offscreen, and settles the number of frames for either.
func (a *app) openTarget(wantWindow bool) error {
	cfg := a.cfg
	if wantWindow {
		var err error
		if a.win, err = openWindow(cfg.width, cfg.height, "crowd"); err != nil {
			a.log("no window (%v): rendering offscreen\n", err)
			a.win = nil
			if err := checkOutputs(cfg, true); err != nil {
				return err
			}
		}
	}
	switch {
	case a.win == nil && !cfg.framesSet:
		cfg.frames = defaultHeadlessFrames
	case a.win == nil && cfg.frames == 0:
		return errors.New("-frames 0 runs until the window closes, and there is no window: give a number of frames")
	case a.win != nil && !cfg.framesSet:
		cfg.frames = 0
	}
	return nil
}

// chooseUniformSkinning sets uniformGroup for uniform-palette skinning
// (-uniform), or leaves it 0 (skinning from a storage buffer) where the
// device cannot run it. kernels.SkinLBSUniform declares a uniform block of
// kernels.UniformPaletteBytes, which the executor binds whole; Vulkan
// guarantees only 16 KiB of maxUniformBufferRange, so on a device with
// less than the block the default falls back to the storage path with a
// note, and an explicit -uniform is refused (it asked for a path the
// device cannot take; running another one would measure the wrong thing).
func (a *app) chooseUniformSkinning() error {
	if r := a.deviceLimits().MaxUniformBufferRange; r < kernels.UniformPaletteBytes {
		if a.cfg.uniformSet {
			return fmt.Errorf("-uniform: uniform-palette skinning binds a %d-byte uniform block (kernels.SkinLBSUniform), but the device %q allows uniform bindings of at most %d bytes (maxUniformBufferRange); run with -uniform=false", kernels.UniformPaletteBytes, a.dev.Selection().Chosen.Name, r)
		}
		a.log("uniform-palette skinning: the device allows uniform bindings of at most %d bytes (maxUniformBufferRange), less than the %d-byte palette block: skinning from a storage buffer\n", r, kernels.UniformPaletteBytes)
		return nil
	}
	sa, ua := a.dev.BindingAlignment()
	if a.uniformGroup = uniformGroup(a.w.bones, a.w.verts, sa, ua); a.uniformGroup == 0 {
		a.log("uniform-palette skinning: no group of characters meets the device's binding alignments (storage %d, uniform %d bytes): skinning from a storage buffer\n", sa, ua)
	}
	return nil
}

// deviceLimitsHook, when a test sets it, adjusts the device limits the
// demo decides by (deviceLimits): tests take the paths of devices with
// smaller limits than the one here (a 16 KiB maxUniformBufferRange).
var deviceLimitsHook func(*gpu.Limits)

// deviceLimits returns the device's limits, as deviceLimitsHook adjusts
// them in tests.
func (a *app) deviceLimits() gpu.Limits {
	l := a.dev.Limits()
	if deviceLimitsHook != nil {
		deviceLimitsHook(&l)
	}
	return l
}

// deviceOptionsHook, when a test sets it, adjusts the device options
// before Open: tests force the paths of devices other than the one here
// (gpu.Options.ForceStaging: a discrete GPU's memory).
var deviceOptionsHook func(*gpu.Options)

// openDevice opens the Vulkan device. Without one the run goes on, on the
// CPU and without rendering, unless it was asked to use the device.
func (a *app) openDevice() error {
	cfg := a.cfg
	opts := gpu.Options{AppName: "crowd", Validation: cfg.validate || cfg.check}
	if a.win != nil {
		opts.InstanceExtensions, opts.DeviceExtensions = a.win.extensions()
	}
	if deviceOptionsHook != nil {
		deviceOptionsHook(&opts)
	}
	var err error
	a.dev, err = gpu.Open(opts)
	if err != nil && !errors.Is(err, gpu.ErrNoDevice) {
		// Only "no Vulkan here" (no loader, driver or usable device) is
		// a reason to run on the CPU. A named device (VKJOBS_DEVICE) that
		// is not there, a validation layer asked for (-validate) and
		// missing, a bad VKJOBS_VALIDATION, a device that fails to open:
		// errors, not a quiet CPU-only run.
		return fmt.Errorf("opening the Vulkan device: %w", err)
	}
	if err != nil && cfg.validate {
		return fmt.Errorf("-validate needs a Vulkan device to validate: %w", err)
	}
	if err != nil {
		a.dev, a.devErr = nil, err
		if a.win != nil {
			a.win.close()
			a.win = nil
		}
		switch cfg.offload {
		case "gpu", "auto":
			return fmt.Errorf("-offload=%s needs a Vulkan device: %w", cfg.offload, err)
		}
		a.log("no Vulkan device (%v): the simulation runs on the CPU and rendering is skipped (draw packets are still gathered, sorted and recorded into CPU command lists)\n", err)
	}
	if a.dev != nil {
		sel := a.dev.Selection()
		a.log("device: %s\n", sel.Chosen.Name)
	}
	return nil
}

// startScheduler registers the kernels, creates the scheduler with its
// observers and the placement -offload asks for, attaches the executors
// and registers the main thread. It returns the number of workers.
func (a *app) startScheduler() (workers int, err error) {
	cfg := a.cfg
	workers = cfg.workers
	if workers == 0 {
		workers = max(1, runtime.GOMAXPROCS(0)-1)
	}
	threads := workers + 1
	a.reg = sched.NewRegistry()
	if err := kernels.Register(a.reg); err != nil {
		return 0, err
	}
	if a.kSample, err = anim.RegisterSampleKernel(a.reg); err != nil {
		return 0, err
	}
	if err := a.registerKernels(); err != nil {
		return 0, err
	}
	const poolSize = 16384
	a.st = newStats(poolSize, max(cfg.frames, 1<<14))
	var obs []sched.Observer
	obs = append(obs, a.st)
	if cfg.trace != "" || cfg.timeline != "" {
		per := min(max(cfg.frames, 60), 300) * 700
		a.tr = trace.New(threads, per)
		obs = append(obs, a.tr)
	}
	scfg := sched.Config{Kernels: a.reg, MainThreads: 1, Workers: workers, PoolSize: poolSize, CheckRaces: cfg.check}
	switch cfg.offload {
	case "cpu":
		a.ltmWhere, a.skinWhere = sched.AnyWorker, sched.AnyWorker
	case "gpu":
		a.sampleWhere, a.ltmWhere, a.skinWhere = sched.GPU, sched.GPU, sched.GPU
	case "auto":
		a.sampleWhere, a.ltmWhere, a.skinWhere = sched.Auto, sched.Auto, sched.Auto
		shared := a.dev.Selection().Chosen.Type == gpu.TypeCPU
		a.placer = placement.New(placement.Options{SharedCores: shared})
		scfg.Placer = a.placer
		obs = append(obs, a.placer)
	case "spu":
		// The blob (hundreds of KiB) does not fit a 256 KiB local store:
		// sampling stays on the CPU workers.
		a.ltmWhere, a.skinWhere = sched.SPU, sched.SPU
	}
	scfg.Observer = trace.Tee(obs)
	if a.s, err = sched.New(scfg); err != nil {
		return 0, err
	}
	if err := a.attachExecutors(); err != nil {
		return 0, err
	}
	if a.main, err = a.s.RegisterThread("main"); err != nil {
		return 0, err
	}
	if a.tr != nil {
		a.tr.SetKernelNames(trace.NamesFromRegistry(a.reg))
		for i := range workers {
			a.tr.SetThreadName(i, fmt.Sprintf("worker %d", i))
		}
		a.tr.SetThreadName(a.main.Index(), "main")
	}
	return workers, nil
}

// attachExecutors attaches the GPU executor (with the offloaded kernels'
// pipelines compiled ahead) or the SPU executor that -offload asks for,
// and the placer to the scheduler.
func (a *app) attachExecutors() error {
	var err error
	if a.cfg.offload == "gpu" || a.cfg.offload == "auto" {
		if a.exec, err = gpu.NewExecutor(a.dev, gpu.ExecutorOptions{FenceTimeout: a.fenceTimeout()}); err != nil {
			return err
		}
		if err := a.s.AttachExecutor(sched.ExecGPU, a.exec); err != nil {
			return err
		}
		// Compile the kernels' pipelines now, not in a first dispatch
		// inside a frame.
		pre := sched.NewRegistry()
		for _, id := range []sched.KernelID{a.kSample, kernels.LocalToModelSkin, kernels.SkinLBS, kernels.SkinLBSUniform} {
			if err := pre.Register(id, *a.reg.Lookup(id)); err != nil {
				return err
			}
		}
		if err := a.dev.PreparePipelines(pre); err != nil {
			return err
		}
	}
	if a.cfg.offload == "spu" {
		if a.spu, err = spu.New(spu.Options{}); err != nil {
			return err
		}
		if err := a.s.AttachExecutor(sched.ExecSPU, a.spu); err != nil {
			return err
		}
	}
	if a.placer != nil {
		a.placer.Attach(a.s)
	}
	return nil
}

// setupWorld builds the crowd and the frame pipeline's buffers and the
// drawing, and sets the time step.
func (a *app) setupWorld() error {
	cfg := a.cfg
	a.draw.inFlight = 2
	if err := a.checkHostMemory(); err != nil {
		return err
	}
	a.w = newWorld(a.rig, cfg.count, cfg.seed, a.s.Threads())
	if a.exec != nil && cfg.uniform {
		if err := a.chooseUniformSkinning(); err != nil {
			return err
		}
	}
	a.stageOf = stagesFor(cfg.pipeline)
	a.done = make([]sched.TaskID, cfg.pipeline+1)
	if err := a.checkFits(); err != nil {
		return err
	}
	if err := a.allocSets(); err != nil {
		return a.fitErr(err)
	}
	if err := a.checkSPUFits(); err != nil {
		return err
	}
	if err := a.setupDrawing(); err != nil {
		return err
	}
	a.dt = 1.0 / 60
	if cfg.dt > 0 {
		a.dt = float32(cfg.dt)
	}
	if cfg.graph {
		if err := a.buildGraphs(); err != nil {
			return err
		}
	}
	return nil
}

// registerKernels registers the demo's own kernels.
func (a *app) registerKernels() error {
	w := func(name string, f sched.KernelFunc) sched.Kernel {
		return sched.Kernel{Name: name, Kind: sched.Simple, CPU: f}
	}
	ks := []struct {
		id sched.KernelID
		k  sched.Kernel
	}{
		{kClock, sched.Kernel{Name: "crowd.clock", Kind: sched.Streaming, Grain: 64, CPU: clockKernel,
			In:  []sched.StreamSpec{{Name: "characters", Stride: uint32(unsafe.Sizeof(character{}))}},
			Out: []sched.StreamSpec{{Name: "clocks", Stride: uint32(unsafe.Sizeof(clock{}))}, {Name: "inputs", Stride: 8}}}},
		{kProcedural, sched.Kernel{Name: "crowd.procedural", Kind: sched.Streaming, Grain: 64, CPU: proceduralKernel,
			In:  []sched.StreamSpec{{Name: "characters", Stride: uint32(unsafe.Sizeof(character{}))}, {Name: "clocks", Stride: uint32(unsafe.Sizeof(clock{}))}},
			Out: []sched.StreamSpec{{Name: "local"}}}},
		{kEvents, w("crowd.events", eventsKernel)},
		{kGather, w("crowd.gather", gatherKernel)},
		{kSort, w("crowd.merge-sort", sortKernel)},
		{kRecord, w("crowd.record", recordKernel)},
		{kPresent, w("crowd.submit-present", presentKernel)},
		{kMark, w("crowd.mark", markKernel)},
		{kStamp, w("crowd.stamp", stampKernel)},
	}
	for _, k := range ks {
		if err := a.reg.Register(k.id, k.k); err != nil {
			return err
		}
	}
	// SkinLBS with an SPU binding: with Params[0] = 0 the vertices input
	// is read per item, so the SPU executor streams it in chunks instead
	// of copying it whole into the local store.
	k, err := kernels.Definition(kernels.SkinLBS)
	if err != nil {
		return err
	}
	k.Name = "skin_lbs.spu"
	k.SPU = spu.Binding{ItemIn: [sched.MaxStreams]bool{0: true}}
	return a.reg.Register(kSkinSPU, k)
}

// bufferPlan is what allocSets allocates for a crowd: the one place its
// sizes are computed, so that checkHostMemory counts exactly the buffers
// allocSets then makes.
type bufferPlan struct {
	onGPU bool // the sampling, static and set buffers are wanted on the device
	draw  bool // the vertex sets are drawn from the device

	cursors, blob, parents, invBind, bindVerts int // bytes: sampling and static skinning inputs
	spuVerts                                   int // kernels.SkinVertex copies (spu skinning)

	sets                   int // buffer sets: one per pipeline stage
	local, model, palette  int // bytes of each set's buffers
	eventWriters, eventCap int // per set: event streams (one per scheduler thread) and bytes each
	vsets                  int // vertex sets
	skinned                int // bytes of each vertex set
}

// planBuffers sizes the buffers of a crowd of n characters of the rig.
// a.s, a.dev, a.exec, a.skinWhere and a.draw.inFlight must be set.
func (a *app) planBuffers(n int) bufferPlan {
	r := a.rig
	nb, nv := r.Bones, len(r.Mesh.Vertices)
	p := bufferPlan{
		onGPU:     a.exec != nil,
		draw:      a.dev != nil && a.cfg.render,
		cursors:   4 * n * r.CursorStride,
		blob:      len(r.Blob.Bytes()),
		parents:   4 * nb,
		invBind:   64 * nb,
		bindVerts: 48 * nv,
		sets:      a.cfg.pipeline,
		local:     48 * n * nb,
		model:     64 * n * nb,
		// Padded by one uniform block: a uniform-palette skinning task
		// binds 64 KiB from its group's offset.
		palette:      64*n*nb + kernels.UniformPaletteBytes,
		eventWriters: a.s.Threads(),
		eventCap:     max(4096, n*4*(evstream.HeaderSize+24)),
		skinned:      24 * n * nv,
	}
	if a.skinWhere == sched.SPU {
		// A group never holds more than the crowd: -spu-group 100000
		// must not cost gigabytes of vertex copies.
		p.spuVerts = min(a.cfg.spuGroup, n) * nv
	}
	// Vertex sets: the skinned vertices of frame f are read by the GPU
	// while it draws f, which may still run when frame f+pipeline is
	// issued: one set per pipeline stage plus one per Graphics frame in
	// flight.
	p.vsets = a.cfg.pipeline
	if p.draw {
		p.vsets += a.draw.inFlight
	}
	if a.cfg.graph {
		// A multiple of the depth: frame f's buffer set (f mod N) and
		// vertex set (f mod nvs) are then fixed per graph copy (graph.go).
		p.vsets = (p.vsets + a.cfg.pipeline - 1) / a.cfg.pipeline * a.cfg.pipeline
	}
	return p
}

// allocSets allocates the frame pipeline's buffer sets, the vertex sets
// and the static skinning inputs (sized by planBuffers), on the device
// when a task may run there (or when the vertices are drawn from it).
func (a *app) allocSets() error {
	w, dev := a.w, a.dev
	p := a.planBuffers(w.n)
	onGPU := p.onGPU
	var err error
	// Sampling on the GPU: the blob and the cursors live on the device.
	// The blob is loaded again from its buffer's mapping, so that the
	// host bytes the CPU kernel checks are the bytes the GPU reads.
	if w.cursors, err = alloc(dev, p.cursors, onGPU); err != nil {
		return err
	}
	if w.blobMem, err = alloc(dev, p.blob, onGPU); err != nil {
		return err
	}
	if w.blobMem.mapped {
		copy(w.blobMem.host, w.blob.Bytes())
		if w.blob, err = anim.Load(w.blobMem.host); err != nil {
			return err
		}
		w.views = w.views[:0]
		for i := range w.blob.NumClips() {
			w.views = append(w.views, w.blob.Clip(i))
		}
	} else {
		w.blobMem.host = w.blob.Bytes()
		if w.blobMem.buf != nil {
			if err := w.blobMem.buf.Write(0, w.blobMem.host); err != nil {
				return err
			}
		}
	}
	if w.parents, err = alloc(dev, p.parents, onGPU); err != nil {
		return err
	}
	copy(w.parents.host, asBytes(a.rig.Parents))
	if w.invBind, err = alloc(dev, p.invBind, onGPU); err != nil {
		return err
	}
	copy(w.invBind.host, asBytes(a.rig.InvBind))
	if w.bindVerts, err = alloc(dev, p.bindVerts, onGPU); err != nil {
		return err
	}
	copy(w.bindVerts.host, asBytes(a.rig.Mesh.Vertices))
	for _, d := range []*dual{&w.parents, &w.invBind, &w.bindVerts} {
		if d.buf != nil && !d.mapped {
			if err := d.buf.Write(0, d.host); err != nil {
				return err
			}
		}
	}
	if a.skinWhere == sched.SPU {
		w.spuVerts = make([]kernels.SkinVertex, p.spuVerts)
		for i := range min(a.cfg.spuGroup, w.n) {
			for v, sv := range a.rig.Mesh.Vertices {
				sv.Palette = uint32(i * w.bones)
				w.spuVerts[i*w.verts+v] = sv
			}
		}
	}
	w.sets = make([]frameSet, p.sets)
	for i := range w.sets {
		s := &w.sets[i]
		if s.local, err = alloc(dev, p.local, onGPU); err != nil {
			return err
		}
		if onGPU && !s.local.mapped && a.sampleWhere != sched.AnyWorker {
			// The procedural bones are written by the CPU into the
			// sampled poses: without a host-visible pose buffer the
			// sampling stays on the CPU.
			a.sampleWhere = sched.AnyWorker
			a.notes = append(a.notes, "the device memory is not host-visible: sampling ran on the CPU (the procedural bones are written into the poses by the CPU)")
		}
		if s.model, err = alloc(dev, p.model, onGPU); err != nil {
			return err
		}
		if s.palette, err = alloc(dev, p.palette, onGPU); err != nil {
			return err
		}
		s.events = make([]evstream.Writer, p.eventWriters)
		for t := range s.events {
			s.events[t].Init(evstream.NewBuffer(p.eventCap))
		}
	}
	w.vsets = make([]vertexSet, p.vsets)
	for i := range w.vsets {
		if w.vsets[i].skinned, err = alloc(dev, p.skinned, p.draw || onGPU); err != nil {
			return err
		}
	}
	return nil
}

// loop runs the frames: issue frame f once frame f-pipeline has been
// submitted (its buffer set is then free), waiting on the main thread,
// which helps run tasks meanwhile and runs the submit/present tasks
// pinned to it.
func (a *app) loop() error {
	cfg := a.cfg
	N := cfg.pipeline
	total := cfg.frames
	a.warm = cfg.warmup
	if a.warm < 0 {
		a.warm = min(10, total/4)
	}
	if total > 0 && a.warm >= total {
		a.warm = total - 1
	}
	issued, skipped := 0, 0
	var last time.Time
	var fpsT time.Time
	fpsN := 0
	prog := newProgress(a.out, total, cfg.quiet)
	for f := 0; total == 0 || f < total; f++ {
		select {
		case sig := <-a.stop:
			a.stopped = sig
			if a.onStop != nil {
				a.onStop()
			}
			fmt.Fprintf(a.out, "\ncrowd: %v: finishing the frames in flight, then writing the outputs (again to quit at once)\n", sig)
		default:
		}
		if a.stopped != nil {
			break
		}
		if a.win != nil {
			if a.draw.skipped > skipped {
				a.win.idle() // minimised: wait for events instead of spinning
				skipped = a.draw.skipped
			}
			a.win.poll()
			if a.win.shouldClose() {
				break
			}
		}
		if f >= N {
			if err := a.main.Wait(a.done[(f-N)%len(a.done)]); err != nil {
				return fmt.Errorf("frame %d: %w", f-N, err)
			}
		}
		now := time.Now()
		if a.win != nil && cfg.dt == 0 {
			if !last.IsZero() {
				a.dt = float32(min(0.1, now.Sub(last).Seconds()))
			}
			a.orbit += a.dt * 0.05
			if fpsN++; now.Sub(fpsT) > 500*time.Millisecond {
				a.title = appendTitle(a.title[:0], cfg.count, a.w.bones, float64(fpsN)/now.Sub(fpsT).Seconds(), cfg.offload, N)
				a.win.setTitle(unsafe.String(unsafe.SliceData(a.title), len(a.title))) // copied by GLFW
				fpsT, fpsN = now, 0
			}
		}
		last = now
		if f == a.warm {
			a.beginTimed()
		}
		var err error
		if a.fg != nil {
			err = a.issueGraph(f)
		} else {
			err = a.issue(f)
		}
		if err != nil {
			return err
		}
		a.simTime += float64(a.dt)
		issued = f + 1
		prog.frame(issued)
	}
	prog.end()
	for f := max(0, issued-N); f < issued; f++ {
		if err := a.main.Wait(a.done[f%len(a.done)]); err != nil {
			return fmt.Errorf("frame %d: %w", f, err)
		}
	}
	a.issued = issued
	if issued <= a.warm {
		// Stopped before the timed frames began: none is timed.
		a.warm = issued
	} else {
		a.endTimed(issued - a.warm)
	}
	if a.draw.gfx != nil {
		if err := a.draw.gfx.Wait(); err != nil {
			return err
		}
	}
	// The GPU executor reports a task's timings just after completing
	// it: give the last reports a moment before the final harvest.
	time.Sleep(5 * time.Millisecond)
	for f := max(0, issued-ringFrames/2); f < issued; f++ {
		a.st.harvest(f, &a.stageOf)
	}
	a.timedFrames = issued - a.warm
	return nil
}

// onTimed, when set (tests), is called when the timed frames begin.
var onTimed func()

func (a *app) beginTimed() {
	runtime.GC()
	if onTimed != nil {
		onTimed()
	}
	a.steps0 = a.w.footsteps
	a.simTime0 = a.simTime
	syscall.Getrusage(syscall.RUSAGE_SELF, &a.ru0)
	runtime.ReadMemStats(&a.m0)
	a.t0 = time.Now()
}

func (a *app) endTimed(frames int) {
	a.t1 = time.Now()
	runtime.ReadMemStats(&a.m1)
	syscall.Getrusage(syscall.RUSAGE_SELF, &a.ru1)
	a.timedFrames = frames
}

// finish writes the outputs and prints the summary.
func (a *app) finish() error {
	if a.issued == 0 {
		// Stopped before the first frame: nothing to write or summarise.
		return nil
	}
	if a.dev != nil && a.win == nil && a.draw.gfx != nil {
		if err := a.writePNG(a.cfg.out); err != nil {
			return err
		}
	}
	if a.tr != nil {
		if err := a.writeTrace(); err != nil {
			return err
		}
	}
	a.summary()
	if a.dev != nil && (a.cfg.validate || a.cfg.check) {
		if err := a.dev.ValidationErr(); err != nil {
			return err
		}
	}
	return nil
}

func (a *app) writeTrace() error {
	if a.cfg.trace != "" {
		f, err := os.Create(a.cfg.trace)
		if err != nil {
			return err
		}
		if err := a.tr.WriteChrome(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		a.log("wrote %s (Chrome trace: open in https://ui.perfetto.dev or chrome://tracing)\n", absPath(a.cfg.trace))
	}
	if a.cfg.timeline != "" {
		n := len(a.st.frames)
		if n == 0 {
			return errors.New("no frame to draw a timeline of")
		}
		last := a.st.frames[n-1].frame
		if a.cfg.pipeline > 1 && last > 0 {
			last-- // the last interval between two frame starts: a full pipeline
		}
		f, err := os.Create(a.cfg.timeline)
		if err != nil {
			return err
		}
		if err := a.tr.WriteTimelineSVG(f, last); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		a.log("wrote %s (timeline of frame %d)\n", absPath(a.cfg.timeline), last)
	}
	if d := a.tr.Dropped(); d > 0 {
		a.log("trace: %d events did not fit the recorder's buffers (the trace holds the first frames)\n", d)
	}
	return nil
}

// close releases everything in dependency order.
func (a *app) close() error {
	var errs []error
	if a.draw.gfx != nil {
		errs = append(errs, a.draw.gfx.Close())
	}
	if a.s != nil {
		errs = append(errs, a.s.Close()) // closes the executors
	}
	if a.w != nil {
		for _, d := range a.duals() {
			if d.buf != nil {
				d.buf.Close()
			}
		}
	}
	if a.win != nil {
		a.win.close()
	}
	if a.dev != nil {
		errs = append(errs, a.dev.Close())
		a.dev = nil
	}
	return errors.Join(errs...)
}

func (a *app) duals() []*dual {
	w := a.w
	ds := []*dual{&w.parents, &w.invBind, &w.bindVerts, &w.cursors, &w.blobMem}
	for i := range w.sets {
		ds = append(ds, &w.sets[i].local, &w.sets[i].model, &w.sets[i].palette)
	}
	for i := range w.vsets {
		ds = append(ds, &w.vsets[i].skinned)
	}
	return ds
}

// appendTitle appends the window title, "crowd: 1000 characters x 90
// bones, 59.8 fps (offload cpu, pipeline 2)", without allocating.
func appendTitle(b []byte, count, bones int, fps float64, offload string, pipeline int) []byte {
	b = append(b, "crowd: "...)
	b = strconv.AppendInt(b, int64(count), 10)
	b = append(b, " characters x "...)
	b = strconv.AppendInt(b, int64(bones), 10)
	b = append(b, " bones, "...)
	b = strconv.AppendFloat(b, fps, 'f', 1, 64)
	b = append(b, " fps (offload "...)
	b = append(b, offload...)
	b = append(b, ", pipeline "...)
	b = strconv.AppendInt(b, int64(pipeline), 10)
	return append(b, ')')
}

// checkOutputs fails, naming the flag and the file, when an output the run
// will write cannot be written: its directory is missing or not writable,
// or the path is a directory or a file that cannot be opened for writing.
// It leaves nothing behind: an existing file is opened without truncating
// it, a new one is probed with a temporary file in its directory.
func checkOutputs(cfg *config, headless bool) error {
	type output struct{ flag, path string }
	outs := []output{{"-trace", cfg.trace}, {"-timeline", cfg.timeline}}
	if headless && cfg.render {
		outs = append(outs, output{"-out", cfg.out})
	}
	for _, o := range outs {
		if o.path == "" {
			continue
		}
		if err := checkWritable(o.path); err != nil {
			return fmt.Errorf("%s %s: %w", o.flag, o.path, err)
		}
	}
	return nil
}

func checkWritable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return errors.New("is a directory")
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("no directory %s", dir)
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".crowd-probe-*")
	if err != nil {
		return fmt.Errorf("cannot create files in %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// absPath is path made absolute for messages (path itself if that fails).
func absPath(path string) string {
	if p, err := filepath.Abs(path); err == nil {
		return p
	}
	return path
}
