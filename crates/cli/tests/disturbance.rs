//! Every harness command exports, per measuring thread, what disturbed it (switches, migrations,
//! the longest gap in its loop), and `predict --repeat` summarises its runs. The tests check the
//! fields and their consistency, not their values (which depend on the machine).

use assert_cmd::Command;

/// Each run spins on every core: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn schedlab(dir: &std::path::Path, cmd: &str) -> Command {
    let mut c = Command::cargo_bin("schedlab").unwrap();
    c.current_dir(dir).arg(cmd).timeout(std::time::Duration::from_secs(300));
    c
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// One exported thread: every field present, with its unit in the name, and consistent.
fn check_thread(d: &serde_json::Value) {
    for f in [
        "window_ns",
        "involuntary_switches",
        "voluntary_switches",
        "migrations",
        "loop_iterations",
        "max_gap_ns",
        "max_gap_end_ns",
    ] {
        assert!(d[f].is_u64(), "{f} missing in {d}");
    }
    assert!(d["mean_residual_ns"].is_f64() || d["mean_residual_ns"].is_u64(), "{d}");
    assert!(["proc_sched", "cpu_change"].contains(&d["migrations_source"].as_str().unwrap()), "{d}");
    assert!(d["max_gap_ns"].as_u64() <= d["window_ns"].as_u64(), "{d}");
    assert!(d["max_gap_end_ns"].as_u64() <= d["window_ns"].as_u64(), "{d}");
    assert!(!d["thread"].as_str().unwrap().is_empty());
}

#[test]
fn sched_and_predict_export_every_threads_disturbance() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("w.txt"), "thread all\n200ms 8M 1500 dist:report poisson\n").unwrap();
    let out = schedlab(d.path(), "sched")
        .args("-t 2 -f w.txt -b 20M -q 100 -i 0 -c 0 --no-timestamps --json s.json".split(' '))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("disturbance (per measuring thread") && text.contains("  sched: ") && text.contains("  client1: "),
        "{text}"
    );
    let s = json(&d.path().join("s.json"));
    let threads = s["disturbance"].as_array().unwrap();
    assert_eq!(threads.iter().map(|t| t["thread"].as_str().unwrap()).collect::<Vec<_>>(), ["sched", "client0", "client1"]);
    for t in threads {
        check_thread(t);
        assert!(t["loop_iterations"].as_u64().unwrap() > 0, "{t}");
    }

    // predict: per run, the threads and the verdict's fields; --repeat 2: a summary per algorithm.
    let out = schedlab(d.path(), "predict")
        .args("-t 1 -f w.txt -b 20M -q 100 -i 0 -c 0 --algs fifo,sf --repeat 2 --drain 20ms --json p.json".split(' '))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("run 2/2 sf: ") && text.contains("over 2 runs per algorithm"), "{text}");
    let p = json(&d.path().join("p.json"));
    assert_eq!(p["repeat"], 2);
    let runs = p["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for r in runs {
        let v = &r["verdict"];
        assert!(v["kept_up"].is_boolean() && v["disturbed"].is_boolean(), "{v}");
        // Kept up means no reason at all; disturbed always says why.
        assert_eq!(v["kept_up"].as_bool().unwrap(), v["reasons"].as_array().unwrap().is_empty(), "{v}");
        if v["disturbed"].as_bool().unwrap() {
            assert!(v["reasons"].as_array().unwrap().iter().any(|x| x.as_str().unwrap().starts_with("DISTURBED")), "{v}");
        }
        let threads = r["disturbance"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "{r}");
        threads.iter().for_each(check_thread);
    }
    let sums = p["summaries"].as_array().unwrap();
    assert_eq!(sums.len(), 2);
    for s in sums {
        let kept = s["kept"].as_u64().unwrap();
        assert_eq!(kept + s["set_aside"].as_array().unwrap().len() as u64, 2, "{s}");
        assert_eq!(s["kept_ratios"].as_array().unwrap().len() as u64, kept, "{s}");
        assert_eq!(s["ratio"].is_null(), kept == 0, "{s}");
    }
}

#[test]
fn the_primitive_benchmarks_export_their_threads_disturbance() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    schedlab(d.path(), "trylock").args("-n 2 -t 0.2 --no-pin --json t.json".split(' ')).assert().success();
    let t = json(&d.path().join("t.json"));
    let workers = t["run"]["workers"].as_array().expect("workers in the JSON");
    assert_eq!(workers.len(), 2);
    for w in workers {
        check_thread(&w["disturbance"]);
    }
    schedlab(d.path(), "notify").args("-n 2 --no-pin --json n.json".split(' ')).assert().success();
    let n = json(&d.path().join("n.json"));
    let run = &n["run"];
    check_thread(&run["sender"]["disturbance"]);
    check_thread(&run["receiver"]["disturbance"]);
}
