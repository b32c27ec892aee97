//! The run: client threads, their rings, the scheduler (a thread, or in distributed mode whoever
//! holds the scheduler lock), the emulated link, and the exact accounting at the end.
//!
//! ## Clock
//! Every timestamp is `CLOCK_MONOTONIC` in nanoseconds (the vDSO clock behind `Instant`), read
//! where the event happens or once per batch *after* the ring was read, never before:
//! - `cli_enq`: the client's clock read before it writes and publishes the packet;
//! - `sch_enq`: read by the scheduler after it saw a client's ring non-empty, once per ring visit
//!   (a message stamped later than that read waits for the next visit);
//! - `sch_deq`: read after the pass's takes, once per release batch, before the marks are stored;
//! - `cli_deq`: read by the client after it saw the first mark, once per poll (a mark stamped
//!   later than that read is counted at the next poll).
//!
//! So each of the three deltas is a real, non-negative measurement of its stage, and a zero means
//! the two reads fell within the clock's resolution. The timestamp files' `cli_enq` is the
//! clock's absolute value; the other three fields are nanosecond deltas summing to the packet's
//! life (`cli_deq` time - `cli_enq`).
//!
//! ## Link emulation
//! The link is idle at `next_idle`; each released packet of `len` bytes moves it by
//! `len × 8 / bw`, kept in fixed point (2^-16 ps) so that even `10T` with 60-byte packets (48 ps)
//! accumulates exactly. The scheduler releases while `next_idle ≤ now`, at most `-B` packets per
//! pass. A packet enqueued into an empty policy sets `next_idle = max(next_idle, now)`: idle time
//! earns no credit, while a late scheduler pass still catches up with a backlog.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedlab_policy::{Alpha, AlphaSched, AnyPolicy, Drr, Fifo, FlowWeight, Message, Policy, Qfq, Wf2qPlus};
use schedlab_report::machine::{pin_current_thread, ThreadInfo};
use schedlab_prims::chan::{Mechanism, Notifier};
use schedlab_prims::locks::{LockKind, TryLock};
use schedlab_report::Hist;
use serde::Serialize;

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
    /// `--client-cpus`: client i is pinned to `list[i % len]`. None: see [`client_placement`].
    pub client_cpus: Option<Vec<usize>>,
    /// `-k`: clients `0..active` run their programs; the others exist (their rings are polled)
    /// but send nothing.
    pub active: usize,
    pub batch: usize,
    pub distributed: bool,
    /// `-D`: the lock that hands the scheduler role around (default the original's semaphore).
    pub lock: LockKind,
    /// `-D`: how clients wake the sleeping scheduler thread (default the original's eventfd).
    pub notify: Mechanism,
    pub duration_cap: Option<Nanos>,
    pub alg: Alg,
    pub flows: Vec<FlowWeight>,
    /// Scheduler queue limit (`-qmax`, packets inside the policy): at this many packets the
    /// scheduler drops what it takes from the rings until the policy is down to `qmin` (`-qmin`).
    pub qmax: u64,
    pub qmin: u64,
    /// Timestamp records kept per client (0: none).
    pub ts_limit: usize,
    /// Record the scheduler's enqueue/release sequence (tests).
    pub trace: bool,
    /// Seed of the clients' generators (message lengths, Poisson gaps).
    pub seed: u64,
    /// Keep one record per message (burst) in every client.
    pub messages: bool,
}

impl Config {
    /// A configuration with the command line's defaults: one program per client, queue 100,
    /// unlimited link, zero polling intervals, no pinning, no queue limit beyond the rings.
    pub fn new(programs: Vec<Vec<crate::traffic::Spec>>, alg: Alg, flows: Vec<FlowWeight>) -> Config {
        let threads = programs.len();
        Config {
            threads,
            traffic: Traffic { programs, warnings: vec![] },
            queue: 100,
            bandwidth: None,
            sched_poll: Nanos(0),
            client_poll: Nanos(0),
            sched_cpu: None,
            client_cpus: None,
            active: threads,
            batch: 500,
            distributed: false,
            lock: LockKind::Sem,
            notify: Mechanism::Eventfd,
            duration_cap: None,
            alg,
            flows,
            qmax: u64::MAX,
            qmin: 0,
            ts_limit: 0,
            trace: false,
            seed: 1,
            messages: false,
        }
    }
}

/// Where client `i` of `threads` is pinned: `--client-cpus` spread round robin; otherwise, when
/// the scheduler is pinned to CPU `a`, the allowed CPUs other than `a` round robin (all on `a`'s
/// neighbours, never on `a` while another CPU is allowed); otherwise not pinned.
pub fn client_placement(
    i: usize,
    client_cpus: Option<&[usize]>,
    sched_cpu: Option<usize>,
    allowed: &[usize],
) -> Option<usize> {
    match (client_cpus, sched_cpu) {
        (Some(list), _) if !list.is_empty() => Some(list[i % list.len()]),
        (_, Some(a)) => {
            let others: Vec<usize> = allowed.iter().copied().filter(|&c| c != a).collect();
            if others.is_empty() {
                None
            } else {
                Some(others[i % others.len()])
            }
        }
        _ => None,
    }
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

/// The scheduler's counters (the original's `check_idle`, `stat_early`, `sch_fetch`, `sch_pub`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchedCounters {
    /// Passes that neither took nor released a packet.
    pub idle_passes: u64,
    /// Passes that ended with packets queued but the emulated link still busy.
    pub early_passes: u64,
    /// Ring visits that took at least one message.
    pub fetches: u64,
    /// Release batches: passes that marked at least one packet for the clients.
    pub publishes: u64,
    /// Packets dropped because the policy held `-qmax` packets (part of `sched_drops`).
    pub qlimit_drops: u64,
    /// Times the queue limit was reached (the scheduler then dropped until `-qmin`).
    pub qlimit_hits: u64,
}

/// The scheduler's state: the policy, the consumer ends, the link.
pub struct Core<P> {
    pub policy: P,
    rings: Vec<Consumer>,
    /// Link idle time in 2^-16 ps units; `None` cost means unlimited.
    next_idle: u128,
    fp_per_byte: Option<u128>,
    batch: usize,
    /// Packets inside the policy, the queue limits, and whether it is dropping (hysteresis).
    pending: u64,
    qmax: u64,
    qmin: u64,
    full: bool,
    /// Scratch: rings seen non-empty in this pass.
    ready: Vec<u32>,
    pub released: Vec<u64>,
    pub sched_drops: Vec<u64>,
    pub passes: u64,
    pub counters: SchedCounters,
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
            pending: 0,
            qmax: u64::MAX,
            qmin: 0,
            full: false,
            ready: Vec::with_capacity(n),
            released: vec![0; n],
            sched_drops: vec![0; n],
            passes: 0,
            counters: SchedCounters::default(),
            trace: trace.then(Vec::new),
        }
    }

    /// Sets the queue limit: at `qmax` packets inside the policy, taken packets are dropped
    /// until the policy is down to `qmin`.
    pub fn with_queue_limit(mut self, qmax: u64, qmin: u64) -> Self {
        self.qmax = qmax.max(1);
        self.qmin = qmin.min(self.qmax - 1);
        self
    }

    /// Packets taken from client `c`'s ring so far.
    pub fn taken(&self, c: usize) -> u64 {
        self.rings[c].taken()
    }

    /// One scheduler pass at the fixed time `now` (ns), for tests with a synthetic clock.
    /// Returns the number of packets taken plus released.
    #[inline]
    pub fn pass(&mut self, now: u64) -> usize {
        self.pass_with(|| now).0
    }

    /// One scheduler pass: take new messages from every ring, then release packets while the
    /// link is idle. `clock` is read once after the rings were seen non-empty (the visits'
    /// `sch_enq`) and once before the release batch if anything was taken (the batch's `sch_deq`; otherwise the
    /// last read serves); see the module documentation. Returns (packets taken + released, the
    /// last clock value read).
    #[inline]
    pub fn pass_with(&mut self, mut clock: impl FnMut() -> u64) -> (usize, u64) {
        self.passes += 1;
        let mut work = 0;
        // Which rings have something, then one clock read for all of them: every message seen
        // here was published before the read (later ones wait for the next visit, see `take`).
        self.ready.clear();
        for c in 0..self.rings.len() {
            if self.rings[c].ready() {
                self.ready.push(c as u32);
            }
        }
        let last = if self.ready.is_empty() { None } else { Some(clock()) };
        for k in 0..self.ready.len() {
            let c = self.ready[k] as usize;
            let now = last.unwrap_or(0);
            let now_fp = (u128::from(now) * 1000) << 16;
            let mut fetched = false;
            for _ in 0..VISIT {
                let Some(m) = self.rings[c].take(now) else { break };
                fetched = true;
                work += m.packets as usize;
                let was_empty = self.policy.is_empty();
                if was_empty && self.next_idle < now_fp {
                    self.next_idle = now_fp;
                }
                if let Some(t) = self.trace.as_mut() {
                    let vt_ns = if was_empty || self.fp_per_byte.is_none() {
                        now
                    } else {
                        now.min((((self.next_idle >> 16) / 1000) as u64).saturating_sub(1))
                    };
                    t.push(TraceEvent::Enqueue { client: c as u32, pos: m.pos, packets: m.packets, bytes: m.len, vt_ns });
                }
                if self.full && self.pending <= self.qmin {
                    self.full = false;
                }
                let over = !self.full && self.pending + u64::from(m.packets) > self.qmax;
                if over {
                    self.full = true;
                    self.counters.qlimit_hits += 1;
                }
                let refused = if self.full {
                    self.counters.qlimit_drops += u64::from(m.packets);
                    true
                } else {
                    let item = Item { client: c as u32, pos: m.pos };
                    let msg = Message::new(item, c as u32, m.packets).with_bytes(m.len);
                    self.policy.enqueue(msg).is_err()
                };
                if refused {
                    for _ in 0..m.packets {
                        self.rings[c].release(m.pos, now, true);
                    }
                    self.sched_drops[c] += u64::from(m.packets);
                } else {
                    self.pending += u64::from(m.packets);
                }
            }
            self.counters.fetches += u64::from(fetched);
        }
        // The release batch's stamp: a fresh read when this pass took packets (so that sch_deq
        // measures the time spent in the policy), else the pass's only read.
        let now = if work > 0 || last.is_none() { clock() } else { last.unwrap_or(0) };
        let now_fp = (u128::from(now) * 1000) << 16;
        let mut released = 0;
        for _ in 0..self.batch {
            if self.fp_per_byte.is_some() && self.next_idle > now_fp {
                break;
            }
            let Some(pk) = self.policy.dequeue() else { break };
            self.pending = self.pending.saturating_sub(1);
            let c = pk.item.client as usize;
            self.rings[c].release(pk.item.pos, now, false);
            self.released[c] += 1;
            if let Some(cost) = self.fp_per_byte {
                self.next_idle += cost * u128::from(pk.bytes);
            }
            if let Some(t) = self.trace.as_mut() {
                t.push(TraceEvent::Release { client: pk.item.client, pos: pk.item.pos });
            }
            released += 1;
        }
        work += released;
        if released > 0 {
            self.counters.publishes += 1;
        }
        if work == 0 {
            self.counters.idle_passes += 1;
        }
        if self.pending > 0 && self.fp_per_byte.is_some() && self.next_idle > now_fp {
            self.counters.early_passes += 1;
        }
        (work, now)
    }
}

const RUN: u8 = 0;
const STOP: u8 = 1;
const FINAL: u8 = 2;

/// The scheduler role: the core, owned by whoever holds `lock` (a `crates/prims` try-lock).
/// Outside distributed mode the scheduler thread takes it at the start and keeps it.
struct Role {
    lock: Box<dyn TryLock>,
    core: UnsafeCell<Core<AnyPolicy<Item>>>,
}

// SAFETY: `core` is only reached through `RoleGuard`, which exists only while `lock` is held; the
// `TryLock` implementations of crates/prims give mutual exclusion with acquire semantics on a
// successful `try_lock` and release semantics on `unlock` (POSIX semaphores, pthread mutexes and
// spinlocks synchronise memory; the atomic ones use Acquire/Release), so the holders' accesses
// are ordered. `Core` itself is Send (plain data, rings whose ends are Send).
unsafe impl Sync for Role {}

/// The held scheduler role; unlocks on drop.
struct RoleGuard<'a>(&'a Role);

impl Role {
    #[inline]
    fn try_enter(&self) -> Option<RoleGuard<'_>> {
        self.lock.try_lock().then(|| RoleGuard(self))
    }
    /// Spins (yielding) until the role is taken; clients hold it for one pass at a time.
    fn enter(&self) -> RoleGuard<'_> {
        loop {
            if let Some(g) = self.try_enter() {
                return g;
            }
            std::thread::yield_now();
        }
    }
}

impl std::ops::Deref for RoleGuard<'_> {
    type Target = Core<AnyPolicy<Item>>;
    fn deref(&self) -> &Self::Target {
        // SAFETY: the guard exists only while this thread holds the lock (see `Role`).
        unsafe { &*self.0.core.get() }
    }
}

impl std::ops::DerefMut for RoleGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        // SAFETY: as above; `&mut self` makes this the only reference through this guard.
        unsafe { &mut *self.0.core.get() }
    }
}

impl Drop for RoleGuard<'_> {
    fn drop(&mut self) {
        self.0.lock.unlock();
    }
}

/// What distributed mode (`-D`) cost: the try-lock and notification traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DistCost {
    /// Clients' try-locks that found the scheduler role held by someone else.
    pub trylock_busy: u64,
    /// Clients' try-locks that took the role (each then ran one pass).
    pub trylock_free: u64,
    /// Times the role changed hands between different threads (scheduler thread and clients).
    pub handovers: u64,
    /// Times the scheduler thread went to sleep, leaving the role to the clients.
    pub sleeps: u64,
    /// Times the scheduler thread woke up with a notification (not at the end of the run).
    pub wakeups: u64,
    /// Notifications clients sent to wake it.
    pub notifies: u64,
    /// Mean time of one try-lock call, from one timed call in every [`TRYLOCK_SAMPLE`] (ns; the
    /// timing includes one clock read).
    pub trylock_sampled: u64,
    pub trylock_avg_ns: f64,
    /// Mean time of one notify call, every call timed (ns).
    pub notify_avg_ns: f64,
    /// Time spent in try-lock calls, estimated from the samples, and in notify calls (s).
    pub trylock_total_s: f64,
    pub notify_total_s: f64,
}

/// One client try-lock in this many is timed.
pub const TRYLOCK_SAMPLE: u64 = 64;

/// State shared by every thread of a run.
struct Shared {
    phase: AtomicU8,
    /// Start and end of the run (ns), published once every thread is ready (0 until then).
    start: AtomicU64,
    end: AtomicU64,
    /// Clients that have preallocated their records and wait for the start.
    ready: AtomicUsize,
    role: Role,
    /// Distributed mode: the scheduler thread is asleep (or about to take the role back) and
    /// clients may schedule.
    sleeping: AtomicBool,
    /// A client has already notified the sleeping scheduler thread.
    wake_sent: AtomicBool,
    client_sched_ns: AtomicU64,
    notifier: Option<Box<dyn Notifier>>,
    /// Last holder of the role: `u64::MAX` the scheduler thread, else the client index.
    holder: AtomicU64,
    wakeups: AtomicU64,
    sleeps: AtomicU64,
    handovers: AtomicU64,
    notifies: AtomicU64,
    notify_ns: AtomicU64,
    client_passes: AtomicU64,
    trylock_busy: AtomicU64,
    trylock_free: AtomicU64,
    trylock_sampled: AtomicU64,
    trylock_sampled_ns: AtomicU64,
}

impl Shared {
    /// Records that `who` took the role (counts a hand-over when the holder changes).
    #[inline]
    fn took_role(&self, who: u64) {
        if self.holder.swap(who, Ordering::Relaxed) != who {
            self.handovers.fetch_add(1, Ordering::Relaxed);
        }
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
    /// The CPU this client was to be pinned to, and the error if pinning failed.
    pub requested_cpu: Option<usize>,
    pub pin_error: Option<String>,
    /// Ran its program (`-k`).
    pub active: bool,
    pub sched_passes: u64,
    /// One record per burst (with `Config::messages`), in generation order.
    pub messages: Vec<MsgRecord>,
    /// Polls that found at least one mark (the original's client head reads).
    pub mark_polls: u64,
    /// Timestamp records whose deltas would have been negative (clamped to 0): always 0 with
    /// the clock discipline of this module; counted so that a test can prove it.
    pub ts_clamped: u64,
    /// Sum over the timestamp records of each packet's life (mark seen - `cli_enq`, ns), read
    /// independently of the three deltas (which must add up to it).
    pub ts_life_sum_ns: u128,
}

/// The scheduler's independent view at the end, per client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedView {
    pub taken: Vec<u64>,
    pub released: Vec<u64>,
    pub sched_drops: Vec<u64>,
    pub policy_queued: u64,
    pub passes: u64,
    pub counters: SchedCounters,
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
    pub client_passes: u64,
    /// Distributed mode's costs (zero outside `-D`).
    pub dist: DistCost,
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
    let notifier = if cfg.distributed {
        Some(cfg.notify.create().map_err(|e| anyhow::anyhow!("distributed mode (-D) needs a {} notifier: {e}", cfg.notify))?)
    } else {
        None
    };
    let lock = cfg.lock.create().map_err(|e| anyhow::anyhow!("cannot create the scheduler lock ({}): {e}", cfg.lock))?;
    let core = Core::new(policy, consumers, cfg.bandwidth, cfg.batch, cfg.trace).with_queue_limit(cfg.qmax, cfg.qmin);
    let shared = Arc::new(Shared {
        phase: AtomicU8::new(RUN),
        start: AtomicU64::new(0),
        end: AtomicU64::new(0),
        ready: AtomicUsize::new(0),
        role: Role { lock, core: UnsafeCell::new(core) },
        sleeping: AtomicBool::new(false),
        wake_sent: AtomicBool::new(false),
        client_sched_ns: AtomicU64::new(0),
        notifier,
        holder: AtomicU64::new(u64::MAX),
        wakeups: AtomicU64::new(0),
        sleeps: AtomicU64::new(0),
        handovers: AtomicU64::new(0),
        notifies: AtomicU64::new(0),
        notify_ns: AtomicU64::new(0),
        client_passes: AtomicU64::new(0),
        trylock_busy: AtomicU64::new(0),
        trylock_free: AtomicU64::new(0),
        trylock_sampled: AtomicU64::new(0),
        trylock_sampled_ns: AtomicU64::new(0),
    });
    let wake_scheduler = |shared: &Shared| {
        if let Some(n) = &shared.notifier {
            let _ = n.notify();
        }
    };

    let sched_handle = {
        let shared = shared.clone();
        let (cpu, poll, distributed) = (cfg.sched_cpu, cfg.sched_poll.0, cfg.distributed);
        std::thread::Builder::new()
            .name("sched".into())
            .spawn(move || scheduler_thread(&shared, cpu, poll, distributed))?
    };
    let allowed = schedlab_report::machine::online_cpus();
    let mut client_handles = Vec::new();
    for (i, prod) in producers.into_iter().enumerate() {
        let for_client = shared.clone();
        let active = i < cfg.active;
        let ctx = ClientCtx {
            index: i,
            program: if active { cfg.traffic.programs[i].clone() } else { Vec::new() },
            active,
            cpu: client_placement(i, cfg.client_cpus.as_deref(), cfg.sched_cpu, &allowed),
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
                wake_scheduler(&shared);
                let _ = sched_handle.join();
                let guard = shared.role.enter();
                shared.phase.store(FINAL, Ordering::SeqCst);
                for h in client_handles {
                    let _ = h.join();
                }
                drop(guard);
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
    wake_scheduler(&shared);
    let (sched_info, pin_error) = sched_handle.join().map_err(|_| anyhow::anyhow!("the scheduler thread panicked"))?;
    // Hold the scheduler role from now on: no client can run a pass after this point, so the
    // counts below are final.
    let core = shared.role.enter();
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
        counters: core.counters,
    };
    let trace = core.trace.clone();
    drop(core);
    let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let sampled = ld(&shared.trylock_sampled);
    let tries = ld(&shared.trylock_busy) + ld(&shared.trylock_free);
    let try_avg = if sampled > 0 { ld(&shared.trylock_sampled_ns) as f64 / sampled as f64 } else { 0.0 };
    let notifies = ld(&shared.notifies);
    let dist = DistCost {
        trylock_busy: ld(&shared.trylock_busy),
        trylock_free: ld(&shared.trylock_free),
        handovers: if cfg.distributed { ld(&shared.handovers) } else { 0 },
        sleeps: ld(&shared.sleeps),
        wakeups: ld(&shared.wakeups),
        notifies,
        trylock_sampled: sampled,
        trylock_avg_ns: try_avg,
        notify_avg_ns: if notifies > 0 { ld(&shared.notify_ns) as f64 / notifies as f64 } else { 0.0 },
        trylock_total_s: try_avg * tries as f64 / 1e9,
        notify_total_s: ld(&shared.notify_ns) as f64 / 1e9,
    };
    Ok(RunResult {
        clients,
        sched,
        elapsed: Nanos(stopped.saturating_sub(start)),
        interrupted,
        scheduler_thread: sched_info,
        sched_pin_error: pin_error,
        client_passes: ld(&shared.client_passes),
        dist,
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
    let mut guard = Some(shared.role.enter());
    let mut last_work = now_ns();
    let mut next = last_work;
    let mut rt = RtYield::new();
    loop {
        if shared.phase.load(Ordering::Relaxed) != RUN {
            break;
        }
        let Some(core) = guard.as_mut() else { break };
        let (work, now) = core.pass_with(now_ns);
        rt.tick(now);
        if info.is_none() {
            info = Some(ThreadInfo::current());
        }
        if work > 0 {
            last_work = now;
        } else if distributed && now - last_work >= IDLE_BEFORE_SLEEP.0 {
            // Idle: let the clients schedule, sleep until one of them finds it too costly.
            shared.client_sched_ns.store(0, Ordering::Relaxed);
            shared.wake_sent.store(false, Ordering::SeqCst);
            shared.sleeping.store(true, Ordering::SeqCst);
            shared.sleeps.fetch_add(1, Ordering::Relaxed);
            guard = None;
            let notifier = shared.notifier.as_ref().expect("distributed mode has a notifier");
            if notifier.wait().is_err() || shared.phase.load(Ordering::Relaxed) != RUN {
                shared.sleeping.store(false, Ordering::SeqCst);
                break;
            }
            shared.wakeups.fetch_add(1, Ordering::Relaxed);
            // Take the role back: clients hold it for one pass at a time.
            let g = loop {
                if let Some(g) = shared.role.try_enter() {
                    break Some(g);
                }
                if shared.phase.load(Ordering::Relaxed) != RUN {
                    break None;
                }
                std::hint::spin_loop();
            };
            shared.sleeping.store(false, Ordering::SeqCst);
            let Some(g) = g else { break };
            shared.took_role(u64::MAX);
            guard = Some(g);
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
    index: usize,
    program: Vec<crate::traffic::Spec>,
    active: bool,
    cpu: Option<usize>,
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
    ts_clamped: u64,
    ts_life_sum: u128,
    transmitted: u64,
    sched_drops: u64,
    bits: u64,
    log: Option<MessageLog>,
    mark_polls: u64,
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
            if c.sch_enq < c.cli_enq || c.sch_deq < c.sch_enq || now < c.sch_deq {
                self.ts_clamped += 1;
            }
            self.ts_life_sum += u128::from(now.saturating_sub(c.cli_enq));
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

    /// Counts the marks stamped up to `now`, a clock read after [`Producer::has_mark`] saw one.
    #[inline]
    fn poll_at(&mut self, ring: &mut Producer, now: u64) {
        ring.poll_until(now, |c| self.complete(c, now));
        self.mark_polls += 1;
    }
}

/// Distributed mode: run one scheduler pass if the scheduler thread sleeps and the lock is free.
#[inline]
fn maybe_schedule(shared: &Shared, me: u64, tries: &mut u64, passes: &mut u64) {
    if !shared.sleeping.load(Ordering::Relaxed) || shared.phase.load(Ordering::Relaxed) != RUN {
        return;
    }
    *tries += 1;
    let got = if (*tries).is_multiple_of(TRYLOCK_SAMPLE) {
        let t0 = now_ns();
        let g = shared.role.try_enter();
        let dt = now_ns() - t0;
        shared.trylock_sampled.fetch_add(1, Ordering::Relaxed);
        shared.trylock_sampled_ns.fetch_add(dt, Ordering::Relaxed);
        g
    } else {
        shared.role.try_enter()
    };
    let Some(mut core) = got else {
        shared.trylock_busy.fetch_add(1, Ordering::Relaxed);
        return;
    };
    shared.trylock_free.fetch_add(1, Ordering::Relaxed);
    shared.took_role(me);
    let (work, t0) = core.pass_with(now_ns);
    drop(core);
    *passes += 1;
    shared.client_passes.fetch_add(1, Ordering::Relaxed);
    if work == 0 {
        return; // only passes that moved packets count as scheduling cost
    }
    let t1 = now_ns();
    let spent = t1 - t0;
    let total = shared.client_sched_ns.fetch_add(spent, Ordering::Relaxed) + spent;
    if total >= CLIENT_SCHED_BUDGET.0
        && shared.sleeping.load(Ordering::Relaxed)
        && !shared.wake_sent.swap(true, Ordering::SeqCst)
    {
        if let Some(n) = &shared.notifier {
            let _ = n.notify();
            let t2 = now_ns();
            shared.notifies.fetch_add(1, Ordering::Relaxed);
            shared.notify_ns.fetch_add(t2 - t1, Ordering::Relaxed);
        }
    }
}

fn client_thread(shared: &Shared, mut ring: Producer, ctx: ClientCtx) -> ClientResult {
    let pin_error = ctx.cpu.and_then(|c| pin_current_thread(c).err().map(|e| format!("cannot pin client {} to CPU {c}: {e}", ctx.index)));
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
        ts_clamped: 0,
        ts_life_sum: 0,
        transmitted: 0,
        sched_drops: 0,
        bits: 0,
        log,
        mark_polls: 0,
    };
    let me = ctx.index as u64;
    let mut generated = 0u64;
    let mut ring_drops = 0u64;
    let mut passes = 0u64;
    let mut tries = 0u64;
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
            // Peek for marks before reading the clock, so that the marks counted were stored
            // before the read (later ones wait for the next poll, see `poll_until`).
            let marked = ring.has_mark();
            let now = now_ns();
            if now >= spec_end {
                break;
            }
            rt.tick(now);
            let mut did = false;
            if now >= next_poll {
                if marked {
                    st.poll_at(&mut ring, now);
                }
                next_poll = now + ctx.poll;
                did = true;
            }
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
                maybe_schedule(shared, me, &mut tries, &mut passes);
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
            maybe_schedule(shared, me, &mut tries, &mut passes);
        }
        let marked = ring.has_mark();
        let now = now_ns();
        if now >= next_poll {
            if marked {
                st.poll_at(&mut ring, now);
            }
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
        requested_cpu: ctx.cpu,
        pin_error,
        active: ctx.active,
        sched_passes: passes,
        messages: st.log.map(|l| l.records).unwrap_or_default(),
        mark_polls: st.mark_polls,
        ts_clamped: st.ts_clamped,
        ts_life_sum_ns: st.ts_life_sum,
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
