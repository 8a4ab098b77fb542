#version 450
#extension GL_GOOGLE_include_directive : require
// scan_downsweep.comp: kernels.ScanDownsweepU32, Expand with Factor 256.
// Work item i is block i: out[256i + k] = offsets[i] + x[256i] + ... +
// x[256i + k - 1] (exclusive), uint32 wrapping; inputs at or above
// params[0] (0 = all) count as 0.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Offsets { uint offsets[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Scan { uint scan[]; };

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    uint n = pc.params[0];
    uint lo = item * 256u;
    uint hi = lo + 256u;
    uint valid = hi;
    if (n != 0u) {
        valid = min(hi, n);
    }
    uint acc = offsets[item];
    for (uint i = lo; i < hi; i++) {
        scan[i] = acc;
        if (i < valid) {
            acc += x[i];
        }
    }
}
