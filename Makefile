# Two commands do everything on a fresh Debian machine (run as root):
#   make demo   - the main job (crowd demo; headless when there is no display)
#   make test   - every check CI runs
# On any other system, without root: make check (gofmt, and vet, staticcheck
# and tests of the pure-Go packages; needs Go alone).
SHELL := /bin/bash
GO ?= go
export PATH := $(PATH):/usr/local/go/bin

# Debian packages the project needs: Vulkan loader and headers, lavapipe,
# validation layers, vulkaninfo, the shader compiler and validator, Xvfb and
# the X11 headers GLFW builds against, and the real test data.
DEB_PKGS := mesa-vulkan-drivers libvulkan1 libvulkan-dev vulkan-validationlayers \
	vulkan-tools glslc glslang-tools spirv-tools xvfb xauth libx11-dev libxrandr-dev libxinerama-dev \
	libxcursor-dev libxi-dev libxxf86vm-dev libgl1-mesa-dev assimp-testmodels gcc

.PHONY: deps build test bench benchmarks check demo shaders shaders-check soak fuzz fmt-check vet staticcheck gpu-bundle

# GPU tests run with the Vulkan validation layer on and fail on any message;
# CI=true turns "no Vulkan device" from a skip into a failure.

deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep 'install ok installed' >/dev/null || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing $$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "deps: need root to apt-get install: $$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else echo "deps: all Debian packages present"; fi
	$(GO) mod download

build: deps
	$(GO) build ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck is pinned in go.mod (tool directive).
staticcheck:
	$(GO) tool staticcheck ./...

# No root, no apt, no C compiler: gofmt, then vet, staticcheck and tests of
# the packages that need no cgo (CGO_ENABLED=0). make test is the full run.
check:
	bash scripts/check.sh

shaders: deps
	bash shaders/build.sh
	sh gpu/testdata/gen.sh
	sh gpu/gfx/gfx_shaders/gen.sh

# Recompiles every shader, fails if a committed .spv is stale, runs spirv-val.
shaders-check:
	bash shaders/check.sh

# Every go test -fuzz target for a short, bounded time over its seed corpus.
FUZZTIME ?= 8s
fuzz:
	FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

# Every scheduler the tests and programs make refuses data races between
# tasks (sched.Config.CheckRaces, read by sched.New from this variable).
test: export VKJOBS_CHECK_RACES := 1
test: deps fmt-check vet staticcheck shaders-check
	$(GO) test -count=1 -timeout 30m ./...
	# The kernels' pure-Go paths (the fallbacks of the AVX2 assembly): every CPU kernel test again; the GPU tests skip.
	KERNELS_GO=1 $(GO) test -count=1 ./kernels/
	# anim's pure-Go build (-tags purego, and other architectures) must keep compiling: its tests run the Go path in-process (format.PureGo).
	$(GO) vet -tags purego ./anim/...
	GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./anim/ ./anim/internal/... ./anim/vmath/
	$(GO) test -count=1 -race -timeout 20m ./sched/... ./gpu/... ./stress/... ./affinity/... ./render/... ./evstream/...
	# The scheduler's model-based randomized test and its random-programs checker (-short: about 4 s of programs) under -race on 1, 2, 4 and 8 Ps.
	for p in 1 2 4 8; do GOMAXPROCS=$$p $(GO) test -count=1 -race -timeout 5m -run '^TestModel$$' ./sched/ || exit 1; done
	for p in 1 2 4 8; do GOMAXPROCS=$$p $(GO) test -count=1 -race -short -timeout 5m -run '^TestRandomPrograms$$' ./sched/ || exit 1; done
	$(MAKE) --no-print-directory fuzz
	# The GPU bundle: build it, check its size and libraries, run its short mode on lavapipe (about 2 minutes).
	VKJOBS_GPU_BUNDLE_TEST=1 $(GO) test -count=1 -timeout 15m -run TestBundle ./scripts/gpu-bundle/

# Long randomized stress of the scheduler (minutes, millions of tasks).
SOAK ?= 3m
soak: deps
	set -o pipefail; VKJOBS_SOAK=$(SOAK) $(GO) test -count=1 -run 'TestStress|TestModel|TestRandomGraphsEveryAffinity|TestRandomPrograms' -timeout 2h -v ./sched/ ./stress/ | grep -E 'soak|tasks|PASS|FAIL|ok'

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./sched/... ./gpu/... ./kernels/...

# Measures the benchmark sets of scripts/benchmarks.sh on a clean tree (a few
# minutes; not in make test), writes the run as JSON into benchmarks/results/ and
# regenerates BENCHMARKS.md's tables from the latest clean results file.
COUNT ?= 5
BENCHTIME ?= 200ms
benchmarks:
	COUNT=$(COUNT) BENCHTIME=$(BENCHTIME) GO=$(GO) bash scripts/benchmarks.sh

# The first build compiles GLFW and the Vulkan bindings with cgo (about a
# minute); go build -v names each package as it is compiled.
demo: deps
	@echo "demo: building cmd/crowd into bin/crowd (the first build compiles GLFW and Vulkan bindings with cgo: about a minute)"
	$(GO) build -v -o bin/crowd ./cmd/crowd
	./bin/crowd

# A folder (at most 56 MiB) that proves the project on a machine with a GPU
# and its driver but no network and no Go: copy it there and run
# gpu-bundle/run.sh REPORT_DIR (see scripts/gpu-bundle/README.txt).
GPU_BUNDLE ?= out/gpu-bundle
gpu-bundle: deps
	bash scripts/gpu-bundle/build.sh $(GPU_BUNDLE)
