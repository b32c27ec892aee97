#!/usr/bin/env bash
# schedlab sched against the original PSPAT sched, same run, alternating, medians.
#
# Usage:
#   scripts/sched-crosscheck.sh --orig DIR [--runs N] [--secs S] [--sched-cpu C] [--out FILE] [--only drain]
#       The issue-14 table: five cases (and a sixth, the schedulers' drain rate with full rings:
#       bursts of 32 requested at 100 Tb/s into rings of 4096, an unlimited link; --only drain
#       runs that row alone), each measured as N pairs (default 9) of short trials, one of
#       each program back to back, the order swapped every pair (original first, then schedlab
#       first, ...), so that the machine's swings land on both sides. Per case it prints the
#       median Mpps of both, the median over the pairs of the PAIRED ratio schedlab/original with
#       its distribution-free confidence interval (order statistics of the paired ratios; 9 pairs:
#       the 2nd and 8th, 96%), a verdict (faster / slower / no difference: the interval above,
#       below or around 1.0), the machine's own swing (each program's spread over its trials, and
#       the original against itself: the ratio of its two neighbouring trials, same interval),
#       and every trial. Two runs of the script agree when their intervals overlap. DIR is a folder holding the original's sources (such as
#       /work/shared/anchors/sched16); it is copied to a temporary folder OUTSIDE the repository
#       and built there (BUILD.md's command), never into the tree.
#   scripts/sched-crosscheck.sh --table [--clients N] [--runs R] [--secs S] [--orig DIR]
#       The seed's experiment table (columns A-G, clients 1..N, aggregate Mpps, medians of R runs)
#       printed as the seed prints it; with --orig also the original's table and the ratios.
#
# Environment: SCHEDLAB=path/to/schedlab (default: builds target/release/schedlab with cargo).
# Everything is printed on stdout; progress goes to stderr (silence it with 2>/dev/null), so the
# integrator can re-run it quietly: scripts/sched-crosscheck.sh --orig DIR 2>/dev/null.
# Both programs poll with the same intervals: the original reads -i/-c in nanoseconds, schedlab
# reads bare numbers in microseconds (as the seed's README says), so schedlab gets "ns" suffixes.
#
# Placement (the same for both programs, printed in the output's header and checked per case):
# the scheduler runs on CPU --sched-cpu (-a, default 1). The original pins client i to core
# {0,4,1,5,2,6}[i % 6]; its main() first pins *itself* to each client's core in turn, so a core
# that does not exist (4 on a 2-CPU machine) leaves that client on the last core that did (its
# threads inherit main()'s mask). On 2 CPUs: 1 client on CPU 0; 2 clients both on CPU 0, sharing
# it, with the scheduler alone on CPU 1. schedlab gets exactly those CPUs with --client-cpus, and
# each case's first trial prints where both programs' clients went (the original's "thread cli-NN
# on core" / "Unable to set affinity" lines; schedlab's per-client "cpu C, pinned to P" lines).
set -euo pipefail

ORIG=""
RUNS=9
SECS=1
SCHED_CPU=1
TABLE=0
CLIENTS=""
OUT=""
ONLY=""
while [ $# -gt 0 ]; do
    case "$1" in
        --orig) ORIG="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --secs) SECS="$2"; shift 2 ;;
        --sched-cpu) SCHED_CPU="$2"; shift 2 ;;
        --table) TABLE=1; shift ;;
        --clients) CLIENTS="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --only) ONLY="$2"; shift 2 ;;
        -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
        *) echo "sched-crosscheck: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$ONLY" in ''|drain) ;; *) echo "sched-crosscheck: --only takes 'drain'" >&2; exit 2 ;; esac
case "$RUNS" in ''|*[!0-9]*|0) echo "sched-crosscheck: --runs needs a positive integer" >&2; exit 2 ;; esac
if [ "$TABLE" = 0 ] && [ -z "$ORIG" ]; then
    echo "sched-crosscheck: give --orig DIR (the original's sources, e.g. /work/shared/anchors/sched16), or --table" >&2
    exit 2
fi
[ -n "$OUT" ] && exec > >(tee "$OUT")
NCPU=$(nproc)
[ -z "$CLIENTS" ] && CLIENTS=$NCPU
if [ "$SCHED_CPU" -ge "$NCPU" ]; then SCHED_CPU=$((NCPU - 1)); fi

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sched-crosscheck.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
log() { echo "sched-crosscheck: $*" >&2; }

if [ -z "${SCHEDLAB:-}" ]; then
    log "building schedlab (cargo build --release -p schedlab)"
    (cd "$REPO" && cargo build --release -p schedlab >&2)
    SCHEDLAB="$REPO/target/release/schedlab"
fi
[ -x "$SCHEDLAB" ] || { echo "sched-crosscheck: $SCHEDLAB is not executable" >&2; exit 1; }

ORIG_BIN=""
if [ -n "$ORIG" ]; then
    [ -f "$ORIG/main.c" ] || { echo "sched-crosscheck: $ORIG does not look like the original's sources (no main.c)" >&2; exit 1; }
    log "building the original from $ORIG in $WORK/orig (outside the repository)"
    mkdir -p "$WORK/orig"
    cp -r "$ORIG"/. "$WORK/orig/"
    (cd "$WORK/orig" && make sched CFLAGS="-O3 -pipe -g -fcommon -DNO_NETMAP -I. -Wno-deprecated-declarations" \
        LDLIBS="-lpthread -lrt" >&2)
    ORIG_BIN="$WORK/orig/sched"
fi
cd "$WORK"

# mpps_orig ARGS...: the original's TOTAL line "... %.3e pkts %.3e pps" -> Mpps (its whole
# output is kept in $WORK/orig.out for the placement lines).
mpps_orig() {
    "$ORIG_BIN" "$@" > "$WORK/orig.out" 2>&1 || true
    awk '/TOTAL:/ { for (i = 1; i < NF; i++) if ($(i+1) == "pps") v = $i } END { if (v == "") print "nan"; else printf "%.3f\n", v / 1e6 }' "$WORK/orig.out"
}
# mpps_ours ARGS...: schedlab's TOTAL line "... X.XXX Mpps ..." -> Mpps (output in $WORK/ours.out).
mpps_ours() {
    "$SCHEDLAB" sched "$@" > "$WORK/ours.out" 2>&1 || true
    awk '/^TOTAL:/ { for (i = 1; i < NF; i++) if ($(i+1) == "Mpps") v = $i } END { if (v == "") print "nan"; else print v }' "$WORK/ours.out"
}
# offered_orig / offered_ours: the last trial's offered load in Mpps, i.e. what entered the
# clients' rings plus what the full rings dropped, over the same time as the program's own Mpps.
# The original's TOTAL counts the packets its clients put into their rings (n_cli_put) over the
# scheduler's run time; each client's run_one line adds "... D drop/s" (ring-full drops over the
# program's duration). schedlab's TOTAL gives the packets transmitted and the drops.
offered_orig() {
    awk -v secs="$SECS" '/drop\/s/ { for (i = 2; i <= NF; i++) if ($i == "drop/s") d += $(i-1) * secs }
        /TOTAL:/ { for (i = 1; i < NF; i++) { if ($(i+1) == "pkts") p = $i; if ($(i+1) == "pps") r = $i } }
        END { if (p + 0 > 0) printf "%.3f\n", r * (p + d) / p / 1e6; else print "nan" }' "$WORK/orig.out"
}
offered_ours() {
    awk '/^TOTAL:/ { for (i = 1; i < NF; i++) { if ($(i+1) == "pkts") p = $i; if ($(i+1) == "Mpps") m = $i; if ($(i+1) == "drops") d = $i } }
        END { if (p + 0 > 0) printf "%.3f\n", m * (p + d) / p; else print "nan" }' "$WORK/ours.out"
}
# orig_client_cpus T: the CPUs the original's T clients end up on (see the header), comma-separated.
orig_client_cpus() {
    local t=$1 i c last=0 out="" cores=(0 4 1 5 2 6)
    for ((i = 0; i < t; i++)); do
        c=${cores[i % 6]}
        if [ "$c" -lt "$NCPU" ]; then last=$c; fi
    done
    for ((i = 0; i < t; i++)); do
        c=${cores[i % 6]}
        if [ "$c" -ge "$NCPU" ]; then c=$last; fi
        out="$out${out:+,}$c"
    done
    echo "$out"
}
# client_cpus_arg T: schedlab's --client-cpus for that placement (client i -> LIST[i % len], so
# one CPU for all when they all share it; the list itself when it has no repeats).
client_cpus_arg() {
    local list uniq
    list=$(orig_client_cpus "$1")
    uniq=$(echo "$list" | tr ',' '\n' | sort -un | paste -sd, -)
    if [ "$(echo "$uniq" | tr ',' '\n' | wc -l)" = 1 ]; then
        echo "$uniq"
    elif [ "$(echo "$list" | tr ',' '\n' | sort -n | uniq -d)" = "" ]; then
        echo "$list"
    else
        log "warning: the original's placement $list has repeats schedlab's --client-cpus cannot express; using $uniq"
        echo "$uniq"
    fi
}
# placement LABEL: where the last trial's clients went, for both programs, as one comment line.
placement() {
    local o s k
    o=$(grep -Eo 'thread (cli-[0-9]+|sched) on core [0-9]+|Unable to set affinity for cli-[0-9]+ on [0-9]+' "$WORK/orig.out" 2>/dev/null \
        | sed -e 's/Unable to set affinity for \(cli-[0-9]*\) on \([0-9]*\)/\1 core \2 refused/' -e 's/thread \([a-z0-9-]*\) on core/\1 core/' \
        | awk '{ l[NR] = $0; if ($0 ~ / refused$/) r[substr($0, 1, length($0) - 8)] = 1 }
               END { for (i = 1; i <= NR; i++) if (!(l[i] in r) && !seen[l[i]]++) print l[i] }' | paste -sd',' - || true)
    s=$(grep -Eo '^client +[0-9]+:.*\((cpu [0-9]+[^)]*)\)' "$WORK/ours.out" 2>/dev/null \
        | sed -e 's/^client *\([0-9]*\):.*(\(cpu [^)]*\))/client \1: \2/' | paste -sd';' - || true)
    k=$(grep -Eo '^scheduler: ran on cpu [0-9]+ \(allowed [^)]*\)' "$WORK/ours.out" 2>/dev/null | sed 's/^scheduler: ran on/scheduler/' || true)
    echo "# placement, $1: original (its log; a refused core leaves the client where main() was): ${o:-?} | schedlab: ${k:-?}; ${s:-?}"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a != "nan") printf "%.2f", a / b; else print "n/a" }'; }

# req_mpps CLIENTS BPS LEN: the load the traffic lines request, in Mpps (every client sends BPS in LEN-byte packets).
req_mpps() { awk -v n="$1" -v b="$2" -v l="$3" 'BEGIN { printf "%.3f", n * b / (8 * l) / 1e6 }'; }
# program FILE CLIENTS RATE LEN BURST: one spec for every client (`thread 0 *`: both accept it).
program() { printf 'thread 0 *\n%ss %s %s %s\n' "$SECS" "$3" "$4" "$5" > "$1"; }

# pair LABEL CLIENTS "ORIG ARGS" "OURS ARGS" [REQUESTED_MPPS]: RUNS alternating trials, one result
# row (and one row of the offered-load table: REQUESTED_MPPS is what the traffic lines ask).
pair() {
    local label="$1" o_args="$3" s_args="$4" req="${5:-}" o="" s="" oo="" so="" r mo ms moo mso
    for r in $(seq 1 "$RUNS"); do
        log "$label: pair $r/$RUNS"
        if [ $((r % 2)) = 0 ]; then
            # shellcheck disable=SC2086
            s="$s $(mpps_ours $s_args)"
            so="$so $(offered_ours)"
        fi
        if [ -n "$ORIG_BIN" ]; then
            # shellcheck disable=SC2086
            o="$o $(mpps_orig $o_args)"
            oo="$oo $(offered_orig)"
        fi
        if [ $((r % 2)) = 1 ]; then
            # shellcheck disable=SC2086
            s="$s $(mpps_ours $s_args)"
            so="$so $(offered_ours)"
        fi
    done
    ms=$(echo "$s" | median)
    mso=$(echo "$so" | median)
    if [ -n "$ORIG_BIN" ]; then
        mo=$(echo "$o" | median)
        moo=$(echo "$oo" | median)
        local st
        st=$(paired_stats "$o" "$s")
        IFS='|' read -r st_ratio st_verdict st_raw st_swing <<< "$st"
        # The same pairs compared like with like: each trial's delivered share of what its own
        # client offered, schedlab's over the original's (unrounded median and interval).
        local sh_raw sh
        sh_raw=$(paired_stats "$(shares "$o" "$oo")" "$(shares "$s" "$so")" | cut -d'|' -f3)
        sh=$(echo "$sh_raw" | awk 'NF == 3 { printf "%.3f [%.3f-%.3f]", $1, $2, $3; next } { print "n/a" }')
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$mo" "$ms" "$st_ratio" "$st_verdict" "${o# }" "${s# }"
        SWINGS="$SWINGS$(printf '| %s | %s |' "$label" "$st_swing")"$'\n'
        VERDICTS="$VERDICTS$label|$st_raw|$mo|$req|$ms|$moo|$mso|$sh"$'\n'
        OFFERED="$OFFERED$(printf '| %s | %s | %s | %s | %s | %s | %s |' "$label" "${req:-?}" "$moo" "$mso" \
            "$(awk -v a="$mo" -v b="$moo" 'BEGIN { if (b + 0 > 0) printf "%.1f%%", 100 * a / b; else print "n/a" }')" \
            "$(awk -v a="$ms" -v b="$mso" 'BEGIN { if (b + 0 > 0) printf "%.1f%%", 100 * a / b; else print "n/a" }')" \
            "$(awk -v b="$mso" -v d="$moo" -v q="$req" -v sh="$sh" 'BEGIN {
                if (q + 0 > 0 && (b < 0.99 * q || d < 0.99 * q)) print "n/a (a client side below the requested load)"
                else print sh }')")"$'\n'
    else
        printf '| %s | %s | %s |\n' "$label" "$ms" "${s# }"
    fi
    PLACEMENTS="$PLACEMENTS$(placement "$label")"$'\n'
}
PLACEMENTS=""
OFFERED=""
SWINGS=""
VERDICTS=""

# shares "DELIVERED TRIALS" "OFFERED TRIALS": each trial's delivered / offered (nan when unknown).
shares() {
    awk -v d="$1" -v f="$2" 'BEGIN { n = split(d, a, " "); split(f, b, " ")
        for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " " : ""), (b[i] + 0 > 0 && a[i] != "nan" ? a[i] / b[i] : "nan") }'
}

# paired_stats "ORIG TRIALS" "OURS TRIALS": trial i of one program is paired with trial i of the
# other (run back to back). Prints three fields separated by '|': the median paired ratio with its
# interval, the verdict, and the machine's swing (see the header).
paired_stats() {
    python3 - "$1" "$2" <<'EOF'
import math, statistics, sys
o = [float(x) for x in sys.argv[1].split()]
s = [float(x) for x in sys.argv[2].split()]
pairs = [(a, b) for a, b in zip(o, s) if a > 0 and b > 0 and not (math.isnan(a) or math.isnan(b))]

def median_ci(v):
    # Distribution-free interval of a median: order statistics k and n+1-k, the largest k with
    # at most 5% in each tail (Binomial(n, 1/2)); returns (lo, hi, coverage) or None.
    v, n, k = sorted(v), len(v), 0
    while k + 1 <= n // 2 and sum(math.comb(n, j) for j in range(k + 1)) / 2 ** n <= 0.05:
        k += 1
    if k == 0:
        return None
    return v[k - 1], v[n - k], 1 - 2 * sum(math.comb(n, j) for j in range(k)) / 2 ** n

def fmt(v, ci):
    return f"{statistics.median(v):.2f} [{ci[0]:.2f}-{ci[1]:.2f}]" if ci else f"{statistics.median(v):.2f} [n/a: too few pairs]"

if not pairs:
    print("n/a|n/a (no complete pair)|n/a|n/a")
    sys.exit()
r = [b / a for a, b in pairs]
ci = median_ci(r)
if ci is None:
    verdict = "n/a (at least 5 pairs give an interval)"
elif ci[0] > 1:
    verdict = f"schedlab faster ({100 * ci[2]:.0f}% interval above 1)"
elif ci[1] < 1:
    verdict = f"schedlab SLOWER ({100 * ci[2]:.0f}% interval below 1)"
else:
    verdict = f"no difference shown ({100 * ci[2]:.0f}% interval around 1)"
# The machine's swing: each program's spread (max / min of its trials) and the original against
# itself (neighbouring trials, the same interval): what a ratio of a program to itself looks like.
oo = [a for a, _ in pairs]
ss = [b for _, b in pairs]
aa = [oo[i + 1] / oo[i] for i in range(len(oo) - 1)]
aaci = median_ci(aa)
swing = (f"{min(oo):.2f}-{max(oo):.2f} ({max(oo) / min(oo):.2f}x) | {min(ss):.2f}-{max(ss):.2f} ({max(ss) / min(ss):.2f}x) | "
         + (fmt(aa, aaci) if aa else "n/a"))
# The unrounded median and interval, for the bar (a rounded 0.998 must not read as 1.00).
raw = f"{statistics.median(r)!r} {ci[0]!r} {ci[1]!r}" if ci else "n/a"
print(f"{fmt(r, ci)}|{verdict}|{raw}|{swing}")
EOF
}

echo "# schedlab sched vs the original sched, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $NCPU CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# schedlab: $SCHEDLAB ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')); original: ${ORIG:-not given}"
echo "# scheduler on CPU $SCHED_CPU (-a), ${SECS} s programs, $RUNS pairs of trials per case (one of each program back to back,"
echo "#   the order swapped every pair); medians; ratio = median of the paired ratios schedlab/original [its interval]"
echo "# clients, both programs: 1 client on CPU $(orig_client_cpus 1); 2 clients on CPUs $(orig_client_cpus 2) (the original's"
echo "#   {0,4,1,5,2,6}[i % 6] on $NCPU CPUs; schedlab --client-cpus $(client_cpus_arg 2) for 2 clients)"

if [ "$TABLE" = 0 ]; then
    A="-a $SCHED_CPU"
    program p60.txt 1 200G 60 1
    program pA.txt 1 200G 1500 1
    echo
    if [ -n "$ORIG_BIN" ]; then
        echo "| case | original Mpps | schedlab Mpps | paired ratio [CI] | verdict | original trials | schedlab trials |"
        echo "|---|---|---|---|---|---|---|"
    else
        echo "| case | schedlab Mpps | schedlab trials |"
        echo "|---|---|---|"
    fi
    if [ "$ONLY" != drain ]; then
        for t in 1 2; do
            pair "$t client(s), rr, 60 B, -b 200G -q 512 -i 0 -c 0" "$t" \
                "$A -t $t -f p60.txt -b 200G -q 512 -i 0 -c 0 -- -flowsets 1:1500:$t -alg rr" \
                "$A --client-cpus $(client_cpus_arg "$t") -t $t -f p60.txt -b 200G -q 512 -i 0 -c 0 --no-timestamps -- -flowsets 1:1500:$t -alg rr" \
                "$(req_mpps "$t" 200e9 60)"
        done
        for t in 1 2; do
            pair "seed A (1s 200G 1500 1, -b 500G -q 500 -i 5 ns), $t client(s)" "$t" \
                "$A -t $t -f pA.txt -b 500G -q 500 -i 5 -- -flowsets 1:1500:$t -alg rr" \
                "$A --client-cpus $(client_cpus_arg "$t") -t $t -f pA.txt -b 500G -q 500 -i 5ns -c 5us --no-timestamps -- -flowsets 1:1500:$t -alg rr" \
                "$(req_mpps "$t" 200e9 1500)"
        done
        pair "-D, 2 clients, as row 2" 2 \
            "$A -t 2 -D -f p60.txt -b 200G -q 512 -i 0 -c 0 -- -flowsets 1:1500:2 -alg rr" \
            "$A --client-cpus $(client_cpus_arg 2) -t 2 -D -f p60.txt -b 200G -q 512 -i 0 -c 0 --no-timestamps -- -flowsets 1:1500:2 -alg rr" \
            "$(req_mpps 2 200e9 60)"
    fi
    # Not one of issue 14's rows: the scheduler's drain rate (PSPAT's headline figure). The row
    # must offer more than either scheduler can move, so that each program's ring stays full and
    # what it delivers is its scheduler's rate, not its client's and not the requested rate (the
    # row used until 2026-11-28, bursts of 4 at 400 Gb/s = 33.3 Mpps, could not tell: the
    # original already delivered 25-32.6 of the 33.3 Mpps requested). So:
    # - the client asks for 100 Tb/s (8333 Mpps): its bursts are due back to back, both clients
    #   push as fast as they can, and what does not fit in the full ring is dropped (counted by
    #   both: the original's "drop/s", schedlab's ring-full drops), both only while the ring is full;
    # - the link is never the limit: schedlab runs without -b (an unlimited link); the original
    #   has no unlimited link (its default is 1 Gb/s), but at -b 100000G its per-packet link cost,
    #   1500 x 8 x TSC_Hz / 1e14 ticks, is below 1 tick for any TSC under 8 GHz and its pkt_tsc()
    #   truncates it to 0: the same unlimited link;
    # - a ring of 4096 (-q; the clients poll their marks every 5 us, the original's default -c and
    #   schedlab's -c 5us), so that a scheduler under 800 Mpps is never starved between polls;
    # - -i 0 (passes back to back in both), the queue limit at both programs' default (20 packets
    #   for one flow), -alg rr, schedlab without timestamps (the original writes none).
    # - bursts of 32: with bursts of 4 (the row until the evening of 2026-11-28) the original's
    #   client, which polls its marks after every burst, offered only 19-33 Mpps, so its ring
    #   often did not overflow (offered / delivered 1.0-1.2x on a quiet machine) and the row timed
    #   its client, not its scheduler. Alone, 3 trials per burst size (Mpps delivered, +drops
    #   M/s): 4: 31.4(+0.1) 31.0(+0.5); 8: 28.8(+8) 35.4(+3) 34.6(+7); 16: 34.9(+30) 36.7(+12)
    #   37.3(+2); 32: 34.7(+20) 38.6(+14) 37.1(+27); 64: 31.7(+85) 38.1(+31) 24.3(+78); 128 to
    #   512: 23.4-38.8. From 16 on its scheduler reaches its ceiling (~38 Mpps here); 32 is the
    #   smallest burst whose rings overflowed in every trial, and larger bursts add dips, so the
    #   row takes the original at its strongest. docs/notes/2026-11-28-drain-burst.md.
    # Both count the same thing: packets that went through the scheduler per second (the
    # original's TOTAL counts the packets put into the ring, all of which its client waits to see
    # marked before it exits; schedlab's counts the packets its client saw released). The
    # offered-load table shows both rings dropping (offered far above delivered); the bar line
    # checks that (the row can be a drain rate only while both offered at least 1.5x what they
    # delivered: necessary, not sufficient -- on a loaded machine a client descheduled for
    # milliseconds still overflows its ring while its scheduler idles) and still prints the
    # requested ceiling.
    program pdrain.txt 1 100000G 1500 32
    pair "scheduler drain (1s 100000G 1500 32, -q 4096, unlimited link, -i 0), 1 client" 1 \
        "$A -t 1 -f pdrain.txt -b 100000G -q 4096 -i 0 -- -flowsets 1:1500:1 -alg rr" \
        "$A --client-cpus $(client_cpus_arg 1) -t 1 -f pdrain.txt -q 4096 -i 0 -c 5us --no-timestamps -- -flowsets 1:1500:1 -alg rr" \
        "$(req_mpps 1 100000e9 1500)"
    if [ -n "$OFFERED" ]; then
        echo
        echo "Offered load (what entered the clients' rings plus what the full rings dropped, Mpps, medians) and the"
        echo "share of it delivered. The original paces a burst every floor(burst time x TSC Hz) ticks, so it offers up"
        echo "to one tick per burst more than the traffic line asks (e.g. with a 2.445 GHz TSC seed A's 60 ns burst is"
        echo "146.7 ticks, paced as 146: 16.75 instead of 16.67 Mpps); schedlab paces in picoseconds. The last column"
        echo "compares like with like where both programs' clients keep up with the requested load (else it is n/a:"
        echo "the offered load is then each client's own speed, part of what the first table measures)."
        echo
        echo "| case | requested Mpps | original offered | schedlab offered | original delivered | schedlab delivered | delivered shares, schedlab / original [interval] |"
        echo "|---|---|---|---|---|---|---|"
        printf '%s' "$OFFERED"
    fi
    if [ -n "$SWINGS" ]; then
        echo
        echo "The machine's own swing per case: each program's range over its trials (max/min), and the original"
        echo "against itself (the ratio of each of its trials to the one before; median [interval]): a paired ratio"
        echo "whose interval is no wider than that one's measured as well as this machine allows."
        echo
        echo "| case | original range | schedlab range | original / original before [CI] |"
        echo "|---|---|---|---|"
        printf '%s' "$SWINGS"
        echo
        # The issue-38 bar: the drain row at >= 1.5x with its interval's low end above 1.3; every
        # other row's interval reaching 1.0.
        printf '%s' "$VERDICTS" | python3 -c '
import sys
def f(x):
    try:
        return float(x)
    except ValueError:
        return float("nan")
ok = True
for line in sys.stdin:
    label, ratio, orig, req, ours, orig_off, ours_off, share = line.rstrip("\n").split("|")
    try:
        med, lo, hi = map(float, ratio.split())
    except ValueError:
        print(f"bar: {label}: no interval"); ok = False; continue
    if label.startswith("scheduler drain"):
        good, want = med >= 1.5 and lo > 1.3, ">= 1.5x with the interval above 1.3"
        # The row measures the schedulers only while both rings overflow: each program offered
        # (pushed + dropped at its full ring) at least 1.5x what it delivered.
        shares = [(name, f(off) / f(dl) if f(dl) > 0 else float("nan")) for name, off, dl in
                  (("original", orig_off, orig), ("schedlab", ours_off, ours))]
        bound = all(r >= 1.5 for _, r in shares)
        want += "; offered / delivered: " + ", ".join(f"{n} {r:.1f}x" for n, r in shares)
        want += (" (both rings overflowed, as a drain row needs; it does not show the schedulers were busy: on a loaded machine "
                  "a starved client still overflows its ring while its scheduler idles -- see the idle passes schedlab prints)" if bound
                 else " -- NOT a drain rate: a client did not overflow its ring")
        good &= bound
        # No scheduler delivers more than its client offers: the requested load over the
        # median of the original is the highest ratio the row can show in this run.
        ceiling = f(req) / f(orig) if f(orig) > 0 else float("nan")
        if ceiling == ceiling:
            want += (f"; the ceiling of this row in this run: {f(req):.2f} Mpps requested / {f(orig):.2f} Mpps "
                     f"(the median of the original) = {ceiling:.2f}x" + (", so 1.5x is out of reach" if ceiling < 1.5 else ""))
    else:
        good, want = hi >= 1.0, "an interval reaching 1.0"
        # The original'"'"'s client paces each burst by a whole number of TSC ticks, truncated
        # (run_one: burst_clocks = burst_sec * ticks_per_second): with 1500 B at 200 Gb/s on a
        # 2.6 GHz TSC calibrated a hair low, 155 ticks instead of 155.99, 0.65% fast. A tie at
        # the request then reads as schedlab slower by about that much.
        over = f(orig_off) / f(req) - 1 if f(req) > 0 else float("nan")
        if over > 0.001:
            want += (f" (note: the original'"'"'s client offered {100 * over:.2f}% more than the requested "
                     f"{f(req):.3f} Mpps: it truncates each burst'"'"'s interval to whole TSC ticks; "
                     f"schedlab offered {f(ours_off):.3f}; delivered shares of what each offered, paired: {share})")
    print(f"bar: {label}: {med:.3f} [{lo:.3f}-{hi:.3f}]", "meets" if good else "MISSES", want)
    ok &= good
print("bar: every row meets it" if ok else "bar: NOT met")
'
    fi
    echo
    printf '%s' "$PLACEMENTS"
    exit 0
fi

# The seed's experiment table: columns A-G (rate, packet length, burst, queue, -i in ns).
COLS="A:200G:1500:1:500:5 B:200G:1500:10:500:5 C:200G:1500:50:500:5 D:200G:1500:200:500:5 E:200G:1500:1000:500:5 F:500G:1500:100:14000:20 G:500G:1500:1000:14000:20"
echo "# columns: A-E = 200G, 1500, burst 1/10/50/200/1000, -b 500G -q 500 -i 5 ns -alg rr;"
echo "#          F/G = 500G, 1500, burst 100/1000, -b 500G -q 14000 -i 20 ns -alg rr"
declare -A OURS ORIGS
for n in $(seq 1 "$CLIENTS"); do
    for col in $COLS; do
        IFS=: read -r name rate len burst q i <<< "$col"
        program "p$name.txt" "$n" "$rate" "$len" "$burst"
        o="" s=""
        for r in $(seq 1 "$RUNS"); do
            log "column $name, $n client(s): trial $r/$RUNS"
            if [ -n "$ORIG_BIN" ]; then
                o="$o $(mpps_orig -a "$SCHED_CPU" -t "$n" -f "p$name.txt" -b 500G -q "$q" -i "$i" -- -flowsets "1:1500:$n" -alg rr)"
            fi
            s="$s $(mpps_ours -a "$SCHED_CPU" --client-cpus "$(client_cpus_arg "$n")" -t "$n" -f "p$name.txt" -b 500G -q "$q" -i "${i}ns" -c 5us --no-timestamps -- -flowsets "1:1500:$n" -alg rr)"
        done
        OURS[$n$name]=$(echo "$s" | median)
        [ -n "$ORIG_BIN" ] && ORIGS[$n$name]=$(echo "$o" | median)
    done
done
print_table() {
    local title="$1" n col name
    echo
    echo "$title"
    printf 'Clients\t\taggregate Mpps\n\n\t\tA\tB\tC\tD\tE\tF\tG\n'
    for n in $(seq 1 "$CLIENTS"); do
        printf '%s\t' "$n"
        for col in $COLS; do
            name=${col%%:*}
            printf '\t%s' "$(eval "echo \${$2[$n$name]}")"
        done
        printf '\n'
    done
}
print_table "schedlab sched" OURS
if [ -n "$ORIG_BIN" ]; then
    print_table "original sched" ORIGS
    echo
    echo "ratio schedlab / original"
    printf 'Clients\t\tA\tB\tC\tD\tE\tF\tG\n'
    for n in $(seq 1 "$CLIENTS"); do
        printf '%s\t' "$n"
        for col in $COLS; do
            name=${col%%:*}
            printf '\t%s' "$(ratio "${OURS[$n$name]}" "${ORIGS[$n$name]}")"
        done
        printf '\n'
    done
fi
