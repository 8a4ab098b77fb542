#!/bin/sh
# Regenerates the committed SPIR-V of package gpu/gfx's shaders beside
# their GLSL sources, or into the directory given as $1 (TestGfxShadersCurrent
# compiles into a temporary directory and compares with the committed files):
#
#	glslc --target-env=vulkan1.0 -O [-DINSTANCED] -o X.spv X
#	spirv-val --target-env vulkan1.0 X.spv
#
# Run it after editing lit.vert or lit.frag (sh gpu/gfx/gfx_shaders/gen.sh, or
# go generate ./gpu/gfx/). Needs Debian packages glslc and spirv-tools.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here}"
cd "$here"
glslc --target-env=vulkan1.0 -O -o "$out/lit.vert.spv" lit.vert
glslc --target-env=vulkan1.0 -O -DINSTANCED -o "$out/lit_inst.vert.spv" lit.vert
glslc --target-env=vulkan1.0 -O -o "$out/lit.frag.spv" lit.frag
for f in lit.vert.spv lit_inst.vert.spv lit.frag.spv; do
	spirv-val --target-env vulkan1.0 "$out/$f"
done
