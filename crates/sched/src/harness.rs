//! The run: client threads, their rings, the scheduler (a thread, or in distributed mode whoever
//! holds the scheduler lock), the emulated link, and the exact accounting at the end.
//!
//! ## Clock
//! Every timestamp is `CLOCK_MONOTONIC` in nanoseconds (the vDSO clock behind `Instant`), read
//! once per client burst, per client poll and per scheduler pass (not per packet). The timestamp
//! files' `cli_enq` is that clock's absolute value; the other three fields are nanosecond deltas.
//!
//! ## Link emulation
//! The link is idle at `next_idle`; each released packet of `len` bytes moves it by
//! `len × 8 / bw`, kept in fixed point (2^-16 ps) so that even `10T` with 60-byte packets (48 ps)
//! accumulates exactly. The scheduler releases while `next_idle ≤ now`, at most `-B` packets per
//! pass. A packet enqueued into an empty policy sets `next_idle = max(next_idle, now)`: idle time
//! earns no credit, while a late scheduler pass still catches up with a backlog.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedlab_policy::{Alpha, AlphaSched, AnyPolicy, Drr, Fifo, FlowWeight, Message, Policy, Qfq, Wf2qPlus};
use schedlab_report::machine::{pin_current_thread, ThreadInfo};
use schedlab_report::Hist;

use crate::messages::{MessageLog, MsgRecord};
use crate::ring::{channel, Completion, Consumer, Producer};
use crate::traffic::Traffic;
use crate::units::{Bps, Nanos};

/// `CLOCK_MONOTONIC` in nanoseconds.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The scheduling algorithm (`-alg`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Alg {
    Fifo,
    /// Deficit round robin, quantum = weight × max_len.
    Rr,
    Wf2qp,
    Qfq,
    /// Alpha scheduling with a fixed α; a client's burst is one message.
    Alpha(Alpha),
    /// Shortest remaining first (α = ∞); a client's burst is one message.
    Sf,
}

impl Alg {
    /// Bursts are single messages (message-level policies).
    pub fn message_level(self) -> bool {
        matches!(self, Alg::Alpha(_) | Alg::Sf)
    }
    /// Needs `-flowsets`.
    pub fn flow_level(self) -> bool {
        matches!(self, Alg::Rr | Alg::Wf2qp | Alg::Qfq)
    }
    /// Name as given to `-alg`.
    pub fn name(self) -> String {
        match self {
            Alg::Fifo => "fifo".into(),
            Alg::Rr => "rr".into(),
            Alg::Wf2qp => "wf2qp".into(),
            Alg::Qfq => "qfq".into(),
            Alg::Alpha(a) => format!("alpha {a}"),
            Alg::Sf => "sf".into(),
        }
    }
    /// The policy, with the very code the simulator runs.
    pub fn build<T: Copy>(self, flows: &[FlowWeight]) -> AnyPolicy<T> {
        match self {
            Alg::Fifo => AnyPolicy::Fifo(Fifo::new()),
            Alg::Rr => AnyPolicy::Drr(Drr::new(flows)),
            Alg::Wf2qp => AnyPolicy::Wf2qPlus(Wf2qPlus::new(flows)),
            Alg::Qfq => AnyPolicy::Qfq(Qfq::new(flows)),
            Alg::Alpha(a) => AnyPolicy::Alpha(AlphaSched::with_alpha(a)),
            Alg::Sf => AnyPolicy::Alpha(AlphaSched::shortest_first()),
        }
    }
}

/// The policy's payload: which client, which ring position (first packet of the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub client: u32,
    pub pos: u64,
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Config {
    pub threads: usize,
    pub traffic: Traffic,
    pub queue: usize,
    /// `None`: unlimited.
    pub bandwidth: Option<Bps>,
    pub sched_poll: Nanos,
    pub client_poll: Nanos,
    pub sched_cpu: Option<usize>,
    pub batch: usize,
    pub distributed: bool,
    pub duration_cap: Option<Nanos>,
    pub alg: Alg,
    pub flows: Vec<FlowWeight>,
    /// Timestamp records kept per client (0: none).
    pub ts_limit: usize,
    /// Record the scheduler's enqueue/release sequence (tests).
    pub trace: bool,
    /// Seed of the clients' generators (message lengths, Poisson gaps).
    pub seed: u64,
    /// Keep one record per message (burst) in every client.
    pub messages: bool,
}

/// Messages taken from one ring per client per scheduler visit.
pub const VISIT: usize = 64;
/// Distributed mode: the scheduler thread sleeps after this long without work.
pub const IDLE_BEFORE_SLEEP: Nanos = Nanos(30_000);
/// Distributed mode: clients wake the scheduler thread once they have spent this long scheduling
/// since it went to sleep (counting only passes that moved packets).
pub const CLIENT_SCHED_BUDGET: Nanos = Nanos(50_000);

/// One event of the scheduler's trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// `vt_ns`: the message's arrival in the link's own time: the pass time, or just before the
    /// link's next release when the pass is late and the policy was not empty (the harness
    /// decides that overdue release with this message present). A simulator replaying the
    /// enqueues at these times with a deterministic service of `bytes × 8 / link rate` makes the
    /// same decisions.
    Enqueue { client: u32, pos: u64, packets: u32, bytes: u32, vt_ns: u64 },
    Release { client: u32, pos: u64 },
}

/// The scheduler's state: the policy, the consumer ends, the link.
pub struct Core<P> {
    pub policy: P,
    rings: Vec<Consumer>,
    /// Link idle time in 2^-16 ps units; `None` cost means unlimited.
    next_idle: u128,
    fp_per_byte: Option<u128>,
    batch: usize,
    pub released: Vec<u64>,
    pub sched_drops: Vec<u64>,
    pub passes: u64,
    pub trace: Option<Vec<TraceEvent>>,
}

impl<P: Policy<Item>> Core<P> {
    pub fn new(policy: P, rings: Vec<Consumer>, bandwidth: Option<Bps>, batch: usize, trace: bool) -> Self {
        let n = rings.len();
        Core {
            policy,
            rings,
            next_idle: 0,
            // ps per byte in 2^-16 units: 8 bits * 1e12 ps * 65536 / bw.
            fp_per_byte: bandwidth.map(|b| ((8u128 * 1_000_000_000_000u128) << 16) / u128::from(b.0.max(1))),
            batch: batch.max(1),
            released: vec![0; n],
            sched_drops: vec![0; n],
            passes: 0,
            trace: trace.then(Vec::new),
        }
    }

    /// Packets taken from client `c`'s ring so far.
    pub fn taken(&self, c: usize) -> u64 {
        self.rings[c].taken()
    }

    /// One scheduler pass at time `now` (ns): take new messages from every ring, then release
    /// packets while the link is idle. Returns the number of packets taken plus released.
    #[inline]
    pub fn pass(&mut self, now: u64) -> usize {
        self.passes += 1;
        let now_fp = (u128::from(now) * 1000) << 16;
        let mut work = 0;
        for c in 0..self.rings.len() {
            for _ in 0..VISIT {
                let Some(m) = self.rings[c].take(now) else { break };
                work += m.packets as usize;
                let was_empty = self.policy.is_empty();
                if was_empty && self.next_idle < now_fp {
                    self.next_idle = now_fp;
                }
                let item = Item { client: c as u32, pos: m.pos };
                let msg = Message::new(item, c as u32, m.packets).with_bytes(m.len);
                if let Some(t) = self.trace.as_mut() {
                    let vt_ns = if was_empty || self.fp_per_byte.is_none() {
                        now
                    } else {
                        now.min((((self.next_idle >> 16) / 1000) as u64).saturating_sub(1))
                    };
                    t.push(TraceEvent::Enqueue { client: c as u32, pos: m.pos, packets: m.packets, bytes: m.len, vt_ns });
                }
                if self.policy.enqueue(msg).is_err() {
                    for _ in 0..m.packets {
                        self.rings[c].release(m.pos, now, true);
                    }
                    self.sched_drops[c] += u64::from(m.packets);
                }
            }
        }
        for _ in 0..self.batch {
            if self.fp_per_byte.is_some() && self.next_idle > now_fp {
                break;
            }
            let Some(pk) = self.policy.dequeue() else { break };
            let c = pk.item.client as usize;
            self.rings[c].release(pk.item.pos, now, false);
            self.released[c] += 1;
            if let Some(cost) = self.fp_per_byte {
                self.next_idle += cost * u128::from(pk.bytes);
            }
            if let Some(t) = self.trace.as_mut() {
                t.push(TraceEvent::Release { client: pk.item.client, pos: pk.item.pos });
            }
            work += 1;
        }
        work
    }
}

const RUN: u8 = 0;
const STOP: u8 = 1;
const FINAL: u8 = 2;

/// State shared by every thread of a run.
struct Shared {
    phase: AtomicU8,
    /// Start and end of the run (ns), published once every thread is ready (0 until then).
    start: AtomicU64,
    end: AtomicU64,
    /// Clients that have preallocated their records and wait for the start.
    ready: AtomicUsize,
    core: Mutex<Core<AnyPolicy<Item>>>,
    /// Distributed mode: the scheduler thread is asleep and clients may schedule.
    sleeping: AtomicBool,
    client_sched_ns: AtomicU64,
    eventfd: Option<EventFd>,
    wakeups: AtomicU64,
    client_passes: AtomicU64,
    trylock_busy: AtomicU64,
}

/// A Linux eventfd (owned; closed on drop).
struct EventFd(libc::c_int);

impl EventFd {
    fn new() -> std::io::Result<EventFd> {
        // SAFETY: plain syscall wrapper; the returned fd is owned by the EventFd.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(EventFd(fd))
        }
    }
    fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our own eventfd.
        let _ = unsafe { libc::write(self.0, (&one as *const u64).cast(), 8) };
    }
    /// Waits up to `timeout_ms` for a notification; true when one was consumed.
    fn wait(&self, timeout_ms: i32) -> bool {
        let mut pfd = libc::pollfd { fd: self.0, events: libc::POLLIN, revents: 0 };
        // SAFETY: `pfd` is a valid pollfd array of length 1.
        let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if r <= 0 {
            return false;
        }
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64 from our own eventfd.
        unsafe { libc::read(self.0, (&mut v as *mut u64).cast(), 8) == 8 }
    }
}

impl Drop for EventFd {
    fn drop(&mut self) {
        // SAFETY: we own the fd and close it once.
        unsafe { libc::close(self.0) };
    }
}

/// One timestamp record (the six fields of the timestamp files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TsRecord {
    pub cli_enq: u64,
    pub sch_enq: u64,
    pub sch_deq: u64,
    pub cli_deq: u64,
    pub len: u32,
    pub dropped: bool,
}

/// What one client did.
#[derive(Clone, Debug)]
pub struct ClientResult {
    pub generated: u64,
    pub ring_drops: u64,
    pub sched_drops: u64,
    pub transmitted: u64,
    pub bits: u64,
    /// Packets pushed but not transmitted/dropped at the end (in the ring or the policy).
    pub queued_at_stop: u64,
    /// Enqueue to mark seen, ns.
    pub delay: Hist,
    pub timestamps: Vec<TsRecord>,
    pub timestamps_truncated: u64,
    pub thread: ThreadInfo,
    pub sched_passes: u64,
    /// One record per burst (with `Config::messages`), in generation order.
    pub messages: Vec<MsgRecord>,
}

/// The scheduler's independent view at the end, per client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedView {
    pub taken: Vec<u64>,
    pub released: Vec<u64>,
    pub sched_drops: Vec<u64>,
    pub policy_queued: u64,
    pub passes: u64,
}

/// Everything a run measured.
#[derive(Debug)]
pub struct RunResult {
    pub clients: Vec<ClientResult>,
    pub sched: SchedView,
    pub elapsed: Nanos,
    pub interrupted: bool,
    pub scheduler_thread: Option<ThreadInfo>,
    pub sched_pin_error: Option<String>,
    pub wakeups: u64,
    pub client_passes: u64,
    pub trylock_busy: u64,
    pub trace: Option<Vec<TraceEvent>>,
}

/// Under a real-time policy (`chrt -f`/`-r`) a spinning thread is never preempted by a thread
/// of the same priority, so a client and the main thread sharing a CPU would livelock. Such
/// threads yield once a millisecond; under `SCHED_OTHER` this does nothing (yielding there hands
/// whole time slices to spinning peers).
pub(crate) struct RtYield {
    rt: bool,
    next: u64,
}

impl RtYield {
    pub(crate) fn new() -> RtYield {
        // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
        let pol = unsafe { libc::sched_getscheduler(0) };
        RtYield { rt: pol == libc::SCHED_FIFO || pol == libc::SCHED_RR, next: 0 }
    }
    #[inline]
    pub(crate) fn tick(&mut self, now: u64) {
        if self.rt && now >= self.next {
            std::thread::yield_now();
            self.next = now + 1_000_000;
        }
    }
}

#[inline]
fn spin_until(t: u64, y: &mut RtYield, phase: &AtomicU8) {
    // A busy spin, as in the original; a long -i must not delay the end of the run.
    loop {
        let now = now_ns();
        if now >= t || phase.load(Ordering::Relaxed) != RUN {
            break;
        }
        y.tick(now);
        std::hint::spin_loop();
    }
}

/// Runs the configuration. `interrupt` (Ctrl-C) ends it early; results are partial then.
pub fn run(cfg: &Config, interrupt: &AtomicBool) -> anyhow::Result<RunResult> {
    anyhow::ensure!(cfg.threads >= 1, "need at least one client thread (-t)");
    anyhow::ensure!(cfg.queue >= 1, "the queue size (-q) must be at least 1");
    anyhow::ensure!(cfg.traffic.programs.len() == cfg.threads, "one program per client thread");
    if cfg.alg.message_level() {
        if let Some((i, s)) = cfg.traffic.programs.iter().enumerate().find_map(|(i, p)| {
            p.iter().find(|s| s.burst as usize > cfg.queue).map(|s| (i, s))
        }) {
            anyhow::bail!(
                "thread {i} sends bursts of {} packets but the queue (-q) holds {}: with -alg {} a burst is one \
                 message and must fit in the queue; raise -q",
                s.burst,
                cfg.queue,
                cfg.alg.name()
            );
        }
    }
    if cfg.alg.flow_level() {
        anyhow::ensure!(
            cfg.flows.len() >= cfg.threads,
            "-flowsets configures {} flows but there are {} clients (client i is flow i): add flows, e.g. -flowsets 1:1500:{}",
            cfg.flows.len(),
            cfg.threads,
            cfg.threads
        );
    }
    let mut producers = Vec::new();
    let mut consumers = Vec::new();
    for _ in 0..cfg.threads {
        let (p, c) = channel(cfg.queue);
        producers.push(p);
        consumers.push(c);
    }
    let policy = cfg.alg.build(&cfg.flows);
    let eventfd = if cfg.distributed {
        Some(EventFd::new().map_err(|e| anyhow::anyhow!("distributed mode (-D) needs an eventfd: {e}"))?)
    } else {
        None
    };
    let shared = Arc::new(Shared {
        phase: AtomicU8::new(RUN),
        start: AtomicU64::new(0),
        end: AtomicU64::new(0),
        ready: AtomicUsize::new(0),
        core: Mutex::new(Core::new(policy, consumers, cfg.bandwidth, cfg.batch, cfg.trace)),
        sleeping: AtomicBool::new(false),
        client_sched_ns: AtomicU64::new(0),
        eventfd,
        wakeups: AtomicU64::new(0),
        client_passes: AtomicU64::new(0),
        trylock_busy: AtomicU64::new(0),
    });

    let sched_handle = {
        let shared = shared.clone();
        let (cpu, poll, distributed) = (cfg.sched_cpu, cfg.sched_poll.0, cfg.distributed);
        std::thread::Builder::new()
            .name("sched".into())
            .spawn(move || scheduler_thread(&shared, cpu, poll, distributed))?
    };
    let mut client_handles = Vec::new();
    for (i, prod) in producers.into_iter().enumerate() {
        let for_client = shared.clone();
        let program = cfg.traffic.programs[i].clone();
        let ctx = ClientCtx {
            program,
            message_level: cfg.alg.message_level(),
            poll: cfg.client_poll.0,
            distributed: cfg.distributed,
            ts_limit: cfg.ts_limit,
            client: i as u32,
            seed: cfg.seed,
            messages: cfg.messages,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("client{i}"))
            .spawn(move || client_thread(&for_client, prod, ctx));
        match spawned {
            Ok(h) => client_handles.push(h),
            Err(e) => {
                // Release and join what was started, then report.
                shared.phase.store(STOP, Ordering::SeqCst);
                shared.start.store(1, Ordering::SeqCst);
                if let Some(efd) = &shared.eventfd {
                    efd.notify();
                }
                let _ = sched_handle.join();
                let core = shared.core.lock();
                shared.phase.store(FINAL, Ordering::SeqCst);
                for h in client_handles {
                    let _ = h.join();
                }
                drop(core);
                anyhow::bail!("cannot start client thread {i}: {e}");
            }
        }
    }

    // Start the clock once every client has preallocated its records.
    while shared.ready.load(Ordering::SeqCst) < cfg.threads {
        std::thread::yield_now();
    }
    let start = now_ns();
    let mut end = start + cfg.traffic.longest().0;
    if let Some(cap) = cfg.duration_cap {
        end = end.min(start + cap.0);
    }
    shared.end.store(end, Ordering::SeqCst);
    shared.start.store(start, Ordering::SeqCst);

    // Wait for the end of the longest program, the -d cap, or Ctrl-C.
    let mut interrupted = false;
    loop {
        let now = now_ns();
        if now >= end {
            break;
        }
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        std::thread::sleep(Duration::from_nanos((end - now).min(5_000_000)));
    }
    let stopped = now_ns();
    shared.phase.store(STOP, Ordering::SeqCst);
    if let Some(efd) = &shared.eventfd {
        efd.notify();
    }
    let (sched_info, pin_error) = sched_handle.join().map_err(|_| anyhow::anyhow!("the scheduler thread panicked"))?;
    // Hold the scheduler lock from now on: no client can run a pass after this point, so the
    // counts below are final.
    let core = shared.core.lock().map_err(|_| anyhow::anyhow!("a thread panicked while scheduling"))?;
    shared.phase.store(FINAL, Ordering::SeqCst);
    let mut clients = Vec::new();
    for h in client_handles {
        clients.push(h.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))?);
    }
    let sched = SchedView {
        taken: (0..cfg.threads).map(|c| core.taken(c)).collect(),
        released: core.released.clone(),
        sched_drops: core.sched_drops.clone(),
        policy_queued: core.policy.queued_packets(),
        passes: core.passes,
    };
    let trace = core.trace.clone();
    drop(core);
    Ok(RunResult {
        clients,
        sched,
        elapsed: Nanos(stopped.saturating_sub(start)),
        interrupted,
        scheduler_thread: sched_info,
        sched_pin_error: pin_error,
        wakeups: shared.wakeups.load(Ordering::Relaxed),
        client_passes: shared.client_passes.load(Ordering::Relaxed),
        trylock_busy: shared.trylock_busy.load(Ordering::Relaxed),
        trace,
    })
}

fn scheduler_thread(
    shared: &Shared,
    cpu: Option<usize>,
    poll: u64,
    distributed: bool,
) -> (Option<ThreadInfo>, Option<String>) {
    let pin_error = cpu.and_then(|c| pin_current_thread(c).err().map(|e| format!("cannot pin the scheduler to CPU {c}: {e}")));
    let mut info = None;
    let mut guard = Some(match shared.core.lock() {
        Ok(g) => g,
        Err(_) => return (None, pin_error),
    });
    let mut last_work = now_ns();
    let mut next = last_work;
    let mut rt = RtYield::new();
    loop {
        if shared.phase.load(Ordering::Relaxed) != RUN {
            break;
        }
        let now = now_ns();
        rt.tick(now);
        let core = guard.as_mut().expect("the scheduler holds the lock while awake");
        let work = core.pass(now);
        if info.is_none() {
            info = Some(ThreadInfo::current());
        }
        if work > 0 {
            last_work = now;
        } else if distributed && now - last_work >= IDLE_BEFORE_SLEEP.0 {
            // Idle: let the clients schedule, sleep until one of them finds it too costly.
            shared.client_sched_ns.store(0, Ordering::Relaxed);
            shared.sleeping.store(true, Ordering::SeqCst);
            guard = None;
            let efd = shared.eventfd.as_ref().expect("distributed mode has an eventfd");
            while shared.phase.load(Ordering::Relaxed) == RUN && !efd.wait(10) {}
            shared.sleeping.store(false, Ordering::SeqCst);
            if shared.phase.load(Ordering::Relaxed) != RUN {
                break;
            }
            shared.wakeups.fetch_add(1, Ordering::Relaxed);
            guard = match shared.core.lock() {
                Ok(g) => Some(g),
                Err(_) => break,
            };
            last_work = now_ns();
            next = last_work;
            continue;
        }
        if poll > 0 {
            next += poll;
            if next < now {
                next = now;
            }
            spin_until(next, &mut rt, &shared.phase);
        }
    }
    drop(guard);
    // Re-read where it ran, after the work.
    (Some(ThreadInfo::current()).or(info), pin_error)
}

struct ClientCtx {
    program: Vec<crate::traffic::Spec>,
    message_level: bool,
    poll: u64,
    distributed: bool,
    ts_limit: usize,
    client: u32,
    seed: u64,
    messages: bool,
}

struct ClientState {
    delay: Hist,
    ts: Vec<TsRecord>,
    ts_limit: usize,
    ts_truncated: u64,
    transmitted: u64,
    sched_drops: u64,
    bits: u64,
    log: Option<MessageLog>,
}

impl ClientState {
    #[inline]
    fn complete(&mut self, c: Completion, now: u64) {
        if let Some(log) = self.log.as_mut() {
            log.completed(&c, now);
        }
        if c.dropped {
            self.sched_drops += 1;
        } else {
            self.transmitted += 1;
            self.bits += u64::from(c.len) * 8;
            self.delay.record(now.saturating_sub(c.cli_enq));
        }
        if self.ts.len() < self.ts_limit {
            self.ts.push(TsRecord {
                cli_enq: c.cli_enq,
                sch_enq: c.sch_enq.saturating_sub(c.cli_enq),
                sch_deq: c.sch_deq.saturating_sub(c.sch_enq),
                cli_deq: now.saturating_sub(c.sch_deq),
                len: c.len,
                dropped: c.dropped,
            });
        } else {
            self.ts_truncated += 1;
        }
    }
}

/// Distributed mode: run one scheduler pass if the scheduler thread sleeps and the lock is free.
#[inline]
fn maybe_schedule(shared: &Shared, passes: &mut u64) {
    if !shared.sleeping.load(Ordering::Relaxed) || shared.phase.load(Ordering::Relaxed) != RUN {
        return;
    }
    match shared.core.try_lock() {
        Ok(mut core) => {
            let t0 = now_ns();
            let work = core.pass(t0);
            drop(core);
            *passes += 1;
            shared.client_passes.fetch_add(1, Ordering::Relaxed);
            if work == 0 {
                return; // only passes that moved packets count as scheduling cost
            }
            let spent = now_ns() - t0;
            let total = shared.client_sched_ns.fetch_add(spent, Ordering::Relaxed) + spent;
            if total >= CLIENT_SCHED_BUDGET.0 && shared.sleeping.load(Ordering::Relaxed) {
                shared.client_sched_ns.store(0, Ordering::Relaxed);
                if let Some(efd) = &shared.eventfd {
                    efd.notify();
                }
            }
        }
        Err(_) => {
            shared.trylock_busy.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn client_thread(shared: &Shared, mut ring: Producer, ctx: ClientCtx) -> ClientResult {
    // Preallocate (and touch) the timestamp records so the hot path never faults a page in.
    let expect: u64 = ctx
        .program
        .iter()
        .map(|s| {
            let gap = s.gap_ps();
            if gap == u64::MAX {
                0
            } else {
                ((u128::from(s.duration.0) * 1000 / u128::from(gap.max(1)) + 1) as f64 * s.mean_burst().max(1.0))
                    .min(u64::MAX as f64) as u64
            }
        })
        .fold(0u64, |a, b| a.saturating_add(b));
    let cap = (ctx.ts_limit as u64).min(expect.saturating_add(ring.capacity() as u64)) as usize;
    // Poisson gaps vary: leave room for 25% more messages than the mean (the log grows past that).
    let log = ctx.messages.then(|| MessageLog::with_capacity((expect + expect / 4 + 64).min(1 << 26) as usize));
    let mut rng = crate::workload::client_rng(ctx.seed, ctx.client as usize);
    let mut ts = vec![TsRecord::default(); cap];
    ts.clear();
    let mut st = ClientState {
        delay: Hist::new(),
        ts,
        ts_limit: ctx.ts_limit,
        ts_truncated: 0,
        transmitted: 0,
        sched_drops: 0,
        bits: 0,
        log,
    };
    let mut generated = 0u64;
    let mut ring_drops = 0u64;
    let mut passes = 0u64;
    let mut next_poll = 0u64;
    shared.ready.fetch_add(1, Ordering::SeqCst);
    let (start, end) = loop {
        let start = shared.start.load(Ordering::SeqCst);
        if start != 0 {
            break (start, shared.end.load(Ordering::SeqCst));
        }
        std::thread::yield_now();
    };
    let mut rt = RtYield::new();
    let mut spec_start = start;
    'program: for spec in &ctx.program {
        let spec_end = (spec_start + spec.duration.0).min(end);
        let gap = spec.gap_ps();
        let mut next_burst_ps = u128::from(spec_start) * 1000;
        if spec.gaps == crate::workload::Gaps::Poisson {
            next_burst_ps += u128::from(crate::workload::draw_gap_ps(spec.gaps, gap, &mut rng));
        }
        loop {
            if shared.phase.load(Ordering::Relaxed) != RUN {
                break 'program;
            }
            let now = now_ns();
            if now >= spec_end {
                break;
            }
            rt.tick(now);
            let mut did = false;
            if gap != u64::MAX && u128::from(now) * 1000 >= next_burst_ps {
                let want = crate::workload::draw_len(spec.lengths.as_ref(), spec.burst, &mut rng);
                let first_pos = ring.pushed();
                let mut fit = ring.space().min(u64::from(want)) as u32;
                if ctx.message_level {
                    // A burst is one message: all of it enters the ring, or none (a truncated
                    // message would be a different message).
                    if fit == want {
                        ring.push(fit, spec.pkt_len, now);
                    } else {
                        fit = 0;
                    }
                } else {
                    for _ in 0..fit {
                        ring.push(1, spec.pkt_len, now);
                    }
                }
                generated += u64::from(want);
                ring_drops += u64::from(want - fit);
                if let Some(log) = st.log.as_mut() {
                    log.generated(ctx.client, want, fit, spec.pkt_len, first_pos, now);
                }
                next_burst_ps += u128::from(crate::workload::draw_gap_ps(spec.gaps, gap, &mut rng));
                did = true;
            }
            if ctx.distributed {
                maybe_schedule(shared, &mut passes);
            }
            if now >= next_poll {
                ring.poll(|c| st.complete(c, now));
                next_poll = now + ctx.poll;
                did = true;
            }
            if !did {
                std::hint::spin_loop();
            }
        }
        spec_start = spec_end;
    }
    // Program over: keep seeing marks until the run stops.
    let mut idle_spins = 0u32;
    while shared.phase.load(Ordering::Relaxed) == RUN {
        if ctx.distributed {
            maybe_schedule(shared, &mut passes);
        }
        let now = now_ns();
        if now >= next_poll {
            ring.poll(|c| st.complete(c, now));
            next_poll = now + ctx.poll;
        }
        idle_spins += 1;
        if idle_spins.is_multiple_of(64) {
            std::thread::yield_now();
        }
    }
    while shared.phase.load(Ordering::SeqCst) != FINAL {
        std::thread::yield_now();
    }
    let now = now_ns();
    ring.sweep(|c| st.complete(c, now));
    let queued = ring.pushed() - st.transmitted - st.sched_drops;
    ClientResult {
        generated,
        ring_drops,
        sched_drops: st.sched_drops,
        transmitted: st.transmitted,
        bits: st.bits,
        queued_at_stop: queued,
        delay: st.delay,
        timestamps: st.ts,
        timestamps_truncated: st.ts_truncated,
        thread: ThreadInfo::current(),
        sched_passes: passes,
        messages: st.log.map(|l| l.records).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A core over `n` rings with the producers kept by the test (no threads, synthetic clock).
    fn core(n: usize, bw: Option<u64>, batch: usize) -> (Core<Fifo<Item>>, Vec<Producer>) {
        let (ps, cs): (Vec<_>, Vec<_>) = (0..n).map(|_| channel(4096)).unzip();
        (Core::new(Fifo::new(), cs, bw.map(Bps), batch, false), ps)
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn link_releases_at_the_configured_rate_and_idle_earns_no_credit() {
        // 8 kb/s = 1000 bytes/s: one 100-byte packet per 100 ms.
        let (mut c, mut p) = core(1, Some(8_000), 500);
        for _ in 0..5 {
            p[0].push(1, 100, 1);
        }
        assert_eq!(c.pass(1_000 * MS), 5 + 1, "takes all five, releases one at once");
        assert_eq!(c.pass(1_050 * MS), 0);
        assert_eq!(c.pass(1_100 * MS), 1);
        // A late pass catches up with the backlog (the link was busy, not idle).
        assert_eq!(c.pass(1_350 * MS), 2, "the 1200 and 1300 ms slots");
        assert_eq!(c.pass(1_400 * MS), 1);
        assert_eq!(c.released[0], 5);
        // Long idle: a new packet goes at once, the next one 100 ms later, no burst of credit.
        p[0].push(1, 100, 2);
        p[0].push(1, 100, 2);
        assert_eq!(c.pass(10_000 * MS), 2 + 1);
        assert_eq!(c.pass(10_099 * MS), 0);
        assert_eq!(c.pass(10_100 * MS), 1);
    }

    #[test]
    fn batch_limit_and_ten_terabits_without_overflow() {
        let (mut c, mut p) = core(2, None, 7);
        for _ in 0..20 {
            p[0].push(1, 60, 1);
            p[1].push(1, 60, 1);
        }
        assert_eq!(c.pass(MS), 40 + 7, "unlimited link: the -B limit bounds a pass");
        assert_eq!(c.pass(MS), 7);
        // 10 Tb/s: 60-byte packets cost 48 ps each; 1000 of them fit in 48 ns.
        let (mut c, mut p) = core(1, Some(10_000_000_000_000), 5000);
        for _ in 0..2000 {
            p[0].push(1, 60, 1);
        }
        // Passes at one instant take VISIT messages each and release what fits in no time.
        let mut t = MS;
        while c.taken(0) < 2000 {
            c.pass(t);
        }
        let before = c.released[0];
        t += 48;
        c.pass(t);
        let sent = c.released[0] - before;
        assert!((990..=1010).contains(&sent), "{sent} packets in 48 ns at 10 Tb/s");
    }

    #[test]
    fn refused_messages_are_marked_dropped() {
        // A flow-level policy with one flow, two clients: client 1's packets are refused.
        let (ps, cs): (Vec<_>, Vec<_>) = (0..2).map(|_| channel(8)).unzip();
        let mut p = ps;
        let mut c = Core::new(Drr::new(&[FlowWeight::new(1, 1500)]), cs, None, 500, false);
        p[0].push(1, 100, 1);
        p[1].push(1, 100, 1);
        c.pass(MS);
        assert_eq!((c.released.clone(), c.sched_drops.clone()), (vec![1, 0], vec![0, 1]));
        let mut dropped = Vec::new();
        p[1].poll(|x| dropped.push(x.dropped));
        assert_eq!(dropped, vec![true]);
    }
}
