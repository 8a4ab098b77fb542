#version 450
#extension GL_GOOGLE_include_directive : require
// saxpy.comp: kernels.Saxpy, Streaming. out[i] = a * x[i] + y[i] with a =
// uintBitsToFloat(params[0]). `precise` forbids fused multiply-add, so the
// result is bit-identical to the Go kernel.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out { float outv[]; };

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    float a = uintBitsToFloat(pc.params[0]);
    precise float r = a * x[item] + y[item];
    outv[item] = r;
}
