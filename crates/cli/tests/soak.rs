//! Soak through the built binary, bounded (well under a minute in release):
//! - `schedlab sched` with 32 clients on this machine's cores and rings of 4 slots, every `-alg`:
//!   the JSON's books balance per client and overall (generated = transmitted + dropped + queued);
//! - `schedlab echo` in every mode the kernel allows (a recorded skip otherwise) under 250
//!   concurrent clients: every byte echoed back intact, the server's own report agrees, and the
//!   running server's descriptors and threads (/proc/PID/fd, /proc/PID/task) return to their
//!   count before the clients once they are gone.
//!
//! The in-process soaks (fd and thread counts of a harness run, the echo servers' shutdown) are
//! in crates/sched/tests/soak.rs and crates/echo/tests/concurrent.rs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// The runs load every core: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"))
}

#[test]
fn sched_32_clients_rings_of_4_every_algorithm_books_balance() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("t.txt"), "thread all\n1s 20M 300 2\nthread 0 7\n1s 40M 1500 1\n").unwrap();
    let flows = ["1:1500:16", "2:1500:16"].join(",");
    let mut transmitted = 0;
    for alg in ["fifo", "rr", "wf2qp", "qfq", "alpha", "sf"] {
        let mut args: Vec<String> =
            "-t 32 -f t.txt -q 4 -b 50M -c 2 -d 0.3 --json r.json --".split(' ').map(String::from).collect();
        args.extend(["-alg".into(), alg.into()]);
        if matches!(alg, "rr" | "wf2qp" | "qfq") {
            args.extend(["-flowsets".into(), flows.clone()]);
        }
        let _ = std::fs::remove_file(d.path().join("r.json"));
        Command::cargo_bin("schedlab")
            .unwrap()
            .current_dir(d.path())
            .arg("sched")
            .args(&args)
            .timeout(Duration::from_secs(60))
            .assert()
            .success();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(d.path().join("r.json")).unwrap()).unwrap();
        let clients = v["clients"].as_array().unwrap();
        assert_eq!(clients.len(), 32, "{alg}");
        let (mut gen, mut parts, mut sent) = (0, 0, 0);
        for c in clients {
            let sum = u(c, "transmitted_pkts") + u(c, "ring_full_drops") + u(c, "sched_drops") + u(c, "queued_at_stop_pkts");
            assert_eq!(u(c, "generated_pkts"), sum, "{alg}: generated = transmitted + dropped + queued: {c}");
            assert!(u(c, "queued_at_stop_pkts") <= 4 + u(c, "generated_pkts"), "{alg}");
            gen += u(c, "generated_pkts");
            parts += sum;
            sent += u(c, "transmitted_pkts");
        }
        assert_eq!(gen, parts, "{alg}: overall");
        assert_eq!(u(&v, "total_pkts"), sent, "{alg}: total_pkts is the sum of the clients' transmitted packets");
        assert!(gen > 0, "{alg}: no client generated anything");
        transmitted += sent;
    }
    // A loaded machine can starve one run's scheduler thread, not all six.
    assert!(transmitted > 0, "nothing transmitted with any algorithm");
}

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or_else(|e| panic!("{dir}: {e}"))
}

/// A server process: (fds, threads) from /proc.
fn resources(pid: u32) -> (usize, usize) {
    (count(&format!("/proc/{pid}/fd")), count(&format!("/proc/{pid}/task")))
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `schedlab echo -m MODE` on an ephemeral port; Err(reason) if it refuses to start.
fn start_echo(mode: &str, json: &std::path::Path) -> Result<Server, String> {
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(["echo", "-m", mode, "127.0.0.1:0", "--json"])
        .arg(json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let Some(addr) = first.split("listening on ").nth(1).and_then(|r| r.split(';').next()) else {
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        let _ = child.wait();
        return Err(err.trim().to_string());
    };
    let addr = addr.parse().unwrap();
    // Keep draining stdout so that the server never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Ok(Server { child, addr })
}

/// One client: `rounds` writes of `size` patterned bytes, each read back and compared.
fn client(addr: SocketAddr, id: usize, size: usize, rounds: usize) -> u64 {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("client {id}: connect: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut back = vec![0u8; size];
    for r in 0..rounds {
        let data: Vec<u8> = (0..size).map(|i| (i * 31 + id * 7 + r) as u8).collect();
        s.write_all(&data).unwrap();
        s.read_exact(&mut back).unwrap_or_else(|e| panic!("client {id} round {r}: {e}"));
        assert!(back == data, "client {id} round {r}: echoed bytes differ");
    }
    (size * rounds) as u64
}

#[test]
fn echo_250_concurrent_clients_every_mode_every_byte_and_no_leak() {
    const CLIENTS: usize = 250;
    const SIZES: [usize; 3] = [1, 1500, 32 << 10];
    const ROUNDS: usize = 4;
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for mode in ["naive", "iosubmit", "splice", "sockmap", "io_uring"] {
        let json = d.path().join(format!("{mode}.json"));
        let srv = match start_echo(mode, &json) {
            Ok(s) => s,
            Err(reason) => {
                // Only a missing kernel feature or privilege is a skip; any other refusal fails.
                assert!(reason.contains("is not available"), "echo {mode}: the server failed to start: {reason}");
                let test = format!("{}[{mode}]", schedlab_report::testkit::current_test());
                schedlab_report::testkit::skip(&test, &format!("the server refused to start here: {reason}"));
                continue;
            }
        };
        let pid = srv.child.id();
        // No settling wait: `Server::start` creates every fd and thread the server keeps (the
        // listener, the shutdown eventfd, the ring, the accept thread) before the "listening on"
        // line is printed, so this snapshot is the server's resting state.
        let before = resources(pid);
        let t = Instant::now();
        let sent: u64 = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..CLIENTS)
                .map(|i| {
                    std::thread::Builder::new()
                        .stack_size(256 << 10)
                        .spawn_scoped(sc, move || client(srv.addr, i, SIZES[i % SIZES.len()], ROUNDS))
                        .unwrap()
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        let clients_s = t.elapsed().as_secs_f64();
        // The server notices the closes asynchronously: wait for its counts to come back.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut now = resources(pid);
        while now != before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            now = resources(pid);
        }
        assert_eq!(now, before, "echo {mode}: server (fds, threads) after {CLIENTS} clients vs before");
        let mut srv = srv;
        StdCommand::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
        let status = srv.child.wait().unwrap();
        assert!(status.success(), "echo {mode}: SIGTERM: {status}");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let rep = &v["report"];
        assert_eq!(rep["connections"].as_array().unwrap().len(), CLIENTS, "echo {mode}");
        assert_eq!(u(rep, "bytes_echoed"), sent, "echo {mode}: every byte echoed");
        assert_eq!(u(rep, "refused"), 0, "echo {mode}");
        assert_eq!(u(rep, "bpf_objects_remaining"), 0, "echo {mode}");
        eprintln!("echo {mode}: {CLIENTS} clients, {sent} bytes echoed in {clients_s:.2} s, server (fds, threads) {before:?} before and after");
        ran += 1;
    }
    assert!(ran >= 1, "no echo mode could run here (naive needs nothing special)");
}
