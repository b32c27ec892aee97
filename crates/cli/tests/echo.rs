//! CLI tests of `schedlab echo`, `echo-MODE`, `burst`/`test-burst`, `hist` and `echo-bench`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;

mod common;
use common::catches;

fn bin() -> Command {
    let mut c = Command::cargo_bin("schedlab").unwrap();
    c.timeout(Duration::from_secs(60));
    c
}

/// A server started through the CLI; killed on drop if the test did not stop it.
struct Srv {
    child: Child,
    port: u16,
    out: BufReader<std::process::ChildStdout>,
}

/// Waits until `child` has installed its handler for signal `sig` (the kernel's caught-signal
/// mask: an observable event, not a guess at how long start-up takes).
fn wait_for_handler(child: &mut Child, sig: u32) {
    let t = Instant::now();
    while !catches(child.id(), sig) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("exited ({status}) before catching signal {sig}");
        }
        assert!(t.elapsed() < Duration::from_secs(60), "no handler for signal {sig} in a minute");
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl Srv {
    fn start(args: &[&str]) -> Srv {
        let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("schedlab"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        let port = first
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split(';').next())
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        Srv { child, port, out }
    }

    /// Sends SIGTERM (once the server catches it) and returns (exit success, rest of stdout).
    fn stop(mut self) -> (bool, String) {
        wait_for_handler(&mut self.child, 15);
        StdCommand::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        let t = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.out, &mut rest);
        (status.success(), rest)
    }
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn seed_command_lines_work() {
    // `echo-naive ADDR $BUSYPOLL`: any second argument turns busy poll on.
    let srv = Srv::start(&["echo-naive", "127.0.0.1:0", "1"]);
    let addr = format!("127.0.0.1:{}", srv.port);
    // `test-burst ADDR SIZE ROUNDS`: a bare size is KiB.
    let out = bin().args(["test-burst", &addr, "4", "20", "--settle", "0"]).assert().success();
    let o = out.get_output();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 20, "one RTT per line: {stdout}");
    assert!(lines.iter().all(|l| l.parse::<u64>().is_ok()), "integers in microseconds: {stdout}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("burst 4K x 20 rounds") && stderr.contains("81920 bytes echoed and verified"), "{stderr}");
    assert!(stderr.contains("p99.99="), "{stderr}");
    let (ok, rest) = srv.stop();
    assert!(ok, "clean exit on SIGTERM: {rest}");
    assert!(rest.contains("81920 bytes echoed"), "{rest}");
    assert!(rest.contains("cannot take effect"), "busy poll honesty on loopback: {rest}");
    assert!(rest.contains("file descriptors open"), "{rest}");
}

#[test]
fn ctrl_c_flushes_partial_results() {
    let srv = Srv::start(&["echo", "--mode", "splice", "127.0.0.1:0"]);
    let addr = format!("127.0.0.1:{}", srv.port);
    let mut client = StdCommand::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(["burst", &addr, "1B", "100000000", "--settle", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // 100 M rounds cannot finish first; the signal goes once the client catches it.
    wait_for_handler(&mut client, 2);
    StdCommand::new("kill").args(["-INT", &client.id().to_string()]).status().unwrap();
    let out = client.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    let err = String::from_utf8_lossy(&out.stderr);
    // Every RTT measured before the signal is on stdout, and the summary counts exactly those.
    assert!(err.contains(&format!("interrupted: {lines} of 100000000 rounds done")), "{lines}: {err}");
    assert!(err.contains("rtt_us n="), "{err}");
    let (ok, rest) = srv.stop();
    assert!(ok && rest.contains("1 connections"), "{rest}");
}

/// Probes `mode` with a 10 ms server. `Err` when this machine lacks what the mode needs (the
/// server's "X is not available: reason", e.g. sockmap and io_uring without root); any other
/// failure to start (a crash, a bad option) panics: that is a failure, not a skip.
fn mode_available(mode: &str) -> Result<(), String> {
    let probe = bin().args(["echo", "--mode", mode, "127.0.0.1:0", "--duration", "0.01"]).output().unwrap();
    let err = String::from_utf8_lossy(&probe.stderr).trim().to_string();
    if probe.status.success() {
        return Ok(());
    }
    assert!(
        probe.status.code() == Some(1) && err.contains("is not available"),
        "the {mode} server failed to start ({}) for a reason other than a missing kernel feature: {err}",
        probe.status
    );
    Err(err)
}

#[test]
fn every_mode_through_the_cli() {
    for mode in ["naive", "iosubmit", "splice", "sockmap", "io_uring"] {
        if let Err(why) = mode_available(mode) {
            // The other modes still run: record this one's skip and go on.
            schedlab_report::testkit::skip(&format!("{}[{mode}]", schedlab_report::testkit::current_test()), &why);
            continue;
        }
        let srv = Srv::start(&["echo", "--mode", mode, "127.0.0.1:0"]);
        let addr = format!("127.0.0.1:{}", srv.port);
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("b.json");
        bin()
            .args(["burst", &addr, "64K", "10", "--settle", "0", "--warmup", "2", "--mode", "rr", "-q", "--json"])
            .arg(&json)
            .assert()
            .success()
            .stdout(predicate::str::is_empty());
        let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(j["rtt_us"]["count"], 10);
        assert_eq!(j["bytes_verified"], 12 * 65536);
        assert_eq!(j["rtt_samples_us"].as_array().unwrap().len(), 10);
        assert!(j["machine"]["kernel"].is_string());
        let (ok, rest) = srv.stop();
        assert!(ok, "{mode}: {rest}");
        assert!(rest.contains(&format!("{} bytes echoed", 12 * 65536)), "{mode}: {rest}");
        if mode == "sockmap" {
            assert!(rest.contains("0 still present in the kernel"), "{rest}");
        }
    }
}

/// `--spin` (never sleep once the burst is sent) echoes and verifies the same bytes, in burst and
/// rr mode (1 MiB bursts wrap the receive ring), and says so in the summary and the JSON.
#[test]
fn spinning_client_verifies_every_byte() {
    let srv = Srv::start(&["echo", "--mode", "naive", "127.0.0.1:0"]);
    let addr = format!("127.0.0.1:{}", srv.port);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    for (mode, size, bytes) in [("burst", "1M", 3u64 << 20), ("rr", "64K", 3 << 16)] {
        let out = bin()
            .args(["burst", &addr, size, "3", "--settle", "0", "--spin", "--mode", mode, "--json"])
            .arg(&json)
            .assert()
            .success();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(
            stderr.contains(&format!("{mode} mode, spinning")) && stderr.contains(&format!("{bytes} bytes echoed and verified")),
            "{stderr}"
        );
        let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(j["spin"], true);
        assert_eq!(j["bytes_verified"], bytes);
    }
    let (ok, rest) = srv.stop();
    assert!(ok, "{rest}");
    assert!(rest.contains(&format!("{} bytes echoed", (3u64 << 20) + (3 << 16))), "{rest}");
}

/// `--target`: two servers in one run, rounds interleaved; stdout says which target each RTT is
/// from, stderr has each target's summary and cost and target 2's ratios, the JSON one entry per
/// target; a target where nothing listens is named.
#[test]
fn burst_measures_several_targets_in_one_run() {
    let a = Srv::start(&["echo", "--mode", "naive", "127.0.0.1:0"]);
    let b = Srv::start(&["echo", "--mode", "splice", "127.0.0.1:0"]);
    let (aa, ba) = (format!("127.0.0.1:{}", a.port), format!("127.0.0.1:{}", b.port));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let out = bin()
        .args(["burst", &aa, "--target", &ba, "64K", "7", "--settle", "0", "--warmup", "1", "--json"])
        .arg(&json)
        .assert()
        .success();
    let o = out.get_output();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let count = |t: &str| stdout.lines().filter(|l| l.split(' ').next() == Some(t)).count();
    assert_eq!((count("1"), count("2"), stdout.lines().count()), (7, 7, 14), "{stdout}");
    assert!(stdout.lines().all(|l| l.split(' ').nth(1).is_some_and(|x| x.parse::<u64>().is_ok())), "{stdout}");
    for t in ["target 1: burst 64K x 7 rounds", "target 2: burst 64K x 7 rounds", "target 2: client cost per round"] {
        assert!(stderr.contains(t), "{t}: {stderr}");
    }
    assert_eq!(stderr.matches("524288 bytes echoed and verified").count(), 2, "{stderr}");
    assert!(stderr.contains("target 2: over target 1, same run (rounds interleaved): p50 "), "{stderr}");
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let t = j["targets"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!((t[0]["addr"].as_str(), t[1]["addr"].as_str()), (Some(aa.as_str()), Some(ba.as_str())));
    assert_eq!(t[1]["rtt_samples_us"].as_array().unwrap().len(), 7);
    assert!(t[0]["ratio_to_first"].is_null() && t[1]["ratio_to_first"]["p99"].as_f64().unwrap() > 0.0, "{j}");
    assert!(j.get("rtt_us").is_none(), "no top-level summary with several targets");
    // A target where nothing listens is named.
    let dead = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    bin()
        .args(["burst", &aa, "--target", &dead, "4", "1", "--settle", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!("target 2 ({dead}): cannot connect")));
    // a: the measured run and the one that stopped at the dead target; b: the measured run.
    for (s, conns) in [(a, 2), (b, 1)] {
        let (ok, rest) = s.stop();
        assert!(ok && rest.contains(&format!("{conns} connections")), "{rest}");
    }
}

#[test]
fn burst_works_against_socat() {
    if StdCommand::new("socat").arg("-V").stdout(Stdio::null()).status().is_err() {
        schedlab_report::skip!("socat is not installed (apt-get install socat)");
    }
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut socat = StdCommand::new("socat")
        .args([&format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"), "PIPE"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(10), "socat did not start listening");
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = format!("127.0.0.1:{port}");
    for size in ["1B", "64", "1M"] {
        bin().args(["burst", &addr, size, "5", "--settle", "0"]).assert().success().stderr(predicate::str::contains("verified"));
    }
    let _ = socat.kill();
    let _ = socat.wait();
}

#[test]
fn bad_input_is_a_clear_error() {
    let cases: [(&[&str], &str); 8] = [
        (&["burst", "nonsense", "4", "1"], "invalid address"),
        (&["burst", "127.0.0.1:1", "0", "5"], "at least 1 byte"),
        (&["burst", "127.0.0.1:1", "4X", "5"], "unknown unit"),
        (&["burst", "127.0.0.1:1", "4", "0"], "rounds must be at least 1"),
        (&["echo", "127.0.0.1:0"], "--mode"),
        (&["echo-bogus", "127.0.0.1:0"], "unknown mode"),
        (&["echo", "--mode", "naive", "999.1.1.1:80"], "invalid address"),
        (&["hist", "/nonexistent/file"], "cannot read /nonexistent/file"),
    ];
    for (args, msg) in cases {
        bin().args(args).assert().failure().stderr(predicate::str::contains(msg));
    }
    // Port in use.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    bin()
        .args(["echo", "--mode", "naive", &addr, "--duration", "1"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("already in use"));
    drop(l);
    // Nobody listening: a port this test keeps bound without listening, so no other test running
    // beside it can take the port between the check and the connect (a freed port can be).
    let held = BoundNotListening::new();
    let addr = held.addr();
    bin()
        .args(["burst", &addr, "4", "1", "--settle", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cannot connect").and(predicate::str::contains("is an echo server listening")));
}

#[test]
fn hist_summary_histogram_trim_and_csv() {
    let data: String = (1..=200).map(|i| format!("{i}\n")).collect();
    let out = bin().arg("hist").write_stdin(data.clone()).assert().success().get_output().stdout.clone();
    let s = String::from_utf8(out).unwrap();
    assert!(s.contains("min:1.00 avg:100.50 med=100.00 max:200.00 dev:57.73 count:200"), "{s}");
    assert!(s.contains("p99:198.00") && s.contains("p99.99:200.00"), "{s}");
    assert!(s.contains("128 - 256") && s.contains("[      73]"), "log2 bucket 128..255 holds 73 values: {s}");
    bin()
        .args(["hist", "--csv", "--name", "naive", "--trim-slowest", "1%"])
        .write_stdin(data)
        .assert()
        .success()
        .stdout("naive, 99.00, 57.16, 1.00, 198.00\n");
    bin()
        .arg("hist")
        .write_stdin("1\n2\nabc\n")
        .assert()
        .failure()
        .stderr(predicate::str::contains("stdin:3: 'abc' is not a number"));
    bin().arg("hist").write_stdin("\n").assert().failure().stderr(predicate::str::contains("no numbers"));
}

/// echo-bench over naive and sockmap. Without root sockmap is unavailable: echo-bench then says
/// `SKIP sockmap` and measures naive alone, which is checked instead (and the sockmap half of this
/// test is recorded as skipped).
#[test]
fn echo_bench_writes_csv_svg_png() {
    let sockmap = mode_available("sockmap");
    if let Err(why) = &sockmap {
        schedlab_report::testkit::skip(&format!("{}[sockmap]", schedlab_report::testkit::current_test()), why);
    }
    let expect: &[&str] = if sockmap.is_ok() { &["naive", "sockmap"] } else { &["naive"] };
    let rows = expect.len() * 2 * 2;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let assert = bin()
        .args([
            "echo-bench",
            "--modes",
            "naive,sockmap",
            "--sizes",
            "1B,4K",
            "--rounds",
            "30",
            "--warmup",
            "3",
            "--peer",
            "none",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("median round trip"))
        .stderr(predicate::str::contains(format!("[{rows}/{rows}]")));
    if sockmap.is_err() {
        assert.stderr(predicate::str::contains("SKIP sockmap"));
    }
    for size in ["1B", "4K"] {
        let d = out.join(size);
        let csv = std::fs::read_to_string(d.join("data.csv")).unwrap();
        let names: Vec<&str> = csv.lines().map(|l| l.split(',').next().unwrap()).collect();
        assert_eq!(names, expect, "{csv}");
        assert!(csv.lines().all(|l| l.split(", ").count() == 5), "name, med, dev, min, max: {csv}");
        assert_eq!(std::fs::read_to_string(d.join("data-busypoll.csv")).unwrap().lines().count(), expect.len());
        let svg = std::fs::read_to_string(d.join(format!("echo-{size}.svg"))).unwrap();
        assert_eq!(svg.matches(r#"class="candle""#).count(), 2 * expect.len(), "modes x busy poll off/on");
        let png = std::fs::read(d.join(format!("echo-{size}.png"))).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(j["rows"].as_array().unwrap().len(), rows);
    assert_eq!(j["rows"][0]["rtt_us"]["count"], 30);
    assert!(Path::new(&out.join("summary.csv")).exists());
}

#[test]
fn echo_bench_netns_cleans_up() {
    let root =
        StdCommand::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false);
    if !root || !Path::new("/usr/sbin/ip").exists() && !Path::new("/sbin/ip").exists() && !Path::new("/usr/bin/ip").exists() {
        schedlab_report::skip!("--netns needs root and iproute2 (root: {root})");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args([
            "echo-bench",
            "--netns",
            "--modes",
            "naive",
            "--sizes",
            "1B",
            "--rounds",
            "20",
            "--warmup",
            "2",
            "--no-busy-poll",
            "--peer",
            "none",
            "--out",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "echo-bench --netns hung");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
    if !status.success() && err.contains("not available") {
        schedlab_report::skip!("namespaces unavailable here: {err}");
    }
    assert!(status.success(), "{err}");
    assert!(err.contains("removed"), "{err}");
    let left: Vec<_> = std::fs::read_dir("/var/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(&format!("-{pid}")))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    let csv = std::fs::read_to_string(dir.path().join("1B/data.csv")).unwrap();
    assert!(csv.starts_with("naive, "), "{csv}");
}

/// What one half-closing client saw.
#[derive(Debug, Default)]
struct HalfClose {
    resets: usize,
    short: usize,
    wrong: usize,
    other: Vec<String>,
}

/// One client: sends `size` bytes of a per-offset pattern from a writer thread, shuts its write
/// side down, reads until EOF and checks every byte. Returns None when all came back.
fn half_close_client(port: u16, size: usize, seed: u8) -> Result<(), String> {
    use std::io::{Read, Write};
    let s = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let chunk: Vec<u8> = (0..size).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
        w.write_all(&chunk)?;
        w.shutdown(std::net::Shutdown::Write)
    });
    let mut r = &s;
    let mut got = 0usize;
    let mut buf = vec![0u8; 64 << 10];
    let res = loop {
        match r.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                for (k, &b) in buf[..n].iter().enumerate() {
                    let i = got + k;
                    if i >= size || b != (i as u8).wrapping_mul(31).wrapping_add(seed) {
                        return Err(format!("wrong byte at offset {i}"));
                    }
                }
                got += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    let wres = writer.join().unwrap();
    match (res, wres) {
        (Err(e), _) | (Ok(()), Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => Err("reset".into()),
        (Err(e), _) => Err(format!("read: {e}")),
        (Ok(()), Err(e)) => Err(format!("write: {e}")),
        (Ok(()), Ok(())) if got < size => Err(format!("short: {got} of {size}")),
        (Ok(()), Ok(())) => Ok(()),
    }
}

fn tally(h: &mut HalfClose, r: Result<(), String>) {
    match r {
        Ok(()) => {}
        Err(e) if e == "reset" => h.resets += 1,
        Err(e) if e.starts_with("short") => h.short += 1,
        Err(e) if e.starts_with("wrong") => h.wrong += 1,
        Err(e) => h.other.push(e),
    }
}

/// Sequential and 100 concurrent half-closing clients at 64 KiB and 1 MiB: every byte comes back
/// and then EOF, never a reset, for `mode` (with `extra` server arguments).
fn half_close_every_byte(mode: &str, extra: &[&str]) {
    let mut args = vec!["echo", "--mode", mode, "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let srv = Srv::start(&args);
    let port = srv.port;
    let mut expected = 0u64;
    let mut conns = 0usize;
    for size in [64usize << 10, 1 << 20] {
        let mut h = HalfClose::default();
        for i in 0..20 {
            tally(&mut h, half_close_client(port, size, i as u8));
        }
        let clients: Vec<_> = (0..100).map(|i| std::thread::spawn(move || half_close_client(port, size, i as u8))).collect();
        for c in clients {
            tally(&mut h, c.join().unwrap());
        }
        assert!(
            h.resets == 0 && h.short == 0 && h.wrong == 0 && h.other.is_empty(),
            "{mode} {size} bytes, 120 half-closing clients: {h:?}"
        );
        expected += 120 * size as u64;
        conns += 120;
    }
    let (ok, rest) = srv.stop();
    assert!(ok, "{mode}: {rest}");
    assert!(!rest.contains("ended by error"), "{mode}: {rest}");
    assert!(rest.contains(&format!("{conns} connections, {expected} bytes echoed")), "{mode}: {rest}");
    if let Some(path) = extra.iter().skip_while(|a| **a != "--uring-data").nth(1) {
        // The summary says what the connections actually did.
        let want = match *path {
            "splice" => format!("{conns} connections spliced"),
            "copy" => format!("{conns} copied"),
            // Some connections copied, the others switched to splice; none spliced from the start.
            _ => "0 connections spliced".to_string(),
        };
        assert!(rest.contains(&format!("io_uring data path {path} asked")) && rest.contains(&want), "{rest}");
    }
}

/// Runs the half-close check for `mode`, or skips visibly when this machine lacks the mode's
/// kernel feature or privilege. A server that fails to start for any other reason fails the test.
fn half_close_or_skip(mode: &str, extra: &[&str]) {
    if let Err(why) = mode_available(mode) {
        schedlab_report::skip!("{mode} server unavailable here: {why}");
    }
    half_close_every_byte(mode, extra);
}

#[test]
fn half_close_naive() {
    half_close_or_skip("naive", &[]);
}

#[test]
fn half_close_iosubmit() {
    half_close_or_skip("iosubmit", &[]);
}

#[test]
fn half_close_splice() {
    half_close_or_skip("splice", &[]);
}

#[test]
fn half_close_sockmap() {
    half_close_or_skip("sockmap", &[]);
}

#[test]
fn half_close_io_uring_splice() {
    half_close_or_skip("io_uring", &["--uring-data", "splice"]);
}

#[test]
fn half_close_io_uring_copy() {
    half_close_or_skip("io_uring", &["--uring-data", "copy"]);
}

#[test]
fn half_close_io_uring_auto() {
    half_close_or_skip("io_uring", &["--uring-data", "auto"]);
}

/// A TCP socket bound to a loopback port and never listening: connecting to it is refused.
struct BoundNotListening(libc::c_int, u16);

impl BoundNotListening {
    fn new() -> Self {
        // SAFETY: plain socket calls on a socket this struct owns; `sa` and `len` outlive them.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let rc = libc::bind(fd, (&sa as *const libc::sockaddr_in).cast(), len);
            assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
            let mut got = len;
            let rc = libc::getsockname(fd, (&mut sa as *mut libc::sockaddr_in).cast(), &mut got);
            assert_eq!(rc, 0, "getsockname: {}", std::io::Error::last_os_error());
            BoundNotListening(fd, u16::from_be(sa.sin_port))
        }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.1)
    }
}

impl Drop for BoundNotListening {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}
