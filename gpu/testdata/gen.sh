#!/bin/sh
# Regenerates the committed SPIR-V test kernels beside their GLSL sources:
#
#	glslc --target-env=vulkan1.0 -O -o X.spv X.comp
#	spirv-val --target-env vulkan1.0 X.spv
#
# Run it after editing any .comp file (sh gpu/testdata/gen.sh, or
# go generate ./gpu/). TestSPIRVCurrent recompiles every .comp file and fails
# when a committed .spv differs. Needs Debian packages glslc and spirv-tools.
set -eu
cd "$(dirname "$0")"
for src in *.comp; do
	out="${src%.comp}.spv"
	glslc --target-env=vulkan1.0 -O -o "$out" "$src"
	spirv-val --target-env vulkan1.0 "$out"
done
