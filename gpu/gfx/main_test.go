package gfx

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
)

// The benchmarks' device, without validation (the layer costs far more
// than recording); shared by all benchmarks and closed by TestMain.
var (
	benchOnce sync.Once
	benchDev  *gpu.Device
	benchErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDev != nil {
		if err := benchDev.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "gfx: closing the benchmark device:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// openTestDevice opens a device with validation. Without any Vulkan device
// it skips, unless CI=true, where it fails: CI must run these tests.
func openTestDevice(t testing.TB, opts gpu.Options) *gpu.Device {
	t.Helper()
	opts.Validation = true
	d, err := gpu.Open(opts)
	if errors.Is(err, gpu.ErrNoDevice) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Vulkan device, and CI=true requires one: %v", err)
		}
		t.Skipf("skipping: no Vulkan device (with CI=true this fails): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}
