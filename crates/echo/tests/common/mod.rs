//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;

use schedlab_echo::client::{self, BurstConfig};
use schedlab_echo::server::{Mode, Server, ServerConfig};
use schedlab_echo::Size;

/// Starts a quiet server of `mode` on an ephemeral loopback port, or prints a SKIP line and
/// returns None when the kernel lacks the mechanism.
pub fn start(mode: Mode) -> Option<Server> {
    if let Err(e) = mode.probe() {
        eprintln!("SKIP: {mode}: {e}");
        return None;
    }
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    Some(Server::start(ServerConfig::new(mode, addr)).unwrap_or_else(|e| panic!("{mode}: {e}")))
}

/// Runs `rounds` verified bursts of `size` bytes; returns the number of RTTs measured.
pub fn bursts(addr: SocketAddr, size: u64, rounds: u64) -> usize {
    let cfg = BurstConfig::new(addr, Size(size), rounds);
    let r = client::run(&cfg, &AtomicBool::new(false), |_| {}).unwrap_or_else(|e| panic!("{size} B x {rounds}: {e}"));
    assert_eq!(r.bytes_verified, size * rounds);
    r.rtt_ns.len()
}
