#!/usr/bin/env bash
# Bounded fuzzing of every user-fed parser (issue 17; the command-line parsers of issue 19).
# With a nightly toolchain and cargo-fuzz: builds all targets in fuzz/ once, replays the
# committed regressions, then runs each target for FUZZ_SECONDS (default 20) from its seed corpus
# (fuzz/corpus/TARGET, never written to: new inputs go to a scratch directory). A crash, a
# timeout or an out-of-memory fails the script and prints the reproducer path. Without the
# tools it prints a SKIP line and exits 3 (.ci/run shows that as a visible SKIP in its table; it
# showed "ok" when this script exited 0).
#
#   bash .ci/fuzz.sh                       # all targets, 20 s each
#   FUZZ_SECONDS=60 bash .ci/fuzz.sh units # some targets, longer
#
# FUZZ_TARGET_DIR (default: a cache outside the work tree) keeps the instrumented build between
# runs: warm, the whole script takes about 4 minutes at 20 s per target; a cold build of the
# instrumented workspace costs about 9 CPU-minutes (5 minutes or more on 2 cores).
set -uo pipefail
cd "$(dirname "$0")/.."

SKIP="SKIP: fuzzing needs a nightly toolchain and cargo-fuzz (rustup toolchain install nightly; cargo install cargo-fuzz)"
if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "$SKIP"
    exit 3
fi

SECONDS_EACH="${FUZZ_SECONDS:-20}"
case "$SECONDS_EACH" in '' | *[!0-9]*) echo "fuzz.sh: FUZZ_SECONDS must be a whole number of seconds" >&2; exit 2 ;; esac
TARGET_DIR="${FUZZ_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/schedlab-fuzz-target}"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/schedlab-fuzz.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
KEEP="${FUZZ_ARTIFACTS:-fuzz/artifacts}"
# AddressSanitizer by default (cargo-fuzz's); FUZZ_SANITIZER=none builds faster for a cold cache.
SAN=(-s "${FUZZ_SANITIZER:-address}")

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
if [ "${#targets[@]}" -eq 0 ]; then
    echo "fuzz.sh: FAIL: no fuzz targets found in fuzz/Cargo.toml" >&2
    exit 1
fi

now() { date +%s; }
t_all=$(now)
t0=$(now)
echo "fuzz: building ${#targets[@]} targets (${targets[*]}) into $TARGET_DIR"
if ! nice -n 19 cargo +nightly fuzz build "${SAN[@]}" --target-dir "$TARGET_DIR" >"$SCRATCH/build.log" 2>&1; then
    tail -40 "$SCRATCH/build.log"
    echo "fuzz: FAIL: the fuzz targets do not build" >&2
    exit 1
fi
echo "fuzz: build took $(( $(now) - t0 )) s"

failed=()
for t in "${targets[@]}"; do
    t0=$(now)
    work="$SCRATCH/corpus-$t"
    art="$SCRATCH/artifacts-$t/"
    mkdir -p "$work" "$art"
    seeds=()
    [ -d "fuzz/corpus/$t" ] && seeds+=("fuzz/corpus/$t")
    [ -d "fuzz/regressions/$t" ] && seeds+=("fuzz/regressions/$t")
    log="$SCRATCH/$t.log"
    nice -n 19 cargo +nightly fuzz run "${SAN[@]}" --target-dir "$TARGET_DIR" "$t" "$work" "${seeds[@]}" -- \
        -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -artifact_prefix="$art" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$art")" ]; then
        mkdir -p "$KEEP/$t"
        cp "$art"* "$KEEP/$t/" 2>/dev/null
        echo "================ fuzz: FAIL: $t (exit $rc) ================"
        grep -E 'panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer|SUMMARY|assertion' "$log" | head -20
        tail -25 "$log"
        for f in "$KEEP/$t"/*; do
            [ -e "$f" ] && echo "fuzz: reproducer: $f   (replay: cargo +nightly fuzz run $t $f)"
        done
        failed+=("$t")
    else
        echo "fuzz: ok   $t: ${execs:-?} inputs in $(( $(now) - t0 )) s (${cov:-cov ?})"
    fi
done
echo "fuzz: total $(( $(now) - t_all )) s"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: FAIL: ${#failed[@]} of ${#targets[@]} targets crashed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, no crash"
