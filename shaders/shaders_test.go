package shaders

import (
	"encoding/binary"
	"io/fs"
	"os/exec"
	"strings"
	"testing"
)

// TestCheckScript runs check.sh: every .spv is a fresh compile of its .comp
// and passes spirv-val. It needs glslc and spirv-tools (make deps installs
// them); without them the test is skipped, loudly, and the Makefile's test
// target still runs check.sh itself.
func TestCheckScript(t *testing.T) {
	for _, tool := range []string{"bash", "glslc", "spirv-val"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (Debian packages glslc, spirv-tools): cannot check shaders", tool)
		}
	}
	out, err := exec.Command("bash", "check.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("check.sh failed: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

func TestEveryShaderEmbedded(t *testing.T) {
	srcs, err := fs.Glob(FS, "*.comp")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no embedded sources: %v", err)
	}
	names := Names()
	if len(names) != len(srcs) {
		t.Fatalf("%d sources but %d modules: %v", len(srcs), len(names), names)
	}
	for _, src := range srcs {
		name := strings.TrimSuffix(src, ".comp")
		b, err := SPIRV(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 20 || len(b)%4 != 0 || binary.LittleEndian.Uint32(b) != 0x07230203 {
			t.Fatalf("%s.spv is not a SPIR-V module (%d bytes)", name, len(b))
		}
		if s, err := Source(name); err != nil || !strings.Contains(s, `#include "common.glsl"`) {
			t.Fatalf("%s.comp does not include common.glsl (the binding contract): %v", name, err)
		}
	}
}

func TestUnknownNames(t *testing.T) {
	for _, name := range []string{"", "nope", "saxpy.spv", "../shaders", "a/b"} {
		if _, err := SPIRV(name); err == nil {
			t.Errorf("SPIRV(%q) succeeded", name)
		}
		if _, err := Source(name); err == nil {
			t.Errorf("Source(%q) succeeded", name)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustSPIRV of an unknown name did not panic")
		}
	}()
	MustSPIRV("nope")
}
