//! `schedlab sim`'s statistics as a reviewer uses them: replications, paired comparisons, theory
//! beside the model, steady-state warnings, and the input/output defects of issue 19.

use assert_cmd::Command;
use serde_json::Value;

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

fn run_json(args: &[&str]) -> (String, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = schedlab().args(args).arg("--quiet").arg("--json").arg(&json).assert().success().get_output().clone();
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap(), doc)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Done-when 1 (at 400k packets instead of 20M): differences with half-widths and verdicts in
/// text and JSON, with every replication and its seed.
#[test]
fn replications_with_a_paired_comparison() {
    let (text, _, doc) =
        run_json(&["sim", "-t", "95", "-a", "RR',10,FIFO", "--replications", "5", "--compare", "RR'", "--packets", "400k"]);
    assert!(text.contains("seeds 1..5 (5 independent replications)"), "{text}");
    assert!(text.contains("Paired differences from RR'"), "{text}");
    assert!(text.contains("across 5 replications (Student t, 4 degrees of freedom)"), "{text}");
    for s in ["10", "FIFO"] {
        let row = text.lines().find(|l| l.starts_with(&format!("{s}\tall\t"))).unwrap_or_else(|| panic!("{text}"));
        let verdict = row.split('\t').nth(5).unwrap();
        assert!(["lower than RR'", "higher than RR'", "no difference"].contains(&verdict), "{row}");
    }
    // Every replication, with its seed, in JSON and text.
    let reps = doc["replications"].as_array().unwrap();
    assert_eq!(reps.iter().map(|r| r["seed"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    for k in 1..=5 {
        assert!(text.contains(&format!("Replication seed {k}:")), "{text}");
    }
    let st = &doc["statistics"][0];
    assert_eq!(st["seeds"].as_array().unwrap().len(), 5);
    let cmp = &st["comparison"];
    assert_eq!(cmp["base"], "RR'");
    let rows = cmp["rows"].as_array().unwrap();
    let all10 = rows.iter().find(|r| r["strategy"] == "10" && r["len"] == 0).unwrap();
    // The difference is the mean of the replications' differences, each of which is the
    // difference of that replication's cumulative avlat.
    let per: Vec<f64> = all10["per_replication"].as_array().unwrap().iter().map(f).collect();
    assert_eq!(per.len(), 5);
    for (k, d) in per.iter().enumerate() {
        let strategies = reps[k]["runs"][0]["strategies"].as_array().unwrap();
        let avlat = |l: &str| f(&strategies.iter().find(|s| s["label"] == l).unwrap()["overall"]["mean_tu"]);
        assert!((d - (avlat("10") - avlat("RR'"))).abs() < 1e-9, "replication {k}");
    }
    let mean = per.iter().sum::<f64>() / 5.0;
    assert!((f(&all10["diff_tu"]) - mean).abs() < 1e-9);
    let sd = (per.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
    assert!((f(&all10["ci95_tu"]) - 2.776 * sd / 5f64.sqrt()).abs() < 1e-3 * f(&all10["ci95_tu"]).max(1e-9));
    let v = all10["verdict"].as_str().unwrap();
    let (d, h) = (f(&all10["diff_tu"]), f(&all10["ci95_tu"]));
    assert_eq!(
        v,
        if d + h < 0.0 {
            "lower"
        } else if d - h > 0.0 {
            "higher"
        } else {
            "no difference"
        }
    );
    // The mean table's cells are means over the replications.
    let runs = doc["runs"].as_array().unwrap();
    let q: Vec<f64> = reps.iter().map(|r| f(&r["runs"][0]["qlen_pkts"])).collect();
    assert!((f(&runs[0]["qlen_pkts"]) - q.iter().sum::<f64>() / 5.0).abs() < 1e-9);
}

/// One replication: the half-width comes from batch means of the paired differences, which on a
/// shared sample path is tighter than either strategy's own interval.
#[test]
fn paired_differences_are_tighter_than_separate_intervals() {
    let (text, _, doc) = run_json(&["sim", "-t", "90", "-a", "SF,10", "--compare", "SF", "--packets", "1M"]);
    assert!(text.contains("batch means of the paired differences (20 batches)"), "{text}");
    let st = &doc["statistics"][0];
    let row = st["comparison"]["rows"].as_array().unwrap().iter().find(|r| r["len"] == 0).unwrap().clone();
    let cell = |label: &str| {
        st["strategies"].as_array().unwrap().iter().find(|s| s["label"] == label).unwrap()["cells"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone()
    };
    let (a, b) = (cell("10"), cell("SF"));
    assert!((f(&row["diff_tu"]) - (f(&a["mean"]) - f(&b["mean"]))).abs() < 1e-9);
    assert!(f(&row["ci95_tu"]) < f(&a["ci95"]).max(f(&b["ci95"])), "{row} {a} {b}");
    assert_eq!(row["verdict"], "higher");
}

/// The report mix's FIFO queue length at 90% in closed form (M/G/1 with batch arrivals, by hand):
/// W_q = ρ·E[S²]/(2·E[S]·(1-ρ)) for the packet part, 0.9·1.25/(2·0.1) = 5.625, plus the batch part
/// (E[X²]-E[X])/(2·E[X]·(1-ρ)) = 45.2/(2·4.7·0.1) = 48.0851; L_q = λ·W_q = 0.9·53.7101 = 48.339.
const FIFO_QLEN_AT_90: f64 = 48.339_096;

/// Done-when 2 (at 3M packets instead of 50M): the analytic FIFO qlen at 90% is the closed-form
/// 48.339, and the simulated one is within its half-width of *that number* or flagged.
#[test]
fn theory_beside_fifo_at_90_percent() {
    let by_hand = 0.9 * (0.9 * 1.25 / (2.0 * 0.1) + 45.2 / (2.0 * 4.7 * 0.1));
    assert!((by_hand - FIFO_QLEN_AT_90).abs() < 1e-6, "{by_hand}");
    let (text, _, doc) = run_json(&["sim", "-t", "90", "-a", "FIFO", "--packets", "3M"]);
    let q = &doc["statistics"][0]["qlen"];
    let analytic = f(&q["analytic"]);
    assert!((analytic - FIFO_QLEN_AT_90).abs() < 1e-5, "the code's analytic qlen {analytic} vs 48.339 by hand");
    let (mean, ci95) = (f(&q["mean"]), f(&q["ci95"]));
    let off = (mean - FIFO_QLEN_AT_90).abs() > ci95;
    assert_eq!(q["flagged"].as_bool().unwrap(), off, "mean {mean} ± {ci95} vs 48.339");
    // And the simulation itself agrees with the closed form (seeded: the same run every time).
    assert!((mean - FIFO_QLEN_AT_90).abs() < 0.05 * FIFO_QLEN_AT_90, "simulated qlen {mean} vs 48.339");
    assert!((f(&doc["statistics"][0]["theory"]["qlen_pkts"]) - FIFO_QLEN_AT_90).abs() < 1e-5);
    let fifo = &doc["statistics"][0]["strategies"][0];
    assert_eq!(fifo["label"], "FIFO");
    for c in fifo["cells"].as_array().unwrap() {
        assert!(c["analytic"].is_number() && c["flagged"].is_boolean(), "{c}");
    }
    let theory = text.lines().find(|l| l.starts_with("FIFO (theory)\t")).unwrap_or_else(|| panic!("{text}"));
    assert!(theory.starts_with("FIFO (theory)\t48.34\t48.90\t"), "{theory}");
}

/// A cell with no half-width (its length occurred in one batch only) has theory beside it but no
/// verdict: `flagged` is absent in JSON and the text marks it `?`, not `*` (it read as a
/// disagreement before). 600 packets, seed 11: the 0.05% length of 50 arrives once.
#[test]
fn a_cell_without_a_half_width_is_undetermined() {
    let dir = tempfile::tempdir().unwrap();
    let dist = dir.path().join("rare.dist");
    std::fs::write(&dist, "1 1 99.95\n50 50 0.05\n").unwrap();
    let (text, _, doc) =
        run_json(&["sim", "-t", "50", "-a", "FIFO", "--packets", "600", "--seed", "11", "--dist", dist.to_str().unwrap()]);
    let cells = doc["statistics"][0]["strategies"][0]["cells"].as_array().unwrap();
    let rare = cells.iter().find(|c| c["len"] == 50).unwrap_or_else(|| panic!("{cells:?}"));
    assert!(rare["ci95"].is_null() && rare["analytic"].is_number(), "{rare}");
    assert!(rare.get("flagged").is_none(), "no half-width, no verdict: {rare}");
    let common = cells.iter().find(|c| c["len"] == 1).unwrap();
    assert!(common["flagged"].is_boolean(), "{common}");
    let row = text.lines().find(|l| l.starts_with("FIFO\t") && l.contains("±n/a")).unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("±n/a?") && !row.contains("±n/a*"), "{row}");
    assert!(text.contains("? = no half-width to judge by"), "{text}");
}

/// Done-when 3: 99.9% on a short run warns on stderr and in JSON (here 2M packets, far below
/// what the load needs, like 20M); 50% with 5M packets does not (only FIFO: qlen, which the
/// warnings read, is the same for every set of strategies on the shared path).
#[test]
fn short_runs_at_high_load_warn_and_long_enough_ones_do_not() {
    let (_, err, doc) = run_json(&["sim", "-t", "99.9", "-a", "FIFO", "--packets", "2M"]);
    assert!(err.contains("warning: traffic 99.9%") && err.contains("packets"), "{err}");
    let w = doc["warnings"].as_array().unwrap();
    assert!(!w.is_empty() && w[0].as_str().unwrap().contains("relaxation time"), "{w:?}");
    let needed = f(&doc["statistics"][0]["diagnostics"]["packets_needed"]);
    assert!(needed > 20e6, "20M packets at 99.9% must warn too: {needed}");
    assert_eq!(doc["statistics"][0]["qlen"]["flagged"], true, "2M packets at 99.9% are far from theory");

    let (_, err, doc) = run_json(&["sim", "-t", "50", "-a", "FIFO", "--packets", "5M"]);
    assert!(!err.contains("warning"), "{err}");
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 0);
    let r1 = f(&doc["statistics"][0]["diagnostics"]["qlen_lag1_autocorrelation"][0]);
    assert!(r1.abs() < 0.5, "{r1}");
}

#[test]
fn verbose_prints_the_batch_means_diagnostics_and_warmup_deletes_batches() {
    let out = schedlab()
        .args(["sim", "-t", "95", "-a", "FIFO", "--packets", "1M", "--warmup", "auto", "--verbose", "--quiet"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("lag-1 autocorrelation of the batch means: qlen "), "{text}");
    assert!(text.contains("relaxation time ≈ "), "{text}");
    assert!(text.contains("warm-up auto: MSER"), "{text}");
    let (text, _, doc) = run_json(&["sim", "-t", "80", "-a", "FIFO", "--packets", "1M", "--warmup", "200k"]);
    // 200k packets are the first 4 batches of 50k.
    assert_eq!(doc["statistics"][0]["warmup"]["batches_deleted"][0], 4);
    assert!(text.contains("Steady state after the warm-up"), "{text}");
    // The report's tables stay cumulative: the raw table's qlen is the run's.
    assert!((f(&doc["runs"][0]["qlen_pkts"]) - f(&doc["statistics"][0]["qlen"]["mean"])).abs() > 0.0);
}

#[test]
fn bad_statistics_options_are_usage_errors_naming_the_option() {
    for (args, needle) in [
        (vec!["--replications", "0"], "--replications 0"),
        (vec!["--warmup", "10k"], "--warmup 10k"),
        (vec!["--warmup", "soon"], "--warmup soon"),
        (vec!["--compare", "nonesuch"], "--compare nonesuch"),
    ] {
        let out = schedlab().arg("sim").args(&args).args(["--packets", "10k", "--quiet"]).assert().failure().get_output().clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Done-when 4: a strategy named twice runs once, with a note on stderr.
#[test]
fn a_strategy_named_twice_runs_once() {
    let out = schedlab()
        .args(["sim", "-a", "1e6,SF", "--packets", "50k", "--quiet", "--brief"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("SF\t")).count(), 1, "{text}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("-a SF names SF like -a 1e6: it is run once"), "{err}");
    let out = schedlab()
        .args(["sim", "-a", "prio,prio,FIFO", "--msg-alpha", "1:50,100:50", "--packets", "50k", "--quiet", "--brief"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("prio\t")).count(), 1, "{text}");
}

#[test]
fn sched_with_a_non_ascii_option_is_a_usage_error() {
    let out = schedlab().args(["sched", "-é"]).assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("unknown option '-é'") && !err.contains("panicked"), "{err}");
}

#[test]
fn whole_file_errors_name_the_file_without_a_line_0() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dist.txt");
    std::fs::write(&d, "1 5 50\n20 20 40\n").unwrap();
    let out = schedlab().arg("sim").arg("--dist").arg(&d).args(["--packets", "10k"]).assert().failure().get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(&format!("{}: length distribution percentages sum to 90", d.display())), "{err}");
    assert!(!err.contains(":0:"), "{err}");
}

/// Trace mode: the header gives the trace's own message count and measured load, not the
/// default packet count or a clamped 99.999%.
#[test]
fn trace_header_gives_the_traces_own_load_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.txt");
    // 400 messages of 2 packets, one every 4 time units: 800 packets over 1596 units = 50.1%.
    let text: String = (0..400).map(|i| format!("{} 2\n", i * 4)).collect();
    std::fs::write(&t, text).unwrap();
    let out = schedlab()
        .arg("sim")
        .arg("--trace")
        .arg(&t)
        .args(["-a", "FIFO", "--quiet", "--brief"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("400 messages, 800 packets over 1596 time units, measured load 50.125%"), "{text}");
    assert!(!text.contains("100,000,000") && !text.contains("99.999"), "{text}");
    assert!(text.contains("Traffic = 50.125%"), "{text}");
}

#[test]
fn csv_keeps_every_replication_and_the_means() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r.csv");
    schedlab()
        .args(["sim", "-a", "FIFO,SF", "--replications", "3", "--seed", "7", "--packets", "50k", "--quiet", "--brief"])
        .arg("--csv")
        .arg(&csv)
        .assert()
        .success();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut seeds: Vec<&str> = text.lines().skip(1).map(|l| l.split(',').nth(1).unwrap()).collect();
    seeds.dedup();
    assert_eq!(seeds, ["7", "8", "9", "mean"]);
}

/// With one replication and --brief the output is the report's table only, as before.
#[test]
fn brief_with_one_replication_is_the_raw_table_only() {
    let out = schedlab()
        .args(["sim", "-t", "50", "-a", "FIFO,SF", "--packets", "50k", "--quiet", "--brief"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(lines[0].starts_with("# schedlab sim: seed 1, 50,000 arrival packets per level;"));
    assert!(lines[2].starts_with("Traffic = 50%; packets = "));
}

/// `--json -`: stdout is the JSON document alone (the tables go to stderr), and the document
/// records the command line it came from.
#[test]
fn json_to_stdout_is_only_json_and_records_the_command_line() {
    let out = schedlab()
        .args(["sim", "-t", "50", "-a", "FIFO", "--packets", "50k", "--quiet", "--json", "-"])
        .assert()
        .success()
        .get_output()
        .clone();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    let argv: Vec<&str> = doc["argv"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(&argv[1..], ["sim", "-t", "50", "-a", "FIFO", "--packets", "50k", "--quiet", "--json", "-"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Traffic = 50%"), "the tables went to stderr");
}
