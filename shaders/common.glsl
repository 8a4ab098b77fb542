// common.glsl: the interface every kernel shader shares (gpu/binding.go).
//
//   set 0, bindings 0-3: input streams  (sched.TaskData.In[i])
//   set 0, bindings 4-7: output streams (sched.TaskData.Out[j])
//   push constants: sched.Params verbatim, then the work-item range [begin, end)
//   workgroup size X: specialization constant 0 (gpu.Binding.LocalSize)
//
// Streams are bound whole, so shaders index them with absolute work-item
// numbers, exactly like the Go kernels. All buffers use std430 layout.

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform PushConstants {
    uint params[8]; // sched.Params
    uint begin;     // first work item of this dispatch
    uint end;       // one past the last work item
} pc;

// workItem stores this invocation's work item in item and reports whether it
// is inside [begin, end). It is written so that begin + g cannot wrap.
bool workItem(out uint item) {
    uint g = gl_GlobalInvocationID.x;
    item = pc.begin + g;
    return g < pc.end - pc.begin;
}

// Positive and negative infinity (GLSL has no literal for them).
#define POS_INF uintBitsToFloat(0x7f800000u)
#define NEG_INF uintBitsToFloat(0xff800000u)
