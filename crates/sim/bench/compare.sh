#!/usr/bin/env bash
# Same-run speed comparison: `schedlab bench` against a direct C port of the report's listing.
# Usage: crates/sim/bench/compare.sh [TRAFFIC] [PACKETS] [REPS]   (defaults: 95 20000000 5)
# Both are pinned to the same CPU and alternate, so a noisy neighbour hurts both alike; the
# medians and their ratio are printed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
traffic=${1:-95}; packets=${2:-20000000}; reps=${3:-5}
cpu=$(( $(nproc) - 1 ))
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
gcc -O2 -march=native -o "$out/listing" "$here/listing.c" -lm
cargo build --release -q -p schedlab --manifest-path "$top/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$top/target}/release/schedlab"
c=(); r=()
for i in $(seq "$reps"); do
    c+=("$(taskset -c "$cpu" "$out/listing" "$traffic" "$packets" | awk '{print $3}')")
    taskset -c "$cpu" "$bin" bench -t "$traffic" --packets "$packets" --repeat 1 --cpu "$cpu" --json "$out/r.json" >/dev/null
    r+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["median_rate_pps"])' "$out/r.json")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mc=$(median "${c[@]}"); mr=$(median "${r[@]}")
echo "traffic ${traffic}%, ${packets} arrival packets, ${reps} alternating reps on CPU ${cpu}"
echo "C port of the listing: ${c[*]} -> median $(awk -v x="$mc" 'BEGIN{printf "%.2f", x/1e6}') M/s"
echo "schedlab bench:        ${r[*]} -> median $(awk -v x="$mr" 'BEGIN{printf "%.2f", x/1e6}') M/s"
echo "ratio schedlab / C port: $(awk -v a="$mr" -v b="$mc" 'BEGIN{printf "%.2f", a/b}')"
