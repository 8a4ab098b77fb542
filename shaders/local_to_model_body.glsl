// local_to_model_body.glsl: parent-relative transforms to model-space
// matrices, one invocation per skeleton. Included by local_to_model.comp and
// local_to_model_skin.comp (SKIN: also writes model * inverse bind).
//
// params[0] = bones per skeleton B. Work item s is skeleton s; its bones are
// elements s*B .. s*B+B-1 of the local and model arrays.
//
// Xform (std430, 48 bytes; Go: kernels.Transform)
//   offset  0  vec4 rot     rotation quaternion (x, y, z, w), unit length
//   offset 16  vec4 trans   translation xyz, w ignored
//   offset 32  vec4 scale   scale xyz, w ignored
// parents: int per bone of one skeleton, parent < child, negative = root.
// Matrices: mat4, column-major, stride 64 (Go: kernels.Mat4).
// model[b] = model[parent[b]] * T * R * S, or T * R * S for a root.

struct Xform {
    vec4 rot;
    vec4 trans;
    vec4 scale;
};

layout(std430, set = 0, binding = 0) readonly buffer Local { Xform local[]; };
layout(std430, set = 0, binding = 1) readonly buffer Parents { int parents[]; };
layout(std430, set = 0, binding = 4) buffer Model { mat4 model[]; };
#ifdef SKIN
layout(std430, set = 0, binding = 2) readonly buffer InverseBind { mat4 inverseBind[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Skin { mat4 skin[]; };
#endif

// compose returns T * R * S. Same operation order as kernels.Transform.Matrix.
mat4 compose(Xform x) {
    vec4 q = x.rot;
    float x2 = q.x + q.x, y2 = q.y + q.y, z2 = q.z + q.z;
    float xx = q.x * x2, yy = q.y * y2, zz = q.z * z2;
    float xy = q.x * y2, xz = q.x * z2, yz = q.y * z2;
    float wx = q.w * x2, wy = q.w * y2, wz = q.w * z2;
    vec3 s = x.scale.xyz;
    return mat4(
        vec4(vec3(1.0 - (yy + zz), xy + wz, xz - wy) * s.x, 0.0),
        vec4(vec3(xy - wz, 1.0 - (xx + zz), yz + wx) * s.y, 0.0),
        vec4(vec3(xz + wy, yz - wx, 1.0 - (xx + yy)) * s.z, 0.0),
        vec4(x.trans.xyz, 1.0));
}

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    uint nb = pc.params[0];
    uint base = item * nb;
    for (uint b = 0u; b < nb; b++) {
        mat4 m = compose(local[base + b]);
        int p = parents[b];
        // The Go kernel refuses parent >= b; here such a bone is a root.
        if (p >= 0 && uint(p) < b) {
            m = model[base + uint(p)] * m;
        }
        model[base + b] = m;
#ifdef SKIN
        skin[base + b] = m * inverseBind[b];
#endif
    }
}
