"""Readers, on files written by the real commands (short runs of the schedlab binary)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest

import schedlab


def run(cmd: list[str], cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, check=True, timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_sched_json_and_timestamps(schedlab_bin: str, tmp_path: Path) -> None:
    run([schedlab_bin, "sched", "-t", "2", "-d", "0.3", "--json", "s.json", "-p", "ts-"], tmp_path)
    df = schedlab.read_sched_json(tmp_path / "s.json")
    assert df.height == 2
    assert df["client"].to_list() == [0, 1]
    for c in ("generated_pkts", "rate_bps", "delay_us_p50", "alg", "threads", "thread_cpu"):
        assert c in df.columns, c
    assert (df["threads"] == 2).all()
    ts = schedlab.read_timestamps(sorted(tmp_path.glob("ts-queue-*.txt")))
    assert set(ts["client"].unique()) <= {0, 1} and ts.height > 0
    assert ts.schema["cli_enq_ns"] == pl.Int64 and ts.schema["dropped"] == pl.Boolean
    gen = int(df["generated_pkts"].sum())
    assert ts.height <= gen
    with pytest.raises(ValueError, match="not a `schedlab semtest --json`"):
        schedlab.read_semtest_json(tmp_path / "s.json")


def test_semtest_json(schedlab_bin: str, tmp_path: Path) -> None:
    run([schedlab_bin, "semtest", "-i", "200", "--json", "sem.json"], tmp_path)
    df = schedlab.read_semtest_json(tmp_path / "sem.json")
    assert df.height >= 1
    assert {"index", "lat_us_p50", "lat_us_count", "config_iterations", "command"} <= set(df.columns)
    assert (df["lat_us_count"] == 200).all()
    assert df["command"][0] == "semtest"


def test_rdma_share_json_and_records(schedlab_bin: str, tmp_path: Path) -> None:
    head = "# schedlab-rdma backend=EMULATED op=WRITE bytes=65536 count=3 poll=event\nTask_cnt\tTime(us)\t\tLatency\n"
    (tmp_path / "a.txt").write_text(head + "1\t\t10.00\t\t9.50\n2\t\t20.00\t\t9.60\n3\t\t30.00\t\t9.70\n")
    (tmp_path / "b.txt").write_text(head + "1\t\t15.00\t\t14.50\n2\t\t30.00\t\t14.60\n3\t\t45.00\t\t14.70\n")
    run([schedlab_bin, "rdma", "share", "a.txt", "b.txt", "--json", "r.json"], tmp_path)
    flows = schedlab.read_rdma_share_json(tmp_path / "r.json")
    assert flows["name"].to_list() == ["A", "B"]
    assert flows["gbps"][0] == pytest.approx(52.4288)
    assert (flows["backend"] == "EMULATED").all()
    win = schedlab.read_rdma_share_json(tmp_path / "r.json", table="windows")
    assert {"start_ms", "a_gbps", "b_gbps", "jain", "jain_overall"} <= set(win.columns)
    recs = schedlab.read_timestamps([tmp_path / "a.txt", tmp_path / "b.txt"])
    assert recs.height == 6
    assert recs["lat_us"].to_list()[:3] == [9.5, 9.6, 9.7]
    assert recs["backend"][0] == "EMULATED"


def test_echo_bench_json(schedlab_bin: str, tmp_path: Path) -> None:
    run(
        [schedlab_bin, "echo-bench", "--modes", "naive", "--sizes", "1B,4K", "--rounds", "30", "--warmup", "3"]
        + ["--no-busy-poll", "--peer", "none", "--out", "eb"],
        tmp_path,
    )
    df = schedlab.read_echo_bench_json(tmp_path / "eb")
    assert df["mode"].to_list() == ["naive", "naive"]
    assert df["size_bytes"].to_list() == [1, 4096]
    assert (df["rtt_us_count"] == 30).all()
    assert (df["rounds"] == 30).all()


def test_readers_refuse_other_files(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"something": 1}')
    for f in (schedlab.read_sched_json, schedlab.read_semtest_json, schedlab.read_rdma_share_json, schedlab.read_echo_bench_json):
        with pytest.raises(ValueError, match="not a"):
            f(p)
    bad = tmp_path / "queue-0.txt"
    bad.write_text("1\t2\t3\n")
    with pytest.raises(ValueError, match="queue-0.txt:1"):
        schedlab.read_timestamps(bad)


def test_results_validate_against_committed_schemas(schedlab_bin: str, tmp_path: Path, root: Path) -> None:
    """Every kind with a committed schema, written by the real command, validates; the package's
    copy of each schema is the repository's (schemas/)."""
    import json

    from schedlab import readers

    for name, (_, file) in readers.SCHEMAS.items():
        assert readers.schema(name) == json.loads((root / "schemas" / file).read_text()), file
    head = "# schedlab-rdma backend=EMULATED op=WRITE bytes=65536 count=3 poll=event\nTask_cnt\tTime(us)\t\tLatency\n"
    (tmp_path / "a.txt").write_text(head + "1\t\t10.00\t\t9.50\n2\t\t20.00\t\t9.60\n3\t\t30.00\t\t9.70\n")
    (tmp_path / "b.txt").write_text(head + "1\t\t15.00\t\t14.50\n2\t\t30.00\t\t14.60\n3\t\t45.00\t\t14.70\n")
    run([schedlab_bin, "rdma", "share", "a.txt", "b.txt", "--json", "r.json"], tmp_path)
    run(
        [schedlab_bin, "echo-bench", "--modes", "naive", "--sizes", "1B", "--rounds", "20", "--warmup", "2"]
        + ["--no-busy-poll", "--peer", "none", "--out", "eb"],
        tmp_path,
    )
    (tmp_path / "w.txt").write_text("thread all\n100ms 6M 1500 dist:report poisson\n")
    run(
        [schedlab_bin, "predict", "-t", "2", "-f", "w.txt", "-b", "20M", "-q", "200", "-i", "0", "-c", "0"]
        + ["--algs", "fifo,sf", "--json", "p.json"],
        tmp_path,
    )
    (tmp_path / "s.toml").write_text('traffic = [50]\nstrategies = ["FIFO", 10]\npackets = "10k"\n')
    run([schedlab_bin, "sweep", "s.toml", "--out", "t.jsonl", "-q", "-j", "1"], tmp_path)
    run([schedlab_bin, "sweep", "merge", "t.jsonl", "--out", "t.csv"], tmp_path)
    written = {
        "schedlab.rdma-share": tmp_path / "r.json",
        "schedlab.echo-bench": tmp_path / "eb" / "results.json",
        "schedlab.predict": tmp_path / "p.json",
        "schedlab.sweep-row": tmp_path / "t.jsonl",
    }
    assert set(written) == set(readers.SCHEMAS), "a kind with a schema has no round trip here"
    for name, path in written.items():
        text = path.read_text()
        # A JSON-lines file (sweep rows): every line is one result of the kind.
        doc = json.loads(text.splitlines()[0] if path.suffix == ".jsonl" else text)
        assert doc["schema"] == f"{name}/{readers.SCHEMAS[name][0]}"
        assert schedlab.validate(doc, name, path) is doc
    assert schedlab.read_rdma_share_json(written["schedlab.rdma-share"]).height == 2
    assert schedlab.read_echo_bench_json(tmp_path / "eb").height == 1
    rows = schedlab.read_predict_json(written["schedlab.predict"])
    assert rows.filter(pl.col("len_pkts") == 0)["alg"].to_list() == ["fifo", "sf"]
    assert {"measured_mean_us", "predicted_mean_us", "ratio_mean", "breakdown_ring_wait_us", "kept_up"} <= set(rows.columns)
    assert schedlab.read_predict_json(written["schedlab.predict"], table="runs").height == 2
    sweep_rows = schedlab.read_sweep_jsonl(written["schedlab.sweep-row"])
    table = schedlab.read_table(tmp_path / "t.csv")
    assert sweep_rows.columns == table.columns
    for c in ("cell", "strategy", "len_pkts", "msgs", "sweep_id"):
        assert sweep_rows[c].to_list() == table[c].to_list(), c
    assert sweep_rows["mean_lat_tu"].to_list() == table["mean_lat_tu"].fill_nan(None).to_list()

    share = json.loads(written["schedlab.rdma-share"].read_text())
    with pytest.raises(ValueError, match="reads schedlab.rdma-share/1"):
        schedlab.validate(dict(share, schema="schedlab.rdma-share/2"), "schedlab.rdma-share")
    with pytest.raises(ValueError, match="not a schedlab.echo-bench result"):
        schedlab.validate(share, "schedlab.echo-bench")
    broken = dict(share, flows=[dict(share["flows"][0], gbps="fast"), share["flows"][1]])
    with pytest.raises(ValueError, match="field flows/0/gbps"):
        schedlab.validate(broken, "schedlab.rdma-share", "broken.json")
    missing = {k: v for k, v in share.items() if k != "windows"}
    with pytest.raises(ValueError, match="'windows' is a required property"):
        schedlab.validate(missing, "schedlab.rdma-share")
