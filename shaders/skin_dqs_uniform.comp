#version 450
#extension GL_GOOGLE_include_directive : require
// skin_dqs_uniform.comp: kernels.SkinDQSUniform, bone palette in a uniform block.
#define PALETTE_UNIFORM 1
#include "common.glsl"
#include "skin_common.glsl"
#include "skin_dqs_body.glsl"
