package gpu

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
// return when the item is >= end. Streams are bound whole (offset 0 of the
// stream), so shaders index them with absolute item numbers, exactly like
// the CPU kernel.
type Binding struct {
	SPIRV              []byte // the compute module
	Entry              string // entry point, default "main"
	LocalSize          uint32 // workgroup size X, default 64
	ItemsPerInvocation uint32 // default 1
	UniformIn          [4]bool
}

// PushConstantSize is the byte size of the push-constant block above.
const PushConstantSize = 40

// Binding slots of the contract.
const (
	FirstInBinding  = 0
	FirstOutBinding = 4
)
