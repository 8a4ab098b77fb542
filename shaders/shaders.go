// Package shaders holds the project's GLSL compute shaders and their
// compiled SPIR-V, embedded in the binary.
//
// Each kernel shader is a NAME.comp source (GLSL 450 for Vulkan) compiled to
// NAME.spv beside it with
//
//	glslc --target-env=vulkan1.0 -O -o NAME.spv NAME.comp
//
// by build.sh; *.glsl files are shared includes, never compiled alone.
// check.sh recompiles every source into a temporary directory, fails when a
// committed .spv is stale or missing, and runs spirv-val on each; the
// package's test runs it (and the Makefile's test target may run it too).
// Every shader follows the binding contract of gpu.Binding; package kernels
// checks each module against its kernel's declared streams when registering.
package shaders

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// FS holds the compiled modules (*.spv) and their sources (*.comp, *.glsl).
//
//go:embed *.spv *.comp *.glsl
var FS embed.FS

// SPIRV returns a copy of the compiled module NAME.spv, for example
// SPIRV("skin_lbs"). It fails for an unknown name.
func SPIRV(name string) ([]byte, error) {
	if strings.ContainsAny(name, "/.") {
		return nil, fmt.Errorf("shaders: SPIRV(%q): want a bare name such as \"saxpy\"", name)
	}
	b, err := FS.ReadFile(name + ".spv")
	if err != nil {
		return nil, fmt.Errorf("shaders: no compiled shader %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// MustSPIRV is SPIRV for names known at compile time; it panics for an
// unknown name (a build bug, not a runtime condition).
func MustSPIRV(name string) []byte {
	b, err := SPIRV(name)
	if err != nil {
		panic(err)
	}
	return b
}

// Source returns the GLSL source NAME.comp.
func Source(name string) (string, error) {
	if strings.ContainsAny(name, "/.") {
		return "", fmt.Errorf("shaders: Source(%q): want a bare name such as \"saxpy\"", name)
	}
	b, err := FS.ReadFile(name + ".comp")
	if err != nil {
		return "", fmt.Errorf("shaders: no source %q", name)
	}
	return string(b), nil
}

// Names returns the names of all compiled modules, sorted.
func Names() []string {
	m, _ := fs.Glob(FS, "*.spv")
	for i, f := range m {
		m[i] = strings.TrimSuffix(f, ".spv")
	}
	sort.Strings(m)
	return m
}
