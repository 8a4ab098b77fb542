package gpu

import (
	"fmt"

	"github.com/vkjobs/vkjobs/sched"
)

// Binding describes how a registered kernel runs as a Vulkan compute
// dispatch. It is stored in sched.Kernel.GPU; the GPU executor reads it.
//
// Shader interface contract (every kernel shader follows it):
//
//	layout(set = 0, binding = 0..3) buffer      In0..In3   // sched TaskData.In[i]
//	layout(set = 0, binding = 4..7) buffer      Out0..Out3 // sched TaskData.Out[j]
//	   (an input listed in UniformIn is a uniform block instead)
//	layout(push_constant) uniform PC {
//	    uint params[8]; // sched.Params, copied verbatim
//	    uint begin;     // first work item of this dispatch (TaskData.Begin)
//	    uint end;       // one past the last work item   (TaskData.End)
//	};
//	layout(local_size_x_id = 0) in;  // workgroup size, specialization constant 0
//
// Invocation g handles work items begin + g*ItemsPerInvocation ... and must
// return when the item is >= end. Streams are bound from their start
// (descriptor offset = element 0 of the stream), so shaders index them with
// absolute item numbers, exactly like the CPU kernel; begin and end may
// differ from 0 and Elements when the scheduler gives the GPU a sub-range,
// and a large range is dispatched in several chunks with their own begin
// and end (maxComputeWorkGroupCount).
//
// What a shader may rely on, and what not:
//   - Host streams (Stream.Bytes) are uploaded only over the bytes the
//     job's items use (all of a Whole-rate stream); the rest of the binding
//     is undefined. Only those bytes of an output are copied back.
//   - Outputs start undefined on the GPU (they are not uploaded): a kernel
//     that reads and writes a stream takes it as an input too (the host
//     slices may alias; saxpy writing y in place passes y as In1 and Out0).
//   - A GPU-resident stream (Stream.Buffer) is bound in place at
//     Stream.Offset, which must be a multiple of the device's
//     minStorageBufferOffsetAlignment (minUniformBufferOffsetAlignment for
//     uniform inputs); at most 256 on every device.
//   - An absent or empty declared stream binds a small dummy buffer.
//   - Compile for Vulkan 1.0 (glslc --target-env=vulkan1.0): the instance is
//     Vulkan 1.0, so SPIR-V 1.0 is accepted.
//   - On lavapipe, a loop ends after about 65535 iterations per invocation
//     (llvmpipe's loop limiter), silently: bound per-invocation loops.
//
// A Binding is stored by value or pointer in sched.Kernel.GPU. Its SPIR-V
// bytes must not change after registration (pipelines are cached by their
// address). Validate checks it without a device.
type Binding struct {
	SPIRV              []byte  // the compute module (SPIR-V 1.0, little-endian)
	Entry              string  // entry point, default "main"
	LocalSize          uint32  // workgroup size X (specialization constant 0), default 64
	ItemsPerInvocation uint32  // work items per invocation, default 1
	UniformIn          [4]bool // inputs bound as uniform blocks instead of storage buffers
}

// PushConstantSize is the byte size of the push-constant block above.
const PushConstantSize = 40

// Binding slots of the contract.
const (
	FirstInBinding  = 0
	FirstOutBinding = 4
)

// Defaults of Binding's optional fields.
const (
	DefaultEntry     = "main"
	DefaultLocalSize = 64
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

// Validate checks the binding without a device: the SPIR-V module's
// structure, its entry point and its specialization constant 0. Device
// limits (workgroup size, descriptor counts) are checked when the pipeline
// is created.
func (b *Binding) Validate() error {
	entry := b.Entry
	if entry == "" {
		entry = DefaultEntry
	}
	if err := checkSPIRV(b.SPIRV, entry); err != nil {
		return fmt.Errorf("%w: %v", ErrBadBinding, err)
	}
	return nil
}
