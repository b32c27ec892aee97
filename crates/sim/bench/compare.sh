#!/usr/bin/env bash
# Same-run speed comparison of whole processes on one CPU: `schedlab sim --threads 1` against
# port.c (this directory's fast C port of the report's model) and, when given, another C port
# such as the tuned one in ../shared/bench (TUNED_C=path/to/alphasim_tuned.c; it is found there by
# default when present).
#
# Usage: crates/sim/bench/compare.sh [TRAFFIC] [PACKETS] [REPS]   (defaults: 95 20000000 5)
#        CPU=1 crates/sim/bench/compare.sh ...                   (the CPU to pin to; default the last)
#
# All programs are pinned to the same CPU and run in turn, rep by rep (port, tuned, schedlab,
# port, ...), so a noisy neighbour hurts each alike. Each program's rate is its own simulated
# arrival packets divided by the whole process's wall time (and, separately, by its CPU time,
# user + system, which is robust to time spent waiting for a busy CPU); medians and ratios are
# printed. The tuned port stops at the first report time after PACKETS, so it simulates a few
# percent more packets: rates, not times, are compared.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
traffic=${1:-95}; packets=${2:-20000000}; reps=${3:-5}
cpu=${CPU:-$(( $(nproc) - 1 ))}
tuned_c=${TUNED_C:-$top/../shared/bench/alphasim_tuned.c}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
command -v /usr/bin/time >/dev/null || { echo "compare.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

# Programs go to $out/bin, per-program results to $out/res.NAME (results appended to the programs
# themselves were what made every C median -nan).
mkdir "$out/bin"
gcc -O2 -march=native -o "$out/bin/port" "$here/port.c" -lm
have_tuned=0
if [[ -f "$tuned_c" ]]; then
    gcc -O2 -march=native -o "$out/bin/tuned" "$tuned_c" -lm
    have_tuned=1
fi
cargo build --release -q -p schedlab --manifest-path "$top/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$top/target}/release/schedlab"

# run NAME CMD...: runs CMD pinned, appends "packets wall cpu" to $out/res.NAME.
run() {
    local name=$1; shift
    /usr/bin/time -f '%e %U %S' -o "$out/time" taskset -c "$cpu" "$@" >"$out/stdout" 2>"$out/stderr"
    local pk
    case $name in
    port) pk=$(awk '{print $2}' "$out/stdout") ;;
    tuned) pk=$(awk '$1 == "FIN" {print $9; exit}' "$out/stdout") ;;
    schedlab) pk=$(sed -n 's/.*packets = \([0-9,]*\)\..*/\1/p' "$out/stdout" | head -1 | tr -d ,) ;;
    esac
    read -r wall user sys <"$out/time"
    [[ -n $pk && $pk -gt 0 ]] || { echo "compare.sh: no packet count in the output of $name" >&2; exit 1; }
    echo "$pk $wall $(awk -v u="$user" -v s="$sys" 'BEGIN{print u + s}')" >>"$out/res.$name"
}

for i in $(seq "$reps"); do
    run port "$out/bin/port" -t "$traffic" -s "$i" -P "$packets"
    if [[ $have_tuned == 1 ]]; then run tuned "$out/bin/tuned" -t "$traffic" -s "$i" -k 100000 -P "$packets"; fi
    run schedlab "$bin" sim -t "$traffic" --packets "$packets" --seed "$i" --threads 1 --quiet
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# rate NAME COL: median of packets / column COL (2 = wall, 3 = CPU).
rate() { awk -v c="$2" '{print $1 / $c}' "$out/res.$1" | median; }
names=(port); [[ $have_tuned == 1 ]] && names+=(tuned); names+=(schedlab)
echo "traffic ${traffic}%, ${packets} arrival packets, ${reps} alternating reps, whole processes pinned to CPU ${cpu}"
declare -A w c
for n in "${names[@]}"; do
    w[$n]=$(rate "$n" 2); c[$n]=$(rate "$n" 3)
    printf '%-9s wall rates (M/s): %s -> median %.2f; per CPU-second median %.2f\n' "$n" \
        "$(awk '{printf "%.2f ", $1 / $2 / 1e6}' "$out/res.$n")" "$(awk -v x="${w[$n]}" 'BEGIN{print x / 1e6}')" \
        "$(awk -v x="${c[$n]}" 'BEGIN{print x / 1e6}')"
done
for n in "${names[@]}"; do
    [[ $n == schedlab ]] && continue
    printf 'ratio schedlab / %s: %.2f wall, %.2f CPU\n' "$n" \
        "$(awk -v a="${w[schedlab]}" -v b="${w[$n]}" 'BEGIN{print a / b}')" "$(awk -v a="${c[schedlab]}" -v b="${c[$n]}" 'BEGIN{print a / b}')"
done
# The reference is the fastest C port of this run (per CPU-second): the issue's yardstick is a
# port at least as fast as the tuned one.
ref=port
if [[ $have_tuned == 1 ]] && awk -v a="${c[tuned]}" -v b="${c[port]}" 'BEGIN{exit !(a > b)}'; then ref=tuned; fi
printf 'reference (fastest C port this run, per CPU-second): %s; schedlab / reference: %.2f wall, %.2f CPU\n' "$ref" \
    "$(awk -v a="${w[schedlab]}" -v b="${w[$ref]}" 'BEGIN{print a / b}')" "$(awk -v a="${c[schedlab]}" -v b="${c[$ref]}" 'BEGIN{print a / b}')"
if [[ $have_tuned == 1 ]]; then
    printf 'ratio port / tuned: %.2f wall, %.2f CPU (port.c must be at least as fast as the tuned port)\n' \
        "$(awk -v a="${w[port]}" -v b="${w[tuned]}" 'BEGIN{print a / b}')" "$(awk -v a="${c[port]}" -v b="${c[tuned]}" 'BEGIN{print a / b}')"
fi
