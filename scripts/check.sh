#!/usr/bin/env bash
# make check: the checks a contributor can run on any system with Go alone
# (no root, no apt, no C compiler, no Vulkan): gofmt over every Go file, then
# go vet, staticcheck and the tests of the packages that need no cgo, built
# with CGO_ENABLED=0. make test is the full run (Debian packages, lavapipe,
# cgo, the race detector).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export CGO_ENABLED=0
export VKJOBS_CHECK_RACES=1 # every scheduler refuses data races (sched.Config.CheckRaces)

out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$out" ]; then echo "gofmt needed on:"; echo "$out"; exit 1; fi
echo "check: gofmt clean"

# A package is pure Go when neither it, its dependencies nor its tests'
# dependencies use cgo in this module or bind Vulkan or GLFW.
pure=()
for p in $($GO list ./...); do
	if ! CGO_ENABLED=1 $GO list -deps -test -f '{{.ImportPath}} {{len .CgoFiles}}' "$p" |
		awk '($1 ~ /^github.com\/vkjobs\// && $NF + 0 > 0) || $1 ~ /^github.com\/go-gl\/glfw\// {bad=1} END {exit !bad}'; then
		pure+=("$p")
	fi
done
echo "check: pure-Go packages: ${pure[*]#github.com/vkjobs/vkjobs/}"
$GO vet "${pure[@]}"
echo "check: go vet clean"
$GO tool staticcheck "${pure[@]}"
echo "check: staticcheck clean"
$GO test -count=1 -timeout 10m "${pure[@]}"
