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

// bindingOf returns a kernel's binding (sched.Kernel.GPU) with defaults
// applied.
func bindingOf(k *sched.Kernel) (Binding, error) {
	kb, ok := bind.OfKernel(k)
	if !ok {
		return Binding{}, fmt.Errorf("%w: kernel %q: sched.Kernel.GPU is a %T, not a *gpu.Binding (package gpu/bind), so this executor cannot run it", ErrNoBinding, k.Name, k.GPU)
	}
	if kb == nil {
		return Binding{}, fmt.Errorf("%w: kernel %q has none (sched.Kernel.GPU is nil)", ErrNoBinding, k.Name)
	}
	b := *kb
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

// kernelCheck checks b against k's streams (bind.Binding.Check).
func kernelCheck(k *sched.Kernel, b *Binding) error {
	in := make([]bind.Stream, len(k.In))
	for i, s := range k.In {
		in[i] = bind.Stream{Name: s.Name, Stride: s.Stride}
	}
	out := make([]bind.Stream, len(k.Out))
	for i, s := range k.Out {
		out[i] = bind.Stream{Name: s.Name, Stride: s.Stride}
	}
	return b.Check(in, out)
}
