#version 450
#extension GL_GOOGLE_include_directive : require
// scan_reduce.comp: kernels.ScanReduceU32, Reduce with Factor 256.
// out[i] = sum of x[256i .. 256i+255] below params[0] (0 = all), uint32
// wrapping. First pass of the exclusive scan (see kernels/doc.go).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Totals { uint totals[]; };

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
    uint acc = 0u;
    for (uint i = lo; i < hi; i++) {
        acc += x[i];
    }
    totals[item] = acc;
}
