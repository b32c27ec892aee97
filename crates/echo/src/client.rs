//! The burst client (the seed's `test-burst`): per round, send a burst of SIZE bytes and time
//! until all of it has come back, verifying every byte.
//!
//! - `Burst` (default, the seed's semantics, and its system calls): while sending, the client
//!   alternates a non-blocking `sendmsg` with a non-blocking `recv` and spins (no `poll`) when
//!   neither moves; once everything is sent it blocks in `recv(MSG_WAITALL)`.
//! - With [`BurstConfig::spin`] the client never sleeps: once everything is sent it keeps
//!   receiving non-blocking (spinning) instead of blocking in `MSG_WAITALL`, so the RTT no longer
//!   includes the client's own wake-ups (test-burst does not do this; the default does as it does).
//! - `Rr` (request/response): send the whole burst, then read the whole echo. A burst larger
//!   than what the two socket buffers hold can deadlock against any echo server; the round
//!   timeout turns that into an error that says so.
//!
//! What the client adds to the measurement is kept as small as test-burst's: the bytes sent are
//! a [`Pattern`] of 2 × 16448 bytes (64 × a prime period), sent through an iovec that points into it
//! over and over; each round starts at another phase of it, so that a stale, short, shifted or
//! corrupted echo is caught as an [`EchoError::Mismatch`]. The echo is received into one hot
//! 128 KiB ring (test-burst's receive buffer size) and checked against the pattern just before
//! the ring wraps over it, and the last part after the clock has stopped. Every byte is
//! checked; for bursts up to 128 KiB, none inside the timed span. What the client costs (CPU
//! time per round, and the time spent checking, inside and outside the span) is measured and
//! reported in [`ClientCost`].

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use schedlab_report::disturb::Probe;
use schedlab_report::frontend::now_ns;
use serde::Serialize;

use crate::error::IoContext;
use crate::sys::LINE;
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

/// A number of rounds (`burst ROUNDS`, `echo-bench --rounds`): a whole number, at least 1.
pub fn parse_rounds(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("rounds must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a whole number of rounds")),
    }
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
    /// TCP congestion control of the client socket (the originals set `cubic`); None: the
    /// system default.
    pub congestion: Option<String>,
    /// Never sleep: receive non-blocking until the echo is back (spin) instead of blocking in
    /// `MSG_WAITALL` once everything is sent. False (test-burst's way) by default.
    pub spin: bool,
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
            congestion: Some(DEFAULT_CONGESTION.to_string()),
            spin: false,
        }
    }
}

/// The congestion control the originals set on every socket ("more stable in tests than bbr").
pub const DEFAULT_CONGESTION: &str = "cubic";

/// What the client itself cost over the measured rounds, per round.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ClientCost {
    /// CPU time of the client thread per round (user + system), microseconds.
    pub cpu_us_per_round: f64,
    /// Of which in user space.
    pub user_us_per_round: f64,
    /// Of which in the kernel (system calls, TCP).
    pub sys_us_per_round: f64,
    /// Time spent checking the echo per round, microseconds, all of it.
    pub verify_us_per_round: f64,
    /// Of which inside the timed span (checking the ring before it wraps: bursts over 128 KiB).
    pub verify_in_span_us_per_round: f64,
    /// System calls per round (send + receive).
    pub syscalls_per_round: f64,
    /// Passes of the send/receive loop that moved nothing, per round (spins).
    pub idle_spins_per_round: f64,
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
    /// Congestion control in effect on the client socket.
    pub congestion: String,
    /// What the client itself cost.
    pub cost: ClientCost,
    /// What disturbed the client thread over the measured rounds (switches: its blocking
    /// receives are voluntary ones; migrations; the longest gap between two rounds' ends).
    pub disturbance: Option<schedlab_report::disturb::Disturbance>,
}

/// Period of the pattern: 64 × 257 (257 prime): a whole number of cache lines (see
/// [`Pattern`]), and no power of two is a multiple of it, so no power-of-two size or stride
/// lines up with it.
pub const PERIOD: usize = LINE * PHASES as usize;
/// Distinct phases a round can start at (prime).
const PHASES: u64 = 257;
/// The receive ring (test-burst's receive buffer size).
pub const RING: usize = 128 << 10;

/// The bytes every round sends: a pseudo-random sequence of period [`PERIOD`], stored twice so
/// that any `PERIOD` bytes from any phase are one contiguous slice. Round `r` starts at phase
/// [`Pattern::phase`]`(r)`, so byte `i` of round `r` is `byte((phase(r) + i) % PERIOD)`.
///
/// The buffer is page-aligned, and the period and every phase are whole cache lines, so byte `i`
/// of a round is sent from an address at `i % 64` within its line: where the kernel's send copy
/// (`rep movsb`) puts it in the socket's page fragment, which the stream fills contiguously from
/// a page start. Source and destination then sit at the same offset within a line, the copy's
/// fast case (see [`sys::AlignedBuf`]). With the earlier prime period (16381) and phases at any
/// byte, the pieces of a burst lay at every offset against their destination: 1 MiB rounds
/// against the original echo-naive cost 333 us of client CPU (test-burst: 245 us), aligned 296
/// us (medians of 6 alternating runs, same server, `perf stat` task-clock).
pub struct Pattern {
    buf: sys::AlignedBuf,
}

impl Default for Pattern {
    fn default() -> Self {
        Self::new()
    }
}

impl Pattern {
    /// The pattern (splitmix64 words).
    pub fn new() -> Pattern {
        let mut buf = sys::AlignedBuf::zeroed(2 * PERIOD);
        let mut x: u64 = 0xD1B5_4A32_D192_ED03;
        for chunk in buf[..PERIOD].chunks_mut(8) {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
        buf.copy_within(..PERIOD, PERIOD);
        Pattern { buf }
    }

    /// Where round `round` starts in the pattern: at a whole line, consecutive rounds 101 lines
    /// apart, and a phase comes back only every [`PHASES`] rounds.
    pub fn phase(round: u64) -> usize {
        ((round % PHASES) * 101 % PHASES) as usize * LINE
    }

    /// Byte `offset` of the round starting at `phase`.
    pub fn byte(&self, phase: usize, offset: u64) -> u8 {
        self.buf[((phase as u64 + offset) % PERIOD as u64) as usize]
    }

    /// Fills `out` with the bytes `offset..offset + out.len()` of the round starting at `phase`.
    pub fn fill(&self, phase: usize, offset: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let p = ((phase as u64 + offset + done as u64) % PERIOD as u64) as usize;
            let k = (out.len() - done).min(PERIOD);
            out[done..done + k].copy_from_slice(&self.buf[p..p + k]);
            done += k;
        }
    }

    /// Checks `got`, which should be bytes `offset..` of the round starting at `phase`; returns
    /// the index in `got` of the first wrong byte.
    pub fn check(&self, phase: usize, offset: u64, got: &[u8]) -> Option<usize> {
        let mut done = 0;
        while done < got.len() {
            let p = ((phase as u64 + offset + done as u64) % PERIOD as u64) as usize;
            let k = (got.len() - done).min(PERIOD);
            let want = &self.buf[p..p + k];
            if got[done..done + k] != *want {
                return got[done..done + k].iter().zip(want).position(|(a, b)| a != b).map(|i| done + i);
            }
            done += k;
        }
        None
    }

    /// Points `iov` at the bytes `offset..offset + len` of the round starting at `phase`:
    /// slices of the pattern, each at most `PERIOD` long; returns how many entries are used.
    fn iovecs(&self, phase: usize, offset: u64, len: usize, iov: &mut [libc::iovec]) -> usize {
        let p = ((phase as u64 + offset) % PERIOD as u64) as usize;
        let mut left = len;
        let mut n = 0;
        while left > 0 && n < iov.len() {
            let k = left.min(PERIOD);
            iov[n] = libc::iovec { iov_base: self.buf[p..].as_ptr() as *mut libc::c_void, iov_len: k };
            left -= k;
            n += 1;
        }
        n
    }
}

/// Iovec entries per `sendmsg` (1 MiB = 65 entries; bigger bursts take several calls).
const IOVS: usize = 256;

/// The receiving side of a round: a ring that is checked before it is overwritten.
struct Rx {
    ring: sys::AlignedBuf,
    /// Stream offset up to which the echo has been checked.
    checked: u64,
    /// Time spent checking, ns: all, and inside the timed span.
    verify_ns: u64,
    verify_in_span_ns: u64,
}

impl Rx {
    /// Checks the received bytes `self.checked..upto` (all still in the ring).
    fn check(&mut self, pat: &Pattern, phase: usize, upto: u64, round: u64, size: usize, in_span: bool) -> Result<(), EchoError> {
        if upto <= self.checked {
            return Ok(());
        }
        let t = Instant::now();
        while self.checked < upto {
            let r = (self.checked % RING as u64) as usize;
            let k = ((upto - self.checked) as usize).min(RING - r);
            if let Some(i) = pat.check(phase, self.checked, &self.ring[r..r + k]) {
                let offset = (self.checked + i as u64) as usize;
                return Err(EchoError::Mismatch {
                    round,
                    offset,
                    size,
                    sent: pat.byte(phase, offset as u64),
                    got: self.ring[r + i],
                });
            }
            self.checked += k as u64;
        }
        let ns = t.elapsed().as_nanos() as u64;
        self.verify_ns += ns;
        if in_span {
            self.verify_in_span_ns += ns;
        }
        Ok(())
    }
}

/// One connection of a run: the socket, what the kernel granted, and what was measured on it.
struct Conn {
    cfg: BurstConfig,
    stream: TcpStream,
    local_addr: String,
    sndbuf_bytes: usize,
    rcvbuf_bytes: usize,
    busy_poll_us: Option<u32>,
    congestion: String,
    rx: Rx,
    counts: Counts,
    rtt_ns: Vec<u64>,
    bytes_verified: u64,
    /// Thread CPU time (user, system) spent on this connection's measured rounds, ns.
    cpu_ns: (u64, u64),
    /// Several targets: thread CPU time (CLOCK_THREAD_CPUTIME_ID) of this connection's measured
    /// rounds, ns; split into user and system in the proportion of the whole run.
    cpu_clock_ns: u64,
}

impl Conn {
    /// Connects to `cfg.addr` and sets the socket up as test-burst does.
    fn open(cfg: BurstConfig) -> Result<Conn, EchoError> {
        let stream = TcpStream::connect_timeout(&cfg.addr, cfg.timeout)
            .map_err(|e| EchoError::io(format!("cannot connect to {} (is an echo server listening there?)", cfg.addr), e))?;
        let fd = stream.as_raw_fd();
        sys::set_nodelay(fd).ctx(|| "setting TCP_NODELAY")?;
        if let Some(cc) = &cfg.congestion {
            if let Err(e) = sys::set_congestion(fd, cc) {
                eprintln!("warning: cannot set TCP_CONGESTION={cc} ({e}); see /proc/sys/net/ipv4/tcp_available_congestion_control; keeping the system default");
            }
        }
        let congestion = sys::congestion(fd).unwrap_or_default();
        let busy_poll_us = match cfg.busy_poll_us {
            Some(us) => Some(
                sys::set_busy_poll(fd, us)
                    .ctx(|| format!("setting SO_BUSY_POLL={us}us (some kernels let only CAP_NET_ADMIN raise it: run as root)"))?,
            ),
            None => None,
        };
        // Like test-burst: ask for twice the burst, within the system's limits (rmem_max/wmem_max).
        let (sndbuf_bytes, rcvbuf_bytes) = sys::set_buffers_plain(fd, 2 * cfg.size.len());
        // A blocking receive never waits longer than a round may take.
        sys::set_timeout(fd, libc::SO_RCVTIMEO, cfg.timeout).ctx(|| "setting SO_RCVTIMEO")?;
        let local_addr = stream.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let n = cfg.size.len();
        let rtt_ns = Vec::with_capacity(cfg.rounds.min(1 << 20) as usize);
        Ok(Conn {
            stream,
            local_addr,
            sndbuf_bytes,
            rcvbuf_bytes,
            busy_poll_us,
            congestion,
            rx: Rx { ring: sys::AlignedBuf::zeroed(RING.min(n)), checked: 0, verify_ns: 0, verify_in_span_ns: 0 },
            counts: Counts::default(),
            rtt_ns,
            bytes_verified: 0,
            cpu_ns: (0, 0),
            cpu_clock_ns: 0,
            cfg,
        })
    }

    /// Forgets the warm-up's counts: what follows is measured.
    fn start_measuring(&mut self) {
        self.rx.verify_ns = 0;
        self.rx.verify_in_span_ns = 0;
        self.counts = Counts::default();
    }

    fn result(self, interrupted: bool) -> BurstResult {
        let measured = self.rtt_ns.len().max(1) as f64;
        let per = |ns: u64| ns as f64 / 1000.0 / measured;
        let (u, s) = self.cpu_ns;
        let cost = if self.rtt_ns.is_empty() {
            ClientCost::default()
        } else {
            ClientCost {
                cpu_us_per_round: per(u + s),
                user_us_per_round: per(u),
                sys_us_per_round: per(s),
                verify_us_per_round: per(self.rx.verify_ns),
                verify_in_span_us_per_round: per(self.rx.verify_in_span_ns),
                syscalls_per_round: self.counts.syscalls as f64 / measured,
                idle_spins_per_round: self.counts.spins as f64 / measured,
            }
        };
        let napi_id = self.busy_poll_us.and_then(|_| sys::napi_id(self.stream.as_raw_fd()).ok());
        BurstResult {
            rtt_ns: self.rtt_ns,
            local_addr: self.local_addr,
            sndbuf_bytes: self.sndbuf_bytes,
            rcvbuf_bytes: self.rcvbuf_bytes,
            busy_poll_us: self.busy_poll_us,
            napi_id,
            interrupted,
            bytes_verified: self.bytes_verified,
            congestion: self.congestion,
            cost,
            disturbance: None,
        }
    }
}

/// Connects, runs `warmup + rounds` rounds and calls `on_rtt` with each measured RTT (ns).
/// Stops early (with `interrupted`) when `stop` becomes true.
pub fn run(cfg: &BurstConfig, stop: &AtomicBool, mut on_rtt: impl FnMut(u64)) -> Result<BurstResult, EchoError> {
    let mut c = Conn::open(cfg.clone())?;
    if !cfg.settle.is_zero() {
        sleep_unless(stop, cfg.settle);
    }
    let pat = Pattern::new();
    let mut interrupted = false;
    // The iovecs of every send, set up once: filling (or zeroing) 256 entries per sendmsg cost
    // a 4 KiB memset per call, 0.7% of the client's CPU at 1 KiB (perf record).
    let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; IOVS];
    let mut start = None;
    let mut probe = None;
    let fd = c.stream.as_raw_fd();
    for round in 0..cfg.warmup + cfg.rounds {
        if stop.load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
        if round == cfg.warmup {
            c.start_measuring();
            start = Some(sys::thread_times());
            probe = Some(Probe::start(now_ns()));
        }
        let ns = one_round(fd, &c.cfg, round, &pat, &mut c.rx, &mut iov, &mut c.counts)?;
        c.bytes_verified += cfg.size.len() as u64;
        if round >= cfg.warmup {
            c.rtt_ns.push(ns);
            on_rtt(ns);
        }
        // One clock read per round, after it (outside the timed span).
        if let Some(p) = probe.as_mut() {
            p.tick(now_ns());
        }
    }
    // One target: the CPU time of the whole measured span (no extra system calls between rounds).
    if let Some((u0, s0)) = start {
        let (u1, s1) = sys::thread_times();
        c.cpu_ns = (u1.saturating_sub(u0), s1.saturating_sub(s0));
    }
    let mut r = c.result(interrupted);
    r.disturbance = probe.map(|p| p.finish("client"));
    Ok(r)
}

/// The order in which round `round` visits `k` targets: the rotation of `0..k` by `round`, and
/// reversed every other cycle of `k` rounds. Over `2k` rounds every target takes every place
/// in the order equally often, and no target always follows the same one.
pub fn target_order(round: u64, k: usize) -> impl Iterator<Item = usize> {
    let rot = (round % k as u64) as usize;
    let rev = (round / k as u64) % 2 == 1;
    (0..k).map(move |j| {
        let j = if rev { k - 1 - j } else { j };
        (j + rot) % k
    })
}

/// Several echo servers in one run: connects to every address of `targets` (in order; each
/// with `cfg`'s settings), pauses `cfg.settle` once, then runs `warmup + rounds` rounds on each
/// connection, interleaved round by round in [`target_order`], so that the targets are measured
/// within microseconds to milliseconds of each other and a slow phase of the machine hits all of
/// them alike. Every byte of every echo is checked. `on_rtt(target, ns)` gets each measured RTT.
/// The client CPU time is taken around each round and charged to its target (its user/system
/// split is the whole run's). Errors name the
/// target ([`EchoError::Target`]).
pub fn run_targets(
    cfg: &BurstConfig,
    targets: &[SocketAddr],
    stop: &AtomicBool,
    mut on_rtt: impl FnMut(usize, u64),
) -> Result<Vec<BurstResult>, EchoError> {
    let named = |i: usize, err: EchoError| EchoError::Target { index: i + 1, addr: targets[i].to_string(), err: Box::new(err) };
    let mut conns = Vec::with_capacity(targets.len());
    for (i, &addr) in targets.iter().enumerate() {
        let mut c = cfg.clone();
        c.addr = addr;
        conns.push(Conn::open(c).map_err(|e| named(i, e))?);
    }
    if !cfg.settle.is_zero() {
        sleep_unless(stop, cfg.settle);
    }
    let pat = Pattern::new();
    let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; IOVS];
    let mut interrupted = false;
    let mut start = None;
    let mut probe = None;
    'rounds: for round in 0..cfg.warmup + cfg.rounds {
        if round == cfg.warmup {
            start = Some(sys::thread_times());
            probe = Some(Probe::start(now_ns()));
        }
        // One clock read per round of all targets, between rounds.
        if let Some(p) = probe.as_mut().filter(|_| round > cfg.warmup) {
            p.tick(now_ns());
        }
        for i in target_order(round, conns.len()) {
            if stop.load(Ordering::SeqCst) {
                interrupted = true;
                break 'rounds;
            }
            let c = &mut conns[i];
            if round == cfg.warmup {
                c.start_measuring();
            }
            let t0 = thread_cpu_ns();
            let ns = one_round(c.stream.as_raw_fd(), &c.cfg, round, &pat, &mut c.rx, &mut iov, &mut c.counts)
                .map_err(|e| named(i, e))?;
            c.bytes_verified += cfg.size.len() as u64;
            if round >= cfg.warmup {
                c.cpu_clock_ns += thread_cpu_ns().saturating_sub(t0);
                c.rtt_ns.push(ns);
                on_rtt(i, ns);
            }
        }
    }
    // getrusage's user/system split is tick-based: exact over a run, not per round. Each
    // target's CPU time is measured per round (thread CPU clock) and split like the whole run.
    if let Some((u0, s0)) = start {
        let (u1, s1) = sys::thread_times();
        let (u, s) = (u1.saturating_sub(u0), s1.saturating_sub(s0));
        let user_share = if u + s > 0 { u as f64 / (u + s) as f64 } else { 0.0 };
        for c in &mut conns {
            let user = (c.cpu_clock_ns as f64 * user_share).round() as u64;
            c.cpu_ns = (user, c.cpu_clock_ns - user.min(c.cpu_clock_ns));
        }
    }
    // One thread visits every target: its disturbance is every target's.
    let disturbance = probe.map(|mut p| {
        p.tick(now_ns());
        p.finish("client")
    });
    Ok(conns
        .into_iter()
        .map(|c| {
            let mut r = c.result(interrupted);
            r.disturbance = disturbance.clone();
            r
        })
        .collect())
}

/// CPU time of the calling thread, ns (`CLOCK_THREAD_CPUTIME_ID`: exact, unlike getrusage's
/// tick-based split).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is live; clock_gettime writes one timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[derive(Default)]
struct Counts {
    syscalls: u64,
    spins: u64,
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) && Instant::now() < end {
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
}

/// `sendmsg` of the pattern bytes `offset..offset + len` of the round at `phase`, through `iov`
/// (scratch space, reused from call to call).
fn send_pattern(
    fd: RawFd,
    pat: &Pattern,
    phase: usize,
    offset: u64,
    len: usize,
    iov: &mut [libc::iovec; IOVS],
    flags: libc::c_int,
) -> io::Result<usize> {
    let cnt = pat.iovecs(phase, offset, len, iov);
    // SAFETY: a zeroed msghdr is valid (no name, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = cnt as _;
    // SAFETY: msg points at `cnt` iovecs, each into the live pattern buffer, which the kernel
    // only reads.
    let r = unsafe { libc::sendmsg(fd, &msg, flags | libc::MSG_NOSIGNAL) };
    sys::cvt(r as libc::c_long).map(|k| k as usize)
}

/// `recv` into `buf`.
fn recv_into(fd: RawFd, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: buf is live and writable for buf.len() bytes.
    let r = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    sys::cvt(r as libc::c_long).map(|k| k as usize)
}

/// One round; returns its RTT in ns. The clock stops when the last byte has arrived; what is
/// left to check in the ring is checked after that.
fn one_round(
    fd: RawFd,
    cfg: &BurstConfig,
    round: u64,
    pat: &Pattern,
    rx: &mut Rx,
    iov: &mut [libc::iovec; IOVS],
    counts: &mut Counts,
) -> Result<u64, EchoError> {
    let n = cfg.size.len();
    let phase = Pattern::phase(round);
    rx.checked = 0;
    let t0 = Instant::now();
    let deadline = t0 + cfg.timeout;
    let (mut sent, mut got) = (0usize, 0usize);
    let mut idle = 0u32;
    let timeout = |sent: usize, got: usize| {
        let hint = if cfg.mode == ClientMode::Rr && sent < n {
            " (request/response with a burst larger than the socket buffers deadlocks: use the default burst mode)"
        } else {
            " (is the server alive and echoing?)"
        };
        EchoError::Timeout { round, secs: cfg.timeout.as_secs_f64(), sent, got, size: n, hint }
    };
    let recv_err = |e| EchoError::io(format!("receiving the echo of round {round} from {}", cfg.addr), e);
    while got < n {
        let mut progress = false;
        if sent < n {
            counts.syscalls += 1;
            match send_pattern(fd, pat, phase, sent as u64, n - sent, iov, libc::MSG_DONTWAIT) {
                Ok(k) => {
                    sent += k;
                    progress |= k > 0;
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(EchoError::io(format!("sending round {round} to {}", cfg.addr), e)),
            }
        }
        if cfg.mode == ClientMode::Rr && sent < n {
            if !progress {
                counts.spins += 1;
                idle += 1;
                if idle.is_multiple_of(1024) && Instant::now() >= deadline {
                    return Err(timeout(sent, got));
                }
            }
            continue;
        }
        // Receive into the ring, up to its end; what is about to be overwritten is checked first.
        let r = got % RING;
        let room = (RING - r).min(n - got);
        if got + room > RING {
            rx.check(pat, phase, (got + room - RING) as u64, round, n, true)?;
        }
        // Everything sent: block until this stretch of the ring is full (test-burst blocks in
        // MSG_WAITALL for the rest of the burst), unless asked to spin.
        let flags = if sent == n && !cfg.spin { libc::MSG_WAITALL } else { libc::MSG_DONTWAIT };
        counts.syscalls += 1;
        match recv_into(fd, &mut rx.ring[r..r + room], flags) {
            Ok(0) => return Err(EchoError::Closed { round, got, size: n }),
            Ok(k) => {
                got += k;
                progress = true;
            }
            Err(e) if would_block(&e) && sent < n => {}
            Err(e) if would_block(&e) => {
                if e.kind() == io::ErrorKind::WouldBlock && Instant::now() >= deadline {
                    return Err(timeout(sent, got));
                }
            }
            Err(e) => return Err(recv_err(e)),
        }
        if !progress {
            counts.spins += 1;
            idle += 1;
            if idle.is_multiple_of(1024) && Instant::now() >= deadline {
                return Err(timeout(sent, got));
            }
        }
    }
    let ns = t0.elapsed().as_nanos() as u64;
    rx.check(pat, phase, n as u64, round, n, false)?;
    Ok(ns)
}

fn would_block(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted)
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;
    use std::io::{Read, Write};

    #[test]
    fn rounds_start_at_different_phases() {
        let p = Pattern::new();
        let mut a = vec![0u8; 13];
        let mut b = vec![0u8; 13];
        p.fill(Pattern::phase(1), 0, &mut a);
        p.fill(Pattern::phase(2), 0, &mut b);
        assert_ne!(a, b);
        let phases: std::collections::HashSet<usize> = (0..PHASES).map(Pattern::phase).collect();
        assert_eq!(phases.len(), PHASES as usize, "every phase once per PHASES rounds");
        assert!(phases.iter().all(|&p| p % LINE == 0 && p < PERIOD));
        assert_eq!(Pattern::phase(PHASES), Pattern::phase(0));
    }

    proptest! {
        /// The iovecs, the fill and the byte function describe the same bytes, and the check
        /// finds exactly the first corrupted byte.
        #[test]
        fn pattern_views_agree(round in 0u64..100_000, offset in 0u64..(1 << 22), len in 1usize..70_000, flip in any::<prop::sample::Index>()) {
            let p = Pattern::new();
            let ph = Pattern::phase(round);
            let mut f = vec![0u8; len];
            p.fill(ph, offset, &mut f);
            for (i, &b) in f.iter().enumerate().step_by(97) {
                prop_assert_eq!(b, p.byte(ph, offset + i as u64));
            }
            let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; IOVS];
            let cnt = p.iovecs(ph, offset, len, &mut iov);
            let mut cat = Vec::with_capacity(len);
            for v in &iov[..cnt] {
                // SAFETY: the iovec points into p's buffer, alive here.
                cat.extend_from_slice(unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len) });
            }
            prop_assert_eq!(&cat, &f);
            prop_assert_eq!(p.check(ph, offset, &f), None);
            let i = flip.index(len);
            f[i] ^= 0x40;
            prop_assert_eq!(p.check(ph, offset, &f), Some(i));
        }
    }

    /// Every byte is sent from an address at its stream offset within a cache line (see
    /// [`Pattern`]): at any round's phase, from any offset, across the period's end.
    #[test]
    fn bytes_are_sent_from_their_stream_offset_within_a_line() {
        let p = Pattern::new();
        let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; IOVS];
        for round in [0, 1, 2, 100, PHASES - 1, 12345] {
            let ph = Pattern::phase(round);
            for offset in [0u64, 1, 63, 64, 1000, PERIOD as u64 - 1, 65483, 1 << 20] {
                let cnt = p.iovecs(ph, offset, 70_000, &mut iov);
                assert!(cnt > 1, "crosses the period's end");
                let mut pos = offset;
                for v in &iov[..cnt] {
                    assert_eq!(v.iov_base as usize % LINE, (pos % LINE as u64) as usize, "round {round}, offset {pos}");
                    pos += v.iov_len as u64;
                }
                assert_eq!(pos, offset + 70_000);
            }
        }
    }

    /// A server that echoes one chunk of the stream shifted by one byte is caught where the
    /// shift starts, in a round larger than the ring (checked while it wraps).
    #[test]
    fn shifted_echo_in_a_large_burst_is_a_mismatch() {
        for spin in [false, true] {
            shifted_echo_in_a_large_burst(spin);
        }
    }

    fn shifted_echo_in_a_large_burst(spin: bool) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let n = 3 * RING + 5;
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; n];
            let mut r = s.try_clone().unwrap();
            let reader = std::thread::spawn(move || {
                r.read_exact(&mut buf).unwrap();
                buf
            });
            let buf = reader.join().unwrap();
            let mut echo = buf.clone();
            echo[RING + 10..].copy_from_slice(&buf[RING + 9..n - 1]);
            let _ = s.write_all(&echo);
            echo.iter().zip(&buf).position(|(a, b)| a != b).unwrap()
        });
        let mut cfg = BurstConfig::new(addr, Size(n as u64), 1);
        cfg.spin = spin;
        let err = run(&cfg, &AtomicBool::new(false), |_| {}).unwrap_err();
        let want = t.join().unwrap();
        assert!(want >= RING + 10);
        assert!(matches!(err, EchoError::Mismatch { round: 0, offset, .. } if offset == want), "{err}");
    }

    /// A server that echoes one byte wrong is caught.
    #[test]
    fn corrupt_echo_is_a_mismatch() {
        for spin in [false, true] {
            corrupt_echo(spin);
        }
    }

    fn corrupt_echo(spin: bool) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 100];
            s.read_exact(&mut buf).unwrap();
            buf[42] ^= 1;
            s.write_all(&buf).unwrap();
        });
        let mut cfg = BurstConfig::new(addr, Size(100), 1);
        cfg.spin = spin;
        let err = run(&cfg, &AtomicBool::new(false), |_| {}).unwrap_err();
        t.join().unwrap();
        assert!(matches!(err, EchoError::Mismatch { round: 0, offset: 42, .. }), "{err}");
    }

    /// An in-process echo server on its own thread that echoes `limit` bytes (then closes), each
    /// read after `delay`, and flips the byte at stream offset `corrupt` if given; after `limit`
    /// bytes it closes its sending side.
    fn test_server(delay: Duration, limit: usize, corrupt: Option<usize>) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut buf = vec![0u8; 1 << 16];
            let mut done = 0usize;
            while done < limit {
                let k = match s.read(&mut buf[..(limit - done).min(1 << 16)]) {
                    Ok(0) | Err(_) => return,
                    Ok(k) => k,
                };
                if !delay.is_zero() {
                    std::thread::sleep(delay);
                }
                if let Some(c) = corrupt.filter(|&c| (done..done + k).contains(&c)) {
                    buf[c - done] ^= 0x20;
                }
                if s.write_all(&buf[..k]).is_err() {
                    return;
                }
                done += k;
            }
            // Close the sending side only (a FIN, not a reset), and read until the client goes.
            let _ = s.shutdown(std::net::Shutdown::Write);
            while matches!(s.read(&mut buf), Ok(k) if k > 0) {}
        });
        (addr, t)
    }

    #[test]
    fn target_order_is_balanced() {
        for k in 1..6usize {
            let mut place = vec![vec![0u32; k]; k];
            let mut after = vec![vec![0u32; k]; k];
            let mut last = None;
            for round in 0..(2 * k as u64) {
                let o: Vec<usize> = target_order(round, k).collect();
                let mut sorted = o.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..k).collect::<Vec<_>>(), "round {round}: every target once");
                for (j, &t) in o.iter().enumerate() {
                    place[t][j] += 1;
                    if let Some(p) = last {
                        after[t][p] += 1;
                    }
                    last = Some(t);
                }
            }
            assert!(place.iter().flatten().all(|&n| n == 2), "k={k}: every target twice in every place: {place:?}");
            if k == 2 {
                assert_eq!(target_order(0, 2).collect::<Vec<_>>(), [0, 1]);
                assert_eq!(target_order(1, 2).collect::<Vec<_>>(), [1, 0]);
            }
        }
    }

    /// Two targets in one run, one of them 300 us slower per read: its RTTs (and its ratio
    /// over the first) come out higher, every byte of both is verified, and each connection's
    /// RTTs are reported under its own index.
    #[test]
    fn interleaved_targets_measure_each_server() {
        let rounds = 40u64;
        let size = 4096usize;
        let (fast, tf) = test_server(Duration::ZERO, usize::MAX, None);
        let (slow, ts) = test_server(Duration::from_micros(300), usize::MAX, None);
        let mut cfg = BurstConfig::new(fast, Size(size as u64), rounds);
        cfg.warmup = 2;
        let mut seen = [0u64; 2];
        let res = run_targets(&cfg, &[fast, slow], &AtomicBool::new(false), |i, _| seen[i] += 1).unwrap();
        assert_eq!(seen, [rounds, rounds]);
        assert_eq!(res.len(), 2);
        for r in &res {
            assert_eq!(r.rtt_ns.len() as u64, rounds);
            assert_eq!(r.bytes_verified, (rounds + 2) * size as u64);
            assert!(!r.interrupted);
            assert!(r.cost.syscalls_per_round >= 2.0, "{:?}", r.cost);
        }
        let med = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v[v.len() / 2]
        };
        let (a, b) = (med(&res[0].rtt_ns), med(&res[1].rtt_ns));
        assert!(b > a + 200_000, "the delayed server's median RTT {b} ns is not 300 us above {a} ns");
        drop(res);
        tf.join().unwrap();
        ts.join().unwrap();
    }

    /// Ten 1000-byte rounds against two test servers (each given as `test_server`'s close-after
    /// and corrupt-at), which must fail: the error, its message and the two addresses.
    fn two_targets_fail(a: (usize, Option<usize>), b: (usize, Option<usize>)) -> (EchoError, String, SocketAddr, SocketAddr) {
        let (first, t1) = test_server(Duration::ZERO, a.0, a.1);
        let (second, t2) = test_server(Duration::ZERO, b.0, b.1);
        let cfg = BurstConfig::new(first, Size(1000), 10);
        let err = run_targets(&cfg, &[first, second], &AtomicBool::new(false), |_, _| {}).unwrap_err();
        t1.join().unwrap();
        t2.join().unwrap();
        let msg = err.to_string();
        (err, msg, first, second)
    }

    /// A wrong byte from the second target is a mismatch that names it.
    #[test]
    fn interleaved_targets_check_every_byte() {
        let (err, msg, _, bad) = two_targets_fail((usize::MAX, None), (usize::MAX, Some(5 * 1000 + 17)));
        assert!(
            matches!(&err, EchoError::Target { index: 2, err, .. } if matches!(**err, EchoError::Mismatch { round: 5, offset: 17, .. })),
            "{msg}"
        );
        assert!(msg.starts_with(&format!("target 2 ({bad}): echo mismatch in round 5 at byte 17")), "{msg}");
    }

    /// A target that closes the connection in the middle of the run is an error naming it.
    #[test]
    fn a_target_that_closes_early_is_named() {
        let (err, msg, early, _) = two_targets_fail((3 * 1000 + 10, None), (usize::MAX, None));
        assert!(
            matches!(&err, EchoError::Target { index: 1, err, .. } if matches!(**err, EchoError::Closed { round: 3, got: 10, .. })),
            "{msg}"
        );
        assert!(msg.contains(&format!("target 1 ({early}): the server closed the connection in round 3")), "{msg}");
    }

    /// A target where nothing listens is named before any round runs.
    #[test]
    fn an_unreachable_target_is_named() {
        let (good, tg) = test_server(Duration::ZERO, usize::MAX, None);
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let cfg = BurstConfig::new(good, Size(10), 1);
        let err = run_targets(&cfg, &[good, dead], &AtomicBool::new(false), |_, _| {}).unwrap_err();
        assert!(err.to_string().starts_with(&format!("target 2 ({dead}): cannot connect to {dead}")), "{err}");
        tg.join().unwrap();
    }

    /// A server that swallows data makes the round time out rather than hang.
    #[test]
    fn silent_server_times_out() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        for spin in [false, true] {
            let mut cfg = BurstConfig::new(addr, Size(10), 1);
            cfg.timeout = Duration::from_millis(300);
            cfg.spin = spin;
            let err = run(&cfg, &AtomicBool::new(false), |_| {}).unwrap_err();
            assert!(matches!(err, EchoError::Timeout { round: 0, sent: 10, got: 0, .. }), "spin {spin}: {err}");
        }
        drop(l);
    }
}
