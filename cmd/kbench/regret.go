package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
)

// Auto placement against an oracle (-auto).
//
// For each kernel and size the oracle is the fastest of: one core
// (cpu-1), all CPU workers (cpu-all), the GPU with transfers (gpu+xfer)
// and the best static co-execution split (the fastest of the splits swept:
// the first share of the items on the GPU, the rest on CPU workers, at
// once). Auto runs a sequence of tasks with sched.Auto through an
// placement.Placer that starts knowing nothing and learns as it goes; its
// time is the sum of every run of the sequence, learning included.
//
// Regret is Auto's time over the oracle's for the same number of runs,
// minus one. The columns are first measured in interleaved rounds (their
// means pick the candidates for the oracle: cpu-1, cpu-all, and the
// others within candidateFactor of the fastest); then Auto's sequence runs paired with
// the candidates, run by run in one process (Auto first in every other
// pair), so that the machine's load at each moment falls on Auto and on
// the oracle alike, and the oracle is the candidate with the least time
// over those paired runs. Comparing Auto's sum with a column's mean from
// other moments (rejected) leaves the load's changes between those
// moments in the regret: tens of percent per row on a machine shared with
// other processes. The whole sequence is repeated in rounds, each with a
// Placer that starts knowing nothing, and the table gives each row's
// median regret over the rounds and its spread. A task counts as misplaced when the column it ran on
// (cpu-1 for a task the Placer ran unsplit on one worker, cpu-all for CPU
// workers, gpu+xfer for the GPU, the nearest swept split for a split
// task: co-execution or a slice probing the GPU) took more than
// slowFactor times the oracle's time.

// Columns of the -auto table besides the kbench devices.
const (
	devSplit = "split" // the best static CPU/GPU split
	devAuto  = "auto"  // sched.Auto with an placement.Placer
)

// slowFactor: a task on a column this much slower than the oracle, or
// more, is misplaced.
const slowFactor = 1.1

// candidateFactor: the GPU and split columns whose mean is within this
// factor of the fastest's are run beside Auto's sequence with cpu-1 and
// cpu-all, and the oracle is the fastest of them over those paired runs.
const candidateFactor = 1.15

// splitTime is the mean time per run of one swept static split.
type splitTime struct {
	GPUShare float64 `json:"gpu_share"` // share of the items on the GPU
	Seconds  float64 `json:"seconds"`
}

// autoTask is where the Placer put one Auto task: devCPU1 (unsplit on a
// CPU worker), devCPUAll, devGPUXfer or devSplit (with the GPU's share of
// its items: co-execution, or a slice probing the GPU).
type autoTask struct {
	Column   string
	GPUShare float64
}

// AutoRow is one kernel and size of the -auto sweep.
type AutoRow struct {
	Kernel string `json:"kernel"`
	Size   int    `json:"size"`
	// Seconds is each oracle column's mean time per run (cpu-1,
	// cpu-all, gpu+xfer, and split: the best of Splits).
	Seconds map[string]float64 `json:"seconds"`
	Splits  []splitTime        `json:"splits,omitempty"`
	// Oracle is the fastest column and OracleSeconds its time per run.
	Oracle        string  `json:"oracle"`
	OracleSeconds float64 `json:"oracle_seconds"`
	// Runs is the length of Auto's sequence, Tasks its tasks (runs times
	// chunks) and AutoSeconds the sum of the runs' wall-clock times,
	// learning included.
	Runs        int     `json:"runs"`
	Tasks       int     `json:"tasks"`
	AutoSeconds float64 `json:"auto_seconds"`
	// Placed counts Auto's tasks per column; Misplaced those on a column
	// more than 10% slower than the oracle.
	Placed    map[string]int `json:"placed"`
	Misplaced int            `json:"misplaced"`
	// Explored is the number of Auto's tasks placed to learn (the
	// Placer's exploration) rather than by the model.
	Explored int `json:"explored"`
	// Paired is each oracle candidate's mean time per run over the runs
	// paired with Auto's; when set, the oracle is the fastest of them.
	Paired map[string]float64 `json:"paired,omitempty"`
	// RoundRegrets is the row's regret in each round (this row is the
	// round of the median).
	RoundRegrets []float64 `json:"round_regrets,omitempty"`
}

// setPaired makes the oracle the fastest of the candidates measured
// paired with Auto's runs (mean seconds per run), and re-judges Auto's
// tasks against it.
func (r *AutoRow) setPaired(paired map[string]float64, splits []splitTime, tasks []autoTask) {
	r.Paired = paired
	r.Oracle, r.OracleSeconds = "", math.Inf(1)
	for _, c := range []string{devCPU1, devCPUAll, devGPUXfer, devSplit} {
		if v, ok := paired[c]; ok && v > 0 && v < r.OracleSeconds {
			r.Oracle, r.OracleSeconds = c, v
		}
	}
	if r.Oracle == "" {
		r.OracleSeconds = 0
	}
	// A column measured beside Auto is judged by that measure.
	cols := maps.Clone(r.Seconds)
	for c, v := range paired {
		if c != devSplit && v > 0 {
			cols[c] = v
		}
	}
	r.Misplaced = countMisplaced(cols, splits, tasks, r.OracleSeconds)
}

// countMisplaced counts the tasks on a column more than slowFactor slower
// than oracle seconds per run (by the columns' means; a split task by the
// nearest swept split).
func countMisplaced(cols map[string]float64, splits []splitTime, tasks []autoTask, oracle float64) int {
	n := 0
	for _, t := range tasks {
		perRun := cols[t.Column]
		if t.Column == devSplit {
			perRun = nearestSplit(splits, t.GPUShare)
		}
		// A task on a column that was not measured cannot be judged.
		if perRun > 0 && oracle > 0 && perRun > slowFactor*oracle {
			n++
		}
	}
	return n
}

// OracleTotal is the oracle's time for Auto's sequence.
func (r *AutoRow) OracleTotal() float64 { return float64(r.Runs) * r.OracleSeconds }

// Regret is Auto's time over the oracle's, minus one.
func (r *AutoRow) Regret() float64 {
	if r.OracleTotal() <= 0 {
		return math.NaN()
	}
	return r.AutoSeconds/r.OracleTotal() - 1
}

// MisplacedShare is the share of Auto's tasks on a column more than 10%
// slower than the oracle.
func (r *AutoRow) MisplacedShare() float64 {
	if r.Tasks == 0 {
		return 0
	}
	return float64(r.Misplaced) / float64(r.Tasks)
}

// AutoMajority is the column most of Auto's tasks ran on.
func (r *AutoRow) AutoMajority() string {
	best, n := "", -1
	for _, c := range []string{devCPU1, devCPUAll, devGPUXfer, devSplit} {
		if r.Placed[c] > n {
			best, n = c, r.Placed[c]
		}
	}
	return best
}

// newAutoRow computes a row from the oracle's columns (mean seconds per
// run of cpu-1, cpu-all, gpu+xfer; a missing or non-positive column was
// not measured), the swept splits, the wall-clock seconds of each of
// Auto's runs and where each of its tasks was placed. A task is judged by
// its column's time per run: runs of several chunks place each chunk
// separately, and every chunk is the same work.
func newAutoRow(kernel string, size int, cols map[string]float64, splits []splitTime, runs []float64, tasks []autoTask) AutoRow {
	r := AutoRow{Kernel: kernel, Size: size, Seconds: map[string]float64{}, Splits: splits,
		Runs: len(runs), Tasks: len(tasks), Placed: map[string]int{}}
	for _, c := range []string{devCPU1, devCPUAll, devGPUXfer} {
		if v, ok := cols[c]; ok && v > 0 {
			r.Seconds[c] = v
		}
	}
	if len(splits) > 0 {
		best := slices.MinFunc(splits, func(a, b splitTime) int { return cmpFloat(a.Seconds, b.Seconds) })
		if best.Seconds > 0 {
			r.Seconds[devSplit] = best.Seconds
		}
	}
	r.Oracle, r.OracleSeconds = "", math.Inf(1)
	for _, c := range []string{devCPU1, devCPUAll, devGPUXfer, devSplit} {
		if v, ok := r.Seconds[c]; ok && v < r.OracleSeconds {
			r.Oracle, r.OracleSeconds = c, v
		}
	}
	if r.Oracle == "" {
		r.OracleSeconds = 0
	}
	for _, s := range runs {
		r.AutoSeconds += s
	}
	for _, t := range tasks {
		r.Placed[t.Column]++
	}
	r.Misplaced = countMisplaced(r.Seconds, splits, tasks, r.OracleSeconds)
	return r
}

// nearestSplit returns the time of the swept split nearest share, 0 if
// none was swept.
func nearestSplit(splits []splitTime, share float64) float64 {
	best, d := 0.0, math.Inf(1)
	for _, s := range splits {
		if e := math.Abs(s.GPUShare - share); e < d {
			best, d = s.Seconds, e
		}
	}
	return best
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AutoTotal sums rows: Auto's time over the oracle's for all their runs,
// and the share of all tasks misplaced.
type AutoTotal struct {
	Rows           int     `json:"rows"`
	AutoSeconds    float64 `json:"auto_seconds"`
	OracleSeconds  float64 `json:"oracle_seconds"`
	Regret         float64 `json:"regret"`
	Tasks          int     `json:"tasks"`
	Misplaced      int     `json:"misplaced"`
	MisplacedShare float64 `json:"misplaced_share"`
}

// autoTotal sums the rows whose oracle takes at least minSeconds per run.
func autoTotal(rows []AutoRow, minSeconds float64) AutoTotal {
	var t AutoTotal
	for i := range rows {
		r := &rows[i]
		if r.OracleSeconds < minSeconds || r.OracleSeconds <= 0 {
			continue
		}
		t.Rows++
		t.AutoSeconds += r.AutoSeconds
		t.OracleSeconds += r.OracleTotal()
		t.Tasks += r.Tasks
		t.Misplaced += r.Misplaced
	}
	if t.OracleSeconds > 0 {
		t.Regret = t.AutoSeconds/t.OracleSeconds - 1
	}
	if t.Tasks > 0 {
		t.MisplacedShare = float64(t.Misplaced) / float64(t.Tasks)
	}
	return t
}

// minOracleTask is the smallest oracle time per run that counts in the
// headline total: below it, a task is too short to place at all.
const minOracleTask = 50e-6

// AutoReport is what -auto measured; -json writes it as is.
type AutoReport struct {
	Version  string    `json:"version"`
	Machine  Machine   `json:"machine"`
	Load     string    `json:"load,omitempty"` // /proc/loadavg before and after
	Reps     int       `json:"reps"`
	MinTasks int       `json:"min_tasks"`
	Rows     []AutoRow `json:"rows"`
	Total    AutoTotal `json:"total"`     // the rows shown (each its median round's) whose oracle takes >= 50 us
	TotalAll AutoTotal `json:"total_all"` // every row shown
	// RoundTotals is each round's total over its rows whose oracle takes
	// >= 50 us.
	RoundTotals []AutoTotal `json:"round_totals"`
	// RoundRows holds every round's rows (Rows has each row's median
	// round).
	RoundRows [][]AutoRow `json:"round_rows,omitempty"`
}

// roundSpread returns the median, least and greatest of the rounds'
// total regrets.
func (a *AutoReport) roundSpread() (med, lo, hi float64) {
	var v []float64
	for _, t := range a.RoundTotals {
		v = append(v, t.Regret)
	}
	if len(v) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	slices.Sort(v)
	return v[(len(v)-1)/2], v[0], v[len(v)-1]
}

// regretSpread formats the least and greatest of regrets as percentages.
func regretSpread(regrets []float64) string {
	if len(regrets) < 2 {
		return "-"
	}
	return fmt.Sprintf("%+.1f..%+.1f", 100*slices.Min(regrets), 100*slices.Max(regrets))
}

// writeAutoTable writes the regret table: per kernel and size the
// oracle's columns, the oracle, Auto, its regret and misplaced share;
// then per kernel and in total.
func (a *AutoReport) writeTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "kbench -auto: Auto placement against the oracle (fastest of cpu-1, cpu-all, gpu+xfer, best static split)\n")
	fmt.Fprintf(&b, "machine: %s/%s, %d CPUs, GOMAXPROCS %d, GPU %s; load %s\n", a.Machine.GOOS, a.Machine.GOARCH,
		a.Machine.NumCPU, a.Machine.GOMAXPROCS, a.Machine.GPU, a.Load)
	fmt.Fprintf(&b, "columns: mean of %d samples; Auto: %d runs, every run counted (learning included), each paired with a run of the oracle's candidates (columns within %.0f%% of the fastest); %d rounds, each with a fresh Placer\n\n",
		a.Reps, a.MinTasks, 100*(candidateFactor-1), len(a.RoundTotals))
	fmt.Fprintf(&b, "%-20s %6s %9s %9s %9s %13s | %-9s %9s | %9s %-22s %5s %7s %6s %13s\n",
		"kernel", "size", "cpu-1", "cpu-all", "gpu+xfer", "split(gpu%)", "oracle", "time", "auto", "placed", "expl", "regret", "slow", "rounds")
	us := func(s float64) string {
		if s <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", s*1e6)
	}
	for i := range a.Rows {
		r := &a.Rows[i]
		split := "-"
		if v := r.Seconds[devSplit]; v > 0 {
			best := slices.MinFunc(r.Splits, func(x, y splitTime) int { return cmpFloat(x.Seconds, y.Seconds) })
			split = fmt.Sprintf("%s(%.0f)", us(v), best.GPUShare*100)
		}
		var placed []string
		for _, c := range []string{devCPU1, devCPUAll, devGPUXfer, devSplit} {
			if n := r.Placed[c]; n > 0 {
				placed = append(placed, fmt.Sprintf("%s:%d", shortCol(c), n))
			}
		}
		fmt.Fprintf(&b, "%-20s %6s %9s %9s %9s %13s | %-9s %9s | %9s %-22s %5d %+6.1f%% %5.1f%% %13s\n",
			r.Kernel, formatSize(r.Size), us(r.Seconds[devCPU1]), us(r.Seconds[devCPUAll]), us(r.Seconds[devGPUXfer]), split,
			r.Oracle, us(r.OracleSeconds), us(r.AutoSeconds/float64(max(r.Runs, 1))), strings.Join(placed, " "),
			r.Explored, 100*r.Regret(), 100*r.MisplacedShare(), regretSpread(r.RoundRegrets))
	}
	fmt.Fprintf(&b, "\n(times in us per run; oracle, time: the fastest candidate over the runs paired with Auto's; auto: its mean per run,\n")
	fmt.Fprintf(&b, " learning included; placed: Auto's tasks per column; expl: tasks placed to learn; slow: share of Auto's tasks on a\n")
	fmt.Fprintf(&b, " column >10%% slower than the oracle; each row is its median round's, rounds: the least and greatest regret, %%)\n\n")
	names := []string{}
	for i := range a.Rows {
		if !slices.Contains(names, a.Rows[i].Kernel) {
			names = append(names, a.Rows[i].Kernel)
		}
	}
	fmt.Fprintf(&b, "%-20s %5s %12s %12s %8s %7s\n", "per kernel (>=50us)", "rows", "auto s", "oracle s", "regret", "slow")
	for _, n := range names {
		var rows []AutoRow
		for i := range a.Rows {
			if a.Rows[i].Kernel == n {
				rows = append(rows, a.Rows[i])
			}
		}
		t := autoTotal(rows, minOracleTask)
		if t.Rows == 0 {
			fmt.Fprintf(&b, "%-20s %5d %12s %12s %8s %7s\n", n, 0, "-", "-", "-", "-")
			continue
		}
		fmt.Fprintf(&b, "%-20s %5d %12.4f %12.4f %+7.1f%% %6.1f%%\n", n, t.Rows, t.AutoSeconds, t.OracleSeconds, 100*t.Regret, 100*t.MisplacedShare)
	}
	for _, t := range []struct {
		name string
		t    AutoTotal
	}{{"total (>=50us)", a.Total}, {"total (all rows)", a.TotalAll}} {
		fmt.Fprintf(&b, "%-20s %5d %12.4f %12.4f %+7.1f%% %6.1f%%\n", t.name, t.t.Rows, t.t.AutoSeconds, t.t.OracleSeconds, 100*t.t.Regret, 100*t.t.MisplacedShare)
	}
	if med, lo, hi := a.roundSpread(); len(a.RoundTotals) > 0 {
		fmt.Fprintf(&b, "%-20s %5s %12s %12s %+7.1f%%  (rounds %+.1f..%+.1f%%)\n", "rounds' total (>=50us)", "", "", "", 100*med, 100*lo, 100*hi)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func shortCol(c string) string {
	switch c {
	case devCPUAll:
		return "cpu"
	case devGPUXfer:
		return "gpu"
	case devCPU1:
		return "cpu1"
	}
	return c
}
