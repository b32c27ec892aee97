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
