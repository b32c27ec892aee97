//! `--disturbance-csv FILE` on every harness command (sched, predict, trylock, notify, semtest,
//! burst, rdma): one row per measuring thread per run, the columns `run` then the disturbance
//! fields; and `sched --repeat N`: one line per run, the summary, the JSON with every run. The
//! checks are on rows, columns and their consistency with the JSON, not on the machine's values.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::Command;

const HEADER: &str = "run,thread,window_ns,involuntary_switches,voluntary_switches,migrations,migrations_source,loop_iterations,max_gap_ns,max_gap_end_ns,mean_residual_ns";

/// Each run spins on every core: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn schedlab(dir: &Path, cmd: &str) -> Command {
    let mut c = Command::cargo_bin("schedlab").unwrap();
    c.current_dir(dir).arg(cmd).timeout(std::time::Duration::from_secs(300));
    c
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The CSV's rows as (run, thread, cells), after checking the header and that every row has
/// every column with a value of its type.
fn rows(path: &Path) -> Vec<(String, String, Vec<String>)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(HEADER), "{text}");
    lines
        .map(|l| {
            let c: Vec<String> = l.split(',').map(String::from).collect();
            assert_eq!(c.len(), 11, "{l}");
            for (i, cell) in c.iter().enumerate() {
                match i {
                    0 | 1 => assert!(!cell.is_empty(), "{l}"),
                    6 => assert!(cell == "proc_sched" || cell == "cpu_change", "{l}"),
                    10 => assert!(cell.parse::<f64>().is_ok(), "{l}"),
                    _ => assert!(cell.parse::<u64>().is_ok(), "column {i} of {l}"),
                }
            }
            // The longest gap lies inside the window.
            assert!(c[8].parse::<u64>().unwrap() <= c[2].parse::<u64>().unwrap(), "{l}");
            (c[0].clone(), c[1].clone(), c)
        })
        .collect()
}

/// The JSON's threads as the CSV writes them: (thread, max_gap_ns, loop_iterations).
fn from_json(threads: &serde_json::Value) -> Vec<(String, String, String)> {
    threads
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["thread"].as_str().unwrap().to_string(), t["max_gap_ns"].to_string(), t["loop_iterations"].to_string()))
        .collect()
}

fn csv_threads(r: &[(String, String, Vec<String>)], run: &str) -> Vec<(String, String, String)> {
    r.iter().filter(|(k, _, _)| k == run).map(|(_, t, c)| (t.clone(), c[8].clone(), c[7].clone())).collect()
}

#[test]
fn sched_repeat_writes_every_run_a_summary_and_a_row_per_thread_per_run() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("w.txt"), "thread all\n100ms 8M 1500 1\n").unwrap();
    let out = schedlab(d.path(), "sched")
        .args("-t 2 -f w.txt -b 20M -q 100 -i 0 -c 0 --no-timestamps --repeat 3 --json r.json --disturbance-csv d.csv".split(' '))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for k in 1..=3 {
        assert!(text.contains(&format!("run {k}/3: ")), "{text}");
    }
    assert!(text.contains("over 3 runs (same seed): "), "{text}");
    let v = json(&d.path().join("r.json"));
    assert_eq!(v["schema"], "schedlab.sched-repeat/1");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r["schema"] == "schedlab.sched/1" && r["seed"] == 1), "every run is a sched result");
    // Kept plus set aside is every run, and each run's reasons say which it was.
    let s = &v["summary"];
    let reasons = v["reasons"].as_array().unwrap();
    let kept = reasons.iter().filter(|r| r.as_array().unwrap().is_empty()).count() as u64;
    assert_eq!(s["kept"].as_u64(), Some(kept), "{s}");
    assert_eq!(s["set_aside"].as_array().unwrap().len() as u64 + kept, 3, "{s}");
    let flows: Vec<&str> = s["flows"].as_array().unwrap().iter().map(|f| f["flow"].as_str().unwrap()).collect();
    assert_eq!(flows, ["client0", "client1", "total"]);
    if kept > 0 {
        let total = &s["flows"][2]["rate_mbps"];
        let (lo, med, hi) = (total["min"].as_f64().unwrap(), total["median"].as_f64().unwrap(), total["max"].as_f64().unwrap());
        assert!(lo <= med && med <= hi && hi > 0.0, "{total}");
        // The summary is over the kept runs: its extremes are among their figures.
        let kept_rates: Vec<f64> = runs
            .iter()
            .zip(reasons)
            .filter(|(_, r)| r.as_array().unwrap().is_empty())
            .map(|(x, _)| x["total_rate_bps"].as_f64().unwrap() / 1e6)
            .collect();
        assert!(kept_rates.iter().any(|x| (x - lo).abs() < 1e-9) && kept_rates.iter().any(|x| (x - hi).abs() < 1e-9));
    }
    // The CSV: per run, the JSON's threads (sched, client0, client1), in order.
    let r = rows(&d.path().join("d.csv"));
    assert_eq!(r.len(), 9);
    for (k, run) in runs.iter().enumerate() {
        assert_eq!(csv_threads(&r, &(k + 1).to_string()), from_json(&run["disturbance"]), "run {}", k + 1);
    }
}

/// A `--disturbance-csv` (or `--json`, `--messages`, `--trace-out`) file that cannot be created
/// stops `sched` before anything is measured: nothing on stdout (not even the machine line that
/// precedes a run), the option and the path named on stderr, no file left behind.
#[test]
fn sched_refuses_an_unwritable_output_before_measuring() {
    let d = tempfile::tempdir().unwrap();
    // Ten seconds of traffic: had it measured first, the run would show on stdout.
    std::fs::write(d.path().join("w.txt"), "thread all\n10s 8M 1500 1\n").unwrap();
    for (opt, path) in [
        ("--disturbance-csv", "/nonexistent-dir/d.csv"),
        ("--json", "/nonexistent-dir/r.json"),
        ("--messages", "/nonexistent-dir/m.txt"),
        ("--trace-out", "/nonexistent-dir/t.txt"),
    ] {
        for repeat in ["1", "3"] {
            let out = schedlab(d.path(), "sched")
                .args(["-t", "1", "-f", "w.txt", "-b", "20M", "--no-timestamps", "--repeat", repeat, opt, path])
                .assert()
                .code(1)
                .get_output()
                .clone();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(stdout.is_empty(), "{opt}: nothing is measured or printed: {stdout}");
            assert!(
                stderr.contains(&format!("{opt} file {path} cannot be written (checked before measuring)")),
                "{opt}: {stderr}"
            );
        }
    }
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["w.txt"], "no file written");
}

#[test]
fn predict_writes_a_row_per_thread_per_algorithm_run() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("w.txt"), "thread all\n100ms 8M 1500 dist:report poisson\n").unwrap();
    schedlab(d.path(), "predict")
        .args(
            "-t 1 -f w.txt -b 20M -q 100 -i 0 -c 0 --algs fifo,sf --repeat 2 --drain 20ms --json p.json --disturbance-csv d.csv"
                .split(' '),
        )
        .assert()
        .success();
    let p = json(&d.path().join("p.json"));
    let r = rows(&d.path().join("d.csv"));
    let runs = p["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    assert_eq!(r.len(), 8, "sched and client0 per run");
    for run in runs {
        let name = format!("{}#{}", run["alg"].as_str().unwrap(), run["repeat_run"]);
        assert_eq!(csv_threads(&r, &name), from_json(&run["disturbance"]), "{name}");
    }
}

#[test]
fn the_primitive_benchmarks_write_a_row_per_thread() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    schedlab(d.path(), "trylock")
        .args("-n 2 -t 0.2 --no-pin --json t.json --disturbance-csv t.csv".split(' '))
        .assert()
        .success();
    let t = json(&d.path().join("t.json"));
    let mut workers: Vec<serde_json::Value> =
        t["run"]["workers"].as_array().unwrap().iter().map(|w| w["disturbance"].clone()).collect();
    workers.sort_by_key(|w| w["thread"].as_str().unwrap().to_string());
    let mut got = csv_threads(&rows(&d.path().join("t.csv")), "1");
    got.sort();
    assert_eq!(got, from_json(&serde_json::Value::Array(workers)));

    schedlab(d.path(), "notify").args("-n 2 --no-pin --json n.json --disturbance-csv n.csv".split(' ')).assert().success();
    let n = json(&d.path().join("n.json"));
    let both = serde_json::json!([n["run"]["sender"]["disturbance"], n["run"]["receiver"]["disturbance"]]);
    assert_eq!(csv_threads(&rows(&d.path().join("n.csv")), "1"), from_json(&both));

    schedlab(d.path(), "semtest").args("-i 2000 --json s.json --disturbance-csv s.csv".split(' ')).assert().success();
    let s = json(&d.path().join("s.json"));
    let pairs = s["run"]["pairs"].as_array().unwrap();
    let threads: Vec<serde_json::Value> =
        pairs.iter().flat_map(|p| [p["marco_disturbance"].clone(), p["polo_disturbance"].clone()]).collect();
    assert!(!threads.is_empty());
    assert_eq!(csv_threads(&rows(&d.path().join("s.csv")), "1"), from_json(&serde_json::Value::Array(threads)));

    // An unwritable file is refused before anything is measured.
    schedlab(d.path(), "trylock").args("-n 1 -t 0.01 --disturbance-csv /nonexistent-dir/t.csv".split(' ')).assert().failure();
}

#[test]
fn burst_writes_its_client_row() {
    let _serial = serial();
    // A plain echo server in this process: burst only needs its bytes back. A one-target run
    // writes its target's fields, the disturbance among them, at the top level of the JSON.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 || s.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    });
    let d = tempfile::tempdir().unwrap();
    schedlab(d.path(), "burst")
        .args([addr.as_str(), "4K", "20", "--settle", "0", "-q", "--json", "b.json", "--disturbance-csv", "b.csv"])
        .assert()
        .success();
    let b = json(&d.path().join("b.json"));
    let r = rows(&d.path().join("b.csv"));
    assert_eq!(r.len(), 1);
    assert_eq!(csv_threads(&r, "1"), from_json(&serde_json::json!([b["disturbance"]])));
}

#[test]
fn rdma_client_and_server_write_their_row() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    let mut server = StdCommand::cargo_bin("schedlab")
        .unwrap()
        .current_dir(d.path())
        .args(["rdma", "--backend", "emulated", "--bind", "127.0.0.1", "-p", "0", "--timeout", "60", "-n", "200", "-O", "3"])
        .args(["--disturbance-csv", "server.csv"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("Waiting for client"), "server said: {line:?}");
    let port = line.trim().trim_end_matches(" ...").rsplit(':').next().unwrap().to_string();
    schedlab(d.path(), "rdma")
        .args(["127.0.0.1", "--backend", "emulated", "-p", &port, "--timeout", "60", "-n", "200", "-O", "3"])
        .args(["--json", "c.json", "--disturbance-csv", "client.csv"])
        .assert()
        .success();
    // The server exits once its run is done: its file is then complete.
    let status = server.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "server: {rest}");
    let c = json(&d.path().join("c.json"));
    let client = rows(&d.path().join("client.csv"));
    assert_eq!(csv_threads(&client, "1"), from_json(&serde_json::json!([c["disturbance"]])));
    let server_rows = rows(&d.path().join("server.csv"));
    assert_eq!(server_rows.len(), 1);
    assert_eq!(server_rows[0].1, "server");
}
