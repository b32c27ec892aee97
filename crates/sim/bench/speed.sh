#!/usr/bin/env bash
# Issue 36's speed line: the simulator's rate in arrival *messages* per CPU second on one core,
# all five strategies of sweeps/workloads.toml at 80%, on W4 (100M packets) and W2 (20M) against
# the report's mix (20M), and the ratio of each to the mix. The runs alternate (mix, W4, W2, mix,
# ...) so that a loaded machine slows them alike; medians of user CPU time are quoted.
# A benchmark to run by hand, not a test.
#
# Usage: crates/sim/bench/speed.sh [REPS] [BINARY]   (defaults: 3, target/release/schedlab built here)
# With BASE=/path/to/other/schedlab each run is also made with that binary, alternating, and its
# rates and ratios are printed beside (a before/after comparison under the same load).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
reps=${1:-3}
bin=${2:-}
if [ -z "$bin" ]; then
    cargo build --release -q -p schedlab --manifest-path "$top/Cargo.toml"
    bin="${CARGO_TARGET_DIR:-$top/target}/release/schedlab"
fi
# User CPU seconds of one command, to the microsecond (getrusage of the child; /usr/bin/time's
# 10 ms steps were 2.5% of a W4 run).
user_time() {
    python3 -c 'import resource, subprocess, sys
before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL)
print(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before:.6f}", file=open(sys.argv[1], "w"))' "$@"
}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
strategies=FIFO,RR,10,SF,track:1:100
bins=("$bin"); [ -n "${BASE:-}" ] && bins+=("$BASE")
declare -A args=([mix]="--packets 20M" [w4]="--workload w4 --packets 100M" [w2]="--workload w2 --packets 20M")
for r in $(seq "$reps"); do
    for case in mix w4 w2; do
        for b in "${!bins[@]}"; do
            # shellcheck disable=SC2086
            user_time "$out/time" "${bins[$b]}" sim ${args[$case]} -t 80 -a "$strategies" --threads 1 \
                --seed 1 --quiet --json "$out/run.json"
            # Messages delivered: the first strategy's overall count (every strategy delivers alike, up to
            # the few still queued at the end).
            msgs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["strategies"][0]["overall"]["count"])' \
                "$out/run.json")
            echo "$b $case $(cat "$out/time") $msgs" >>"$out/all"
            echo "binary $b ${case}: $(cat "$out/time") s user, $msgs messages" >&2
        done
    done
done
python3 - "$out/all" "${bins[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
bins = sys.argv[2:]
for b, path in enumerate(bins):
    rate = {}
    for case in ("mix", "w4", "w2"):
        got = [(float(t), int(m)) for bb, c, t, m in rows if int(bb) == b and c == case]
        user = statistics.median(t for t, _ in got)
        rate[case] = got[0][1] / user
        print(f"{path}: {case}: {got[0][1]:,} messages, median user {user:.3f} s ({', '.join(f'{t:.3f}' for t, _ in got)}), "
              f"{rate[case]/1e3:,.0f} k messages/CPU s")
    for case in ("w4", "w2"):
        r = rate["mix"] / rate[case]
        print(f"{path}: {case} is {r:.2f}x below the mix ({'within' if r <= 2 else 'outside'} 2x)")
PY
