// lit.frag: the built-in fragment shader of package gpu's graphics
// pipelines: Lambert diffuse from one directional light plus ambient, times
// the per-draw (and per-instance) colour; alpha passes through.
#version 450

layout(set = 0, binding = 0) uniform Frame {
	mat4 viewProj;
	vec4 lightDir;
	vec4 lightColor;
	vec4 ambient;
} frame;

layout(location = 0) in vec3 vNormal;
layout(location = 1) in vec4 vColor;

layout(location = 0) out vec4 outColor;

void main() {
	vec3 n = normalize(vNormal);
	float lambert = max(dot(n, -frame.lightDir.xyz), 0.0);
	vec3 rgb = vColor.rgb * (frame.ambient.rgb + frame.lightColor.rgb * lambert);
	outColor = vec4(rgb, vColor.a);
}
