package main

import (
	"bytes"
	"errors"
	"github.com/vkjobs/vkjobs/internal/outfile"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// kbenchProcess runs kbench as a subprocess (the test binary with
// KBENCH_RUN_MAIN=1), so that a panic shows as the process's output
// rather than ending the test binary.
func kbenchProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "KBENCH_RUN_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("kbench %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// TestSPUStoreUpperBound: a local store too large to allocate is a usage
// error naming -spu-store, not a panic in the executor's constructor.
func TestSPUStoreUpperBound(t *testing.T) {
	for _, v := range []string{"9223372036854775807", "4611686018427387904"} { // max int, 2^62
		code, out, errs := kbenchProcess(t, "-cpu-only", "-kernels", "saxpy", "-sizes", "1e3", "-reps", "1", "-min-sample", "0", "-spu-store", v)
		if code != exitUsage || out != "" || !strings.Contains(errs, "kbench: -spu-store "+v) || strings.Contains(errs, "panic:") {
			t.Errorf("-spu-store %s: exit %d, stdout %q, stderr:\n%.600s", v, code, out, errs)
		}
	}
}

// TestModeFlagsWithoutTheirMode: a flag of -auto or -adapt given without
// its mode is refused, as -trace and -timeline are, rather than ignored;
// a NaN or infinite -explore-budget is refused.
func TestModeFlagsWithoutTheirMode(t *testing.T) {
	// Every case is small, so that a kbench that ignored the flag would
	// finish its run quickly (and fail the test) rather than measure for
	// minutes.
	small := []string{"-kernels", "saxpy", "-sizes", "1e3", "-reps", "1", "-min-sample", "0"}
	cpu := append([]string{"-cpu-only"}, small...)
	adapt := append([]string{"-adapt", "-adapt-load", "spin", "-adapt-tasks", "30"}, small...)
	auto := append([]string{"-auto"}, small...)
	for _, c := range []struct {
		mode []string
		args []string
		msg  string
	}{
		{cpu, []string{"-adapt-tasks", "5"}, "-adapt-tasks is a flag of -adapt"},
		{cpu, []string{"-adapt-load", "disk"}, "-adapt-load is a flag of -adapt"},
		{cpu, []string{"-reprobe", "-3"}, "-reprobe is a flag of -adapt"},
		{cpu, []string{"-auto-tasks", "10"}, "-auto-tasks is a flag of -auto"},
		{cpu, []string{"-auto-rounds", "2"}, "-auto-rounds is a flag of -auto"},
		{adapt, []string{"-auto-rounds", "2"}, "-auto-rounds is a flag of -auto"},
		{cpu, []string{"-explore-budget", "0.1"}, "-explore-budget is a flag of -auto and -adapt"},
		{auto, []string{"-auto-tasks", "1", "-auto-rounds", "1", "-explore-budget", "NaN"}, "-explore-budget NaN: want a finite fraction"},
		{adapt, []string{"-explore-budget", "-Inf"}, "-explore-budget -Inf: want a finite fraction"},
	} {
		args := append(append([]string{}, c.mode...), c.args...)
		code, out, errs := runKbench(args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.msg) {
			t.Errorf("kbench %v: exit %d, stdout %.200q, stderr:\n%.400s\nwant exit 2 and %q", args, code, out, errs, c.msg)
		}
	}
	// With their mode they parse.
	if o, code := parseFlags([]string{"-auto", "-auto-tasks", "10", "-auto-rounds", "2", "-explore-budget", "-1"}, io.Discard); o == nil || code != exitOK {
		t.Errorf("-auto with its flags: exit %d", code)
	}
	if o, code := parseFlags([]string{"-adapt", "-adapt-tasks", "40", "-adapt-load", "spin", "-reprobe", "-1", "-explore-budget", "0.05"}, io.Discard); o == nil || code != exitOK {
		t.Errorf("-adapt with its flags: exit %d", code)
	}
}

// TestTraceAndTimelineCheckedFirst: an unwritable -trace or -timeline
// fails before the -adapt run, as -plot does, not after it; nothing is
// left behind.
func TestTraceAndTimelineCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a.svg")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-trace", filepath.Join(dir, "missing", "t.json")}, "-trace: open " + filepath.Join(dir, "missing", "t.json")},
		{[]string{"-timeline", sub}, "-timeline: open " + sub + ": is a directory"},
	} {
		args := append([]string{"-adapt", "-adapt-load", "spin", "-adapt-tasks", "30", "-kernels", "saxpy", "-sizes", "1e3"}, c.args...)
		code, out, errs := runKbench(args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.msg) {
			t.Errorf("kbench %v: exit %d, stdout %q, stderr:\n%.400s\nwant exit 2 before measuring and %q", c.args, code, out, errs, c.msg)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the checks left files behind: %v", ents)
	}
}

// limitFileSize sets RLIMIT_FSIZE for the test's process (writes past it
// fail with EFBIG: Go ignores SIGXFSZ) and restores it at the test's end.
func limitFileSize(t *testing.T, bytes uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: bytes, Max: old.Max}); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) })
}

// TestFailedPlotKeepsTheOldFile: a plot whose write fails part-way (here
// the file size limit) exits 1 naming the file, and leaves the file that
// was there as it was, with no partial plot and no temporary file.
func TestFailedPlotKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "k.svg")
	const old = "<svg>the previous plot</svg>\n"
	if err := os.WriteFile(file, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	limitFileSize(t, 2048)
	code, _, errs := runKbench("-cpu-only", "-kernels", "saxpy", "-sizes", "1e3", "-reps", "1", "-min-sample", "0", "-plot", file)
	if code != exitError || !strings.Contains(errs, "writing the plot") || !strings.Contains(errs, file) {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != old {
		t.Errorf("after the failed write the plot holds %d bytes (%v), want the previous file's %d", len(b), err, len(old))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left in the directory: %v", ents)
	}
}

// TestWriteFile: a successful write replaces the file whole (mode 0644);
// a failing one keeps it; a device is written in place.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.svg")
	if err := outfile.Write(file, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("written file: %v, %v", fi.Mode(), err)
	}
	boom := errors.New("boom")
	err := outfile.Write(file, func(w io.Writer) error { io.WriteString(w, "partial"); return boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), file) {
		t.Errorf("failing write: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "new" {
		t.Errorf("after a failing write the file holds %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left in the directory: %v", ents)
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		link := filepath.Join(dir, "full.svg")
		if err := os.Symlink("/dev/full", link); err != nil {
			t.Fatal(err)
		}
		err := outfile.Write(link, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		if err == nil || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("write to /dev/full: %v", err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link to /dev/full was replaced: %v, %v", fi.Mode(), err)
		}
	}
}
