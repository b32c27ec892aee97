//! `schedlab rdma`: the seed's experiment end to end on the emulated backend (two servers, two
//! concurrent clients of different message sizes, their `-o` files, the share analysis), the
//! seed's worked example, and bad input.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::Command;
use predicates::prelude::*;

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

/// Waits for a child we started, killing it if it outlives `limit`.
fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server on an ephemeral loopback port; returns the child, its stdout reader and the port.
fn start_server(args: &[&str]) -> (Child, BufReader<std::process::ChildStdout>, u16) {
    let mut child = StdCommand::cargo_bin("schedlab")
        .unwrap()
        .args(["rdma", "--backend", "emulated", "--bind", "127.0.0.1", "-p", "0", "--timeout", "60"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("[EMULATED]") && line.contains("Waiting for client"), "server said: {line:?}");
    let port = line.trim().trim_end_matches(" ...").rsplit(':').next().unwrap().parse().unwrap();
    (child, out, port)
}

fn start_client(port: u16, args: &[&str], out_file: &Path) -> Child {
    StdCommand::cargo_bin("schedlab")
        .unwrap()
        .args(["rdma", "127.0.0.1", "--backend", "emulated", "-p", &port.to_string(), "--timeout", "60", "-o"])
        .arg(out_file)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn rest(mut r: impl Read) -> String {
    let mut s = String::new();
    r.read_to_string(&mut s).unwrap();
    s
}

#[test]
fn two_emulated_flows_run_concurrently_and_are_analysed() {
    let dir = tempfile::tempdir().unwrap();
    let (a_file, b_file) = (dir.path().join("out_A.txt"), dir.path().join("out_B.txt"));
    // Flow A: 64 KiB WRITEs; flow B: 4 KiB SENDs with a 16-deep receive pipeline; event polling.
    let (a_args, b_args) =
        (["-F", "-e", "-s", "65536", "-n", "300", "-O", "0"], ["-F", "-e", "-s", "4096", "-n", "3000", "-O", "3", "-t", "16"]);
    let (mut sa, mut sa_out, pa) = start_server(&a_args);
    let (mut sb, mut sb_out, pb) = start_server(&b_args);
    let mut ca = start_client(pa, &a_args, &a_file);
    let mut cb = start_client(pb, &b_args, &b_file);
    let limit = Duration::from_secs(90);
    for (c, name) in [(&mut ca, "client A"), (&mut cb, "client B"), (&mut sa, "server A"), (&mut sb, "server B")] {
        let st = wait_bounded(c, limit, name);
        let err = rest(c.stderr.take().unwrap());
        assert!(st.success(), "{name} failed: {err}");
    }
    let a_out = rest(ca.stdout.take().unwrap());
    let b_out = rest(cb.stdout.take().unwrap());
    let srv_b = rest(&mut sb_out);
    let _ = rest(&mut sa_out);
    for out in [&a_out, &b_out, &srv_b] {
        assert!(out.lines().all(|l| l.starts_with("[EMULATED]")), "unlabelled line in:\n{out}");
        assert!(out.lines().last().unwrap().contains("p99.9="), "stdout must end with latency percentiles:\n{out}");
    }
    // perftest's result line: bytes, iterations, then bandwidths and message rate.
    let result = a_out.lines().find(|l| l.trim_start_matches("[EMULATED]").trim_start().starts_with("65536 ")).unwrap();
    let cols: Vec<&str> = result.split_whitespace().collect();
    assert_eq!(cols[1..3], ["65536", "300"], "{result}");
    assert!(cols[4].parse::<f64>().unwrap() > 0.0, "{result}");
    assert!(
        srv_b.lines().any(|l| l.contains(" 4096 ") && l.contains(" 3000 ")),
        "server B must have received all 3000:\n{srv_b}"
    );

    for (file, bytes, count, op) in [(&a_file, 65536, 300, "WRITE"), (&b_file, 4096, 3000, "SEND")] {
        let text = std::fs::read_to_string(file).unwrap();
        // The original's format from the first byte; the metadata is in the sidecar FILE.json.
        assert!(text.starts_with("Task_cnt\tTime(us)\t\tLatency\n1\t\t"), "{}", &text[..40]);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("Task_cnt\tTime(us)\t\tLatency"));
        let side: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{}.json", file.display())).unwrap()).unwrap();
        assert_eq!(side["format"], "schedlab-rdma-meta/1");
        assert_eq!(
            (side["backend"].as_str(), side["op"].as_str(), side["poll"].as_str()),
            (Some("EMULATED"), Some(op), Some("event"))
        );
        assert_eq!((side["bytes"].as_u64(), side["count"].as_u64()), (Some(bytes), Some(count as u64)));
        let recs: Vec<&str> = lines.collect();
        assert_eq!(recs.len(), count);
        let f: Vec<&str> = recs[0].split("\t\t").collect();
        assert_eq!(f[0], "1");
        assert!(f[1].split_once('.').unwrap().1.len() == 2 && f[2].split_once('.').unwrap().1.len() == 2, "{}", recs[0]);
    }

    let (json, svg, csv) = (dir.path().join("share.json"), dir.path().join("share.svg"), dir.path().join("share.csv"));
    let out = schedlab()
        .args(["rdma", "share"])
        .arg(&a_file)
        .arg(&b_file)
        .args(["--window", "5ms", "--json"])
        .arg(&json)
        .arg("--svg")
        .arg(&svg)
        .arg("--csv")
        .arg(&csv)
        .timeout(Duration::from_secs(30))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.lines().all(|l| l.starts_with("[EMULATED]")), "{text}");
    assert!(text.contains("Jain's fairness index"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["backend"], "EMULATED");
    let flows = v["flows"].as_array().unwrap();
    let first = flows.iter().position(|f| f["finished_first"] == true).unwrap();
    let (f, o) = (&flows[first], &flows[1 - first]);
    assert_eq!(f["completed_at_cut"], f["count"], "the first flow finished all its messages");
    assert!(f["gbps"].as_f64().unwrap() > 0.0);
    assert!(o["completed_at_cut"].as_u64().unwrap() <= o["count"].as_u64().unwrap());
    assert!(o["cut_time_us"].as_f64().unwrap() <= f["cut_time_us"].as_f64().unwrap());
    // Each flow's rate is what it completed by the cut over the time it took, and the index is
    // Jain's formula over those two rates, (a+b)²/(2(a²+b²)), written out here. (Any two rates give
    // an index in [0.5, 1]; these checks fail if a field is computed from the wrong numbers.)
    let rate = |f: &serde_json::Value| {
        let bits = f["bytes_per_msg"].as_f64().unwrap() * f["completed_at_cut"].as_f64().unwrap() * 8.0;
        bits / (f["cut_time_us"].as_f64().unwrap() * 1e3)
    };
    for fl in [f, o] {
        let g = fl["gbps"].as_f64().unwrap();
        assert!((g - rate(fl)).abs() <= 1e-9 * g.max(1.0), "{fl}");
    }
    let (ra, rb) = (rate(&flows[0]), rate(&flows[1]));
    let want = (ra + rb).powi(2) / (2.0 * (ra * ra + rb * rb));
    let jain = v["jain"].as_f64().unwrap();
    assert!((jain - want).abs() < 1e-9, "jain {jain} vs {want} from {ra} and {rb} Gb/s");
    // The windows account for every byte of both flows.
    let w = v["windows"].as_array().unwrap();
    let window_us = v["window_us"].as_f64().unwrap();
    let bytes_of = |key: &str| w.iter().map(|x| x[key].as_f64().unwrap() * window_us * 1e3 / 8.0).sum::<f64>();
    assert!((bytes_of("a_gbps") - 65536.0 * 300.0).abs() < 1.0);
    assert!((bytes_of("b_gbps") - 4096.0 * 3000.0).abs() < 1.0);
    assert!(flows.iter().all(|f| f["lat_us"]["count"].as_u64().unwrap() > 0));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("EMULATED"));
    assert_eq!(svg.matches("class=\"series\"").count(), 2);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.starts_with("start_ms,end_ms,a_gbps,b_gbps,jain,backend\n"));
    assert_eq!(csv.lines().count(), w.len() + 1);
}

/// `--meta-line` keeps schedlab's older form (metadata on a first `# schedlab-rdma` line, no
/// sidecar); `rdma share` reads it, and reads a plain file with a sidecar, alike.
#[test]
fn meta_line_form_and_sidecar_form_are_both_read() {
    let dir = tempfile::tempdir().unwrap();
    let (a_file, b_file) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    let (mut sa, _sa_out, pa) = start_server(&["-s", "1024", "-n", "50"]);
    let mut ca = start_client(pa, &["-s", "1024", "-n", "50", "--meta-line"], &a_file);
    for (c, name) in [(&mut ca, "client"), (&mut sa, "server")] {
        let st = wait_bounded(c, Duration::from_secs(60), name);
        assert!(st.success(), "{name} failed: {}", rest(c.stderr.take().unwrap()));
    }
    let text = std::fs::read_to_string(&a_file).unwrap();
    assert!(text.starts_with("# schedlab-rdma backend=EMULATED op=WRITE bytes=1024 count=50 poll=busy\nTask_cnt\t"), "{text}");
    assert!(!dir.path().join("a.txt.json").exists(), "--meta-line writes no sidecar");
    // Flow B: a plain original-format file plus a hand-written sidecar.
    std::fs::write(&b_file, "Task_cnt\tTime(us)\t\tLatency\n1\t\t1.00\t\t1.00\n2\t\t2.00\t\t1.00\n").unwrap();
    std::fs::write(
        dir.path().join("b.txt.json"),
        r#"{"format": "schedlab-rdma-meta/1", "data_file": "b.txt", "backend": "VERBS", "bytes": 2048, "count": 2}"#,
    )
    .unwrap();
    schedlab()
        .args(["rdma", "share"])
        .arg(&a_file)
        .arg(&b_file)
        .assert()
        .success()
        .stdout(predicate::str::contains("[EMULATED]"))
        .stdout(predicate::str::contains("b.txt [VERBS]"))
        .stdout(predicate::str::contains("2048 B x"));
    // A broken sidecar is named with the field at fault.
    std::fs::write(dir.path().join("b.txt.json"), r#"{"format": "schedlab-rdma-meta/1", "data_file": "b.txt", "bytes": -3}"#)
        .unwrap();
    schedlab()
        .args(["rdma", "share"])
        .arg(&a_file)
        .arg(&b_file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("b.txt.json: field meta"));
}

/// An -o file that cannot be written is refused before the connection is even tried.
#[test]
fn unwritable_output_is_refused_before_measuring() {
    let t = Instant::now();
    schedlab()
        .args(["rdma", "127.0.0.1", "--backend", "emulated", "-p", "9", "-o", "/nonexistent-dir/out.txt"])
        .timeout(Duration::from_secs(20))
        .assert()
        .failure()
        .stderr(predicate::str::contains("-o file /nonexistent-dir/out.txt cannot be written"));
    assert!(t.elapsed() < Duration::from_secs(10));
}

/// The seed's worked example, from files in the original format (no sidecar, no header line).
#[test]
fn share_reproduces_the_seed_example_from_original_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("out_WRITE_1G_vs_WRITE_1M_A.txt");
    let b = dir.path().join("out_WRITE_1G_vs_WRITE_1M_B.txt");
    std::fs::write(&a, "Task_cnt\tTime(us)\t\tLatency\n1\t\t283344.58\t\t283344.58\n1000\t\t283344584.00\t\t283312.10\n")
        .unwrap();
    std::fs::write(
        &b,
        "Task_cnt\tTime(us)\t\tLatency\n1\t\t390.00\t\t389.00\n727326\t\t283344457.00\t\t370.00\n727327\t\t283344840.00\t\t383.00\n1000000\t\t389000000.00\t\t371.00\n",
    )
    .unwrap();
    schedlab()
        .args(["rdma", "share"])
        .arg(&a)
        .arg(&b)
        .args(["--size-a", "1000000000", "--size-b", "1000000", "--count-a", "1000", "--count-b", "1000000"])
        .assert()
        .success()
        .stdout(predicate::str::contains("finished first: 1000000000 B x 1000/1000 msgs x 8 / 283.344584 s = 28.234 Gbps"))
        .stdout(predicate::str::contains("1000000 B x 727326/1000000 msgs x 8 / 283.344457 s = 20.535 Gbps"))
        .stdout(predicate::str::contains("[EMULATED]").not());
    // Without sizes the original files cannot be analysed: say which option is missing.
    schedlab()
        .args(["rdma", "share"])
        .arg(&a)
        .arg(&b)
        .args(["--size-a", "1000000000"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--size-b"));
}

#[test]
fn bad_input_gives_clear_errors() {
    schedlab().args(["rdma", "-O", "4"]).assert().failure().stderr(predicate::str::contains("unknown RDMA operation '4'"));
    schedlab().args(["rdma", "-s", "0"]).assert().failure().stderr(predicate::str::contains("message size must be a positive"));
    schedlab().args(["rdma", "--backend", "emulated", "127.0.0.1", "-p", "1", "-n", "0"]).assert().failure();
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "Task_cnt\tTime(us)\t\tLatency\n1\t\t10.00\t\t1.00\n2\t\tten\t\t1.00\n").unwrap();
    let good = dir.path().join("good.txt");
    std::fs::write(&good, "Task_cnt\tTime(us)\t\tLatency\n1\t\t10.00\t\t1.00\n").unwrap();
    schedlab()
        .args(["rdma", "share"])
        .arg(&good)
        .arg(&bad)
        .args(["--size-a", "10", "--size-b", "10"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("bad.txt:3: field Time(us): 'ten' is not a number"));
    schedlab()
        .args(["rdma", "share"])
        .arg(&good)
        .arg(dir.path().join("missing.txt"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("missing.txt"));
}

/// The real backend: this build either lacks it or this machine lacks a device; either way the
/// command must stop at once with one line that says what is missing.
#[test]
fn verbs_backend_without_device_explains_in_one_line() {
    if Path::new("/sys/class/infiniband").read_dir().map(|mut d| d.next().is_some()).unwrap_or(false) {
        schedlab_report::skip!("an RDMA device exists on this machine; the no-device path cannot be checked");
    }
    let out = schedlab()
        .args(["rdma", "-F", "-e", "-s", "4096", "-n", "10", "-p", "0"])
        .timeout(Duration::from_secs(20))
        .assert()
        .failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("RDMA backend unavailable") && err.contains("--backend emulated"), "{err}");
}
