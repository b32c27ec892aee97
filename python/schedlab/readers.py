"""Readers: the files other schedlab commands write, as polars DataFrames.

Result kinds that carry a ``schema`` tag (``"schedlab.echo-bench/1"``) are validated against the
JSON Schema of that kind and version before they are read (:func:`validate`); the schemas ship
in the package (``schedlab/schemas/``) and are generated from the Rust result types.

Nested JSON objects are flattened with ``_`` (``delay_us: {p50: ..}`` -> ``delay_us_p50``); lists
inside a row are left out (they have readers of their own where they matter). Run-level scalars are
repeated on every row so that frames of several runs can be concatenated and grouped.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Union

import polars as pl

PathLike = Union[str, os.PathLike[str]]


def _flatten(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "_"))
        elif isinstance(v, list):
            continue
        else:
            out[key] = v
    return out


def _scalars(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Top-level scalars of ``obj`` (nested objects flattened), lists left out."""
    return _flatten({k: v for k, v in obj.items() if not isinstance(v, list)}, prefix)


def _rows(records: Iterable[Mapping[str, Any]], common: Mapping[str, Any]) -> pl.DataFrame:
    rows = [{**common, **_flatten(r)} for r in records]
    return pl.DataFrame(rows, infer_schema_length=None)


def _load(path: PathLike) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# Schema name -> (version, file in schedlab/schemas/): the kinds with committed schemas.
# One line per kind, as results::KINDS in crates/report/src/results/mod.rs (a Rust test compares).
SCHEMAS: dict[str, tuple[int, str]] = {
    "schedlab.burst": (1, "burst.schema.json"),
    "schedlab.echo-bench": (1, "echo-bench.schema.json"),
    "schedlab.notify": (1, "notify.schema.json"),
    "schedlab.rdma": (1, "rdma.schema.json"),
    "schedlab.rdma-share": (1, "rdma-share.schema.json"),
    "schedlab.predict": (1, "predict.schema.json"),
    "schedlab.sched": (1, "sched.schema.json"),
    "schedlab.sched-repeat": (1, "sched-repeat.schema.json"),
    "schedlab.semtest": (1, "semtest.schema.json"),
    "schedlab.sim": (1, "sim.schema.json"),
    "schedlab.sweep-row": (1, "sweep-row.schema.json"),
    "schedlab.trylock": (1, "trylock.schema.json"),
    "schedlab.workloads": (1, "workloads.schema.json"),
}


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of result kind ``name`` (``"schedlab.echo-bench"``), as shipped."""
    if name not in SCHEMAS:
        raise ValueError(f"no schema for {name!r}; known: {', '.join(sorted(SCHEMAS))}")
    text = (Path(__file__).parent / "schemas" / SCHEMAS[name][1]).read_text(encoding="utf-8")
    return json.loads(text)


def validate(doc: Any, name: str, source: PathLike = "<result>") -> Any:
    """Checks a parsed result against kind ``name``'s schema and returns it.

    A document without a ``schema`` tag (written before results carried one) is checked as
    version 1. Raises ``ValueError`` naming ``source``, the field's path and what is wrong: another
    kind, another version, or a field that does not match.
    """
    import jsonschema

    version, _ = SCHEMAS[name]
    if not isinstance(doc, dict):
        raise ValueError(f"{source}: not a JSON object, so not a {name} result")
    tag = doc.get("schema", f"{name}/1")
    kind, _, ver = str(tag).rpartition("/")
    if kind != name:
        raise ValueError(f"{source}: `schema` is {tag!r}: not a {name} result")
    if ver != str(version):
        raise ValueError(f"{source}: `schema` is {tag!r}: this schedlab reads {name}/{version}")
    checked = dict(doc, schema=f"{name}/{version}")
    errors = sorted(jsonschema.Draft202012Validator(schema(name)).iter_errors(checked), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(x) for x in e.absolute_path) or "(top level)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ValueError(f"{source}: field {where}: {e.message}{more}")
    return doc


def read_result(path: PathLike) -> tuple[str, dict[str, Any]]:
    """Any tagged result file: its kind's name (``"schedlab.sched"``) and the document, validated
    against that kind's schema. Raises ``ValueError`` for a file without a known ``schema`` tag."""
    d = _load(path)
    tag = d.get("schema") if isinstance(d, dict) else None
    name = str(tag).rpartition("/")[0] if tag else ""
    if name not in SCHEMAS:
        raise ValueError(f"{path}: not a tagged schedlab result (schema {tag!r}); known kinds: {', '.join(sorted(SCHEMAS))}")
    return name, validate(d, name, path)


def read_table(path: PathLike) -> pl.DataFrame:
    """A ``schedlab sweep`` output (``.parquet`` or ``.csv``) with the sweep table's column types.

    Empty text fields read as empty strings (the ``workload_*`` columns of rows whose lengths are
    no named workload) and an empty ``workload_bytes_per_pkt`` as null. Raises ``ValueError`` for
    a table whose columns differ from this schedlab's (another version, or not a sweep table)
    rather than reading its values into the wrong columns."""
    from schedlab.sweep import _schema

    p = Path(path)
    want = list(_schema())
    if p.suffix.lower() in (".parquet", ".pq"):
        found = list(pl.read_parquet_schema(p))
    else:
        with open(p, encoding="utf-8") as f:
            found = f.readline().rstrip("\r\n").split(",")
    if found != want:
        missing = [c for c in want if c not in found]
        unknown = [c for c in found if c not in want]
        why = "; ".join(
            part
            for part in (
                f"no {', '.join(missing)}" if missing else "",
                f"unknown {', '.join(unknown)}" if unknown else "",
            )
            if part
        ) or "the same columns in another order"
        raise ValueError(
            f"{path}: the columns differ from this schedlab's sweep table ({why}): a table of another schedlab version, "
            "or not a sweep table"
        )
    if p.suffix.lower() in (".parquet", ".pq"):
        return pl.read_parquet(p)
    # Empty text is an empty string, not null: polars 2 says so with empty_string_is_null=False,
    # polars 1 with missing_utf8_is_empty_string=True.
    import inspect

    params = inspect.signature(pl.read_csv).parameters
    empty = {"empty_string_is_null": False} if "empty_string_is_null" in params else {"missing_utf8_is_empty_string": True}
    return pl.read_csv(p, schema=_schema(), **empty)


def read_sched_json(path: PathLike) -> pl.DataFrame:
    """``schedlab sched --json FILE``: one row per client (``client``, ``generated_pkts``,
    ``rate_bps``, ``delay_us_p50``, ...), with the run's settings (``alg``, ``threads``,
    ``link_achieved_bps``, ``machine_*``, ...) on every row."""
    d = _load(path)
    if not isinstance(d, dict) or "clients" not in d:
        raise ValueError(f"{path}: not a `schedlab sched --json` file (no 'clients')")
    validate(d, "schedlab.sched", path)
    common = _scalars(d)
    return _rows(d["clients"], common)


def read_semtest_json(path: PathLike) -> pl.DataFrame:
    """``schedlab semtest --json FILE``: one row per thread pair (``index``, ``lat_us_p50``, CPUs,
    ...), with the run's configuration (``config_*``) and global figures on every row."""
    d = _load(path)
    run = d.get("run") if isinstance(d, dict) else None
    if not isinstance(run, dict) or "pairs" not in run:
        raise ValueError(f"{path}: not a `schedlab semtest --json` file (no 'run.pairs')")
    validate(d, "schedlab.semtest", path)
    common = {"command": d.get("command"), **_scalars(run)}
    return _rows(run["pairs"], common)


def read_trylock_json(path: PathLike) -> pl.DataFrame:
    """``schedlab trylock --json FILE``: one row per worker (``index``, ``busy_ns_p50``,
    ``rate_ops_per_s``, ...), with the run's configuration (``config_*``) on every row."""
    d = _load(path)
    run = d.get("run") if isinstance(d, dict) else None
    if not isinstance(run, dict) or "workers" not in run:
        raise ValueError(f"{path}: not a `schedlab trylock --json` file (no 'run.workers')")
    validate(d, "schedlab.trylock", path)
    common = {"command": d.get("command"), **_scalars({k: v for k, v in run.items() if k != "all"})}
    return _rows(run["workers"], common)


def read_notify_json(path: PathLike) -> pl.DataFrame:
    """``schedlab notify --json FILE``: one row with the sender's (``sender_*``) and the
    receiver's (``receiver_*``) figures and the configuration (``config_*``)."""
    d = _load(path)
    run = d.get("run") if isinstance(d, dict) else None
    if not isinstance(run, dict) or "sender" not in run:
        raise ValueError(f"{path}: not a `schedlab notify --json` file (no 'run.sender')")
    validate(d, "schedlab.notify", path)
    return _rows([run], {"command": d.get("command")})


def read_burst_json(path: PathLike) -> pl.DataFrame:
    """``schedlab burst --json FILE``: one row per target (``addr``, ``rtt_us_p50``,
    ``client_cost_cpu_us_per_round``, ...; the per-round samples are left out), with the run's
    settings (``size_bytes``, ``rounds``, ``mode``, ...) on every row."""
    d = _load(path)
    if not isinstance(d, dict) or "size_bytes" not in d or not ("rtt_us" in d or "targets" in d):
        raise ValueError(f"{path}: not a `schedlab burst --json` file (no 'rtt_us' or 'targets')")
    validate(d, "schedlab.burst", path)
    keys = ("schema", "machine", "thread", "size_bytes", "rounds", "warmup", "mode", "spin", "interrupted")
    common = _scalars({k: d[k] for k in keys if k in d})
    targets = d.get("targets") or [{k: v for k, v in d.items() if k not in keys}]
    return _rows(targets, common)


def read_echo_bench_json(path: PathLike) -> pl.DataFrame:
    """``schedlab echo-bench``'s ``results.json`` (a file or the ``--out`` folder): one row per
    (mode, message size, busy-poll setting) with the RTT summaries (``rtt_us_*``,
    ``trimmed_rtt_us_*``)."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    d = _load(p)
    if not isinstance(d, dict) or "rows" not in d:
        raise ValueError(f"{p}: not an echo-bench results.json (no 'rows')")
    validate(d, "schedlab.echo-bench", p)
    common = _scalars(d)
    return _rows(d["rows"], common)


def read_rdma_share_json(path: PathLike, table: Literal["flows", "windows"] = "flows") -> pl.DataFrame:
    """``schedlab rdma share A B --json FILE``: the two flows (``table="flows"``: name, gbps,
    ``lat_us_*``, ...) or the throughput windows (``table="windows"``: start_ms, a_gbps, b_gbps,
    jain), with the backend and the overall Jain index on every row."""
    d = _load(path)
    if not isinstance(d, dict) or "flows" not in d:
        raise ValueError(f"{path}: not a `schedlab rdma share --json` file (no 'flows')")
    validate(d, "schedlab.rdma-share", path)
    if table not in ("flows", "windows"):
        raise ValueError(f"table {table!r}: use 'flows' or 'windows'")
    common = {"backend": d.get("backend"), "jain_overall": d.get("jain"), "window_us": d.get("window_us")}
    return _rows(d[table], common)


def read_sim_json(path: PathLike) -> pl.DataFrame:
    """``schedlab sim --json FILE``: one row per (traffic level, strategy, message length) of the
    runs the report's tables show (``len`` 0 is all messages together; with a named workload a row
    is a size bucket, ``bucket_*``), with the level's ``traffic_pct`` and ``seed`` and the
    strategy's ``label`` and ``listing_alpha``. Times are in time units (``_tu``)."""
    d = _load(path)
    if not isinstance(d, dict) or "runs" not in d:
        raise ValueError(f"{path}: not a `schedlab sim --json` file (no 'runs')")
    validate(d, "schedlab.sim", path)
    rows = []
    for run in d["runs"]:
        for s in run["strategies"]:
            common = {"traffic_pct": run["traffic_pct"], "seed": run["seed"], "label": s["label"], "listing_alpha": s["listing_alpha"]}
            rows.extend({**common, **_flatten(x)} for x in [*s["by_len"], s["overall"]])
    return pl.DataFrame(rows, infer_schema_length=None)


def read_rdma_json(path: PathLike) -> pl.DataFrame:
    """``schedlab rdma ... --json FILE`` (either end of one flow): one row, nested objects
    flattened (``lat_us_p50``, ``local_qp_qpn``, ``machine_hostname``, ...)."""
    d = _load(path)
    if not isinstance(d, dict) or "bw_avg_gbps" not in d:
        raise ValueError(f"{path}: not a `schedlab rdma --json` file (no 'bw_avg_gbps')")
    validate(d, "schedlab.rdma", path)
    return pl.DataFrame([_scalars(d)], infer_schema_length=None)


def read_predict_json(path: PathLike, table: Literal["rows", "runs", "summaries"] = "rows") -> pl.DataFrame:
    """``schedlab predict --json FILE``, validated against ``schedlab.predict``:

    - ``table="rows"``: one row per (run, message length): ``alg``, ``label``, ``repeat_run``,
      ``len_pkts`` (0 = all lengths), ``bucket_low``/``bucket_high``/``bucket_pct_low``/
      ``bucket_pct_high`` (with more than 64 distinct lengths each row is a size bucket by size
      percentile and ``len_pkts`` its longest length; null otherwise), ``count``, ``measured_mean_us``, ``predicted_p99_us``,
      ``ratio_mean``, ``breakdown_ring_wait_us``, ..., with the run's verdict (``kept_up``,
      ``disturbed``, ``predicted``) and the workload's settings on every row;
    - ``table="runs"``: one row per run (its scalars: ``alg``, ``verdict_kept_up``,
      ``link_achieved_bps``, ``order_check_first_mismatch``, ``release_lateness_mean_us``, ...);
    - ``table="summaries"``: one row per policy over the ``--repeat`` runs (``ratio_median``, ...).
    """
    d = _load(path)
    if not isinstance(d, dict) or "runs" not in d:
        raise ValueError(f"{path}: not a `schedlab predict --json` file (no 'runs')")
    validate(d, "schedlab.predict", path)
    common = {k: d[k] for k in ("seed", "traffic", "threads", "queue_pkts", "drain_ns", "repeat")}
    if table == "runs":
        return _rows(d["runs"], common)
    if table == "summaries":
        return _rows(d["summaries"], common)
    if table != "rows":
        raise ValueError(f"table {table!r}: use 'rows', 'runs' or 'summaries'")
    rows = []
    for r in d["runs"]:
        run = {
            **common,
            "alg": r["alg"],
            "label": r["label"],
            "repeat_run": r["repeat_run"],
            "kept_up": r["verdict"]["kept_up"],
            "disturbed": r["verdict"]["disturbed"],
            "predicted": r["predicted"],
        }
        # A row is one length, or with many lengths one size bucket (``bucket`` present): the
        # bucket's columns are null on per-length rows and on the all-lengths row.
        rows.extend({**run, **dict.fromkeys(_BUCKET_COLUMNS), **_flatten(x)} for x in r["rows"])
    return pl.DataFrame(rows, infer_schema_length=None)


_BUCKET_COLUMNS = ("bucket_low", "bucket_high", "bucket_pct_low", "bucket_pct_high")


def read_sweep_jsonl(path: PathLike) -> pl.DataFrame:
    """JSON lines of sweep rows (``schedlab.sweep-row``, one object per line), each validated, as
    the sweep table (the columns of :func:`read_table`, the ``schema`` tag dropped)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not JSON: {e}") from None
            validate(doc, "schedlab.sweep-row", f"{path}:{n}")
            rows.append({k: v for k, v in doc.items() if k != "schema"})
    from schedlab.sweep import _schema

    return pl.DataFrame(rows, schema=_schema())


_SCHED_TS = ["cli_enq_ns", "sch_enq_delta_ns", "sch_deq_delta_ns", "cli_deq_delta_ns", "len_bytes", "dropped"]


def read_timestamps(paths: Union[PathLike, Iterable[PathLike]]) -> pl.DataFrame:
    """Timestamp files as one frame with a ``file`` column (and ``client`` for ``queue-N.txt``).

    Two formats are recognised by their content:

    - ``schedlab sched`` timestamp files (``PREFIXqueue-N.txt``): six tab-separated fields per
      packet, ``cli_enq_ns`` (the clock's absolute value) then three nanosecond deltas
      (``sch_enq_delta_ns``, ``sch_deq_delta_ns``, ``cli_deq_delta_ns``), ``len_bytes`` and
      ``dropped`` (``D``);
    - ``schedlab rdma`` per-message files (``Task_cnt  Time(us)  Latency``): ``completed``,
      ``time_us``, ``lat_us``, plus the ``# schedlab-rdma`` header's fields when present.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    frames = []
    for path in paths:
        p = Path(path)
        lines = p.read_text().splitlines()
        first = next((ln for ln in lines if ln.strip()), "")
        if first.startswith("# schedlab-rdma") or first.startswith("Task_cnt"):
            frames.append(_rdma_records(p, lines))
        else:
            frames.append(_sched_timestamps(p, lines))
    if not frames:
        raise ValueError("no timestamp files given")
    return pl.concat(frames, how="diagonal_relaxed")


def _sched_timestamps(p: Path, lines: list[str]) -> pl.DataFrame:
    cols: dict[str, list] = {c: [] for c in _SCHED_TS}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        f = line.rstrip("\n").split("\t")
        if len(f) != 6:
            raise ValueError(f"{p}:{n}: expected 6 tab-separated fields (sched timestamps), got {len(f)}")
        try:
            for c, v in zip(_SCHED_TS[:5], f[:5]):
                cols[c].append(int(v))
        except ValueError:
            raise ValueError(f"{p}:{n}: field '{c}': {v!r} is not a whole number") from None
        cols["dropped"].append(f[5] == "D")
    m = re.search(r"queue-(\d+)\.txt$", p.name)
    df = pl.DataFrame(cols, schema={c: (pl.Boolean if c == "dropped" else pl.Int64) for c in _SCHED_TS})
    return df.with_columns(pl.lit(str(p)).alias("file"), pl.lit(int(m.group(1)) if m else None, dtype=pl.Int64).alias("client"))


def _rdma_records(p: Path, lines: list[str]) -> pl.DataFrame:
    meta: dict[str, Any] = {}
    cols: dict[str, list] = {"completed": [], "time_us": [], "lat_us": []}
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith("Task_cnt"):
            continue
        if s.startswith("#"):
            for kv in s.lstrip("#").split():
                if "=" in kv:
                    k, v = kv.split("=", 1)
                    meta[k] = v
            continue
        f = s.split()
        if len(f) != 3:
            raise ValueError(f"{p}:{n}: expected 'Task_cnt Time(us) Latency', got {len(f)} fields")
        try:
            cols["completed"].append(int(f[0]))
            cols["time_us"].append(float(f[1]))
            cols["lat_us"].append(float(f[2]))
        except ValueError:
            raise ValueError(f"{p}:{n}: {s!r} is not three numbers") from None
    df = pl.DataFrame(cols, schema={"completed": pl.Int64, "time_us": pl.Float64, "lat_us": pl.Float64})
    extra = [pl.lit(str(p)).alias("file")] + [pl.lit(v).alias(k) for k, v in meta.items()]
    return df.with_columns(extra)
