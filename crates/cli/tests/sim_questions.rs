//! `schedlab sim`'s answers to the report's open questions (§2 closed loop, §10 per-message α,
//! §11 in-order delivery, §13 tracking α), as a user runs them: what the output lets a researcher
//! believe, and the bad inputs that used to abort.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

fn stdout(args: &[&str]) -> String {
    let out = schedlab().args(args).arg("--quiet").assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// The rows of the table whose header line starts with `head`, split at tabs.
fn table<'a>(text: &'a str, head: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .skip_while(|l| !l.starts_with(head))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split('\t').collect())
        .collect()
}

fn json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn closed_loop_prints_and_stores_offered_and_carried_load_per_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("k.json");
    let text =
        stdout(&["sim", "--closed", "10", "-t", "90", "-a", "FIFO,10,SF", "--packets", "300k", "--json", k.to_str().unwrap()]);
    assert!(text.contains("Traffic = 90% is the offered load") && text.contains("qlen, time and load differ per row"), "{text}");
    let rows = table(&text, "α\toffered\tcarried");
    assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), ["FIFO", "10", "SF"], "{text}");
    for r in &rows {
        assert_eq!(r[1], "0.900");
        let carried: f64 = r[2].parse().unwrap();
        // N = 10 at 90%: the independent simulation carried 0.739 (FIFO); queueing delays keep
        // every strategy well below the offered load.
        assert!((0.6..0.86).contains(&carried), "{r:?}");
    }
    let fifo: f64 = rows[0][2].parse().unwrap();
    assert!((fifo - 0.739).abs() < 0.02, "FIFO carried {fifo}");
    let doc = json(&k);
    let run = &doc["runs"][0];
    assert_eq!(run["closed_apps"], 10);
    for f in ["sim_time_tu", "qlen_pkts", "qlen_ci95_pkts"] {
        assert!(run[f].is_null(), "run-level {f} has no single value in closed loop: {}", run[f]);
    }
    let sts = run["strategies"].as_array().unwrap();
    let times: Vec<f64> = sts.iter().map(|s| s["sim_time_tu"].as_f64().unwrap()).collect();
    assert!(times[0] != times[1] && times[1] != times[2], "each strategy has its own path: {times:?}");
    for s in sts {
        let (out, t) = (s["packets_out"].as_f64().unwrap(), s["sim_time_tu"].as_f64().unwrap());
        assert_eq!(s["offered_load"], 0.9);
        assert!((s["carried_load"].as_f64().unwrap() - out / t).abs() < 1e-12);
        assert!(s["qlen_ci95_pkts"].as_f64().unwrap() > 0.0 && s["packets_in"].as_u64().unwrap() >= 300_000);
    }
    // Open loop: the same fields, equal for every strategy; no closed-loop table.
    let o = dir.path().join("o.json");
    let text = stdout(&["sim", "-t", "50", "-a", "FIFO,10", "--packets", "100k", "--json", o.to_str().unwrap()]);
    assert!(!text.contains("offered"));
    let run = &json(&o)["runs"][0];
    let sts = run["strategies"].as_array().unwrap();
    assert_eq!(sts[0]["sim_time_tu"], run["sim_time_tu"]);
    assert_eq!(sts[1]["qlen_ci95_pkts"], run["qlen_ci95_pkts"]);
    assert!((sts[0]["carried_load"].as_f64().unwrap() - 0.5).abs() < 0.03);
}

#[test]
fn closed_loop_classic_prints_every_strategys_report_lines() {
    let count = |a: &str| {
        stdout(&["sim", "--closed", "10", "-a", a, "--classic", "--packets", "300k"])
            .lines()
            .filter(|l| l.starts_with(">>"))
            .count()
    };
    let (one, two) = (count("FIFO"), count("FIFO,10"));
    assert!(one > 5, "{one}");
    assert_eq!(two, 2 * one);
}

#[test]
fn apps_with_closed_is_defined_or_refused() {
    schedlab()
        .args(["sim", "--closed", "10", "--apps", "4", "--packets", "10k", "--quiet"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--apps 4 with --closed 10"));
    schedlab().args(["sim", "--closed", "4", "--apps", "4", "-a", "FIFO", "--packets", "10k", "--quiet"]).assert().success();
}

#[test]
fn in_order_with_one_application_is_refused_and_says_why() {
    schedlab()
        .args(["sim", "-t", "90", "-a", "FIFO,10,SF", "--in-order", "--packets", "10k", "--quiet"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--in-order with a single application").and(predicate::str::contains("FIFO")));
    schedlab().args(["sim", "--closed", "1", "--in-order", "--packets", "10k", "--quiet"]).assert().code(1);
}

#[test]
fn reordering_table_prints_zeros_and_marks_the_rows_in_order_does_not_apply_to() {
    let text =
        stdout(&["sim", "-t", "90", "-a", "RR,RR',FIFO,10,SF,track:1:100", "--apps", "4", "--in-order", "--packets", "200k"]);
    let rows = table(&text, "Messages delivered after a later message");
    assert_eq!(rows.len(), 6, "{text}");
    for r in &rows {
        let n: u64 = r[1].parse().unwrap();
        match r[0] {
            "RR" | "RR'" => assert!(n > 0 && r[2].contains("does not apply"), "{r:?}"),
            "FIFO" => assert!(n == 0 && r[2].contains("by construction"), "{r:?}"),
            _ => assert!(n == 0 && r[2].contains("kept by --in-order"), "{r:?}"),
        }
    }
    // Without --in-order the alpha strategies do reorder; every count is printed.
    let text = stdout(&["sim", "-t", "90", "-a", "FIFO,10", "--apps", "4", "--packets", "200k"]);
    let rows = table(&text, "Messages delivered after a later message");
    assert_eq!(rows[0][..2], ["FIFO", "0"]);
    assert!(rows[1][1].parse::<u64>().unwrap() > 0);
}

/// Tracking's average latency within 3% of the best fixed α's, and its lat20 below SF's.
fn tracking_meets_section_13(traffic: &str, packets: &str) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("t.json");
    let text =
        stdout(&["sim", "-t", traffic, "-a", "30,100,SF,track:1:100", "--packets", packets, "--json", j.to_str().unwrap()]);
    let rows = table(&text, "α\tqlen");
    let get = |label: &str, col: usize| -> f64 { rows.iter().find(|r| r[0] == label).unwrap()[col].parse().unwrap() };
    let best = get("30", 8).min(get("100", 8));
    let track = get("track1-100", 8);
    assert!(track <= 1.03 * best, "{traffic}%: tracking {track} vs best fixed {best}");
    assert!(get("track1-100", 7) < get("SF", 7), "{traffic}%: lat20 tracking vs SF");
    // The α the run chose is in the text and the JSON.
    let chosen = table(&text, "α\tmean\tp10\tp50\tp90");
    assert_eq!(chosen.len(), 1);
    assert_eq!(chosen[0][0], "track1-100");
    let doc = json(&j);
    let a = &doc["runs"][0]["strategies"][3]["alpha_chosen"];
    let mean = a["mean"].as_f64().unwrap();
    assert!((1.0..=100.0).contains(&mean) && a["p10"].as_f64().unwrap() <= a["p90"].as_f64().unwrap(), "{a}");
    assert!(doc["runs"][0]["strategies"][0]["alpha_chosen"].is_null());
}

#[test]
fn tracking_is_near_the_best_fixed_alpha_at_50_percent() {
    tracking_meets_section_13("50", "4M");
}

#[test]
fn tracking_is_near_the_best_fixed_alpha_at_90_percent() {
    tracking_meets_section_13("90", "4M");
}

#[test]
fn tracking_is_near_the_best_fixed_alpha_at_95_percent() {
    tracking_meets_section_13("95", "4M");
}

#[test]
fn tracking_at_insertion_is_kept_and_labelled_apart() {
    let text = stdout(&["sim", "-t", "50", "-a", "track:1:100,track-insert:1:100", "--packets", "300k", "--classic"]);
    let rows = table(&text, "α\tqlen");
    let avlat = |i: usize| rows[i][8].parse::<f64>().unwrap();
    assert_eq!((rows[0][0], rows[1][0]), ("track1-100", "track-insert1-100"));
    assert!(avlat(0) < avlat(1), "the current-α rule beats the insertion rule: {} vs {}", avlat(0), avlat(1));
    // The listing's lines name them instead of printing HIGH (indistinguishable from α = 100).
    assert!(text.lines().any(|l| l.starts_with(">> 50 track1-100 ")));
    assert!(text.lines().any(|l| l.starts_with(">> 50 track-insert1-100 ")));
    assert!(!text.lines().any(|l| l.starts_with(">> 50 100 ")));
}

#[test]
fn per_message_alpha_gets_its_own_label_and_latency_per_class_and_length() {
    let text = stdout(&["sim", "-t", "90", "-a", "10", "--msg-alpha", "1:50,100:50", "--packets", "300k", "--classic"]);
    assert!(text.lines().any(|l| l.starts_with(">> 90 prio ")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with(">> 90 -3 ")));
    let rows = table(&text, "α\tclass\tlat1");
    let prio: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "prio").collect();
    assert_eq!(prio.len(), 2, "{text}");
    assert!(prio[0][1].starts_with("0:α=1") && prio[1][1].starts_with("1:α=100"));
    let lat1 = |r: &Vec<&str>| r[2].split('±').next().unwrap().parse::<f64>().unwrap();
    assert!(lat1(prio[0]) < lat1(prio[1]), "short messages of the low-α class go first");
    schedlab()
        .args(["sim", "--msg-alpha", "1:50", "--packets", "10k", "--quiet"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--msg-alpha percentages sum to 50"));
}

#[test]
fn huge_application_counts_fail_fast_under_a_memory_limit() {
    let bin = assert_cmd::cargo::cargo_bin("schedlab");
    for (opt, n) in [("--apps", "4294967295"), ("--closed", "4294967295"), ("--closed", "100000000")] {
        // Fast means little CPU time, which other processes cannot stretch the way they stretch
        // wall time: `ulimit -t 1` kills with SIGXCPU after one CPU second (no exit code 1 then).
        let script =
            format!("ulimit -v 4000000; ulimit -t 1; exec '{}' sim {opt} {n} -a FIFO --packets 200k --quiet", bin.display());
        Command::new("bash")
            .args(["-c", &script])
            .assert()
            .code(1)
            .stderr(predicate::str::contains(format!("{opt} {n}: at most 1000000 applications")));
    }
    // The bound itself runs within the limit.
    let script =
        format!("ulimit -v 4000000; exec '{}' sim --apps 1000000 -a FIFO,10 --packets 100k --quiet --brief", bin.display());
    Command::new("bash").args(["-c", &script]).assert().success();
}

#[test]
fn tracking_limits_inf_and_huge_gain() {
    let text = stdout(&["sim", "-a", "track:1:inf", "--packets", "50k", "--brief"]);
    assert!(text.lines().any(|l| l.starts_with("track1-inf\t")), "{text}");
    let out = schedlab().args(["sim", "-a", "track:1:100:1e308", "--packets", "10k", "--quiet"]).assert().code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("GAIN 1e308 must be") && err.len() < 400, "{err}");
}
