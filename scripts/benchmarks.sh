#!/usr/bin/env bash
# make benchmarks: measures the sets below (a few minutes on 2 cores at
# COUNT=5), writes the run as data, one JSON file per run in
# benchmarks/results/ (commit, machine, date, load average before and
# after, the command, and per benchmark and variant the median, minimum
# and maximum of each metric over the rounds with its ratio to the
# group's reference variant, paired round by round), then regenerates the
# generated blocks of BENCHMARKS.md from the latest clean results file
# (scripts/benchreport). A line is printed per finished benchmark. Not
# part of make test.
#
#   COUNT=5 BENCHTIME=200ms scripts/benchmarks.sh
#
# It refuses a tree with changes (tracked or untracked, not ignored) in
# the measured packages or the packages they import from this module, or
# in go.mod and go.sum: the figures would belong to no commit. For
# development, VKJOBS_BENCH_DIRTY=1 measures anyway and writes a results
# file marked dirty (...-dirty.json), which benchreport never puts into
# BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
COUNT=${COUNT:-5}
BENCHTIME=${BENCHTIME:-200ms}
RESULTS=${RESULTS:-benchmarks/results}

# PKG BENCHTIME MODE NAMES: the top-level benchmarks of one go test
# invocation (a benchmark a commit lacks is skipped and listed as missing
# in the results). MODE "rounds": a process per round, the rounds
# interleaved with the other sets', so that a change in the machine's load
# falls on every variant alike; "once": one process with -count COUNT, for
# a set whose setup dominates (anim compresses the CMU clips first: 30-90
# s). Every benchmark compares its variants in one process.
SETS=(
	"./sched/ $BENCHTIME rounds BenchmarkEmptyTask,BenchmarkPeersEmpty,BenchmarkGraphReplay,BenchmarkTaskflowShapes,BenchmarkPeersDAG,BenchmarkParallelFor,BenchmarkPeersParallelFor,BenchmarkPeersEmptyMix,BenchmarkPeersFibMix,BenchmarkPeersDAGMix,BenchmarkPeersParallelForMix"
	"./sched/ 1x rounds BenchmarkPeersFib/^(sched|sched-inplace|sched-join|waitgroup|errgroup|ants-unbounded)\$"
	"./kernels/ $BENCHTIME rounds BenchmarkLocalToModel,BenchmarkSkinLBS"
	"./kernels/ 40x rounds BenchmarkSkinDQSOverLBS"
	"./render/ $BENCHTIME rounds BenchmarkMergeSort"
	"./gpu/ 3x rounds BenchmarkGraphSegment"
	"./anim/offline/ 300ms once BenchmarkSample/^(cm=0.01|reference-cm=0.01|seekindex-cm=0.01|uniform-cm=0.01|uniform-purego-cm=0.01)\$/^(forward60Hz|seek)\$/^goroutines=1\$"
)

pattern() { # NAMES -> the -bench pattern
	local names=$1
	if [[ $names == */* ]]; then # one benchmark with sub-benchmark patterns
		echo "^${names%%/*}\$/${names#*/}"
	else
		echo "^(${names//,/|})\$"
	fi
}

# The tree: the measured packages and every package of this module that
# they (or their tests) import, go.mod and go.sum.
pkgs=()
for set in "${SETS[@]}"; do
	read -r pkg _ _ _ <<<"$set"
	[ -d "$pkg" ] && pkgs+=("$pkg")
done
deps=$($GO list -deps -test -f '{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}' "${pkgs[@]}")
mapfile -t dirs < <(echo "$deps" | sort -u | sed "s|^$(pwd)/||; s|^$(pwd)\$|.|" | grep .)
specs=(go.mod go.sum)
for d in "${dirs[@]}"; do specs+=(":(glob)$d/*" ":(glob)$d/testdata/**"); done
commit=$(git rev-parse HEAD)
changed=$(git status --porcelain --untracked-files=all -- "${specs[@]}")
dirty=false
dirtyargs=()
if [ -n "$changed" ]; then
	if [ "${VKJOBS_BENCH_DIRTY:-}" != 1 ]; then
		echo "benchmarks: refusing a dirty tree: these paths of the measured packages differ from commit ${commit:0:12}:" >&2
		echo "$changed" | sed 's/^/    /' >&2
		echo "benchmarks: commit them (or measure a clean clone: git clone . /tmp/vkjobs-bench && make -C /tmp/vkjobs-bench benchmarks)," >&2
		echo "benchmarks: or set VKJOBS_BENCH_DIRTY=1 for a results file marked dirty that BENCHMARKS.md never shows." >&2
		exit 1
	fi
	dirty=true
	while IFS= read -r line; do dirtyargs+=(-dirty-path "${line:3}"); done <<<"$changed"
	echo "benchmarks: VKJOBS_BENCH_DIRTY=1: measuring a dirty tree; the results file will be marked dirty" >&2
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT

run_set() { # SET COUNT
	local pkg bt mode names pat
	read -r pkg bt mode names <<<"$1"
	if [ ! -d "$pkg" ]; then
		echo "benchmarks: $pkg: no such package, skipped" >&2
		return
	fi
	pat=$(pattern "$names")
	echo "benchmarks: $pkg $pat (-benchtime $bt -count $2)" >&2
	# A line per finished benchmark on stderr; the whole output to $out.
	$GO test -run '^$' -bench "$pat" -benchmem -count "$2" -benchtime "$bt" "$pkg" 2>&1 |
		tee -a "$out" | grep --line-buffered -E '^(Benchmark|FAIL|ok|panic|---)' >&2 || true
	if grep -qE '^(FAIL|panic)' "$out"; then
		echo "benchmarks: $pkg failed" >&2
		exit 1
	fi
}

load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)
start=$(date -u '+%Y-%m-%dT%H:%M:%SZ')
t0=$(date +%s)
for round in $(seq "$COUNT"); do
	echo "benchmarks: round $round/$COUNT" >&2
	for set in "${SETS[@]}"; do
		read -r _ _ mode _ <<<"$set"
		[ "$mode" = rounds ] && run_set "$set" 1
	done
done
for set in "${SETS[@]}"; do
	read -r _ _ mode _ <<<"$set"
	[ "$mode" = once ] && run_set "$set" "$COUNT"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)
secs=$(($(date +%s) - t0))

setargs=()
for set in "${SETS[@]}"; do setargs+=(-set "$set"); done
file=$($GO run ./scripts/benchreport record -in "$out" -dir "$RESULTS" \
	-commit "$commit" -dirty="$dirty" "${dirtyargs[@]}" "${setargs[@]}" \
	-start "$start" -secs "$secs" -go "$($GO version | cut -d' ' -f3-)" \
	-load-before "$load0" -load-after "$load1" -count "$COUNT" \
	-command "make benchmarks COUNT=$COUNT BENCHTIME=$BENCHTIME")
echo "benchmarks: wrote $file (${secs} s)" >&2
if [ "$dirty" = true ]; then
	echo "benchmarks: dirty tree: BENCHMARKS.md not regenerated" >&2
	exit 0
fi
$GO run ./scripts/benchreport md -dir "$RESULTS" -md BENCHMARKS.md
echo "benchmarks: regenerated BENCHMARKS.md from the latest clean results in $RESULTS" >&2
