package gpu_test

// Configuration a user gets wrong: the VKJOBS_VALIDATION environment
// variable's spellings, and executor options out of range.

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gputest"
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

// TestExecutorOptionsRefused: negative options (and an absurd InFlight)
// are errors naming the field; they were replaced by the defaults without
// a word.
func TestExecutorOptionsRefused(t *testing.T) {
	dev, _ := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	for field, o := range map[string]gpu.ExecutorOptions{
		"MaxBatch -1":      {MaxBatch: -1},
		"InFlight -1":      {InFlight: -1},
		"InFlight 1000000": {InFlight: 1000000},
		"FenceTimeout -1s": {FenceTimeout: -time.Second},
		"HungAfter -3":     {HungAfter: -3},
	} {
		e, err := gpu.NewExecutor(dev, o)
		if err == nil {
			e.Close()
			t.Errorf("%s accepted", field)
		} else if !strings.Contains(err.Error(), "ExecutorOptions."+field) {
			t.Errorf("%s: %v does not name the field and value", field, err)
		}
	}
	e, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{InFlight: gpu.MaxInFlight})
	if err != nil {
		t.Fatalf("InFlight %d: %v", gpu.MaxInFlight, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
