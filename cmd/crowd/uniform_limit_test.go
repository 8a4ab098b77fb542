package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
)

// TestUniformSkinningLimit runs GPU skinning on a device whose
// maxUniformBufferRange is the 16 KiB Vulkan guarantees, less than the
// palette block kernels.SkinLBSUniform declares: by default the demo skins
// from a storage buffer and says why; with an explicit -uniform it refuses
// to start, naming the flag and the device's limit. The same run on the
// device's own limits takes the uniform path, so the fallback is the
// limit's doing.
func TestUniformSkinningLimit(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	const small = 16 << 10
	common := []string{"-count", "16", "-frames", "2", "-size", "64x48", "-offload", "gpu"}
	out := func(name string) []string {
		return append(append([]string{}, common...), "-out", filepath.Join(t.TempDir(), name+".png"))
	}

	a, _ := demo(t, out("native")...)
	if a.uniformGroup == 0 {
		t.Fatalf("device limits: uniformGroup 0, want the uniform path (maxUniformBufferRange %d)", a.dev.Limits().MaxUniformBufferRange)
	}

	deviceLimitsHook = func(l *gpu.Limits) { l.MaxUniformBufferRange = min(l.MaxUniformBufferRange, small) }
	defer func() { deviceLimitsHook = nil }()
	a, log := demo(t, out("fallback")...)
	if a.uniformGroup != 0 {
		t.Errorf("%d-byte maxUniformBufferRange: uniformGroup %d, want 0 (storage-buffer skinning)", small, a.uniformGroup)
	}
	if note := fmt.Sprintf("at most %d bytes (maxUniformBufferRange)", small); !strings.Contains(log, note) {
		t.Errorf("fallback: output lacks %q:\n%s", note, log)
	}

	var buf bytes.Buffer
	args := append([]string{"-cache", cacheDir, "-headless", "-uniform"}, out("explicit")...)
	if _, err := runApp(args, &buf); err == nil {
		t.Errorf("-uniform on a %d-byte maxUniformBufferRange: no error\n%s", small, buf.String())
	} else {
		for _, want := range []string{"-uniform", fmt.Sprint(small), fmt.Sprint(kernels.UniformPaletteBytes), "maxUniformBufferRange"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("-uniform refused with %q, which does not name %q", err, want)
			}
		}
	}
}
