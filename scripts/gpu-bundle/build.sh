#!/usr/bin/env bash
# build.sh [OUTDIR] - builds the GPU bundle (make gpu-bundle): a folder of
# at most 56 MiB that proves this project on an x86-64 Linux machine with a
# GPU and its driver but no network and no Go toolchain. See README.txt
# (copied into the bundle) for what it holds and scripts/gpu-bundle/doc.go
# for the design.
#
# Needs: go, gcc (cgo), apt-get (Debian 12, for `apt-get download`; the
# .deb files are cached in $VKJOBS_DEB_CACHE, default ~/.cache/vkjobs/debs,
# so later builds work offline), ldd, and Debian's assimp-testmodels (the
# CMU clips the crowd and the anim tests read).
set -euo pipefail
# Under pipefail a reader that stops early (head, grep -q, awk ... exit)
# kills its writer with SIGPIPE and fails the pipeline at random: pipelines
# here end in readers that read everything (sed -n 1p, awk with a flag).

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/out/gpu-bundle}
GO=${GO:-go}
MAX_BYTES=$((56 * 1024 * 1024)) # with the tracked tree (about 6 MiB), under the 64 MiB a device call carries
MODULE=github.com/vkjobs/vkjobs
# The Debian packages run.sh unpacks: the Vulkan loader, the validation
# layer, and the C++ runtime the layer links (used only when the machine's
# own is older than the layer needs).
DEBS=(libvulkan1 vulkan-validationlayers libstdc++6 libgcc-s1)
DEB_CACHE=${VKJOBS_DEB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vkjobs/debs}
ASSIMP=/usr/share/assimp/models
# Libraries every x86-64 glibc system has: the C library's own parts.
GLIBC_RE='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1)$'

die() { echo "gpu-bundle: $*" >&2; exit 1; }
say() { echo "gpu-bundle: $*"; }

[ "$(uname -m)" = x86_64 ] || die "builds for x86-64 only (this is $(uname -m))"
case "$OUT" in /*) ;; *) OUT=$PWD/$OUT ;; esac
[ "$OUT" != / ] && [ "$OUT" != "$ROOT" ] || die "refusing to use $OUT as the output folder"
cd "$ROOT"

rm -rf "$OUT.tmp"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")
trap 'rm -rf "$STAGE" "$OUT.tmp"' EXIT
P=$STAGE/payload
mkdir -p "$P/bin" "$P/pkg" "$P/lib" "$P/share"

# 1. The packages whose test binary links the Vulkan backend (package gpu
# or the Vulkan binding): every one with GPU tests, found rather than
# listed so that a new package is carried without editing this script.
mapfile -t PKGS < <($GO list -test -f '{{if .ForTest}}{{.ForTest}}{{range .Deps}}{{if or (eq . "'$MODULE'/gpu") (eq . "'$MODULE'/gpu/internal/vkshim")}} uses-vulkan{{end}}{{end}}{{end}}' ./... |
	awk '/uses-vulkan/ {print $1}' | sort -u)
[ ${#PKGS[@]} -gt 0 ] || die "found no package with GPU tests (go list failed?)"
say "packages with GPU tests: ${PKGS[*]#$MODULE/}"

LDFLAGS='-s -w'
for pkg in "${PKGS[@]}"; do
	rel=${pkg#$MODULE}
	rel=${rel#/}
	[ -n "$rel" ] || rel=.
	d=$P/pkg/$rel
	mkdir -p "$d"
	name=$(basename "$pkg").test
	$GO test -c -ldflags="$LDFLAGS" -o "$d/$name" "./$rel" || die "go test -c ./$rel failed"
	[ -x "$d/$name" ] || die "./$rel: go test -c wrote no binary"
	echo "$rel $name" >>"$P/tests.txt"
done
# Tests read testdata/ relative to their package directory, some another
# package's (anim reads ../cmd/crowd/testdata): every testdata folder of
# the module goes in its place (about 1 MB).
find . -type d -name testdata -not -path '*/.*' -not -path './out/*' -prune | sort | while read -r td; do
	mkdir -p "$P/pkg/$(dirname "${td#./}")"
	cp -r "$td" "$P/pkg/$(dirname "${td#./}")/"
done
# The graphics tests of package gpu/gfx compile their shaders from gfx_shaders
# only when glslc is installed; carry nothing else of the source tree.

$GO build -ldflags="$LDFLAGS" -o "$P/bin/crowd" ./cmd/crowd
$GO build -ldflags="$LDFLAGS" -o "$P/bin/kbench" ./cmd/kbench
$GO build -ldflags="$LDFLAGS" -o "$P/bin/probe" ./scripts/gpu-bundle/probe
CGO_ENABLED=0 $GO build -ldflags="$LDFLAGS" -o "$P/bin/imgcmp" ./scripts/gpu-bundle/imgcmp
cp scripts/gpu-bundle/README.txt "$P/README.txt"

# 2. Shared libraries the binaries link beyond the C library (GLFW's
# X11: libX11, libxcb, ...), copied under their soname; run.sh uses each
# only where the machine lacks it. libvulkan.so.1 is dlopened, so ldd does
# not list it: it comes from the loader's package. The NVIDIA Vulkan
# driver (libGLX_nvidia.so.0) links libX11, libXext and glvnd's
# libGLdispatch, which a container given only the driver's libraries may
# lack: those are carried too.
carry_lib() { # SONAME PATH
	[ -e "$P/lib/$1" ] && return
	cp -L "$2" "$P/lib/$1"
	# Its Debian package's copyright file goes with it.
	local deb
	deb=$(dpkg -S "$(readlink -f "$2")" 2>/dev/null | sed -n 1p | cut -d: -f1) || true
	if [ -n "$deb" ] && [ -f "/usr/share/doc/$deb/copyright" ]; then
		mkdir -p "$P/lib/copyright"
		cp "/usr/share/doc/$deb/copyright" "$P/lib/copyright/$deb"
	fi
}
for lib in libXext.so.6 libGLdispatch.so.0; do
	path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !n++ {print $NF}')
	[ -n "$path" ] || die "$lib is missing here (Debian: libxext6, libglvnd0)"
	carry_lib "$lib" "$path"
done
for f in "$P"/bin/* "$P"/pkg/*/*.test "$P"/pkg/*/*/*.test "$P"/pkg/*/*/*/*.test "$P"/lib/*.so.*; do
	[ -f "$f" ] || continue
	deps=$(ldd "$f" 2>/dev/null) || continue # a static binary
	while read -r soname arrow path _; do
		[ "$arrow" = "=>" ] || continue
		[[ $soname =~ $GLIBC_RE ]] && continue
		[ "$path" = "not" ] && die "$f: $soname not found on this machine"
		carry_lib "$soname" "$path"
	done <<<"$deps"
done

# The shader tools the tests run to compile a user's shader
# (internal/glslc: glslc, glslangValidator, spirv-as): under CI=true, which
# run.sh sets, a test whose tool is missing fails rather than skips, and a
# GPU machine seldom has them. They are carried with the libraries they
# link beyond the C library and the C++ runtime (libshaderc), and run.sh
# puts them on PATH only where the machine lacks them.
mkdir -p "$P/tools"
for tool in glslc glslangValidator spirv-as; do
	path=$(command -v "$tool") || die "$tool is missing here (Debian: glslc, glslang-tools, spirv-tools)"
	cp -L "$path" "$P/tools/$tool"
	deps=$(ldd "$path")
	while read -r soname arrow lpath _; do
		[ "$arrow" = "=>" ] || continue
		[[ $soname =~ $GLIBC_RE ]] && continue
		case "$soname" in libstdc++.so.6 | libgcc_s.so.1) continue ;; esac # the bundled C++ runtime
		[ "$lpath" = "not" ] && die "$tool: $soname not found on this machine"
		carry_lib "$soname" "$lpath"
	done <<<"$deps"
done

# 3. Data the crowd and the anim tests read from Debian's
# assimp-testmodels (run.sh points VKJOBS_ASSIMP_MODELS here).
[ -f "$ASSIMP/BVH/01_01.bvh" ] || die "$ASSIMP/BVH is missing: apt-get install assimp-testmodels"
mkdir -p "$P/share/assimp/models"
cp -r "$ASSIMP/BVH" "$P/share/assimp/models/"
cp /usr/share/doc/assimp-testmodels/copyright "$P/share/assimp/copyright" 2>/dev/null || true
grep -rhoE "\"/(glTF2|BVH)/[^\"]+\"" --include='*_test.go' "${PKGS[@]/#$MODULE/.}" 2>/dev/null | tr -d '"' | sort -u |
	while read -r f; do
		src=$(dirname "$ASSIMP$f")
		[ -d "$src" ] || die "$ASSIMP$f is missing: apt-get install assimp-testmodels"
		mkdir -p "$P/share/assimp/models$(dirname "$(dirname "$f")")"
		cp -r "$src" "$P/share/assimp/models$(dirname "$(dirname "$f")")/"
	done

# 4. The Debian packages, fetched once with apt-get download.
mkdir -p "$DEB_CACHE" "$OUT.tmp/debs"
for p in "${DEBS[@]}"; do
	deb=$(ls "$DEB_CACHE/${p}_"*_amd64.deb 2>/dev/null | sort -V | tail -1 || true)
	if [ -z "$deb" ]; then
		(cd "$DEB_CACHE" && apt-get download "$p:amd64" >/dev/null 2>"$STAGE/apt.err") ||
			{ cat "$STAGE/apt.err" >&2; die "apt-get download $p failed (no network to the Debian mirror, and nothing in $DEB_CACHE)"; }
		deb=$(ls "$DEB_CACHE/${p}_"*_amd64.deb | sort -V | tail -1)
	fi
	cp "$deb" "$OUT.tmp/debs/"
done

# The newest glibc symbol version the binaries, the loader and the layer
# use: run.sh refuses an older glibc up front, naming both versions.
mkdir -p "$STAGE/debx"
for d in "$OUT.tmp"/debs/libvulkan1_* "$OUT.tmp"/debs/vulkan-validationlayers_*; do dpkg-deb -x "$d" "$STAGE/debx"; done
GLIBC_NEED=$(find "$P/bin" "$P/pkg" "$P/lib" "$STAGE/debx" -type f \( -name '*.test' -o -name '*.so*' -o -path '*/bin/*' \) \
	-exec grep -aoh 'GLIBC_2\.[0-9][0-9.]*' {} + | sort -uV | tail -n 1)
GLIBC_NEED=${GLIBC_NEED#GLIBC_}

# 5. Assemble: run.sh, the compressed payload, the packages, a manifest.
cp scripts/gpu-bundle/run.sh "$OUT.tmp/run.sh"
chmod +x "$OUT.tmp/run.sh"
cp scripts/gpu-bundle/README.txt "$OUT.tmp/README.txt"
tar -C "$STAGE" -cf - payload | gzip -9 >"$OUT.tmp/payload.tar.gz"
{
	echo "vkjobs GPU bundle"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $($GO version)"
	echo "glibc: $GLIBC_NEED or newer (the newest symbol version the binaries, loader and layer use)"
	echo "tests: $(awk '{print $1}' "$P/tests.txt" | tr '\n' ' ')"
	echo "libraries: $(cd "$P/lib" && ls -- *.so* | tr "\n" " ")"
	echo "debs: $(cd "$OUT.tmp/debs" && ls | tr '\n' ' ')"
	echo "payload files (uncompressed bytes):"
	(cd "$P" && find . -type f -printf '  %s %P\n' | sort -k2)
} >"$OUT.tmp/MANIFEST.txt"

size=$(du -sb "$OUT.tmp" | cut -f1)
[ "$size" -le "$MAX_BYTES" ] || die "the bundle is $size bytes, over the 56 MiB limit ($MAX_BYTES)"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
say "wrote $OUT ($(awk -v b="$size" 'BEGIN{printf "%.1f MiB", b/1048576}')): copy it to the GPU machine and run: $(basename "$OUT")/run.sh REPORT_DIR"
