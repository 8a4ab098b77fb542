package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestHostMemoryCheck: a -count whose estimated host memory exceeds what
// is available is refused before the crowd is allocated, with an error
// naming -count, the estimate, the memory available and the largest count
// that fits; exactly the estimate is enough, and an unreadable figure
// skips the check.
func TestHostMemoryCheck(t *testing.T) {
	run := func(count int, avail func() (uint64, bool)) (*app, string, error) {
		t.Helper()
		var out bytes.Buffer
		args := []string{"-cache", cacheDir, "-headless", "-model", "testdata/cesium_man.gltf", "-render=false",
			"-count", fmt.Sprint(count), "-frames", "1", "-q"}
		a, err := runApp(args, &out, runOptions{memAvailable: avail})
		return a, out.String(), err
	}
	const n = 6
	a, out, err := run(n, func() (uint64, bool) { return 1 << 62, true })
	if err != nil {
		t.Fatalf("-count %d with ample memory: %v\n%s", n, err, out)
	}
	need := a.hostBytes(n)
	for _, smaller := range []int{0, 1, n - 1} {
		if a.hostBytes(smaller) >= need {
			t.Fatalf("estimate for %d characters (%d bytes) is not below %d's (%d)", smaller, a.hostBytes(smaller), n, need)
		}
	}
	// The buffer sets alone: local, model and palette matrices per bone.
	if sets := uint64(a.cfg.pipeline * n * a.rig.Bones * (48 + 64 + 64)); need < sets {
		t.Fatalf("estimate %d bytes is below the buffer sets' %d", need, sets)
	}

	if _, out, err := run(n, func() (uint64, bool) { return need, true }); err != nil {
		t.Fatalf("-count %d with exactly the estimated %d bytes available: %v\n%s", n, need, err, out)
	}
	if _, out, err := run(n, func() (uint64, bool) { return 0, false }); err != nil {
		t.Fatalf("-count %d with the available memory unknown: %v\n%s", n, err, out)
	}

	a, _, err = run(n, func() (uint64, bool) { return need - 1, true })
	if err == nil {
		t.Fatalf("-count %d ran with %d bytes available, %d needed", n, need-1, need)
	}
	fit := 0
	for a.hostBytes(fit+1) <= need-1 {
		fit++
	}
	for _, want := range []string{fmt.Sprintf("-count %d ", n), fmt.Sprintf("about %d bytes", need),
		fmt.Sprintf("%d bytes (", need-1), fmt.Sprintf("at most %d characters fit", fit)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if a.w != nil {
		t.Errorf("the crowd was allocated before the check refused it")
	}
}

// TestParseMemAvailable: the MemAvailable line of /proc/meminfo, in kB,
// becomes bytes; a missing or malformed line is "unknown".
func TestParseMemAvailable(t *testing.T) {
	for _, c := range []struct {
		text string
		want uint64
		ok   bool
	}{
		{"MemTotal:       16318776 kB\nMemFree:         1011488 kB\nMemAvailable:   12345678 kB\nBuffers: 1 kB\n", 12345678 * 1024, true},
		{"MemAvailable: 0 kB\n", 0, true},
		{"MemTotal:       16318776 kB\nMemFree:         1011488 kB\n", 0, false},
		{"MemAvailable: lots kB\n", 0, false},
		{"MemAvailable: -5 kB\n", 0, false},
		{"MemAvailable: 18446744073709551615 kB\n", 0, false},
		{"", 0, false},
	} {
		got, ok := parseMemAvailable(strings.NewReader(c.text))
		if got != c.want || ok != c.ok {
			t.Errorf("parseMemAvailable(%q) = %d, %v; want %d, %v", c.text, got, ok, c.want, c.ok)
		}
	}
	if got, ok := memAvailable(); ok && got == 0 {
		t.Errorf("MemAvailable of this machine read as 0")
	}
}
