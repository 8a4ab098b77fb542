package gpubundle

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repack replaces files of a fake bundle's payload (path relative to
// payload/ -> shell script body) and writes payload.tar.gz again.
func repack(t *testing.T, b string, scripts map[string]string) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", b+"/payload.tar.gz", "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	for path, body := range scripts {
		write(t, dir+"/payload/"+path, "#!/bin/sh\n"+body)
		if err := os.Chmod(dir+"/payload/"+path, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("tar", "-C", dir, "-czf", b+"/payload.tar.gz", "payload").CombinedOutput(); err != nil {
		t.Fatalf("tar -c: %v\n%s", err, out)
	}
}

// TestRunKilledMidStepLeavesReport: a run killed with SIGKILL (a lost
// machine, an outer time limit) while a test binary runs leaves a report
// that lists the steps done and names the step it was in.
func TestRunKilledMidStepLeavesReport(t *testing.T) {
	b := fakeBundle(t)
	repack(t, b, map[string]string{"pkg/b/b.test": `echo "=== RUN   TestSlow"; sleep 60`})
	icd := filepath.Join(t.TempDir(), "icd.json")
	write(t, icd, "{}")
	rep := t.TempDir()
	cmd := exec.Command("bash", b+"/run.sh", "--driver", icd, rep)
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the whole run (run.sh, timeout(1), the test binary) once the
	// slow step has started.
	var report []byte
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		report, _ = os.ReadFile(rep + "/report.txt")
		if strings.Contains(string(report), "test-b") || time.Now().After(deadline) {
			break
		}
	}
	// timeout(1) puts itself in a process group of its own: each
	// descendant is killed by its id, then run.sh's group.
	for _, pid := range descendants(cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	report, err := os.ReadFile(rep + "/report.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := string(report)
	for _, want := range []string{
		`(?m)^  FAIL +\S+s  test-a +31 passed, 1 failed`,
		`(?m)^  RUNNING +\S+s  test-b +started at this time into the run, at most \d+s$`,
		`(?m)^result: INCOMPLETE: the run was still in step test-b when this report was written$`,
	} {
		if !regexp.MustCompile(want).MatchString(r) {
			t.Errorf("report of a run killed in test-b lacks %s\n%s", want, r)
		}
	}
}

// TestCarriedShaderTools: the shader tools the tests call (glslc,
// glslangValidator, spirv-as) are put on the tests' PATH from the bundle
// when the machine lacks them (VKJOBS_BUNDLE_ALL_LIBS=1 stands for such a
// machine), and the report says which were used.
func TestCarriedShaderTools(t *testing.T) {
	b := fakeBundle(t)
	repack(t, b, map[string]string{
		"tools/glslc":    `echo carried-glslc`,
		"tools/spirv-as": `echo carried-spirv-as`,
		// c.test passes only when glslc on its PATH is the carried one.
		"pkg/c/c.test": `[ "$(glslc)" = carried-glslc ] || { echo "--- FAIL: TestTool (glslc is $(command -v glslc))"; exit 1; }
echo "=== RUN   TestTool"; echo "--- PASS: TestTool (0.00s)"; echo PASS`,
	})
	icd := filepath.Join(t.TempDir(), "icd.json")
	write(t, icd, "{}")
	rep := t.TempDir()
	// A PATH without the machine's glslc, as on a GPU server.
	bin := t.TempDir()
	for _, tool := range []string{"bash", "sh", "env", "timeout", "tar", "gzip", "xz", "dd", "stat", "head", "tail", "tr", "cut", "sed", "awk",
		"grep", "sort", "paste", "mkdir", "mktemp", "rm", "cp", "ln", "mv", "cat", "date", "dirname", "basename", "find", "readlink",
		"uname", "nproc", "getconf", "gzip", "true", "dpkg-deb", "ldconfig", "sleep", "printf", "wc"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(bin, tool))
		}
	}
	cmd := exec.Command("bash", b+"/run.sh", "--driver", icd, rep)
	cmd.Env = append(cleanEnv(), "PATH="+bin)
	out, _ := cmd.CombinedOutput()
	report, err := os.ReadFile(rep + "/report.txt")
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out)
	}
	r := string(report)
	for _, want := range []string{
		`carried shader tools used: glslc spirv-as$`,
		`(?m)^  PASS +\S+s  test-c +1 passed, 0 failed, 0 skipped$`,
	} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(r) {
			t.Errorf("report lacks %s\n%s\n%s", want, r, out)
		}
	}
}

// descendants lists the processes below pid (from /proc/PID/stat).
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var p int
		if _, err := fmt.Sscan(e.Name(), &p); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		var state string
		var ppid int
		if i < 0 {
			continue
		}
		if _, err := fmt.Sscan(s[i+1:], &state, &ppid); err == nil {
			parent[p] = ppid
		}
	}
	var out []int
	want := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if want[pp] && !want[p] {
				want[p] = true
				out = append(out, p)
				changed = true
			}
		}
	}
	return out
}

// TestRunEndsWithVerdict: the run's output ends with the device, every
// step and the result line, so that the end of the output alone (a tool
// that keeps its last kilobytes) says what passed, however long the
// tables above it are.
func TestRunEndsWithVerdict(t *testing.T) {
	b := fakeBundle(t)
	icd := filepath.Join(t.TempDir(), "icd.json")
	write(t, icd, "{}")
	rep := t.TempDir()
	cmd := exec.Command("bash", b+"/run.sh", "--driver", icd, rep)
	cmd.Env = cleanEnv()
	out, _ := cmd.Output() // stdout only: the report
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) < 13 {
		t.Fatalf("output of %d lines:\n%s", len(lines), out)
	}
	tail := strings.Join(lines[len(lines)-13:], "\n")
	if !regexp.MustCompile(`^device: Fake GPU \(discrete\)\n  PASS .* setup `).MatchString(tail) ||
		!strings.HasSuffix(tail, "\n"+regexp.MustCompile(`(?m)^result: .*$`).FindString(tail)) ||
		!regexp.MustCompile(`(?m)^result: 9 of 11 steps passed`).MatchString(tail) ||
		len(regexp.MustCompile(`(?m)^  (PASS|FAIL|TIMEOUT) `).FindAllString(tail, -1)) != 11 {
		t.Errorf("the output's last 13 lines are not the device, the 11 steps and the result:\n%s", tail)
	}
}

// TestBudgetCutTimeoutNamed: a test binary timed out within the little the
// budget left it is reported as such, not as a plain hang.
func TestBudgetCutTimeoutNamed(t *testing.T) {
	b := fakeBundle(t)
	repack(t, b, map[string]string{"pkg/a/a.test": `echo "=== RUN   TestSlow"; sleep 60`})
	icd := filepath.Join(t.TempDir(), "icd.json")
	write(t, icd, "{}")
	rep := t.TempDir()
	// 200 s of budget less the 190 s the later steps keep: test-a gets
	// about 10 s of its 150.
	cmd := exec.Command("bash", b+"/run.sh", "--budget", "200", "--driver", icd, rep)
	cmd.Env = cleanEnv()
	out, _ := cmd.CombinedOutput()
	report, err := os.ReadFile(rep + "/report.txt")
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out)
	}
	if want := regexp.MustCompile(`(?m)^  TIMEOUT +\S+s  test-a +.*the budget left this step \d+s of its 150s: slow, not necessarily hung$`); !want.Match(report) {
		t.Errorf("report lacks %s\n%s", want, report)
	}
}
