"""Readers, on files written by the real commands (short runs of the schedlab binary)."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Any

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


def _write_every_kind(schedlab_bin: str, tmp_path: Path) -> dict[str, Path]:
    """Every tagged result kind, written by the real command in ``tmp_path`` (short runs)."""
    head = "# schedlab-rdma backend=EMULATED op=WRITE bytes=65536 count=3 poll=event\nTask_cnt\tTime(us)\t\tLatency\n"
    (tmp_path / "a.txt").write_text(head + "1\t\t10.00\t\t9.50\n2\t\t20.00\t\t9.60\n3\t\t30.00\t\t9.70\n")
    (tmp_path / "b.txt").write_text(head + "1\t\t15.00\t\t14.50\n2\t\t30.00\t\t14.60\n3\t\t45.00\t\t14.70\n")
    run([schedlab_bin, "rdma", "share", "a.txt", "b.txt", "--json", "r.json"], tmp_path)
    run(
        [schedlab_bin, "echo-bench", "--modes", "naive", "--sizes", "1B", "--rounds", "20", "--warmup", "2"]
        + ["--no-busy-poll", "--peer", "none", "--out", "eb"],
        tmp_path,
    )
    run([schedlab_bin, "sched", "-t", "2", "-d", "0.2", "-p", "ts-", "--json", "sched.json"], tmp_path)
    run([schedlab_bin, "sched", "-t", "2", "-d", "0.1", "--repeat", "2", "-p", "tsr-", "--json", "sched-r.json"], tmp_path)
    run([schedlab_bin, "trylock", "-n", "2", "-F", "-t", "0.02", "--json", "trylock.json"], tmp_path)
    run([schedlab_bin, "notify", "-S", "-n", "1", "--gap-us", "5", "--json", "notify.json"], tmp_path)
    run([schedlab_bin, "semtest", "-n", "1", "-i", "200", "--interval", "0", "--json", "semtest.json"], tmp_path)
    # burst needs an echo server: the CLI's, on a free port; its first line says where it listens.
    server = subprocess.Popen([schedlab_bin, "echo", "--mode", "naive", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline() if server.stdout else ""
        addr = first.split("listening on ")[1].split(";")[0].strip()
        run([schedlab_bin, "burst", addr, "4K", "10", "--settle", "0", "--warmup", "1", "-q", "--json", "burst.json"], tmp_path)
    finally:
        server.kill()
        server.wait()
    (tmp_path / "w.txt").write_text("thread all\n100ms 6M 1500 dist:report poisson\n")
    run(
        [schedlab_bin, "predict", "-t", "2", "-f", "w.txt", "-b", "20M", "-q", "200", "-i", "0", "-c", "0"]
        + ["--algs", "fifo,sf", "--json", "p.json"],
        tmp_path,
    )
    run([schedlab_bin, "sim", "-t", "60", "--packets", "20k", "-a", "FIFO,SF", "--replications", "2", "--compare", "SF"]
        + ["--quiet", "--json", "sim.json"], tmp_path)
    # One emulated rdma flow on a free port: the server says where it listens on its first line,
    # and its result file is complete once it exits.
    common = ["--backend", "emulated", "-n", "20", "-s", "4096", "-e"]
    rdma_server = subprocess.Popen(
        [schedlab_bin, "rdma", "-p", "0", "--bind", "127.0.0.1", *common, "--json", "rdma-server.json"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        first = rdma_server.stdout.readline() if rdma_server.stdout else ""
        port = first.split("connect on ")[1].split()[0].rsplit(":", 1)[1]
        run([schedlab_bin, "rdma", "127.0.0.1", "-p", port, *common, "-o", "flow.txt", "--json", "rdma.json"], tmp_path)
        if rdma_server.stdout:
            rdma_server.stdout.read()
        assert rdma_server.wait(timeout=60) == 0
    finally:
        rdma_server.kill()
        rdma_server.wait()
    (tmp_path / "s.toml").write_text('traffic = [50]\nstrategies = ["FIFO", 10]\npackets = "10k"\n')
    run([schedlab_bin, "sweep", "s.toml", "--out", "t.jsonl", "-q", "-j", "1"], tmp_path)
    run([schedlab_bin, "sweep", "merge", "t.jsonl", "--out", "t.csv"], tmp_path)
    run([schedlab_bin, "workloads", "--json", "workloads.json"], tmp_path)
    return {
        "schedlab.rdma-share": tmp_path / "r.json",
        "schedlab.echo-bench": tmp_path / "eb" / "results.json",
        "schedlab.sched": tmp_path / "sched.json",
        "schedlab.sched-repeat": tmp_path / "sched-r.json",
        "schedlab.trylock": tmp_path / "trylock.json",
        "schedlab.notify": tmp_path / "notify.json",
        "schedlab.semtest": tmp_path / "semtest.json",
        "schedlab.burst": tmp_path / "burst.json",
        "schedlab.predict": tmp_path / "p.json",
        "schedlab.sweep-row": tmp_path / "t.jsonl",
        "schedlab.sim": tmp_path / "sim.json",
        "schedlab.rdma": tmp_path / "rdma.json",
        "schedlab.workloads": tmp_path / "workloads.json",
    }


def _first_doc(path: Path) -> Any:
    """The result in a file; for a JSON-lines file (sweep rows, one result per line), its first line."""
    import json

    text = path.read_text()
    return json.loads(text.splitlines()[0] if path.suffix == ".jsonl" else text)


def test_results_validate_against_committed_schemas(schedlab_bin: str, tmp_path: Path, root: Path) -> None:
    """Every kind with a committed schema, written by the real command, validates; the package's
    copy of each schema is the repository's (schemas/)."""
    import json

    from schedlab import readers

    for name, (_, file) in readers.SCHEMAS.items():
        assert readers.schema(name) == json.loads((root / "schemas" / file).read_text()), file
    written = _write_every_kind(schedlab_bin, tmp_path)
    assert set(written) == set(readers.SCHEMAS), "a kind with a schema has no round trip here"
    for name, path in written.items():
        doc = _first_doc(path)
        assert doc["schema"] == f"{name}/{readers.SCHEMAS[name][0]}"
        assert schedlab.validate(doc, name, path) is doc
        if path.suffix != ".jsonl":
            assert schedlab.read_result(path) == (name, doc)
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
    # Equal to the last bit or two: the CSV's decimal text, read back by polars, can differ from
    # the JSON value in the last digit (9.264225246716139 against 9.26422524671614 in one run).
    for a, b in zip(sweep_rows["mean_lat_tu"].to_list(), table["mean_lat_tu"].fill_nan(None).to_list()):
        assert (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-14)), (a, b)
    sched = schedlab.read_sched_json(written["schedlab.sched"])
    assert sched["client"].to_list() == [0, 1] and (sched["schema"] == "schedlab.sched/1").all()
    trylock = schedlab.read_trylock_json(written["schedlab.trylock"])
    assert trylock["index"].to_list() == [0, 1] and (trylock["config_lock"] == "sem").all()
    notify = schedlab.read_notify_json(written["schedlab.notify"])
    assert notify.height == 1 and notify["sender_sent"][0] == 1000 and notify["config_test"][0] == "sender"
    assert schedlab.read_semtest_json(written["schedlab.semtest"])["lat_us_count"].to_list() == [200]
    burst = schedlab.read_burst_json(written["schedlab.burst"])
    assert burst.height == 1 and burst["rtt_us_count"][0] == 10 and burst["size_bytes"][0] == 4096
    assert "rtt_samples_us" not in burst.columns
    sim = json.loads(written["schedlab.sim"].read_text())
    assert [s["label"] for s in sim["runs"][0]["strategies"]] == ["FIFO", "SF"] and len(sim["replications"]) == 2
    sim_rows = readers.read_sim_json(written["schedlab.sim"])
    overall = sim_rows.filter(pl.col("len") == 0)
    assert overall["label"].to_list() == ["FIFO", "SF"]
    assert overall["mean_tu"].to_list() == [s["overall"]["mean_tu"] for s in sim["runs"][0]["strategies"]]
    rdma_row = readers.read_rdma_json(written["schedlab.rdma"])
    assert rdma_row.height == 1 and rdma_row["lat_us_count"][0] == 20 and rdma_row["role"][0] == "client"
    rdma = json.loads(written["schedlab.rdma"].read_text())
    side = json.loads((tmp_path / "flow.txt.json").read_text())
    assert (rdma["op"], rdma["poll"]) == (side["op"], side["poll"]) == ("WRITE", "event")
    schedlab.validate(json.loads((tmp_path / "rdma-server.json").read_text()), "schedlab.rdma", "rdma-server.json")
    with pytest.raises(ValueError, match="field op"):
        schedlab.validate(dict(rdma, op="Write"), "schedlab.rdma", "old.json")
    with pytest.raises(ValueError, match="not a tagged schedlab result"):
        (tmp_path / "untagged.json").write_text('{"clients": []}')
        schedlab.read_result(tmp_path / "untagged.json")
    for name, path in written.items():
        doc = _first_doc(path)
        required = readers.schema(name)["required"]
        field = next(f for f in required if f != "schema")
        with pytest.raises(ValueError, match=f"'{field}' is a required property"):
            schedlab.validate({k: v for k, v in doc.items() if k != field}, name, path)

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
