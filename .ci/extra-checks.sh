#!/usr/bin/env bash
# Build checks beyond the README's test command (each command's own line; fail loudly).
set -euo pipefail
# No circle of imports between files, and crates import only what their floor allows
# (docs/guide/architecture.md); the self-test proves the check finds planted circles.
python3 scripts/import-circles.py --self-test
python3 scripts/import-circles.py
# sim peers benchmark: its agreement check and theory on fixed numbers (stdlib only: no pip, no ns-3).
python3 crates/sim/bench/peers.py --self-test
# schedlab rdma: the real RDMA backend (libibverbs via sideway) must compile, and without an RDMA
# device it must exit non-zero with a one-line explanation (skipped with a note if a device exists).
cargo build --release -p schedlab --features rdma-verbs
if ls /sys/class/infiniband/* >/dev/null 2>&1; then
    echo "rdma: an RDMA device exists here; the no-device check does not apply"
else
    rdma_err=$("${CARGO_TARGET_DIR:-target}"/release/schedlab rdma -F -e -s 4096 -n 10 -O 0 -p 0 2>&1 >/dev/null) && { echo "rdma verbs backend did not fail without a device"; exit 1; }
    echo "rdma no-device check: $rdma_err"
    [ "$(printf '%s\n' "$rdma_err" | wc -l)" -eq 1 ] || { echo "rdma: expected one line of explanation"; exit 1; }
fi
# sched: model-check the SPSC ring's Release/Acquire protocol with loom (about a minute to build).
cargo test --release -p schedlab-sched --features loom --lib ring
