package sched

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoGPUDependency: the scheduler's contract with executors names no GPU
// package (Kernel.GPU is a GPUBinding, which package gpu/bind implements),
// so a CPU-only user of sched links neither Vulkan nor the SPIR-V reader.
// sched imports nothing of the project at all.
func TestNoGPUDependency(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: no go command: %v", err)
	}
	// A test binary run outside the source tree has no module to list.
	if mod, err := exec.Command(goTool, "env", "GOMOD").Output(); err != nil || !strings.HasSuffix(strings.TrimSpace(string(mod)), "go.mod") {
		t.Skipf("skipping: not inside the module's source tree (go env GOMOD: %q, %v)", mod, err)
	}
	const module = "github.com/vkjobs/vkjobs/"
	list := func(pkg string) []string {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	deps := list(".")
	if len(deps) == 0 || deps[len(deps)-1] != module+"sched" {
		t.Fatalf("go list -deps . does not end with package sched: %q", deps)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, module) && p != module+"sched" {
			t.Errorf("package sched depends on %s: the scheduler must import nothing of the project (no GPU package)", p)
		}
	}
	// The check can see such a dependency: gpu/bind has sched and itself.
	n := 0
	for _, p := range list("../gpu/bind") {
		if strings.HasPrefix(p, module) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("go list -deps ../gpu/bind: found %d packages of the module, want 2 (sched, gpu/bind)", n)
	}
}
