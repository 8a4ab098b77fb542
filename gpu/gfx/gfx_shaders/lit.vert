// lit.vert: the built-in vertex shader of package gpu/gfx's graphics pipelines
// (see gpu/gfx/doc.go). Compiled twice by gen.sh: as is (lit.vert.spv) and
// with -DINSTANCED (lit_inst.vert.spv).
//
// Interface (every custom vertex shader given to gfx.Pipeline follows it):
//
//	location 0, 1   binding 0, per vertex    position, normal (gfx.Vertex, 24 B;
//	                                         kernels.SkinnedVertex has the same layout)
//	location 2, 3   binding 1, per instance  offset.xyz + uniform scale, colour
//	                                         (gfx.Instance, 32 B; instanced pipelines only)
//	set 0 binding 0 uniform Frame            view-projection and light (gfx.View)
//	push constants  mat4 model, vec4 color   render.DrawPacket.PushConstants (80 B)
//	out location 0, 1, 2                     world normal, colour, world position
//	                                         (the built-in fragment shader's inputs)
#version 450

layout(location = 0) in vec3 inPos;
layout(location = 1) in vec3 inNormal;
#ifdef INSTANCED
layout(location = 2) in vec4 instOffsetScale;
layout(location = 3) in vec4 instColor;
#endif

layout(set = 0, binding = 0) uniform Frame {
	mat4 viewProj;   // world -> Vulkan clip space
	vec4 lightDir;   // xyz: unit direction the light travels, in world space
	vec4 lightColor; // rgb
	vec4 ambient;    // rgb
} frame;

layout(push_constant) uniform PC {
	mat4 model; // object -> world: rotation, translation, uniform scale
	vec4 color;
} pc;

layout(location = 0) out vec3 vNormal;
layout(location = 1) out vec4 vColor;
layout(location = 2) out vec3 vWorld;

void main() {
	vec3 p = inPos;
	vec4 c = pc.color;
#ifdef INSTANCED
	p = p * instOffsetScale.w + instOffsetScale.xyz;
	c *= instColor;
#endif
	vec4 world = pc.model * vec4(p, 1.0);
	gl_Position = frame.viewProj * world;
	vWorld = world.xyz;
	// mat3(model) is the normal matrix for rotations and uniform scales;
	// the fragment shader normalises.
	vNormal = mat3(pc.model) * inNormal;
	vColor = c;
}
