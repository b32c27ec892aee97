#!/bin/sh
# Runs inside the QEMU guest (crates/cli/tests/rdma_verbs.rs boots it): schedlab rdma --backend
# verbs over Soft-RoCE (rdma_rxe) for the seed's command lines, perftest beside it, and two
# concurrent flows shaped by a tbf on a veth (verbs, then the emulated backend over the same path).
# Usage: sh rdma-verbs.sh SCHEDLAB OUTDIR [PHASES [OPS_N [PERF_PAIRS [PERF_BW_N [PERF_LAT_N]]]]]
#   PHASES: any of "ops perf share", space-separated (default all); OPS_N messages per seed command
#   line (default 40); PERF_PAIRS paired perftest trials (default 5) of PERF_BW_N x 64 KiB (default
#   30) and PERF_LAT_N x 64 B (default 100).
# Every result goes to OUTDIR (shared with the host); the host judges them. One line per step goes
# to OUTDIR/steps.txt: "NAME rc=N" for every command run, so a missing file is explained.
B=$1
D=$2
PHASES=${3:-"ops perf share"}
OPS_N=${4:-40}
PERF_PAIRS=${5:-5}
PERF_BW_N=${6:-30}
PERF_LAT_N=${7:-100}
cd "$D" || exit 90
A=198.18.0.1
Z=198.18.0.2
step() { echo "$1 rc=$2" >>steps.txt; }

# Waits (polling, at most 60 s) until something listens on TCP port $1: the server's observable
# readiness (perftest buffers its banner when writing to a file, so the banner cannot be used).
wait_listen() {
    i=0
    until ss -Hltn "sport = :$1" | grep -q .; do
        i=$((i + 1))
        [ "$i" -gt 1200 ] && return 1
        sleep 0.05
    done
}

modprobe rdma_rxe
step modprobe $?
ip link add veth0 type veth peer name veth1 && ip link set veth0 up && ip link set veth1 up
step veth $?
ip addr add $A/32 dev veth0 && ip addr add $Z/32 dev veth1
step addr $?
rdma link add rxe0 type rxe netdev veth0
step rxe0 $?
rdma link add rxe1 type rxe netdev veth1
step rxe1 $?
ibv_devinfo -d rxe0 >devinfo.txt 2>&1
step devinfo $?

# RoCE between two local addresses would go over lo (and past any qdisc): route A<->Z over the
# veth pair instead (REFERENCE.md: /32 addresses, static neighbours, accept_local, rp_filter off,
# rules for traffic from lo ahead of the local table). Everything sent to Z leaves from A over veth0,
# sockets that bind no source address included (the emulated backend's TCP, the control links).
M0=$(cat /sys/class/net/veth0/address)
M1=$(cat /sys/class/net/veth1/address)
for k in all.rp_filter veth0.rp_filter veth1.rp_filter; do sysctl -qw net.ipv4.conf.$k=0; done
for k in all.accept_local veth0.accept_local veth1.accept_local; do sysctl -qw net.ipv4.conf.$k=1; done
ip neigh replace $Z lladdr "$M1" dev veth0 nud permanent &&
    ip neigh replace $A lladdr "$M0" dev veth1 nud permanent &&
    ip route add $Z dev veth0 src $A table 100 &&
    ip route add $A dev veth1 src $Z table 101 &&
    ip rule add pref 10 iif lo to $Z lookup 100 &&
    ip rule add pref 11 iif lo to $A lookup 101 &&
    ip rule add pref 100 lookup local &&
    ip rule del pref 0 lookup local
step routing $?

# One server/client pair of schedlab rdma: NAME PORT BACKEND-ARGS -- FLOW-ARGS (server on rxe1 at
# Z, client on rxe0 from A: every message crosses veth0 -> veth1).
pair() {
    name=$1
    port=$2
    shift 2
    timeout 150 "$B" rdma -d rxe1 -x 1 --bind $Z -p "$port" --timeout 60 "$@" >"$name.srv.out" 2>"$name.srv.err" &
    sp=$!
    if ! wait_listen "$port"; then
        step "$name.listen" 1
        kill $sp
        wait $sp
        return
    fi
    timeout 150 "$B" rdma $Z -d rxe0 -x 1 -p "$port" --timeout 60 -o "$name.o.txt" --json "$name.json" "$@" \
        >"$name.cli.out" 2>"$name.cli.err"
    step "$name.cli" $?
    wait $sp
    step "$name.srv" $?
}

case " $PHASES " in *" ops "*)
    # The seed's command lines (scaled down to OPS_N messages, default 40): every -O, busy and
    # event polling.
    N=$OPS_N
    for op in 0 1 2 3; do
        pair "op$op-busy" 18515 -F -s 65536 -n "$N" -O $op
        pair "op$op-event" 18515 -F -e -s 65536 -n "$N" -O $op
    done
    # SEND with a receive pipeline shorter than the run (the re-posting path), small messages.
    pair "op3-depth4" 18515 -F -s 4096 -n 300 -O 3 -t 4
    ;;
esac

case " $PHASES " in *" perf "*)
    # Paired trials (PERF_PAIRS of them): in pair i, schedlab's WRITE (one request in
    # flight, as the seed) and ib_write_bw -t 1 with the same bytes and iterations back to back, the
    # order swapped every pair (perftest first in odd pairs); then schedlab's 64-byte WRITE latency
    # and ib_write_lat the same way. The host takes the median of the paired ratios with its
    # distribution-free interval, and perftest's own swing from its trials. Trials are short (the
    # kernel stage has a budget): PERF_BW_N x 64 KiB, PERF_LAT_N x 64 B.
    pf() { # NAME PORT TOOL ARGS...
        n=$1
        port=$2
        shift 2
        timeout 150 "$@" -d rxe1 -x 1 -p "$port" >"$n.srv" 2>&1 &
        sp=$!
        wait_listen "$port" || step "$n.listen" 1
        timeout 150 "$@" -d rxe0 -x 1 -p "$port" $Z >"$n.cli" 2>&1
        step "$n.cli" $?
        wait $sp
        step "$n.srv" $?
    }
    K=$PERF_PAIRS
    NB=$PERF_BW_N
    NL=$PERF_LAT_N
    echo "$K $NB $NL" >perf-plan.txt
    # (not i: wait_listen counts with i)
    k=1
    while [ "$k" -le "$K" ]; do
        pp=$((18530 + 2 * k))
        if [ $((k % 2)) -eq 1 ]; then
            pf "pf-bw-$k" "$pp" ib_write_bw -s 65536 -n "$NB" -t 1 --report_gbits
            pair "perf-bw-$k" 18515 -F -s 65536 -n "$NB" -O 0
            pf "pf-lat-$k" $((pp + 1)) ib_write_lat -s 64 -n "$NL"
            pair "perf-lat-$k" 18515 -F -s 64 -n "$NL" -O 0
        else
            pair "perf-bw-$k" 18515 -F -s 65536 -n "$NB" -O 0
            pf "pf-bw-$k" "$pp" ib_write_bw -s 65536 -n "$NB" -t 1 --report_gbits
            pair "perf-lat-$k" 18515 -F -s 64 -n "$NL" -O 0
            pf "pf-lat-$k" $((pp + 1)) ib_write_lat -s 64 -n "$NL"
        fi
        k=$((k + 1))
    done
    ;;
esac

case " $PHASES " in *" share "*)
    # Two concurrent WRITE flows of different sizes (256 KiB and 16 KiB) through a 10 Mb/s tbf on veth0 (the link sets the
    # share), on verbs and then on the emulated backend over the same shaped path.
    tc qdisc replace dev veth0 root tbf rate 10mbit burst 16k latency 1s
    step tbf $?
    for be in verbs emulated; do
        extra=""
        [ $be = emulated ] && extra="--backend emulated"
        timeout 150 "$B" rdma -d rxe1 -x 1 --bind $Z -p 18520 --timeout 60 $extra -F -s 262144 -n 20 -O 0 \
            >"share-$be-A.srv.out" 2>&1 &
        sa=$!
        timeout 150 "$B" rdma -d rxe1 -x 1 --bind $Z -p 18521 --timeout 60 $extra -F -s 16384 -n 320 -O 0 \
            >"share-$be-B.srv.out" 2>&1 &
        sb=$!
        wait_listen 18520 && wait_listen 18521
        step "share-$be.listen" $?
        timeout 150 "$B" rdma $Z -d rxe0 -x 1 -p 18520 --timeout 60 $extra -F -s 262144 -n 20 -O 0 \
            -o "share-$be-A.o.txt" >"share-$be-A.cli.out" 2>&1 &
        ca=$!
        timeout 150 "$B" rdma $Z -d rxe0 -x 1 -p 18521 --timeout 60 $extra -F -s 16384 -n 320 -O 0 \
            -o "share-$be-B.o.txt" >"share-$be-B.cli.out" 2>&1
        step "share-$be-B.cli" $?
        wait $ca
        step "share-$be-A.cli" $?
        wait $sa
        wait $sb
        "$B" rdma share "share-$be-A.o.txt" "share-$be-B.o.txt" --json "share-$be.json" >"share-$be.txt" 2>&1
        step "share-$be.analysis" $?
    done
    tc -s qdisc show dev veth0 >tbf-stats.txt 2>&1
    ;;
esac
echo done >>steps.txt
