#version 450
#extension GL_GOOGLE_include_directive : require
// expand_lerp.comp: kernels.ExpandLerp, Expand with Factor 8.
// Input element i is a segment (a, b) (vec2, 8 bytes); outputs 8i+k for
// k = 0..7 are a + (b - a) * (k / 8). `precise` forbids fused multiply-add,
// so results are bit-identical to the Go kernel.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Segments { vec2 seg[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Samples { float samples[]; };

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    vec2 s = seg[item];
    precise float d = s.y - s.x;
    for (uint k = 0u; k < 8u; k++) {
        precise float v = s.x + d * (float(k) * 0.125);
        samples[item * 8u + k] = v;
    }
}
