#version 450
#extension GL_GOOGLE_include_directive : require
// local_to_model.comp: kernels.LocalToModel.
#include "common.glsl"
#include "local_to_model_body.glsl"
