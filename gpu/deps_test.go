package gpu

import (
	"os/exec"
	"strings"
	"testing"
)

// TestComputeLinksNoRenderer: package gpu is the compute backend; the
// graphics backend (gpu/gfx) and the renderer it implements (render) must
// stay out of its dependencies, so that a compute user links neither.
func TestComputeLinksNoRenderer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: no go command: %v", err)
	}
	list := func(pkg string) []string {
		t.Helper()
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	const mod = "github.com/vkjobs/vkjobs/"
	forbidden := func(p string) bool {
		return p == mod+"render" || strings.HasPrefix(p, mod+"render/") ||
			p == mod+"gpu/gfx" || strings.HasPrefix(p, mod+"gpu/gfx/")
	}
	deps := list(".")
	if len(deps) == 0 || deps[len(deps)-1] != mod+"gpu" {
		t.Fatalf("go list -deps . does not end with package gpu: %q", deps)
	}
	for _, p := range deps {
		if forbidden(p) {
			t.Errorf("package gpu depends on %s: the compute backend must not link the graphics backend or the renderer", p)
		}
	}
	// The check can see such a dependency: the graphics package has both.
	n := 0
	for _, p := range list("./gfx") {
		if forbidden(p) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("go list -deps ./gfx: found %d of render and gpu/gfx, want 2", n)
	}
}
