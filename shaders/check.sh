#!/usr/bin/env bash
# check.sh: verify the committed SPIR-V. For every shaders/*.comp it
#   1. recompiles it into a temporary directory with the flags of build.sh,
#   2. fails if the committed .spv is missing or differs (stale: run
#      bash shaders/build.sh and commit the result),
#   3. runs spirv-val (Vulkan 1.0 environment) on the committed .spv.
# It also fails on a .spv without a .comp (orphan). Run from anywhere,
# usually the repo root: bash shaders/check.sh. Exit status 0 = all good.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
GLSLC_FLAGS=(--target-env=vulkan1.0 -O)
for tool in glslc spirv-val; do
	command -v "$tool" >/dev/null || { echo "check.sh: $tool not found (Debian packages glslc, spirv-tools)" >&2; exit 1; }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for src in *.comp; do
	name="${src%.comp}"
	n=$((n + 1))
	if ! glslc "${GLSLC_FLAGS[@]}" -o "$tmp/$name.spv" "$src"; then
		echo "FAIL shaders/$src: does not compile" >&2
		fail=1
		continue
	fi
	if [ ! -f "$name.spv" ]; then
		echo "FAIL shaders/$name.spv: missing (run bash shaders/build.sh)" >&2
		fail=1
		continue
	fi
	if ! cmp -s "$tmp/$name.spv" "$name.spv"; then
		echo "FAIL shaders/$name.spv: stale, differs from a fresh compile of $src (run bash shaders/build.sh)" >&2
		fail=1
	fi
	if ! spirv-val --target-env vulkan1.0 "$name.spv"; then
		echo "FAIL shaders/$name.spv: spirv-val" >&2
		fail=1
	fi
done
for spv in *.spv; do
	[ -e "$spv" ] || continue
	if [ ! -f "${spv%.spv}.comp" ]; then
		echo "FAIL shaders/$spv: no ${spv%.spv}.comp source" >&2
		fail=1
	fi
done
if [ "$fail" != 0 ]; then
	exit 1
fi
echo "check.sh: $n shaders up to date and valid"
