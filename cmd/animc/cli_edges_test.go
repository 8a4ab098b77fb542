package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const testModel = "../crowd/testdata/rigged_simple.gltf"

// runAnimc runs the command in-process with the sampler's timing off.
func runAnimc(args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	err = run(append([]string{"-timing=false"}, args...), &out, &errb)
	return out.String(), errb.String(), err
}

// TestFlagValuesRefusedByName: every bad flag value is refused before
// any file is read, with the flag and the value named, rather than
// accepted as a default (NaN rates, negative -resample), or reported
// after the import under the compressor's option names.
func TestFlagValuesRefusedByName(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-error", "Inf"}, "-error +Inf: want a finite value above 0"},
		{[]string{"-error", "NaN"}, "-error NaN:"},
		{[]string{"-error", "0"}, "-error 0:"},
		{[]string{"-share", "Inf"}, "-share +Inf:"},
		{[]string{"-share", "-1"}, "-share -1:"},
		{[]string{"-segment", "Inf"}, "-segment +Inf:"},
		{[]string{"-passes", "0"}, "-passes 0: want at least 1"},
		{[]string{"-uniform-segment", "3"}, "-uniform-segment 3: want a power of two from 2 to 256"},
		{[]string{"-uniform-segment", "0"}, "-uniform-segment 0:"},
		{[]string{"-uniform-segment", "512", "-codec", "uniform"}, "-uniform-segment 512:"},
		{[]string{"-rates", "NaN"}, `-rates: bad rate "NaN"`},
		{[]string{"-rates", "0,NaN"}, `-rates: bad rate "NaN"`},
		{[]string{"-rates", "2e4"}, `-rates: bad rate "2e4"`},
		{[]string{"-resample", "NaN"}, "-resample NaN: want a rate in Hz"},
		{[]string{"-resample", "-5"}, "-resample -5:"},
		{[]string{"-resample", "1e300"}, "-resample 1e+300:"},
		{[]string{"-rate", "NaN"}, "-rate NaN: want a rate in Hz"},
		{[]string{"-rate", "-3"}, "-rate -3:"},
		{[]string{"-rate", "Inf"}, "-rate +Inf:"},
		{[]string{"-unit", "furlong"}, `-unit: anim: unknown unit "furlong"`},
		{[]string{"-codec", "zip"}, `-codec: anim: unknown codec "zip"`},
	} {
		_, errs, err := runAnimc(append(c.args, testModel)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("animc %v: %v, want an error with %q", c.args, err, c.want)
		}
		if strings.Contains(errs, "animc: [") {
			t.Errorf("animc %v: compressed before refusing the flag:\n%s", c.args, errs)
		}
	}
	// The limits themselves are accepted.
	if _, _, err := runAnimc("-uniform-segment", "256", "-codec", "uniform", "-rates", "0,1e4", testModel); err != nil {
		t.Errorf("-uniform-segment 256 -rates 0,1e4: %v", err)
	}
}

// TestOutputCheckedBeforeCompressing: an -o that cannot be written (a
// directory, a missing directory) fails before any clip is compressed,
// naming -o and the path.
func TestOutputCheckedBeforeCompressing(t *testing.T) {
	dir := t.TempDir()
	for _, out := range []string{dir, filepath.Join(dir, "missing", "x.blob")} {
		_, errs, err := runAnimc("-o", out, testModel)
		if err == nil || !strings.Contains(err.Error(), "-o: ") || !strings.Contains(err.Error(), out) {
			t.Errorf("-o %s: %v", out, err)
		}
		if strings.Contains(errs, "animc: [") {
			t.Errorf("-o %s: compressed before finding the output unwritable:\n%s", out, errs)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the checks left files behind: %v", ents)
	}
}

// TestFailedOutputKeepsTheOldFile: a blob whose write fails part-way
// (the file size limit; Go ignores SIGXFSZ, so the write fails with
// EFBIG) leaves the file that was there as it was, with no partial blob
// and no temporary file; a device (/dev/full) is written in place and
// its failure reported.
func TestFailedOutputKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "clips.blob")
	const old = "the previous blob"
	if err := os.WriteFile(file, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 256, Max: lim.Max}); err != nil {
		t.Skip(err)
	}
	_, _, err := runAnimc("-o", file, testModel)
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("write past the size limit: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != old {
		t.Errorf("after the failed write the output holds %d bytes (%v), want the previous file's %d", len(b), err, len(old))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left in the directory: %v", ents)
	}

	if _, err := os.Stat("/dev/full"); err == nil {
		link := filepath.Join(dir, "full.blob")
		if err := os.Symlink("/dev/full", link); err != nil {
			t.Fatal(err)
		}
		if _, _, err := runAnimc("-o", link, testModel); err == nil || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("-o to /dev/full: %v", err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link to /dev/full was replaced: %v", err)
		}
	}

	// A successful write replaces the file whole.
	if _, _, err := runAnimc("-o", file, testModel); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); len(b) < 64 || string(b) == old {
		t.Errorf("written blob: %d bytes", len(b))
	}
}

// TestFileWithoutClips: a model with a skeleton and no animation is an
// error naming the file, not a report of 0 clips with a NaN ratio.
func TestFileWithoutClips(t *testing.T) {
	src, err := os.ReadFile(testModel)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "animations")
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "still.gltf")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runAnimc(file)
	if err == nil || !strings.Contains(err.Error(), file+": no animation clip") {
		t.Errorf("model without animations: %v\n%s", err, out)
	}
	if strings.Contains(out, "NaN") {
		t.Errorf("report with NaN:\n%s", out)
	}
}

// TestBadInputFiles: missing, unreadable and malformed inputs fail with
// the file named, never a panic.
func TestBadInputFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bvh, err := os.ReadFile("/usr/share/assimp/models/BVH/01_01.bvh")
	if err != nil {
		bvh = []byte("HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n")
	}
	sub := filepath.Join(dir, "dir.bvh")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte{0xaf, 0x06, 0x00, 0xff, '{'}, 400)
	for _, file := range []string{
		filepath.Join(dir, "missing.bvh"),
		sub,
		write("empty.bvh", nil),
		write("empty.gltf", nil),
		write("empty.glb", nil),
		write("garbage.bvh", garbage),
		write("garbage.glb", garbage),
		write("object.gltf", []byte("{}")),
		write("truncated.bvh", bvh[:min(len(bvh), 2000)]),
		write("notes.txt", []byte("hello")),
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic: %v", file, r)
				}
			}()
			_, _, err = runAnimc(file)
		}()
		if err == nil || !strings.Contains(err.Error(), filepath.Base(file)) {
			t.Errorf("%s: %v, want an error naming the file", file, err)
		}
	}
}

// failingWriter fails every write, as a full disk or a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestReportWriteFailure: a report that cannot be written is an error,
// not a success with nothing shown.
func TestReportWriteFailure(t *testing.T) {
	var errb bytes.Buffer
	err := run([]string{"-timing=false", testModel}, failingWriter{}, &errb)
	if err == nil || !strings.Contains(err.Error(), "writing the report") || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("report to a failing writer: %v", err)
	}
}
