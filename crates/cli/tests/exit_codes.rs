//! The exit codes documented in the README, for every long-running command: 0 success, 1 error,
//! 2 usage error, 130 interrupted by SIGINT or SIGTERM (partial results written), 141 output to a
//! closed pipe. The echo server's normal stop is a signal: it exits 0 (tested in echo.rs and
//! soak.rs); the burst client interrupted exits 130 (echo.rs); sweep's SIGINT is in sweep.rs and
//! its SIGTERM here.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::catches;

fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

/// The commands spin on every core: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn code(args: &[&str], dir: &std::path::Path) -> (i32, String) {
    let out = schedlab().args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap();
    (out.status.code().expect("exited, not killed"), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn usage_errors_exit_2_and_errors_exit_1() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("bad.toml"), "this is not toml [[").unwrap();
    let usage: &[&[&str]] = &[
        &["sim", "--no-such-option"],
        &["sched", "-t"],
        &["sched", "-d", "0.1", "--", "-alg", "nonsense"],
        &["predict", "--no-such-option"],
        &["sweep", "--no-such-option"],
        &["echo", "--no-such-option"],
        &["burst"],
        &["semtest", "--no-such-option"],
        &["notify", "--no-such-option"],
        &["trylock", "--no-such-option"],
        &["rdma", "--no-such-option"],
        &["no-such-command"],
        &[],
    ];
    for args in usage {
        let (c, err) = code(args, dir);
        assert_eq!(c, 2, "{args:?} is a usage error: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let errors: &[&[&str]] = &[
        &["sched", "-f", "no-such-file.txt", "-d", "0.1"],
        &["predict", "-b", "1G", "-f", "no-such-file.txt"],
        &["sweep", "bad.toml", "--out", "o.parquet"],
        &["echo", "-m", "naive", "203.0.113.1:1"],
        &["hist"],
        &["rdma", "share", "no-such-a.txt", "no-such-b.txt"],
    ];
    for args in errors {
        let (c, err) = code(args, dir);
        assert_eq!(c, 1, "{args:?} is an error: {err}");
        assert!(err.contains("error") || err.contains("cannot") || err.contains("no "), "{args:?}: a message says why: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    for args in [&["sched", "-t", "2", "-d", "0.1"][..], &["sim", "--packets", "20k", "--quiet"][..], &["hist", "--help"][..]] {
        let (c, err) = code(args, dir);
        assert_eq!(c, 0, "{args:?}: {err}");
    }
}

/// The signal number of `kill`'s `-INT` / `-TERM`.
fn signo(signal: &str) -> u32 {
    match signal {
        "-INT" => 2,
        "-TERM" => 15,
        _ => panic!("unknown signal {signal}"),
    }
}

/// Waits until `child` has installed its handler for `signal` (an observable event: the kernel's
/// caught-signal mask), so the signal cannot arrive before the handler and kill the process.
fn wait_for_handler(child: &mut std::process::Child, signal: &str, what: &str) {
    let t = Instant::now();
    while !catches(child.id(), signo(signal)) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what}: exited ({status}) before catching {signal}");
        }
        assert!(t.elapsed() < Duration::from_secs(60), "{what}: no handler for {signal} in a minute");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Starts `args`, waits until its stdout shows `ready` (the run is under way) and until it catches
/// `signal`, sends `signal`, and returns (exit code, stdout, stderr). Each run is sized to last far
/// longer (a minute) than it takes to get here, so it cannot finish before the signal.
fn interrupt(args: &[&str], ready: &str, signal: &str, dir: &std::path::Path) -> (i32, String, String) {
    let mut child = schedlab().args(args).current_dir(dir).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let t = Instant::now();
    while !seen.contains(ready) {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            panic!("{args:?}: ended before {ready:?}: {seen}");
        }
        seen.push_str(&line);
        assert!(t.elapsed() < Duration::from_secs(60), "{args:?}: no {ready:?} in a minute");
    }
    wait_for_handler(&mut child, signal, &format!("{args:?}"));
    Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    let (mut rest, mut err) = (String::new(), String::new());
    out.read_to_string(&mut rest).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    (status.code().unwrap_or_else(|| panic!("{args:?}: killed by {signal}: {status}")), seen + &rest, err)
}

/// A sweep of two cells: a tiny first one (its journal line is the event the test waits for) and a
/// second one of 4 G packets (minutes of work), so the signal always lands inside the second.
/// Returns (exit code, stderr, journal lines).
fn interrupt_sweep(signal: &str, dir: &std::path::Path) -> (i32, String, usize) {
    std::fs::write(
        dir.join("grid.toml"),
        "strategies = [\"RR\", 10]\n[[grid]]\ntraffic = [50]\npackets = \"20k\"\n[[grid]]\ntraffic = [50]\npackets = \"4G\"\n",
    )
    .unwrap();
    let out_file = format!("o{signal}.parquet");
    let journal = dir.join(format!("{out_file}.journal"));
    let _ = std::fs::remove_file(&journal);
    let mut child = schedlab()
        .args(["sweep", "grid.toml", "--out", &out_file, "--jobs", "1", "--quiet"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = || std::fs::read_to_string(&journal).map(|s| s.lines().count()).unwrap_or(0);
    let t = Instant::now();
    // The header line, then the first cell's line.
    while lines() < 2 {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("sweep {signal}: exited ({status}) before its first cell");
        }
        assert!(t.elapsed() < Duration::from_secs(60), "sweep {signal}: no finished cell in a minute");
        std::thread::sleep(Duration::from_millis(2));
    }
    wait_for_handler(&mut child, signal, "sweep");
    Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    let code = status.code().unwrap_or_else(|| panic!("sweep: killed by {signal}: {status}"));
    assert!(!dir.join(&out_file).exists(), "sweep {signal}: an interrupted sweep writes no table");
    (code, err, lines())
}

#[test]
fn long_runs_interrupted_by_sigint_or_sigterm_exit_130_with_partial_results() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("w.txt"), "thread all\n1000s 1M 500 1\n").unwrap();
    for signal in ["-INT", "-TERM"] {
        // (command, a stdout line that shows the run started, what the partial result says)
        let cases: [(&[&str], &str, &str); 6] = [
            (&["sched", "-t", "2", "-f", "w.txt", "-d", "60"], "config:", "interrupted"),
            (&["predict", "-t", "2", "-f", "w.txt", "-b", "10M", "--algs", "fifo,sf"], "workload:", "interrupted"),
            (&["sim", "--packets", "2G", "--threads", "1"], "", "interrupted"),
            (&["semtest", "-D", "60s", "--interval", "100", "--allow-degraded"], "# semtest:", ""),
            (&["notify", "-D", "60s", "--allow-degraded"], "# notify test", ""),
            (
                &["rdma", "--backend", "emulated", "--bind", "127.0.0.1", "-p", "0", "--timeout", "60"],
                "Waiting for client",
                "interrupted",
            ),
        ];
        for (args, ready, says) in cases {
            let (c, out, err) = interrupt(args, ready, signal, dir);
            assert_eq!(c, 130, "{args:?} {signal}: stdout {out}\nstderr {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            if !says.is_empty() {
                assert!(out.contains(says) || err.contains(says), "{args:?} {signal}: {out}\n{err}");
            }
        }
        let (c, err, kept) = interrupt_sweep(signal, dir);
        assert_eq!(c, 130, "sweep {signal}: {err}");
        assert!(err.contains("interrupted: 1 of 2 cells finished"), "sweep {signal}: {err}");
        assert_eq!(kept, 2, "sweep {signal}: the journal keeps its header and the finished cell");
    }
}

/// The README's two pipelines: a reader that goes away early never makes schedlab panic (101).
#[test]
fn pipelines_with_an_early_reader_exit_do_not_panic() {
    let _serial = serial();
    let bin = env!("CARGO_BIN_EXE_schedlab");
    // sched writes its timestamp files into the working directory.
    let d = tempfile::tempdir().unwrap();
    for (cmd, allowed) in [
        (format!("'{bin}' sched -d 0.3 2>&1 | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}"), &[141][..]),
        (format!("'{bin}' hist </dev/null 2>&1 | head -0; echo ${{PIPESTATUS[0]}}"), &[1, 141][..]),
    ] {
        let out = Command::new("bash").args(["-c", &cmd]).current_dir(d.path()).output().unwrap();
        let status: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or_else(|_| panic!("{cmd}: {out:?}"));
        assert!(allowed.contains(&status), "{cmd}: exit {status}");
    }
}
