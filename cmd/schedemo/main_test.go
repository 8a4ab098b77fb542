package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/internal/version"
)

// TestMain runs main when the test binary is started by runSelf, so that
// the tests see the command's real flag handling and exit status without
// building it.
func TestMain(m *testing.M) {
	if os.Getenv("SCHEDEMO_RUN_MAIN") == "1" {
		os.Args = append([]string{"schedemo"}, strings.Fields(os.Getenv("SCHEDEMO_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runSelf(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SCHEDEMO_RUN_MAIN=1", "SCHEDEMO_ARGS="+strings.Join(args, " "))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestVersionFlag(t *testing.T) {
	out, err := runSelf(t, "-version")
	if err != nil {
		t.Fatalf("schedemo -version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "schedemo "+version.Version+" ") {
		t.Errorf("schedemo -version printed %q", out)
	}
}

// TestHelp: -h describes the program and names it schedemo, not the path
// of a binary in the build cache.
func TestHelp(t *testing.T) {
	out, _ := runSelf(t, "-h")
	if !strings.HasPrefix(out, "usage: schedemo [flags]\n") || !strings.Contains(out, "scheduler") || !strings.Contains(out, "-version") {
		t.Errorf("schedemo -h:\n%s", out)
	}
	if strings.Contains(out, os.Args[0]) || strings.Contains(out, "go-build") {
		t.Errorf("schedemo -h shows a binary's path:\n%s", out)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{"-n", "33"}, {"-frames", "0"}, {"extra"}} {
		out, err := runSelf(t, args...)
		if err == nil || !strings.Contains(out, "schedemo:") {
			t.Errorf("schedemo %v: err %v, output %q", args, err, out)
		}
	}
}
