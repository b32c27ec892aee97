//! The burst client (the seed's `test-burst`): per round, send a burst of SIZE bytes and time
//! until all of it has come back, verifying every byte.
//!
//! - `Burst` (default, the seed's semantics): the socket is non-blocking; the client keeps
//!   sending whatever fits while reading back whatever has arrived, so bursts larger than the
//!   socket buffers cannot deadlock.
//! - `Rr` (request/response): send the whole burst, then read the whole echo. A burst larger
//!   than what the two socket buffers hold can deadlock against any echo server; the round
//!   timeout turns that into an error that says so.
//!
//! Each round's bytes are a pseudo-random pattern derived from the round number, so a stale,
//! short, reordered or corrupted echo is caught as a [`EchoError::Mismatch`].

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::IoContext;
use crate::{sys, EchoError, Size};

/// How a round is driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientMode {
    /// Send non-blocking while reading the echo back (the seed).
    Burst,
    /// Send everything, then read everything.
    Rr,
}

/// What the client is asked to do.
#[derive(Clone, Debug)]
pub struct BurstConfig {
    pub addr: SocketAddr,
    pub size: Size,
    /// Measured rounds.
    pub rounds: u64,
    /// Rounds run first and not recorded.
    pub warmup: u64,
    pub mode: ClientMode,
    pub busy_poll_us: Option<u32>,
    /// Pause after connecting (the seed waited 1 s).
    pub settle: Duration,
    /// Longest a round (and the connect) may take.
    pub timeout: Duration,
}

impl BurstConfig {
    /// Seed-like defaults for `size` × `rounds` against `addr`, without the settle pause.
    pub fn new(addr: SocketAddr, size: Size, rounds: u64) -> Self {
        BurstConfig {
            addr,
            size,
            rounds,
            warmup: 0,
            mode: ClientMode::Burst,
            busy_poll_us: None,
            settle: Duration::ZERO,
            timeout: Duration::from_secs(10),
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct BurstResult {
    /// Round-trip time of every measured round, in nanoseconds.
    pub rtt_ns: Vec<u64>,
    pub local_addr: String,
    /// Socket buffers the kernel granted (asked: twice the burst).
    pub sndbuf_bytes: usize,
    pub rcvbuf_bytes: usize,
    /// `SO_BUSY_POLL` read back, when asked for.
    pub busy_poll_us: Option<u32>,
    /// `SO_INCOMING_NAPI_ID` of the client socket at the end (0: busy poll cannot act).
    pub napi_id: Option<u32>,
    /// True when the run was stopped before all rounds were done.
    pub interrupted: bool,
    /// Bytes sent and verified.
    pub bytes_verified: u64,
}

/// Fills `buf` with the pattern of round `round` (splitmix64 words).
pub fn fill_pattern(buf: &mut [u8], round: u64) {
    let mut x = round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    for chunk in buf.chunks_mut(8) {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let bytes = z.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// Connects, runs `warmup + rounds` rounds and calls `on_rtt` with each measured RTT (ns).
/// Stops early (with `interrupted`) when `stop` becomes true.
pub fn run(cfg: &BurstConfig, stop: &AtomicBool, mut on_rtt: impl FnMut(u64)) -> Result<BurstResult, EchoError> {
    let stream = TcpStream::connect_timeout(&cfg.addr, cfg.timeout).map_err(|e| {
        EchoError::io(format!("cannot connect to {} (is an echo server listening there?)", cfg.addr), e)
    })?;
    let fd = stream.as_raw_fd();
    sys::set_nodelay(fd).ctx(|| "setting TCP_NODELAY")?;
    let busy_poll_us = match cfg.busy_poll_us {
        Some(us) => Some(sys::set_busy_poll(fd, us).ctx(|| format!("setting SO_BUSY_POLL={us}us (needs CAP_NET_ADMIN: run as root)"))?),
        None => None,
    };
    let (sndbuf_bytes, rcvbuf_bytes) = sys::set_buffers(fd, 2 * cfg.size.len());
    stream.set_nonblocking(true).ctx(|| "making the socket non-blocking")?;
    let local_addr = stream.local_addr().map(|a| a.to_string()).unwrap_or_default();
    if !cfg.settle.is_zero() {
        sleep_unless(stop, cfg.settle);
    }
    let n = cfg.size.len();
    let mut sbuf = vec![0u8; n];
    let mut rbuf = vec![0u8; n];
    let mut rtt_ns = Vec::with_capacity(cfg.rounds.min(1 << 20) as usize);
    let mut interrupted = false;
    let mut bytes_verified = 0u64;
    for round in 0..cfg.warmup + cfg.rounds {
        if stop.load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
        fill_pattern(&mut sbuf, round);
        let ns = one_round(&stream, cfg, round, &sbuf, &mut rbuf)?;
        if let Some(offset) = sbuf.iter().zip(rbuf.iter()).position(|(a, b)| a != b) {
            return Err(EchoError::Mismatch { round, offset, size: n, sent: sbuf[offset], got: rbuf[offset] });
        }
        bytes_verified += n as u64;
        if round >= cfg.warmup {
            rtt_ns.push(ns);
            on_rtt(ns);
        }
    }
    let napi_id = busy_poll_us.and_then(|_| sys::napi_id(fd).ok());
    Ok(BurstResult { rtt_ns, local_addr, sndbuf_bytes, rcvbuf_bytes, busy_poll_us, napi_id, interrupted, bytes_verified })
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) && Instant::now() < end {
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
}

/// One round; returns its RTT in ns (the check of the bytes happens after the clock stopped).
fn one_round(mut s: &TcpStream, cfg: &BurstConfig, round: u64, sbuf: &[u8], rbuf: &mut [u8]) -> Result<u64, EchoError> {
    let n = sbuf.len();
    let t0 = Instant::now();
    let deadline = t0 + cfg.timeout;
    let (mut sent, mut got) = (0usize, 0usize);
    while got < n {
        let mut progress = false;
        if sent < n {
            match s.write(&sbuf[sent..]) {
                Ok(k) => {
                    sent += k;
                    progress |= k > 0;
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(EchoError::io(format!("sending round {round} to {}", cfg.addr), e)),
            }
        }
        let may_read = cfg.mode == ClientMode::Burst || sent == n;
        if may_read {
            match s.read(&mut rbuf[got..]) {
                Ok(0) => return Err(EchoError::Closed { round, got, size: n }),
                Ok(k) => {
                    got += k;
                    progress = true;
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(EchoError::io(format!("receiving the echo of round {round} from {}", cfg.addr), e)),
            }
        }
        if !progress && got < n {
            let now = Instant::now();
            if now >= deadline {
                let hint = if cfg.mode == ClientMode::Rr && sent < n {
                    " (request/response with a burst larger than the socket buffers deadlocks: use the default burst mode)"
                } else {
                    " (is the server alive and echoing?)"
                };
                return Err(EchoError::Timeout { round, secs: cfg.timeout.as_secs_f64(), sent, got, size: n, hint });
            }
            let events = if sent < n { libc::POLLOUT } else { 0 } | if may_read { libc::POLLIN } else { 0 };
            let ms = (deadline - now).as_millis().clamp(1, 1000) as i32;
            sys::poll(&[(s.as_raw_fd(), events)], ms).ctx(|| "poll on the client socket")?;
        }
    }
    Ok(t0.elapsed().as_nanos() as u64)
}

fn would_block(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_differ_between_rounds_and_fill_tails() {
        let mut a = vec![0u8; 13];
        let mut b = vec![0u8; 13];
        fill_pattern(&mut a, 1);
        fill_pattern(&mut b, 2);
        assert_ne!(a, b);
        assert_ne!(&a[8..], &[0u8; 5][..], "tail shorter than a word is filled too");
        let mut c = vec![0u8; 13];
        fill_pattern(&mut c, 1);
        assert_eq!(a, c, "deterministic");
    }

    /// A server that echoes one byte wrong is caught.
    #[test]
    fn corrupt_echo_is_a_mismatch() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 100];
            s.read_exact(&mut buf).unwrap();
            buf[42] ^= 1;
            s.write_all(&buf).unwrap();
        });
        let cfg = BurstConfig::new(addr, Size(100), 1);
        let err = run(&cfg, &AtomicBool::new(false), |_| {}).unwrap_err();
        t.join().unwrap();
        assert!(matches!(err, EchoError::Mismatch { round: 0, offset: 42, .. }), "{err}");
    }

    /// A server that swallows data makes the round time out rather than hang.
    #[test]
    fn silent_server_times_out() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut cfg = BurstConfig::new(addr, Size(10), 1);
        cfg.timeout = Duration::from_millis(300);
        let err = run(&cfg, &AtomicBool::new(false), |_| {}).unwrap_err();
        assert!(matches!(err, EchoError::Timeout { round: 0, sent: 10, got: 0, .. }), "{err}");
        drop(l);
    }
}
