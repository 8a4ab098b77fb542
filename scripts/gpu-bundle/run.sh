#!/usr/bin/env bash
# run.sh [--short] [--driver nvidia|lavapipe|FILE.json] [--budget SECONDS] [--keep] OUTDIR
#
# Runs the vkjobs GPU bundle (built by `make gpu-bundle`) on this machine:
# unpacks the binaries and the bundled Vulkan loader and validation layer,
# finds the GPU's Vulkan driver, prints the device chosen, runs every GPU
# test binary with the validation layer on, kbench -quick, and the crowd
# demo (1000 characters x 90 bones, headless) with -offload cpu, gpu and
# auto, compares the CPU and GPU images, and writes OUTDIR/report.txt
# (device, pass/fail and time per step, the kbench table, the crowd
# summaries); each step's full output is in OUTDIR/logs. Everything runs
# within --budget seconds (default 450; each step has its own time-out).
#
#   --driver nvidia     (default) the NVIDIA driver: $VK_DRIVER_FILES or
#                       $VK_ICD_FILENAMES when set, else nvidia*.json in the
#                       loader's ICD folders or under /usr/local/nvidia, else
#                       a manifest written here for libGLX_nvidia.so.0
#   --driver lavapipe   Mesa's CPU implementation (lvp_icd*.json), for tests
#   --driver FILE.json  that ICD manifest
#   --short             a quick run for CI on lavapipe: the tests whose names
#                       say GPU, Vulkan, device, ...; fewer kernel sizes,
#                       characters and frames
#   --keep              keep the unpacked files (OUTDIR/work) instead of a
#                       temporary folder removed at exit
#   --unpack DIR        only unpack into DIR and print the library path
#   --find-icd          only print the ICD manifest --driver would use
#
# Needs bash, coreutils (timeout), tar and gzip, and dpkg-deb or xz to
# unpack the .deb files. No network, no root, no Go toolchain.
# Exit status: 0 when every step passed, 1 when one failed, 2 on bad usage.
set -u -o pipefail
# Pipelines end in readers that read everything (sed -n 1p, awk with a
# flag, never head or awk ... exit): an early reader kills its writer with
# SIGPIPE, which pipefail turns into a failure at random.

B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SHORT=0
DRIVER=nvidia
BUDGET=450
KEEP=0
MODE=run
OUT=
# Tests a machine without the build tools cannot run: the shader staleness
# checks need glslc (CI runs them), TestWindow and TestSIGINT (cmd/crowd)
# build the demo with go.
SKIP='^(TestSPIRVCurrent|TestGfxShadersCurrent|TestWindow|TestSIGINT)$'
# Where ICD manifests and the NVIDIA library are looked for; SYSROOT
# prefixes them (for the bundle's own tests).
SYSROOT=${VKJOBS_BUNDLE_SYSROOT:-}

usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--short) SHORT=1 ;;
	--keep) KEEP=1 ;;
	--driver) [ $# -ge 2 ] || usage; DRIVER=$2; shift ;;
	--driver=*) DRIVER=${1#*=} ;;
	--budget) [ $# -ge 2 ] || usage; BUDGET=$2; shift ;;
	--budget=*) BUDGET=${1#*=} ;;
	--unpack) [ $# -ge 2 ] || usage; MODE=unpack; OUT=$2; shift ;;
	--find-icd) MODE=find-icd ;;
	-h | --help) usage ;;
	-*) echo "run.sh: unknown option $1" >&2; usage ;;
	*) [ -z "$OUT" ] || usage; OUT=$1 ;;
	esac
	shift
done
case "$BUDGET" in '' | *[!0-9]*) echo "run.sh: --budget $BUDGET: want seconds" >&2; exit 2 ;; esac

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
T0=$(now)

# ---------------------------------------------------------------- driver

# find_icd prints the ICD manifest for $DRIVER and sets ICD_HOW.
ICD_HOW=
find_icd() {
	local f d lib
	case "$DRIVER" in
	lavapipe)
		for f in "$SYSROOT"/usr/share/vulkan/icd.d/lvp_icd*.json "$SYSROOT"/etc/vulkan/icd.d/lvp_icd*.json; do
			[ -f "$f" ] && { ICD_HOW="lavapipe's manifest"; echo "$f"; return 0; }
		done
		echo "run.sh: no lavapipe ICD (lvp_icd*.json in /usr/share/vulkan/icd.d; Debian: mesa-vulkan-drivers)" >&2
		return 1
		;;
	nvidia) ;;
	*)
		[ -f "$DRIVER" ] || { echo "run.sh: --driver $DRIVER: no such ICD manifest" >&2; return 1; }
		ICD_HOW="--driver"; echo "$DRIVER"; return 0
		;;
	esac
	if [ -n "${VK_DRIVER_FILES:-}" ]; then ICD_HOW="\$VK_DRIVER_FILES"; echo "$VK_DRIVER_FILES"; return 0; fi
	if [ -n "${VK_ICD_FILENAMES:-}" ]; then ICD_HOW="\$VK_ICD_FILENAMES"; echo "$VK_ICD_FILENAMES"; return 0; fi
	local dirs=(/etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/etc/vulkan/icd.d /usr/local/share/vulkan/icd.d
		/usr/local/nvidia/icd.d /usr/local/nvidia/share/vulkan/icd.d /usr/local/nvidia/etc/vulkan/icd.d)
	local xdg x
	IFS=: read -ra xdg <<<"${XDG_CONFIG_DIRS:-/etc/xdg}:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
	for d in "${xdg[@]}"; do
		for x in "${dirs[@]}"; do [ "$x" = "$d/vulkan/icd.d" ] && continue 2; done
		[ -n "$d" ] && dirs+=("$d/vulkan/icd.d")
	done
	for d in "${dirs[@]}"; do
		for f in "$SYSROOT$d"/nvidia*.json; do
			[ -f "$f" ] && { ICD_HOW="found in $d"; echo "$f"; return 0; }
		done
	done
	if [ -d "$SYSROOT/usr/local/nvidia" ]; then
		f=$(find "$SYSROOT/usr/local/nvidia" -maxdepth 5 -name 'nvidia*.json' -path '*icd*' 2>/dev/null | sort | sed -n 1p)
		[ -n "$f" ] && { ICD_HOW="found under /usr/local/nvidia"; echo "$f"; return 0; }
	fi
	# No manifest (common in containers, where only the libraries are
	# mounted): write one for the driver library.
	lib=
	if [ -z "$SYSROOT" ]; then
		lib=$({ ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || /usr/sbin/ldconfig -p 2>/dev/null; } |
			awk '/libGLX_nvidia\.so\.0 .*x86-64/ && !n++ {print $NF}')
	fi
	if [ -z "$lib" ]; then
		for f in "$SYSROOT"/usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0 "$SYSROOT"/usr/lib64/libGLX_nvidia.so.0 \
			"$SYSROOT"/usr/local/nvidia/lib64/libGLX_nvidia.so.0 "$SYSROOT"/usr/lib/x86_64-linux-gnu/nvidia/current/libGLX_nvidia.so.0 \
			"$SYSROOT"/usr/lib/nvidia/libGLX_nvidia.so.0; do
			[ -e "$f" ] && { lib=$f; break; }
		done
	fi
	if [ -n "$lib" ]; then
		mkdir -p "$W/icd"
		printf '{\n  "file_format_version": "1.0.0",\n  "ICD": {\n    "library_path": "%s",\n    "api_version": "1.3.0"\n  }\n}\n' "$lib" >"$W/icd/nvidia_icd.json"
		ICD_HOW="no manifest on this machine: written by run.sh for $lib"
		echo "$W/icd/nvidia_icd.json"
		return 0
	fi
	{
		echo "run.sh: no NVIDIA Vulkan driver found: no VK_DRIVER_FILES or VK_ICD_FILENAMES, no nvidia*.json in"
		printf '    %s\n' "${dirs[@]}" /usr/local/nvidia
		echo "  and no libGLX_nvidia.so.0 (ldconfig, /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/local/nvidia/lib64)."
		echo "  In a container, NVIDIA_DRIVER_CAPABILITIES must include graphics (or all) for the Vulkan driver to be"
		echo "  mounted; or pass --driver FILE.json."
	} >&2
	return 1
}

if [ "$MODE" = find-icd ]; then
	W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle-icd.XXXXXX") || exit 1
	trap 'rm -rf "$W"' EXIT
	icd=$(find_icd) || exit 1
	find_icd >/dev/null # again in this shell, for ICD_HOW
	echo "$icd ($ICD_HOW)"
	cat "$icd"
	exit 0
fi

[ -n "$OUT" ] || usage
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)

# ---------------------------------------------------------------- unpack

# unpack_deb DEB DIR extracts a Debian package's files without root.
# Without dpkg-deb (or with VKJOBS_BUNDLE_NO_DPKG=1, for the tests) it
# reads the package's ar archive itself: 8 bytes of magic, then members of
# a 60-byte header (name 16 bytes, size 10 bytes at offset 48) and their
# data padded to even length; the files are in the data.tar.* member.
unpack_deb() {
	if command -v dpkg-deb >/dev/null && [ -z "${VKJOBS_BUNDLE_NO_DPKG:-}" ]; then
		dpkg-deb -x "$1" "$2"
		return
	fi
	local f=$1 off=8 total name size dec
	total=$(stat -c %s "$f") || return 1
	[ "$(head -c 8 "$f")" = '!<arch>' ] || { echo "run.sh: $f is not a Debian package" >&2; return 1; }
	while [ "$off" -lt "$total" ]; do
		name=$(dd if="$f" bs=1 skip="$off" count=16 2>/dev/null | tr -d ' ')
		size=$(dd if="$f" bs=1 skip=$((off + 48)) count=10 2>/dev/null | tr -d ' ')
		off=$((off + 60))
		case "${name%/}" in
		data.tar.xz) dec="xz -dc" ;;
		data.tar.gz) dec="gzip -dc" ;;
		data.tar.zst) dec="zstd -dc" ;;
		data.tar) dec=cat ;;
		*)
			off=$((off + size + size % 2))
			continue
			;;
		esac
		command -v "${dec%% *}" >/dev/null || { echo "run.sh: unpacking $f needs dpkg-deb or ${dec%% *}" >&2; return 1; }
		# dd reads exactly the member (tail | head -c killed tail by
		# SIGPIPE, which pipefail turned into a failed unpack).
		dd if="$f" iflag=skip_bytes,count_bytes skip="$off" count="$size" bs=64K status=none | $dec | tar -x -C "$2"
		return
	done
	echo "run.sh: $f has no data.tar member" >&2
	return 1
}

# system_has SONAME: the machine has that x86-64 library (always false
# with VKJOBS_BUNDLE_ALL_LIBS=1, which the bundle's test uses to run on the
# carried libraries).
LDCACHE=$({ ldconfig -p || /sbin/ldconfig -p || /usr/sbin/ldconfig -p; } 2>/dev/null)
system_has() {
	[ -z "${VKJOBS_BUNDLE_ALL_LIBS:-}" ] || return 1
	awk -v l="$1" '$1 == l && /x86-64/ {f = 1} END {exit !f}' <<<"$LDCACHE" && return 0
	local d
	for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64; do
		[ -e "$d/$1" ] && return 0
	done
	return 1
}

# unpack DIR: payload and packages into DIR; sets LIBPATH and LAYER_DIR.
unpack() {
	local w=$1 d f need sys
	mkdir -p "$w/vk" "$w/cxx" || return 1
	tar -xzf "$B/payload.tar.gz" -C "$w" || { echo "run.sh: cannot unpack $B/payload.tar.gz" >&2; return 1; }
	for d in "$B"/debs/*.deb; do
		case "$(basename "$d")" in
		libstdc++6_* | libgcc-s1_*) unpack_deb "$d" "$w/cxx" ;;
		*) unpack_deb "$d" "$w/vk" ;;
		esac || { echo "run.sh: cannot unpack $d" >&2; return 1; }
	done
	f=$(find "$w/vk" -name 'libvulkan.so.1' | sed -n 1p)
	[ -n "$f" ] || { echo "run.sh: no libvulkan.so.1 in the bundled loader package" >&2; return 1; }
	LIBPATH=$(dirname "$f")
	f=$(find "$w/vk" -name 'VkLayer_khronos_validation.json' | sed -n 1p)
	[ -n "$f" ] || { echo "run.sh: no VkLayer_khronos_validation.json in the bundled layer package" >&2; return 1; }
	LAYER_DIR=$(dirname "$f")
	f=$(find "$w/vk" -name 'libVkLayer_khronos_validation.so' | sed -n 1p)
	[ "$(dirname "$f")" = "$LIBPATH" ] || LIBPATH=$LIBPATH:$(dirname "$f")
	# The carried libraries (X11, glvnd's dispatcher) serve where the
	# machine lacks them: its own copies stay coherent with each other and
	# with its driver.
	mkdir -p "$w/libfb"
	LIBS_HOW=
	for f in "$w"/payload/lib/*.so.*; do
		[ -e "$f" ] || continue
		d=$(basename "$f")
		system_has "$d" && continue
		ln -sf "$f" "$w/libfb/$d"
		LIBS_HOW="$LIBS_HOW $d"
	done
	LIBS_HOW=${LIBS_HOW:- none (the machine has them all)}
	# The shader tools (glslc, glslangValidator, spirv-as) serve where the
	# machine has none of that name: tests that compile a user's shader
	# fail under CI=true without them.
	mkdir -p "$w/toolfb"
	TOOLS_HOW=
	for f in "$w"/payload/tools/*; do
		[ -e "$f" ] || continue
		d=$(basename "$f")
		[ -z "${VKJOBS_BUNDLE_ALL_LIBS:-}" ] && command -v "$d" >/dev/null && continue
		ln -sf "$f" "$w/toolfb/$d"
		TOOLS_HOW="$TOOLS_HOW $d"
	done
	TOOLS_HOW=${TOOLS_HOW:- none (the machine has them all)}
	LIBPATH=$LIBPATH:$w/libfb
	# The layer is C++: use the machine's libstdc++ when it has the newest
	# symbol version the layer needs, else the bundled one (a newer
	# libstdc++ serves older programs, an older one does not).
	need=$(grep -ao 'GLIBCXX_3\.4\.[0-9]*' "$f" | sort -uV | tail -1)
	sys=$(awk '/libstdc\+\+\.so\.6 .*x86-64/ && !n++ {print $NF}' <<<"$LDCACHE")
	[ -n "$sys" ] || for f in /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib64/libstdc++.so.6 /lib64/libstdc++.so.6; do
		[ -e "$f" ] && { sys=$f; break; }
	done
	if [ -z "${VKJOBS_BUNDLE_ALL_LIBS:-}" ] && [ -n "$sys" ] && { [ -z "$need" ] || grep -qa "$need" "$sys"; }; then
		CXX_HOW="the machine's $sys"
	else
		for f in libstdc++.so.6 libgcc_s.so.1; do
			d=$(find "$w/cxx" -name "$f" | sed -n 1p)
			[ -n "$d" ] && LIBPATH=$LIBPATH:$(dirname "$d")
		done
		CXX_HOW="the bundled one (the machine's ${sys:-none} lacks ${need:-it})"
		[ -z "${VKJOBS_BUNDLE_ALL_LIBS:-}" ] || CXX_HOW="the bundled one (VKJOBS_BUNDLE_ALL_LIBS=1)"
	fi
}

if [ "$MODE" = unpack ]; then
	unpack "$OUT" || exit 1
	echo "LD_LIBRARY_PATH=$LIBPATH"
	echo "VK_LAYER_PATH=$LAYER_DIR"
	exit 0
fi

if [ "$KEEP" = 1 ]; then
	W=$OUT/work
	rm -rf "$W"
	mkdir -p "$W"
else
	W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX") || exit 1
	trap 'rm -rf "$W"' EXIT
	# A temporary folder mounted noexec cannot run the binaries: then
	# OUTDIR/work, removed at exit all the same.
	cp "$(type -P true)" "$W/exec-check" 2>/dev/null
	if ! "$W/exec-check" 2>/dev/null; then
		rm -rf "$W"
		W=$OUT/work
		rm -rf "$W"
		mkdir -p "$W" || exit 1
		trap 'rm -rf "$W"' EXIT
	fi
	rm -f "$W/exec-check"
fi
LOGS=$OUT/logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
rm -f "$OUT"/crowd-*.png "$OUT"/kbench.txt "$OUT"/report.txt
REPORT=$OUT/report.txt
STEPS=$W/steps.txt
: >"$STEPS"
NOTES=()
RUNNING=      # the step line of the step in progress, or ""
RUNNING_NAME= # its name

# ---------------------------------------------------------------- report

# step_line STATUS SECONDS NAME DETAIL
step_line() { printf '  %-8s %7ss  %-28s %s\n' "$1" "$2" "$3" "$4" >>"$STEPS"; }

section() { # TITLE FILE
	[ -s "$2" ] || return 0
	printf '\n== %s ==\n' "$1"
	cat "$2"
}

write_report() {
	local o n
	{
		echo "vkjobs GPU bundle report ($([ "$SHORT" = 1 ] && echo short || echo full) run, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(elapsed "$T0") s so far)"
		sed -n 's/^commit: /bundle: commit /p; s/^built: /built: /p' "$B/MANIFEST.txt" 2>/dev/null
		echo "machine: $(uname -srm); $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p)); $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); $(getconf GNU_LIBC_VERSION 2>/dev/null)"
		[ -n "${GPUS:-}" ] && echo "nvidia-smi: $GPUS"
		echo "driver: ${ICD:-none} (${ICD_HOW:-})"
		[ -z "${LOADER:-}" ] || echo "loader: $LOADER; validation layer: $LAYER; C++ runtime: $CXX_HOW; carried libraries used:$LIBS_HOW; carried shader tools used:$TOOLS_HOW"
		if [ -s "$LOGS/probe.log" ]; then
			echo
			echo "== device (probe, validation on) =="
			cat "$LOGS/probe.log"
		fi
		echo
		echo "== steps =="
		cat "$STEPS"
		[ -z "$RUNNING" ] || echo "$RUNNING"
		local pass fail
		pass=$(grep -c '^  PASS' "$STEPS")
		fail=$(grep -vc '^  PASS' "$STEPS")
		echo "result: $pass of $((pass + fail)) steps passed in $(elapsed "$T0") s"
		# Written before the step started: a run killed (SIGKILL, a lost
		# machine) leaves this report, naming the step it was in.
		[ -z "$RUNNING" ] || echo "result: INCOMPLETE: the run was still in step ${RUNNING_NAME:-?} when this report was written"
		for n in "${NOTES[@]}"; do echo "note: $n"; done
		section "kbench -quick" "$OUT/kbench.txt"
		for o in cpu gpu auto; do section "crowd -offload $o (summary)" "$W/crowd-$o.summary"; done
		section "tests skipped (reason)" "$W/skipped.txt"
		section "failures (last lines of each failing step's log in logs/)" "$W/failures.txt"
	} >"$REPORT.tmp" && mv "$REPORT.tmp" "$REPORT"
}

# left: seconds of the budget left.
left() { awk -v a="$T0" -v b="$(now)" -v n="$BUDGET" 'BEGIN{printf "%d", n-(b-a)}'; }

# run_step NAME MAXSECONDS RESERVE DETAILFN CMD...: runs CMD with a
# time-out of MAXSECONDS, or less so that RESERVE seconds of the budget
# stay for the later steps; its output goes to logs/NAME.log.
FAILED=0
run_step() {
	local name=$1 max=$2 reserve=$3 detailfn=$4
	shift 4
	local t
	t=$(($(left) - reserve))
	[ "$t" -le "$max" ] || t=$max
	if [ "$t" -lt 5 ]; then
		step_line SKIPPED 0 "$name" "out of time (budget $BUDGET s)"
		FAILED=1
		write_report
		return 1
	fi
	local s rc status log=$LOGS/$name.log
	s=$(now)
	echo "run.sh: $name (at most ${t}s)" >&2
	RUNNING=$(printf '  %-8s %7ss  %-28s %s' RUNNING "$(elapsed "$T0")" "$name" "started at this time into the run, at most ${t}s")
	RUNNING_NAME=$name
	write_report
	STEP_T=$t timeout -k 10 "$t" "$@" >"$log" 2>&1
	rc=$?
	local dt
	dt=$(elapsed "$s")
	RUNNING= RUNNING_NAME=
	case $rc in
	0) status=PASS ;;
	124 | 137) status=TIMEOUT ;;
	*) status=FAIL ;;
	esac
	local detail=""
	[ "$detailfn" = - ] || detail=$($detailfn "$log" "$rc")
	# A failure without a summary: the log's last line says why.
	[ -n "$detail" ] || [ "$status" = PASS ] || detail=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-200)
	[ "$status" = TIMEOUT ] && detail="$detail (killed after ${t}s)"
	# A Go test binary's own -test.timeout: name the tests that hung.
	if [ "$status" = FAIL ] && grep -q '^panic: test timed out after' "$log"; then
		status=TIMEOUT
		detail="$detail (hung in: $(awk '/^[[:space:]]*running tests:/ {f = 1; next} f && /^[[:space:]]+Test/ {printf "%s ", $1; next} {f = 0}' "$log"))"
	fi
	# A time-out within a share the budget cut short is no proof of a hang.
	[ "$status" = TIMEOUT ] && [ "$t" -lt "$max" ] &&
		detail="$detail; the budget left this step ${t}s of its ${max}s: slow, not necessarily hung"
	step_line "$status" "$dt" "$name" "$detail"
	if [ "$status" != PASS ]; then
		FAILED=1
		{
			# What the failing tests printed (go test -v puts a test's
			# messages just before its --- FAIL line), then the log's end.
			if grep -qE '^[[:space:]]*--- FAIL' "$log"; then
				echo "-- $name: the failing tests' messages (logs/$name.log):"
				grep -B12 -E '^[[:space:]]*--- FAIL' "$log" | grep -vE '^[[:space:]]*--- PASS' | sed -n 1,80p
			fi
			echo "-- $name: exit status $rc; logs/$name.log ends:"
			tail -n 25 "$log"
		} >>"$W/failures.txt"
	fi
	write_report
	[ "$status" = PASS ]
}

# ---------------------------------------------------------------- setup

# setup_fail SUMMARY: the set-up failed; logs/setup.log says why.
setup_fail() {
	step_line FAIL "$(elapsed "$T0")" setup "$1"
	cat "$LOGS/setup.log" >>"$W/failures.txt"
	write_report
	cat "$LOGS/setup.log" >&2
	echo "run.sh: report: $REPORT" >&2
	exit 1
}

# The binaries' newest glibc symbol version, which build.sh recorded.
need=$(sed -n 's/^glibc: \([0-9.]*\).*/\1/p' "$B/MANIFEST.txt" 2>/dev/null)
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | sed -n 1p)" != "$need" ]; then
	echo "run.sh: this machine's glibc $have is older than the $need the bundle's binaries need (built on Debian 12)" >"$LOGS/setup.log"
	setup_fail "glibc $have is older than $need"
fi
command -v nvidia-smi >/dev/null && GPUS=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | paste -sd';' -)
unpack "$W" 2>"$LOGS/setup.log" || setup_fail "unpacking the bundle failed"
ICD=$(find_icd 2>>"$LOGS/setup.log") || setup_fail "no $DRIVER Vulkan driver found"
find_icd >/dev/null 2>&1 # again in this shell, for ICD_HOW
LOADER="bundled $(basename "$(readlink -f "${LIBPATH%%:*}/libvulkan.so.1")")"
LAYER="bundled $(sed -n 's/.*"api_version": *"\([^"]*\)".*/\1/p' "$LAYER_DIR/VkLayer_khronos_validation.json" | sed -n 1p) in $LAYER_DIR"
export LD_LIBRARY_PATH=$LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VK_DRIVER_FILES=$ICD VK_ICD_FILENAMES=$ICD VK_LAYER_PATH=$LAYER_DIR
export VKJOBS_ASSIMP_MODELS=$W/payload/share/assimp/models
export XDG_CACHE_HOME=$W/cache
export PATH=$PATH:$W/toolfb
unset VK_ADD_DRIVER_FILES VK_INSTANCE_LAYERS
step_line PASS "$(elapsed "$T0")" setup "unpacked; driver $ICD"
write_report

# ---------------------------------------------------------------- steps

probe_detail() { sed -n 's/^device: //p' "$1" | sed -n 1p; }
run_step probe 60 60 probe_detail "$W/payload/bin/probe" ||
	NOTES+=("the probe could not open a device with the validation layer: the GPU steps below are expected to fail")

# test_detail LOG RC: counts of passed, failed and skipped tests; the
# skipped ones and their reasons go to skipped.txt.
test_detail() {
	local p f s
	p=$(grep -c '^--- PASS' "$1")
	f=$(grep -c '^--- FAIL' "$1")
	s=$(grep -c '^--- SKIP' "$1")
	# go test -v prints a skipped test's reason just before its --- SKIP line.
	awk -v pkg="$CUR" '/^=== RUN/ {why=""} /^    / && why == "" {why=$0; sub(/^[ \t]+/, "", why)}
		/^--- SKIP/ {printf "  %s %s: %s\n", pkg, $3, why}' "$1" >>"$W/skipped.txt"
	echo "$p passed, $f failed, $s skipped$(grep '^--- FAIL' "$1" | awk '{printf "%s%s", (NR==1 ? ": " : " "), $3}')"
}

# The time each test binary may take, and what the later steps keep.
TEST_MAX=150
RESERVE=190
[ "$SHORT" = 1 ] && RESERVE=60
SHORT_TESTS='gpu|vulkan|lavapipe|device|validation|headless|quick'
TARGS=(-test.v -test.count=1 -test.skip "$SKIP")
[ "$SHORT" = 1 ] && TARGS+=(-test.short)
while read -r rel name; do
	[ -n "$rel" ] || continue
	CUR=$rel
	env_ci=CI=true # no device is then a failure, not a skip
	if [ "$rel" = gpu/present ] && [ -z "${DISPLAY:-}" ] && ! command -v Xvfb >/dev/null; then
		env_ci=CI= # its window tests skip without a display
	fi
	# VKJOBS_VALIDATION=1: the devices the tests open without gputest
	# (which always validates) get the validation layer too.
	# -test.timeout a little under the step's time-out: the Go test
	# binary then names the test that hung and prints its goroutines.
	# --short runs the tests whose names say they use the GPU (all when
	# none does): make test has run every test already.
	sel=()
	if [ "$SHORT" = 1 ]; then
		only=$(cd "$W/payload/pkg/$rel" && "./$name" -test.list . 2>/dev/null | grep -E '^Test' | grep -iE "$SHORT_TESTS" | paste -sd'|' -)
		[ -z "$only" ] || sel=(-test.run "^($only)\$")
	fi
	run_step "test-${rel//\//-}" "$TEST_MAX" "$RESERVE" test_detail \
		bash -c 'cd "$1" && shift && exec env "$@" -test.timeout=$((STEP_T - 8))s' _ "$W/payload/pkg/$rel" "$env_ci" VKJOBS_VALIDATION=1 "./$name" "${TARGS[@]}" "${sel[@]}"
done <"$W/payload/tests.txt"

# kbench -quick: where each kernel runs best on this machine.
KB=(-quick -plot "$OUT/kbench.svg")
[ "$SHORT" = 1 ] && KB+=(-sizes 1e3,1e4 -reps 1 -min-sample 1ms)
kbench_detail() { sed -n 's/^kbench .*; GPU: /GPU: /p' "$OUT/kbench.txt" 2>/dev/null | sed -n 1p; }
run_step kbench-quick 90 100 kbench_detail bash -c '"$@" >"'"$OUT"'/kbench.txt"' _ "$W/payload/bin/kbench" "${KB[@]}"
cp "$LOGS/kbench-quick.log" "$W/kbench.err" 2>/dev/null
write_report

# The crowd, 1000 characters x 90 bones (the default), headless, three ways.
CR=(-headless -q -cache "$W/cache/crowd")
if [ "$SHORT" = 1 ]; then CR+=(-count 64 -frames 6 -warmup 1 -size 320x240); else CR+=(-count 1000 -bones 90 -frames 120); fi
crowd_detail() { sed -n 's/^frame time: //p' "$1" | sed -n 1p; }
i=0
for o in cpu gpu auto; do
	i=$((i + 1))
	extra=()
	[ "$o" = gpu ] && extra=(-trace "$OUT/crowd-gpu.trace.json")
	run_step "crowd-$o" 90 $(((3 - i) * 30 + 10)) crowd_detail "$W/payload/bin/crowd" "${CR[@]}" -offload "$o" -out "$OUT/crowd-$o.png" "${extra[@]}"
	cp "$LOGS/crowd-$o.log" "$W/crowd-$o.summary"
done
[ -f "$OUT/crowd-gpu.trace.json" ] && gzip -f "$OUT/crowd-gpu.trace.json"
write_report

cmp_detail() { sed -n 's/^imgcmp: .*\.png: //p' "$1"; }
for o in gpu auto; do
	if [ -f "$OUT/crowd-cpu.png" ] && [ -f "$OUT/crowd-$o.png" ]; then
		run_step "compare-cpu-$o" 30 0 cmp_detail "$W/payload/bin/imgcmp" "$OUT/crowd-cpu.png" "$OUT/crowd-$o.png"
	else
		step_line FAIL 0 "compare-cpu-$o" "no image (the crowd runs failed)"
		FAILED=1
	fi
done
write_report
echo "run.sh: report: $REPORT" >&2
cat "$REPORT"
# The verdict again, last: whoever reads only the end of the output (a
# terminal's scrollback, a tool that keeps the last few kilobytes) sees
# the device, every step and the result without the tables above.
printf '\n== summary (as at the top of %s) ==\n' "$REPORT"
sed -n '/^device: /p' "$LOGS/probe.log" 2>/dev/null | sed -n 1p
sed -n '/^== steps ==$/,/^result: /p' "$REPORT" | sed 1d
exit $FAILED
