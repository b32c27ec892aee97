//! What the echo server and echo-bench record about placement and busy poll is what the
//! sockets and threads got: a pin that cannot hold is an error, a refused SO_BUSY_POLL is said as
//! refused, and pinning the client does not leak into the servers' threads.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;

use clap::Parser;
use schedlab_echo::bench::BenchArgs;
use schedlab_echo::client::{self, BurstConfig};
use schedlab_echo::server::{Mode, Server, ServerConfig};
use schedlab_echo::Size;
use schedlab_report::machine::{online_cpus, ThreadInfo};
use schedlab_report::testkit::drop_root_in_this_thread;

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn burst(addr: SocketAddr) {
    let r = client::run(&BurstConfig::new(addr, Size(4096), 3), &AtomicBool::new(false), |_| {}).unwrap();
    assert_eq!(r.bytes_verified, 3 * 4096);
}

#[test]
fn a_server_cpu_this_process_cannot_use_is_an_error_not_an_unpinned_server() {
    for mode in [Mode::Naive, Mode::IoUring] {
        if let Err(e) = mode.probe() {
            schedlab_report::testkit::skip(&format!("{}[{mode}]", schedlab_report::testkit::current_test()), &e.to_string());
            continue;
        }
        let mut cfg = ServerConfig::new(mode, loopback());
        cfg.cpu = Some(1000);
        match Server::start(cfg) {
            Ok(srv) => {
                burst(srv.local_addr());
                let rep = srv.shutdown();
                panic!("{mode}: the server started 'pinned to CPU 1000' and served unpinned: {rep}");
            }
            Err(e) => assert!(e.to_string().contains("CPU 1000"), "{mode}: {e}"),
        }
    }
}

#[test]
fn each_connection_records_the_mask_its_serving_thread_had() {
    let cpu = *online_cpus().last().unwrap();
    for mode in [Mode::Naive, Mode::IoUring] {
        if let Err(e) = mode.probe() {
            schedlab_report::testkit::skip(&format!("{}[{mode}]", schedlab_report::testkit::current_test()), &e.to_string());
            continue;
        }
        let mut cfg = ServerConfig::new(mode, loopback());
        cfg.cpu = Some(cpu);
        let srv = Server::start(cfg).unwrap();
        burst(srv.local_addr());
        let rep = srv.shutdown();
        assert_eq!(rep.requested_cpu, Some(cpu), "{mode}");
        assert_eq!(rep.connections.len(), 1, "{mode}: {rep}");
        let c = &rep.connections[0];
        assert_eq!((c.allowed_cpus.clone(), c.cpu, c.pin_error.clone()), (vec![cpu], cpu as i32, None), "{mode}: {c:?}");
    }
}

#[test]
fn a_refused_so_busy_poll_is_recorded_as_refused_with_what_the_socket_kept() {
    // A server started by a thread without CAP_NET_ADMIN: raising SO_BUSY_POLL is refused.
    let srv = std::thread::spawn(|| {
        drop_root_in_this_thread();
        let mut cfg = ServerConfig::new(Mode::Naive, loopback());
        cfg.busy_poll_us = Some(50);
        Server::start(cfg).unwrap()
    })
    .join()
    .unwrap();
    burst(srv.local_addr());
    let rep = srv.shutdown();
    let c = &rep.connections[0];
    if c.busy_poll_error.is_none() && c.busy_poll_us == Some(50) {
        schedlab_report::skip!("SO_BUSY_POLL was granted to an unprivileged thread here");
    }
    assert_eq!(c.busy_poll_us, Some(0), "read back from the socket: {c:?}");
    let why = c.busy_poll_error.as_deref().expect("the refusal is recorded");
    assert!(why.contains("50us") && why.contains("CAP_NET_ADMIN"), "{why}");
    let line = c.to_string();
    assert!(line.contains("refused") && !line.contains("us set"), "the connection line says busy poll was set: {line}");
}

fn bench_args(out: &std::path::Path, extra: &[&str]) -> BenchArgs {
    let mut argv = vec![
        "echo-bench".to_string(),
        "--modes".into(),
        "naive".into(),
        "--sizes".into(),
        "1B".into(),
        "--rounds".into(),
        "5".into(),
        "--warmup".into(),
        "0".into(),
        "--no-busy-poll".into(),
        "--peer".into(),
        "none".into(),
        "--out".into(),
        out.display().to_string(),
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    BenchArgs::try_parse_from(argv).unwrap()
}

fn out_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("schedlab-echo-placement-{}-{name}", std::process::id()))
}

#[test]
fn echo_bench_client_cpu_pins_the_client_only_and_records_it() {
    let cpus = online_cpus();
    if cpus.len() < 2 {
        schedlab_report::skip!("this process may run on {cpus:?} only: a leaked pin cannot be told apart");
    }
    let cpu = *cpus.last().unwrap();
    let out = out_dir("pin");
    let a = bench_args(&out, &["--client-cpu", &cpu.to_string()]);
    let (code, mask_after) = std::thread::spawn(move || {
        let code = schedlab_echo::bench::main(a).unwrap();
        (code, ThreadInfo::current().allowed_cpus)
    })
    .join()
    .unwrap();
    assert_eq!(code, 0);
    assert_eq!(mask_after, cpus, "the thread that ran echo-bench (and starts its servers) was left pinned to CPU {cpu}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["client_thread"]["allowed_cpus"], serde_json::json!([cpu]), "{}", json["client_thread"]);
    assert_eq!(json["rows"][0]["client_cpu"], serde_json::json!(cpu), "{}", json["rows"][0]);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn echo_bench_cpus_this_process_cannot_use_are_errors() {
    for flag in ["--client-cpu", "--server-cpu"] {
        let out = out_dir(flag.trim_start_matches('-'));
        let r = std::thread::spawn({
            let a = bench_args(&out, &[flag, "1000"]);
            move || schedlab_echo::bench::main(a)
        })
        .join()
        .unwrap();
        let _ = std::fs::remove_dir_all(&out);
        match r {
            Ok(code) => panic!("{flag} 1000: echo-bench ran (exit {code}) with that side unpinned"),
            Err(e) => assert!(format!("{e:#}").contains("CPU 1000") && format!("{e:#}").contains(flag), "{e:#}"),
        }
    }
}
