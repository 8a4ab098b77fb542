package main

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/affinity/placement"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestAutoRowOracleIsFastestColumnOrSplit: the oracle is the fastest of
// cpu-1, cpu-all, gpu+xfer and the best swept split.
func TestAutoRowOracleIsFastestColumnOrSplit(t *testing.T) {
	cols := map[string]float64{devCPU1: 4e-3, devCPUAll: 2e-3, devGPUXfer: 3e-3}
	splits := []splitTime{{0.25, 2.5e-3}, {0.5, 1.5e-3}, {0.75, 2.2e-3}}
	r := newAutoRow("k", 1000, cols, splits, nil, nil)
	if r.Oracle != devSplit || !near(r.OracleSeconds, 1.5e-3) || !near(r.Seconds[devSplit], 1.5e-3) {
		t.Fatalf("oracle %s %g, split column %g: want split 1.5e-3", r.Oracle, r.OracleSeconds, r.Seconds[devSplit])
	}
	r = newAutoRow("k", 1000, cols, nil, nil, nil)
	if r.Oracle != devCPUAll || !near(r.OracleSeconds, 2e-3) {
		t.Fatalf("without splits: oracle %s %g, want cpu-all 2e-3", r.Oracle, r.OracleSeconds)
	}
	// An unmeasured column (0) is not the oracle.
	r = newAutoRow("k", 1000, map[string]float64{devCPU1: 0, devCPUAll: 5e-3, devGPUXfer: 6e-3}, nil, nil, nil)
	if r.Oracle != devCPUAll {
		t.Fatalf("oracle %s: an unmeasured column won", r.Oracle)
	}
}

// TestAutoRowRegretCountsLearningRuns: Auto's time is the sum of all its
// runs (the slow learning runs included) over the oracle's time for as
// many runs; misplaced tasks are those on a column >10% slower than the
// oracle.
func TestAutoRowRegretCountsLearningRuns(t *testing.T) {
	cols := map[string]float64{devCPU1: 1.5e-3, devCPUAll: 1e-3, devGPUXfer: 10e-3}
	var runs []float64
	var tasks []autoTask
	// 2 learning runs on the GPU (10 ms), 98 on the CPU workers (1 ms).
	for i := range 100 {
		if i < 2 {
			runs = append(runs, 10e-3)
			tasks = append(tasks, autoTask{Column: devGPUXfer})
		} else {
			runs = append(runs, 1e-3)
			tasks = append(tasks, autoTask{Column: devCPUAll})
		}
	}
	r := newAutoRow("k", 1e6, cols, nil, runs, tasks)
	// (2*10 + 98*1) / (100*1) - 1 = 0.18.
	if !near(r.AutoSeconds, 0.118) || !near(r.OracleTotal(), 0.1) || !near(r.Regret(), 0.18) {
		t.Fatalf("auto %g s, oracle %g s, regret %g: want 0.118, 0.1, 0.18", r.AutoSeconds, r.OracleTotal(), r.Regret())
	}
	if r.Misplaced != 2 || !near(r.MisplacedShare(), 0.02) {
		t.Fatalf("misplaced %d (%g): want 2 (0.02)", r.Misplaced, r.MisplacedShare())
	}
	if r.Placed[devGPUXfer] != 2 || r.Placed[devCPUAll] != 98 || r.AutoMajority() != devCPUAll {
		t.Fatalf("placed %v, majority %s", r.Placed, r.AutoMajority())
	}
}

// TestAutoRowMisplacedThreshold: a column exactly 10% slower than the
// oracle is not misplaced, one just above is; co-executed tasks are judged
// by the nearest swept split.
func TestAutoRowMisplacedThreshold(t *testing.T) {
	cols := map[string]float64{devCPU1: 1.1e-3, devCPUAll: 1.1000001e-3, devGPUXfer: 1e-3}
	splits := []splitTime{{0.25, 1.05e-3}, {0.75, 2e-3}}
	tasks := []autoTask{{Column: devGPUXfer}, {Column: devCPUAll}, {Column: devSplit, GPUShare: 0.3}, {Column: devSplit, GPUShare: 0.7}}
	r := newAutoRow("k", 1, cols, splits, []float64{1e-3, 1e-3, 1e-3, 1e-3}, tasks)
	if r.Oracle != devGPUXfer {
		t.Fatalf("oracle %s", r.Oracle)
	}
	// cpu-all (just over 1.1x) and the 0.7 split (nearest 0.75: 2x).
	if r.Misplaced != 2 {
		t.Fatalf("misplaced %d, want 2", r.Misplaced)
	}
}

// TestAutoTotalWeighsByTime: the total regret is total time over total
// oracle time (long rows weigh more), over rows whose oracle run takes at
// least the threshold.
func TestAutoTotalWeighsByTime(t *testing.T) {
	rows := []AutoRow{
		{OracleSeconds: 1e-3, Runs: 100, AutoSeconds: 0.2, Tasks: 100, Misplaced: 10},  // regret 1.0
		{OracleSeconds: 1e-2, Runs: 100, AutoSeconds: 1.0, Tasks: 100},                 // regret 0
		{OracleSeconds: 1e-6, Runs: 100, AutoSeconds: 1.0, Tasks: 100, Misplaced: 100}, // below 50 us
	}
	tot := autoTotal(rows, minOracleTask)
	// (0.2 + 1.0) / (0.1 + 1.0) - 1.
	if tot.Rows != 2 || !near(tot.Regret, 1.2/1.1-1) || tot.Tasks != 200 || !near(tot.MisplacedShare, 0.05) {
		t.Fatalf("total %+v", tot)
	}
	all := autoTotal(rows, 0)
	if all.Rows != 3 || !near(all.Regret, 2.2/(1.1+1e-4)-1) {
		t.Fatalf("total of all rows %+v", all)
	}
}

// TestAutoTableShowsRegret: the table prints each row's oracle, Auto's
// placements, the regret and the totals.
func TestAutoTableShowsRegret(t *testing.T) {
	cols := map[string]float64{devCPU1: 2e-3, devCPUAll: 1e-3, devGPUXfer: 3e-3}
	r := newAutoRow("saxpy", 1000000, cols, nil, []float64{1.1e-3, 1.1e-3}, []autoTask{{Column: devCPUAll}, {Column: devCPUAll}})
	a := &AutoReport{Reps: 5, MinTasks: 2, Rows: []AutoRow{r}}
	a.Total, a.TotalAll = autoTotal(a.Rows, minOracleTask), autoTotal(a.Rows, 0)
	var buf bytes.Buffer
	if err := a.writeTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"saxpy", "cpu-all", "cpu:2", "+10.0%", "total (>=50us)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestAutoAndAdaptFlags: -auto and -adapt reject the flags they do not
// combine with, and -trace and -timeline belong to -adapt.
func TestAutoAndAdaptFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"-auto", "-csv"}, {"-auto", "-cpu-only"}, {"-auto", "-adapt"}, {"-auto", "-auto-tasks", "0"}, {"-auto", "-auto-rounds", "0"},
		{"-adapt", "-json"}, {"-adapt", "-adapt-load", "disk"}, {"-adapt", "-adapt-tasks", "10"},
		{"-trace", "x.json"}, {"-auto", "-timeline", "x.svg"},
	} {
		var stderr bytes.Buffer
		if o, code := parseFlags(bad, &stderr); o != nil || code != exitUsage {
			t.Errorf("%v: accepted (status %d)", bad, code)
		}
	}
	o, code := parseFlags([]string{"-adapt", "-adapt-load", "gpu", "-reprobe", "20", "-trace", "x.json"}, &bytes.Buffer{})
	if o == nil || code != exitOK || !o.adapt || o.adaptLoad != "gpu" || o.reprobe != 20 || o.trace != "x.json" {
		t.Fatalf("-adapt flags: %+v, status %d", o, code)
	}
	o, _ = parseFlags([]string{"-auto"}, &bytes.Buffer{})
	if o == nil || !o.auto || o.autoTasks != 200 || o.autoRounds != 3 || o.exploreBudget != 0 {
		t.Fatalf("-auto defaults: %+v", o)
	}
}

// TestAutoRowOneCoreJudgedByCPU1: a task the Placer ran on one core
// counts under cpu-1, and is misplaced only if cpu-1 is slow; the
// recorder tells one core from the workers by the grain the Placer set.
func TestAutoRowOneCoreJudgedByCPU1(t *testing.T) {
	cols := map[string]float64{devCPU1: 1e-3, devCPUAll: 1.5e-3, devGPUXfer: 10e-3}
	tasks := []autoTask{
		placed{where: sched.AnyWorker, oneCore: true}.task(),
		placed{where: sched.AnyWorker}.task(),
		placed{where: sched.AnyWorker, oneCore: true}.task(),
	}
	r := newAutoRow("k", 1, cols, nil, []float64{1e-3, 1.5e-3, 1e-3}, tasks)
	if r.Placed[devCPU1] != 2 || r.Placed[devCPUAll] != 1 || r.AutoMajority() != devCPU1 || r.Misplaced != 1 {
		t.Fatalf("placed %v, majority %s, misplaced %d: want 2 on cpu-1, 1 on cpu-all (misplaced)", r.Placed, r.AutoMajority(), r.Misplaced)
	}

	p := placement.New(placement.Options{OneCore: true, CPUThreads: 2})
	rec := newPlaceRecorder(p)
	k := &sched.Kernel{Name: "k", Kind: sched.Streaming, Grain: 64, GPU: &bind.Binding{}}
	one := 0
	for range 40 {
		d := sched.TaskData{Begin: 0, End: 4096, Elements: 4096}
		if where, split := rec.Place(1, k, &d); where == sched.AnyWorker && split == 0 {
			// What the scheduler will do: one piece if the grain covers it.
			if got, want := rec.list[len(rec.list)-1].oneCore, d.Grain >= 4096; got != want {
				t.Fatalf("recorded one core %v, grain %d of 4096 items", got, d.Grain)
			}
		}
		if rec.list[len(rec.list)-1].oneCore {
			one++
		}
	}
	if one == 0 || one == 40 {
		t.Fatalf("%d of 40 placements on one core: the Placer explores both", one)
	}
}

// TestPairRunsRotatesPlaces: each of Auto and the candidates runs once per
// step, and takes every place in a step equally often.
func TestPairRunsRotatesPlaces(t *testing.T) {
	const n = 12
	var order []int // participant per run: 0 Auto, i the i-th candidate
	autoCalls := []int{}
	auto := func(i int) (float64, error) {
		order = append(order, 0)
		autoCalls = append(autoCalls, i)
		return 1, nil
	}
	cands := []func() (float64, error){
		func() (float64, error) { order = append(order, 1); return 2, nil },
		func() (float64, error) { order = append(order, 2); return 3, nil },
	}
	a, sums, err := pairRuns(n, auto, cands)
	if err != nil || a != n || !slices.Equal(sums, []float64{2 * n, 3 * n}) {
		t.Fatalf("sums %v %v, %v", a, sums, err)
	}
	for i, c := range autoCalls {
		if c != i {
			t.Fatalf("Auto's runs numbered %v", autoCalls)
		}
	}
	var places [3][3]int // participant x place in its step
	for i, who := range order {
		places[who][i%3]++
	}
	for who := range places {
		for place, c := range places[who] {
			if c != n/3 {
				t.Fatalf("participant %d took place %d %d times, want %d: %v", who, place, c, n/3, order)
			}
		}
	}
	// An error stops the runs.
	bad := errors.New("bad")
	if _, _, err := pairRuns(n, auto, []func() (float64, error){func() (float64, error) { return 0, bad }}); !errors.Is(err, bad) {
		t.Fatalf("error %v", err)
	}
}

// TestPairedRegretCancelsLoad: an Auto that runs exactly as the oracle's
// column, on a machine whose load changes from run to run (bursts that
// slow everything 3x for a while), shows no regret when paired run by
// run; its sum against the column's mean from other moments shows the
// load instead.
func TestPairedRegretCancelsLoad(t *testing.T) {
	// The load: 3x slower in bursts of about 10 runs, about half the
	// time, switching at random (seeded) moments.
	r := rand.New(rand.NewPCG(1, 2))
	busy := false
	load := func() float64 {
		if r.IntN(10) == 0 {
			busy = !busy
		}
		if busy {
			return 3
		}
		return 1
	}
	const base = 1e-3
	auto := func(int) (float64, error) { return base * load(), nil }
	cand := func() (float64, error) { return base * load(), nil }
	const n = 2000
	a, sums, err := pairRuns(n, auto, []func() (float64, error){cand})
	if err != nil {
		t.Fatal(err)
	}
	if r := a/sums[0] - 1; math.Abs(r) > 0.05 {
		t.Fatalf("paired regret %+.1f%% for an Auto that is the oracle", 100*r)
	} else {
		t.Logf("paired regret %+.2f%%", 100*r)
	}
	// The column's mean over a quiet stretch, as a sample taken at
	// another moment would be: the load shows as regret.
	busy = false
	quiet := 0.0
	for range 5 {
		quiet += base * load()
	}
	if r := a/(n*quiet/5) - 1; r < 0.5 {
		t.Fatalf("unpaired regret %+.1f%%: the load should show", 100*r)
	}
}

// TestAutoRowPairedOracle: with paired measures, the oracle is the
// fastest of them (not of the columns' means), regret is Auto's sum over
// the oracle's paired time, and a task is judged by its column's paired
// time.
func TestAutoRowPairedOracle(t *testing.T) {
	// By the means, cpu-1 wins; measured beside Auto, cpu-all does.
	cols := map[string]float64{devCPU1: 1e-3, devCPUAll: 1.3e-3, devGPUXfer: 20e-3}
	tasks := []autoTask{{Column: devCPUAll}, {Column: devCPUAll}, {Column: devCPU1}, {Column: devCPUAll}}
	r := newAutoRow("k", 1, cols, nil, []float64{0.9e-3, 0.9e-3, 1.2e-3, 0.9e-3}, tasks)
	r.setPaired(map[string]float64{devCPU1: 1.2e-3, devCPUAll: 0.9e-3}, nil, tasks)
	if r.Oracle != devCPUAll || !near(r.OracleSeconds, 0.9e-3) {
		t.Fatalf("oracle %s %g, want cpu-all 0.9e-3", r.Oracle, r.OracleSeconds)
	}
	if !near(r.Regret(), 3.9/3.6-1) {
		t.Fatalf("regret %g, want %g", r.Regret(), 3.9/3.6-1)
	}
	// cpu-1 is 1.33x the oracle by its paired time: one misplaced task.
	if r.Misplaced != 1 {
		t.Fatalf("misplaced %d, want 1", r.Misplaced)
	}
}
