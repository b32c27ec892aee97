#!/usr/bin/env bash
# Peak memory of a heavy-tailed run (issue 36's done-when line: pFabric data mining at 80% under
# 200 MB): `schedlab sim` as a whole process under /usr/bin/time -v, printing its peak resident
# set, wall and CPU time, and the messages it delivered. A benchmark to run by hand, not a test.
#
# Usage: crates/sim/bench/memory.sh [WORKLOAD] [TRAFFIC] [PACKETS] [STRATEGIES]
#        (defaults: pfabric-datamining 80 200M FIFO,RR,10,SF,track:1:100, i.e. the issue's run)
# Exit status 1 when the peak exceeds LIMIT_MB (default 200).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
workload=${1:-pfabric-datamining}; traffic=${2:-80}; packets=${3:-200M}; strategies=${4:-FIFO,RR,10,SF,track:1:100}
limit_mb=${LIMIT_MB:-200}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
command -v /usr/bin/time >/dev/null || { echo "memory.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
cargo build --release -q -p schedlab --manifest-path "$top/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$top/target}/release/schedlab"
/usr/bin/time -v -o "$out/time" "$bin" sim --workload "$workload" -t "$traffic" -a "$strategies" --packets "$packets" \
    --threads 1 --quiet >"$out/out"
field() { sed -n "s/^[[:space:]]*$1: //p" "$out/time"; }
kb=$(field 'Maximum resident set size (kbytes)')
# The per-bucket table's "all" row of the first strategy: its message count.
msgs=$(awk -F'\t' '$2 == "all" && $3 == "all" {print $4; exit}' "$out/out")
printf 'schedlab sim --workload %s -t %s -a %s --packets %s --threads 1\n' "$workload" "$traffic" "$strategies" "$packets"
printf 'peak RSS %s kB (%.1f MB); wall %s; user %s s; sys %s s; messages delivered (first strategy) %s\n' \
    "$kb" "$(awk -v k="$kb" 'BEGIN{print k / 1024}')" "$(field 'Elapsed (wall clock) time (h:mm:ss or m:ss)')" \
    "$(field 'User time (seconds)')" "$(field 'System time (seconds)')" "$msgs"
if [ "$kb" -gt $((limit_mb * 1024)) ]; then
    echo "peak RSS above ${limit_mb} MB" >&2
    exit 1
fi
