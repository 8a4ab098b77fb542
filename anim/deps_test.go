package anim

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeLinksAlone checks the split's promise: the runtime package
// depends on neither the glTF module nor package offline (the importers and
// the compressor), so a game that links anim links neither.
func TestRuntimeLinksAlone(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if errors.Is(err, exec.ErrNotFound) {
		t.Skip("no go command here (a test binary run away from the module): go list -deps needs it")
	}
	if err != nil {
		t.Fatal(err)
	}
	// A test binary run outside the source tree (the GPU bundle's run.sh
	// on a machine that has Go) has no module to list.
	if mod, err := exec.Command(goTool, "env", "GOMOD").Output(); err != nil || !strings.HasSuffix(strings.TrimSpace(string(mod)), "go.mod") {
		t.Skipf("not inside the module's source tree (go env GOMOD: %q, %v): go list -deps needs it", mod, err)
	}
	const self = "github.com/vkjobs/vkjobs/anim"
	out, err := exec.Command(goTool, "list", "-deps", self).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", self, err, out)
	}
	forbidden := []string{"github.com/qmuntal/gltf", self + "/offline"}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != self {
		t.Fatalf("go list -deps %s: unexpected output %q", self, out)
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("the runtime package %s depends on %s", self, d)
			}
		}
	}
}
