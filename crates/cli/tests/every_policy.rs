//! Every policy of the one vocabulary (`schedlab_policy::PolicySpec`, the table of
//! crates/policy/src/spec.rs) runs in all three front ends under its canonical name: the
//! simulator, the real harness and predict. Each run is small and bounded (a fraction of a
//! second of traffic, capped with `-d`), and every check is on what the run counted, never on
//! how fast the machine was: the simulator labels its row with the policy's label, the harness
//! records the policy's name and label and moves packets, and predict's harness releases exactly
//! the simulator's packets in order (late passes are replayed as late, so this holds however
//! loaded the machine is).

use assert_cmd::Command;
use schedlab_policy::PolicySpec;

/// Each harness run spins on every core: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn schedlab(dir: &std::path::Path, cmd: &str) -> Command {
    let mut c = Command::cargo_bin("schedlab").unwrap();
    c.current_dir(dir).arg(cmd).timeout(std::time::Duration::from_secs(120));
    c
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Two clients with the report's length mix; under prio thread 0's messages carry α = 1 and
/// thread 1's α = 100 (the traffic file's `alpha:X` column).
const TRAFFIC: &str =
    "thread 0\n150ms 6M 1500 dist:report poisson alpha:1\nthread 1\n150ms 6M 1500 dist:report poisson alpha:100\n";

#[test]
fn the_table_names_every_policy_once() {
    let names: Vec<String> = PolicySpec::examples().iter().map(PolicySpec::name).collect();
    assert_eq!(
        names,
        [
            "fifo",
            "mrr",
            "rr'",
            "alpha:10",
            "sf",
            "track:1:100:1",
            "track-insert:1:100:1",
            "prio",
            "drr",
            "wf2qp",
            "qfq",
            "qfq+:8"
        ]
    );
}

#[test]
fn every_policy_runs_in_the_simulator_under_its_label() {
    let d = tempfile::tempdir().unwrap();
    for spec in PolicySpec::examples() {
        let name = spec.name();
        let mut cmd = schedlab(d.path(), "sim");
        cmd.args(["-a", &name, "--traffic", "80", "--packets", "20k", "--quiet", "--json", "s.json"]);
        if spec == PolicySpec::Prio {
            cmd.args(["--msg-alpha", "1:50,100:50"]);
        }
        cmd.assert().success();
        let v = json(&d.path().join("s.json"));
        let text = v.to_string();
        assert!(
            text.contains(&format!("\"label\":\"{}\"", spec.label())),
            "{name}: no row labelled {}: {text:.400}",
            spec.label()
        );
    }
}

#[test]
fn every_policy_runs_on_the_harness_under_its_name_and_label() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("w.txt"), TRAFFIC).unwrap();
    for spec in PolicySpec::examples() {
        let name = spec.name();
        schedlab(d.path(), "sched")
            .args(["-t", "2", "-f", "w.txt", "-b", "20M", "-q", "200", "-i", "0", "-c", "0", "-d", "2", "--no-timestamps"])
            .args(["--json", "r.json", "--", "-flows", "2", "-alg", &name])
            .assert()
            .success();
        let v = json(&d.path().join("r.json"));
        assert_eq!(v["alg"], name.as_str(), "{name}");
        assert_eq!(v["label"], spec.label().as_str(), "{name}");
        assert!(v["total_pkts"].as_u64().unwrap() > 0, "{name}: {}", v["total_pkts"]);
    }
}

#[test]
fn predict_runs_every_policy_and_the_harness_releases_the_simulators_packets_in_order() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("w.txt"), TRAFFIC).unwrap();
    let specs = PolicySpec::examples();
    let algs: Vec<String> = specs.iter().map(PolicySpec::name).collect();
    schedlab(d.path(), "predict")
        .args(["-t", "2", "-f", "w.txt", "-b", "20M", "-q", "200", "-i", "0", "-c", "0", "--seed", "3"])
        .args(["--algs", &algs.join(","), "--drain", "100ms", "--json", "p.json"])
        .assert()
        .success();
    let v = json(&d.path().join("p.json"));
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), specs.len());
    for (r, spec) in runs.iter().zip(&specs) {
        assert_eq!(r["alg"], spec.name().as_str());
        assert_eq!(r["label"], spec.label().as_str());
        let o = &r["order_check"];
        let n = o["harness_pkts"].as_u64().unwrap();
        assert!(n > 50, "{}: only {n} packets", r["alg"]);
        assert!(o["first_mismatch"].is_null(), "{}: harness and simulator differ: {o}", r["alg"]);
        assert!(o["simulator_pkts"].as_u64().unwrap() >= n, "{}: {o}", r["alg"]);
        assert!(!r["rows"].as_array().unwrap().is_empty(), "{}", r["alg"]);
    }
}
