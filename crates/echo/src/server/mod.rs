//! Echo servers. One listening socket; every accepted connection is served by a thread of its
//! own (`naive`, `iosubmit`, `splice`, `sockmap`) or by the single event loop of `io_uring`.
//!
//! [`Server::start`] probes the mechanism, binds and returns at once; [`Server::shutdown`] stops
//! accepting, shuts every connection down, joins every thread, closes every fd, and for `sockmap`
//! checks by kernel id that none of its BPF programs and maps is left.

mod threaded;
mod uring;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::bpf::{self, ObjKind};
use crate::error::IoContext;
use crate::sys;
use crate::EchoError;

/// Read buffer per connection (the originals used 128 KiB).
pub const CHUNK: usize = 128 << 10;

/// `auto` moves a connection from copy to splice at its first receive of at least this many
/// bytes (a message of 32 KiB or more, or a stream).
pub const AUTO_SPLICE_AT: usize = 32 << 10;
/// Pipe size of the splice server (the original used 512 KiB).
pub const PIPE_SIZE: usize = 512 << 10;
/// Busy-poll time used when busy poll is asked for without a value, in microseconds.
pub const DEFAULT_BUSY_POLL_US: u32 = 50;

/// How the server echoes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Blocking `recv` then `send`.
    Naive,
    /// Linux AIO: one `io_submit` carries the write of the previous data and the next read.
    IoSubmit,
    /// socket → pipe → socket with `splice(2)`.
    Splice,
    /// eBPF sockmap: the kernel redirects every received chunk back out of the same socket.
    Sockmap,
    /// One io_uring event loop for every connection.
    IoUring,
}

impl Mode {
    /// Every mode, in the order of the seed's charts.
    pub const ALL: [Mode; 5] = [Mode::Naive, Mode::IoSubmit, Mode::Splice, Mode::Sockmap, Mode::IoUring];

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Naive => "naive",
            Mode::IoSubmit => "iosubmit",
            Mode::Splice => "splice",
            Mode::Sockmap => "sockmap",
            Mode::IoUring => "io_uring",
        }
    }

    /// Checks that the kernel offers what the mode needs.
    pub fn probe(self) -> Result<(), EchoError> {
        let r = match self {
            Mode::Naive | Mode::Splice => Ok(()),
            Mode::IoSubmit => crate::aio::probe(),
            Mode::Sockmap => bpf::probe(),
            Mode::IoUring => uring::probe(),
        };
        r.map_err(|reason| EchoError::Unsupported { what: self.what(), reason })
    }

    fn what(self) -> &'static str {
        match self {
            Mode::Naive => "blocking sockets",
            Mode::IoSubmit => "Linux AIO (io_submit) on sockets",
            Mode::Splice => "splice(2)",
            Mode::Sockmap => "eBPF SOCKMAP with stream parser and verdict programs",
            Mode::IoUring => "io_uring",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.to_ascii_lowercase().replace('-', "_");
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == t || (t == "iouring" && *m == Mode::IoUring) || (t == "aio" && *m == Mode::IoSubmit))
            .ok_or_else(|| format!("unknown mode '{s}'; expected one of naive, iosubmit, splice, sockmap, io_uring"))
    }
}

/// How the io_uring server moves a connection's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UringData {
    /// `IORING_OP_RECV` into a 128 KiB buffer, then `IORING_OP_SEND` out of it, the send linked
    /// to the next receive (one `io_uring_enter` per round): the kernel copies every byte into
    /// user memory and back out.
    Copy,
    /// io_uring waits for readiness (`IORING_OP_POLL_ADD`) and the loop moves the pages socket →
    /// pipe → socket with non-blocking `splice(2)` itself, inline: no copy to user memory, and no
    /// hop to an io-wq worker thread (io_uring's own `IORING_OP_SPLICE` always takes that hop).
    /// A connection that cannot get a pipe (fd limit) is served by copy, and the report says so.
    Splice,
    /// Each connection starts on `copy` and moves to `splice` for good at its first receive of
    /// at least [`AUTO_SPLICE_AT`] (32 KiB: large messages, or a stream): small rounds keep copy's
    /// single system call, large ones get splice's page moves. The default: in interleaved runs
    /// it matched copy at 1 KiB (splice within 1% of it there) and splice at 64 KiB and 1 MiB
    /// (copy, i.e. switching only at a full 128 KiB buffer, 5-6% slower at 64 KiB).
    #[default]
    Auto,
}

impl UringData {
    /// Every data path.
    pub const ALL: [UringData; 3] = [UringData::Copy, UringData::Splice, UringData::Auto];

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            UringData::Copy => "copy",
            UringData::Splice => "splice",
            UringData::Auto => "auto",
        }
    }
}

impl fmt::Display for UringData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for UringData {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        UringData::ALL
            .into_iter()
            .find(|d| d.name() == s.to_ascii_lowercase())
            .ok_or_else(|| format!("unknown io_uring data path '{s}'; expected copy, splice or auto"))
    }
}

/// What the io_uring server's connections actually did with their bytes.
#[derive(Clone, Debug, Serialize)]
pub struct UringDataReport {
    /// The data path asked for.
    pub requested: UringData,
    /// Connections whose bytes went socket → pipe → socket by `splice(2)`.
    pub spliced: u64,
    /// Connections whose bytes were copied through user memory (`IORING_OP_RECV`/`SEND`).
    pub copied: u64,
    /// `auto`: connections that started on copy and moved to splice at a receive of at least
    /// [`AUTO_SPLICE_AT`] (counted in neither `spliced` nor `copied`).
    pub switched: u64,
    /// The ring was set up with `SINGLE_ISSUER | DEFER_TASKRUN` (false: a plain ring).
    pub defer_taskrun: bool,
}

impl fmt::Display for UringDataReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "io_uring data path {} asked: {} connections spliced socket -> pipe -> socket (POLL_ADD waits, splice(2) inline), {} copied through user memory (RECV/SEND), {} copied first and spliced from their first receive of {} KiB or more on; ring {}",
            self.requested,
            self.spliced,
            self.copied,
            self.switched,
            AUTO_SPLICE_AT >> 10,
            if self.defer_taskrun { "SINGLE_ISSUER|DEFER_TASKRUN" } else { "plain (no DEFER_TASKRUN)" }
        )
    }
}

/// What a server is asked to do.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub mode: Mode,
    pub addr: SocketAddr,
    /// `SO_BUSY_POLL` in microseconds for every accepted socket, if asked.
    pub busy_poll_us: Option<u32>,
    /// Pin connection threads (and the io_uring loop) to this CPU.
    pub cpu: Option<usize>,
    /// Print one line per finished connection on stdout.
    pub print_connections: bool,
    /// TCP congestion control set on the listening socket (inherited by every connection); the
    /// originals set `cubic`. None: the system default.
    pub congestion: Option<String>,
    /// How the io_uring server moves bytes (ignored by the other modes).
    pub uring_data: UringData,
}

impl ServerConfig {
    /// A quiet server of `mode` on `addr`, no busy poll, no pinning.
    pub fn new(mode: Mode, addr: SocketAddr) -> Self {
        ServerConfig {
            mode,
            addr,
            busy_poll_us: None,
            cpu: None,
            print_connections: false,
            congestion: Some(crate::client::DEFAULT_CONGESTION.to_string()),
            uring_data: UringData::default(),
        }
    }
}

/// What happened on one connection.
#[derive(Clone, Debug, Serialize)]
pub struct ConnReport {
    pub id: u64,
    pub peer: String,
    /// Bytes echoed back (user-space count; for sockmap, where user space never sees the data, the
    /// kernel's `tcpi_bytes_acked` when the socket left the map, plus any user-space copy).
    pub bytes_echoed: u64,
    /// Bytes received according to the kernel (`tcpi_bytes_received`, which counts the peer's
    /// FIN as one byte), when readable.
    pub kernel_bytes_received: Option<u64>,
    /// How it ended: `closed by peer`, `server shutdown`, or the error.
    pub end: String,
    /// `SO_BUSY_POLL` read back from the socket, when busy poll was asked for (what the socket
    /// has, also when raising it was refused).
    pub busy_poll_us: Option<u32>,
    /// Why `SO_BUSY_POLL` could not be set to the value asked for (None: it was set).
    pub busy_poll_error: Option<String>,
    /// `SO_INCOMING_NAPI_ID` at the end of the connection (0: no NAPI, busy poll cannot act).
    pub napi_id: Option<u32>,
    /// The CPU the serving thread last ran on.
    pub cpu: i32,
    /// The CPUs the serving thread could run on, read back from the kernel.
    pub allowed_cpus: Vec<usize>,
    /// Why the serving thread could not be pinned to the CPU asked for (`--cpu`), if it could not.
    pub pin_error: Option<String>,
    /// How the echo departed from the mode's mechanism, if it did (sockmap: a socket that could
    /// not join the map, or bytes left in the receive queue, echoed by a user-space copy).
    pub note: Option<String>,
}

impl fmt::Display for ConnReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conn {} from {}: {} bytes echoed ({})", self.id, self.peer, self.bytes_echoed, self.end)?;
        if let Some(n) = &self.note {
            write!(f, "; {n}")?;
        }
        match (&self.busy_poll_error, self.busy_poll_us) {
            (Some(e), got) => write!(f, "; {e}; the socket has SO_BUSY_POLL={}us", got.unwrap_or(0))?,
            (None, Some(bp)) => write!(f, "; {}", busy_poll_note(bp, self.napi_id))?,
            (None, None) => {}
        }
        if let Some(e) = &self.pin_error {
            write!(f, "; NOT pinned: {e}")?;
        }
        Ok(())
    }
}

/// `SO_BUSY_POLL` on one accepted socket: what the socket has (read back) and, when setting the
/// value asked for failed, why.
#[derive(Clone, Debug)]
pub(crate) struct BusyPollGot {
    us: Option<u32>,
    error: Option<String>,
}

/// Asks for `SO_BUSY_POLL` = `us` on `fd` and reads back what the socket has.
fn busy_poll_on(fd: RawFd, us: u32) -> BusyPollGot {
    match sys::set_busy_poll(fd, us) {
        Ok(v) => BusyPollGot { us: Some(v), error: None },
        Err(e) => {
            let error = format!("SO_BUSY_POLL={us}us refused: {e} (raising it may need CAP_NET_ADMIN: run as root)");
            eprintln!("warning: {error}");
            BusyPollGot { us: sys::busy_poll(fd).ok(), error: Some(error) }
        }
    }
}

thread_local! {
    /// Why this serving thread could not be pinned to `--cpu` (set by [`pin_serving_thread`]).
    static PIN_ERROR: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Pins the calling serving thread to `cpu` (if asked); a failure is kept for every connection
/// report this thread writes.
pub(crate) fn pin_serving_thread(cpu: Option<usize>) {
    let err = cpu.and_then(|c| {
        schedlab_report::machine::pin_current_thread(c).err().map(|e| format!("cannot pin the serving thread to CPU {c}: {e}"))
    });
    if let Some(e) = &err {
        eprintln!("warning: {e}; it serves unpinned");
    }
    PIN_ERROR.with(|p| *p.borrow_mut() = err);
}

/// What busy poll could do on a connection, said plainly.
pub fn busy_poll_note(busy_poll_us: u32, napi_id: Option<u32>) -> String {
    match napi_id {
        Some(0) => format!(
            "SO_BUSY_POLL={busy_poll_us}us set, but SO_INCOMING_NAPI_ID is 0 (loopback/veth have no NAPI queue): busy poll cannot take effect"
        ),
        Some(id) => format!("SO_BUSY_POLL={busy_poll_us}us set, NAPI id {id}: busy poll can take effect"),
        None => format!("SO_BUSY_POLL={busy_poll_us}us set, NAPI id unreadable"),
    }
}

/// What a stopped server reports.
#[derive(Clone, Debug, Serialize)]
pub struct ServerReport {
    pub mode: Mode,
    pub addr: String,
    pub connections: Vec<ConnReport>,
    pub bytes_echoed: u64,
    /// BPF programs and maps created (sockmap only) and how many still existed after closing.
    pub bpf_objects_created: usize,
    pub bpf_objects_remaining: usize,
    /// Connections refused because no thread or fd could be had.
    pub refused: u64,
    /// The CPU the serving threads were asked to run on (`--cpu`); each connection records
    /// what its thread got.
    pub requested_cpu: Option<usize>,
    /// Congestion control of the listening socket, inherited by every connection.
    pub congestion: String,
    /// Peak resident set size of the process (`VmHWM`), KiB, read after shutdown.
    pub peak_rss_kib: Option<u64>,
    /// Resident set size after shutdown (`VmRSS`), KiB.
    pub rss_after_kib: Option<u64>,
    /// io_uring only: the data path asked for and how many connections took each.
    pub uring_data: Option<UringDataReport>,
}

impl fmt::Display for ServerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} server on {}: {} connections, {} bytes echoed in total",
            self.mode,
            self.addr,
            self.connections.len(),
            self.bytes_echoed
        )?;
        if self.refused > 0 {
            write!(f, ", {} connections refused for lack of resources", self.refused)?;
        }
        if let Some(k) = self.peak_rss_kib {
            write!(f, "; peak RSS {:.1} MiB", k as f64 / 1024.0)?;
            if let Some(a) = self.rss_after_kib {
                write!(f, " ({:.1} MiB after shutdown)", a as f64 / 1024.0)?;
            }
        }
        if let Some(d) = &self.uring_data {
            write!(f, "; {d}")?;
        }
        let noted = self.connections.iter().filter(|c| c.note.is_some()).count();
        if noted > 0 {
            write!(f, ", {noted} of them echoed wholly or partly by a user-space copy")?;
        }
        if self.mode == Mode::Sockmap {
            write!(
                f,
                "; BPF: {} programs/maps created, detached and closed, {} still present in the kernel (checked by id)",
                self.bpf_objects_created, self.bpf_objects_remaining
            )?;
        }
        Ok(())
    }
}

/// State shared by the accept loop, the connection threads and [`Server`].
struct Shared {
    cfg: ServerConfig,
    stop: AtomicBool,
    next_id: AtomicU64,
    refused: AtomicU64,
    /// Live connections (thread modes), so that shutdown can wake their blocked system calls.
    live: Mutex<HashMap<u64, Arc<TcpStream>>>,
    /// Connections the server shut down itself on stop.
    shut: Mutex<HashSet<u64>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    reports: Mutex<Vec<ConnReport>>,
    /// Kernel ids of every BPF object created, checked after shutdown.
    bpf_ids: Mutex<Vec<(ObjKind, u32)>>,
    /// The sockmap stream parser, shared by every connection's map.
    parser: Mutex<Option<OwnedFd>>,
    /// io_uring: connections served by splice and by copy.
    spliced: AtomicU64,
    copied: AtomicU64,
    switched: AtomicU64,
    defer_taskrun: AtomicBool,
}

impl Shared {
    fn finish(&self, r: ConnReport) {
        if self.cfg.print_connections {
            println!("{r}");
        }
        self.reports.lock().unwrap_or_else(|e| e.into_inner()).push(r);
    }

    /// Sets up an accepted socket: `TCP_NODELAY` and busy poll; returns the busy-poll value read
    /// back, and why the value asked for could not be set.
    fn prepare(&self, fd: RawFd) -> Option<BusyPollGot> {
        let _ = sys::set_nodelay(fd);
        self.cfg.busy_poll_us.map(|us| busy_poll_on(fd, us))
    }

    /// Builds the report of a connection that ended with `res`; `by_server` when the server
    /// shut the connection down itself (on stop).
    #[allow(clippy::too_many_arguments)]
    fn report(
        &self,
        id: u64,
        peer: SocketAddr,
        fd: RawFd,
        bytes: u64,
        res: std::io::Result<()>,
        busy: Option<BusyPollGot>,
        by_server: bool,
    ) -> ConnReport {
        let kb = sys::tcp_bytes(fd).ok();
        let end = match res {
            _ if by_server => "server shutdown".to_string(),
            Ok(()) => "closed by peer".to_string(),
            Err(e) => format!("ended by error: {e}"),
        };
        ConnReport {
            id,
            peer: peer.to_string(),
            bytes_echoed: bytes,
            kernel_bytes_received: kb.map(|k| k.received),
            end,
            napi_id: busy.as_ref().and_then(|_| sys::napi_id(fd).ok()),
            busy_poll_us: busy.as_ref().and_then(|b| b.us),
            busy_poll_error: busy.and_then(|b| b.error),
            // SAFETY: sched_getcpu has no preconditions.
            cpu: unsafe { libc::sched_getcpu() },
            allowed_cpus: schedlab_report::machine::online_cpus(),
            pin_error: PIN_ERROR.with(|p| p.borrow().clone()),
            note: None,
        }
    }
}

/// A running echo server.
pub struct Server {
    shared: Arc<Shared>,
    local: SocketAddr,
    wake: Arc<OwnedFd>,
    main: Option<JoinHandle<()>>,
    report: Option<ServerReport>,
    congestion: String,
}

impl Server {
    /// Probes the mode, binds `cfg.addr` and starts serving in background threads.
    pub fn start(cfg: ServerConfig) -> Result<Server, EchoError> {
        cfg.mode.probe()?;
        if let Some(cpu) = cfg.cpu {
            // The serving threads descend from this one: a CPU outside its mask cannot be had.
            let allowed = schedlab_report::machine::online_cpus();
            if !allowed.contains(&cpu) {
                return Err(EchoError::BadCpu { what: "the server (--cpu)", cpu, allowed });
            }
        }
        let listener = TcpListener::bind(cfg.addr).map_err(|err| {
            let hint = match err.raw_os_error() {
                Some(libc::EADDRINUSE) => " (the port is already in use: stop the other server or pick another port)",
                Some(libc::EACCES) => " (ports below 1024 need root)",
                Some(libc::EADDRNOTAVAIL) => " (no interface of this machine has that address)",
                _ => "",
            };
            EchoError::Bind { addr: cfg.addr.to_string(), err, hint }
        })?;
        let local = listener.local_addr().ctx(|| "getsockname on the listening socket")?;
        if let Some(cc) = &cfg.congestion {
            if let Err(e) = sys::set_congestion(listener.as_raw_fd(), cc) {
                eprintln!("warning: cannot set TCP_CONGESTION={cc} ({e}); see /proc/sys/net/ipv4/tcp_available_congestion_control; keeping the system default");
            }
        }
        let congestion = sys::congestion(listener.as_raw_fd()).unwrap_or_default();
        listener.set_nonblocking(true).ctx(|| "making the listening socket non-blocking")?;
        let wake = Arc::new(sys::eventfd().ctx(|| "creating the shutdown eventfd")?);
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            stop: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            refused: AtomicU64::new(0),
            live: Mutex::new(HashMap::new()),
            shut: Mutex::new(HashSet::new()),
            workers: Mutex::new(Vec::new()),
            reports: Mutex::new(Vec::new()),
            bpf_ids: Mutex::new(Vec::new()),
            parser: Mutex::new(None),
            spliced: AtomicU64::new(0),
            copied: AtomicU64::new(0),
            switched: AtomicU64::new(0),
            defer_taskrun: AtomicBool::new(false),
        });
        if cfg.mode == Mode::Sockmap {
            let p = bpf::load_sk_skb(&bpf::parser_program(), "slecho_parser", bpf::BPF_SK_SKB_STREAM_PARSER)?;
            if let Ok(id) = bpf::object_id(&p) {
                shared.bpf_ids.lock().unwrap_or_else(|e| e.into_inner()).push((ObjKind::Prog, id));
            }
            *shared.parser.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
        }
        let (sh, wk) = (shared.clone(), wake.clone());
        let name = format!("echo-{}", cfg.mode);
        let main = if cfg.mode == Mode::IoUring {
            let ring = uring::Loop::new().map_err(|e| EchoError::io("setting up the io_uring", e))?;
            shared.defer_taskrun.store(ring.deferred, Ordering::SeqCst);
            std::thread::Builder::new().name(name).spawn(move || ring.run(sh, listener, wk))
        } else {
            std::thread::Builder::new().name(name).spawn(move || threaded::accept_loop(sh, listener, wk))
        }
        .ctx(|| "spawning the server thread")?;
        Ok(Server { shared, local, wake, main: Some(main), report: None, congestion })
    }

    /// The address actually bound (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Connections finished so far.
    pub fn finished_connections(&self) -> usize {
        self.shared.reports.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Stops accepting, closes every connection, joins every thread, releases BPF objects and
    /// checks they are gone; returns what the server did.
    pub fn shutdown(mut self) -> ServerReport {
        self.stop_all()
    }

    fn stop_all(&mut self) -> ServerReport {
        if let Some(r) = &self.report {
            return r.clone();
        }
        let sh = &self.shared;
        sh.stop.store(true, Ordering::SeqCst);
        let _ = sys::eventfd_signal(&self.wake);
        if let Some(m) = self.main.take() {
            let _ = m.join();
        }
        {
            let live = sh.live.lock().unwrap_or_else(|e| e.into_inner());
            let mut shut = sh.shut.lock().unwrap_or_else(|e| e.into_inner());
            for (id, s) in live.iter() {
                shut.insert(*id);
                sys::shutdown_rdwr(s.as_raw_fd());
            }
        }
        let workers = std::mem::take(&mut *sh.workers.lock().unwrap_or_else(|e| e.into_inner()));
        for w in workers {
            let _ = w.join();
        }
        sh.parser.lock().unwrap_or_else(|e| e.into_inner()).take();
        let ids = std::mem::take(&mut *sh.bpf_ids.lock().unwrap_or_else(|e| e.into_inner()));
        let remaining = remaining_bpf(&ids, Duration::from_secs(3));
        let mut connections = std::mem::take(&mut *sh.reports.lock().unwrap_or_else(|e| e.into_inner()));
        connections.sort_by_key(|c| c.id);
        let r = ServerReport {
            mode: sh.cfg.mode,
            addr: self.local.to_string(),
            bytes_echoed: connections.iter().map(|c| c.bytes_echoed).sum(),
            connections,
            bpf_objects_created: ids.len(),
            bpf_objects_remaining: remaining,
            refused: sh.refused.load(Ordering::SeqCst),
            requested_cpu: sh.cfg.cpu,
            congestion: self.congestion.clone(),
            peak_rss_kib: sys::status_kib("VmHWM"),
            rss_after_kib: sys::status_kib("VmRSS"),
            uring_data: (sh.cfg.mode == Mode::IoUring).then(|| UringDataReport {
                requested: sh.cfg.uring_data,
                spliced: sh.spliced.load(Ordering::SeqCst),
                copied: sh.copied.load(Ordering::SeqCst),
                switched: sh.switched.load(Ordering::SeqCst),
                defer_taskrun: sh.defer_taskrun.load(Ordering::SeqCst),
            }),
        };
        self.report = Some(r.clone());
        r
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Waits up to `patience` for the kernel to free the objects (psocks drop their program
/// references after an RCU grace period) and returns how many still exist.
fn remaining_bpf(ids: &[(ObjKind, u32)], patience: Duration) -> usize {
    let deadline = Instant::now() + patience;
    loop {
        let left = ids.iter().filter(|(k, id)| bpf::exists(*k, *id).unwrap_or(true)).count();
        if left == 0 || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uring_data_names_round_trip_and_auto_is_the_default() {
        for d in UringData::ALL {
            assert_eq!(d.name().parse::<UringData>(), Ok(d));
            assert_eq!(d.name().to_uppercase().parse::<UringData>(), Ok(d));
        }
        assert!("zerocopy".parse::<UringData>().unwrap_err().contains("copy, splice or auto"));
        assert_eq!(UringData::default(), UringData::Auto);
        assert_eq!(ServerConfig::new(Mode::IoUring, "127.0.0.1:0".parse().unwrap()).uring_data, UringData::Auto);
    }

    #[test]
    fn a_refused_busy_poll_is_recorded_as_refused_not_as_set() {
        // A pipe is no socket: setsockopt fails (ENOTSOCK) as a refusal would.
        let mut p = [0; 2];
        // SAFETY: `p` has room for the two descriptors pipe writes.
        assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
        let got = busy_poll_on(p[0], 50);
        // SAFETY: both descriptors were just opened here.
        unsafe {
            libc::close(p[0]);
            libc::close(p[1]);
        }
        let why = got.error.clone().expect("the failure is kept");
        assert!(why.contains("SO_BUSY_POLL=50us refused"), "{why}");
        assert_eq!(got.us, None, "nothing could be read back from a non-socket");
        let rep = ConnReport {
            id: 1,
            peer: "127.0.0.1:1".into(),
            bytes_echoed: 0,
            kernel_bytes_received: None,
            end: "closed by peer".into(),
            busy_poll_us: Some(0),
            busy_poll_error: got.error,
            napi_id: Some(0),
            cpu: 0,
            allowed_cpus: vec![0],
            pin_error: Some("cannot pin the serving thread to CPU 7: Invalid argument".into()),
            note: None,
        };
        let line = rep.to_string();
        assert!(
            line.contains("refused") && line.contains("the socket has SO_BUSY_POLL=0us") && !line.contains("us set"),
            "{line}"
        );
        assert!(line.contains("NOT pinned: cannot pin the serving thread to CPU 7"), "{line}");
    }
}
