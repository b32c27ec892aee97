#!/usr/bin/env bash
# The paper check: reproduces the report's four raw-data tables (§15: 0.01%, 1%, 50%, 95% load)
# at the report's own packet counts (353 M packets at 95%) and compares every one of the 368
# cells with the report's number within Z = 5.5 combined standard errors (Student's t with 19 df:
# at most a 0.97% chance, over all cells, that a correct simulator fails; see
# crates/sim/tests/paper.rs). About two minutes on one core of a 2026 laptop-class CPU; bounded
# by a timeout (default 1800 s, SCHEDLAB_PAPER_TIMEOUT to change).
#
# Usage: scripts/paper-check.sh [LOG]
# Prints each table's packet count, seed and worst cell (as a fraction of its tolerance), and
# exits 0 when every cell matches, non-zero otherwise (the failing cells are listed). LOG
# (default target/paper-check.log) keeps the full output.
set -euo pipefail
cd "$(dirname "$0")/.."
log=${1:-target/paper-check.log}
mkdir -p "$(dirname "$log")"
limit=${SCHEDLAB_PAPER_TIMEOUT:-1800}
echo "== paper check: $(date -u +%FT%TZ) on $(uname -srm), $(nproc) cpus, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
cargo build --release -q -p schedlab-sim --tests
t0=$(date +%s)
rc=0
timeout "$limit" cargo test --release -q -p schedlab-sim --test paper -- --ignored --exact \
    full_reproduction_at_the_reports_packet_counts --nocapture >"$log" 2>&1 || rc=$?
grep -E '^traffic [0-9.]+%:|cells off|^test result' "$log" || true
echo "== paper check: $(( $(date +%s) - t0 )) s, exit $rc$([ "$rc" -eq 124 ] && echo " (timed out after $limit s)"); full output in $log"
exit "$rc"
