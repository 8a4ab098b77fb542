package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/internal/version"
)

var built struct {
	sync.Once
	bin string
	err error
	out []byte
}

// buildCrowd builds the command once per test binary (into a directory
// TestMain removes) for the tests that run it as a process.
func buildCrowd(t *testing.T) string {
	t.Helper()
	built.Do(func() {
		built.bin = filepath.Join(cacheDir, "crowd-bin")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	if _, err := runApp([]string{"-version"}, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "crowd "+version.Version+" (") {
		t.Errorf("crowd -version printed %q", got)
	}
}

// TestHelpText: each default is stated once.
func TestHelpText(t *testing.T) {
	var out bytes.Buffer
	parseFlags([]string{"-h"}, &out)
	h := out.String()
	if !strings.Contains(h, "Esc") || !strings.Contains(h, "SIGINT") || !strings.Contains(h, "-version") {
		t.Errorf("help lacks Esc, SIGINT or -version:\n%s", h)
	}
	for _, bad := range []string{"(default 120) (default 120)", "(headless default 120) (default", "(default 90) (default 90)"} {
		if strings.Contains(h, bad) {
			t.Errorf("help repeats a default: %q", bad)
		}
	}
	if strings.Count(h, "default 120") != 1 {
		t.Errorf("the frames default is stated %d times:\n%s", strings.Count(h, "default 120"), h)
	}
}

// TestOutputsCheckedFirst: an output that cannot be written fails the run
// before any content is built or frame drawn, naming the flag and the path.
func TestOutputsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, path, want string }{
		{"-trace", "/nonexistent-dir/t.json", "no directory /nonexistent-dir"},
		{"-timeline", filepath.Join(file, "t.svg"), "not a directory"},
		{"-out", dir, "is a directory"},
	} {
		var out bytes.Buffer
		start := time.Now()
		_, err := runApp([]string{"-cache", cacheDir, "-headless", c.flag, c.path}, &out)
		if err == nil || !strings.Contains(err.Error(), c.flag+" "+c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: err %v, want one naming the flag, the path and %q", c.flag, c.path, err, c.want)
		}
		if strings.Contains(out.String(), "content:") {
			t.Errorf("%s %s: the content was built before the output was checked:\n%s", c.flag, c.path, out.String())
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s %s: failing took %v", c.flag, c.path, d)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the checks left files behind: %v", ents)
	}
}

// TestProgress: a run of known length reports each quarter on a
// non-terminal, one line each, and allocates nothing per report.
func TestProgress(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, 10, false)
	for f := 1; f <= 10; f++ {
		p.frame(f)
	}
	p.end()
	if got, want := out.String(), "frames 3/10\nframes 5/10\nframes 8/10\nframes 10/10\n"; got != want {
		t.Errorf("progress printed %q, want %q", got, want)
	}
	if newProgress(&out, 10, true) != nil || newProgress(&out, 0, false) != nil {
		t.Error("quiet runs and runs of unknown length report progress")
	}
	p = newProgress(&out, 1<<30, false)
	f := 0
	if n := testing.AllocsPerRun(1000, func() { f++; p.frame(f) }); n != 0 {
		t.Errorf("progress allocates %v per frame", n)
	}
}

// TestModelAsItIs: a user's glTF is drawn with its own joints; -bones adds
// procedural ones on request.
func TestModelAsItIs(t *testing.T) {
	c, err := parseFlags([]string{"-model", "testdata/cesium_man.gltf"}, &bytes.Buffer{})
	if err != nil || c.bones != 0 {
		t.Fatalf("-model: bones %d (%v), want 0 (the model's joints)", c.bones, err)
	}
	c, err = parseFlags([]string{"-model", "testdata/cesium_man.gltf", "-bones", "40"}, &bytes.Buffer{})
	if err != nil || c.bones != 40 {
		t.Fatalf("-model -bones 40: bones %d (%v)", c.bones, err)
	}
	c, err = parseFlags(nil, &bytes.Buffer{})
	if err != nil || c.bones != defaultBones {
		t.Fatalf("no flags: bones %d (%v), want %d", c.bones, err, defaultBones)
	}
}

// TestStopWritesOutputs: a stop request (as SIGINT delivers) after the
// warm-up ends the run after the frames in flight, with the PNG, trace,
// timeline and summary written.
func TestStopWritesOutputs(t *testing.T) {
	needVulkan(t)
	dir := t.TempDir()
	png, tr, svg := filepath.Join(dir, "c.png"), filepath.Join(dir, "c.json"), filepath.Join(dir, "c.svg")
	stop := make(chan os.Signal, 1)
	onTimed = func() { stop <- os.Interrupt }
	defer func() { onTimed = nil }()
	var out bytes.Buffer
	args := []string{"-cache", cacheDir, "-headless", "-model", "testdata/cesium_man.gltf", "-count", "6", "-frames", "100000", "-warmup", "3",
		"-size", "160x120", "-out", png, "-trace", tr, "-timeline", svg}
	a, err := runApp(args, &out, runOptions{stop: stop})
	var in *interrupted
	if !errors.As(err, &in) || in.exitCode() != 130 {
		t.Fatalf("err %v (%T), want *interrupted with exit code 130\n%s", err, err, out.String())
	}
	if a.issued < 4 || a.issued > 10 {
		t.Errorf("%d frames issued: want the warm-up and the frames in flight", a.issued)
	}
	checkOutputFiles(t, out.String(), png, tr, svg)
}

func checkOutputFiles(t *testing.T, out string, png, tr, svg string) {
	t.Helper()
	for _, p := range []string{png, tr, svg} {
		if !strings.Contains(out, "wrote "+p+" ") {
			t.Errorf("the output does not say it wrote %s (absolute)", p)
		}
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if !strings.Contains(out, "== crowd summary ==") || !strings.Contains(out, "stopped early by") {
		t.Errorf("no summary of the stopped run:\n%s", out)
	}
	if b, err := os.ReadFile(tr); err == nil && !json.Valid(b) {
		t.Errorf("%s is not valid JSON", tr)
	}
	readPNG(t, png)
}

// TestSIGINT sends SIGINT to a running crowd process: it finishes the
// frames in flight, writes the PNG, trace, timeline and summary, and exits
// with 130 as a shell reports an interrupted command.
func TestSIGINT(t *testing.T) {
	needVulkan(t)
	bin := buildCrowd(t)
	dir := t.TempDir()
	png, tr, svg := filepath.Join(dir, "c.png"), filepath.Join(dir, "c.json"), filepath.Join(dir, "c.svg")
	cmd := exec.Command(bin, "-cache", cacheDir, "-headless", "-model", "testdata/cesium_man.gltf", "-count", "6", "-frames", "1000000",
		"-size", "160x120", "-out", png, "-trace", tr, "-timeline", svg)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var out bytes.Buffer
	running := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "run: ") {
				close(running) // setup done: the frame loop starts now
			}
		}
	}()
	select {
	case <-running:
	case <-time.After(60 * time.Second):
		t.Fatalf("crowd did not start its frames within 60 s:\n%s", stderr.String())
	}
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { <-copied; done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("crowd did not end within 60 s of SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want status 130\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped by interrupt") {
		t.Errorf("stderr: %q", stderr.String())
	}
	checkOutputFiles(t, out.String(), png, tr, svg)
}

// TestSecondSignalNotDropped: the first signal restores the default action
// at once, even while the frame loop is not reading (it waits for a frame
// that takes minutes with a large crowd), so a second Ctrl-C ends the
// process instead of being dropped; the loop still gets the first signal.
func TestSecondSignalNotDropped(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	reset := make(chan struct{})
	stop, cancel := relaySignals(sigs, func() { close(reset) })
	defer cancel()
	sigs <- syscall.SIGINT // nobody reads stop meanwhile
	select {
	case <-reset:
	case <-time.After(time.Minute): // a hang watchdog
		t.Fatal("the first signal did not restore the default action while the loop was busy")
	}
	select {
	case sig := <-stop:
		if sig != syscall.SIGINT {
			t.Errorf("the loop got %v, want interrupt", sig)
		}
	case <-time.After(time.Minute):
		t.Fatal("the loop never got the first signal")
	}
	// cancel without a signal ends the relay without calling reset.
	_, cancel2 := relaySignals(make(chan os.Signal), func() { t.Error("reset without a signal") })
	cancel2()
	cancel2()
}
