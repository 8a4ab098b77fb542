#version 450
#extension GL_GOOGLE_include_directive : require
// skin_lbs.comp: kernels.SkinLBS, bone palette in a storage buffer.
#include "common.glsl"
#include "skin_common.glsl"
#include "skin_lbs_body.glsl"
