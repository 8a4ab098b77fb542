package main

import (
	"bytes"
	"strings"
	"testing"
)

// -offload spu with a -spu-group whose palettes overflow the local store
// is refused before the first frame, naming the flag and the largest group
// that fits (it failed inside frame 0, deep in the task graph).
func TestSPUGroupTooLargeRefusedUpFront(t *testing.T) {
	needCMU(t)
	var buf bytes.Buffer
	_, err := runApp([]string{"-cache", cacheDir, "-headless", "-q", "-render=false", "-count", "100", "-frames", "2", "-offload", "spu", "-spu-group", "64"}, &buf)
	if err == nil || !strings.Contains(err.Error(), "-spu-group 64 does not fit") || !strings.Contains(err.Error(), "at most 45 characters") || strings.Contains(err.Error(), "frame 0") {
		t.Fatalf("-spu-group 64 with 90 bones: %v", err)
	}
}

// A -spu-group far larger than the crowd costs no more than the crowd:
// the SPU's vertex copies hold at most -count meshes (-spu-group 100000
// with -count 8 allocated 3.4 GB of them).
func TestSPUGroupLargerThanCrowd(t *testing.T) {
	needCMU(t)
	var buf bytes.Buffer
	a, err := runApp([]string{"-cache", cacheDir, "-headless", "-q", "-render=false", "-count", "8", "-frames", "2", "-offload", "spu", "-spu-group", "100000"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(a.w.spuVerts), 8*a.w.verts; got != want {
		t.Errorf("%d SPU vertex copies for 8 characters, want %d", got, want)
	}
}
