"""Sweeps and single simulations, with a local backend (Rust threads) and a Ray backend.

Both backends call the same Rust entry point for each cell (``schedlab_sweep::run_cell``, also
behind ``schedlab sweep``), so for the same spec and seeds they return equal tables.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence, Union

import polars as pl

from schedlab import _native

Lengths = Union[str, Sequence[Sequence[float]], Mapping[str, Union[str, Sequence[Sequence[float]]]]]
"""A length distribution: ``"report"`` (built in), a path to a ``LOW HIGH PERCENT`` file, a list
of ``(low, high, percent)`` ranges, or a dict naming several of those (each a value of the axis)."""

_KINDS = {"str": pl.Utf8, "int": pl.Int64, "int?": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}


def columns() -> list[tuple[str, str]]:
    """The sweep table's columns as ``(name, kind)``; kind is ``str``, ``int``, ``int?`` (an integer
    or null: ``workload_bytes_per_pkt``), ``float`` or ``bool``."""
    return list(_native.columns())


def _schema() -> dict[str, Any]:
    return {name: _KINDS[kind] for name, kind in columns()}


def _frame(cols: Mapping[str, list]) -> pl.DataFrame:
    """A DataFrame with the table's column order and types (an empty one if there are no rows)."""
    return pl.DataFrame({name: cols.get(name, []) for name, _ in columns()}, schema=_schema())


@dataclass(frozen=True)
class Spec:
    """A validated sweep spec: its name, fingerprint and cells (self-contained JSON, one per cell)."""

    name: str
    sweep_id: str
    cells: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.cells)

    def shard(self, index: int, count: int) -> "Spec":
        """The ``index``-th (1-based) of ``count`` disjoint slices, as ``schedlab sweep --shard``."""
        if not 1 <= index <= count:
            raise ValueError(f"shard {index}/{count}: need 1 <= index <= count")
        cells = tuple(c for c in self.cells if json.loads(c)["cell"] % count == index - 1)
        return Spec(self.name, self.sweep_id, cells)


def load_spec(spec: Union[str, os.PathLike[str]], *, text: Optional[str] = None) -> Spec:
    """Reads and validates a sweep spec (a TOML file, see ``sweeps/report.toml``).

    ``spec`` is a path; with ``text``, the TOML is taken from ``text`` and ``spec`` only names it
    in messages and locates relative distribution files. Raises ``ValueError`` naming the key.
    """
    path = Path(spec)
    if text is None:
        text = path.read_text()
        base = path.parent
    else:
        base = path.parent if path.suffix else path
    name, sweep_id, cells = _native.parse_spec(text, str(spec), str(base or "."))
    return Spec(name, sweep_id, tuple(cells))


def _toml(v: Any) -> str:
    """A TOML value for the few types a spec uses (JSON strings are valid TOML basic strings)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{v} is not a finite number")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} into a spec")


def _as_list(v: Any) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _spec_text(
    traffic: Union[float, Sequence[float]],
    strategies: Optional[Sequence[Union[str, float]]],
    lengths: Lengths,
    packets: Union[int, str, Sequence[Union[int, str]]],
    seed: Union[int, Sequence[int]],
    replications: Optional[int],
    service: Union[str, Sequence[str]],
    options: Mapping[str, Any],
    workload: Union[str, Sequence[str], None] = None,
) -> str:
    lines = [f"traffic = {_toml([float(t) for t in _as_list(traffic)])}"]
    if strategies is not None:
        lines.append(f"strategies = {_toml(list(strategies))}")
    lines.append(f"packets = {_toml(_as_list(packets) if isinstance(packets, (list, tuple)) else packets)}")
    if replications is not None:
        if isinstance(seed, (list, tuple)):
            raise ValueError("give either a list of seeds or replications with one first seed, not both")
        lines.append(f"replications = {int(replications)}\nseed = {int(seed)}")
    else:
        lines.append(f"seeds = {_toml([int(s) for s in _as_list(seed)])}")
    lines.append(f"service = {_toml(_as_list(service))}")
    dists: dict[str, Any]
    if workload is not None:
        if not (isinstance(lengths, str) and lengths == "report"):
            raise ValueError("give either workload= (named workloads) or lengths=, not both")
        dists = {}
        lines.append(f"lengths = {_toml([str(w) for w in _as_list(workload)])}")
    elif isinstance(lengths, str) and lengths == "report":
        dists = {}
        lines.append('lengths = ["report"]')
    elif isinstance(lengths, Mapping):
        dists = dict(lengths)
        lines.append(f"lengths = {_toml(list(dists))}")
    else:
        name = Path(lengths).stem if isinstance(lengths, (str, os.PathLike)) else "custom"
        dists = {name: lengths}
        lines.append(f"lengths = {_toml([name])}")
    if options:
        lines.append("[options]")
        lines += [f"{k} = {_toml(v)}" for k, v in options.items()]
    for name, d in dists.items():
        if name == "report" and d == "report":
            continue
        lines.append(f"[distributions.{json.dumps(name)}]")
        if isinstance(d, (str, os.PathLike)):
            lines.append(f"file = {_toml(str(Path(d).resolve()))}")
        else:
            lines.append(f"ranges = {_toml([[int(r[0]), int(r[1]), float(r[2])] for r in d])}")
    return "\n".join(lines) + "\n"


def simulate(
    traffic: Union[float, Sequence[float]] = 90.0,
    strategies: Optional[Sequence[Union[str, float]]] = None,
    lengths: Lengths = "report",
    packets: Union[int, str, Sequence[Union[int, str]]] = 1_000_000,
    seed: Union[int, Sequence[int]] = 1,
    *,
    replications: Optional[int] = None,
    service: Union[str, Sequence[str]] = "report",
    workers: Optional[int] = None,
    backend: Literal["local", "ray"] = "local",
    workload: Union[str, Sequence[str], None] = None,
    **options: Any,
) -> pl.DataFrame:
    """Simulates the report's model and returns the sweep table as a polars DataFrame.

    Args:
        traffic: offered load(s) in percent, in (0, 100).
        strategies: names or numbers as ``schedlab sim --alphas`` takes them (``"RR'"``, ``"RR"``,
            ``"FIFO"``, ``"SF"``, an alpha such as ``10``, ``"track:1:100"``, ``"prio"``); default:
            the report's 13. All run in lock step on one sample path per cell.
        lengths: ``"report"``, a file of ``LOW HIGH PERCENT`` lines, ``[(low, high, pct), ...]``,
            or a dict naming several distributions (an axis).
        workload: a named workload (``"w3"``, ``"pfabric-datamining"``; ``"w4:interp"`` or
            ``"w2:step:1442"`` to set the reading and bytes per packet), or a list (an axis),
            instead of ``lengths``; ``schedlab workloads`` lists them. Rows of a workload are
            per size bucket: ``len_pkts`` is the bucket's longest length; they record the table
            read in ``workload_reading``, ``workload_bytes_per_pkt`` (null for tables in
            packets), ``workload_checksum``, ``workload_source`` and ``workload_commit`` (empty
            for other lengths).
        packets: arrival packets per cell (``1_000_000``, ``"10M"``), or a list (an axis).
        seed: the seed, or a list of seeds (an axis); with ``replications``, the first seed.
        replications: independent runs with seeds ``seed, seed + 1, ...``.
        service: the service-time model(s); ``"report"`` is 0.5 + Exp(mean 0.5) per packet.
        workers: cells run in parallel (default: every core); ``backend="ray"`` runs on Ray.
        **options: fixed options of a spec's ``[options]``: ``queue_delay_tu``, ``batches``,
            ``apps``, ``closed``, ``in_order``, ``msg_alpha``.

    Raises:
        ValueError: a bad argument, named as the spec key it becomes.
        KeyboardInterrupt: Ctrl-C; the running cells are stopped.
    """
    text = _spec_text(traffic, strategies, lengths, packets, seed, replications, service, options, workload)
    spec = load_spec("<simulate>", text=text)
    return run_spec(spec, backend=backend, workers=workers)


def sweep(
    spec: Union[str, os.PathLike[str], Spec],
    backend: Literal["local", "ray"] = "local",
    *,
    workers: Optional[int] = None,
    shard: Optional[tuple[int, int]] = None,
    address: Optional[str] = None,
) -> pl.DataFrame:
    """Runs a sweep spec (a TOML path or a :class:`Spec`) and returns its table.

    Args:
        spec: the spec file (``sweeps/report.toml``) or a loaded :class:`Spec`.
        backend: ``"local"`` (Rust threads on this machine) or ``"ray"`` (one Ray task per cell).
        workers: local cells in parallel (default: every core); ignored by Ray.
        shard: ``(index, count)``, 1-based, to run one slice as ``--shard index/count`` does.
        address: the Ray cluster (``ray.init(address=...)``; default ``"auto"``, or the cluster
            ``ray.init`` already joined).
    """
    s = spec if isinstance(spec, Spec) else load_spec(spec)
    if shard is not None:
        s = s.shard(*shard)
    return run_spec(s, backend=backend, workers=workers, address=address)


def run_spec(
    spec: Spec,
    *,
    backend: Literal["local", "ray"] = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
) -> pl.DataFrame:
    """Runs every cell of a loaded spec on the chosen backend."""
    if backend == "local":
        return _frame(_native.run_cells(list(spec.cells), workers))
    if backend == "ray":
        from schedlab import ray_backend

        return _frame(ray_backend.run(spec.cells, address=address))
    raise ValueError(f"backend {backend!r}: use 'local' or 'ray'")


def concat(frames: Iterable[pl.DataFrame]) -> pl.DataFrame:
    """Concatenates per-cell tables in cell order."""
    return pl.concat(list(frames), how="vertical").sort("cell", maintain_order=True)
