#version 450
#extension GL_GOOGLE_include_directive : require
// skin_dqs.comp: kernels.SkinDQS, bone palette in a storage buffer.
#include "common.glsl"
#include "skin_common.glsl"
#include "skin_dqs_body.glsl"
