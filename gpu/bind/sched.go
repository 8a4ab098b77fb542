package bind

import "github.com/vkjobs/vkjobs/sched"

// The contract has as many bindings per direction as a task has streams.
var (
	_ [MaxStreams - sched.MaxStreams]struct{}
	_ [sched.MaxStreams - MaxStreams]struct{}
)

// A *Binding is what package gpu's executor runs as sched.Kernel.GPU.
var _ sched.GPUBinding = (*Binding)(nil)

// CheckStreams checks b against a kernel's declared streams (see Check);
// sched.Registry.Register calls it for every kernel whose GPU field is set.
// A nil b passes: the kernel has no GPU version.
func (b *Binding) CheckStreams(in, out []sched.StreamSpec) error {
	if b == nil {
		return nil
	}
	return b.Check(Streams(in), Streams(out))
}

// Streams converts a kernel's stream declarations for Check.
func Streams(specs []sched.StreamSpec) []Stream {
	s := make([]Stream, len(specs))
	for i, sp := range specs {
		s[i] = Stream{Name: sp.Name, Stride: sp.Stride}
	}
	return s
}

// Of returns k's GPU binding, or nil if k has none (k.GPU is nil or a nil
// *Binding) or if k.GPU is a binding of another type (an executor other
// than package gpu's): OfKernel tells those apart.
func Of(k *sched.Kernel) *Binding {
	b, _ := k.GPU.(*Binding)
	return b
}

// OfKernel is Of with the reason for a nil result: ok is false when k.GPU
// is set to a binding that is not a *Binding, which package gpu cannot run.
func OfKernel(k *sched.Kernel) (b *Binding, ok bool) {
	if k.GPU == nil {
		return nil, true
	}
	b, ok = k.GPU.(*Binding)
	return b, ok
}
