#!/usr/bin/env bash
# CI stage: ThreadSanitizer over the sched ring's tests and the prims crate (locks, notifiers,
# semaphore tests). Needs nightly with rust-src (-Zbuild-std instruments std too). Exit 0 on
# success, 1 on a report; prints "SKIP: <reason>" and exits 3 when the toolchain cannot do it.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-unknown-linux-gnu
[ "$(uname -m)" = x86_64 ] || { echo "SKIP: ThreadSanitizer stage written for $target, this is $(uname -m)"; exit 3; }
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "SKIP: no nightly toolchain (rustup toolchain install nightly)"; exit 3
fi
if ! rustup +nightly component list --installed 2>/dev/null | grep -q '^rust-src'; then
    rustup +nightly component add rust-src || { echo "SKIP: cannot install rust-src (needed by -Zbuild-std)"; exit 3; }
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/tsan"
export RUSTFLAGS="-Zsanitizer=thread"
export RUSTDOCFLAGS="-Zsanitizer=thread"
# halt_on_error: the first race fails the stage with its report.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
tsan() { cargo +nightly test -Zbuild-std --target "$target" "$@"; }
# The build (std and every dependency instrumented) is bounded separately: too slow a machine is a
# visible SKIP; a test that then hangs is a failure.
build_limit="${TSAN_BUILD_TIMEOUT:-900}"
rc=0
# (The same package selections as the runs below, so that nothing is rebuilt there.)
timeout "$build_limit" bash -c "$(declare -f tsan); target=$target; tsan -p schedlab-sched --lib --no-run && tsan -p schedlab-prims --lib --tests --no-run" || rc=$?
if [ "$rc" -eq 124 ]; then
    echo "SKIP: the ThreadSanitizer build did not finish in ${build_limit} s on $(nproc) cpus (TSAN_BUILD_TIMEOUT; a rerun resumes it)"; exit 3
elif [ "$rc" -ne 0 ]; then
    exit "$rc"
fi
timeout "${TSAN_TIMEOUT:-600}" bash -c "$(declare -f tsan); target=$target; tsan -p schedlab-sched --lib ring:: && tsan -p schedlab-prims --lib --tests"
