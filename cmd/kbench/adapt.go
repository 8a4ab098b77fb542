package main

import (
	"errors"
	"fmt"
	"github.com/vkjobs/vkjobs/internal/outfile"
	"image/color"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vkjobs/vkjobs/affinity/placement"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/internal/xmath"
	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/trace"
)

// Adaptation (-adapt): one kernel at one size runs as a sequence of Auto
// tasks; from the first third to the second a load runs beside it, and
// the decisions over time show whether Auto moved to the device the load
// spares, and back when it went.
//
// The loads:
//
//	cpu  busy loops in a child process (kbench itself, one spinning
//	     thread per CPU), as another program's work would be
//	gpu  a goroutine keeping GPU tasks of the same kernel (4x the size)
//	     queued on the executor, as another client filling the GPU's
//	     queue would
//	spin busy goroutines in kbench (16 per GOMAXPROCS), which take the Go
//	     runtime's processors from the CPU workers but not the CPU from a
//	     software GPU's own threads

// spinEnv makes kbench a busy-loop child (see startSpinner).
const spinEnv = "KBENCH_SPIN_CHILD"

// spinChild runs when kbench is started as a busy-loop child: threads
// spinning until killed.
func spinChild() {
	n := runtime.NumCPU()
	runtime.GOMAXPROCS(n)
	var x atomic.Uint64
	for range n - 1 {
		go func() {
			for {
				x.Add(1)
			}
		}()
	}
	for {
		x.Add(1)
	}
}

// adaptTask is one task of the adaptation run.
type adaptTask struct {
	At       float64 // seconds since the start
	Seconds  float64 // wall-clock time of the task
	Device   string  // column: cpu-all, gpu+xfer or split (co-execution or a slice probe)
	Loaded   bool
	PredCPU  float64 // the Placer's predicted seconds (0: none)
	PredGPU  float64
	Reason   string
	Measured float64
	placed   placed
}

// adaptPhase sums a phase of the run.
type adaptPhase struct {
	name           string
	tasks, onGPU   int
	median         float64
	switchedWithin int // tasks until the majority device of the phase first ran 5 in a row (-1: never)
}

// runAdapt is kbench -adapt.
func runAdapt(o *options, b *bench, rec *placeRecorder, tr *trace.Recorder, stdout, stderr io.Writer) error {
	id, size := o.kernels[0], o.sizes[0]
	name := b.reg.Lookup(id).Name
	w, err := newWorkload(b.reg, id, size)
	if err != nil {
		return err
	}
	n := o.adaptTasks
	on, off := n/3, 2*n/3
	var stop func()
	startLoad := func() error {
		switch o.adaptLoad {
		case "cpu":
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), spinEnv+"=1")
			if err := cmd.Start(); err != nil {
				return fmt.Errorf("starting the busy-loop process: %w", err)
			}
			stop = func() { cmd.Process.Kill(); cmd.Wait() }
		case "gpu":
			lw, err := newWorkload(b.reg, id, 4*size)
			if err != nil {
				return err
			}
			lt, err := b.s.RegisterThread("load")
			if err != nil {
				return err
			}
			var quit atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				var ids []sched.TaskID
				for !quit.Load() {
					// Two tasks queued at all times.
					for len(ids) < 2 {
						t := sched.Task{Kernel: id, Affinity: sched.GPU, Data: lw.task(0, nil)}
						tid, err := lt.Add(&t)
						if err != nil {
							return
						}
						ids = append(ids, tid)
					}
					lt.Wait(ids[0])
					ids = ids[1:]
				}
				for _, tid := range ids {
					lt.Wait(tid)
				}
			}()
			stop = func() { quit.Store(true); <-done }
		case "spin":
			var quit atomic.Bool
			var x atomic.Uint64
			n := 16 * runtime.GOMAXPROCS(0)
			done := make(chan struct{}, n)
			for range n {
				go func() {
					for !quit.Load() {
						x.Add(1)
					}
					done <- struct{}{}
				}()
			}
			stop = func() {
				quit.Store(true)
				for range n {
					<-done
				}
			}
		}
		return nil
	}
	var tasks []adaptTask
	rec.take()
	t0 := time.Now()
	frame := 0
	for i := range n {
		if i == on {
			if err := startLoad(); err != nil {
				return err
			}
		}
		if i == off && stop != nil {
			stop()
			stop = nil
		}
		if tr != nil && i%10 == 0 {
			tr.Frame(frame)
			frame++
		}
		at := time.Since(t0).Seconds()
		s := time.Now()
		if err := b.runTasks(w, sched.Auto, nil); err != nil {
			if stop != nil {
				stop()
			}
			return fmt.Errorf("%s, size %s, task %d: %w", name, formatSize(size), i, err)
		}
		d := time.Since(s).Seconds()
		for _, p := range rec.take() {
			tasks = append(tasks, adaptTask{At: at, Seconds: d, Device: p.task().Column, Loaded: i >= on && i < off, placed: p})
		}
	}
	if stop != nil {
		stop()
	}
	if tr != nil {
		tr.Frame(frame)
	}
	// The decisions (every one tracked: PlacerOptions.TrackEvery 1), in
	// order, are the tasks'.
	var decs []placement.Decision
	for _, d := range rec.placer().Snapshot().Decisions {
		if d.Kernel == id && int(d.Items) == w.chunk {
			decs = append(decs, d)
		}
	}
	if len(decs) > len(tasks) {
		decs = decs[len(decs)-len(tasks):]
	}
	off0 := len(tasks) - len(decs)
	for i, d := range decs {
		t := &tasks[off0+i]
		t.Reason, t.Measured = d.Reason, d.Measured.Seconds()
		if p := d.Predicted["cpu"]; p > 0 {
			t.PredCPU = p.Seconds()
		}
		if p := d.Predicted["gpu"]; p > 0 {
			t.PredGPU = p.Seconds()
		}
		if tr != nil {
			tr.AddDecision(d.Trace())
		}
	}

	phases := []adaptPhase{adaptSummary("before", tasks[:on]), adaptSummary("load: "+o.adaptLoad, tasks[on:off]), adaptSummary("after", tasks[off:])}
	fmt.Fprintf(stdout, "kbench -adapt: %s at %s, %d Auto tasks; %s load from task %d to %d; load average %s\n",
		name, formatSize(size), n, o.adaptLoad, on, off, loadAvg())
	fmt.Fprintf(stdout, "%-12s %6s %7s %12s %s\n", "phase", "tasks", "on GPU", "median us", "tasks until its majority device ran 5 in a row")
	for _, ph := range phases {
		fmt.Fprintf(stdout, "%-12s %6d %7d %12.1f %d\n", ph.name, ph.tasks, ph.onGPU, ph.median*1e6, ph.switchedWithin)
	}
	if o.plot != "" {
		if err := writeAdaptPlot(o.plot, fmt.Sprintf("%s at %s: Auto's decisions, %s load in tasks %d-%d", name, formatSize(size), o.adaptLoad, on, off), tasks, on, off); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "kbench: wrote %s\n", o.plot)
	}
	return nil
}

// adaptSummary sums a phase: its tasks, those on the GPU, the median task
// time, and after how many tasks the phase's majority device first ran
// five tasks in a row.
func adaptSummary(name string, ts []adaptTask) adaptPhase {
	ph := adaptPhase{name: name, tasks: len(ts), switchedWithin: -1}
	var secs []float64
	count := map[string]int{}
	for _, t := range ts {
		secs = append(secs, t.Seconds)
		count[t.Device]++
		if t.Device == devGPUXfer {
			ph.onGPU++
		}
	}
	ph.median = xmath.Median(secs)
	maj, mn := "", -1
	for d, c := range count {
		if c > mn || (c == mn && d < maj) {
			maj, mn = d, c
		}
	}
	run := 0
	for i, t := range ts {
		if t.Device == maj {
			run++
		} else {
			run = 0
		}
		if run == 5 {
			ph.switchedWithin = i - 4
			break
		}
	}
	return ph
}

// adaptColumn is the plot style of each column Auto may choose.
var adaptColumn = map[string]struct {
	color color.Color
	shape draw.GlyphDrawer
}{
	devCPUAll:  {deviceStyle[devCPUAll].color, draw.CircleGlyph{}},
	devGPUXfer: {deviceStyle[devGPUXfer].color, draw.TriangleGlyph{}},
	devSplit:   {color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 255}, draw.SquareGlyph{}},
}

// writeAdaptPlot draws the run: each task's time against its index,
// marked by the device Auto chose, the Placer's predictions for the CPU
// and the GPU as lines, and the load's start and end.
func writeAdaptPlot(file, title string, tasks []adaptTask, on, off int) error {
	format, err := plotFormat(file)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "task"
	p.Y.Label.Text = "seconds (log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{}
	p.Legend.Top = true
	lo, hi := 1e9, 0.0
	byDev := map[string]plotter.XYs{}
	var pc, pg plotter.XYs
	for i, t := range tasks {
		if t.Seconds <= 0 {
			continue
		}
		byDev[t.Device] = append(byDev[t.Device], plotter.XY{X: float64(i), Y: t.Seconds})
		lo, hi = min(lo, t.Seconds), max(hi, t.Seconds)
		if t.PredCPU > 0 {
			pc = append(pc, plotter.XY{X: float64(i), Y: t.PredCPU})
			lo, hi = min(lo, t.PredCPU), max(hi, t.PredCPU)
		}
		if t.PredGPU > 0 {
			pg = append(pg, plotter.XY{X: float64(i), Y: t.PredGPU})
			lo, hi = min(lo, t.PredGPU), max(hi, t.PredGPU)
		}
	}
	if hi <= 0 {
		return errors.New("no task to plot")
	}
	devs := make([]string, 0, len(byDev))
	for d := range byDev {
		devs = append(devs, d)
	}
	sort.Strings(devs)
	for _, d := range devs {
		sc, err := plotter.NewScatter(byDev[d])
		if err != nil {
			return err
		}
		st := adaptColumn[d]
		sc.Color, sc.Shape, sc.Radius = st.color, st.shape, vg.Points(2)
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("task on %s (%d)", d, len(byDev[d])), sc)
	}
	for _, l := range []struct {
		name string
		xys  plotter.XYs
		c    color.Color
	}{{"predicted cpu", pc, deviceStyle[devCPUAll].color}, {"predicted gpu", pg, deviceStyle[devGPUXfer].color}} {
		if len(l.xys) < 2 {
			continue
		}
		ln, err := plotter.NewLine(l.xys)
		if err != nil {
			return err
		}
		ln.Color, ln.Dashes = l.c, []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(ln)
		p.Legend.Add(l.name, ln)
	}
	lo, hi = lo/1.5, hi*1.5
	for _, x := range []int{on, off} {
		ln, err := plotter.NewLine(plotter.XYs{{X: float64(x), Y: lo}, {X: float64(x), Y: hi}})
		if err != nil {
			return err
		}
		ln.Color, ln.Width = color.Gray{Y: 0x40}, vg.Points(1)
		p.Add(ln)
	}
	p.Legend.Add("load starts / stops", plotter.NewFunction(func(float64) float64 { return lo }))
	p.Y.Min, p.Y.Max = lo, hi
	p.X.Min, p.X.Max = 0, float64(len(tasks))
	wt, err := p.WriterTo(9*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return err
	}
	return outfile.Write(file, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}

// newAdaptPlacer is -adapt's Placer: as -auto's, tracking every decision
// so that the plot has each task's predictions, but without OneCore: the
// run follows the CPU workers against the GPU (a slice probing the GPU
// shows as a split task).
func newAdaptPlacer(dev *gpu.Device, reprobe int, budget float64) *placement.Placer {
	shared := dev != nil && dev.Selection().Chosen.Type == gpu.TypeCPU
	return placement.New(placement.Options{SharedCores: shared, History: 1 << 16, TrackEvery: 1, ReprobeEvery: reprobe, ExploreBudget: budget})
}

// writeTraces writes -adapt's Chrome trace and SVG timeline.
func writeTraces(o *options, tr *trace.Recorder, stderr io.Writer) error {
	if tr == nil {
		return nil
	}
	write := func(file string, f func(io.Writer) error) error {
		if err := outfile.Write(file, f); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "kbench: wrote %s\n", file)
		return nil
	}
	if o.trace != "" {
		if err := write(o.trace, tr.WriteChrome); err != nil {
			return err
		}
	}
	if o.timeline != "" {
		// Frames mark every tenth task: the frame where the load starts.
		n := o.adaptTasks / 3 / 10
		if err := write(o.timeline, func(w io.Writer) error { return tr.WriteTimelineSVG(w, n) }); err != nil {
			return err
		}
	}
	return nil
}
