#!/usr/bin/env bash
# Issue 37's flake check: the README's test command (`cargo test --release --workspace`, with
# --no-fail-fast so that one failure does not hide another) run QUIET times in a row on a quiet
# machine and LOADED times with every CPU kept busy by `stress-ng --cpu N` (N = nproc), on a fresh
# clone of the given commit. Prints one table row per run (load, wall time, passed / failed /
# ignored / skipped at runtime, the failing and the skipped tests by name, the load average when it
# started) and exits non-zero if any run failed.
#
# Usage: scripts/suite-runs.sh [QUIET] [LOADED] [COMMIT]     (defaults: 5 3 HEAD)
# Environment: SUITE_DIR   where to clone (default: a new temp folder, removed at the end unless
#                          SUITE_KEEP=1; an existing clone there is reset to COMMIT, cleaned of
#                          untracked files, and keeps its build); it builds into its own target/ unless
#                          CARGO_TARGET_DIR is set. SUITE_TIMEOUT: seconds per run (default 3600).
#              SUITE_IN_PLACE=1: run in this working tree instead of a clone (its build reused;
#                          refused unless it is COMMIT with no change and no untracked file).
#              SUITE_SCOPE: what to test instead of the whole workspace (default --workspace;
#                          e.g. "-p schedlab-workload" to try the script itself quickly).
# The first run includes the build; its time is printed separately. Each run's full log stays in
# the clone's target/suite-runs/ (kept with SUITE_KEEP=1).
set -euo pipefail
quiet=${1:-5}; loaded=${2:-3}; commit=${3:-HEAD}
top=$(cd "$(dirname "$0")/.." && pwd)
limit=${SUITE_TIMEOUT:-3600}
scope=${SUITE_SCOPE:---workspace}
if [ "$loaded" -gt 0 ] && ! command -v stress-ng >/dev/null; then
    echo "suite-runs.sh: loaded runs need stress-ng (apt-get install stress-ng), or pass LOADED=0" >&2
    exit 2
fi
rev=$(git -C "$top" rev-parse --verify "$commit^{commit}") || { echo "suite-runs.sh: no commit '$commit'" >&2; exit 2; }
if [ "${SUITE_IN_PLACE:-0}" = 1 ]; then dir=$top; else dir=${SUITE_DIR:-$(mktemp -d /tmp/schedlab-suite.XXXXXX)}; fi
stress=""
cleanup() {
    if [ -n "$stress" ]; then kill "$stress" 2>/dev/null || true; wait "$stress" 2>/dev/null || true; fi
    if [ "${SUITE_KEEP:-0}" != 1 ] && [ -z "${SUITE_DIR:-}" ] && [ "${SUITE_IN_PLACE:-0}" != 1 ]; then rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ "${SUITE_IN_PLACE:-0}" = 1 ]; then
    # This working tree itself (its build reused): only when it is exactly COMMIT, with nothing
    # changed or untracked, so that what runs is what a clone of COMMIT holds.
    [ "$(git -C "$top" rev-parse HEAD)" = "$rev" ] || { echo "suite-runs.sh: SUITE_IN_PLACE needs $commit checked out here" >&2; exit 2; }
    [ -z "$(git -C "$top" status --porcelain)" ] || { echo "suite-runs.sh: SUITE_IN_PLACE needs a clean tree (git status shows changes)" >&2; exit 2; }
elif [ -e "$dir/.git" ]; then
    # A clone kept from an earlier run (SUITE_DIR): the commit fetched, every change and untracked
    # file removed, its build folder (ignored) kept so that only what changed is rebuilt.
    git -C "$dir" fetch -q "$top" "$rev"
    git -C "$dir" checkout -q --force "$rev"
    git -C "$dir" clean -fdq
else
    git clone -q --no-hardlinks "$top" "$dir"
    git -C "$dir" checkout -q "$rev"
fi
logs="$dir/target/suite-runs"; mkdir -p "$logs"
cd "$dir"
echo "== suite runs: commit ${rev:0:12}, $([ "${SUITE_IN_PLACE:-0}" = 1 ] && echo "in place" || echo "fresh clone") in $dir, $(nproc) CPUs, $(uname -sr), $(date -u +%FT%TZ)"
t0=$(date +%s)
cargo test --release $scope --no-run -q >"$logs/build.log" 2>&1 || { tail -30 "$logs/build.log"; echo "build failed" >&2; exit 1; }
echo "== build: $(( $(date +%s) - t0 )) s"
printf '| run | load | load avg before | wall | passed | failed | ignored | skipped | failing tests | skipped tests |\n|---|---|---|---|---|---|---|---|---|---|\n'
bad=0; n=0
run_one() {  # $1 = quiet|loaded
    n=$((n + 1))
    local log="$logs/run$n.log" skips="$logs/run$n.skips"; : >"$skips"
    local avg; avg=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$1" = loaded ]; then
        stress-ng --cpu "$(nproc)" --timeout "${limit}s" -q >/dev/null 2>&1 & stress=$!
    fi
    local s rc=0; s=$(date +%s)
    SCHEDLAB_SKIP_LOG=$skips timeout "$limit" cargo test --release $scope --no-fail-fast >"$log" 2>&1 || rc=$?
    local wall=$(( $(date +%s) - s ))
    if [ -n "$stress" ]; then kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null || true; stress=""; fi
    local counts; counts=$(awk '/^test result:/ {p += $4; f += $6; i += $8} END {printf "%d %d %d", p, f, i}' "$log")
    read -r p f i <<<"$counts"
    # Whole tests that skipped come out of the passes; a skipped mode ("test[mode]") of a test that
    # ran its other modes does not (as .ci/run counts them).
    local sk; sk=$(awk -F'\t' '/^SKIP/ && $2 !~ /\]$/' "$skips" | wc -l)
    local names; names=$(awk -F'\t' '/^SKIP/ {print $2}' "$skips" | paste -sd, - || true)
    local failing; failing=$(grep -E '^test .* \.\.\. FAILED$' "$log" | sed 's/^test //; s/ \.\.\. FAILED$//' | paste -sd, - || true)
    [ "$rc" -eq 124 ] && failing="timed out after ${limit} s${failing:+; $failing}"
    [ "$rc" -ne 0 ] && [ -z "$failing" ] && failing="exit $rc (see $log)"
    [ "$rc" -ne 0 ] && bad=$((bad + 1))
    printf '| %d | %s | %s | %dm%02d | %d | %d | %d | %d | %s | %s |\n' "$n" "$1" "$avg" $((wall / 60)) $((wall % 60)) \
        $((p - sk)) "$f" "$i" "$sk" "${failing:-none}" "${names:-none}"
}
for _ in $(seq "$quiet"); do run_one quiet; done
for _ in $(seq "$loaded"); do run_one loaded; done
echo "== $((n - bad)) of $n runs passed ($quiet quiet, $loaded with stress-ng --cpu $(nproc)); logs in $logs"
[ "$bad" -eq 0 ]
