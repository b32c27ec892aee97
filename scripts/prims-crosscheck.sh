#!/usr/bin/env bash
# Cross-checks of `schedlab semtest` and `schedlab trylock` against independent measurements,
# taken in the same run of this script:
#  1. semtest one-way, both threads of each pair on one core, against rt-tests `ptsematest -a -t`
#     (Debian package rt-tests): the medians (over rounds and pairs) of the mean one-way latency
#     must agree within TOL percent.
#  2. trylock test B (-F, two threads passing the token freely) against the strict two-thread
#     ping-pong of the same primitive (--pingpong), run back to back in each round: the median
#     over rounds of the ratio of their busy-try p50s, and of their handed-over free-try p50s,
#     must be within TOL percent of 1. The free figure is judged for the locks whose failed try
#     only reads the lock word (sem: the seed's primitive, ttas); for the others it is shown.
#
# Usage: scripts/prims-crosscheck.sh            (defaults below; environment overrides)
#   ROUNDS=5 LOOPS=2000 INTERVAL_US=1000 TOL=25 LOCKS="sem ttas" INFO_LOCKS="mutex spinlock futex tas ticket"
#   SCHEDLAB=path/to/schedlab (default: build it with cargo), NO_INSTALL=1 (never apt-get)
# Exit status: 0 all agree (or a part was skipped, with SKIP printed), 1 a disagreement.
# Figures are medians because the machine is shared and noisy; do not read single runs.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
LOOPS=${LOOPS:-2000}
INTERVAL_US=${INTERVAL_US:-1000}
TOL=${TOL:-25}
LOCKS=${LOCKS:-"sem ttas"}
INFO_LOCKS=${INFO_LOCKS:-"mutex spinlock futex tas ticket"}
TRY_MILLIONS=${TRY_MILLIONS:-0.5}
PP_MILLIONS=${PP_MILLIONS:-0.02}

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SCHEDLAB:-}" ]]; then
    (cd "$root" && cargo build --release -q -p schedlab)
    SCHEDLAB="${CARGO_TARGET_DIR:-$root/target}/release/schedlab"
fi
[[ -x "$SCHEDLAB" ]] || { echo "error: $SCHEDLAB is not an executable schedlab" >&2; exit 2; }
command -v python3 >/dev/null || { echo "error: python3 is needed to read the JSON results" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ncpu=$(nproc)
status=0

echo "# prims cross-check: $(date -u +%FT%TZ), $ncpu CPUs, $(uname -r), rounds $ROUNDS, tolerance ${TOL}%"

# ---------------------------------------------------------------- 1. semtest vs ptsematest
if ! command -v ptsematest >/dev/null; then
    if [[ "${NO_INSTALL:-0}" != 1 && $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "# installing rt-tests (ptsematest)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q rt-tests >/dev/null 2>&1 || true
    fi
fi
if ! command -v ptsematest >/dev/null; then
    echo "SKIP: ptsematest not found (Debian package rt-tests; install it, or run as root without NO_INSTALL=1)"
else
    echo "# 1. one-way wake-up, both threads of a pair on one core, $ncpu pairs, $LOOPS loops, ${INTERVAL_US} us interval"
    for r in $(seq 1 "$ROUNDS"); do
        # Same run, back to back, so both see the same machine load.
        ptsematest -a -t -l "$LOOPS" -i "$INTERVAL_US" -d 0 -q --json="$work/pt_$r.json" >/dev/null
        "$SCHEDLAB" semtest --mode one-way --placement same-core -n "$ncpu" -i "$LOOPS" \
            --interval "$INTERVAL_US" --warmup 0 --primitive sem --json "$work/st_$r.json" >/dev/null
    done
    python3 - "$work" "$ROUNDS" "$TOL" <<'PY' || status=1
import json, statistics, sys
work, rounds, tol = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
pt_avg, pt_min, st_avg, st_p50, st_min = [], [], [], [], []
for r in range(1, rounds + 1):
    pt = json.load(open(f"{work}/pt_{r}.json"))
    for t in pt["thread"].values():
        pt_avg.append(t["receiver"]["avg"]); pt_min.append(t["receiver"]["min"])
    st = json.load(open(f"{work}/st_{r}.json"))
    for p in st["run"]["pairs"]:
        st_avg.append(p["lat_us"]["mean"]); st_p50.append(p["lat_us"]["p50"]); st_min.append(p["lat_us"]["min"])
    cpus = {(p["marco_cpu_at_end"], p["polo_cpu_at_end"]) for p in st["run"]["pairs"]}
    assert all(a == b for a, b in cpus), f"semtest pairs were not on one core: {cpus}"
m = statistics.median
a, b = m(pt_avg), m(st_avg)
diff = abs(b - a) / a * 100
print(f"ptsematest  mean one-way: median {a:.2f} us (min of mins {min(pt_min)} us, integer us)")
print(f"semtest     mean one-way: median {b:.2f} us (p50 median {m(st_p50):.2f} us, min of mins {min(st_min):.2f} us)")
ok = diff <= tol
print(f"{'AGREE' if ok else 'DISAGREE'}: semtest/ptsematest = {b / a:.3f} ({diff:.1f}% apart, tolerance {tol:.0f}%)")
sys.exit(0 if ok else 1)
PY
fi

# ---------------------------------------------------------------- 2. trylock -F vs ping-pong
# Each round runs test B and the ping-pong back to back and compares them (the ratio of their
# p50s); the verdict uses the median ratio over rounds, so slow drifts of the shared machine
# (where the host puts the two vCPUs) hit both sides of a ratio alike.
echo "# 2. trylock test B (-F -n 2, pinned) vs strict ping-pong (--pingpong), same lock, $ROUNDS paired rounds"
compare_locks() { # $1 = judge|info, then lock names
    local mode=$1; shift
    for lock in "$@"; do
        for r in $(seq 1 "$ROUNDS"); do
            "$SCHEDLAB" trylock -F -n 2 -t "$TRY_MILLIONS" --lock "$lock" --ring 0 --handover --json "$work/b_${lock}_$r.json" >/dev/null
            "$SCHEDLAB" trylock --pingpong -t "$PP_MILLIONS" --lock "$lock" --ring 0 --json "$work/pp_${lock}_$r.json" >/dev/null
        done
        python3 - "$work" "$ROUNDS" "$TOL" "$lock" "$mode" <<'PY' || status=1
import json, statistics, sys
work, rounds, tol, lock, mode = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
load = lambda kind, r: json.load(open(f"{work}/{kind}_{lock}_{r}.json"))
clock = load("b", 1)["clock"]["read_cost_p50_ns"]
ok = True
for field, name in [("busy_ns", "busy try"), ("free_handover_ns", "free try after the other's unlock")]:
    bs, ps, ratios = [], [], []
    for r in range(1, rounds + 1):
        b, p = load("b", r)["run"]["all"][field], load("pp", r)["run"]["all"][field]
        if b["count"] < 100 or p["count"] < 100:
            continue  # too few samples of this kind in this round (one thread kept the token)
        bs.append(b["p50"]); ps.append(p["p50"]); ratios.append(b["p50"] / p["p50"])
    if not ratios:
        print(f"{lock:8} {name:34} SKIP: fewer than 100 samples in every round")
        continue
    m = statistics.median
    ratio = m(ratios)
    good = abs(ratio - 1) * 100 <= tol
    judged = mode == "judge" or field == "busy_ns"
    verdict = ("AGREE" if good else "DISAGREE") if judged else "INFO"
    ok &= good or not judged
    print(f"{lock:8} {name:34} p50: test B {m(bs):5.0f} ns, ping-pong {m(ps):5.0f} ns, B/PP {ratio:.2f} over {len(ratios)} rounds -> {verdict} (samples include a {clock} ns clock read)")
sys.exit(0 if ok else 1)
PY
    done
}
compare_locks judge $LOCKS
# Locks whose failed try is (or may be, inside glibc) an atomic write: in the ping-pong the
# waiter keeps trying for the whole hold and can pull the line away from the holder, which test
# B's short holds rarely do, so their free-after-unlock figure is shown but not judged
# (in some runs here futex and tas gave 0.6x while sem stayed at 1.0x; in others all were ~1x,
# the two vCPUs being placed differently by the host); busy tries are judged for every lock.
echo "# free-after-unlock not judged (a failed try may write the line): $INFO_LOCKS"
compare_locks info $INFO_LOCKS

if [[ $status == 0 ]]; then echo "cross-check: all figures agree within ${TOL}%"; else echo "cross-check: DISAGREEMENT (see above)"; fi
exit $status
