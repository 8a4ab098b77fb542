package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/internal/version"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// TestMain lets a test run the command as a subprocess: with
// KBENCH_RUN_MAIN=1 the test binary is kbench.
func TestMain(m *testing.M) {
	if os.Getenv("KBENCH_RUN_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// runKbench runs the command in-process.
func runKbench(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// gpuExpected reports whether the GPU columns must be present: a Vulkan
// device exists. Without one the test goes on with the CPU columns, unless
// CI=true, where it fails.
func gpuExpected(t *testing.T, rep *Report) bool {
	t.Helper()
	if rep.Machine.GPU != "" {
		return true
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no Vulkan device (%s), and CI=true requires one", rep.Machine.GPUError)
	}
	t.Logf("no Vulkan device (%s): checking the CPU columns only (with CI=true this fails)", rep.Machine.GPUError)
	return false
}

// TestQuickJSON runs the quick mode at small sizes with the validation
// layer on, and checks the JSON: every kernel x size x device measured,
// with samples, throughput and copy fraction, and a crossover per kernel.
func TestQuickJSON(t *testing.T) {
	plotFile := filepath.Join(t.TempDir(), "quick.svg")
	code, out, errs := runKbench("-quick", "-json", "-validate", "-sizes", "1e3,3e3", "-reps", "2", "-min-sample", "1ms", "-plot", plotFile)
	if code != exitOK {
		t.Fatalf("exit status %d; stderr:\n%s", code, errs)
	}
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("the JSON does not parse: %v\n%s", err, out)
	}
	devices := []string{devCPU1, devCPUAll, devSPU}
	if gpuExpected(t, &rep) {
		devices = append(devices, devGPU, devGPUXfer)
	}
	if strings.Join(rep.Devices, ",") != strings.Join(devices, ",") {
		t.Fatalf("devices %v, want %v", rep.Devices, devices)
	}
	if len(rep.Kernels) != len(kernels.IDs()) {
		t.Fatalf("%d kernels in the report, want all %d", len(rep.Kernels), len(kernels.IDs()))
	}
	for _, id := range kernels.IDs() {
		k, _ := kernels.Definition(id)
		for _, size := range []int{1000, 3000} {
			for _, d := range devices {
				x := rep.result(k.Name, size, d)
				if x == nil && d == devSPU && id == kernels.ScanDownsweepU32 {
					continue // not run there, and said so in SPUNotes
				}
				if x == nil {
					t.Fatalf("no result for %s, size %d, %s", k.Name, size, d)
				}
				if x.ID != int(id) || x.Elements < size || x.Seconds <= 0 || x.ElemPerSec <= 0 || x.CopySeconds <= 0 ||
					x.CopyFraction <= 0 || len(x.Samples) != 2 || x.Bytes <= 0 || x.Chunks != 1 {
					t.Fatalf("implausible result %+v", *x)
				}
				// Every CPU column has a bound and its fraction; the
				// GPU columns only the copy fraction.
				cpu := d == devCPU1 || d == devCPUAll || d == devSPU
				if cpu != (x.BoundSeconds > 0 && x.BoundFraction > 0 && (x.BoundKind == "copy" || x.BoundKind == "compute")) {
					t.Fatalf("%s: bound %g s (%q), fraction %g", d, x.BoundSeconds, x.BoundKind, x.BoundFraction)
				}
			}
		}
	}
	if len(rep.Results) != len(kernels.IDs())*2*len(devices)-2 {
		t.Fatalf("%d results, want %d (no spu result for scan_downsweep)", len(rep.Results), len(kernels.IDs())*2*len(devices)-2)
	}
	if len(rep.SPUNotes) != 2 || rep.SPUNotes[0].Kernel != "scan_downsweep" || rep.Machine.ClockHz <= 0 {
		t.Fatalf("spu notes %+v, clock %g Hz", rep.SPUNotes, rep.Machine.ClockHz)
	}
	if len(rep.Crossovers) != len(kernels.IDs()) || rep.Crossovers[0].Summary == "" {
		t.Fatalf("crossovers %+v", rep.Crossovers)
	}
	checkImage(t, plotFile, "<?xml")
}

// checkImage checks that file exists and starts with magic.
func checkImage(t *testing.T, file, magic string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(magic)) || len(b) < 1000 {
		t.Fatalf("%s: %d bytes starting %q, want an image starting %q", file, len(b), b[:min(len(b), 16)], magic)
	}
}

// TestCPUOnlyCSV: -cpu-only measures the CPU columns without opening a
// device; -csv writes one row per kernel, size and device.
func TestCPUOnlyCSV(t *testing.T) {
	code, out, errs := runKbench("-cpu-only", "-csv", "-kernels", "saxpy,reduce_sum", "-sizes", "2e3,1e3", "-reps", "1", "-min-sample", "0")
	if code != exitOK {
		t.Fatalf("exit status %d; stderr:\n%s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v\n%s", err, out)
	}
	if len(rows) != 1+2*2*3 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("CSV rows:\n%s", out)
	}
	// Kernels in the order given, sizes ascending, CPU devices only.
	want := []string{"saxpy,1000,cpu-1", "saxpy,1000,cpu-all", "saxpy,1000,spu", "saxpy,2000,cpu-1", "saxpy,2000,cpu-all", "saxpy,2000,spu",
		"reduce_sum,1000,cpu-1", "reduce_sum,1000,cpu-all", "reduce_sum,1000,spu", "reduce_sum,2000,cpu-1", "reduce_sum,2000,cpu-all", "reduce_sum,2000,spu"}
	for i, r := range rows[1:] {
		if got := r[0] + "," + r[3] + "," + r[7]; got != want[i] {
			t.Fatalf("row %d is %s, want %s", i+1, got, want[i])
		}
	}
	// Not a terminal: one progress line per kernel, nothing else.
	if errs != "kbench: 1/2 saxpy measured"+errs[len("kbench: 1/2 saxpy measured"):] || strings.Count(errs, "\n") != 2 ||
		!strings.Contains(errs, "kbench: 2/2 reduce_sum measured") {
		t.Fatalf("stderr is not one progress line per kernel:\n%s", errs)
	}
}

// TestTableAndPNG: the default output is the aligned table with the
// crossover lines; -plot writes a PNG.
func TestTableAndPNG(t *testing.T) {
	plotFile := filepath.Join(t.TempDir(), "k.png")
	code, out, errs := runKbench("-cpu-only", "-kernels", "skin_lbs,crc32c_blocks", "-sizes", "1e3,1e4", "-reps", "1", "-min-sample", "0", "-plot", plotFile)
	if code != exitOK {
		t.Fatalf("exit status %d; stderr:\n%s", code, errs)
	}
	for _, s := range []string{"kernel", "copy GB/s", "bound-1", "bound-all", "cpu-1", "cpu-all", "spu", "skin_lbs", "crc32c_blocks", "4-byte word", "1e4", "crossover", "no GPU measured"} {
		if !strings.Contains(out, s) {
			t.Fatalf("the table lacks %q:\n%s", s, out)
		}
	}
	// Aligned: every row of the table has the header's width.
	lines := strings.Split(out, "\n")
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "kernel ") {
			head = i
		}
	}
	if head < 0 || head+5 > len(lines) {
		t.Fatalf("no table header in:\n%s", out)
	}
	for _, l := range lines[head+1 : head+5] {
		if len(l) != len(lines[head]) {
			t.Fatalf("table row %q is not as wide as the header %q", l, lines[head])
		}
	}
	checkImage(t, plotFile, "\x89PNG")
	// The header came first (kbench prints it before measuring), and the
	// plot's absolute path was printed.
	if !strings.HasPrefix(out, "kbench "+version.Version+":") {
		t.Fatalf("the output does not start with the header:\n%s", out)
	}
	if !strings.Contains(errs, "kbench: wrote "+plotFile+"\n") {
		t.Fatalf("stderr does not name the plot %s:\n%s", plotFile, errs)
	}
}

// TestVersion: -version prints the version line and exits 0.
func TestVersion(t *testing.T) {
	code, out, errs := runKbench("-version")
	if code != exitOK || out != version.String("kbench")+"\n" || errs != "" {
		t.Fatalf("-version: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestPlotPathCheckedFirst: an unwritable -plot fails before measuring.
func TestPlotPathCheckedFirst(t *testing.T) {
	code, out, errs := runKbench("-cpu-only", "-plot", "/nonexistent/dir/k.svg")
	if code != exitUsage || out != "" || !strings.Contains(errs, "-plot: open /nonexistent/dir/k.svg") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
}

// TestBoundOf: a column's bound is the slower of copy and compute, and
// the clock is measured.
func TestBoundOf(t *testing.T) {
	if b := boundOf(devCPU1, 2, 1); b.Kind != "copy" || b.Seconds != 2 {
		t.Fatalf("%+v", b)
	}
	if b := boundOf(devCPU1, 1, 3); b.Kind != "compute" || b.Seconds != 3 {
		t.Fatalf("%+v", b)
	}
	// 103 float lane operations per LBS vertex at 16 per cycle: 1e6
	// vertices take 6.4375e6 cycles.
	if s := costOf(kernels.SkinLBS).computeSeconds(1e6, 1e9); s < 6.43e-3 || s > 6.44e-3 {
		t.Fatalf("LBS compute bound of 1e6 vertices at 1 GHz: %g s", s)
	}
	for _, id := range kernels.IDs() {
		if c := costOf(id); c.floatOps+c.intOps+c.crcBytes <= 0 || c.note == "" {
			t.Errorf("kernel %d has no cost model", id)
		}
	}
	hz, src := clockHz()
	t.Logf("clock %.3g Hz (%s)", hz, src)
	if hz < 1e8 || hz > 1e10 {
		t.Fatalf("clock %g Hz (%s)", hz, src)
	}
}

// TestNoDevice runs kbench as a subprocess whose Vulkan loader finds no
// driver: it must say so on stderr, measure the CPU columns and exit 0.
func TestNoDevice(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-quick", "-json", "-kernels", "saxpy", "-sizes", "1e3", "-reps", "1", "-min-sample", "0")
	cmd.Env = append(os.Environ(), "KBENCH_RUN_MAIN=1", "VK_ICD_FILENAMES=/nonexistent/icd.json", "VK_DRIVER_FILES=/nonexistent/icd.json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kbench without a Vulkan driver: %v; stderr:\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "no Vulkan device") {
		t.Fatalf("stderr does not say that there is no Vulkan device:\n%s", errb.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 3 || rep.Machine.GPU != "" || rep.Machine.GPUError == "" || strings.Join(rep.Devices, ",") != "cpu-1,cpu-all,spu" {
		t.Fatalf("report without a device: %+v", rep)
	}
}

// TestDeviceMatchesNothing: -device naming no device is an error (exit
// 1), never a run of the CPU columns only.
func TestDeviceMatchesNothing(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-quick", "-json", "-device", "99", "-kernels", "saxpy", "-sizes", "1e3", "-reps", "1", "-min-sample", "0")
	cmd.Env = append(os.Environ(), "KBENCH_RUN_MAIN=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(errb.String(), `Options.Device="99"`) {
		t.Fatalf("kbench -device 99: %v; stderr:\n%s", err, errb.String())
	}
}

// TestUsage: bad flags and arguments print the usage and exit 2; -h
// prints it and exits 0.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"-reps", "x"}, "invalid value"},
		{[]string{"-sizes", "1e3,abc"}, `-sizes: "abc" is not a whole number`},
		{[]string{"-sizes", "0"}, `-sizes: "0" is not a whole number of elements from 1`},
		{[]string{"-sizes", "1.5"}, "not a whole number"},
		{[]string{"-sizes", "1e9"}, "not a whole number of elements from 1 to 1e+08"},
		{[]string{"-kernels", "skin_lbs,nope"}, `-kernels: unknown kernel "nope"`},
		{[]string{"-kernels", "99"}, `unknown kernel "99"`},
		{[]string{"-reps", "0"}, "-reps 0: need at least 1"},
		{[]string{"-json", "-csv"}, "choose one"},
		{[]string{"-plot", "out.pdf"}, "must end in .svg or .png"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-spu-store", "100"}, "-spu-store 100: the local store needs at least 4096 bytes"},
		{[]string{"-spu-chunk", "-1"}, "-spu-chunk -1: must not be negative"},
		{[]string{"-cpu-only", "-device", "1"}, `-device "1" and -cpu-only`},
		{[]string{"-cpu-only", "-validate"}, "-validate and -cpu-only"},
	} {
		code, out, errs := runKbench(c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.msg) || !strings.Contains(errs, "usage: kbench") {
			t.Errorf("kbench %v: exit %d, stdout %q, stderr:\n%s\nwant exit 2, usage and %q", c.args, code, out, errs, c.msg)
		}
	}
	code, _, errs := runKbench("-h")
	if code != exitOK || !strings.Contains(errs, "usage: kbench") || !strings.Contains(errs, "skin_lbs (1, vertex)") {
		t.Fatalf("-h: exit %d, stderr:\n%s", code, errs)
	}
}

func TestParse(t *testing.T) {
	sizes, err := parseSizes(" 1e4, 1000,1e4,250000 ")
	if err != nil || len(sizes) != 3 || sizes[0] != 1000 || sizes[1] != 10000 || sizes[2] != 250000 {
		t.Fatalf("parseSizes = %v, %v", sizes, err)
	}
	ids, err := parseKernels("saxpy,1,saxpy")
	if err != nil || len(ids) != 2 || ids[0] != kernels.Saxpy || ids[1] != kernels.SkinLBS {
		t.Fatalf("parseKernels = %v, %v", ids, err)
	}
	for n, want := range map[int]string{1000: "1e3", 10_000_000: "1e7", 5000: "5e3", 250_000: "250000", 100: "100", 1: "1"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCrossover: the smallest size where a GPU column beats cpu-all.
func TestCrossover(t *testing.T) {
	rep := &Report{Kernels: []string{"a", "b"}, Sizes: []int{1000, 10000, 100000}, Devices: []string{devCPU1, devCPUAll, devGPU, devGPUXfer}}
	add := func(k string, size int, dev string, sec float64) {
		rep.Results = append(rep.Results, Result{Kernel: k, Size: size, Device: dev, Seconds: sec})
	}
	for _, s := range rep.Sizes {
		for _, k := range rep.Kernels {
			add(k, s, devCPUAll, float64(s))
			add(k, s, devCPU1, float64(s)/10) // cpu-1 does not count: "all CPU workers"
		}
		// a: dispatch wins from 1e4, transfers from 1e5; b: never.
		add("a", s, devGPU, map[int]float64{1000: 2000, 10000: 9999, 100000: 1}[s])
		// (1.0001x and 1.00001x: a tie in practice, which the ratio shows)
		add("a", s, devGPUXfer, map[int]float64{1000: 2000, 10000: 10001, 100000: 99999}[s])
		add("b", s, devGPU, 2*float64(s))
		add("b", s, devGPUXfer, float64(s))
	}
	rep.crossovers()
	a, b := rep.Crossovers[0], rep.Crossovers[1]
	if a.Dispatch != 10000 || a.Transfer != 100000 || a.Summary != "dispatch only: from 1e4 (1.00x); with transfers: from 1e5 (1.00x)" {
		t.Fatalf("crossover a: %+v", a)
	}
	if b.Dispatch != 0 || b.Transfer != 0 || b.Summary != "dispatch only: none up to 1e5; with transfers: none up to 1e5" {
		t.Fatalf("crossover b: %+v", b)
	}
}

// TestChunks: large workloads are cut into chunks whose streams fit a
// binding and whose offsets are 256-byte aligned; running the chunks
// gives the same output as one task over everything, on the CPU and, with
// GPU-resident buffers at those offsets and with host streams, on the GPU.
func TestChunks(t *testing.T) {
	if c := chunkItems([]array{{perItem: 48}, {perItem: 24}, {}}, 1<<30); c%256 != 0 || uint64(c)*48 > maxChunkBytes || uint64(c+256)*48 <= maxChunkBytes {
		t.Fatalf("chunkItems = %d for 48 bytes per item", c)
	}
	if c := chunkItems([]array{{perItem: 4096}}, 100); c != 100 {
		t.Fatalf("chunkItems = %d for 100 items", c)
	}
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		t.Fatal(err)
	}
	var dev *gpu.Device
	d, err := gpu.Open(gpu.Options{Validation: true})
	switch {
	case errors.Is(err, gpu.ErrNoDevice):
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Vulkan device, and CI=true requires one: %v", err)
		}
		t.Logf("no Vulkan device: checking the chunks on the CPU only (with CI=true this fails): %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		dev = d
		defer func() {
			if err := dev.Close(); err != nil {
				t.Error(err)
			}
			if err := dev.ValidationErr(); err != nil {
				t.Error(err)
			}
		}()
	}
	b, err := newBench(reg, dev, 1<<20, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.s.Close()
	for _, id := range kernels.IDs() {
		w, err := newWorkload(reg, id, 700*infoOf(id).perItem)
		if err != nil {
			t.Fatal(err)
		}
		if w.items != 700 || w.chunk != 700 || w.chunks() != 1 {
			t.Fatalf("%s: %d items in chunks of %d", w.kern.Name, w.items, w.chunk)
		}
		if err := b.runCPU1(w); err != nil {
			t.Fatal(err)
		}
		want := snapshot(w)
		w.chunk = 256 // 256, 256, 188
		poison(w)
		if err := b.runTasks(w, sched.AnyWorker, nil); err != nil {
			t.Fatal(err)
		}
		if err := compare(w, devCPUAll, want, views(w)); err != nil {
			t.Fatalf("3 chunks on the CPU: %v", err)
		}
		if dev == nil {
			continue
		}
		poison(w)
		if err := b.runTasks(w, sched.GPU, nil); err != nil {
			t.Fatal(err)
		}
		if err := compare(w, devGPUXfer, want, views(w)); err != nil {
			t.Fatalf("3 chunks on the GPU, host streams: %v", err)
		}
		res, err := b.resident(w)
		if err != nil {
			t.Fatal(err)
		}
		err = b.runTasks(w, sched.GPU, res.ids)
		if err == nil {
			err = res.compare(w, devGPU, want)
		}
		res.close()
		if err != nil {
			t.Fatalf("3 chunks on the GPU, resident buffers: %v", err)
		}
	}
}

// TestSPUColumn: the spu column runs tasks of -spu-chunk items through a
// local store of -spu-store bytes, checked against cpu-1, and reports the
// share of time spent waiting on the simulated DMA; a local store too
// small for a kernel's streams leaves its column empty with a note.
func TestSPUColumn(t *testing.T) {
	code, out, errs := runKbench("-cpu-only", "-json", "-kernels", "saxpy,local_to_model_skin", "-sizes", "3e3", "-reps", "1", "-min-sample", "0",
		"-spu-store", "8192", "-spu-chunk", "700")
	if code != exitOK {
		t.Fatalf("exit status %d; stderr:\n%s", code, errs)
	}
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	x := rep.result("saxpy", 3000, devSPU)
	if rep.SPULocalStore != 8192 || rep.SPUChunk != 700 || x == nil || x.Seconds <= 0 || x.BoundFraction <= 0 ||
		x.DMAWaitFraction < 0 || x.DMAWaitFraction > 1 {
		t.Fatalf("spu result %+v (store %d, chunk %d)", x, rep.SPULocalStore, rep.SPUChunk)
	}
	// 90 bones x (48 + 2 x 64) bytes per skeleton do not fit 8 KiB.
	if rep.result("local_to_model_skin", 3000, devSPU) != nil || len(rep.SPUNotes) != 1 ||
		!strings.Contains(rep.SPUNotes[0].Note, "does not fit a local store of 8192 bytes") {
		t.Fatalf("spu notes %+v", rep.SPUNotes)
	}
}

// TestBest: -best reports each measurement's fastest sample.
func TestBest(t *testing.T) {
	code, out, errs := runKbench("-cpu-only", "-json", "-best", "-kernels", "saxpy", "-sizes", "1e3", "-reps", "3", "-min-sample", "0")
	if code != exitOK {
		t.Fatalf("exit status %d; stderr:\n%s", code, errs)
	}
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Best || len(rep.Results) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for _, x := range rep.Results {
		if len(x.Samples) != 3 || x.Seconds != min(x.Samples[0], x.Samples[1], x.Samples[2]) {
			t.Fatalf("%s: %g s, samples %v: want the fastest", x.Device, x.Seconds, x.Samples)
		}
	}
}
