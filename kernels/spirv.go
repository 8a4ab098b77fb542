package kernels

import (
	"fmt"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// The SPIR-V reader lives in package gpu/bind (one reader for the project:
// the registry, this package and the executor all use it). These names
// remain for callers of this package.
type (
	// SPIRVModule is what ParseSPIRV learns about a module.
	SPIRVModule = bind.SPIRVModule
	// SPIRVResource is a variable bound to a descriptor.
	SPIRVResource = bind.SPIRVResource
	// SPIRVEntryPoint is one OpEntryPoint.
	SPIRVEntryPoint = bind.SPIRVEntryPoint
	// ResourceKind classifies a descriptor-bound variable.
	ResourceKind = bind.ResourceKind
)

// Resource kinds (see bind.ResourceKind).
const (
	ResourceStorage = bind.ResourceStorage
	ResourceUniform = bind.ResourceUniform
	ResourceOther   = bind.ResourceOther
	// ModelGLCompute is the SPIR-V execution model of compute shaders.
	ModelGLCompute = bind.ModelGLCompute
)

// ParseSPIRV reads a SPIR-V module (see bind.ParseSPIRV).
func ParseSPIRV(b []byte) (*SPIRVModule, error) { return bind.ParseSPIRV(b) }

// Check verifies a kernel's GPU binding against its declaration, as
// sched.Registry.Register does for every kernel (see bind.Binding.Check for
// what it checks); Definition calls it too. A nil k.GPU passes (the kernel
// has no GPU version). The error names the kernel, the binding and the
// stream.
func Check(k *sched.Kernel) error {
	b, ok := bind.OfKernel(k)
	if !ok {
		return fmt.Errorf("kernels: kernel %q: GPU binding is a %T, not a *bind.Binding", k.Name, k.GPU)
	}
	if b == nil {
		return nil
	}
	if err := b.Check(streams(k.In), streams(k.Out)); err != nil {
		return fmt.Errorf("kernels: kernel %q: %w", k.Name, err)
	}
	return nil
}

func streams(specs []sched.StreamSpec) []bind.Stream {
	s := make([]bind.Stream, len(specs))
	for i, sp := range specs {
		s[i] = bind.Stream{Name: sp.Name, Stride: sp.Stride}
	}
	return s
}
