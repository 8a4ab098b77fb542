package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
// oracle's columns, and a sched.Observer that passes the scheduler's
// events on to that Placer. The Placer can be replaced between rounds
// (reset): an executor's late report of an earlier round's task reaches
// the new one, which tracks nothing of it.
type placeRecorder struct {
	cur  atomic.Pointer[placement.Placer]
	mu   sync.Mutex
	list []placed
}

func newPlaceRecorder(p *placement.Placer) *placeRecorder {
	r := &placeRecorder{}
	r.cur.Store(p)
	return r
}

// placer returns the Placer in use.
func (r *placeRecorder) placer() *placement.Placer { return r.cur.Load() }

// reset makes p, attached to s, the Placer in use.
func (r *placeRecorder) reset(p *placement.Placer, s *sched.Scheduler) {
	p.Attach(s)
	r.cur.Store(p)
}

// TaskRan implements sched.Observer for the Placer in use.
func (r *placeRecorder) TaskRan(ev *sched.RunEvent) { r.placer().TaskRan(ev) }

func (r *placeRecorder) Place(id sched.KernelID, k *sched.Kernel, d *sched.TaskData) (sched.Affinity, uint32) {
	grain := d.Grain
	where, split := r.placer().Place(id, k, d)
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

// newAutoPlacer returns the Placer -auto measures: the library's defaults
// (but budget, the ExploreBudget, when not 0), SharedCores when the
// Vulkan device computes on the host's cores (as package placement
// recommends), OneCore because the oracle counts one core (cpu-1) as a
// choice, and a decision history long enough to count a sweep's
// exploration.
func newAutoPlacer(dev *gpu.Device, budget float64) *placement.Placer {
	shared := dev != nil && dev.Selection().Chosen.Type == gpu.TypeCPU
	return placement.New(placement.Options{SharedCores: shared, OneCore: true, History: 1 << 17, ExploreBudget: budget})
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

// autoCols is what the first round measured of one kernel and size: the
// columns' means (cpu-1, cpu-all, gpu+xfer) and the swept splits.
type autoCols struct {
	cols   map[string]float64
	splits []splitTime
}

// columnOps returns the oracle's columns for w: cpu-1, cpu-all, gpu+xfer,
// then the splits swept (for a streaming kernel of two chunks or more
// items).
func (b *bench) columnOps(w *workload) []op {
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
	return ops
}

// measureColumns measures the oracle's columns for w in interleaved
// rounds (each sample after a collection), checking each column's output
// once against cpu-1's.
func (b *bench) measureColumns(o *options, w *workload, ops []op, failed func(string, error) error) (autoCols, error) {
	if _, _, err := ops[0].run(); err != nil {
		return autoCols{}, failed(devCPU1, err)
	}
	want := snapshot(w)
	for _, op := range ops[1:] {
		poison(w)
		if _, _, err := op.run(); err != nil {
			return autoCols{}, failed(op.name, err)
		}
		if err := compare(w, op.name, want, views(w)); err != nil {
			return autoCols{}, failed(op.name, err)
		}
	}
	ks := make([]int, len(ops))
	for i, op := range ops {
		_, d, err := op.run()
		if err != nil {
			return autoCols{}, failed(op.name, err)
		}
		ks[i] = 1
		if d < o.minSample {
			ks[i] = int(min(int64(o.minSample/max(d, time.Microsecond))+1, 1<<20))
		}
	}
	samples := make([][]float64, len(ops))
	for range o.reps {
		for i, op := range ops {
			runtime.GC()
			var sum time.Duration
			for range ks[i] {
				c, _, err := op.run()
				if err != nil {
					return autoCols{}, failed(op.name, err)
				}
				sum += c
			}
			samples[i] = append(samples[i], sum.Seconds()/float64(ks[i]))
		}
	}
	ac := autoCols{cols: map[string]float64{}}
	for i, op := range ops {
		// The mean: Auto's time is a sum over its runs.
		m := mean(samples[i])
		if o.best {
			m = minFloat(samples[i])
		}
		if i < 3 {
			ac.cols[op.name] = m
		} else {
			ac.splits = append(ac.splits, splitTime{GPUShare: splitShares[i-3], Seconds: m})
		}
	}
	return ac, nil
}

// pairRuns runs auto n times (auto(i) is its i-th run), each paired with
// one run of every candidate, and returns the sums of their times. At
// step i the participants (Auto, then the candidates) run in turn from
// the (i mod k)-th of the k, so that each takes every place in a pair
// equally often: what one run leaves behind for the next (caches, the
// software GPU's threads winding down) and the machine's load at the
// moment fall on Auto and on the candidates alike.
func pairRuns(n int, auto func(i int) (float64, error), cands []func() (float64, error)) (autoSum float64, candSums []float64, err error) {
	candSums = make([]float64, len(cands))
	k := 1 + len(cands)
	for i := range n {
		for j := range k {
			switch p := (i + j) % k; p {
			case 0:
				d, err := auto(i)
				if err != nil {
					return 0, nil, err
				}
				autoSum += d
			default:
				d, err := cands[p-1]()
				if err != nil {
					return 0, nil, err
				}
				candSums[p-1] += d
			}
		}
	}
	return autoSum, candSums, nil
}

// measureAuto measures kernel id at size for the -auto table: with ac
// nil, first the oracle's columns (returned for the later rounds); then
// Auto's sequence of -auto-tasks runs through rec's Placer, each run
// paired with one run of every oracle candidate (the columns within
// candidateFactor of the fastest), Auto first in every other pair. Auto's
// first run is checked against cpu-1's output (it counts: it is the
// start of Auto's sequence).
func (b *bench) measureAuto(o *options, rec *placeRecorder, id sched.KernelID, size int, ac *autoCols) (AutoRow, *autoCols, error) {
	name := b.reg.Lookup(id).Name
	w, err := newWorkload(b.reg, id, size)
	if err != nil {
		return AutoRow{}, nil, err
	}
	failed := func(dev string, err error) error {
		return fmt.Errorf("%s, size %s, %s: %w", name, formatSize(size), dev, err)
	}
	ops := b.columnOps(w)
	if ac == nil {
		c, err := b.measureColumns(o, w, ops, failed)
		if err != nil {
			return AutoRow{}, nil, err
		}
		ac = &c
	}
	// The candidates: one core and the workers always (cheap, and on a
	// loaded machine often within the noise of each other's means), the
	// GPU and the splits when their means are within candidateFactor of
	// the fastest's.
	fastest := math.Inf(1)
	for _, v := range ac.cols {
		if v > 0 {
			fastest = min(fastest, v)
		}
	}
	for _, sp := range ac.splits {
		if sp.Seconds > 0 {
			fastest = min(fastest, sp.Seconds)
		}
	}
	var cands []op
	var candCol []string
	for i, op := range ops {
		v, col := ac.cols[op.name], op.name
		if i >= 3 {
			v, col = ac.splits[i-3].Seconds, devSplit
		}
		if col == devCPU1 || col == devCPUAll || v > 0 && v <= candidateFactor*fastest {
			cands = append(cands, op)
			candCol = append(candCol, col)
		}
	}

	var runs []float64
	var tasks []autoTask
	rec.take()
	var want [][]byte
	auto := func(i int) (float64, error) {
		if i == 0 {
			// Auto's first run, checked against cpu-1's output.
			if _, _, err := ops[0].run(); err != nil {
				return 0, failed(devCPU1, err)
			}
			want = snapshot(w)
			poison(w)
		}
		t0 := time.Now()
		err := b.runTasks(w, sched.Auto, nil)
		d := time.Since(t0).Seconds()
		runs = append(runs, d)
		for _, p := range rec.take() {
			tasks = append(tasks, p.task())
		}
		if err != nil {
			return 0, failed(devAuto, err)
		}
		if i == 0 {
			err = compare(w, devAuto, want, views(w))
			want = nil
			if err != nil {
				return 0, failed(devAuto, err)
			}
		}
		return d, nil
	}
	candRuns := make([]func() (float64, error), len(cands))
	for i, op := range cands {
		candRuns[i] = func() (float64, error) {
			c, _, err := op.run()
			if err != nil {
				return 0, failed(op.name, err)
			}
			return c.Seconds(), nil
		}
	}
	runtime.GC()
	_, sums, err := pairRuns(o.autoTasks, auto, candRuns)
	if err != nil {
		return AutoRow{}, nil, err
	}
	row := newAutoRow(name, size, ac.cols, ac.splits, runs, tasks)
	paired := map[string]float64{}
	for i, col := range candCol {
		v := sums[i] / float64(len(runs))
		if old, ok := paired[col]; !ok || v < old {
			paired[col] = v // of the splits, the fastest
		}
	}
	row.setPaired(paired, ac.splits, tasks)
	row.Explored = explored(rec.placer(), id, uint32(w.chunk))
	return row, ac, nil
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

// runAuto is kbench -auto: the regret table. Each of -auto-rounds
// rounds runs the sweep with a Placer that starts knowing nothing (the
// columns are measured in the first); each row is that of the round with
// the median regret, with every round's regret, and the totals are the
// median round's with the spread.
func runAuto(o *options, b *bench, rec *placeRecorder, rep *AutoReport, stdout, stderr io.Writer) error {
	load0 := loadAvg()
	start := time.Now()
	type key struct {
		id   sched.KernelID
		size int
	}
	cols := map[key]*autoCols{}
	var rounds [][]AutoRow
	for round := range o.autoRounds {
		if round > 0 {
			rec.reset(newAutoPlacer(b.dev, o.exploreBudget), b.s)
		}
		var rows []AutoRow
		for _, id := range o.kernels {
			for _, size := range o.sizes {
				row, ac, err := b.measureAuto(o, rec, id, size, cols[key{id, size}])
				if err != nil {
					return err
				}
				cols[key{id, size}] = ac
				rows = append(rows, row)
			}
		}
		rounds = append(rounds, rows)
		t := autoTotal(rows, minOracleTask)
		rep.RoundTotals = append(rep.RoundTotals, t)
		fmt.Fprintf(stderr, "kbench: round %d/%d: regret %+.1f%% over %d rows >= 50us (%.1f s so far, load %s)\n",
			round+1, o.autoRounds, 100*t.Regret, t.Rows, time.Since(start).Seconds(), loadAvg())
	}
	for i := range rounds[0] {
		var regs []float64
		for _, rows := range rounds {
			regs = append(regs, rows[i].Regret())
		}
		// The round of the median regret (of an even count, the lower).
		order := make([]int, len(rounds))
		for r := range order {
			order[r] = r
		}
		slices.SortFunc(order, func(a, b int) int { return cmpFloat(regs[a], regs[b]) })
		row := rounds[order[(len(order)-1)/2]][i]
		row.RoundRegrets = regs
		rep.Rows = append(rep.Rows, row)
	}
	rep.RoundRows = rounds
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
