package gpu

import (
	"testing"
	"time"
)

// ExecutorOptions.FenceTimeout's zero value is 60 s on a CPU device (such
// as lavapipe, which compiles a shader at its first dispatch) and 10 s on
// any other, as its doc says; a value given is kept.
func TestFenceTimeoutDefaultByDeviceKind(t *testing.T) {
	dev := device(t, false)
	want := 10 * time.Second
	if dev.Limits().CPU {
		want = 60 * time.Second
	}
	for _, c := range []struct {
		given, want time.Duration
	}{{0, want}, {time.Second, time.Second}, {2 * time.Minute, 2 * time.Minute}} {
		e, err := NewExecutor(dev, ExecutorOptions{FenceTimeout: c.given})
		must(t, err)
		got := e.opts.FenceTimeout
		must(t, e.Close())
		if got != c.want {
			t.Errorf("FenceTimeout %v on %q (CPU device %v): the executor waits %v, want %v", c.given, dev.Name(), dev.Limits().CPU, got, c.want)
		}
	}
}
