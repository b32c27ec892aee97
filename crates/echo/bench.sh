#!/usr/bin/env bash
# Benchmark figures for the closing note of issue 5 (docs: README "schedlab echo / burst / hist /
# echo-bench"): the whole matrix (5 modes x 1B/4K/64K/1M x busy poll off/on) on loopback with both
# sides pinned to CPU 0 (the reference's "both processes on one CPU"), then unpinned, then (as root)
# across two network namespaces; each run includes sockperf TCP ping-pong (--full-rtt) in the same
# session, pinned like the client and server.
# Usage: crates/echo/bench.sh [OUTDIR] [ROUNDS]      (about 1-2 minutes per run on 2 CPUs)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-echo-bench-results}
rounds=${2:-2000}
bin=${CARGO_TARGET_DIR:-target}/release/schedlab
[ -x "$bin" ] || cargo build --release -p schedlab
"$bin" echo-bench --rounds "$rounds" --server-cpu 0 --client-cpu 0 --out "$out/same-cpu"
"$bin" echo-bench --rounds "$rounds" --out "$out/unpinned"
if [ "$(id -u)" -eq 0 ]; then
    "$bin" echo-bench --rounds "$rounds" --netns --out "$out/netns"
else
    echo "skipping the --netns run: it needs root" >&2
fi
