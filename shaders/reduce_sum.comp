#version 450
#extension GL_GOOGLE_include_directive : require
// reduce_sum.comp: kernels.SumF32, Reduce with Factor 256.
// out[i] = x[256i] + x[256i+1] + ... summed in index order from 0.0, over
// the inputs below params[0] (0 = all). `precise` forbids reassociation, so
// the result is bit-identical to the Go kernel.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Sums { float sums[]; };

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    uint n = pc.params[0];
    uint lo = item * 256u;
    uint hi = lo + 256u;
    if (n != 0u) {
        hi = min(hi, n);
    }
    precise float acc = 0.0;
    for (uint i = lo; i < hi; i++) {
        acc += x[i];
    }
    sums[item] = acc;
}
