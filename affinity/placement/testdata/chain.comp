#version 450
// chain: out[i] = f^params[0](in[i]) with f(s) = s*a + b, a and b the
// float bits of params[1] and params[2]: a compute-bound float kernel (one
// dependent multiply and add per iteration, `precise`, so the Go twin gets
// the same bits) that a SIMD device runs many items at once of, while the
// Go twin runs one item at a time. Unrolled by four: llvmpipe's loop
// overhead would otherwise dominate.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float v[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float o[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;

void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) {
        return;
    }
    float a = uintBitsToFloat(pc.params[1]);
    float b = uintBitsToFloat(pc.params[2]);
    precise float s = v[i];
    uint n = pc.params[0];
    uint k = 0u;
    for (; k + 4u <= n; k += 4u) {
        precise float t0 = s * a;
        s = t0 + b;
        precise float t1 = s * a;
        s = t1 + b;
        precise float t2 = s * a;
        s = t2 + b;
        precise float t3 = s * a;
        s = t3 + b;
    }
    for (; k < n; k++) {
        precise float t = s * a;
        s = t + b;
    }
    o[i] = s;
}
