#version 450
#extension GL_GOOGLE_include_directive : require
// local_to_model_skin.comp: kernels.LocalToModelSkin.
#define SKIN 1
#include "common.glsl"
#include "local_to_model_body.glsl"
