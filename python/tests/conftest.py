"""Shared fixtures: the repository root and the `schedlab` binary (for cross-checks and readers)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def schedlab_bin() -> str:
    """The CLI: $SCHEDLAB_BIN, the repository's target/release/schedlab, or one on PATH."""
    for cand in (os.environ.get("SCHEDLAB_BIN"), str(ROOT / "target" / "release" / "schedlab"), shutil.which("schedlab")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    pytest.skip("SKIP: no schedlab binary (build it with `cargo build --release -p schedlab` or set SCHEDLAB_BIN)")


def _record_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    """A skip is recorded as the Rust tests record theirs (crates/report/src/testkit.rs): one
    `SKIP<TAB>test<TAB>reason` line appended to $SCHEDLAB_SKIP_LOG, which .ci/run counts and names
    in its summary, so a skip is never read as a pass."""
    log = os.environ.get("SCHEDLAB_SKIP_LOG")
    if not log or not report.skipped:
        return
    reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ").removeprefix("SKIP: ").replace("\n", " ").replace("\t", " ")
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"SKIP\tpython::{report.nodeid}\t{reason}\n")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test that skipped while it ran (or in its fixtures)."""
    _record_skip(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A whole module skipped while it was collected (`pytest.importorskip` at module level, e.g.
    test_ray.py without Ray): its tests never reach pytest_runtest_logreport."""
    _record_skip(report)
