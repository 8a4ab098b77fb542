package main

import (
	"path/filepath"
	"strconv"
	"testing"
)

// TestCheckedRunEveryOffload runs the crowd with -check (the scheduler
// refuses data races between tasks and frame graphs' nodes, the Vulkan
// validation layer fails the run on any message) in every -offload mode at
// every -pipeline depth, as frame graphs, and at depths 1 and 4 as
// dynamic tasks (-graph=false): a few frames each, no race refused, no
// validation message.
func TestCheckedRunEveryOffload(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	dir := t.TempDir()
	for _, off := range []string{"cpu", "gpu", "auto", "spu"} {
		for p := 1; p <= 4; p++ {
			for _, graph := range []bool{true, false} {
				if !graph && p != 1 && p != 4 {
					continue
				}
				mode := "-graph=" + strconv.FormatBool(graph)
				a, _ := demo(t, "-check", "-q", "-count", "24", "-frames", "5", "-size", "64x48", mode,
					"-offload", off, "-pipeline", strconv.Itoa(p), "-out", filepath.Join(dir, off+strconv.Itoa(p)+mode+".png"))
				if !a.s.ChecksRaces() {
					t.Fatalf("-check -offload %s -pipeline %d %s: the scheduler does not check races", off, p, mode)
				}
			}
		}
	}
}
