package gpu_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
)

// TestValidationEnvValues: VKJOBS_VALIDATION accepts the usual spellings
// of on and off, and any other value is an error naming it; "ture" or
// "enable" ran without validation, silently.
func TestValidationEnvValues(t *testing.T) {
	for _, v := range []string{"ture", "enable", "2", "-1"} {
		t.Setenv(gpu.EnvValidation, v)
		d, err := gpu.Open(gpu.Options{})
		if err == nil {
			d.Close()
			t.Errorf("%s=%q: Open succeeded", gpu.EnvValidation, v)
			continue
		}
		if errors.Is(err, gpu.ErrNoDevice) {
			t.Skipf("no Vulkan device: %v", err)
		}
		if !strings.Contains(err.Error(), gpu.EnvValidation+`="`+v+`"`) {
			t.Errorf("%s=%q: %v does not name the value", gpu.EnvValidation, v, err)
		}
	}
	for _, v := range []string{"1", "TRUE", "yes", " on ", "0", "off", ""} {
		t.Setenv(gpu.EnvValidation, v)
		d, err := gpu.Open(gpu.Options{})
		if errors.Is(err, gpu.ErrNoDevice) {
			t.Skipf("no Vulkan device: %v", err)
		}
		if err != nil {
			t.Errorf("%s=%q: %v", gpu.EnvValidation, v, err)
			continue
		}
		if err := d.Close(); err != nil {
			t.Errorf("%s=%q: Close: %v", gpu.EnvValidation, v, err)
		}
	}
}
