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
	Machine    Machine     `json:"machine"`
	Reps       int         `json:"reps"`
	MinSample  string      `json:"min_sample"`
	Kernels    []string    `json:"kernels"`
	Sizes      []int       `json:"sizes"`
	Devices    []string    `json:"devices"`
	Results    []Result    `json:"results"`
	Copies     []Copy      `json:"copies"`
	Crossovers []Crossover `json:"crossovers"`
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
	Seconds  float64   `json:"seconds"` // median per run
	Samples  []float64 `json:"samples"`
	// WallSeconds is, for gpu-dispatch, the median wall-clock round trip of
	// the same runs (submission, fences, scheduler); else equal to Seconds.
	WallSeconds  float64 `json:"wall_seconds"`
	ElemPerSec   float64 `json:"elements_per_sec"`
	Bytes        int64   `json:"bytes"` // read and written per run
	BytesPerSec  float64 `json:"bytes_per_sec"`
	CopySeconds  float64 `json:"copy_seconds"`  // the memory-copy bound for those bytes
	CopyFraction float64 `json:"copy_fraction"` // CopySeconds / Seconds
}

// Copy is the memory-copy bound measured for one workload: copy() of
// Bytes/2 bytes reads and writes Bytes, as the kernel does. Times are the
// fastest sample.
type Copy struct {
	Kernel     string  `json:"kernel"`
	Size       int     `json:"size"`
	Bytes      int64   `json:"bytes"`
	OneSeconds float64 `json:"one_goroutine_seconds"`
	AllSeconds float64 `json:"all_goroutines_seconds"`
	Seconds    float64 `json:"seconds"` // the faster: this machine's bound
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

// writeTable writes the human-readable table and the crossover summary.
func (r *Report) writeTable(w io.Writer) error {
	var b strings.Builder
	gpu := r.Machine.GPU
	if gpu == "" {
		gpu = "none (" + r.Machine.GPUNote + ")"
	}
	fmt.Fprintf(&b, "kbench: %d CPUs (GOMAXPROCS %d, scheduler threads %d), %s %s/%s; GPU: %s\n",
		r.Machine.NumCPU, r.Machine.GOMAXPROCS, r.Machine.Workers, r.Machine.GoVersion, r.Machine.GOOS, r.Machine.GOARCH, gpu)
	fmt.Fprintf(&b, "Throughput in million elements per second, median of %d samples of at least %s each; in brackets,\n", r.Reps, r.MinSample)
	fmt.Fprintf(&b, "the fraction of this machine's memory-copy bound (fastest copy of the same bytes in+out).\n")
	fmt.Fprintf(&b, "%s: the CPU kernel on one goroutine; %s: the scheduler on all workers.\n", devCPU1, devCPUAll)
	if r.hasDevice(devGPU) {
		fmt.Fprintf(&b, "%s: GPU-resident buffers, dispatch time from GPU timestamps; %s: host memory,\n", devGPU, devGPUXfer)
		fmt.Fprintf(&b, "upload + dispatch + read-back, wall clock.\n")
	}
	b.WriteString("\n")
	// Numbers align right; the kernel and element names are padded to a
	// common width, so they align left.
	kw, ew := len("kernel"), len("element")
	for _, x := range r.Results {
		kw, ew = max(kw, len(x.Kernel)), max(ew, len(x.Elem))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := fmt.Sprintf("%-*s\t%-*s\tsize\tMB in+out\tcopy GB/s\t", kw, "kernel", ew, "element")
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
			line := fmt.Sprintf("%-*s\t%-*s\t%s\t%s\t%.1f\t", kw, k, ew, first.Elem, formatSize(s), formatRate(float64(first.Bytes)/1e6), copyGBs)
			for _, d := range r.Devices {
				if x := r.result(k, s, d); x != nil {
					line += fmt.Sprintf("%s (%2.0f%%)\t", formatRate(x.ElemPerSec/1e6), 100*x.CopyFraction)
				} else {
					line += "-\t"
				}
			}
			fmt.Fprintln(tw, line)
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
	"seconds", "wall_seconds", "elements_per_sec", "bytes", "bytes_per_sec", "copy_seconds", "copy_fraction"}

func (r *Report) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, x := range r.Results {
		rec := []string{x.Kernel, strconv.Itoa(x.ID), x.Elem, strconv.Itoa(x.Size), strconv.Itoa(x.Elements),
			strconv.Itoa(x.Items), strconv.Itoa(x.Chunks), x.Device, g(x.Seconds), g(x.WallSeconds), g(x.ElemPerSec),
			strconv.FormatInt(x.Bytes, 10), g(x.BytesPerSec), g(x.CopySeconds), g(x.CopyFraction)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
