package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

type otherBinding struct{}

func (otherBinding) CheckStreams(in, out []sched.StreamSpec) error { return nil }

// TestBindingOfOtherType: a kernel whose GPU binding is not a *Binding
// (another executor's) cannot run here, and the error says why.
func TestBindingOfOtherType(t *testing.T) {
	_, err := bindingOf(&sched.Kernel{Name: "k", GPU: otherBinding{}})
	if !errors.Is(err, ErrNoBinding) || !strings.Contains(err.Error(), "gpu.otherBinding") {
		t.Fatalf("err = %v, want ErrNoBinding naming the type", err)
	}
}
