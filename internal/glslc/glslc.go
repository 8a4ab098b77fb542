// Package glslc compiles GLSL shaders for tests with glslc (Debian package
// glslc, which make deps installs), for Vulkan 1.0 as the project's own
// shaders are (gpu/testdata/gen.sh). Tests that write a user's shader in
// GLSL call it; the project's shaders are compiled ahead of time. It is a
// test helper: import it only from _test.go files.
package glslc

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Compile compiles src, a shader of the given stage (glslc's file
// extension: "comp", "vert", "frag"), with -O for Vulkan 1.0 and returns
// the SPIR-V. Without glslc it skips tb, or fails it when CI=true (CI must
// run such tests).
func Compile(tb testing.TB, stage, src string) []byte {
	tb.Helper()
	glslc, err := exec.LookPath("glslc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("glslc not installed (Debian: glslc); CI must run this test")
		}
		tb.Skip("skipping: glslc not installed (make deps installs it)")
	}
	dir := tb.TempDir()
	in, out := filepath.Join(dir, "k."+stage), filepath.Join(dir, "k.spv")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		tb.Fatal(err)
	}
	if msg, err := exec.Command(glslc, "--target-env=vulkan1.0", "-O", "-o", out, in).CombinedOutput(); err != nil {
		tb.Fatalf("glslc: %v\n%s\n%s", err, msg, src)
	}
	spv, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return spv
}
