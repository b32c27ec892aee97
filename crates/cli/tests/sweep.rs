//! CLI tests of `schedlab sweep` and `schedlab sweep merge`.

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;

fn bin() -> Command {
    let mut c = Command::cargo_bin("schedlab").unwrap();
    c.timeout(Duration::from_secs(120));
    c
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn csv(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| l.split(',').map(String::from).collect()).collect()
}

fn column(t: &[Vec<String>], name: &str) -> usize {
    t[0].iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name}"))
}

const SMALL: &str = "traffic = [50, 90]\nstrategies = [\"RR\", \"FIFO\", 10, \"SF\"]\npackets = \"20k\"\nseeds = [3]\n";

#[test]
fn sweep_rows_equal_the_simulators_own_csv() {
    let d = tempfile::tempdir().unwrap();
    let spec = write(d.path(), "s.toml", SMALL);
    let out = d.path().join("o.csv");
    bin().args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]).assert().success();
    let t = csv(&out);
    let sim_csv = d.path().join("sim.csv");
    bin()
        .args(["sim", "--traffic", "50,90", "--alphas", "RR,FIFO,10,SF", "--packets", "20k", "--seed", "3", "--brief"])
        .args(["--csv", sim_csv.to_str().unwrap()])
        .assert()
        .success();
    let s = csv(&sim_csv);
    assert_eq!(t.len(), s.len(), "one row per (cell, strategy, length)");
    for name in ["traffic_pct", "seed", "strategy", "len_pkts", "mean_lat_tu", "max_lat_tu", "packets_in"] {
        let (a, b) = (column(&t, name), column(&s, name));
        for (rt, rs) in t.iter().zip(&s).skip(1) {
            if name == "strategy" {
                assert_eq!(rt[a], rs[b], "{name}");
            } else {
                // The simulator's CSV rounds (6 decimals for means, 3 for maxima); the sweep keeps every digit.
                let (x, y): (f64, f64) = (rt[a].parse().unwrap(), rs[b].parse().unwrap());
                assert!((x - y).abs() < 1e-3, "{name}: {x} vs {y}");
            }
        }
    }
    let v = column(&t, "schedlab_version");
    assert!(t[1][v].starts_with(|c: char| c.is_ascii_digit()));
}

#[test]
fn bad_specs_fail_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o.csv");
    for (text, needle) in [
        ("trafic = [50]\npackets = 1000\n", "unknown field `trafic`"),
        ("traffic = []\npackets = 1000\n", "key 'traffic': empty list"),
        ("traffic = [50]\npackets = 1000\nseeds = [1]\nreplications = 3\n", "key 'replications': conflicts with seeds"),
        (
            "traffic = [50]\npackets = 1000\n[distributions.m]\nfile = \"missing.txt\"\n",
            "key 'distributions.m.file': cannot read",
        ),
        ("traffic = [50]\npackets = 1000\nstrategies = [\"RR\", \"warp\"]\n", "key 'strategies': unknown policy 'warp'"),
    ] {
        let spec = write(d.path(), "bad.toml", text);
        bin()
            .args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .assert()
            .failure()
            .stderr(predicate::str::contains(needle).and(predicate::str::contains("bad.toml")));
        assert!(!out.exists() && !d.path().join("o.csv.journal").exists(), "nothing ran for {text:?}");
    }
    let spec = write(d.path(), "ok.toml", SMALL);
    bin()
        .args(["sweep", spec.to_str().unwrap(), "--out", "o.txt"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(".csv or .parquet"));
    bin().args(["sweep", spec.to_str().unwrap(), "--out", "o.csv", "--shard", "3/2"]).assert().code(2);
}

#[test]
fn an_interrupted_sweep_resumes_without_recomputing_finished_cells() {
    let d = tempfile::tempdir().unwrap();
    // Eight cells, one worker: slow enough to be killed in the middle.
    let spec = write(
        d.path(),
        "s.toml",
        "traffic = [50, 60, 70, 80]\nstrategies = [\"RR\", 10]\npackets = \"400k\"\nreplications = 2\n",
    );
    let out = d.path().join("o.csv");
    let journal = d.path().join("o.csv.journal");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "1", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let lines = |p: &Path| std::fs::read_to_string(p).map(|s| s.lines().count()).unwrap_or(0);
    while lines(&journal) < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let before = std::fs::read_to_string(&journal).unwrap();
    let kept = before.lines().count() - 1;
    assert!(!out.exists(), "no table from an unfinished sweep");
    assert!((2..8).contains(&kept), "killed after {kept} cells (expected some, not all)");
    let a =
        bin().args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "2"]).assert().success().stderr(
            predicate::str::contains(format!("{kept} already finished"))
                .and(predicate::str::contains(format!("running {}", 8 - kept))),
        );
    drop(a);
    let after = std::fs::read_to_string(&journal).unwrap();
    assert!(after.starts_with(before.trim_end_matches(|c| c != '\n')), "finished cells were kept, not rewritten");
    assert_eq!(after.lines().count(), 9);
    // Same table as one uninterrupted run.
    let out2 = d.path().join("fresh.csv");
    bin().args(["sweep", spec.to_str().unwrap(), "--out", out2.to_str().unwrap()]).assert().success();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), std::fs::read_to_string(&out2).unwrap());
    // A re-run of a finished sweep runs nothing.
    bin()
        .args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .assert()
        .success()
        .stderr(predicate::str::contains("8 already finished").and(predicate::str::contains("running 0")));
    // A changed spec is not mixed into the old journal.
    let spec2 = write(
        d.path(),
        "s.toml",
        "traffic = [50, 60, 70, 80]\nstrategies = [\"RR\", 10]\npackets = \"400k\"\nreplications = 3\n",
    );
    bin()
        .args(["sweep", spec2.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains("belongs to another sweep"));
}

#[test]
fn shards_merge_into_the_whole_and_bad_merges_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let spec =
        write(d.path(), "s.toml", "traffic = [10, 50, 90]\nstrategies = [\"FIFO\", 10]\npackets = \"10k\"\nreplications = 2\n");
    let s = spec.to_str().unwrap();
    let whole = d.path().join("whole.csv");
    bin().args(["sweep", s, "--out", whole.to_str().unwrap()]).assert().success();
    let mut parts = Vec::new();
    for (i, ext) in [(1, "csv"), (2, "parquet"), (3, "csv")] {
        let p = d.path().join(format!("part{i}.{ext}"));
        bin().args(["sweep", s, "--out", p.to_str().unwrap(), "--shard", &format!("{i}/3")]).assert().success();
        parts.push(p.to_str().unwrap().to_string());
    }
    let merged = d.path().join("merged.csv");
    bin().args(["sweep", "merge"]).args(&parts).args(["--out", merged.to_str().unwrap()]).assert().success();
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), std::fs::read_to_string(&whole).unwrap());
    // Parquet out, then back to CSV: the same table.
    let mp = d.path().join("merged.parquet");
    bin().args(["sweep", "merge"]).args(&parts).args(["--out", mp.to_str().unwrap()]).assert().success();
    let back = d.path().join("back.csv");
    bin().args(["sweep", "merge", mp.to_str().unwrap(), "--out", back.to_str().unwrap()]).assert().success();
    assert_eq!(std::fs::read_to_string(&back).unwrap(), std::fs::read_to_string(&whole).unwrap());
    // Overlap, missing cells, another sweep.
    bin()
        .args(["sweep", "merge", &parts[0], &parts[1], &parts[0], "--out", merged.to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains("overlapping parts"));
    bin()
        .args(["sweep", "merge", &parts[0], &parts[1], "--out", merged.to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cells are missing"));
    bin().args(["sweep", "merge", &parts[0], &parts[1], "--partial", "--out", merged.to_str().unwrap()]).assert().success();
    let other =
        write(d.path(), "o.toml", "traffic = [10, 50, 90]\nstrategies = [\"FIFO\", 10]\npackets = \"11k\"\nreplications = 2\n");
    let op = d.path().join("other3.csv");
    bin().args(["sweep", other.to_str().unwrap(), "--out", op.to_str().unwrap(), "--shard", "3/3"]).assert().success();
    bin()
        .args(["sweep", "merge", &parts[0], &parts[1], op.to_str().unwrap(), "--out", merged.to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains("parts of different sweeps"));
}

#[test]
fn the_shipped_specs_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (name, cells) in [("report.toml", 10), ("quick.toml", 10)] {
        let spec = root.join("sweeps").join(name);
        let a = bin().args(["sweep", spec.to_str().unwrap(), "--out", "x.csv", "--list"]).assert().success();
        let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
        assert_eq!(out.lines().count(), cells, "{name}");
    }
}

#[test]
fn ctrl_c_keeps_finished_cells_and_exits_130() {
    let d = tempfile::tempdir().unwrap();
    let spec = write(
        d.path(),
        "s.toml",
        // A tiny first cell (its journal line is the event to wait for), then 4 G packets (minutes
        // of work): the signal always lands while the second cell runs, however fast the machine.
        "strategies = [\"RR\", 10]\n[[grid]]\ntraffic = [50]\npackets = \"20k\"\n[[grid]]\ntraffic = [50]\npackets = \"4G\"\n",
    );
    let out = d.path().join("o.parquet");
    let journal = d.path().join("o.parquet.journal");
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "1", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let lines = |p: &Path| std::fs::read_to_string(p).map(|s| s.lines().count()).unwrap_or(0);
    while lines(&journal) < 2 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no finished cell in a minute");
        std::thread::sleep(Duration::from_millis(5));
    }
    StdCommand::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted: 1 of 2 cells finished") && err.contains("run the same command again"), "{err}");
    assert!(!out.exists());
    assert_eq!(lines(&journal), 2, "the finished cell is kept");
}

fn stdout(args: &[&str]) -> String {
    let a = bin().args(args).assert().success();
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

/// A sweep over a named workload records in every row the table's reading, bytes per packet,
/// checksum, source and commit: those `schedlab workloads w3` shows and `sim --workload w3 --json`
/// records. A row of the report's mix leaves them empty. The five columns follow `mean_len_pkts`.
#[test]
fn workload_rows_record_the_workloads_provenance() {
    let d = tempfile::tempdir().unwrap();
    let spec =
        write(d.path(), "s.toml", "traffic = [50]\nstrategies = [\"FIFO\"]\npackets = \"5k\"\nlengths = [\"w3\", \"report\"]\n");
    let out = d.path().join("o.csv");
    bin().args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]).assert().success();
    let t = csv(&out);
    let i = column(&t, "mean_len_pkts");
    assert_eq!(
        t[0][i + 1..i + 6],
        ["workload_reading", "workload_bytes_per_pkt", "workload_checksum", "workload_source", "workload_commit"]
    );
    let at = |r: &[String], name: &str| r[column(&t, name)].clone();
    let (w3, report): (Vec<&Vec<String>>, Vec<&Vec<String>>) = t[1..].iter().partition(|r| at(r, "lengths") == "w3");
    assert!(!w3.is_empty() && !report.is_empty());
    // What the simulator records of W3 (sim --json's `workload`).
    let sim = d.path().join("sim.json");
    bin()
        .args(["sim", "--workload", "w3", "--traffic", "50", "--alphas", "FIFO", "--packets", "2000", "--brief"])
        .args(["--json", sim.to_str().unwrap()])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&sim).unwrap()).unwrap();
    let w = &v["length_distribution"]["workload"];
    let want = [
        ("workload_reading", w["reading"].as_str().unwrap().to_string()),
        ("workload_bytes_per_pkt", w["bytes_per_packet"].as_u64().unwrap().to_string()),
        ("workload_checksum", w["checksum"].as_str().unwrap().to_string()),
        ("workload_source", w["source"].as_str().unwrap().to_string()),
        ("workload_commit", w["commit"].as_str().unwrap().to_string()),
    ];
    for r in &w3 {
        for (name, value) in &want {
            assert_eq!(&at(r, name), value, "{name}");
        }
    }
    // ... and what `schedlab workloads` shows of it: W3 is a byte table read as a step CDF at
    // 1460 B/packet by default, its checksum, its source and commit.
    let one = stdout(&["workloads", "w3"]);
    let all = stdout(&["workloads"]);
    let line = all.lines().find(|l| l.starts_with("w3 ")).expect("a w3 line");
    let r = w3[0];
    assert_eq!((at(r, "workload_reading").as_str(), at(r, "workload_bytes_per_pkt").as_str()), ("step", "1460"));
    assert!(line.split_whitespace().nth(3) == Some("step"), "the listing's rule: {line}");
    assert!(one.contains("at 1460 B/packet"), "{one}");
    let sum = at(r, "workload_checksum");
    assert!(sum.starts_with("fnv1a64:") && sum.len() == 24, "{sum}");
    assert!(one.contains(&sum) && line.contains(&sum), "{one}\n{line}");
    let (source, commit) = (at(r, "workload_source"), at(r, "workload_commit"));
    assert!(line.contains(&format!("{source} @ {}", &commit[..12])), "{line}");
    assert!(one.contains(&commit) && commit.len() == 40, "{one}");
    let lib = schedlab_workload::named("w3").unwrap();
    assert_eq!((sum, source), (lib.checksum_hex(), format!("{}/{}", lib.provenance.repository, lib.provenance.path)));
    // The report's mix is no workload: the five columns are empty.
    for r in &report {
        for (name, _) in &want {
            assert_eq!(at(r, name), "", "{name}");
        }
    }
    // Parquet and JSON lines hold the same (bytes per packet null for the report's mix), read
    // back through `merge`. (Only these columns: serde_json may read a float a last ulp off.)
    let cols = |t: &[Vec<String>]| {
        t.iter().map(|r| [&r[i - 1..i], &r[i + 1..i + 6]].concat()).collect::<Vec<_>>()
        // lengths, the five
    };
    for ext in ["parquet", "jsonl"] {
        let o = d.path().join(format!("o.{ext}"));
        bin().args(["sweep", spec.to_str().unwrap(), "--out", o.to_str().unwrap(), "-q"]).assert().success();
        let back = d.path().join(format!("back-{ext}.csv"));
        bin().args(["sweep", "merge", o.to_str().unwrap(), "--out", back.to_str().unwrap()]).assert().success();
        assert_eq!(cols(&csv(&back)), cols(&t), "{ext}");
    }
    let jsonl = std::fs::read_to_string(d.path().join("o.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(rows.iter().any(|r| r["lengths"] == "report" && r["workload_bytes_per_pkt"].is_null()));
    assert!(rows.iter().any(|r| r["lengths"] == "w3" && r["workload_bytes_per_pkt"] == 1460));
}

/// A table, merge part or journal written before the workload columns is refused with the
/// columns it lacks, never read value by value into the wrong columns.
#[test]
fn tables_and_journals_without_the_workload_columns_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let spec = write(d.path(), "s.toml", "traffic = [50]\nstrategies = [\"FIFO\"]\npackets = \"2k\"\nlengths = [\"w3\"]\n");
    let out = d.path().join("o.csv");
    bin().args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]).assert().success();
    // The same table without the five columns, as the previous schedlab wrote it.
    let t = csv(&out);
    let keep: Vec<usize> = (0..t[0].len()).filter(|&i| !t[0][i].starts_with("workload_")).collect();
    assert_eq!(keep.len(), 31);
    let old: String = t.iter().map(|r| keep.iter().map(|&i| r[i].as_str()).collect::<Vec<_>>().join(",") + "\n").collect();
    let part = write(d.path(), "old.csv", &old);
    bin()
        .args(["sweep", "merge", part.to_str().unwrap(), "--out", d.path().join("m.csv").to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains("the columns differ from this schedlab's sweep table (no workload_reading, "));
    // Its journal: the first line without the columns, the rows 31 values wide.
    let journal = d.path().join("o.csv.journal");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines = text.lines();
    let mut head: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(head["columns"].as_array().map(Vec::len), Some(36), "the journal lists the table's columns");
    head.as_object_mut().unwrap().remove("columns");
    let mut entry: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    for r in entry["rows"].as_array_mut().unwrap() {
        let cells = r.as_array().unwrap().clone();
        *r = keep.iter().map(|&i| cells[i].clone()).collect();
    }
    std::fs::write(&journal, format!("{head}\n{entry}\n")).unwrap();
    std::fs::remove_file(&out).unwrap();
    bin()
        .args(["sweep", spec.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("holds rows with other columns than this schedlab's sweep table"));
    assert!(!out.exists());
}
