#!/usr/bin/env bash
# Lane-parallel scaling of one traffic level, as whole processes: `schedlab sim --threads N` for
# each N in THREADS, in turn, rep by rep, then the median wall time per N and its speedup over the
# first. Results are identical for every N (checked here too: the tables are compared).
#
# Usage: crates/sim/bench/scaling.sh [THREADS] [TRAFFIC] [PACKETS] [REPS]
#        (defaults: "1 2" 90 100000000 5, i.e. the default `schedlab sim` run)
# Example on a bigger machine: crates/sim/bench/scaling.sh "1 2 4 7 13" 95 20000000 5
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
threads=${1:-1 2}; traffic=${2:-90}; packets=${3:-100000000}; reps=${4:-5}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
command -v /usr/bin/time >/dev/null || { echo "scaling.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
cargo build --release -q -p schedlab --manifest-path "$top/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$top/target}/release/schedlab"
first=""
for i in $(seq "$reps"); do
    for n in $threads; do
        /usr/bin/time -f '%e %U %S' -o "$out/time" "$bin" sim -t "$traffic" --packets "$packets" --threads "$n" --quiet >"$out/out.$n"
        read -r wall user sys <"$out/time"
        echo "$wall $(awk -v u="$user" -v s="$sys" 'BEGIN{print u + s}')" >>"$out/t.$n"
        : "${first:=$n}"
        cmp -s "$out/out.$first" "$out/out.$n" || { echo "output with --threads $n differs from --threads $first" >&2; exit 1; }
    done
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "schedlab sim -t $traffic --packets $packets, $reps alternating reps on $(nproc) CPUs (outputs identical)"
base=$(awk '{print $1}' "$out/t.$first" | median)
for n in $threads; do
    m=$(awk '{print $1}' "$out/t.$n" | median); cm=$(awk '{print $2}' "$out/t.$n" | median)
    printf -- '--threads %-3s wall %s -> median %.2f s (CPU median %.2f s); speedup over %s: %.2fx\n' "$n" \
        "$(awk '{printf "%.2f ", $1}' "$out/t.$n")" "$m" "$cm" "$first" "$(awk -v a="$base" -v b="$m" 'BEGIN{print a / b}')"
done
