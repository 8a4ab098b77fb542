package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vkjobs/vkjobs/affinity/placement"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/sched"
)

// splitShares are the GPU shares the static split sweep tries.
var splitShares = []float64{0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875}

// placed is one answer of the Placer.
type placed struct {
	kernel  sched.KernelID
	items   uint32
	where   sched.Affinity
	split   uint32
	oneCore bool // on CPU workers, unsplit: the Placer raised the task's grain
}

// placeRecorder is a sched.Placer that asks a placement.Placer and keeps
// its answers, so that each of Auto's tasks can be judged against the
// oracle's columns.
type placeRecorder struct {
	p    *placement.Placer
	mu   sync.Mutex
	list []placed
}

func (r *placeRecorder) Place(id sched.KernelID, k *sched.Kernel, d *sched.TaskData) (sched.Affinity, uint32) {
	grain := d.Grain
	where, split := r.p.Place(id, k, d)
	one := where == sched.AnyWorker && d.Grain != grain
	r.mu.Lock()
	r.list = append(r.list, placed{kernel: id, items: d.End - d.Begin, where: where, split: split, oneCore: one})
	r.mu.Unlock()
	return where, split
}

// take returns the placements recorded since the last take.
func (r *placeRecorder) take() []placed {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.list
	r.list = nil
	return l
}

func (p placed) task() autoTask {
	switch {
	case p.where == sched.GPU && p.split > 0 && p.items > 0:
		return autoTask{Column: devSplit, GPUShare: float64(p.split) / float64(p.items)}
	case p.where == sched.GPU:
		return autoTask{Column: devGPUXfer}
	case p.oneCore:
		return autoTask{Column: devCPU1}
	}
	return autoTask{Column: devCPUAll}
}

// newAutoPlacer returns the Placer -auto measures: the library's defaults,
// SharedCores when the Vulkan device computes on the host's cores (as
// package placement recommends), OneCore because the oracle counts one
// core (cpu-1) as a choice, and a decision history long enough to count a
// sweep's exploration.
func newAutoPlacer(dev *gpu.Device) *placement.Placer {
	shared := dev != nil && dev.Selection().Chosen.Type == gpu.TypeCPU
	return placement.New(placement.Options{SharedCores: shared, OneCore: true, History: 1 << 17})
}

// loadAvg returns the first three fields of /proc/loadavg, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// runSplit runs every chunk as two tasks at once: its first share of the
// items on the GPU, the rest on CPU workers (a static co-execution split,
// as the scheduler runs a Placer's split).
func (b *bench) runSplit(w *workload, share float64) error {
	b.ids = b.ids[:0]
	var firstErr error
	for c := range w.chunks() {
		d := w.task(c, nil)
		n := d.End - d.Begin
		s := min(max(uint32(share*float64(n)), 1), n-1)
		gd, cd := d, d
		gd.End = d.Begin + s
		cd.Begin = d.Begin + s
		for _, t := range []sched.Task{{Kernel: w.id, Affinity: sched.GPU, Data: gd}, {Kernel: w.id, Affinity: sched.AnyWorker, Data: cd}} {
			id, err := b.main.Add(&t)
			if err != nil {
				firstErr = err
				break
			}
			b.ids = append(b.ids, id)
		}
	}
	for _, id := range b.ids {
		if err := b.main.Wait(id); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// measureAuto measures kernel id at size for the -auto table: the
// oracle's columns (cpu-1, cpu-all, gpu+xfer, the split sweep) and Auto's
// sequence, in interleaved rounds. Each column's output is checked once
// against cpu-1's, Auto's first run included (which counts: it is the
// start of Auto's sequence).
func (b *bench) measureAuto(o *options, rec *placeRecorder, id sched.KernelID, size int) (AutoRow, error) {
	name := b.reg.Lookup(id).Name
	w, err := newWorkload(b.reg, id, size)
	if err != nil {
		return AutoRow{}, err
	}
	failed := func(dev string, err error) error {
		return fmt.Errorf("%s, size %s, %s: %w", name, formatSize(size), dev, err)
	}
	ops := []op{
		{devCPU1, wallOp(func() error { return b.runCPU1(w) })},
		{devCPUAll, wallOp(func() error { return b.runTasks(w, sched.AnyWorker, nil) })},
		{devGPUXfer, wallOp(func() error { return b.runTasks(w, sched.GPU, nil) })},
	}
	if w.kern.Kind != sched.Simple && w.chunk >= 2 {
		for _, sh := range splitShares {
			ops = append(ops, op{fmt.Sprintf("%s %.3f", devSplit, sh), wallOp(func() error { return b.runSplit(w, sh) })})
		}
	}
	// Auto's runs, every one kept.
	var runs []float64
	var tasks []autoTask
	rec.take()
	auto := op{devAuto, func() (time.Duration, time.Duration, error) {
		t0 := time.Now()
		err := b.runTasks(w, sched.Auto, nil)
		d := time.Since(t0)
		runs = append(runs, d.Seconds())
		for _, p := range rec.take() {
			tasks = append(tasks, p.task())
		}
		return d, d, err
	}}

	// Check every column once (this warms them up too).
	if _, _, err := ops[0].run(); err != nil {
		return AutoRow{}, failed(devCPU1, err)
	}
	want := snapshot(w)
	for _, op := range slices.Concat(ops[1:], []op{auto}) {
		poison(w)
		if _, _, err := op.run(); err != nil {
			return AutoRow{}, failed(op.name, err)
		}
		if err := compare(w, op.name, want, views(w)); err != nil {
			return AutoRow{}, failed(op.name, err)
		}
	}
	want = nil

	// Runs per sample: enough for -min-sample (one timed run decides);
	// Auto's runs per round also make its sequence at least -auto-tasks.
	all := slices.Concat(ops, []op{auto})
	ks := make([]int, len(all))
	for i, op := range all {
		_, d, err := op.run()
		if err != nil {
			return AutoRow{}, failed(op.name, err)
		}
		ks[i] = 1
		if d < o.minSample {
			ks[i] = int(min(int64(o.minSample/max(d, time.Microsecond))+1, 1<<20))
		}
	}
	// Auto's runs per round: as many as a sample of its own would take,
	// and enough for -auto-tasks over the rounds; in as many pieces as
	// there are columns.
	kAuto := max(ks[len(ops)], (o.autoTasks+o.reps-1)/o.reps)
	piece := (kAuto + len(ops) - 1) / len(ops)
	samples := make([][]float64, len(ops))
	// Each round runs the columns' samples and as many pieces of Auto's
	// sequence in one shuffled order (seeded by the kernel and size), so
	// that neither a burst of load from other processes nor what the
	// previous item left behind (its garbage, the software GPU's threads
	// and the executor's reports winding down) falls on one column or on
	// Auto more than on the others; each sample and each piece starts
	// after a collection, so that it pays for its own garbage only.
	r := rand.New(rand.NewPCG(uint64(id), uint64(size)))
	order := make([]int, 2*len(ops)) // i < len(ops): column i; else a piece of Auto's
	for i := range order {
		order[i] = i
	}
	for range o.reps {
		r.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			runtime.GC()
			if i >= len(ops) {
				for range piece {
					if _, _, err := auto.run(); err != nil {
						return AutoRow{}, failed(auto.name, err)
					}
				}
				continue
			}
			var sum time.Duration
			for range ks[i] {
				c, _, err := ops[i].run()
				if err != nil {
					return AutoRow{}, failed(ops[i].name, err)
				}
				sum += c
			}
			samples[i] = append(samples[i], sum.Seconds()/float64(ks[i]))
		}
	}
	cols := map[string]float64{}
	var splits []splitTime
	for i, op := range ops {
		// The mean, not the median: Auto's time is a sum over its runs,
		// load spikes included, and the rounds spread those over every
		// column alike.
		m := mean(samples[i])
		if o.best {
			m = minFloat(samples[i])
		}
		if i < 3 {
			cols[op.name] = m
		} else {
			splits = append(splits, splitTime{GPUShare: splitShares[i-3], Seconds: m})
		}
	}
	row := newAutoRow(name, size, cols, splits, runs, tasks)
	row.Explored = explored(rec.p, id, uint32(w.chunk))
	return row, nil
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(max(len(x), 1))
}

func minFloat(x []float64) float64 {
	m := x[0]
	for _, v := range x[1:] {
		m = min(m, v)
	}
	return m
}

// explored counts the Placer's exploration decisions (whole tasks and
// slice probes) for kernel id's tasks of items items.
func explored(p *placement.Placer, id sched.KernelID, items uint32) int {
	n := 0
	for _, d := range p.Snapshot().Decisions {
		if d.Kernel == id && d.Items == items && (d.Reason == "explore" || d.Reason == "explore-slice") {
			n++
		}
	}
	return n
}

// runAuto is kbench -auto: the regret table.
func runAuto(o *options, b *bench, rec *placeRecorder, rep *AutoReport, stdout, stderr io.Writer) error {
	load0 := loadAvg()
	start := time.Now()
	for ki, id := range o.kernels {
		for _, size := range o.sizes {
			row, err := b.measureAuto(o, rec, id, size)
			if err != nil {
				return err
			}
			rep.Rows = append(rep.Rows, row)
		}
		fmt.Fprintf(stderr, "kbench: %d/%d %s measured (%.1f s so far)\n", ki+1, len(o.kernels), b.reg.Lookup(id).Name, time.Since(start).Seconds())
	}
	rep.Load = fmt.Sprintf("%s before, %s after (1, 5, 15 min)", load0, loadAvg())
	rep.Total = autoTotal(rep.Rows, minOracleTask)
	rep.TotalAll = autoTotal(rep.Rows, 0)
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.writeTable(stdout)
}
