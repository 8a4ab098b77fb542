// lit.frag: the built-in fragment shader of package gpu's graphics
// pipelines: Lambert diffuse from one directional light plus an ambient
// term (a hemisphere, sky above and ground below, when the two differ),
// times the per-draw (and per-instance) colour, then exponential-squared
// fog towards the fog colour with the distance from the eye (gfx.View);
// alpha passes through.
#version 450

layout(set = 0, binding = 0) uniform Frame {
	mat4 viewProj;
	vec4 lightDir;      // xyz: unit direction the light travels
	vec4 lightColor;    // rgb
	vec4 ambient;       // rgb: from above (or from everywhere)
	vec4 groundAmbient; // rgb: from below (equal to ambient: no hemisphere)
	vec4 eyeFog;        // xyz: eye in world space; w: fog density (0: none)
	vec4 fogColor;      // rgb
} frame;

layout(location = 0) in vec3 vNormal;
layout(location = 1) in vec4 vColor;
layout(location = 2) in vec3 vWorld;

layout(location = 0) out vec4 outColor;

void main() {
	vec3 n = normalize(vNormal);
	float lambert = max(dot(n, -frame.lightDir.xyz), 0.0);
	vec3 amb = frame.ambient.rgb;
	if (frame.groundAmbient.rgb != amb) {
		amb = mix(frame.groundAmbient.rgb, amb, 0.5 + 0.5 * n.y);
	}
	vec3 rgb = vColor.rgb * (amb + frame.lightColor.rgb * lambert);
	if (frame.eyeFog.w > 0.0) {
		float d = distance(vWorld, frame.eyeFog.xyz) * frame.eyeFog.w;
		rgb = mix(frame.fogColor.rgb, rgb, exp(-d * d));
	}
	outColor = vec4(rgb, vColor.a);
}
