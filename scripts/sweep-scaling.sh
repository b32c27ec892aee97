#!/usr/bin/env bash
# Sweep scaling: cells per second with 1 and 2 local workers, paired and alternating (1,2,1,2,...),
# medians of REPS runs. Usage: scripts/sweep-scaling.sh [REPS] [PACKETS_PER_CELL]
# The spec is the report's grid (10 traffic levels x 13 strategies) x 2 replications = 20 cells.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}; packets=${2:-1M}
bin=${SCHEDLAB_BIN:-target/release/schedlab}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat > "$dir/s.toml" <<SPEC
traffic = [0.01, 1, 20, 50, 70, 80, 90, 95, 97, 98]
packets = "$packets"
replications = 2
SPEC
cells=$("$bin" sweep "$dir/s.toml" --out "$dir/x.csv" --list | wc -l)
declare -a t1 t2
for r in $(seq "$reps"); do
    for j in 1 2; do
        rm -f "$dir/o.csv" "$dir/o.csv.journal"
        s=$(date +%s.%N)
        "$bin" sweep "$dir/s.toml" --out "$dir/o.csv" --jobs "$j" --quiet 2>/dev/null
        e=$(date +%s.%N)
        dt=$(echo "$e - $s" | bc -l)
        if [ "$j" = 1 ]; then t1+=("$dt"); else t2+=("$dt"); fi
        printf 'rep %d, %d worker(s): %.2f s, %.2f cells/s\n' "$r" "$j" "$dt" "$(echo "$cells / $dt" | bc -l)"
    done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
m1=$(median "${t1[@]}"); m2=$(median "${t2[@]}")
printf '%d cells of %s packets; median 1 worker %.2f s (%.2f cells/s), 2 workers %.2f s (%.2f cells/s): speed-up %.2fx (nproc %s, load %s)\n' \
    "$cells" "$packets" "$m1" "$(echo "$cells / $m1" | bc -l)" "$m2" "$(echo "$cells / $m2" | bc -l)" "$(echo "$m1 / $m2" | bc -l)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
