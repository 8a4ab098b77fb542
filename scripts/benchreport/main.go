// Command benchreport keeps the results of `make benchmarks` as data and
// generates BENCHMARKS.md's tables from them.
//
//	benchreport record -in RAW -dir benchmarks/results -commit C -set '...' [...]
//	benchreport md -dir benchmarks/results -md BENCHMARKS.md
//
// record reads `go test -bench` output (COUNT rounds of the same
// benchmarks, appended) and writes one JSON results file for the run: the
// commit and whether the tree was dirty, the machine, the Go version, the
// date, the load average before and after, the command, and per benchmark
// per variant the median, minimum and maximum of each metric over the
// rounds, with the variant's ratio to the reference variant of its group
// (the peer it is compared with) taken round by round, so that every
// ratio pairs two figures of the same round.
//
// md picks the latest clean results file (by its date; files of a dirty
// tree are never used, and one named with -results is refused) and
// replaces the text between each "<!-- begin generated NAME -->" and
// "<!-- end generated NAME -->" pair of lines: NAME "run" gets the run's
// header (machine, date, commit, load, command), every other NAME the
// tables of that area (sched, kernels, render, anim: the first element of
// the package's path in the module). Everything outside those blocks,
// the hand-written method of each area included, is kept byte for byte.
//
// scripts/benchmarks.sh (make benchmarks) runs the benchmarks and both
// steps.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// schemaVersion is the results files' "schema"; bump it when a field
// changes meaning.
const schemaVersion = 1

// Results is one run of `make benchmarks`: one file in benchmarks/results.
type Results struct {
	Schema     int         `json:"schema"`
	Commit     string      `json:"commit"`
	Dirty      bool        `json:"dirty"`
	DirtyPaths []string    `json:"dirty_paths,omitempty"`
	Date       time.Time   `json:"date"` // the start of the run, UTC
	Seconds    float64     `json:"duration_s"`
	Machine    Machine     `json:"machine"`
	Go         string      `json:"go"`
	LoadBefore []float64   `json:"load_before"` // 1, 5 and 15 minute averages
	LoadAfter  []float64   `json:"load_after"`
	Command    string      `json:"command"`
	Count      int         `json:"count"` // rounds
	Sets       []Set       `json:"sets"`
	Benchmarks []Benchmark `json:"benchmarks"`
}

// Machine is where the run took place.
type Machine struct {
	CPU         string  `json:"cpu"`
	LogicalCPUs int     `json:"logical_cpus"`
	MemoryGiB   float64 `json:"memory_gib"`
	Kernel      string  `json:"kernel"`
}

// Set is one `go test` invocation of the run.
type Set struct {
	Pkg       string   `json:"pkg"`       // as given to go test: ./sched/
	Benchtime string   `json:"benchtime"` // -benchtime
	Mode      string   `json:"mode"`      // "rounds": a process per round; "once": one process, -count COUNT
	Names     []string `json:"names"`     // the top-level benchmarks asked for
	Missing   []string `json:"missing,omitempty"`
}

// Benchmark is a group of variants compared with each other: the
// sub-benchmarks of one benchmark that differ only in the variant.
type Benchmark struct {
	Pkg       string    `json:"pkg"`       // import path
	Area      string    `json:"area"`      // sched, kernels, render, anim
	Group     string    `json:"group"`     // "ParallelFor/1M"
	Reference string    `json:"reference"` // the variant the ratios are to
	RatioUnit string    `json:"ratio_unit"`
	Variants  []Variant `json:"variants"`
}

// Variant is one sub-benchmark's figures over the rounds.
type Variant struct {
	Name    string   `json:"name"`
	Bench   string   `json:"bench"` // the full name, without "Benchmark" and -GOMAXPROCS
	Runs    int      `json:"runs"`
	Metrics []Metric `json:"metrics"`
	// Ratio is this variant's RatioUnit over the reference's, per round
	// (the i-th value of each), then summarised; nil without pairs.
	Ratio *Spread `json:"ratio,omitempty"`
}

// Metric is one unit's values, one per round, and their summary.
type Metric struct {
	Unit   string    `json:"unit"`
	Values []float64 `json:"values"`
	Spread
}

// Spread is a median with the range it came from.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func (v *Variant) metric(unit string) *Metric {
	for i := range v.Metrics {
		if v.Metrics[i].Unit == unit {
			return &v.Metrics[i]
		}
	}
	return nil
}

// rule says how a benchmark's sub-benchmarks form groups: which element
// of the name after the benchmark's own is the variant (-1: the last),
// which variant is the reference and which unit the ratio compares.
type rule struct {
	variantAt int
	ref       string
	unit      string
	inOp      bool // measures its variants inside every op, as a Mix does
}

// rules for the benchmarks whose variant is not the last element or
// whose reference is not "sched"; any other benchmark gets defaultRule
// (reference "sched", or the first variant where none is called so).
var rules = map[string]rule{
	"PeersFib":       {variantAt: 0, ref: "sched"},                        // PeersFib/waitgroup/p2
	"GraphReplay":    {variantAt: -1, ref: "dynamic"},                     // GraphReplay/dag/graph
	"TaskflowShapes": {variantAt: -1, ref: "dynamic"},                     // TaskflowShapes/wavefront/graph
	"MergeSort":      {variantAt: -1, ref: "merge-n-sort"},                // MergeSort/SortStableFunc
	"Sample":         {variantAt: 0, ref: "cm=0.01", unit: "cpu-ns/bone"}, // Sample/uniform-cm=0.01/seek/goroutines=1
	"GraphSegment":   {inOp: true},                                        // GraphSegment/nodes=8: dynamic, rerecord, replay, floor in each op
}

var defaultRule = rule{variantAt: -1, ref: "sched"}

// split splits a benchmark name into its group and variant by the rule of
// the benchmark: "ParallelFor/1M/sched" -> "ParallelFor/1M", "sched";
// "PeersFib/sched/p1" -> "PeersFib/p1", "sched". A name without a slash is
// its own group and variant.
//
// A benchmark without sub-benchmarks, one whose name ends in "Mix", or one
// whose rule says inOp, measures its peers inside every op and reports their ratios as metrics
// (sched/chanpool, dqs/lbs): each of its sub-benchmarks is a group of
// one, its variant "".
func split(name string) (group, variant string, r rule) {
	parts := strings.Split(name, "/")
	r, ok := rules[parts[0]]
	if !ok {
		r = defaultRule
	}
	if r.unit == "" {
		r.unit = "ns/op"
	}
	if len(parts) == 1 || strings.HasSuffix(parts[0], "Mix") || r.inOp {
		return name, "", r
	}
	sub := parts[1:]
	i := r.variantAt
	if i < 0 || i >= len(sub) {
		i = len(sub) - 1
	}
	variant = sub[i]
	rest := append([]string{parts[0]}, sub[:i]...)
	rest = append(rest, sub[i+1:]...)
	return strings.Join(rest, "/"), variant, r
}

// raw is one benchmark's lines of go test output.
type raw struct {
	pkg     string
	name    string               // without "Benchmark" and the -GOMAXPROCS suffix
	metrics map[string][]float64 // unit -> one value per line (round)
	units   []string             // in the order first seen
}

var lineRE = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)

// parse reads go test -bench output: "pkg:" lines name the package of the
// benchmark lines that follow; each benchmark line holds value-unit pairs.
func parse(r io.Reader) ([]*raw, error) {
	var out []*raw
	byKey := map[string]*raw{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("benchmark line with an odd number of fields: %q", line)
		}
		key := pkg + " " + m[1]
		res := byKey[key]
		if res == nil {
			res = &raw{pkg: pkg, name: m[1], metrics: map[string][]float64{}}
			byKey[key] = res
			out = append(out, res)
		}
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("value %q in %q: %v", f[i], line, err)
			}
			u := f[i+1]
			if _, ok := res.metrics[u]; !ok {
				res.units = append(res.units, u)
			}
			res.metrics[u] = append(res.metrics[u], v)
		}
	}
	return out, sc.Err()
}

func spread(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Median: med, Min: s[0], Max: s[n-1]}
}

// areaOf is the first element of an import path inside the module:
// github.com/vkjobs/vkjobs/anim/offline -> anim (module
// github.com/vkjobs/vkjobs).
func areaOf(module, pkg string) string {
	rel := strings.TrimPrefix(pkg, module+"/")
	if i := strings.Index(rel, "/"); i >= 0 {
		rel = rel[:i]
	}
	return rel
}

// group turns parsed lines into benchmarks: variants grouped, figures
// summarised, each variant's ratio to its group's reference per round.
func group(module string, rs []*raw) []Benchmark {
	var out []Benchmark
	idx := map[string]int{}
	rulesOf := map[string]rule{}
	for _, r := range rs {
		g, v, rl := split(r.name)
		key := r.pkg + " " + g
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			rulesOf[key] = rl
			out = append(out, Benchmark{Pkg: r.pkg, Area: areaOf(module, r.pkg), Group: g, RatioUnit: rl.unit})
		}
		vr := Variant{Name: v, Bench: r.name}
		for _, u := range r.units {
			vals := r.metrics[u]
			vr.Metrics = append(vr.Metrics, Metric{Unit: u, Values: vals, Spread: spread(vals)})
			vr.Runs = max(vr.Runs, len(vals))
		}
		out[i].Variants = append(out[i].Variants, vr)
	}
	for k, i := range idx {
		b := &out[i]
		rl := rulesOf[k]
		ref := 0
		for j, v := range b.Variants {
			if v.Name == rl.ref {
				ref = j
			}
		}
		b.Reference = b.Variants[ref].Name
		base := b.Variants[ref].metric(b.RatioUnit)
		if base == nil && b.RatioUnit != "ns/op" {
			// The unit is missing (cpu-ns/bone is reported with one
			// goroutine only): compare time per op.
			b.RatioUnit = "ns/op"
			base = b.Variants[ref].metric("ns/op")
		}
		if base == nil {
			continue
		}
		for j := range b.Variants {
			m := b.Variants[j].metric(b.RatioUnit)
			if m == nil {
				continue
			}
			var ratios []float64
			for r := range min(len(m.Values), len(base.Values)) {
				if base.Values[r] > 0 {
					ratios = append(ratios, m.Values[r]/base.Values[r])
				}
			}
			if len(ratios) > 0 {
				s := spread(ratios)
				b.Variants[j].Ratio = &s
			}
		}
	}
	return out
}

// parseSet reads a set as scripts/benchmarks.sh gives it:
// "PKG BENCHTIME MODE Name1,Name2".
func parseSet(s string) (Set, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return Set{}, fmt.Errorf("set %q: want PKG BENCHTIME MODE NAMES", s)
	}
	if f[2] != "rounds" && f[2] != "once" {
		return Set{}, fmt.Errorf("set %q: mode %q is neither rounds nor once", s, f[2])
	}
	return Set{Pkg: f[0], Benchtime: f[1], Mode: f[2], Names: strings.Split(f[3], ",")}, nil
}

// missing lists the names of the set that no result came from (a
// benchmark not in this commit, or one that skipped every variant).
func (s *Set) missing(module string, bs []Benchmark) {
	imp := module + "/" + strings.Trim(strings.TrimPrefix(s.Pkg, "./"), "/")
	s.Missing = nil
	for _, n := range s.Names {
		n0, _, _ := strings.Cut(strings.TrimPrefix(n, "Benchmark"), "/") // Sample/^(cm=0.01|...)$ -> Sample
		found := false
		for _, b := range bs {
			if b.Pkg == imp && (b.Group == n0 || strings.HasPrefix(b.Group, n0+"/")) {
				found = true
				break
			}
		}
		if !found {
			s.Missing = append(s.Missing, n)
		}
	}
}

func parseLoad(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("load average %q: %v", s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// machine describes this machine from /proc (Linux); fields it cannot
// read stay empty.
func machine() Machine {
	m := Machine{LogicalCPUs: runtime.NumCPU(), CPU: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					m.MemoryGiB = math.Round(kb/1048576*10) / 10
				}
			}
		}
	}
	typ, _ := os.ReadFile("/proc/sys/kernel/ostype")
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	m.Kernel = strings.TrimSpace(strings.TrimSpace(string(typ)) + " " + strings.TrimSpace(string(rel)))
	if m.Kernel == "" {
		m.Kernel = runtime.GOOS
	}
	return m
}

// fileName is the results file's name: its date and commit, sortable.
func fileName(r *Results) string {
	c := r.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	name := r.Date.UTC().Format("2006-01-02T150405Z") + "-" + c
	if r.Dirty {
		name += "-dirty"
	}
	return name + ".json"
}

func writeResults(dir string, r *Results) (string, error) {
	b, err := json.MarshalIndent(r, "", "\t")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, fileName(r))
	return p, os.WriteFile(p, append(b, '\n'), 0o644)
}

func readResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if r.Schema != schemaVersion {
		return nil, fmt.Errorf("%s: schema %d, this benchreport reads %d", path, r.Schema, schemaVersion)
	}
	return &r, nil
}

// errDirty refuses a dirty tree's results for BENCHMARKS.md.
var errDirty = errors.New("measured on a dirty tree (VKJOBS_BENCH_DIRTY=1): not put into BENCHMARKS.md; run make benchmarks on a clean tree")

// latestClean returns the clean results file in dir with the latest date
// ("" and nil when there is none) and how many dirty ones it passed over.
func latestClean(dir string) (string, *Results, int, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return "", nil, 0, err
	}
	var best *Results
	bestPath, dirty := "", 0
	for _, p := range paths {
		r, err := readResults(p)
		if err != nil {
			return "", nil, 0, err
		}
		if r.Dirty {
			dirty++
			continue
		}
		if best == nil || r.Date.After(best.Date) {
			best, bestPath = r, p
		}
	}
	return bestPath, best, dirty, nil
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "record":
		err = record(os.Args[2:])
	case "md":
		err = mdCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchreport record -in RAW -dir DIR -commit C [flags]\n       benchreport md -dir DIR -md BENCHMARKS.md [-results FILE]")
	os.Exit(2)
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, "; ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func record(args []string) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	in := fs.String("in", "", "go test -bench output of the run (default stdin)")
	dir := fs.String("dir", "benchmarks/results", "where the results file is written")
	module := fs.String("module", "github.com/vkjobs/vkjobs", "the module's path (for the areas)")
	commit := fs.String("commit", "", "the commit measured (git rev-parse HEAD)")
	dirty := fs.Bool("dirty", false, "the tree had changes in the measured packages")
	var dirtyPaths, sets multi
	fs.Var(&dirtyPaths, "dirty-path", "a changed path (repeated)")
	fs.Var(&sets, "set", `a set of the run, "PKG BENCHTIME MODE Name1,Name2" (repeated)`)
	start := fs.String("start", "", "the run's start, RFC 3339")
	secs := fs.Float64("secs", 0, "the run's duration in seconds")
	goVer := fs.String("go", runtime.Version(), "the Go toolchain that ran the benchmarks")
	load0 := fs.String("load-before", "", "1, 5 and 15 minute load averages before the run")
	load1 := fs.String("load-after", "", "the same after the run")
	command := fs.String("command", "", "the command that reproduces the run")
	count := fs.Int("count", 0, "rounds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *commit == "" {
		return errors.New("record: -commit is required")
	}
	r := Results{Schema: schemaVersion, Commit: *commit, Dirty: *dirty, DirtyPaths: dirtyPaths,
		Seconds: *secs, Machine: machine(), Go: *goVer, Command: *command, Count: *count}
	r.Date = time.Now().UTC().Truncate(time.Second)
	if *start != "" {
		t, err := time.Parse(time.RFC3339, *start)
		if err != nil {
			return fmt.Errorf("record: -start: %v", err)
		}
		r.Date = t.UTC()
	}
	var err error
	if r.LoadBefore, err = parseLoad(*load0); err != nil {
		return err
	}
	if r.LoadAfter, err = parseLoad(*load1); err != nil {
		return err
	}
	var rd io.Reader = os.Stdin
	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		rd = f
	}
	rs, err := parse(rd)
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return errors.New("no benchmark results in the input")
	}
	r.Benchmarks = group(*module, rs)
	for _, s := range sets {
		st, err := parseSet(s)
		if err != nil {
			return err
		}
		st.missing(*module, r.Benchmarks)
		r.Sets = append(r.Sets, st)
	}
	p, err := writeResults(*dir, &r)
	if err != nil {
		return err
	}
	fmt.Println(p)
	return nil
}

func mdCmd(args []string) error {
	fs := flag.NewFlagSet("md", flag.ContinueOnError)
	dir := fs.String("dir", "benchmarks/results", "results files; the latest clean one is used")
	results := fs.String("results", "", "use this results file instead (refused if dirty)")
	md := fs.String("md", "BENCHMARKS.md", "the file whose generated blocks are replaced")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return writeMD(*md, *dir, *results)
}

// writeMD regenerates mdPath's generated blocks from the results file
// given, or the latest clean one in dir; without one, the blocks say so.
func writeMD(mdPath, dir, results string) error {
	var r *Results
	path := results
	if results != "" {
		var err error
		if r, err = readResults(results); err != nil {
			return err
		}
		if r.Dirty {
			return fmt.Errorf("%s: %w", results, errDirty)
		}
	} else {
		var dirty int
		var err error
		if path, r, dirty, err = latestClean(dir); err != nil {
			return err
		}
		if r == nil {
			fmt.Fprintf(os.Stderr, "benchreport: no clean results file in %s (%d dirty ones passed over)\n", dir, dirty)
		}
	}
	old, err := os.ReadFile(mdPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := render(old, path, r)
	if err != nil {
		return fmt.Errorf("%s: %w", mdPath, err)
	}
	return os.WriteFile(mdPath, out, 0o644)
}

const noRun = "No clean run yet: run `make benchmarks` on a clean tree.\n"

// render replaces every generated block of md: "run" with r's header,
// each other NAME with r's tables of that area. Areas of r without a
// block are appended, each in a block of its own.
func render(md []byte, path string, r *Results) ([]byte, error) {
	if len(bytes.TrimSpace(md)) == 0 {
		md = []byte("# Benchmarks\n")
	}
	names, err := blockNames(md)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, "run") {
		names = append(names, "run")
	}
	if r != nil {
		for _, b := range r.Benchmarks {
			if !slices.Contains(names, b.Area) {
				names = append(names, b.Area)
			}
		}
	}
	for _, n := range names {
		body := noRun
		if r != nil {
			if n == "run" {
				body = header(path, r)
			} else {
				body = tables(r, n)
			}
		}
		if md, err = splice(md, n, body); err != nil {
			return nil, err
		}
	}
	return md, nil
}

func beginMarker(name string) string { return "<!-- begin generated " + name + " -->" }
func endMarker(name string) string   { return "<!-- end generated " + name + " -->" }

var markerRE = regexp.MustCompile(`^<!-- begin generated (\S+) -->$`)

// blockNames lists the generated blocks of md in order; a name twice is
// an error.
func blockNames(md []byte) ([]string, error) {
	var names []string
	for _, l := range strings.Split(string(md), "\n") {
		if m := markerRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			if slices.Contains(names, m[1]) {
				return nil, fmt.Errorf("two %q lines", beginMarker(m[1]))
			}
			names = append(names, m[1])
		}
	}
	return names, nil
}

func fmtLoad(l []float64) string {
	var s []string
	for _, v := range l {
		s = append(s, strconv.FormatFloat(v, 'f', 2, 64))
	}
	if len(s) == 0 {
		return "unknown"
	}
	return strings.Join(s, " ")
}

// header is the "run" block: where, when and how the figures were taken.
func header(path string, r *Results) string {
	var b strings.Builder
	c := r.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	fmt.Fprintf(&b, "Latest clean run, `%s` (generated from it by scripts/benchreport; do not edit):\n\n", filepath.ToSlash(path))
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| commit | %s |\n", c)
	fmt.Fprintf(&b, "| date | %s, %.0f s |\n", r.Date.UTC().Format("2006-01-02 15:04 UTC"), r.Seconds)
	fmt.Fprintf(&b, "| machine | %s, %d logical CPUs, %.1f GiB, %s |\n", r.Machine.CPU, r.Machine.LogicalCPUs, r.Machine.MemoryGiB, r.Machine.Kernel)
	fmt.Fprintf(&b, "| Go | %s |\n", r.Go)
	fmt.Fprintf(&b, "| load average (1, 5, 15 min) | %s before, %s after |\n", fmtLoad(r.LoadBefore), fmtLoad(r.LoadAfter))
	fmt.Fprintf(&b, "| command | `%s`: %d rounds |\n", r.Command, r.Count)
	var miss []string
	for _, s := range r.Sets {
		miss = append(miss, s.Missing...)
	}
	if len(miss) > 0 {
		fmt.Fprintf(&b, "| not in this commit | %s |\n", strings.Join(miss, ", "))
	}
	return b.String()
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

func (s Spread) String() string {
	if s.Min == s.Max {
		return num(s.Median)
	}
	return fmt.Sprintf("%s (%s-%s)", num(s.Median), num(s.Min), num(s.Max))
}

func ratioString(s *Spread) string {
	if s == nil {
		return "-"
	}
	f := func(v float64) string {
		if v < 0.1 {
			return strconv.FormatFloat(v, 'f', 3, 64)
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	if s.Min == s.Max {
		return f(s.Median) + "x"
	}
	return fmt.Sprintf("%sx (%s-%s)", f(s.Median), f(s.Min), f(s.Max))
}

// perItem is the group's first time unit other than ns/op (ns/task,
// ns/packet, cpu-ns/bone), or "".
func (b *Benchmark) perItem() string {
	if b.RatioUnit != "ns/op" {
		return b.RatioUnit
	}
	for _, v := range b.Variants {
		for _, m := range v.Metrics {
			if m.Unit != "ns/op" && strings.HasPrefix(m.Unit, "ns/") {
				return m.Unit
			}
		}
	}
	return ""
}

// tables renders the area's benchmarks, one table each: per case (the
// group's name less the benchmark's, where there are several) and
// variant the median and range of its time, its allocations, and its
// ratio to the reference. The groups of one (Mix benchmarks and the like,
// which measure their peers inside every op) give one table of their
// ratio metrics at the end.
func tables(r *Results, area string) string {
	var b, inOp strings.Builder
	var order []string
	byBench := map[string][]*Benchmark{}
	for i := range r.Benchmarks {
		g := &r.Benchmarks[i]
		if g.Area != area {
			continue
		}
		name, _, _ := strings.Cut(g.Group, "/")
		if len(g.Variants) == 1 && g.Variants[0].Name == "" {
			for _, m := range g.Variants[0].Metrics {
				if isRatio(m.Unit) {
					fmt.Fprintf(&inOp, "| %s | %s | %s |\n", g.Group, m.Unit, m.Spread)
				}
			}
			continue
		}
		if _, ok := byBench[name]; !ok {
			order = append(order, name)
		}
		byBench[name] = append(byBench[name], g)
	}
	pkgName := func(p string) string { return "./" + strings.TrimPrefix(p, "github.com/vkjobs/vkjobs/") + "/" }
	for _, name := range order {
		gs := byBench[name]
		unit := gs[0].perItem()
		if unit == "" {
			unit = "ns/op"
		}
		runs := 0
		for _, g := range gs {
			for _, v := range g.Variants {
				runs = max(runs, v.Runs)
			}
		}
		ratio := "time"
		if gs[0].RatioUnit != "ns/op" {
			ratio = gs[0].RatioUnit
		}
		fmt.Fprintf(&b, "`Benchmark%s` in %s, %d %s:\n\n", name, pkgName(gs[0].Pkg), runs, plural(runs, "run"))
		cases := len(gs) > 1 || gs[0].Group != name
		if cases {
			b.WriteString("| case ")
		}
		fmt.Fprintf(&b, "| variant | %s: median (min-max) | allocs/op | %s / %s: median (min-max) |\n", unit, ratio, gs[0].Reference)
		if cases {
			b.WriteString("|---")
		}
		b.WriteString("|---|---:|---:|---:|\n")
		for _, g := range gs {
			for _, v := range g.Variants {
				t, allocs := "-", "-"
				if m := v.metric(unit); m != nil {
					t = m.Spread.String()
				}
				if m := v.metric("allocs/op"); m != nil {
					allocs = num(m.Median)
				}
				if cases {
					fmt.Fprintf(&b, "| %s ", strings.TrimPrefix(strings.TrimPrefix(g.Group, name), "/"))
				}
				ref := ratioString(v.Ratio)
				if g.Reference != gs[0].Reference && v.Name == g.Reference {
					ref += " (reference)"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", v.Name, t, allocs, ref)
			}
		}
		b.WriteString("\n")
	}
	if inOp.Len() > 0 {
		b.WriteString("Ratios taken inside every op (the peers run in turn in one op):\n\n| benchmark | ratio | median (min-max) |\n|---|---|---:|\n")
		b.WriteString(inOp.String())
	}
	if b.Len() == 0 {
		return "No figures for this area in the latest clean run.\n"
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// isRatio reports whether a metric of a group of one is a ratio:
// "sched/chanpool", "p1/p2", "dqs/lbs", not a time ("sched-ns/task") or
// a count per op.
func isRatio(unit string) bool {
	a, b, ok := strings.Cut(unit, "/")
	return ok && b != "op" && !strings.HasSuffix(a, "ns") && !strings.HasSuffix(unit, "/s")
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// splice puts body between the named block's marker lines in md (a
// marker counts only as a line of its own; one quoted in a sentence does
// not), keeping everything else byte for byte. Without markers the block
// is appended. A marker without its partner, or a repeated one, is an
// error: the file is left alone rather than guessed at.
func splice(md []byte, name, body string) ([]byte, error) {
	bm, em := beginMarker(name), endMarker(name)
	begin, end, nb, ne := -1, -1, 0, 0
	for off := 0; off < len(md); {
		n := bytes.IndexByte(md[off:], '\n')
		if n < 0 {
			n = len(md) - off
		}
		switch string(bytes.TrimSpace(md[off : off+n])) {
		case bm:
			nb++
			begin = off
		case em:
			ne++
			end = off + n
			if off+n < len(md) && md[off+n] == '\n' {
				end++
			}
		}
		off += n + 1
	}
	blk := bm + "\n" + body + em + "\n"
	switch {
	case nb == 0 && ne == 0:
		out := bytes.TrimRight(md, "\n")
		return append(out, []byte("\n\n"+blk)...), nil
	case nb != 1 || ne != 1:
		return nil, fmt.Errorf("want one %q and one %q line, found %d and %d", bm, em, nb, ne)
	case end <= begin:
		return nil, fmt.Errorf("%q comes before %q", em, bm)
	}
	var out []byte
	out = append(out, md[:begin]...)
	out = append(out, blk...)
	out = append(out, md[end:]...)
	return out, nil
}
