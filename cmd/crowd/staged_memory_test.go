package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
)

// TestHeadlessStagedMemory runs the demo on a device whose device-local
// memory the host cannot map (a discrete GPU without resizable BAR,
// forced with gpu.Options.ForceStaging): every placement and frame
// shape must draw the same picture as the CPU run on host-visible
// memory.
func TestHeadlessStagedMemory(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	dir := t.TempDir()
	common := []string{"-count", "16", "-frames", "4", "-size", "256x192", "-validate"}
	cpuPNG := filepath.Join(dir, "cpu.png")
	demo(t, append(common, "-offload", "cpu", "-out", cpuPNG)...)
	ci := readPNG(t, cpuPNG)
	opened := 0
	deviceOptionsHook = func(o *gpu.Options) { o.ForceStaging = true; opened++ }
	defer func() { deviceOptionsHook = nil }()
	for i, args := range [][]string{
		{"-offload", "gpu"},
		{"-offload", "gpu", "-graph=false"},
		{"-offload", "gpu", "-uniform=false"},
		{"-offload", "gpu", "-pipeline", "1"},
		{"-offload", "gpu", "-pipeline", "3", "-check"},
		{"-offload", "auto"},
		{"-offload", "spu"},
		{"-offload", "cpu"},
	} {
		png := filepath.Join(dir, "staged"+string(rune('a'+i))+".png")
		before := opened
		demo(t, append(append(common, args...), "-out", png)...)
		if opened != before+1 {
			t.Fatalf("%s: the device was not opened through the staging hook", strings.Join(args, " "))
		}
		gi := readPNG(t, png)
		checkNotBlank(t, gi)
		if bad, total := imageDiff(ci, gi, 8); bad*100 > total {
			t.Errorf("%s with staged memory: %d of %d pixels differ from the CPU run by more than 8", strings.Join(args, " "), bad, total)
		}
	}
}
