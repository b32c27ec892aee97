//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;

use schedlab_echo::client::{self, BurstConfig};
use schedlab_echo::server::{Mode, Server, ServerConfig, UringData};
use schedlab_echo::Size;

/// Starts a quiet server of `mode` on an ephemeral loopback port, or records a skip (named in
/// CI's summary) and returns None when the kernel lacks the mechanism.
pub fn start(mode: Mode) -> Option<Server> {
    start_with(mode, UringData::default())
}

/// Like [`start`], with the io_uring data path `data`.
pub fn start_with(mode: Mode, data: UringData) -> Option<Server> {
    if let Err(e) = mode.probe() {
        skip_mode(mode, &e.to_string());
        return None;
    }
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut cfg = ServerConfig::new(mode, addr);
    cfg.uring_data = data;
    Some(Server::start(cfg).unwrap_or_else(|e| panic!("{mode}: {e}")))
}

/// Records that the current test skipped `mode` (the other modes still run) for `why`.
pub fn skip_mode(mode: Mode, why: &str) {
    schedlab_report::testkit::skip(&format!("{}[{mode}]", schedlab_report::testkit::current_test()), why);
}

/// Every (mode, io_uring data path) pair worth testing: each mode once, io_uring with each path.
pub fn variants() -> Vec<(Mode, UringData)> {
    let mut v: Vec<_> = Mode::ALL.iter().map(|&m| (m, UringData::default())).collect();
    v.extend(UringData::ALL.iter().filter(|&&d| d != UringData::default()).map(|&d| (Mode::IoUring, d)));
    v
}

/// Runs `rounds` verified bursts of `size` bytes; returns the number of RTTs measured.
pub fn bursts(addr: SocketAddr, size: u64, rounds: u64) -> usize {
    let cfg = BurstConfig::new(addr, Size(size), rounds);
    let r = client::run(&cfg, &AtomicBool::new(false), |_| {}).unwrap_or_else(|e| panic!("{size} B x {rounds}: {e}"));
    assert_eq!(r.bytes_verified, size * rounds);
    r.rtt_ns.len()
}
