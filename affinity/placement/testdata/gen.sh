#!/bin/sh
# Regenerates the SPIR-V of the test kernels beside their GLSL sources
# (TestSPIRVCurrent fails when a committed .spv is stale). Needs the Debian
# packages glslc and spirv-tools.
set -eu
cd "$(dirname "$0")"
for src in *.comp; do
	out="${src%.comp}.spv"
	glslc --target-env=vulkan1.0 -O -o "$out" "$src"
	spirv-val --target-env vulkan1.0 "$out"
done
