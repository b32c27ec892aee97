"""The Ray backend: each sweep cell is one Ray task calling the same Rust entry point as the local
backend (``schedlab._native.run_cells`` on one cell), so results are identical for the same seeds.

Every node of the cluster needs this package installed in the Python environment the workers use
(install it the same way on each machine, or ship it with a ``runtime_env``).
"""

from __future__ import annotations

from typing import Optional, Sequence

from schedlab import _native


def _run_one(job: str) -> dict:
    """One cell on one worker core; returns the cell's rows as column lists."""
    return _native.run_cells([job], 1)


def run(cells: Sequence[str], *, address: Optional[str] = None) -> dict[str, list]:
    """Runs ``cells`` (JSON from a :class:`schedlab.Spec`) as Ray tasks, one per cell, and returns
    the rows in cell order as column lists (``schedlab.sweep`` makes the DataFrame, so this module
    imports nothing of the package but the native entry point). Joins ``address`` (default: the
    running cluster, ``"auto"``) unless ``ray.init`` was already called."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address or "auto", log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=2)(_run_one)
    refs = [remote.remote(c) for c in cells]
    try:
        parts = ray.get(refs)
    except KeyboardInterrupt:
        for r in refs:
            ray.cancel(r, force=True)
        raise
    cols: dict[str, list] = {name: [] for name, _ in _native.columns()}
    for p in parts:
        for k, v in p.items():
            cols[k].extend(v)
    return cols
