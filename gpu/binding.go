package gpu

import (
	"fmt"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// Binding is the kernel's GPU binding; see package bind for the contract.
type Binding = bind.Binding

// The contract's constants (see package bind).
const (
	PushConstantSize = bind.PushConstantSize
	FirstInBinding   = bind.FirstInBinding
	FirstOutBinding  = bind.FirstOutBinding
	DefaultEntry     = bind.DefaultEntry
	DefaultLocalSize = bind.DefaultLocalSize
)

// bindingOf extracts a kernel's binding (sched.Kernel.GPU holds a *Binding
// or a Binding) with defaults applied.
func bindingOf(k *sched.Kernel) (Binding, error) {
	var b Binding
	switch g := k.GPU.(type) {
	case *Binding:
		if g == nil {
			return b, fmt.Errorf("%w: kernel %q: GPU is a nil *gpu.Binding", ErrNoBinding, k.Name)
		}
		b = *g
	case Binding:
		b = g
	case nil:
		return b, fmt.Errorf("%w: kernel %q has none (sched.Kernel.GPU is nil)", ErrNoBinding, k.Name)
	default:
		return b, fmt.Errorf("%w: kernel %q: sched.Kernel.GPU holds a %T, not a gpu.Binding", ErrNoBinding, k.Name, k.GPU)
	}
	if b.Entry == "" {
		b.Entry = DefaultEntry
	}
	if b.LocalSize == 0 {
		b.LocalSize = DefaultLocalSize
	}
	if b.ItemsPerInvocation == 0 {
		b.ItemsPerInvocation = 1
	}
	return b, nil
}
