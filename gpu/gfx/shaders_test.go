package gfx

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGfxShadersCurrent recompiles the graphics shaders with
// gfx_shaders/gen.sh into a temporary directory and fails when a committed
// .spv differs (run sh gpu/gfx/gfx_shaders/gen.sh after editing lit.vert or
// lit.frag), or when gen.sh produces a file that is not committed.
func TestGfxShadersCurrent(t *testing.T) {
	for _, tool := range []string{"glslc", "spirv-val"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not installed (Debian: glslc, spirv-tools); CI must check the committed SPIR-V", tool)
			}
			t.Skipf("skipping: %s not installed (Debian packages glslc and spirv-tools)", tool)
		}
	}
	dir := t.TempDir()
	if out, err := exec.Command("sh", "gfx_shaders/gen.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, out)
	}
	made, err := filepath.Glob(filepath.Join(dir, "*.spv"))
	must(t, err)
	if len(made) != 3 {
		t.Fatalf("gen.sh made %d .spv files, want 3", len(made))
	}
	for _, f := range made {
		got, err := os.ReadFile(f)
		must(t, err)
		name := filepath.Join("gfx_shaders", filepath.Base(f))
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%s: %v (run sh gpu/gfx/gfx_shaders/gen.sh)", name, err)
			continue
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("%s is stale: run sh gpu/gfx/gfx_shaders/gen.sh", name)
		}
	}
	for name, code := range map[string][]byte{"lit.vert": litVertSPV, "lit_inst.vert": litInstVertSPV, "lit.frag": litFragSPV} {
		if err := checkSPIRV(code, name); err != nil {
			t.Error(err)
		}
	}
}
