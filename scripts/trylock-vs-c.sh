#!/usr/bin/env bash
# `schedlab trylock` side by side with a plain C loop doing the same operations
# (scripts/ref/trylock_ref.c, built here with cc -O2 -fno-plt -falign-loops=64: its header says why), paired and alternating:
#   test A  `trylock -n 1 -t 20` and `-n 2 -t 20`: ns per busy sem_trywait. Judged on the thread
#           CPU time per try (CLOCK_THREAD_CPUTIME_ID), which preemption by other processes does
#           not inflate; the wall-clock figure (the seed's ops/s) is shown too.
#   test B  `trylock -n 2 -F -t 10`: average busy-try cost (t_busy), free-try cost (t_free) and
#           unlock cost (t_post), each sample timed with clock_gettime as in the C loop.
# Each round runs C and schedlab back to back, C first in odd rounds and schedlab first in even
# ones; the verdict uses the median over rounds of the per-round ratio schedlab/C, which must lie
# within TOL percent of 1. The spread of each tool over rounds (relative IQR, min-max) is printed
# next to it, so the run-to-run variance of the two can be compared.
# Diagnostic rows (not judged) show what the causes of the old gap cost: schedlab with
# `--dispatch trait-object` (one indirect call per try, test A) and with `--handover` (a shared
# word written at every acquisition, test B).
#
# Usage: scripts/trylock-vs-c.sh   (environment: ROUNDS=7 TOL=5 A_MILLIONS=20 B_MILLIONS=10
#        DIAG=1 SCHEDLAB=path CC=cc). Both programs pin worker i to the i-th allowed CPU.
# Exit status: 0 all judged figures agree, 1 a disagreement, 2 setup error.
# The machine may be shared: read medians, never single runs, and say how loaded it was.
set -euo pipefail

ROUNDS=${ROUNDS:-7}
TOL=${TOL:-5}
A_MILLIONS=${A_MILLIONS:-20}
B_MILLIONS=${B_MILLIONS:-10}
DIAG=${DIAG:-1}
CC=${CC:-cc}

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SCHEDLAB:-}" ]]; then
    (cd "$root" && cargo build --release -q -p schedlab)
    SCHEDLAB="${CARGO_TARGET_DIR:-$root/target}/release/schedlab"
fi
[[ -x "$SCHEDLAB" ]] || { echo "error: $SCHEDLAB is not an executable schedlab" >&2; exit 2; }
command -v python3 >/dev/null || { echo "error: python3 is needed to read the results" >&2; exit 2; }
command -v "$CC" >/dev/null || { echo "error: a C compiler ($CC) is needed for the reference" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$CC" -O2 -fno-plt -falign-loops=64 -pthread -o "$work/trylock_ref" "$root/scripts/ref/trylock_ref.c"
REF="$work/trylock_ref"

echo "# trylock vs plain C: $(date -u +%FT%TZ), $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $ROUNDS paired rounds, order alternating; tolerance ${TOL}%; schedlab $SCHEDLAB"

# run_pair ROUND NAME C_ARGS -- SCHEDLAB_ARGS: one paired measurement, order by round parity.
run_pair() {
    local r=$1 name=$2; shift 2
    local cargs=() sargs=()
    while [[ $1 != -- ]]; do cargs+=("$1"); shift; done; shift
    sargs=("$@")
    c() { "$REF" "${cargs[@]}" 2>/dev/null | tail -n 1 >"$work/${name}_c_$r.txt"; }
    s() { "$SCHEDLAB" trylock "${sargs[@]}" --json "$work/${name}_s_$r.json" >/dev/null; }
    if (( r % 2 )); then c; s; else s; c; fi
}

for r in $(seq 1 "$ROUNDS"); do
    run_pair "$r" a1 -n 1 -t "$A_MILLIONS" -- -n 1 -t "$A_MILLIONS"
    run_pair "$r" a2 -n 2 -t "$A_MILLIONS" -- -n 2 -t "$A_MILLIONS"
    run_pair "$r" b -n 2 -F -t "$B_MILLIONS" -- -n 2 -F -t "$B_MILLIONS"
    if [[ $DIAG == 1 ]]; then
        run_pair "$r" a1dyn -n 1 -t "$A_MILLIONS" -- -n 1 -t "$A_MILLIONS" --dispatch trait-object
        run_pair "$r" bho -n 2 -F -t "$B_MILLIONS" -- -n 2 -F -t "$B_MILLIONS" --handover
    fi
done

python3 - "$work" "$ROUNDS" "$TOL" "$DIAG" <<'PY'
import json, statistics, sys
work, rounds, tol, diag = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
med = statistics.median

def c_fig(name, r):
    kv = dict(x.split("=", 1) for x in open(f"{work}/{name}_c_{r}.txt").read().split()[1:])
    return {k: float(v) for k, v in kv.items() if k not in ("test",)}

def s_fig(name, r):
    run = json.load(open(f"{work}/{name}_s_{r}.json"))["run"]
    w = run["workers"]
    n = len(w)
    tot = lambda k: sum(x[k] for x in w)
    wavg = lambda cnt, avg: (sum(x[avg] * x[cnt] for x in w) / tot(cnt)) if tot(cnt) else 0.0
    rate = tot("rate_ops_per_s")
    return {
        "cpu_ns_per_try": sum(x["busy_ns_per_try_cpu"] for x in w) / n,
        "per_thread_ns_per_try": 1e9 / (rate / n) if rate else 0.0,
        "busy_avg_ns": wavg("busy_samples", "busy_avg_ns"),
        "free_avg_ns": wavg("free_samples", "free_avg_ns"),
        "post_avg_ns": wavg("post_samples", "post_avg_ns"),
    }

def spread(v):
    if len(v) < 2:
        return "n/a"
    q = statistics.quantiles(v, n=4)
    return f"IQR {100 * (q[2] - q[0]) / med(v):4.1f}%, {min(v):7.2f}..{max(v):7.2f}"

ok = True
def row(label, name, key, judged=True, vs=None):
    global ok
    cs = [c_fig(vs or name, r)[key] for r in range(1, rounds + 1)]
    ss = [s_fig(name, r)[key] for r in range(1, rounds + 1)]
    ratios = [s / c for s, c in zip(ss, cs) if c > 0]
    ratio = med(ratios)
    good = abs(ratio - 1) * 100 <= tol
    verdict = ("AGREE" if good else "DISAGREE") if judged else "diagnostic"
    if judged:
        ok &= good
    print(f"{label:44} C {med(cs):7.2f} ns ({spread(cs)})  schedlab {med(ss):7.2f} ns ({spread(ss)})  ratio {ratio:5.3f} -> {verdict}")

print("# figure                                        medians over rounds (spread: relative IQR, min..max)")
row("A -n 1: ns per try (CPU time)", "a1", "cpu_ns_per_try")
row("A -n 1: ns per try (wall clock, seed's ops/s)", "a1", "per_thread_ns_per_try", judged=False)
row("A -n 2: ns per try per thread (CPU time)", "a2", "cpu_ns_per_try")
row("A -n 2: ns per try per thread (wall clock)", "a2", "per_thread_ns_per_try", judged=False)
row("B -n 2 -F: t_busy (average busy try)", "b", "busy_avg_ns")
row("B -n 2 -F: t_free (average free try)", "b", "free_avg_ns")
row("B -n 2 -F: t_post (average unlock)", "b", "post_avg_ns")
if diag:
    print("# causes of the old gap (schedlab with the old behaviour switched back on, vs the same C):")
    row("A -n 1 --dispatch trait-object (CPU time)", "a1dyn", "cpu_ns_per_try", judged=False)
    row("B --handover: t_busy", "bho", "busy_avg_ns", judged=False)
    row("B --handover: t_free", "bho", "free_avg_ns", judged=False)
print(f"trylock vs C: {'all judged figures agree' if ok else 'DISAGREEMENT'} within {tol:.0f}% (load average now: {open('/proc/loadavg').read().split()[0]})")
sys.exit(0 if ok else 1)
PY
