package gpu

import (
	"os/exec"
	"strings"
	"testing"
)

// goList runs go list with args in this package's directory.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: no go command: %v", err)
	}
	// A test binary run outside the source tree (make gpu-bundle) has no
	// module to list.
	if mod, err := exec.Command(goTool, "env", "GOMOD").Output(); err != nil || !strings.HasSuffix(strings.TrimSpace(string(mod)), "go.mod") {
		t.Skipf("skipping: not inside the module's source tree (go env GOMOD: %q, %v)", mod, err)
	}
	out, err := exec.Command(goTool, append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %q: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("go list %q: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

const module = "github.com/vkjobs/vkjobs/"

// TestComputeLinksNoRenderer: package gpu is the compute backend; the
// graphics backend (gpu/gfx) and the renderer it implements (render) must
// stay out of its dependencies, so that a compute user links neither.
func TestComputeLinksNoRenderer(t *testing.T) {
	forbidden := func(p string) bool {
		return p == module+"render" || strings.HasPrefix(p, module+"render/") ||
			p == module+"gpu/gfx" || strings.HasPrefix(p, module+"gpu/gfx/")
	}
	deps := goList(t, "-deps", ".")
	if len(deps) == 0 || deps[len(deps)-1] != module+"gpu" {
		t.Fatalf("go list -deps . does not end with package gpu: %q", deps)
	}
	for _, p := range deps {
		if forbidden(p) {
			t.Errorf("package gpu depends on %s: the compute backend must not link the graphics backend or the renderer", p)
		}
	}
	// The check can see such a dependency: the graphics package has both.
	n := 0
	for _, p := range goList(t, "-deps", "./gfx") {
		if forbidden(p) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("go list -deps ./gfx: found %d of render and gpu/gfx, want 2", n)
	}
}

// TestOneCgoPackage: of package gpu and the packages under it, only
// gpu/internal/vkshim has cgo files (the Vulkan loader and the C function
// tables live there, nowhere else).
func TestOneCgoPackage(t *testing.T) {
	var cgo []string
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{len .CgoFiles}}", "./...") {
		path, n, _ := strings.Cut(line, " ")
		if n != "0" {
			cgo = append(cgo, path)
		}
	}
	if len(cgo) != 1 || cgo[0] != module+"gpu/internal/vkshim" {
		t.Errorf("packages with cgo files under gpu/: %q, want only %sgpu/internal/vkshim", cgo, module)
	}
}

// TestNoVulkanGo: Vulkan is reached one way, through gpu/internal/vkshim
// (one loader, one set of function pointers). No package of the module,
// tests and commands included, may import the vulkan-go binding (the
// alternative vkshim's doc rejects) or anything under it.
func TestNoVulkanGo(t *testing.T) {
	const binding = "github.com/vulkan-go/vulkan"
	deps := goList(t, "-e", "-deps", "-test", "-f", "{{.ImportPath}}", module+"...")
	seen := map[string]bool{}
	for _, p := range deps {
		seen[p] = true
		if p == binding || strings.HasPrefix(p, binding+"/") {
			t.Errorf("a package of the module depends on %s: every Vulkan call goes through %sgpu/internal/vkshim", p, module)
		}
	}
	// The list covers the module's packages, their tests and the
	// modules they import: the check can see an import of the binding.
	for _, p := range []string{module + "gpu/internal/vkshim", module + "gpu/gfx.test", module + "cmd/crowd", "github.com/go-gl/glfw/v3.3/glfw"} {
		if !seen[p] {
			t.Errorf("go list -deps -test %s... does not list %s", module, p)
		}
	}
}
