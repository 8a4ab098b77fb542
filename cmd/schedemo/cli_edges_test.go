package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestParticleCountBounds: a -n too large for memory or for a task's
// uint32 element count is refused with the flag and its value named, not
// answered with a runtime panic and a stack trace.
func TestParticleCountBounds(t *testing.T) {
	for _, n := range []string{"1152921504606846976", "9223372036854775776"} { // 2^60, and the largest multiple of 32
		out, err := runSelf(t, "-n", n)
		if err == nil {
			t.Errorf("schedemo -n %s: exit 0\n%s", n, out)
		}
		if !strings.Contains(out, "schedemo: -n "+n) || strings.Contains(out, "panic:") || strings.Contains(out, "goroutine 1 [") {
			t.Errorf("schedemo -n %s: want an error naming -n and its value, no panic:\n%s", n, out)
		}
	}
}

// TestBadFlagNamesTheFlag: each bad value is reported with the flag it
// came from and the value, not a sentence about every flag at once.
func TestBadFlagNamesTheFlag(t *testing.T) {
	for _, c := range []struct{ args, want, notWant string }{
		{"-n 33", "-n 33:", "-frames"},
		{"-n 0", "-n 0:", "-frames"},
		{"-n -64", "-n -64:", "-frames"},
		{"-frames 0", "-frames 0:", "-n "},
		{"-frames -5", "-frames -5:", "-n "},
	} {
		out, err := runSelf(t, strings.Fields(c.args)...)
		if err == nil || !strings.Contains(out, c.want) || strings.Contains(out, c.notWant) {
			t.Errorf("schedemo %s: err %v, want a message with %q and without %q:\n%s", c.args, err, c.want, c.notWant, out)
		}
	}
}

// TestMalformedFlags: values the flag package cannot parse exit non-zero
// with the flag named and no stack trace.
func TestMalformedFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "x"}, {"-frames", "1e3"}, {"-n", "99999999999999999999999"}, {"-bogus"}} {
		out, err := runSelf(t, args...)
		if err == nil || !strings.Contains(out, args[0]) || strings.Contains(out, "goroutine 1 [") {
			t.Errorf("schedemo %v: err %v:\n%s", args, err, out)
		}
	}
}

// TestResultsWriteFailure: results that cannot be written (standard
// output on a full device) end in a non-zero exit and a message, not an
// exit 0 with nothing shown.
func TestResultsWriteFailure(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SCHEDEMO_RUN_MAIN=1", "SCHEDEMO_ARGS=-n 32 -frames 1")
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = full, &errb
	if err := cmd.Run(); err == nil || !strings.Contains(errb.String(), "schedemo: writing the results") {
		t.Errorf("schedemo > /dev/full: %v, stderr:\n%s", err, errb.String())
	}
}
