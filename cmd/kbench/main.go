package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/vkjobs/vkjobs/internal/outfile"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/vkjobs/vkjobs/affinity/placement"
	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/internal/version"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/trace"
)

func main() {
	if os.Getenv(spinEnv) != "" {
		spinChild() // -adapt -adapt-load cpu's busy loops
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // a measurement, a check or an output failed
	exitUsage = 2 // bad flags or arguments
)

// maxSize bounds -sizes: 1e8 elements of the largest kernel
// (LocalToModelSkin, 176 bytes per bone) already take 17 GB of host and
// GPU memory.
const maxSize = 100_000_000

// maxSPUStore bounds -spu-store: the executor allocates its local store
// up front, and a store larger than a chunk's streams (64 MiB each) is
// never filled, so a larger value is a typo that would only exhaust
// memory.
const maxSPUStore = 1 << 30

// options are the parsed flags.
type options struct {
	kernels       []sched.KernelID
	sizes         []int
	reps          int
	minSample     time.Duration
	quick         bool
	cpuOnly       bool
	json, csv     bool
	plot          string
	validate      bool
	device        string
	spuStore      int // bytes of the SPU executor's local store
	spuChunk      int // work items per SPU task (0: the chunks of the other columns)
	version       bool
	best          bool    // report the fastest sample instead of the median
	auto          bool    // -auto: Auto placement against the oracle
	autoTasks     int     // -auto-tasks: the least length of Auto's sequence per kernel and size
	autoRounds    int     // -auto-rounds: rounds of the sweep, each with a fresh Placer
	exploreBudget float64 // -explore-budget: the Placer's ExploreBudget (0: its default)
	adapt         bool    // -adapt: Auto's decisions over time under a changing load
	adaptTasks    int     // -adapt-tasks
	adaptLoad     string  // -adapt-load: cpu or gpu
	reprobe       int     // -reprobe: PlacerOptions.ReprobeEvery for -adapt (0: its default)
	trace         string  // -trace: Chrome trace of the -adapt run
	timeline      string  // -timeline: SVG timeline of the -adapt run's tasks when the load starts
}

const usageText = `usage: kbench [flags]

kbench measures the kernels of package kernels over a range of sizes on one
CPU goroutine, on all CPU workers (the scheduler), on the SPU-style
local-store executor (package spu), on the GPU (dispatch only,
GPU-resident buffers) and on the GPU including transfers (host memory),
beside the memory-copy bound for the same bytes and each CPU column's
bound (copy or compute, whichever is slower). It prints an aligned table
and the GPU/CPU crossover size per kernel.

flags:
`

// parseFlags parses args. On a usage error it has printed the error and
// the usage to stderr and returns exitUsage; for -h, exitOK.
func parseFlags(args []string, stderr io.Writer) (*options, int) {
	fs := flag.NewFlagSet("kbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nkernels (name, ID, element): %s\n", strings.Join(kernelNames(), ", "))
	}
	kflag := fs.String("kernels", "all", "comma-separated kernel names or IDs, or all")
	sflag := fs.String("sizes", "1e3,1e4,1e5,1e6,1e7", "comma-separated sizes, 1 to 1e8 elements each (each kernel's element is listed below)")
	reps := fs.Int("reps", 5, "samples per measurement; the median is reported")
	minSample := fs.Duration("min-sample", 20*time.Millisecond, "repeat runs so that each sample lasts at least this long")
	quick := fs.Bool("quick", false, "every kernel at small sizes (1e3,1e4,1e5), 3 samples of 5ms: well under 30 s")
	cpuOnly := fs.Bool("cpu-only", false, "measure the CPU columns only; do not open a Vulkan device")
	jsonOut := fs.Bool("json", false, "write the full report as JSON to standard output instead of the table")
	csvOut := fs.Bool("csv", false, "write one CSV row per kernel, size and device to standard output instead of the table")
	plotFile := fs.String("plot", "", "also draw throughput against size per device, log axes, to `FILE` (.svg or .png)")
	validate := fs.Bool("validate", false, "enable the Vulkan validation layer; any message fails the run")
	device := fs.String("device", "", "Vulkan device index or name substring (default: automatic, or $VKJOBS_DEVICE)")
	spuStore := fs.Int("spu-store", spu.DefaultLocalStore, "local store of the SPU-style executor (spu column), in `bytes`; 4096 to 1 GiB")
	spuChunk := fs.Int("spu-chunk", 0, "work `items` per task given to the SPU-style executor (0: the same tasks as the other columns); the executor streams each through its local store")
	showVersion := fs.Bool("version", false, "print the version and exit")
	best := fs.Bool("best", false, "report each measurement's fastest sample instead of the median (the fractions of the bounds are always the median of the rounds' ratios): on a machine shared with other work, the run least disturbed by it")
	auto := fs.Bool("auto", false, "measure Auto placement (a placement.Placer learning as it goes) against the oracle, the fastest of cpu-1, cpu-all, gpu+xfer and the best static CPU/GPU split, and print the regret table instead")
	autoTasks := fs.Int("auto-tasks", 200, "with -auto: Auto's sequence per kernel and size is at least this many runs, learning included")
	autoRounds := fs.Int("auto-rounds", 3, "with -auto: rounds of the sweep, each with a Placer that starts knowing nothing; each row's median regret and spread are reported")
	exploreBudget := fs.Float64("explore-budget", 0, "with -auto or -adapt: the Placer's ExploreBudget, the fraction of a kernel's run time its exploration may cost (0: the default; negative: no budget)")
	adapt := fs.Bool("adapt", false, "run the first of -kernels at the first of -sizes as Auto tasks, with a load beside it from the first third to the second, and print (and -plot) Auto's decisions over time")
	adaptTasks := fs.Int("adapt-tasks", 600, "with -adapt: the number of tasks")
	adaptLoad := fs.String("adapt-load", "cpu", "with -adapt: the load, cpu (a child process of busy loops, one per CPU), gpu (GPU tasks of 4x the size kept queued) or spin (busy goroutines in kbench, 16 per GOMAXPROCS)")
	reprobe := fs.Int("reprobe", 0, "with -adapt: the Placer's ReprobeEvery (0: its default)")
	traceFile := fs.String("trace", "", "with -adapt: write a Chrome trace of the run, each Auto task with its decision, to `FILE`")
	timelineFile := fs.String("timeline", "", "with -adapt: write an SVG timeline of the ten tasks from the load's start, each Auto task with its decision, to `FILE`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK
		}
		return nil, exitUsage // the flag package printed the error and the usage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	bad := func(format string, a ...any) (*options, int) {
		fmt.Fprintf(stderr, "kbench: "+format+"\n", a...)
		fs.Usage()
		return nil, exitUsage
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	o := &options{reps: *reps, minSample: *minSample, quick: *quick, cpuOnly: *cpuOnly,
		json: *jsonOut, csv: *csvOut, plot: *plotFile, validate: *validate, device: *device,
		spuStore: *spuStore, spuChunk: *spuChunk, version: *showVersion, best: *best,
		auto: *auto, autoTasks: *autoTasks, autoRounds: *autoRounds, exploreBudget: *exploreBudget, adapt: *adapt, adaptTasks: *adaptTasks, adaptLoad: *adaptLoad,
		reprobe: *reprobe, trace: *traceFile, timeline: *timelineFile}
	if o.version {
		return o, exitOK
	}
	if o.quick {
		if !set["sizes"] {
			*sflag = "1e3,1e4,1e5"
		}
		if !set["reps"] {
			o.reps = 3
		}
		if !set["min-sample"] {
			o.minSample = 5 * time.Millisecond
		}
	}
	var err error
	if o.kernels, err = parseKernels(*kflag); err != nil {
		return bad("-kernels: %v", err)
	}
	if o.sizes, err = parseSizes(*sflag); err != nil {
		return bad("-sizes: %v", err)
	}
	if o.reps < 1 {
		return bad("-reps %d: need at least 1", o.reps)
	}
	if o.minSample < 0 {
		return bad("-min-sample %v: must not be negative", o.minSample)
	}
	if o.spuStore < 4096 {
		return bad("-spu-store %d: the local store needs at least 4096 bytes", o.spuStore)
	}
	if o.spuStore > maxSPUStore {
		return bad("-spu-store %d: at most %d bytes (1 GiB)", o.spuStore, maxSPUStore)
	}
	if o.spuChunk < 0 {
		return bad("-spu-chunk %d: must not be negative", o.spuChunk)
	}
	if o.autoTasks < 1 {
		return bad("-auto-tasks %d: need at least 1", o.autoTasks)
	}
	if o.autoRounds < 1 {
		return bad("-auto-rounds %d: need at least 1", o.autoRounds)
	}
	if o.auto && (o.csv || o.cpuOnly || o.plot != "" || o.adapt) {
		return bad("-auto writes its own table (or -json) and needs the GPU: not with -csv, -cpu-only, -plot or -adapt")
	}
	if o.adapt && (o.csv || o.json || o.cpuOnly) {
		return bad("-adapt writes its own table (and -plot) and needs the GPU: not with -csv, -json or -cpu-only")
	}
	if o.adapt && (o.adaptTasks < 30 || (o.adaptLoad != "cpu" && o.adaptLoad != "gpu" && o.adaptLoad != "spin")) {
		return bad("-adapt-tasks %d, -adapt-load %q: need at least 30 tasks and a load of cpu, gpu or spin", o.adaptTasks, o.adaptLoad)
	}
	if !o.adapt && (o.trace != "" || o.timeline != "") {
		return bad("-trace and -timeline record the -adapt run: use them with -adapt")
	}
	// The modes' own flags would be ignored without a word elsewhere.
	for _, f := range []string{"adapt-tasks", "adapt-load", "reprobe"} {
		if set[f] && !o.adapt {
			return bad("-%s is a flag of -adapt: use it with -adapt", f)
		}
	}
	for _, f := range []string{"auto-tasks", "auto-rounds"} {
		if set[f] && !o.auto {
			return bad("-%s is a flag of -auto: use it with -auto", f)
		}
	}
	if set["explore-budget"] && !o.auto && !o.adapt {
		return bad("-explore-budget is a flag of -auto and -adapt: use it with one of them")
	}
	if math.IsNaN(o.exploreBudget) || math.IsInf(o.exploreBudget, 0) {
		return bad("-explore-budget %g: want a finite fraction (0: the default; negative: no budget)", o.exploreBudget)
	}
	if o.json && o.csv {
		return bad("-json and -csv both write to standard output: choose one")
	}
	// -cpu-only opens no device: a device or validation asked for beside
	// it would be ignored without a word.
	if o.cpuOnly && o.device != "" {
		return bad("-device %q and -cpu-only: -cpu-only opens no Vulkan device; drop one", o.device)
	}
	if o.cpuOnly && o.validate {
		return bad("-validate and -cpu-only: -cpu-only opens no Vulkan device to validate; drop one")
	}
	if o.plot != "" {
		if _, err := plotFormat(o.plot); err != nil {
			return bad("%v", err)
		}
		// Checked before the measurements, not after minutes of them.
		if err := outfile.Check(o.plot); err != nil {
			return bad("-plot: %v", err)
		}
	}
	for _, f := range []struct{ flag, file string }{{"trace", o.trace}, {"timeline", o.timeline}} {
		if f.file == "" {
			continue
		}
		if err := outfile.Check(f.file); err != nil {
			return bad("-%s: %v", f.flag, err)
		}
	}
	return o, exitOK
}

// kernelNames lists the kernels kbench knows, in ID order.
func kernelNames() []string {
	var names []string
	for _, id := range kernels.IDs() {
		k, err := kernels.Definition(id)
		if err == nil {
			names = append(names, fmt.Sprintf("%s (%d, %s)", k.Name, id, infoOf(id).elem))
		}
	}
	return names
}

func parseKernels(s string) ([]sched.KernelID, error) {
	if strings.TrimSpace(s) == "all" {
		return kernels.IDs(), nil
	}
	byName := map[string]sched.KernelID{}
	for _, id := range kernels.IDs() {
		if k, err := kernels.Definition(id); err == nil {
			byName[k.Name] = id
		}
	}
	var ids []sched.KernelID
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		id, ok := byName[f]
		if !ok {
			if n, err := strconv.Atoi(f); err == nil && n >= int(kernels.SkinLBS) && n <= int(kernels.Saxpy) {
				id, ok = sched.KernelID(n), true
			}
		}
		if !ok {
			return nil, fmt.Errorf("unknown kernel %q (see -h for the list)", f)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("no kernel given")
	}
	return ids, nil
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v != float64(int64(v)) || v < 1 || v > maxSize {
			return nil, fmt.Errorf("%q is not a whole number of elements from 1 to %g", f, float64(maxSize))
		}
		if !slices.Contains(sizes, int(v)) {
			sizes = append(sizes, int(v))
		}
	}
	slices.Sort(sizes)
	return sizes, nil
}

// run is the whole program; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	o, code := parseFlags(args, stderr)
	if o == nil {
		return code
	}
	if o.version {
		fmt.Fprintln(stdout, version.String("kbench"))
		return exitOK
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "kbench: %v\n", err)
		return exitError
	}
	reg, err := newRegistry()
	if err != nil {
		return fail(err)
	}
	hz, hzSource := clockHz()
	rep := &Report{Reps: o.reps, MinSample: o.minSample.String(), Sizes: o.sizes, Version: version.Version, Best: o.best,
		SPULocalStore: o.spuStore, SPUChunk: o.spuChunk,
		Machine: Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
			NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), ClockHz: hz, ClockSource: hzSource}}
	for _, id := range o.kernels {
		rep.Kernels = append(rep.Kernels, reg.Lookup(id).Name)
	}

	// The GPU, unless -cpu-only; no Vulkan device is not an error.
	var dev *gpu.Device
	if o.cpuOnly {
		rep.Machine.GPUNote = "not measured: -cpu-only"
	} else {
		dev, err = gpu.Open(gpu.Options{Validation: o.validate, Device: o.device, AppName: "kbench"})
		switch {
		case errors.Is(err, gpu.ErrNoDevice):
			fmt.Fprintf(stderr, "kbench: no Vulkan device, so only the CPU columns are measured (-cpu-only skips this check): %v\n", err)
			rep.Machine.GPUNote, rep.Machine.GPUError = "no Vulkan device", err.Error()
		case err != nil:
			return fail(fmt.Errorf("opening the Vulkan device: %w (-cpu-only runs without it)", err))
		default:
			rep.Machine.GPU = dev.Name()
			defer dev.Close()
		}
	}
	rep.Devices = []string{devCPU1, devCPUAll, devSPU}
	if dev != nil {
		rep.Devices = append(rep.Devices, devGPU, devGPUXfer)
	}

	var rec *placeRecorder
	var tr *trace.Recorder
	var extra sched.Observer
	if o.auto || o.adapt {
		if dev == nil {
			return fail(errors.New("-auto and -adapt need a Vulkan device"))
		}
		if o.auto {
			rec = newPlaceRecorder(newAutoPlacer(dev, o.exploreBudget))
		} else {
			rec = newPlaceRecorder(newAdaptPlacer(dev, o.reprobe, o.exploreBudget))
		}
		if o.trace != "" || o.timeline != "" {
			tr = trace.New(runtime.GOMAXPROCS(0)+8, 1<<16)
			tr.SetKernelNames(trace.NamesFromRegistry(reg))
			extra = tr
		}
	}
	b, err := newBench(reg, dev, o.spuStore, rec, extra)
	if err != nil {
		return fail(err)
	}
	defer b.s.Close() // closes the executor too, before dev.Close
	s := b.s
	rep.Machine.Workers = s.Threads()
	if o.auto {
		arep := &AutoReport{Version: rep.Version, Machine: rep.Machine, Reps: o.reps, MinTasks: o.autoTasks}
		if err := runAuto(o, b, rec, arep, stdout, stderr); err != nil {
			return fail(err)
		}
		if err := s.Close(); err != nil {
			return fail(err)
		}
		return exitOK
	}
	if o.adapt {
		if err := runAdapt(o, b, rec, tr, stdout, stderr); err != nil {
			return fail(err)
		}
		if err := s.Close(); err != nil {
			return fail(err)
		}
		if err := writeTraces(o, tr, stderr); err != nil {
			return fail(err)
		}
		return exitOK
	}

	// The table's header first, so that a long run shows at once what it
	// measures; the rows follow when every size has been measured.
	if !o.json && !o.csv {
		if _, err := io.WriteString(stdout, rep.tableHeader()); err != nil {
			return fail(fmt.Errorf("writing the report: %w", err))
		}
	}
	// Progress on standard error: a bar on a terminal, else one line per
	// finished kernel.
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		steps := len(o.kernels) * len(o.sizes) * (2 + len(rep.Devices)) // data, each device's check, timing
		bar = progressbar.NewOptions(steps, progressbar.OptionSetWriter(stderr), progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(24), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetPredictTime(true))
	}
	step := func(what string) {
		if bar != nil {
			bar.Describe(what)
			_ = bar.Add(1)
		}
	}
	start := time.Now()
	for ki, id := range o.kernels {
		for _, size := range o.sizes {
			if err := b.measureWorkload(rep, o, id, size, step); err != nil {
				if bar != nil {
					_ = bar.Clear()
				}
				return fail(err)
			}
			debug.FreeOSMemory() // the next workload may be large: give this one's memory back first
		}
		if bar == nil {
			fmt.Fprintf(stderr, "kbench: %d/%d %s measured (%s sizes; %.1f s so far)\n", ki+1, len(o.kernels),
				reg.Lookup(id).Name, strconv.Itoa(len(o.sizes)), time.Since(start).Seconds())
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	rep.crossovers()

	switch {
	case o.json:
		err = rep.writeJSON(stdout)
	case o.csv:
		err = rep.writeCSV(stdout)
	default:
		err = rep.writeTable(stdout)
	}
	if err != nil {
		return fail(fmt.Errorf("writing the report: %w", err))
	}
	if o.plot != "" {
		abs, err := filepath.Abs(o.plot)
		if err != nil {
			abs = o.plot
		}
		if err := rep.writePlot(abs); err != nil {
			return fail(fmt.Errorf("writing the plot: %w", err))
		}
		fmt.Fprintf(stderr, "kbench: wrote %s\n", abs)
	}
	if err := s.Close(); err != nil {
		return fail(err)
	}
	if dev != nil {
		// Closed here, not only deferred, so that the validation layer's
		// reports of leaked objects count too.
		if err := dev.Close(); err != nil {
			return fail(err)
		}
		// The device keeps its debug-report messages (the first 256).
		if m, _ := dev.Messages(); len(m) > 0 {
			lines := make([]string, len(m))
			for i, x := range m {
				lines[i] = x.String()
			}
			return fail(fmt.Errorf("%d Vulkan validation message(s):\n\t%s", len(m), strings.Join(lines, "\n\t")))
		}
	}
	return exitOK
}

// newRegistry registers the kernels of package kernels, each with the
// binding the SPU-style executor needs (spuBinding).
func newRegistry() (*sched.Registry, error) {
	reg := sched.NewRegistry()
	for _, id := range kernels.IDs() {
		k, err := kernels.Definition(id)
		if err != nil {
			return nil, err
		}
		if b, ok := spuBinding(id); ok {
			k.SPU = b
		}
		if err := reg.Register(id, k); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// newBench starts a scheduler over reg (default workers, plus one
// registered main thread) with an SPU-style executor of one unit with a
// local store of spuStore bytes and, with dev, a GPU executor. Closing b.s
// closes the executors; dev stays the caller's. With rec, Auto tasks are
// placed by rec's Placer, which also observes every task, as does extra
// (nil: none).
func newBench(reg *sched.Registry, dev *gpu.Device, spuStore int, rec *placeRecorder, extra sched.Observer) (*bench, error) {
	b := &bench{reg: reg, obs: newGPUObserver(), dev: dev}
	// A second registered thread (-adapt's GPU load) with as many
	// workers as one would get.
	cfg := sched.Config{Kernels: reg, Observer: placement.Observers(b.obs, extra), MainThreads: 2,
		Workers: max(1, runtime.GOMAXPROCS(0)-1)}
	if rec != nil {
		cfg.Placer, cfg.Observer = rec, placement.Observers(b.obs, rec, extra)
	}
	s, err := sched.New(cfg)
	if err != nil {
		return nil, err
	}
	b.s = s
	if b.spu, err = spu.New(spu.Options{LocalStore: spuStore}); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.AttachExecutor(sched.ExecSPU, b.spu); err != nil {
		b.spu.Close()
		s.Close()
		return nil, err
	}
	if dev != nil {
		// At most 2 chunks (of up to 64 MiB per stream) per command
		// buffer keep the transient arenas, which only grow, to a few
		// hundred MiB.
		if b.exec, err = gpu.NewExecutor(dev, gpu.ExecutorOptions{MaxBatch: 2}); err != nil {
			s.Close()
			return nil, err
		}
		if err := s.AttachExecutor(sched.ExecGPU, b.exec); err != nil {
			b.exec.Close()
			s.Close()
			return nil, err
		}
	}
	if rec != nil {
		rec.placer().Attach(s)
	}
	if b.main, err = s.RegisterThread("kbench"); err != nil {
		s.Close()
		return nil, err
	}
	return b, nil
}

// measureWorkload measures kernel id at size on every device, beside the
// copy bound. First each device runs once and its output is checked
// against the one-goroutine run (which also warms everything up); then the
// devices and the copy bound are timed in interleaved rounds (measureAll).
func (b *bench) measureWorkload(rep *Report, o *options, id sched.KernelID, size int, step func(string)) error {
	name := b.reg.Lookup(id).Name
	what := func(d string) string { return fmt.Sprintf("%-20s %5s %-12s", name, formatSize(size), d) }
	step(what("data"))
	w, err := newWorkload(b.reg, id, size)
	if err != nil {
		return err
	}
	failed := func(dev string, err error) error {
		return fmt.Errorf("%s, size %s, %s: %w", name, formatSize(size), dev, err)
	}

	// The devices' runs, and the check of each device's output.
	ops := []op{
		{devCPU1, wallOp(func() error { return b.runCPU1(w) })},
		{devCPUAll, wallOp(func() error { return b.runTasks(w, sched.AnyWorker, nil) })},
	}
	step(what(devCPU1))
	if _, _, err := ops[0].run(); err != nil {
		return failed(devCPU1, err)
	}
	want := snapshot(w)
	step(what(devCPUAll))
	poison(w)
	if _, _, err := ops[1].run(); err != nil {
		return failed(devCPUAll, err)
	}
	if err := compare(w, devCPUAll, want, views(w)); err != nil {
		return failed(devCPUAll, err)
	}
	// The SPU-style executor, unless the kernel cannot run there (then
	// its column says why); its time waiting on DMA is summed over the
	// timed runs.
	step(what(devSPU))
	spuIdx, spuNote := -1, b.spuFits(w, o.spuChunk)
	var spuWall, spuStall0 time.Duration
	if spuNote == "" {
		spuIdx = len(ops)
		ops = append(ops, op{devSPU, func() (time.Duration, time.Duration, error) {
			t0 := time.Now()
			err := b.runSPU(w, o.spuChunk)
			d := time.Since(t0)
			spuWall += d
			return d, d, err
		}})
		poison(w)
		if _, _, err := ops[spuIdx].run(); err != nil {
			return failed(devSPU, err)
		}
		if err := compare(w, devSPU, want, views(w)); err != nil {
			return failed(devSPU, err)
		}
		spuWall, spuStall0 = 0, b.spu.Stats().Stall
	}
	if b.exec != nil {
		// GPU-resident buffers: the time counted is the dispatch time
		// from the GPU timestamps.
		res, err := b.resident(w)
		if err != nil {
			return failed(devGPU, err)
		}
		defer res.close()
		ops = append(ops, op{devGPU, func() (time.Duration, time.Duration, error) {
			d0, err := b.obs.wait(b.sent)
			if err != nil {
				return 0, 0, err
			}
			t0 := time.Now()
			if err := b.runTasks(w, sched.GPU, res.ids); err != nil {
				return 0, 0, err
			}
			wall := time.Since(t0)
			d1, err := b.obs.wait(b.sent)
			return d1 - d0, wall, err
		}})
		// Host memory: upload, dispatch and read-back, wall clock.
		ops = append(ops, op{devGPUXfer, wallOp(func() error { return b.runTasks(w, sched.GPU, nil) })})

		step(what(devGPU))
		if _, _, err := ops[len(ops)-2].run(); err != nil {
			return failed(devGPU, err)
		}
		if err := res.compare(w, devGPU, want); err != nil {
			return failed(devGPU, err)
		}
		step(what(devGPUXfer))
		poison(w)
		if _, _, err := ops[len(ops)-1].run(); err != nil {
			return failed(devGPUXfer, err)
		}
		if err := compare(w, devGPUXfer, want, views(w)); err != nil {
			return failed(devGPUXfer, err)
		}
	}
	want = nil

	step(what("timing"))
	bytes := w.bytes()
	ndev := len(ops)
	ops = append(ops, copyOps(bytes)...)
	ts, err := measureAll(ops, o.reps, o.minSample)
	if err != nil {
		return failed("timing", err)
	}
	// The copy bound: on one goroutine, and the faster of one and all,
	// round by round; each bound and fraction is a fastest sample, and
	// the rounds give its spread (bound.go).
	one, all := ts[ndev].samples, ts[ndev+1].samples
	copies := fasterRounds(one, all)
	cp := Copy{Kernel: name, Size: size, Bytes: bytes, OneSeconds: slices.Min(one), AllSeconds: slices.Min(all),
		Seconds: slices.Min(copies), OneSamples: one, AllSamples: all}
	// Each CPU column's bound: the slower of its copy and compute bounds
	// on the cores it uses (bound.go).
	cost := costOf(id)
	compute1 := cost.computeSeconds(w.elements, rep.Machine.ClockHz)
	cores := float64(rep.Machine.GOMAXPROCS)
	// cpu-all may use one core or all: its copy bound is the faster copy.
	rounds := [][]float64{boundRounds(one, compute1), boundRounds(copies, compute1/cores)}
	cp.Bounds = []Bound{boundOf(devCPU1, cp.OneSeconds, compute1), boundOf(devCPUAll, cp.Seconds, compute1/cores)}
	for i := range cp.Bounds {
		cp.Bounds[i].Samples = rounds[i]
	}
	cp.ComputeNote = cost.note
	rep.Copies = append(rep.Copies, cp)
	for i, t := range ts[:ndev] {
		if o.best {
			t.median = t.best
		}
		r := Result{Kernel: name, ID: int(id), Elem: w.info.elem, Size: size, Elements: w.elements, Items: w.items,
			Chunks: w.chunks(), Device: ops[i].name, Seconds: t.median, Samples: t.samples, WallSeconds: t.wall,
			Bytes: bytes, CopySeconds: cp.Seconds}
		bi := -1
		switch ops[i].name {
		case devCPU1, devSPU: // one core
			bi = 0
		case devCPUAll:
			bi = 1
		}
		if t.median > 0 {
			r.ElemPerSec = float64(w.elements) / t.median
			r.BytesPerSec = float64(bytes) / t.median
			f := fraction(copies, t.samples)
			r.CopyFraction, r.CopyFractionMin, r.CopyFractionMax = f.value, f.lo, f.hi
			if bi >= 0 {
				r.BoundSeconds, r.BoundKind = cp.Bounds[bi].Seconds, cp.Bounds[bi].Kind
				f := fraction(rounds[bi], t.samples)
				r.BoundFraction, r.BoundFractionMin, r.BoundFractionMax = f.value, f.lo, f.hi
			}
		}
		if i == spuIdx && spuWall > 0 {
			r.DMAWaitFraction = float64(b.spu.Stats().Stall-spuStall0) / float64(spuWall)
		}
		rep.Results = append(rep.Results, r)
	}
	if spuNote != "" {
		rep.SPUNotes = append(rep.SPUNotes, SPUNote{Kernel: name, Size: size, Note: spuNote})
	}
	return nil
}

// boundOf is a column's bound: the slower of its copy and compute bounds.
func boundOf(dev string, copySec, computeSec float64) Bound {
	if computeSec > copySec {
		return Bound{Device: dev, Seconds: computeSec, Kind: "compute", CopySeconds: copySec, ComputeSeconds: computeSec}
	}
	return Bound{Device: dev, Seconds: copySec, Kind: "copy", CopySeconds: copySec, ComputeSeconds: computeSec}
}
