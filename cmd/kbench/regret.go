package main

import (
	"fmt"
	"io"
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
// minus one. A task counts as misplaced when the column it ran on
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
		perRun := r.Seconds[t.Column]
		if t.Column == devSplit {
			perRun = nearestSplit(splits, t.GPUShare)
		}
		// A task on a column that was not measured cannot be judged.
		if perRun > 0 && r.OracleSeconds > 0 && perRun > slowFactor*r.OracleSeconds {
			r.Misplaced++
		}
	}
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
	Total    AutoTotal `json:"total"`     // rows whose oracle takes >= 50 us
	TotalAll AutoTotal `json:"total_all"` // every row
}

// writeAutoTable writes the regret table: per kernel and size the
// oracle's columns, the oracle, Auto, its regret and misplaced share;
// then per kernel and in total.
func (a *AutoReport) writeTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "kbench -auto: Auto placement against the oracle (fastest of cpu-1, cpu-all, gpu+xfer, best static split)\n")
	fmt.Fprintf(&b, "machine: %s/%s, %d CPUs, GOMAXPROCS %d, GPU %s; load %s\n", a.Machine.GOOS, a.Machine.GOARCH,
		a.Machine.NumCPU, a.Machine.GOMAXPROCS, a.Machine.GPU, a.Load)
	fmt.Fprintf(&b, "mean of %d samples per column; Auto's sequence at least %d tasks, every run counted (learning included)\n\n", a.Reps, a.MinTasks)
	fmt.Fprintf(&b, "%-20s %6s %9s %9s %9s %13s | %-9s %9s | %9s %-22s %5s %7s %6s\n",
		"kernel", "size", "cpu-1", "cpu-all", "gpu+xfer", "split(gpu%)", "oracle", "time", "auto", "placed", "expl", "regret", "slow")
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
		fmt.Fprintf(&b, "%-20s %6s %9s %9s %9s %13s | %-9s %9s | %9s %-22s %5d %+6.1f%% %5.1f%%\n",
			r.Kernel, formatSize(r.Size), us(r.Seconds[devCPU1]), us(r.Seconds[devCPUAll]), us(r.Seconds[devGPUXfer]), split,
			r.Oracle, us(r.OracleSeconds), us(r.AutoSeconds/float64(max(r.Runs, 1))), strings.Join(placed, " "),
			r.Explored, 100*r.Regret(), 100*r.MisplacedShare())
	}
	fmt.Fprintf(&b, "\n(times in us per run; auto: its mean per run, learning included; placed: Auto's tasks per column;\n")
	fmt.Fprintf(&b, " expl: tasks placed to learn; slow: share of Auto's tasks on a column >10%% slower than the oracle)\n\n")
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
