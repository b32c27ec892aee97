"""schedlab from Python: simulations and sweeps as polars DataFrames, locally or on a Ray cluster.

>>> import schedlab
>>> df = schedlab.simulate(traffic=[50, 95], strategies=["RR", "FIFO", 10, "SF"], packets=1_000_000)
>>> df.filter(df["len_pkts"] == 0).select("traffic_pct", "strategy", "mean_lat_tu")

Every function returns the tidy table of ``schedlab sweep``: one row per (cell, strategy, message
length), units in column names (``_tu`` = time units, the mean packet service time; ``_pkts`` =
packets), ``len_pkts == 0`` for all messages together. The simulation runs in Rust on every core
without holding the GIL; Ctrl-C stops it and raises ``KeyboardInterrupt``.

Readers turn the other commands' files into DataFrames: :func:`read_sched_json`,
:func:`read_timestamps`, :func:`read_semtest_json`, :func:`read_trylock_json`,
:func:`read_notify_json`, :func:`read_burst_json`, :func:`read_echo_bench_json`,
:func:`read_rdma_share_json`, :func:`read_predict_json`, :func:`read_table` for sweep outputs (CSV or
Parquet) and :func:`read_sweep_jsonl` for sweep rows as JSON lines. Kinds with a committed JSON
Schema are validated first (:func:`validate`); :func:`read_result` reads any of them by its
``schema`` tag.
"""

from __future__ import annotations

from schedlab._native import version as _version
from schedlab.readers import (
    read_burst_json,
    read_echo_bench_json,
    read_notify_json,
    read_predict_json,
    read_rdma_share_json,
    read_result,
    read_sched_json,
    read_semtest_json,
    read_sweep_jsonl,
    read_table,
    read_timestamps,
    read_trylock_json,
    validate,
)
from schedlab.sweep import Spec, columns, load_spec, simulate, sweep

__version__: str = _version()

__all__ = [
    "Spec",
    "columns",
    "load_spec",
    "simulate",
    "sweep",
    "read_table",
    "read_sched_json",
    "read_timestamps",
    "read_semtest_json",
    "read_trylock_json",
    "read_notify_json",
    "read_burst_json",
    "read_result",
    "read_echo_bench_json",
    "read_rdma_share_json",
    "read_predict_json",
    "read_sweep_jsonl",
    "validate",
    "__version__",
]
