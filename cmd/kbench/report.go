package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Report is everything kbench measured; -json writes it as is.
type Report struct {
	Version    string      `json:"version"`
	Machine    Machine     `json:"machine"`
	Reps       int         `json:"reps"`
	Best       bool        `json:"best"` // -best: Seconds is the fastest sample, not the median
	MinSample  string      `json:"min_sample"`
	Kernels    []string    `json:"kernels"`
	Sizes      []int       `json:"sizes"`
	Devices    []string    `json:"devices"`
	Results    []Result    `json:"results"`
	Copies     []Copy      `json:"copies"`
	Crossovers []Crossover `json:"crossovers"`
	// The SPU-style executor's settings (-spu-store, -spu-chunk), and the
	// kernels and sizes it did not run, with why.
	SPULocalStore int       `json:"spu_local_store"`
	SPUChunk      int       `json:"spu_chunk"`
	SPUNotes      []SPUNote `json:"spu_notes,omitempty"`
}

// SPUNote says why the spu column of a kernel at a size is empty.
type SPUNote struct {
	Kernel string `json:"kernel"`
	Size   int    `json:"size"`
	Note   string `json:"note"`
}

// Bound is one CPU column's bound for a workload (bound.go): the slower of
// the copy bound on its cores and the compute bound of its cores.
type Bound struct {
	Device         string  `json:"device"`  // cpu-1 (also spu's) or cpu-all
	Seconds        float64 `json:"seconds"` // the fastest round (below)
	Kind           string  `json:"kind"`    // "copy" or "compute": the slower
	CopySeconds    float64 `json:"copy_seconds"`
	ComputeSeconds float64 `json:"compute_seconds"` // 0: clock unknown
	// Samples is the bound per round, in the rounds of the kernel's
	// samples: the slower of the round's copy and the compute bound.
	Samples []float64 `json:"samples"`
}

// Machine describes where the run happened.
type Machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GoVersion  string `json:"go_version"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Workers    int    `json:"sched_threads"`       // scheduler workers + the registered main thread
	GPU        string `json:"gpu,omitempty"`       // device name; empty without a GPU
	GPUNote    string `json:"gpu_note,omitempty"`  // why there is no GPU column
	GPUError   string `json:"gpu_error,omitempty"` // gpu.Open's error, when it found no device
	// ClockHz is the core clock the compute bounds use, and ClockSource
	// how it was found (bound.go).
	ClockHz     float64 `json:"clock_hz"`
	ClockSource string  `json:"clock_source"`
}

// Result is one kernel at one size on one device.
type Result struct {
	Kernel   string    `json:"kernel"`
	ID       int       `json:"id"`
	Elem     string    `json:"element"`
	Size     int       `json:"size"`     // requested elements
	Elements int       `json:"elements"` // processed: size rounded up to whole work items
	Items    int       `json:"items"`    // work items (task Elements)
	Chunks   int       `json:"chunks"`   // tasks per run (each stream <= 64 MiB)
	Device   string    `json:"device"`
	Seconds  float64   `json:"seconds"` // median per run (the fastest with -best)
	Samples  []float64 `json:"samples"`
	// WallSeconds is, for gpu-dispatch, the median wall-clock round trip of
	// the same runs (submission, fences, scheduler); else equal to Seconds.
	WallSeconds float64 `json:"wall_seconds"`
	ElemPerSec  float64 `json:"elements_per_sec"`
	Bytes       int64   `json:"bytes"` // read and written per run
	BytesPerSec float64 `json:"bytes_per_sec"`
	CopySeconds float64 `json:"copy_seconds"` // the memory-copy bound for those bytes
	// CopyFraction is the copy's fastest sample over the kernel's, and
	// Min and Max the range of the rounds' ratios (bound.go).
	CopyFraction    float64 `json:"copy_fraction"`
	CopyFractionMin float64 `json:"copy_fraction_min"`
	CopyFractionMax float64 `json:"copy_fraction_max"`
	// The column's bound (CPU columns: cpu-1 and spu one core, cpu-all
	// all of them; 0 for the GPU columns), which kind it is, and its
	// fraction of the kernel's time as CopyFraction's. A fraction above 1
	// is no figure of the kernel (bound.go).
	BoundSeconds     float64 `json:"bound_seconds,omitempty"`
	BoundKind        string  `json:"bound_kind,omitempty"`
	BoundFraction    float64 `json:"bound_fraction,omitempty"`
	BoundFractionMin float64 `json:"bound_fraction_min,omitempty"`
	BoundFractionMax float64 `json:"bound_fraction_max,omitempty"`
	// DMAWaitFraction (spu): the share of the run's wall time the kernel
	// waited for its simulated DMA (spu.Stats.Stall).
	DMAWaitFraction float64 `json:"dma_wait_fraction,omitempty"`
}

// Copy is the memory-copy bound measured for one workload: copy() of
// Bytes/2 bytes reads and writes Bytes, as the kernel does. Times are the
// fastest sample; the samples are one per round, in the rounds of the
// kernel's samples.
type Copy struct {
	Kernel     string    `json:"kernel"`
	Size       int       `json:"size"`
	Bytes      int64     `json:"bytes"`
	OneSeconds float64   `json:"one_goroutine_seconds"`
	AllSeconds float64   `json:"all_goroutines_seconds"`
	Seconds    float64   `json:"seconds"` // the faster: this machine's bound
	OneSamples []float64 `json:"one_goroutine_samples"`
	AllSamples []float64 `json:"all_goroutines_samples"`
	// Bounds of the CPU columns, one core (cpu-1, spu) and all (cpu-all),
	// and how the compute bound's arithmetic was counted.
	Bounds      []Bound `json:"bounds"`
	ComputeNote string  `json:"compute_note"`
}

// copyOf returns the copy measurement of kernel at size, or nil.
func (r *Report) copyOf(kernel string, size int) *Copy {
	for i := range r.Copies {
		if c := &r.Copies[i]; c.Kernel == kernel && c.Size == size {
			return c
		}
	}
	return nil
}

// Crossover is, per kernel, the smallest size where the GPU beat all CPU
// workers (cpu-all), dispatch only and with transfers (0 = at no size run),
// and by how much there: cpu-all's time over the GPU's (a ratio near 1 is
// within the noise of a shared machine).
type Crossover struct {
	Kernel        string  `json:"kernel"`
	Dispatch      int     `json:"dispatch_size"`
	DispatchRatio float64 `json:"dispatch_ratio,omitempty"`
	Transfer      int     `json:"transfer_size"`
	TransferRatio float64 `json:"transfer_ratio,omitempty"`
	Summary       string  `json:"summary"`
}

// result returns the result of kernel at size on dev, or nil.
func (r *Report) result(kernel string, size int, dev string) *Result {
	for i := range r.Results {
		x := &r.Results[i]
		if x.Kernel == kernel && x.Size == size && x.Device == dev {
			return x
		}
	}
	return nil
}

func (r *Report) hasDevice(dev string) bool {
	for _, d := range r.Devices {
		if d == dev {
			return true
		}
	}
	return false
}

// crossovers fills r.Crossovers: for each kernel, the smallest size at
// which the GPU column is faster than cpu-all.
func (r *Report) crossovers() {
	r.Crossovers = r.Crossovers[:0]
	if !r.hasDevice(devGPU) {
		for _, k := range r.Kernels {
			r.Crossovers = append(r.Crossovers, Crossover{Kernel: k, Summary: "no GPU measured"})
		}
		return
	}
	largest := 0
	for _, s := range r.Sizes {
		largest = max(largest, s)
	}
	for _, k := range r.Kernels {
		c := Crossover{Kernel: k}
		find := func(dev string) (int, float64) {
			for _, s := range r.Sizes {
				g, cpu := r.result(k, s, dev), r.result(k, s, devCPUAll)
				if g != nil && cpu != nil && g.Seconds > 0 && g.Seconds < cpu.Seconds {
					return s, cpu.Seconds / g.Seconds
				}
			}
			return 0, 0
		}
		c.Dispatch, c.DispatchRatio = find(devGPU)
		c.Transfer, c.TransferRatio = find(devGPUXfer)
		word := func(s int, ratio float64) string {
			if s == 0 {
				return "none up to " + formatSize(largest)
			}
			return fmt.Sprintf("from %s (%.2fx)", formatSize(s), ratio)
		}
		c.Summary = fmt.Sprintf("dispatch only: %s; with transfers: %s", word(c.Dispatch, c.DispatchRatio), word(c.Transfer, c.TransferRatio))
		r.Crossovers = append(r.Crossovers, c)
	}
}

// formatSize writes 1000 as 1e3, 2000000 as 2e6, others in decimal.
func formatSize(n int) string {
	if n <= 0 {
		return strconv.Itoa(n)
	}
	m, e := n, 0
	for m%10 == 0 {
		m /= 10
		e++
	}
	if e >= 3 && m < 10 {
		return fmt.Sprintf("%de%d", m, e)
	}
	return strconv.Itoa(n)
}

// tableHeader is what the table starts with: the machine and what the
// columns mean. kbench prints it before measuring.
func (r *Report) tableHeader() string {
	var b strings.Builder
	gpu := r.Machine.GPU
	if gpu == "" {
		gpu = "none (" + r.Machine.GPUNote + ")"
	}
	fmt.Fprintf(&b, "kbench %s: %d CPUs (GOMAXPROCS %d, scheduler threads %d), clock %.2f GHz (%s), %s %s/%s; GPU: %s\n",
		r.Version, r.Machine.NumCPU, r.Machine.GOMAXPROCS, r.Machine.Workers, r.Machine.ClockHz/1e9, r.Machine.ClockSource,
		r.Machine.GoVersion, r.Machine.GOOS, r.Machine.GOARCH, gpu)
	stat := "median"
	if r.Best {
		stat = "fastest (-best)"
	}
	fmt.Fprintf(&b, "Throughput in million elements per second, %s of %d samples of at least %s each; in brackets,\n", stat, r.Reps, r.MinSample)
	fmt.Fprintf(&b, "the fraction of this machine's memory-copy bound (a copy of the same bytes in+out, timed in the same\n")
	fmt.Fprintf(&b, "rounds: its fastest sample over the kernel's fastest), then for the CPU columns the fraction of the\n")
	fmt.Fprintf(&b, "column's own bound, the same way, and the range of the rounds' own ratios (wide: other work disturbed\n")
	fmt.Fprintf(&b, "the run; over!: no figure, see the notes). A column's bound is the slower of the copy bound on its\n")
	fmt.Fprintf(&b, "cores and the compute bound (the kernel's float, integer or CRC operations at this clock: 16 float or\n")
	fmt.Fprintf(&b, "24 integer lane operations or 8 CRC bytes per cycle and core). bound-1 and bound-all give those bounds in million\n")
	fmt.Fprintf(&b, "elements per second, c = compute-bound, m = copy (memory) bound; all/1 is cpu-all over cpu-1, then what the\n")
	fmt.Fprintf(&b, "bounds allow (bound-all over bound-1: below 1.8x memory bandwidth does not allow 1.8x).\n")
	fmt.Fprintf(&b, "%s: the CPU kernel on one goroutine; %s: the scheduler on all workers; %s: the SPU-style executor\n", devCPU1, devCPUAll, devSPU)
	fmt.Fprintf(&b, "(one unit, local store %d bytes, %s), w = share of its time waiting on the simulated DMA.\n", r.SPULocalStore, spuChunkText(r.SPUChunk))
	if r.hasDevice(devGPU) {
		fmt.Fprintf(&b, "%s: GPU-resident buffers, dispatch time from GPU timestamps; %s: host memory,\n", devGPU, devGPUXfer)
		fmt.Fprintf(&b, "upload + dispatch + read-back, wall clock.\n")
	}
	b.WriteString("\n")
	return b.String()
}

func spuChunkText(c int) string {
	if c <= 0 {
		return "the other columns' tasks"
	}
	return fmt.Sprintf("tasks of %d work items", c)
}

// boundText writes a bound as million elements per second and its kind.
func boundText(elements int, bd *Bound) string {
	if bd == nil || bd.Seconds <= 0 {
		return "-"
	}
	k := "m"
	if bd.Kind == "compute" {
		k = "c"
	}
	return formatRate(float64(elements)/bd.Seconds/1e6) + k
}

// writeTable writes the human-readable table (after tableHeader) and the
// crossover summary.
func (r *Report) writeTable(w io.Writer) error {
	var b strings.Builder
	// Numbers align right; the kernel and element names are padded to a
	// common width, so they align left.
	kw, ew := len("kernel"), len("element")
	for _, x := range r.Results {
		kw, ew = max(kw, len(x.Kernel)), max(ew, len(x.Elem))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := fmt.Sprintf("%-*s\t%-*s\tsize\tMB in+out\tcopy GB/s\tbound-1\tbound-all\tall/1\t", kw, "kernel", ew, "element")
	for _, d := range r.Devices {
		head += d + "\t"
	}
	fmt.Fprintln(tw, head)
	for _, k := range r.Kernels {
		for _, s := range r.Sizes {
			var first *Result
			for _, d := range r.Devices {
				if first = r.result(k, s, d); first != nil {
					break
				}
			}
			if first == nil {
				continue
			}
			copyGBs := float64(first.Bytes) / first.CopySeconds / 1e9
			var b1, ba *Bound
			if c := r.copyOf(k, s); c != nil && len(c.Bounds) == 2 {
				b1, ba = &c.Bounds[0], &c.Bounds[1]
			}
			scale := "-"
			if c1, ca := r.result(k, s, devCPU1), r.result(k, s, devCPUAll); c1 != nil && ca != nil && ca.Seconds > 0 && b1 != nil && ba.Seconds > 0 {
				scale = fmt.Sprintf("%.2fx/%.2fx", c1.Seconds/ca.Seconds, b1.Seconds/ba.Seconds)
			}
			line := fmt.Sprintf("%-*s\t%-*s\t%s\t%s\t%.1f\t%s\t%s\t%s\t", kw, k, ew, first.Elem, formatSize(s), formatRate(float64(first.Bytes)/1e6), copyGBs,
				boundText(first.Elements, b1), boundText(first.Elements, ba), scale)
			for _, d := range r.Devices {
				x := r.result(k, s, d)
				switch {
				case x == nil:
					line += "-\t"
				case x.BoundSeconds > 0:
					cell := fmt.Sprintf("%s (%s %s)", formatRate(x.ElemPerSec/1e6), fractionText(x.CopyFraction, 0, 0, false), fractionText(x.BoundFraction, x.BoundFractionMin, x.BoundFractionMax, true))
					if d == devSPU {
						cell += fmt.Sprintf(" w%2.0f%%", 100*x.DMAWaitFraction)
					}
					line += cell + "\t"
				default:
					line += fmt.Sprintf("%s (%s)\t", formatRate(x.ElemPerSec/1e6), fractionText(x.CopyFraction, 0, 0, false))
				}
			}
			fmt.Fprintln(tw, line)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.SPUNotes {
		fmt.Fprintf(&b, "%s %s, %s: %s\n", n.Kernel, formatSize(n.Size), devSPU, n.Note)
	}
	for _, n := range overNotes(r.Results) {
		fmt.Fprintln(&b, n)
	}
	fmt.Fprintf(&b, "\ncompute bounds count, per element:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, k := range r.Kernels {
		for _, c := range r.Copies {
			if c.Kernel == k {
				fmt.Fprintf(tw, "  %s:\t%s\n", k, c.ComputeNote)
				break
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\ncrossover: the smallest size where the GPU is faster than all CPU workers (%s)\n", devCPUAll)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range r.Crossovers {
		fmt.Fprintf(tw, "  %s:\t%s\n", c.Kernel, c.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatRate prints 3 significant digits without exponent for the table.
func formatRate(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// csvHeader is the first row of -csv.
var csvHeader = []string{"kernel", "id", "element", "size", "elements", "items", "chunks", "device",
	"seconds", "wall_seconds", "elements_per_sec", "bytes", "bytes_per_sec", "copy_seconds", "copy_fraction",
	"bound_seconds", "bound_kind", "bound_fraction", "dma_wait_fraction", "bound_fraction_min", "bound_fraction_max"}

func (r *Report) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, x := range r.Results {
		rec := []string{x.Kernel, strconv.Itoa(x.ID), x.Elem, strconv.Itoa(x.Size), strconv.Itoa(x.Elements),
			strconv.Itoa(x.Items), strconv.Itoa(x.Chunks), x.Device, g(x.Seconds), g(x.WallSeconds), g(x.ElemPerSec),
			strconv.FormatInt(x.Bytes, 10), g(x.BytesPerSec), g(x.CopySeconds), g(x.CopyFraction),
			g(x.BoundSeconds), x.BoundKind, g(x.BoundFraction), g(x.DMAWaitFraction), g(x.BoundFractionMin), g(x.BoundFractionMax)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
