#!/usr/bin/env bash
# build.sh: compile every shaders/*.comp to the .spv beside it.
# Run from anywhere (usually the repo root: bash shaders/build.sh).
# The flags here and in check.sh must stay identical: check.sh rebuilds with
# them and fails when a committed .spv differs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
GLSLC_FLAGS=(--target-env=vulkan1.0 -O)
command -v glslc >/dev/null || { echo "build.sh: glslc not found (Debian package glslc)" >&2; exit 1; }
for src in *.comp; do
	out="${src%.comp}.spv"
	glslc "${GLSLC_FLAGS[@]}" -o "$out" "$src"
	echo "built shaders/$out"
done
