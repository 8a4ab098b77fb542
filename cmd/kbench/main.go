package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

func main() {
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

// options are the parsed flags.
type options struct {
	kernels   []sched.KernelID
	sizes     []int
	reps      int
	minSample time.Duration
	quick     bool
	cpuOnly   bool
	json, csv bool
	plot      string
	validate  bool
	device    string
}

const usageText = `usage: kbench [flags]

kbench measures the kernels of package kernels over a range of sizes on one
CPU goroutine, on all CPU workers (the scheduler), on the GPU (dispatch
only, GPU-resident buffers) and on the GPU including transfers (host
memory), beside the memory-copy bound for the same bytes. It prints an
aligned table and the GPU/CPU crossover size per kernel.

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
		json: *jsonOut, csv: *csvOut, plot: *plotFile, validate: *validate, device: *device}
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
	if o.json && o.csv {
		return bad("-json and -csv both write to standard output: choose one")
	}
	if o.plot != "" {
		if _, err := plotFormat(o.plot); err != nil {
			return bad("%v", err)
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
	fail := func(err error) int {
		fmt.Fprintf(stderr, "kbench: %v\n", err)
		return exitError
	}
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		return fail(err)
	}
	rep := &Report{Reps: o.reps, MinSample: o.minSample.String(), Sizes: o.sizes,
		Machine: Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
			NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}}
	for _, id := range o.kernels {
		rep.Kernels = append(rep.Kernels, reg.Lookup(id).Name)
	}

	// The GPU, unless -cpu-only; no Vulkan device is not an error.
	var dev *gpu.Device
	if o.cpuOnly {
		rep.Machine.GPUNote = "not measured: -cpu-only"
	} else {
		var err error
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
	rep.Devices = []string{devCPU1, devCPUAll}
	if dev != nil {
		rep.Devices = append(rep.Devices, devGPU, devGPUXfer)
	}

	b, err := newBench(reg, dev)
	if err != nil {
		return fail(err)
	}
	defer b.s.Close() // closes the executor too, before dev.Close
	s := b.s
	rep.Machine.Workers = s.Threads()

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
	for _, id := range o.kernels {
		for _, size := range o.sizes {
			if err := b.measureWorkload(rep, o, id, size, step); err != nil {
				if bar != nil {
					_ = bar.Clear()
				}
				return fail(err)
			}
			debug.FreeOSMemory() // the next workload may be large: give this one's memory back first
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
		if err := rep.writePlot(o.plot); err != nil {
			return fail(fmt.Errorf("writing the plot: %w", err))
		}
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

// newBench starts a scheduler over reg (default workers, plus one
// registered main thread) and, with dev, attaches a GPU executor. Closing
// b.s closes the executor; dev stays the caller's.
func newBench(reg *sched.Registry, dev *gpu.Device) (*bench, error) {
	b := &bench{reg: reg, obs: newGPUObserver(), dev: dev}
	s, err := sched.New(sched.Config{Kernels: reg, Observer: b.obs})
	if err != nil {
		return nil, err
	}
	b.s = s
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
		if _, _, err := ops[2].run(); err != nil {
			return failed(devGPU, err)
		}
		if err := res.compare(w, devGPU, want); err != nil {
			return failed(devGPU, err)
		}
		step(what(devGPUXfer))
		poison(w)
		if _, _, err := ops[3].run(); err != nil {
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
	// The bound is the fastest copy seen, on one goroutine or on all.
	cp := Copy{Kernel: name, Size: size, Bytes: bytes, OneSeconds: ts[ndev].best, AllSeconds: ts[ndev+1].best}
	cp.Seconds = min(cp.OneSeconds, cp.AllSeconds)
	rep.Copies = append(rep.Copies, cp)
	for i, t := range ts[:ndev] {
		r := Result{Kernel: name, ID: int(id), Elem: w.info.elem, Size: size, Elements: w.elements, Items: w.items,
			Chunks: w.chunks(), Device: ops[i].name, Seconds: t.median, Samples: t.samples, WallSeconds: t.wall,
			Bytes: bytes, CopySeconds: cp.Seconds}
		if t.median > 0 {
			r.ElemPerSec = float64(w.elements) / t.median
			r.BytesPerSec = float64(bytes) / t.median
			r.CopyFraction = cp.Seconds / t.median
		}
		rep.Results = append(rep.Results, r)
	}
	return nil
}
