//! `schedlab sim` and `schedlab bench` as a user runs them.

use assert_cmd::Command;
use predicates::prelude::*;

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

#[test]
fn default_style_table_has_the_reports_shape() {
    let out = schedlab().args(["sim", "--packets", "200k", "--quiet"]).assert().success().get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("Traffic = 90%; packets = 200,0"), "{text}");
    assert!(text.contains("α\tqlen\tlat1\tlat2\tlat3\tlat4\tlat5\tlat20\tavlat"));
    let rows: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("α\tqlen")).skip(1).take_while(|l| !l.is_empty()).collect();
    let labels: Vec<&str> = rows.iter().map(|r| r.split('\t').next().unwrap()).collect();
    assert_eq!(labels, ["RR'", "RR", "FIFO", "1", "2", "3", "6", "10", "20", "30", "60", "100", "SF"]);
    for r in rows {
        assert_eq!(r.split('\t').count(), 9, "{r}");
    }
    assert!(text.contains("seed 1"));
    assert!(text.contains("Fairness (§12)"));
    assert!(text.contains("95% confidence half-widths"));
}

#[test]
fn listing_flags_work_verbatim() {
    let out = schedlab()
        .args([
            "sim",
            "-a",
            "-2",
            "-a",
            "-1",
            "-a",
            "0",
            "-a",
            "10",
            "-a",
            "1e6",
            "-t",
            "50",
            "-q",
            "100",
            "-m",
            "1",
            "5",
            "90",
            "-m",
            "20",
            "20",
            "10",
            "--packets",
            "100k",
            "--classic",
            "--quiet",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("α\tqlen")).skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 5);
    assert!(rows[4].starts_with("SF\t"));
    // The listing's `>>` lines: traffic, alpha, qlen*100, packets in, packets out, lat*100..., avg*100.
    let last: Vec<&str> = text.lines().filter(|l| l.starts_with(">> 50 1e+06 ")).collect();
    assert!(!last.is_empty(), "{text}");
    assert_eq!(last.last().unwrap().split_whitespace().count(), 1 + 5 + 6 + 1);
}

#[test]
fn several_levels_json_csv_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let plots = dir.path().join("figs");
    schedlab()
        .args(["sim", "--traffic", "50,95", "--packets", "100k", "--seed", "42", "--quiet", "--brief"])
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--plot")
        .arg(&plots)
        .assert()
        .success()
        .stdout(predicate::str::contains("Traffic = 50%").and(predicate::str::contains("Traffic = 95%")));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["seed"], 42);
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert!(v["runs"][0]["strategies"][0]["overall"]["mean_tu"].as_f64().unwrap() > 0.0);
    assert!(v["machine"]["kernel"].as_str().is_some());
    let c = std::fs::read_to_string(&csv).unwrap();
    assert!(c.starts_with("traffic_pct,seed,strategy,listing_alpha,len_pkts,count,mean_lat_tu"));
    assert_eq!(c.lines().count(), 1 + 2 * 13 * 7);
    for f in ["length-vs-latency-50.svg", "length-vs-latency-95.svg", "traffic-vs-latency.svg", "traffic-vs-relative-latency.svg"]
    {
        let svg = std::fs::read_to_string(plots.join(f)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("data-name=\"SF\""), "{f}");
    }
}

#[test]
fn open_questions_modes_run() {
    schedlab()
        .args([
            "sim",
            "-t",
            "90",
            "--packets",
            "100k",
            "--quiet",
            "--alphas",
            "FIFO,10,track:1:100,SF",
            "--msg-alpha",
            "1:50,100:50",
            "--apps",
            "4",
            "--in-order",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("track1-100").and(predicate::str::contains("prio")).and(predicate::str::contains("class0")),
        );
    schedlab()
        .args(["sim", "-t", "90", "--packets", "100k", "--quiet", "--closed", "16", "--alphas", "RR,SF"])
        .assert()
        .success();
    let dir = tempfile::tempdir().unwrap();
    let tr = dir.path().join("trace.txt");
    std::fs::write(&tr, "# time length app\n0 3 0\n0.5 1 1\n0.7 20 0\n4 2 1\n").unwrap();
    schedlab().args(["sim", "--quiet", "--trace"]).arg(&tr).assert().success().stdout(predicate::str::contains("lat20"));
    let d = dir.path().join("dist.txt");
    std::fs::write(&d, "1 1 50\n8 8 50\n").unwrap();
    schedlab()
        .args(["sim", "--quiet", "--packets", "50k", "--dist"])
        .arg(&d)
        .assert()
        .success()
        .stdout(predicate::str::contains("lat8"));
}

#[test]
fn bad_input_is_refused_clearly() {
    let cases: &[(&[&str], &str)] = &[
        (&["sim", "-t", "0"], "outside (0, 100)"),
        (&["sim", "-t", "100"], "outside (0, 100)"),
        (&["sim", "--traffic", "50,120"], "outside (0, 100)"),
        (&["sim", "-m", "1", "5", "90"], "sum to 90"),
        (&["sim", "-m", "0", "5", "100"], "lengths must be whole packets >= 1"),
        (&["sim", "-m", "-3", "5", "100"], "lengths must be whole packets >= 1"),
        (&["sim", "--alphas", "bogus"], "unknown policy 'bogus'"),
        (&["sim", "-a", "-7"], "negative alpha: only -2 (RR') and -1 (RR)"),
        (&["sim", "--frobnicate"], "unexpected argument"),
        (&["sim", "--packets", "0"], "between 1 and"),
        (&["sim", "--dist", "/nonexistent/dist.txt"], "cannot read /nonexistent/dist.txt"),
        (&["sim", "--trace", "/nonexistent/trace.txt"], "cannot read /nonexistent/trace.txt"),
        (&["sim", "-q", "0"], "positive"),
        (&["sim", "--alphas", "prio"], "needs --msg-alpha"),
        (&["bench", "-t", "101"], "outside (0, 100)"),
    ];
    for (args, msg) in cases {
        schedlab()
            .args(*args)
            .assert()
            .failure()
            .stderr(predicate::str::contains(*msg).and(predicate::str::contains("panicked").not()));
    }
    let dir = tempfile::tempdir().unwrap();
    let tr = dir.path().join("bad.txt");
    std::fs::write(&tr, "0 3\n1 zero\n").unwrap();
    schedlab().args(["sim", "--trace"]).arg(&tr).assert().failure().stderr(predicate::str::contains("bad.txt:2: field 'LENGTH'"));
}

/// `--bytes-per-packet` cuts byte tables into packets; given with a table in packets (W5,
/// pFabric) it is refused before anything runs, naming the value and the workload, not ignored.
#[test]
fn bytes_per_packet_with_a_packet_table_is_refused() {
    for (w, bpp) in [("w5", "1442"), ("pfabric-websearch", "1460"), ("datamining", "9000")] {
        let name = if w == "datamining" { "pfabric-datamining" } else { w };
        schedlab()
            .args(["sim", "--workload", w, "--bytes-per-packet", bpp, "-t", "50", "-a", "FIFO", "--packets", "10k", "--quiet"])
            .assert()
            .code(1)
            .stdout(predicate::str::is_empty())
            .stderr(
                predicate::str::contains(format!(
                    "--bytes-per-packet: {name} is measured in packets, so bytes per packet {bpp} does not apply: drop it"
                ))
                .and(predicate::str::contains("panicked").not()),
            );
    }
    // A byte table takes it, and the run records it.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("w2.json");
    schedlab()
        .args(["sim", "--workload", "w2", "--bytes-per-packet", "1442", "-t", "50", "-a", "FIFO", "--packets", "10k", "--quiet"])
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["runs"][0]["workload"]["bytes_per_packet"], 1442, "{}", v["runs"][0]["workload"]);
}

#[test]
fn bench_reports_a_rate_and_a_baseline_ratio() {
    schedlab()
        .args(["bench", "--packets", "200k", "--repeat", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("M arrival packets/s").and(predicate::str::contains("ratio")));
}

#[test]
fn help_lists_the_commands() {
    schedlab().arg("--help").assert().success().stdout(predicate::str::contains("sim").and(predicate::str::contains("sched")));
    schedlab().args(["sim", "--help"]).assert().success().stdout(predicate::str::contains("--traffic"));
    schedlab().arg("nonsense").assert().failure().stderr(predicate::str::contains("unknown command"));
}

/// A named workload's run keeps size buckets: the CSV carries each bucket's size percentiles and
/// slowdowns, and the page (from the JSON and from the CSV) has the slowdown section with its
/// mean and p99 figures.
#[test]
fn workload_csv_and_page_have_the_slowdown_by_size() {
    let d = tempfile::tempdir().unwrap();
    let (json, csv, page) = (d.path().join("w.json"), d.path().join("w.csv"), d.path().join("w.html"));
    schedlab()
        .args(["sim", "--workload", "w4", "-t", "50", "-a", "FIFO,SF", "--packets", "300k", "--quiet", "--brief"])
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .assert()
        .success();
    let c = std::fs::read_to_string(&csv).unwrap();
    let mut lines = c.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[13..], ["bucket_pct_low", "bucket_pct_high", "slowdown_mean", "slowdown_p50", "slowdown_p99"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let buckets: Vec<&Vec<&str>> = rows.iter().filter(|r| r[4] != "0").collect();
    assert!(buckets.len() >= 2 * 5, "{} bucket rows", buckets.len());
    for r in &buckets {
        let (lo, hi): (f64, f64) = (r[13].parse().unwrap(), r[14].parse().unwrap());
        assert!((0.0..1.0).contains(&lo) && lo < hi && hi <= 1.0, "{r:?}");
        // A packet takes at least 0.5 time units, so (latency + 1) / length > 0.5.
        let (mean, p50, p99): (f64, f64, f64) = (r[15].parse().unwrap(), r[16].parse().unwrap(), r[17].parse().unwrap());
        assert!(mean > 0.5 && p50 > 0.5 && p99 >= p50, "{r:?}");
    }
    assert!(rows.iter().filter(|r| r[4] == "0").all(|r| r[13].is_empty()), "the all-messages rows have no bucket");
    for input in [&json, &csv] {
        schedlab().arg("report").arg(input).arg("-o").arg(&page).assert().success();
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains("Slowdown by message size"), "{}", input.display());
        // The JSON names the workload; the CSV has no workload column.
        let level = if input == &json { "w4, 50% load" } else { "50% load" };
        for stat in ["mean", "p99"] {
            assert!(html.contains(&format!("{stat} slowdown by message size ({level})")), "{}: {stat}", input.display());
        }
    }
}
