// skin_lbs_body.glsl: linear blend skinning. Included by skin_lbs.comp
// (palette in a storage buffer) and skin_lbs_uniform.comp (PALETTE_UNIFORM:
// palette in a 64 KiB uniform block, 1024 matrices).
//
// Palette: mat4 per bone, column-major, std430/std140 stride 64 (Go:
// kernels.Mat4). Only the upper three rows are used (affine transforms).

#ifdef PALETTE_UNIFORM
layout(std140, set = 0, binding = 1) uniform Palette { mat4 palette[1024]; };
#else
layout(std430, set = 0, binding = 1) readonly buffer Palette { mat4 palette[]; };
#endif

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    uint v, base;
    skinSource(item, v, base);
    SkinVertex sv = verts[v];
    uint j = sv.joints;
    vec4 w = sv.weights;
    mat4 m = w.x * palette[base + (j & 0xffu)]
           + w.y * palette[base + ((j >> 8) & 0xffu)]
           + w.z * palette[base + ((j >> 16) & 0xffu)]
           + w.w * palette[base + (j >> 24)];
    vec3 p = (m * vec4(sv.px, sv.py, sv.pz, 1.0)).xyz;
    vec3 n = normalize(mat3(m) * vec3(sv.nx, sv.ny, sv.nz));
    outv[item] = SkinnedVertex(p.x, p.y, p.z, n.x, n.y, n.z);
}
