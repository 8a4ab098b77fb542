// Package glslc compiles shaders for tests with the tools make deps
// installs: glslc (Debian package glslc) for GLSL and HLSL,
// glslangValidator (glslang-tools) for HLSL, and spirv-as (spirv-tools)
// for SPIR-V assembly, all for Vulkan 1.0 as the project's own shaders are
// (gpu/testdata/gen.sh). Tests that write a user's shader call it; the
// project's shaders are compiled ahead of time. It is a test helper:
// import it only from _test.go files.
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
	return CompileFlags(tb, stage, src, "-O")
}

// CompileFlags is Compile with glslc flags of the caller's instead of -O
// ("-O0", "-g", none: glslc's default keeps debug names).
func CompileFlags(tb testing.TB, stage, src string, flags ...string) []byte {
	tb.Helper()
	args := append([]string{"--target-env=vulkan1.0"}, flags...)
	return run(tb, "glslc", "glslc", "k."+stage, src, args, "-o")
}

// HLSL front ends that CompileHLSL knows.
const (
	// Glslc is glslc -x hlsl -fshader-stage=compute.
	Glslc = "glslc"
	// GlslangValidator is glslangValidator -D -V -S comp -e main.
	GlslangValidator = "glslangValidator"
)

// CompileHLSL compiles src, an HLSL compute shader with entry point main,
// with one of the HLSL front ends Debian ships (Glslc or
// GlslangValidator) for Vulkan 1.0, adding flags (glslc's "-O", say).
// Without the tool it skips tb, or fails it when CI=true.
func CompileHLSL(tb testing.TB, tool, src string, flags ...string) []byte {
	tb.Helper()
	switch tool {
	case Glslc:
		args := append([]string{"-x", "hlsl", "-fshader-stage=compute", "--target-env=vulkan1.0"}, flags...)
		return run(tb, "glslc", "glslc", "k.hlsl", src, args, "-o")
	case GlslangValidator:
		args := append([]string{"-D", "-V", "-S", "comp", "-e", "main", "--target-env", "vulkan1.0"}, flags...)
		return run(tb, "glslangValidator", "glslang-tools", "k.hlsl", src, args, "-o")
	}
	tb.Fatalf("glslc.CompileHLSL: unknown front end %q (want %q or %q)", tool, Glslc, GlslangValidator)
	return nil
}

// Assemble assembles SPIR-V assembly text (spirv-dis's syntax) with
// spirv-as for Vulkan 1.0. Without spirv-as it skips tb, or fails it when
// CI=true.
func Assemble(tb testing.TB, src string) []byte {
	tb.Helper()
	return run(tb, "spirv-as", "spirv-tools", "k.spvasm", src, []string{"--target-env", "vulkan1.0"}, "-o")
}

// run writes src to a file named name, runs tool with args, the output
// flag and file, and the source file, and returns the output.
func run(tb testing.TB, tool, pkg, name, src string, args []string, outFlag string) []byte {
	tb.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s not installed (Debian: %s); CI must run this test", tool, pkg)
		}
		tb.Skipf("skipping: %s not installed (make deps installs Debian's %s)", tool, pkg)
	}
	dir := tb.TempDir()
	in, out := filepath.Join(dir, name), filepath.Join(dir, "k.spv")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		tb.Fatal(err)
	}
	args = append(append(args[:len(args):len(args)], outFlag, out), in)
	if msg, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		tb.Fatalf("%s %q: %v\n%s\n%s", tool, args, err, msg, src)
	}
	spv, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return spv
}
