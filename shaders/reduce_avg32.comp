#version 450
#extension GL_GOOGLE_include_directive : require
// reduce_avg32.comp: kernels.Avg32F32, Reduce with Factor 32: the seed's
// "average of every 32 elements". out[i] = mean of x[32i .. 32i+31] below
// params[0] (0 = all); a full block is its sum times 1/32 (exact), a partial
// block its sum divided by its count, an empty block 0.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Avg { float avg[]; };

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    uint n = pc.params[0];
    uint lo = item * 32u;
    uint hi = lo + 32u;
    if (n != 0u) {
        hi = min(hi, n);
    }
    precise float acc = 0.0;
    for (uint i = lo; i < hi; i++) {
        acc += x[i];
    }
    precise float r = 0.0;
    if (hi >= lo + 32u) {
        r = acc * (1.0 / 32.0);
    } else if (hi > lo) {
        r = acc / float(hi - lo);
    }
    avg[item] = r;
}
