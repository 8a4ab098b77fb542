// skin_dqs_body.glsl: dual-quaternion skinning. Included by skin_dqs.comp
// (palette in a storage buffer) and skin_dqs_uniform.comp (PALETTE_UNIFORM:
// 64 KiB uniform block, 2048 dual quaternions).
//
// Palette: DualQuat per bone (std430/std140 stride 32; Go: kernels.DualQuat):
//   offset  0  vec4 real   rotation quaternion (x, y, z, w), unit length
//   offset 16  vec4 dual   0.5 * (t, 0) * real
// Weights of bones whose real part points away from the first bone's
// (negative dot product) are negated (antipodality), the blend is normalised
// by the length of its real part, and normals are rotated only.

struct DualQuat {
    vec4 real;
    vec4 dual;
};

#ifdef PALETTE_UNIFORM
layout(std140, set = 0, binding = 1) uniform Palette { DualQuat palette[2048]; };
#else
layout(std430, set = 0, binding = 1) readonly buffer Palette { DualQuat palette[]; };
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
    DualQuat q0 = palette[base + (j & 0xffu)];
    DualQuat q1 = palette[base + ((j >> 8) & 0xffu)];
    DualQuat q2 = palette[base + ((j >> 16) & 0xffu)];
    DualQuat q3 = palette[base + (j >> 24)];
    float w1 = dot(q0.real, q1.real) < 0.0 ? -w.y : w.y;
    float w2 = dot(q0.real, q2.real) < 0.0 ? -w.z : w.z;
    float w3 = dot(q0.real, q3.real) < 0.0 ? -w.w : w.w;
    vec4 r = w.x * q0.real + w1 * q1.real + w2 * q2.real + w3 * q3.real;
    vec4 d = w.x * q0.dual + w1 * q1.dual + w2 * q2.dual + w3 * q3.dual;
    float inv = 1.0 / sqrt(dot(r, r));
    r *= inv;
    d *= inv;
    vec3 pos = vec3(sv.px, sv.py, sv.pz);
    vec3 nrm = vec3(sv.nx, sv.ny, sv.nz);
    vec3 t = 2.0 * (r.w * d.xyz - d.w * r.xyz + cross(r.xyz, d.xyz));
    vec3 p = pos + 2.0 * cross(r.xyz, cross(r.xyz, pos) + r.w * pos) + t;
    vec3 n = nrm + 2.0 * cross(r.xyz, cross(r.xyz, nrm) + r.w * nrm);
    outv[item] = SkinnedVertex(p.x, p.y, p.z, n.x, n.y, n.z);
}
