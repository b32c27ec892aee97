//! The benchmark: connection setup over TCP, the queue pair's INIT → RTR → RTS, and the two roles.
//!
//! - The client (sender) posts one work request, timestamps, waits for its completion (busy or
//!   event polling), timestamps, and only then posts the next — one request in flight, as in the
//!   seed's modified perftest.
//! - The server keeps `-t` receives posted for SEND and WRITE_IMM (re-posting one per completion)
//!   and does nothing for WRITE and READ, which the responder's NIC serves alone.
//!
//! The control connection carries, one text line each: the client's parameters (the server
//! refuses a mismatch), both queue-pair addresses (QPN, PSN, rkey, buffer address, GID, LID), a
//! READY barrier, and the final DONE/BYE with the message counts.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use thiserror::Error;

use schedlab_report::disturb::{Disturbance, Probe};
use schedlab_report::results::rdma::{Rdma, RdmaSchema};
use schedlab_report::{Hist, MachineInfo, Summary, ThreadInfo};

use crate::backend::{self, BackendError, BackendKind, Completion, Endpoint, EndpointConfig, SendWr, WcStatus};
use crate::record::{FlowMeta, MsgRecord};
use crate::types::{MsgSize, Op, PollMode, QpInfo};

const PROTO: &str = "schedlab-rdma/1";

/// Everything one end of a run needs.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Server address (client mode); `None` = server.
    pub server: Option<String>,
    /// Address the server listens on.
    pub bind: IpAddr,
    pub port: u16,
    pub op: Op,
    pub size: MsgSize,
    pub count: u64,
    /// Receives kept posted (`-t`).
    pub depth: u32,
    pub poll: PollMode,
    pub backend: BackendKind,
    pub device: Option<String>,
    pub ib_port: u8,
    pub gid_index: u32,
    /// Longest wait for any one step (connection setup, one completion).
    pub timeout: Duration,
}

/// Errors of a run.
#[derive(Debug, Error)]
pub enum BenchError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("control connection: {0}")]
    Control(String),
    #[error("cannot connect to the server at {addr}: {err} (start `schedlab rdma` without an address there first)")]
    Connect { addr: String, err: io::Error },
    #[error("cannot listen on {addr}: {err}")]
    Listen { addr: SocketAddr, err: io::Error },
    #[error("the peer refused the run: {0}")]
    Refused(String),
    #[error("message {index}: work request {wr_id} completed with status {status:?}")]
    Completion { index: u64, wr_id: u64, status: WcStatus },
    #[error("no completion within {0:?}: is the peer still running? (raise --timeout for very large messages)")]
    Timeout(Duration),
    #[error("interrupted")]
    Interrupted,
}

impl From<io::Error> for BenchError {
    fn from(e: io::Error) -> Self {
        BenchError::Control(e.to_string())
    }
}

/// The control connection: text lines with an optional timeout.
struct Ctl {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Ctl {
    fn new(s: TcpStream) -> io::Result<Ctl> {
        s.set_nodelay(true)?;
        Ok(Ctl { s, buf: Vec::new() })
    }
    fn send(&mut self, line: &str) -> Result<(), BenchError> {
        self.s.write_all(format!("{line}\n").as_bytes()).map_err(|e| BenchError::Control(format!("sending '{line}': {e}")))
    }
    /// The next line, or `None` if nothing complete arrived within `wait`.
    fn try_line(&mut self, wait: Duration) -> Result<Option<String>, BenchError> {
        let deadline = Instant::now() + wait;
        let mut tried = false;
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Ok(Some(String::from_utf8_lossy(&line).trim().to_string()));
            }
            let now = Instant::now();
            // Even a zero wait looks at the socket once.
            if now >= deadline && tried {
                return Ok(None);
            }
            tried = true;
            self.s.set_read_timeout(Some(deadline.saturating_duration_since(now).max(Duration::from_millis(1))))?;
            let mut chunk = [0u8; 512];
            match self.s.read(&mut chunk) {
                Ok(0) => return Err(BenchError::Control("the peer closed the control connection".into())),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    /// The next line within `wait`, checking `stop` in between.
    fn line(&mut self, wait: Duration, what: &str, stop: &AtomicBool) -> Result<String, BenchError> {
        let deadline = Instant::now() + wait;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(BenchError::Interrupted);
            }
            if let Some(l) = self.try_line(Duration::from_millis(100))? {
                return Ok(l);
            }
            if Instant::now() >= deadline {
                return Err(BenchError::Control(format!("no {what} from the peer within {wait:?}")));
            }
        }
    }
}

fn hello(cfg: &BenchConfig) -> String {
    format!("HELLO {PROTO} backend={} op={} bytes={} count={}", cfg.backend.name(), cfg.op.name(), cfg.size.bytes(), cfg.count)
}

/// What the server says is wrong with the client's parameters, if anything.
fn check_hello(cfg: &BenchConfig, line: &str) -> Result<(), String> {
    let mut words = line.split_whitespace();
    if words.next() != Some("HELLO") || words.next() != Some(PROTO) {
        return Err(format!("not a schedlab rdma client (got '{line}')"));
    }
    let mine = hello(cfg);
    for (theirs, ours) in words.zip(mine.split_whitespace().skip(2)) {
        if theirs != ours {
            let (k, v) = ours.split_once('=').unwrap_or((ours, ""));
            let their_v = theirs.split_once('=').map(|x| x.1).unwrap_or(theirs);
            return Err(format!(
                "server runs {k}={v}, client asked for {k}={their_v}: start both ends with the same -O, -s, -n and --backend"
            ));
        }
    }
    Ok(())
}

/// One run's outcome at either end ([`RunResult::to_result`] is what `--json` writes).
#[derive(Clone, Debug)]
pub struct RunResult {
    /// `EMULATED` or `VERBS`.
    pub backend: String,
    pub role: String,
    pub op: Op,
    pub poll: PollMode,
    pub device: String,
    pub bytes: u32,
    pub iterations: u64,
    /// Messages completed (fewer than `iterations` when interrupted).
    pub completed: u64,
    pub elapsed_s: f64,
    pub bw_avg_gbps: f64,
    pub bw_peak_gbps: f64,
    pub msg_rate_mpps: f64,
    /// Client: completion minus post. Server: gap between successive receive completions.
    pub lat_us: Summary,
    /// Client: time spent inside `post_send` (the latency is timed from its return, as in the
    /// seed; a long post means the poster was descheduled there).
    pub post_us: Option<Summary>,
    pub rx_depth: u32,
    pub local_qp: QpInfo,
    pub remote_qp: QpInfo,
    pub interrupted: bool,
    /// Why the run stopped before its last message, when it failed (the records up to then are kept).
    pub failure: Option<String>,
    pub machine: MachineInfo,
    pub thread: ThreadInfo,
    /// What disturbed the measuring thread over its message loop: switches, migrations, the
    /// longest gap between two completions it took.
    pub disturbance: Option<Disturbance>,
    /// Every message's completion, for the `-o` file (not in the JSON result).
    pub records: Vec<MsgRecord>,
}

impl RunResult {
    /// The `-o` file's header line.
    pub fn meta(&self) -> FlowMeta {
        FlowMeta {
            backend: Some(self.backend.clone()),
            op: Some(self.op.name().into()),
            bytes: Some(u64::from(self.bytes)),
            count: Some(self.iterations),
            poll: Some(self.poll.name().into()),
        }
    }

    /// The typed result `--json` writes (`schedlab.rdma/1`).
    pub fn to_result(&self) -> Rdma {
        Rdma {
            schema: RdmaSchema,
            backend: self.backend.clone(),
            role: self.role.clone(),
            op: self.op.into(),
            poll: self.poll.into(),
            device: self.device.clone(),
            bytes: self.bytes,
            iterations: self.iterations,
            completed: self.completed,
            elapsed_s: self.elapsed_s,
            bw_avg_gbps: self.bw_avg_gbps,
            bw_peak_gbps: self.bw_peak_gbps,
            msg_rate_mpps: self.msg_rate_mpps,
            lat_us: self.lat_us,
            post_us: self.post_us,
            rx_depth: self.rx_depth,
            local_qp: self.local_qp.into(),
            remote_qp: self.remote_qp.into(),
            interrupted: self.interrupted,
            failure: self.failure.clone(),
            machine: self.machine.clone(),
            thread: self.thread.clone(),
            disturbance: self.disturbance.clone(),
        }
    }

    /// perftest's result table and the latency line.
    pub fn print(&self, out: &mut dyn Write) -> io::Result<()> {
        let p = label_prefix(&self.backend);
        let rule = "-".repeat(87);
        writeln!(out, "{p}{rule}")?;
        writeln!(out, "{p} #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]")?;
        writeln!(
            out,
            "{p} {:<10} {:<14} {:<18.3} {:<20.3} {:.6}",
            self.bytes, self.completed, self.bw_peak_gbps, self.bw_avg_gbps, self.msg_rate_mpps
        )?;
        writeln!(out, "{p}{rule}")?;
        if self.interrupted {
            writeln!(out, "{p} interrupted: {} of {} messages completed", self.completed, self.iterations)?;
        }
        if let Some(why) = &self.failure {
            writeln!(out, "{p} stopped after {} of {} messages: {why}", self.completed, self.iterations)?;
        }
        // Before the latency lines: scripts read the percentiles from the last line.
        if let Some(d) = &self.disturbance {
            writeln!(out, "{p} disturbance {}", d.line())?;
        }
        if self.lat_us.count == 0 {
            return writeln!(
                out,
                "{p} no per-message completions at this end ({} is served by the responder's NIC alone)",
                self.op
            );
        }
        if let Some(post) = &self.post_us {
            writeln!(out, "{p} post_send duration [us]: {}", post.line(""))?;
        }
        let what = if self.role == "client" { "latency (post to completion)" } else { "receive gap" };
        writeln!(out, "{p} {what} [us]: {}", self.lat_us.line(""))
    }
}

fn label_prefix(backend: &str) -> String {
    if backend == BackendKind::Emulated.label() {
        "[EMULATED] ".into()
    } else {
        String::new()
    }
}

fn banner(out: &mut dyn Write, cfg: &BenchConfig, ep: &dyn Endpoint, role: &str) -> io::Result<()> {
    let p = label_prefix(ep.kind().label());
    writeln!(out, "{p}{}", "-".repeat(87))?;
    writeln!(out, "{p}                    {}  ({role}, backend {})", cfg.op.title(), ep.kind().label())?;
    writeln!(out, "{p} Connection type : RC\t\tNumber of qps   : 1")?;
    writeln!(out, "{p} Device          : {}", ep.device_desc())?;
    writeln!(out, "{p} Polling         : {}\t\tRX depth        : {}", cfg.poll.name(), cfg.depth)?;
    writeln!(out, "{p} Message size    : {}\t\tIterations      : {}", cfg.size.bytes(), cfg.count)?;
    Ok(())
}

fn print_qp(out: &mut dyn Write, p: &str, who: &str, q: &QpInfo) -> io::Result<()> {
    writeln!(
        out,
        "{p} {who} address: LID {:#06x} QPN {:#08x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}",
        q.lid, q.qpn, q.psn, q.rkey, q.addr
    )?;
    writeln!(out, "{p} GID: {}", q.gid_string())
}

/// Waits for one completion, busy or event-driven, bounded by `timeout` and `stop`.
fn next_completion(
    ep: &mut dyn Endpoint,
    poll: PollMode,
    timeout: Duration,
    stop: &AtomicBool,
    buf: &mut Vec<Completion>,
) -> Result<Completion, BenchError> {
    buf.clear();
    let deadline = Instant::now() + timeout;
    match poll {
        PollMode::Busy => {
            let mut spins = 0u32;
            loop {
                if ep.poll_cq(buf, 1)? == 1 {
                    return Ok(buf[0]);
                }
                spins = spins.wrapping_add(1);
                if spins & 1023 == 0 {
                    if stop.load(Ordering::Relaxed) {
                        return Err(BenchError::Interrupted);
                    }
                    if Instant::now() >= deadline {
                        return Err(BenchError::Timeout(timeout));
                    }
                }
                std::hint::spin_loop();
            }
        }
        PollMode::Event => loop {
            if ep.poll_cq(buf, 1)? == 1 {
                return Ok(buf[0]);
            }
            ep.req_notify_cq()?;
            // A completion may have arrived between the poll and arming.
            if ep.poll_cq(buf, 1)? == 1 {
                return Ok(buf[0]);
            }
            if stop.load(Ordering::Relaxed) {
                return Err(BenchError::Interrupted);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(BenchError::Timeout(timeout));
            }
            ep.wait_cq_event((deadline - now).min(Duration::from_millis(100)))?;
        },
    }
}

/// The outcome of waiting for one completion, as the run loops treat it.
enum Waited {
    Got(Completion),
    Interrupted,
    TimedOut,
    Failed(BenchError),
}

impl From<Result<Completion, BenchError>> for Waited {
    fn from(r: Result<Completion, BenchError>) -> Waited {
        match r {
            Ok(c) => Waited::Got(c),
            Err(BenchError::Interrupted) => Waited::Interrupted,
            Err(BenchError::Timeout(_)) => Waited::TimedOut,
            Err(e) => Waited::Failed(e),
        }
    }
}

fn endpoint_config(cfg: &BenchConfig, local_ip: IpAddr) -> EndpointConfig {
    EndpointConfig {
        device: cfg.device.clone(),
        ib_port: cfg.ib_port,
        gid_index: cfg.gid_index,
        buf_size: cfg.size,
        rx_depth: cfg.depth.max(1),
        tx_depth: 1,
        poll: cfg.poll,
        local_ip,
        setup_timeout: cfg.timeout,
    }
}

/// Exchanges queue-pair addresses and brings the queue pair to RTS, then the READY barrier.
fn connect_qp(ctl: &mut Ctl, ep: &mut dyn Endpoint, cfg: &BenchConfig, stop: &AtomicBool) -> Result<QpInfo, BenchError> {
    let local = ep.local_info();
    ctl.send(&local.to_line())?;
    let line = ctl.line(cfg.timeout, "queue-pair address", stop)?;
    let remote = QpInfo::from_line(&line).map_err(|e| BenchError::Control(e.to_string()))?;
    ep.to_rtr(&remote)?;
    ep.to_rts()?;
    ctl.send("READY")?;
    let l = ctl.line(cfg.timeout, "READY", stop)?;
    if l != "READY" {
        return Err(BenchError::Control(format!("expected READY, got '{l}'")));
    }
    Ok(remote)
}

/// What one end measured, before it is summarised.
struct Measured {
    remote: QpInfo,
    records: Vec<MsgRecord>,
    elapsed: Duration,
    interrupted: bool,
    thread: ThreadInfo,
}

fn result_of(cfg: &BenchConfig, ep: &dyn Endpoint, role: &str, m: Measured) -> RunResult {
    let Measured { remote, records, elapsed, interrupted, thread } = m;
    let completed = records.last().map(|r| r.completed).unwrap_or(0);
    let secs = elapsed.as_secs_f64();
    let bytes = f64::from(cfg.size.bytes());
    let mut h = Hist::new();
    let mut min_gap = f64::INFINITY;
    let mut prev = 0.0;
    for r in &records {
        h.record((r.lat_us * 1000.0).round() as u64);
        let gap = r.time_us - prev;
        if gap > 0.0 {
            min_gap = min_gap.min(gap);
        }
        prev = r.time_us;
    }
    RunResult {
        backend: ep.kind().label().into(),
        role: role.into(),
        op: cfg.op,
        poll: cfg.poll,
        device: ep.device_desc(),
        bytes: cfg.size.bytes(),
        iterations: cfg.count,
        completed,
        elapsed_s: secs,
        bw_avg_gbps: if secs > 0.0 { bytes * completed as f64 * 8.0 / secs / 1e9 } else { 0.0 },
        bw_peak_gbps: if min_gap.is_finite() { bytes * 8.0 / (min_gap * 1e3) } else { 0.0 },
        msg_rate_mpps: if secs > 0.0 { completed as f64 / secs / 1e6 } else { 0.0 },
        lat_us: h.summary(1000.0),
        post_us: None,
        rx_depth: cfg.depth,
        local_qp: ep.local_info(),
        remote_qp: remote,
        interrupted,
        failure: None,
        machine: MachineInfo::collect(),
        thread,
        disturbance: None,
        records,
    }
}

/// Runs the sender.
pub fn run_client(cfg: &BenchConfig, out: &mut dyn Write, stop: &AtomicBool) -> Result<RunResult, BenchError> {
    backend::probe(cfg.backend, cfg.device.as_deref())?;
    let host = cfg.server.as_deref().unwrap_or("127.0.0.1");
    let target = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{}", cfg.port)
    } else {
        format!("{host}:{}", cfg.port)
    };
    let addr =
        target.to_socket_addrs().map_err(|err| BenchError::Connect { addr: target.clone(), err })?.next().ok_or_else(|| {
            BenchError::Connect { addr: target.clone(), err: io::Error::new(ErrorKind::NotFound, "no address") }
        })?;
    let s = TcpStream::connect_timeout(&addr, cfg.timeout).map_err(|err| BenchError::Connect { addr: target, err })?;
    let local_ip = s.local_addr()?.ip();
    let mut ctl = Ctl::new(s)?;
    ctl.send(&hello(cfg))?;
    let reply = ctl.line(cfg.timeout, "reply to HELLO", stop)?;
    if let Some(why) = reply.strip_prefix("ERR ") {
        return Err(BenchError::Refused(why.to_string()));
    }
    if reply != "OK" {
        return Err(BenchError::Control(format!("expected OK, got '{reply}'")));
    }
    let mut ep = backend::open(cfg.backend, &endpoint_config(cfg, local_ip))?;
    ep.to_init()?;
    banner(out, cfg, ep.as_ref(), "client")?;
    let remote = connect_qp(&mut ctl, ep.as_mut(), cfg, stop)?;
    let p = label_prefix(ep.kind().label());
    print_qp(out, &p, "local", &ep.local_info())?;
    print_qp(out, &p, "remote", &remote)?;

    let thread = ThreadInfo::current();
    let mut records = Vec::with_capacity(cfg.count.min(1 << 16) as usize);
    let mut buf = Vec::with_capacity(1);
    let len = cfg.size.bytes();
    let mut interrupted = false;
    let mut failure: Option<BenchError> = None;
    let mut post_hist = Hist::new();
    // The clock starts at the first post (perftest's tposted[0]): reading the thread's counters
    // and allocating the histogram take milliseconds under emulation and are not the transfer.
    let mut probe = Probe::start(0);
    let start = Instant::now();
    for i in 0..cfg.count {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let wr = SendWr { wr_id: i, op: cfg.op, len, remote_addr: remote.addr, rkey: remote.rkey, imm: i as u32 };
        let t_ring = start.elapsed();
        if let Err(e) = ep.post_send(&wr) {
            failure = Some(e.into());
            break;
        }
        let t_post = start.elapsed();
        post_hist.record((t_post - t_ring).as_nanos() as u64);
        let c = match Waited::from(next_completion(ep.as_mut(), cfg.poll, cfg.timeout, stop, &mut buf)) {
            Waited::Got(c) => c,
            Waited::Interrupted => {
                interrupted = true;
                break;
            }
            Waited::TimedOut => {
                failure = Some(BenchError::Timeout(cfg.timeout));
                break;
            }
            Waited::Failed(e) => {
                failure = Some(e);
                break;
            }
        };
        let t_done = start.elapsed();
        probe.tick(t_done.as_nanos() as u64);
        if c.status != WcStatus::Success || c.wr_id != i {
            failure = Some(BenchError::Completion { index: i + 1, wr_id: c.wr_id, status: c.status });
            break;
        }
        records.push(MsgRecord {
            completed: i + 1,
            time_us: t_done.as_secs_f64() * 1e6,
            lat_us: (t_done - t_post).as_secs_f64() * 1e6,
        });
    }
    let elapsed = records.last().map(|r| Duration::from_secs_f64(r.time_us / 1e6)).unwrap_or_default();
    let n = records.len();
    let stopped_early = interrupted || failure.is_some();
    // The server answers once it has taken every message it expects; a run cut short does not wait long.
    let bye = ctl.send(&format!("DONE {n}")).and_then(|()| {
        ctl.line(if stopped_early { Duration::from_secs(2) } else { cfg.timeout }, "BYE", &AtomicBool::new(false))
    });
    let mut res = result_of(cfg, ep.as_ref(), "client", Measured { remote, records, elapsed, interrupted, thread });
    res.failure = failure.map(|e| e.to_string());
    res.post_us = Some(post_hist.summary(1000.0));
    res.disturbance = Some(probe.finish("client"));
    match bye {
        Ok(l) if l.starts_with("BYE") => Ok(res),
        Ok(l) => Err(BenchError::Control(format!("expected BYE, got '{l}'"))),
        Err(_) if stopped_early => Ok(res),
        Err(e) => Err(e),
    }
}

/// Binds the server's control port (`-p 0` picks a free one).
pub fn listen(cfg: &BenchConfig) -> Result<TcpListener, BenchError> {
    // A server without a usable device says so at once instead of waiting for a client.
    backend::probe(cfg.backend, cfg.device.as_deref())?;
    let addr = SocketAddr::new(cfg.bind, cfg.port);
    TcpListener::bind(addr).map_err(|err| BenchError::Listen { addr, err })
}

/// Serves one client on `listener` (the server side of one run).
pub fn serve(cfg: &BenchConfig, listener: &TcpListener, out: &mut dyn Write, stop: &AtomicBool) -> Result<RunResult, BenchError> {
    let s = accept(listener, stop)?;
    let local_ip = s.local_addr()?.ip();
    let mut ctl = Ctl::new(s)?;
    let hello_line = ctl.line(cfg.timeout, "HELLO", stop)?;
    if let Err(why) = check_hello(cfg, &hello_line) {
        let _ = ctl.send(&format!("ERR {why}"));
        return Err(BenchError::Refused(why));
    }
    // The endpoint comes up before OK so that a missing device reaches the client too.
    let mut ep = match backend::open(cfg.backend, &endpoint_config(cfg, local_ip)) {
        Ok(ep) => ep,
        Err(e) => {
            let _ = ctl.send(&format!("ERR server: {e}"));
            return Err(e.into());
        }
    };
    ctl.send("OK")?;
    ep.to_init()?;
    banner(out, cfg, ep.as_ref(), "server")?;
    let receives = cfg.op.needs_receives();
    let len = cfg.size.bytes();
    let mut posted = 0u64;
    if receives {
        // Pre-post the whole pipeline before the peer can send (the original posted only one).
        while posted < cfg.count.min(u64::from(cfg.depth.max(1))) {
            ep.post_recv(posted, len)?;
            posted += 1;
        }
    }
    let remote = connect_qp(&mut ctl, ep.as_mut(), cfg, stop)?;
    let p = label_prefix(ep.kind().label());
    print_qp(out, &p, "local", &ep.local_info())?;
    print_qp(out, &p, "remote", &remote)?;

    let thread = ThreadInfo::current();
    let start = Instant::now();
    // From the first completion on: the wait for the client's first message is no gap.
    let mut probe: Option<Probe> = None;
    let mut records = Vec::new();
    let mut buf = Vec::with_capacity(1);
    let mut done: Option<u64> = None;
    let mut last_progress = Instant::now();
    let mut interrupted = false;
    let mut failure: Option<BenchError> = None;
    let mut prev_us = 0.0;
    let slice = Duration::from_millis(50);
    while receives && (records.len() as u64) < done.unwrap_or(cfg.count) {
        match Waited::from(next_completion(ep.as_mut(), cfg.poll, slice, stop, &mut buf)) {
            Waited::Got(c) => {
                let k = records.len() as u64;
                if c.status != WcStatus::Success {
                    failure = Some(BenchError::Completion { index: k + 1, wr_id: c.wr_id, status: c.status });
                    break;
                }
                let elapsed = start.elapsed();
                let now = elapsed.as_nanos() as u64;
                match probe.as_mut() {
                    Some(p) => p.tick(now),
                    None => probe = Some(Probe::start(now)),
                }
                let t = elapsed.as_secs_f64() * 1e6;
                records.push(MsgRecord { completed: k + 1, time_us: t, lat_us: if k == 0 { 0.0 } else { t - prev_us } });
                prev_us = t;
                last_progress = Instant::now();
                if posted < cfg.count {
                    if let Err(e) = ep.post_recv(posted, len) {
                        failure = Some(e.into());
                        break;
                    }
                    posted += 1;
                }
            }
            Waited::TimedOut => {
                if done.is_none() {
                    if let Some(l) = ctl.try_line(Duration::ZERO)? {
                        done = Some(parse_done(&l)?);
                        continue;
                    }
                }
                if last_progress.elapsed() >= cfg.timeout {
                    failure = Some(BenchError::Timeout(cfg.timeout));
                    break;
                }
            }
            Waited::Interrupted => {
                interrupted = true;
                break;
            }
            Waited::Failed(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let reported = match done {
        Some(n) => n,
        None if interrupted || failure.is_some() => records.len() as u64,
        // The client reports its count once its last completion is in; wait as long as it runs.
        None => loop {
            match ctl.line(Duration::from_secs(3600), "DONE", stop) {
                Ok(l) => break parse_done(&l)?,
                Err(BenchError::Interrupted) => {
                    interrupted = true;
                    break 0;
                }
                Err(BenchError::Control(m)) if m.starts_with("no DONE") => continue,
                Err(e) => return Err(e),
            }
        },
    };
    let _ = ctl.send(&format!("BYE {}", records.len()));
    let elapsed = start.elapsed();
    if !receives {
        // The responder of WRITE/READ sees no completions: report the client's count over the run.
        let mut r = result_of(cfg, ep.as_ref(), "server", Measured { remote, records: Vec::new(), elapsed, interrupted, thread });
        r.completed = reported;
        let secs = elapsed.as_secs_f64();
        r.bw_avg_gbps = if secs > 0.0 { f64::from(len) * reported as f64 * 8.0 / secs / 1e9 } else { 0.0 };
        r.msg_rate_mpps = if secs > 0.0 { reported as f64 / secs / 1e6 } else { 0.0 };
        return Ok(r);
    }
    let span = records.last().map(|r| Duration::from_secs_f64(r.time_us / 1e6)).unwrap_or(elapsed);
    let incomplete = interrupted || (failure.is_none() && reported < cfg.count);
    let mut r =
        result_of(cfg, ep.as_ref(), "server", Measured { remote, records, elapsed: span, interrupted: incomplete, thread });
    r.failure = failure.map(|e| e.to_string());
    r.disturbance = probe.map(|p| p.finish("server"));
    Ok(r)
}

fn parse_done(l: &str) -> Result<u64, BenchError> {
    l.strip_prefix("DONE ")
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| BenchError::Control(format!("expected 'DONE <count>', got '{l}'")))
}

fn accept(listener: &TcpListener, stop: &AtomicBool) -> Result<TcpStream, BenchError> {
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                return Ok(s);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if stop.load(Ordering::Relaxed) {
                    return Err(BenchError::Interrupted);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(op: Op, size: u32, count: u64, poll: PollMode) -> BenchConfig {
        BenchConfig {
            server: None,
            bind: "127.0.0.1".parse().unwrap(),
            port: 0,
            op,
            size: MsgSize::new(u64::from(size)).unwrap(),
            count,
            depth: 4,
            poll,
            backend: BackendKind::Emulated,
            device: None,
            ib_port: 1,
            gid_index: 0,
            timeout: Duration::from_secs(20),
        }
    }

    /// Runs server and client in threads; returns both results and the client's output.
    fn run_pair(
        server_cfg: BenchConfig,
        mut client_cfg: BenchConfig,
    ) -> (Result<RunResult, BenchError>, Result<RunResult, BenchError>, String) {
        let listener = listen(&server_cfg).unwrap();
        client_cfg.port = listener.local_addr().unwrap().port();
        client_cfg.server = Some("127.0.0.1".into());
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let srv = s.spawn(|| serve(&server_cfg, &listener, &mut io::sink(), &stop));
            let mut out = Vec::new();
            let c = run_client(&client_cfg, &mut out, &stop);
            // A client that failed early must not leave the server waiting: stop it (a server that
            // already said BYE has left every loop that looks at the flag).
            stop.store(true, Ordering::Relaxed);
            (srv.join().unwrap(), c, String::from_utf8(out).unwrap())
        })
    }

    #[test]
    fn every_op_runs_end_to_end_with_both_polling_modes() {
        for op in Op::ALL {
            for poll in [PollMode::Busy, PollMode::Event] {
                let c = cfg(op, 4096, 40, poll);
                let (srv, cli, out) = run_pair(c.clone(), c);
                let cli = cli.unwrap_or_else(|e| panic!("{op} {poll:?}: {e}"));
                let srv = srv.unwrap();
                assert_eq!(cli.completed, 40, "{op} {poll:?}");
                assert_eq!(cli.records.len(), 40);
                assert!(cli.records.windows(2).all(|w| w[1].time_us >= w[0].time_us));
                assert!(cli.records.iter().all(|r| r.lat_us > 0.0 && r.lat_us <= r.time_us));
                assert_eq!(srv.completed, 40);
                assert_eq!(srv.records.len(), if op.needs_receives() { 40 } else { 0 });
                assert!(out.lines().all(|l| l.starts_with("[EMULATED]")), "{out}");
                assert!(cli.bw_avg_gbps > 0.0 && cli.msg_rate_mpps > 0.0);
                assert!(!cli.interrupted && !srv.interrupted);
            }
        }
    }

    #[test]
    fn a_shallow_receive_pipeline_still_delivers_everything() {
        let mut s = cfg(Op::Send, 512, 30, PollMode::Event);
        s.depth = 1;
        let (srv, cli, _) = run_pair(s, cfg(Op::Send, 512, 30, PollMode::Event));
        assert_eq!((srv.unwrap().completed, cli.unwrap().completed), (30, 30));
    }

    #[test]
    fn mismatched_parameters_are_refused_at_both_ends() {
        let (srv, cli, _) = run_pair(cfg(Op::Write, 1024, 10, PollMode::Event), cfg(Op::Read, 1024, 10, PollMode::Event));
        let e = cli.unwrap_err().to_string();
        assert!(e.contains("server runs op=WRITE, client asked for op=READ"), "{e}");
        assert!(matches!(srv, Err(BenchError::Refused(_))));
        let (_, cli, _) = run_pair(cfg(Op::Write, 1024, 10, PollMode::Event), cfg(Op::Write, 2048, 10, PollMode::Event));
        assert!(cli.unwrap_err().to_string().contains("bytes=1024"));
    }

    #[test]
    fn losing_the_peer_mid_run_keeps_what_was_measured() {
        let server_cfg = cfg(Op::Write, 1024, u64::MAX / 2, PollMode::Event);
        let mut client_cfg = server_cfg.clone();
        let listener = listen(&server_cfg).unwrap();
        client_cfg.port = listener.local_addr().unwrap().port();
        client_cfg.server = Some("127.0.0.1".into());
        let (server_stop, client_stop) = (AtomicBool::new(false), AtomicBool::new(false));
        let t0 = Instant::now();
        let (srv, cli) = std::thread::scope(|s| {
            let srv = s.spawn(|| serve(&server_cfg, &listener, &mut io::sink(), &server_stop));
            let stopper = s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                server_stop.store(true, Ordering::Relaxed);
            });
            let cli = run_client(&client_cfg, &mut io::sink(), &client_stop);
            stopper.join().unwrap();
            (srv.join().unwrap(), cli)
        });
        let srv = srv.unwrap();
        assert!(srv.interrupted);
        let cli = cli.unwrap();
        assert!(!cli.interrupted);
        let why = cli.failure.expect("the client must say why it stopped");
        assert!(["FlushError", "wire", "closed", "state Error"].iter().any(|w| why.contains(w)), "{why}");
        assert_eq!(cli.completed, cli.records.len() as u64);
        assert!(t0.elapsed() < Duration::from_secs(15), "took {:?}", t0.elapsed());
    }

    #[test]
    fn no_server_is_a_clear_error() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let mut c = cfg(Op::Write, 64, 1, PollMode::Event);
        c.server = Some("127.0.0.1".into());
        c.port = port;
        let e = run_client(&c, &mut io::sink(), &AtomicBool::new(false)).unwrap_err().to_string();
        assert!(e.contains("cannot connect to the server"), "{e}");
    }

    #[test]
    fn hello_check_names_the_field() {
        let c = cfg(Op::Send, 100, 5, PollMode::Busy);
        assert_eq!(check_hello(&c, &hello(&c)), Ok(()));
        let mut other = c.clone();
        other.count = 6;
        assert!(check_hello(&c, &hello(&other)).unwrap_err().contains("count=5"));
        assert!(check_hello(&c, "GET / HTTP/1.1").is_err());
    }
}
