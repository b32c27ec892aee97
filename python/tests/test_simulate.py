"""simulate(), sweep() on the local backend, errors, the GIL and Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import polars as pl
import pytest

import schedlab


def test_columns_and_types() -> None:
    df = schedlab.simulate(traffic=[50, 90], strategies=["RR", "FIFO", 10, "SF"], packets=20_000, seed=3)
    assert df.columns == [n for n, _ in schedlab.columns()]
    assert df.schema["mean_lat_tu"] == pl.Float64 and df.schema["len_pkts"] == pl.Int64 and df.schema["strategy"] == pl.Utf8
    # 2 cells x 4 strategies x (6 lengths + all messages)
    assert df.height == 2 * 4 * 7
    assert set(df["strategy"]) == {"RR", "FIFO", "10", "SF"}
    assert df["seed"].unique().to_list() == [3]
    assert df["schedlab_version"][0] == schedlab.__version__
    # FIFO is worse than SF on average at 90% (the report's finding).
    overall = df.filter((pl.col("len_pkts") == 0) & (pl.col("traffic_pct") == 90))
    by = dict(zip(overall["strategy"], overall["mean_lat_tu"]))
    assert by["SF"] < by["FIFO"]


def test_same_seed_same_table_and_seeds_matter() -> None:
    a = schedlab.simulate(traffic=70, strategies=["RR", 10], packets=30_000, seed=5)
    b = schedlab.simulate(traffic=70, strategies=["RR", 10], packets=30_000, seed=5, workers=1)
    c = schedlab.simulate(traffic=70, strategies=["RR", 10], packets=30_000, seed=6)
    assert a.equals(b)
    assert not a["mean_lat_tu"].equals(c["mean_lat_tu"])


def test_axes_lengths_replications() -> None:
    df = schedlab.simulate(
        traffic=50,
        strategies=["FIFO"],
        lengths={"short": [(1, 2, 100)], "bimodal": [(1, 1, 50), (8, 8, 50)]},
        packets=[5_000, 10_000],
        seed=1,
        replications=2,
    )
    cells = df.select("cell", "lengths", "packets", "seed").unique().sort("cell")
    assert cells.height == 2 * 2 * 2
    assert set(cells["lengths"]) == {"short", "bimodal"}
    assert set(cells["seed"]) == {1, 2}
    assert set(df.filter(pl.col("lengths") == "bimodal")["len_pkts"]) == {0, 1, 8}


def test_length_file(tmp_path: Path) -> None:
    f = tmp_path / "d.txt"
    f.write_text("# low high pct\n2 2 100\n")
    df = schedlab.simulate(traffic=30, strategies=["RR"], lengths=str(f), packets=2_000)
    assert set(df["len_pkts"]) == {0, 2}
    assert df["mean_len_pkts"][0] == 2.0


_WORKLOAD = ["workload_reading", "workload_bytes_per_pkt", "workload_checksum", "workload_source", "workload_commit"]


def test_workload_rows_record_the_workload(schedlab_bin: str, tmp_path: Path) -> None:
    """simulate(workload=...) rows record the workload's reading, bytes per packet, checksum,
    source and commit as ``schedlab sim --workload --json`` does; other lengths leave them empty
    (null bytes per packet); the CLI's CSV and Parquet read back to the same frame."""
    import json

    df = schedlab.simulate(traffic=50, strategies=["FIFO"], workload=["w3:interp:1442", "w5"], packets=3_000)
    i = df.columns.index("mean_len_pkts")
    assert df.columns[i + 1 : i + 6] == _WORKLOAD
    assert df.schema["workload_bytes_per_pkt"] == pl.Int64 and df.schema["workload_checksum"] == pl.Utf8
    for name, reading, bpp in (("w3", "interp", "1442"), ("w5", None, None)):
        sim = tmp_path / f"{name}.json"
        args = ["sim", "--workload", name, "--traffic", "50", "--alphas", "FIFO", "--packets", "2000", "--brief"]
        args += ["--reading", reading, "--bytes-per-packet", bpp] if reading else []
        subprocess.run([schedlab_bin, *args, "--json", str(sim)], check=True, timeout=120, stdout=subprocess.DEVNULL)
        w = json.loads(sim.read_text())["length_distribution"]["workload"]
        rows = df.filter(pl.col("lengths") == (f"{name}:{reading}:{bpp}" if reading else name))
        assert rows.height > 0
        got = rows.select(_WORKLOAD).unique().to_dicts()
        want = {
            "workload_reading": w["reading"],
            "workload_bytes_per_pkt": w["bytes_per_packet"],
            "workload_checksum": w["checksum"],
            "workload_source": w["source"],
            "workload_commit": w["commit"],
        }
        assert got == [want], name
    assert df.filter(pl.col("lengths") == "w5")["workload_bytes_per_pkt"].is_null().all(), "W5 is a table in packets"
    assert df["workload_checksum"].str.starts_with("fnv1a64:").all()

    spec = tmp_path / "s.toml"
    spec.write_text('traffic = [50]\nstrategies = ["FIFO"]\npackets = "3k"\nlengths = ["w3", "report"]\n')
    whole = schedlab.sweep(spec)
    report = whole.filter(pl.col("lengths") == "report")
    assert report.height > 0 and report["workload_bytes_per_pkt"].is_null().all()
    for c in ("workload_reading", "workload_checksum", "workload_source", "workload_commit"):
        assert (report[c] == "").all(), c
    for ext in ("csv", "parquet"):
        out = tmp_path / f"o.{ext}"
        subprocess.run([schedlab_bin, "sweep", str(spec), "--out", str(out), "--quiet"], check=True, timeout=120)
        assert schedlab.read_table(out).equals(whole), ext


def test_a_table_of_other_columns_is_refused(schedlab_bin: str, tmp_path: Path) -> None:
    """A table written before the workload columns is refused, naming the columns it lacks."""
    spec = tmp_path / "s.toml"
    spec.write_text('traffic = [50]\nstrategies = ["FIFO"]\npackets = "2k"\n')
    out = tmp_path / "o.parquet"
    subprocess.run([schedlab_bin, "sweep", str(spec), "--out", str(out), "--quiet"], check=True, timeout=120)
    old = schedlab.read_table(out).drop(_WORKLOAD)
    old.write_csv(tmp_path / "old.csv")
    old.write_parquet(tmp_path / "old.parquet")
    for f in ("old.csv", "old.parquet"):
        with pytest.raises(ValueError, match="columns differ from this schedlab's sweep table \\(no workload_reading, "):
            schedlab.read_table(tmp_path / f)


def test_errors_name_the_key() -> None:
    with pytest.raises(ValueError, match="key 'traffic'"):
        schedlab.simulate(traffic=150, packets=1000)
    with pytest.raises(ValueError, match="key 'strategies'"):
        schedlab.simulate(strategies=["warp"], packets=1000)
    with pytest.raises(ValueError, match="options.msg_alpha"):
        schedlab.simulate(strategies=["FIFO"], packets=1000, msg_alpha="1:50,100:50")
    with pytest.raises(ValueError, match="backend"):
        schedlab.simulate(packets=1000, strategies=["RR"], backend="spark")  # type: ignore[arg-type]


def test_sweep_file_shards_and_the_cli_agree(root: Path, schedlab_bin: str, tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('traffic = [20, 80]\nstrategies = ["RR\'", 3, "SF"]\npackets = "15k"\nreplications = 2\n')
    whole = schedlab.sweep(spec)
    parts = [schedlab.sweep(spec, shard=(i, 3)) for i in (1, 2, 3)]
    assert pl.concat(parts).sort("cell", maintain_order=True).equals(whole)
    out = tmp_path / "o.parquet"
    subprocess.run([schedlab_bin, "sweep", str(spec), "--out", str(out), "--quiet"], check=True, timeout=120)
    cli = schedlab.read_table(out)
    assert cli.equals(whole), "the CLI's Parquet and the Python local backend give the same table"
    csv = tmp_path / "o.csv"
    subprocess.run([schedlab_bin, "sweep", str(spec), "--out", str(csv), "--quiet"], check=True, timeout=120)
    assert schedlab.read_table(csv).equals(whole), "the CSV keeps every digit too"


def test_quick_spec_runs(root: Path) -> None:
    spec = schedlab.load_spec(root / "sweeps" / "quick.toml")
    assert len(spec) == 10
    df = schedlab.sweep(spec.shard(1, 5))
    assert sorted(set(df["traffic_pct"])) == [0.01, 80.0]
    assert df.select("strategy").unique().height == 13
    assert not df["mean_lat_tu"].is_nan().any()


def test_simulation_releases_the_gil() -> None:
    # The simulation runs on the main thread and is far too long to finish (a billion packets,
    # about a minute); a pure-Python thread counts 50 ticks and only then interrupts it. The
    # ticks need the GIL, so the interrupt comes only if the simulation releases it: no clock to
    # race, however fast or loaded the machine.
    ticks = 0
    ticked = threading.Event()

    def ticker() -> None:
        nonlocal ticks
        while ticks < 50:
            ticks += 1  # pure Python work: only possible while the simulation does not hold the GIL
            time.sleep(0.001)
        ticked.set()
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=ticker, daemon=True)
    t.start()
    with pytest.raises(KeyboardInterrupt):
        schedlab.simulate(traffic=95, strategies=["RR", 10], packets="1G", workers=1)
    t.join(timeout=120)
    assert ticked.is_set() and ticks == 50, f"the other thread ran {ticks} times during the simulation"


def test_ctrl_c_stops_the_simulation() -> None:
    sent: list[float] = []

    def interrupt() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.5, interrupt)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        # About a minute of work on this machine; Ctrl-C must end it within a second or so.
        schedlab.simulate(traffic=95, packets="1G", workers=2)
    took = time.monotonic() - sent[0]
    timer.cancel()
    # Measured from the signal, not from the start: a slow start on a loaded machine is no failure.
    assert took < 10, f"stopping took {took:.1f} s after the signal"

