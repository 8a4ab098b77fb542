// skin_common.glsl: vertex layout shared by the skinning shaders.
//
// SkinVertex (std430, 48 bytes; Go: kernels.SkinVertex)
//   offset  0  float px, py, pz   bind-pose position
//   offset 12  float nx, ny, nz   bind-pose normal
//   offset 24  uint  joints       4 bone indices, 8 bits each, joint k in bits 8k..8k+7,
//                                 relative to the vertex's palette base
//   offset 28  uint  palette      palette base: index of the skeleton's first bone
//   offset 32  vec4  weights      blend weights (should sum to 1)
//
// SkinnedVertex (std430, 24 bytes; Go: kernels.SkinnedVertex)
//   offset  0  float px, py, pz   skinned position
//   offset 12  float nx, ny, nz   skinned normal
//
// Instancing (many characters per dispatch): params[0] = vertices per
// instance V, params[1] = bones per instance S. With V == 0, work item i
// skins vertex i with palette base verts[i].palette. With V > 0, work item i
// skins vertex i % V of instance i / V with palette base
// verts[i % V].palette + (i / V) * S, so one bind-pose mesh serves a crowd.

struct SkinVertex {
    float px, py, pz;
    float nx, ny, nz;
    uint joints;
    uint palette;
    vec4 weights;
};

struct SkinnedVertex {
    float px, py, pz;
    float nx, ny, nz;
};

layout(std430, set = 0, binding = 0) readonly buffer Vertices { SkinVertex verts[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Skinned { SkinnedVertex outv[]; };

// skinSource returns the bind-pose vertex index of work item item and its
// palette base.
void skinSource(uint item, out uint v, out uint base) {
    uint nv = pc.params[0];
    if (nv == 0u) {
        v = item;
        base = verts[v].palette;
    } else {
        v = item % nv;
        base = verts[v].palette + (item / nv) * pc.params[1];
    }
}
