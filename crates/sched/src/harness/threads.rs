//! The run: client threads, the scheduler thread, and in distributed mode (`-D`) the scheduler
//! role handed between them through a `crates/prims` try-lock.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedlab_policy::{AnyPolicy, BuildOptions, Policy};
use schedlab_prims::chan::Notifier;
use schedlab_prims::locks::TryLock;
use schedlab_report::disturb::{Disturbance, Probe};
use schedlab_report::machine::{pin_current_thread, ThreadInfo};
use schedlab_report::HistRecorder;

use super::error::HarnessError;
use super::{
    client_placement, message_level, ClientResult, Config, Core, DistCost, EntryAlphas, Item, PolicySpec, RunResult, SchedView,
    TsRecord, WithAlpha,
};
use crate::clock::Clock;
use crate::messages::MessageLog;
use crate::ring::{channel, Completion, Producer};
use crate::units::Nanos;

/// How often the main thread looks for Ctrl-C while the measuring threads run.
const MAIN_POLL: Nanos = Nanos(50_000_000);

/// Distributed mode: the scheduler thread sleeps after this long without work.
pub const IDLE_BEFORE_SLEEP: Nanos = Nanos(30_000);
/// Distributed mode: clients wake the scheduler thread once they have spent this long scheduling
/// since it went to sleep (counting only passes that moved packets).
pub const CLIENT_SCHED_BUDGET: Nanos = Nanos(50_000);

const RUN: u8 = 0;
const STOP: u8 = 1;
const FINAL: u8 = 2;

/// The scheduler role: the core, owned by whoever holds `lock` (a `crates/prims` try-lock).
/// Outside distributed mode the scheduler thread takes it at the start and keeps it.
struct Role<P> {
    lock: Box<dyn TryLock>,
    core: UnsafeCell<Core<P>>,
}

// SAFETY: `core` is only reached through `RoleGuard`, which exists only while `lock` is held; the
// `TryLock` implementations of crates/prims give mutual exclusion with acquire semantics on a
// successful `try_lock` and release semantics on `unlock` (POSIX semaphores, pthread mutexes and
// spinlocks synchronise memory; the atomic ones use Acquire/Release), so the holders' accesses
// are ordered. `Core` itself is Send (plain data, rings whose ends are Send).
unsafe impl<P: Send> Sync for Role<P> {}

/// The held scheduler role; unlocks on drop.
struct RoleGuard<'a, P>(&'a Role<P>);

impl<P> Role<P> {
    #[inline]
    fn try_enter(&self) -> Option<RoleGuard<'_, P>> {
        self.lock.try_lock().then(|| RoleGuard(self))
    }
    /// Spins (yielding) until the role is taken; clients hold it for one pass at a time.
    fn enter(&self) -> RoleGuard<'_, P> {
        loop {
            if let Some(g) = self.try_enter() {
                return g;
            }
            std::thread::yield_now();
        }
    }
}

impl<P> std::ops::Deref for RoleGuard<'_, P> {
    type Target = Core<P>;
    fn deref(&self) -> &Self::Target {
        // SAFETY: the guard exists only while this thread holds the lock (see `Role`).
        unsafe { &*self.0.core.get() }
    }
}

impl<P> std::ops::DerefMut for RoleGuard<'_, P> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        // SAFETY: as above; `&mut self` makes this the only reference through this guard.
        unsafe { &mut *self.0.core.get() }
    }
}

impl<P> Drop for RoleGuard<'_, P> {
    fn drop(&mut self) {
        self.0.lock.unlock();
    }
}

/// One client try-lock in this many is timed.
pub const TRYLOCK_SAMPLE: u64 = 64;

/// A value alone in its cache lines (128 bytes: the adjacent-line prefetcher pairs lines), so
/// that what one thread writes often does not share a line with what others read often.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// State shared by every thread of a run. The fields clients read on every loop iteration
/// (`phase`, `sleeping`) and the scheduler role (the core, written on every pass) sit in lines of
/// their own, apart from the counters distributed mode updates.
struct Shared<P> {
    /// The run's clock (read-only; each thread copies it).
    clock: Clock,
    phase: Padded<AtomicU8>,
    /// Start and end of the run (ns), published once every thread is ready (0 until then).
    start: AtomicU64,
    end: AtomicU64,
    /// Clients that have preallocated their records and wait for the start.
    ready: AtomicUsize,
    role: Padded<Role<P>>,
    /// Distributed mode: the scheduler thread is asleep (or about to take the role back) and
    /// clients may schedule.
    sleeping: Padded<AtomicBool>,
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

impl<P> Shared<P> {
    /// Records that `who` took the role (counts a hand-over when the holder changes).
    #[inline]
    fn took_role(&self, who: u64) {
        if self.holder.swap(who, Ordering::Relaxed) != who {
            self.handovers.fetch_add(1, Ordering::Relaxed);
        }
    }
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
fn spin_until(clock: &Clock, t: u64, y: &mut RtYield, phase: &AtomicU8) {
    // A busy spin, as in the original; a long -i must not delay the end of the run.
    loop {
        let now = clock.now();
        if now >= t || phase.load(Ordering::Relaxed) != RUN {
            break;
        }
        y.tick(now);
        std::hint::spin_loop();
    }
}

/// Runs the configuration. `interrupt` (Ctrl-C) ends it early; results are partial then.
///
/// The run is compiled once per policy type (the `-alg` choice is matched here, once), so the
/// scheduler's per-packet policy calls are direct and inlined rather than dispatched through
/// [`AnyPolicy`] at every call.
pub fn run(cfg: &Config, interrupt: &AtomicBool) -> Result<RunResult, HarnessError> {
    let opts = BuildOptions::default().flows(&cfg.flows);
    match cfg.alg.build::<Item>(&opts) {
        // prio: each message's α comes from its traffic entry (`alpha:X`), found by ring position.
        AnyPolicy::Alpha(p) if cfg.alg == PolicySpec::Prio => {
            let entries = Arc::new(EntryAlphas::new(&cfg.traffic.programs));
            let e = entries.clone();
            let p = WithAlpha::new(p, move |i: &Item| e.alpha(i.client as usize, i.pos));
            run_with(cfg, interrupt, p, Some(entries))
        }
        p => run_any(cfg, interrupt, p),
    }
}

fn run_any(cfg: &Config, interrupt: &AtomicBool, p: AnyPolicy<Item>) -> Result<RunResult, HarnessError> {
    match p {
        AnyPolicy::Fifo(p) => run_with(cfg, interrupt, p, None),
        AnyPolicy::RoundRobin(p) => run_with(cfg, interrupt, p, None),
        AnyPolicy::RoundRobinHead(p) => run_with(cfg, interrupt, p, None),
        AnyPolicy::Alpha(p) => run_with(cfg, interrupt, p, None),
        AnyPolicy::Track(p) => run_with(cfg, interrupt, p, None),
        AnyPolicy::Drr(p) => run_with(cfg, interrupt, p, None),
        AnyPolicy::Wf2qPlus(p) => run_with(cfg, interrupt, p, None),
        AnyPolicy::Qfq(p) => run_with(cfg, interrupt, p, None),
    }
}

fn run_with<P: Policy<Item> + Send + 'static>(
    cfg: &Config,
    interrupt: &AtomicBool,
    policy: P,
    entries: Option<Arc<EntryAlphas>>,
) -> Result<RunResult, HarnessError> {
    if cfg.threads < 1 {
        return Err(HarnessError::NoClients);
    }
    if !(1..=crate::ring::MAX_CAPACITY).contains(&cfg.queue) {
        return Err(HarnessError::QueueSize { max: crate::ring::MAX_CAPACITY });
    }
    if let Some(s) = cfg.traffic.programs.iter().flatten().find(|s| s.pkt_len > crate::ring::MAX_LEN) {
        return Err(HarnessError::PacketTooLong { len: s.pkt_len, max: crate::ring::MAX_LEN });
    }
    if cfg.traffic.programs.len() != cfg.threads {
        return Err(HarnessError::Programs);
    }
    if message_level(&cfg.alg) {
        if let Some((i, s)) = cfg
            .traffic
            .programs
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.iter().find(|s| s.burst as usize > cfg.queue).map(|s| (i, s)))
        {
            return Err(HarnessError::BurstOverQueue { thread: i, burst: s.burst, queue: cfg.queue, alg: cfg.alg.to_string() });
        }
    }
    if cfg.alg.flow_level() && cfg.flows.len() < cfg.threads {
        return Err(HarnessError::TooFewFlows { flows: cfg.flows.len(), clients: cfg.threads });
    }
    let mut producers = Vec::new();
    let mut consumers = Vec::new();
    for _ in 0..cfg.threads {
        let (p, mut c) = channel(cfg.queue);
        // The clients read the scheduler's stamps only for timestamp records and the message
        // log (`ClientState::consume`): without either, the scheduler does not write them.
        c.set_stamps(cfg.ts_limit > 0 || cfg.messages);
        producers.push(p);
        consumers.push(c);
    }
    let notifier = if cfg.distributed {
        Some(cfg.notify.create().map_err(|cause| HarnessError::Notifier { mechanism: cfg.notify.to_string(), cause })?)
    } else {
        None
    };
    let lock = cfg.lock.create().map_err(|cause| HarnessError::Lock { kind: cfg.lock.to_string(), cause })?;
    let core = Core::new(policy, consumers, cfg.bandwidth, cfg.batch, cfg.trace).with_queue_limit(cfg.qmax, cfg.qmin);
    let clock = Clock::get();
    let shared = Arc::new(Shared {
        clock,
        phase: Padded(AtomicU8::new(RUN)),
        start: AtomicU64::new(0),
        end: AtomicU64::new(0),
        ready: AtomicUsize::new(0),
        role: Padded(Role { lock, core: UnsafeCell::new(core) }),
        sleeping: Padded(AtomicBool::new(false)),
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
    let wake_scheduler = |shared: &Shared<P>| {
        if let Some(n) = &shared.notifier {
            let _ = n.notify();
        }
    };

    let sched_handle = {
        let shared = shared.clone();
        let (cpu, poll, distributed) = (cfg.sched_cpu, cfg.sched_poll.0, cfg.distributed);
        std::thread::Builder::new()
            .name("sched".into())
            .spawn(move || scheduler_thread(&shared, cpu, poll, distributed))
            .map_err(HarnessError::SpawnScheduler)?
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
            message_level: message_level(&cfg.alg),
            entries: entries.clone(),
            poll: cfg.client_poll.0,
            distributed: cfg.distributed,
            ts_limit: cfg.ts_limit,
            client: i as u32,
            seed: cfg.seed,
            messages: cfg.messages,
        };
        let spawned = std::thread::Builder::new().name(format!("client{i}")).spawn(move || client_thread(&for_client, prod, ctx));
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
                return Err(HarnessError::SpawnClient { index: i, cause: e });
            }
        }
    }

    // Start the clock once every client has preallocated its records.
    while shared.ready.load(Ordering::SeqCst) < cfg.threads {
        std::thread::yield_now();
    }
    let start = clock.now();
    let mut end = start + cfg.traffic.longest().0;
    if let Some(cap) = cfg.duration_cap {
        end = end.min(start + cap.0);
    }
    shared.end.store(end, Ordering::SeqCst);
    shared.start.store(start, Ordering::SeqCst);

    // Wait for the end of the longest program, the -d cap, or Ctrl-C. Every wake-up of this
    // thread preempts a measuring thread on one of the CPUs (the original's main thread sleeps in
    // pthread_join): at 5 ms the scheduler thread counted ~200 involuntary switches a second, at
    // MAIN_POLL 22-46 (docs/notes/2026-11-29-crosscheck-evening.md).
    let mut interrupted = false;
    loop {
        let now = clock.now();
        if now >= end {
            break;
        }
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        std::thread::sleep(Duration::from_nanos((end - now).min(MAIN_POLL.0)));
    }
    let stopped = clock.now();
    shared.phase.store(STOP, Ordering::SeqCst);
    wake_scheduler(&shared);
    let (sched_info, pin_error, sched_disturbance) = sched_handle.join().map_err(|_| HarnessError::SchedulerPanicked)?;
    // Hold the scheduler role from now on: no client can run a pass after this point, so the
    // counts below are final.
    let core = shared.role.enter();
    shared.phase.store(FINAL, Ordering::SeqCst);
    let mut clients = Vec::new();
    for h in client_handles {
        clients.push(h.join().map_err(|_| HarnessError::ClientPanicked)?);
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
        clock: clock.source(),
        sched_disturbance,
    })
}

fn scheduler_thread<P: Policy<Item>>(
    shared: &Shared<P>,
    cpu: Option<usize>,
    poll: u64,
    distributed: bool,
) -> (Option<ThreadInfo>, Option<String>, Option<Disturbance>) {
    let clock = shared.clock;
    let pin_error = cpu.and_then(|c| pin_current_thread(c).err().map(|e| format!("cannot pin the scheduler to CPU {c}: {e}")));
    let mut info = None;
    let mut guard = Some(shared.role.enter());
    let mut last_work = clock.now();
    let mut next = last_work;
    let mut rt = RtYield::new();
    // The measured window starts at the first pass after the run's start; each pass's own clock
    // read marks an iteration (no read of its own).
    let mut probe: Option<Probe> = None;
    loop {
        if shared.phase.load(Ordering::Relaxed) != RUN {
            break;
        }
        let Some(core) = guard.as_mut() else { break };
        let (work, now) = core.pass_with(|ordered| if ordered { clock.now() } else { clock.now_unordered() });
        rt.tick(now);
        match probe.as_mut() {
            Some(p) => p.tick(now),
            None if shared.start.load(Ordering::Relaxed) != 0 => probe = Some(Probe::start(now)),
            None => {}
        }
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
            last_work = clock.now();
            next = last_work;
            continue;
        }
        if poll > 0 {
            next += poll;
            if next <= now {
                // The pass itself took the interval (always so at a few ns, as the seed's
                // `-i 5ns`): the next pass is due, and the pass's own clock read shows it, so no
                // further read (the original's wait also ends at once then). Pacing restarts here.
                next = now;
            } else {
                spin_until(&clock, next, &mut rt, &shared.phase);
            }
        }
    }
    drop(guard);
    let disturbance = probe.map(|p| p.finish("sched"));
    // Re-read where it ran, after the work.
    (Some(ThreadInfo::current()).or(info), pin_error, disturbance)
}

struct ClientCtx {
    index: usize,
    program: Vec<crate::traffic::Spec>,
    active: bool,
    cpu: Option<usize>,
    message_level: bool,
    /// `prio`: where this client's program entries start in its ring.
    entries: Option<Arc<EntryAlphas>>,
    poll: u64,
    distributed: bool,
    ts_limit: usize,
    client: u32,
    seed: u64,
    messages: bool,
}

struct ClientState {
    /// Per-packet delays (ns), binned as the report's HDR histogram bins them.
    delay: HistRecorder,
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
    #[inline(always)]
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

    /// Counts the `n` marks [`Producer::marks`] saw before the clock read `now` (so every one
    /// of them was stored before it: `cli_deq >= sch_deq`). The scheduler's stamps are read only
    /// while they are needed (timestamp records still to fill, or the message log).
    #[inline]
    fn consume(&mut self, ring: &mut Producer, n: u64, now: u64) {
        let stamps = self.ts.len() < self.ts_limit || self.log.is_some();
        ring.consume(n, stamps, |c| self.complete(c, now));
        self.mark_polls += 1;
    }
}

/// When a client is catching up after it was away from its CPU. A gap between two turns of its
/// loop of at least [`StallWatch::STALL_NS`] means the thread was stalled (preempted, or
/// yielding); for as long again it is behind, and a burst that does not fit makes it count the
/// marks the scheduler stored meanwhile before dropping anything (the client's view of the
/// ring is otherwise only as fresh as its last poll, `-c`). A ring that is full because the
/// scheduler is the bottleneck keeps the poll interval: reading the scheduler's release line at
/// every full ring cost the drain row 5-15% (docs/notes/2026-11-29-intel-vm.md).
#[derive(Clone, Copy, Debug, Default)]
struct StallWatch {
    until: u64,
}

impl StallWatch {
    /// A turn of the loop takes well under a microsecond; the regular poll interval is 5 us.
    const STALL_NS: u64 = 20_000;

    /// A turn at `now` after one at `last` (ns).
    fn turn(&mut self, last: u64, now: u64) {
        let gap = now.saturating_sub(last);
        if gap >= Self::STALL_NS {
            self.until = now.saturating_add(gap);
        }
    }

    fn catching_up(&self, now: u64) -> bool {
        now < self.until
    }
}

/// Distributed mode: run one scheduler pass if the scheduler thread sleeps and the lock is free.
#[inline]
fn maybe_schedule<P: Policy<Item>>(shared: &Shared<P>, me: u64, tries: &mut u64, passes: &mut u64) {
    if !shared.sleeping.load(Ordering::Relaxed) || shared.phase.load(Ordering::Relaxed) != RUN {
        return;
    }
    *tries += 1;
    let got = if (*tries).is_multiple_of(TRYLOCK_SAMPLE) {
        let t0 = shared.clock.now();
        let g = shared.role.try_enter();
        let dt = shared.clock.now() - t0;
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
    let (work, t0) = core.pass_with(|ordered| if ordered { shared.clock.now() } else { shared.clock.now_unordered() });
    drop(core);
    *passes += 1;
    shared.client_passes.fetch_add(1, Ordering::Relaxed);
    if work == 0 {
        return; // only passes that moved packets count as scheduling cost
    }
    let t1 = shared.clock.now();
    let spent = t1 - t0;
    let total = shared.client_sched_ns.fetch_add(spent, Ordering::Relaxed) + spent;
    if total >= CLIENT_SCHED_BUDGET.0 && shared.sleeping.load(Ordering::Relaxed) && !shared.wake_sent.swap(true, Ordering::SeqCst)
    {
        if let Some(n) = &shared.notifier {
            let _ = n.notify();
            let t2 = shared.clock.now();
            shared.notifies.fetch_add(1, Ordering::Relaxed);
            shared.notify_ns.fetch_add(t2 - t1, Ordering::Relaxed);
        }
    }
}

fn client_thread<P: Policy<Item>>(shared: &Shared<P>, mut ring: Producer, ctx: ClientCtx) -> ClientResult {
    let clock = shared.clock;
    let pin_error =
        ctx.cpu.and_then(|c| pin_current_thread(c).err().map(|e| format!("cannot pin client {} to CPU {c}: {e}", ctx.index)));
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
        delay: HistRecorder::new(),
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
    let mut stall = StallWatch::default();
    shared.ready.fetch_add(1, Ordering::SeqCst);
    let (start, end) = loop {
        let start = shared.start.load(Ordering::SeqCst);
        if start != 0 {
            break (start, shared.end.load(Ordering::SeqCst));
        }
        std::thread::yield_now();
    };
    let mut rt = RtYield::new();
    let mut last_now = start;
    let mut spec_start = start;
    // The measured window: the program (the idle phase after it yields, by design).
    let mut probe = Probe::start(start);
    'program: for (entry, spec) in ctx.program.iter().enumerate() {
        let spec_end = (spec_start + spec.duration.0).min(end);
        if let Some(e) = &ctx.entries {
            e.begin(ctx.index, entry, ring.pushed());
        }
        let gap = spec.gap_ps();
        let mut next_burst_ps = u128::from(spec_start) * 1000;
        if spec.gaps == crate::workload::Gaps::Poisson {
            next_burst_ps += u128::from(crate::workload::draw_gap_ps(spec.gaps, gap, &mut rng));
        }
        loop {
            if shared.phase.load(Ordering::Relaxed) != RUN {
                break 'program;
            }
            // Look for marks before reading the clock, so that the marks counted were stored
            // before the read (later ones wait for the next poll). Whether a poll is due is
            // decided with the previous clock read: between polls (-c) the client does not touch
            // the scheduler's mark lines at all.
            let poll_due = last_now >= next_poll;
            let marks = if poll_due { ring.marks(u64::MAX) } else { 0 };
            // Ordered (`rdtscp`) only after loading marks: `cli_deq >= sch_deq` needs the read
            // to follow those loads. Otherwise nothing loaded before it is measured against it
            // (the stamp of a packet pushed now is checked by the scheduler's `take`, which
            // leaves a message stamped later than its own read in the ring), so a plain `rdtsc`
            // serves and does not wait for this iteration's loads.
            let now = if poll_due { clock.now() } else { clock.now_unordered() };
            stall.turn(last_now, now);
            last_now = now;
            probe.tick(now);
            if now >= spec_end {
                break;
            }
            rt.tick(now);
            let mut did = false;
            // Packets pushed in this iteration: a single packet is published with its line of
            // entries (or at the next iteration that pushes none); see `Producer::flush`.
            let mut pushed = 0u32;
            // A burst did not fit: the ring is full.
            let mut dropped = false;
            if poll_due {
                if marks > 0 {
                    st.consume(&mut ring, marks, now);
                }
                next_poll = now + ctx.poll;
                did = true;
            }
            // Every burst due by `now`, while they enter the ring whole: a client that is behind
            // (bursts due faster than its loop turns) pushes what fits at one clock read and one
            // publication, and a burst that does not fit is dropped (counted) and ends the
            // iteration, as one burst per iteration would.
            let now_ps = u128::from(now) * 1000;
            let mut refreshed = poll_due;
            while gap != u64::MAX && now_ps >= next_burst_ps {
                let want = crate::workload::draw_len(spec.lengths.as_ref(), spec.burst, &mut rng);
                let first_pos = ring.pushed();
                if ring.space() < u64::from(want) && !refreshed && stall.catching_up(now) {
                    // Back from a stall and behind: the ring looks full because the marks of
                    // the packets the scheduler released while this thread was away have not
                    // been counted yet. Count them before dropping anything (once per turn),
                    // as the original's client does after every burst; only for as long as the
                    // stall lasted, so a ring that is full because the scheduler is the
                    // bottleneck (the drain row) keeps its poll interval.
                    refreshed = true;
                    let marks = ring.marks(u64::MAX);
                    if marks > 0 {
                        st.consume(&mut ring, marks, clock.now());
                    }
                }
                let mut fit = ring.space().min(u64::from(want)) as u32;
                if ctx.message_level {
                    // A burst is one message: all of it enters the ring, or none (a truncated
                    // message would be a different message).
                    if fit == want {
                        ring.push(fit, spec.pkt_len, now);
                    } else {
                        fit = 0;
                    }
                } else if fit > 0 {
                    ring.push_singles(fit, spec.pkt_len, now);
                }
                pushed += fit;
                generated += u64::from(want);
                ring_drops += u64::from(want - fit);
                if let Some(log) = st.log.as_mut() {
                    log.generated(ctx.client, want, fit, spec.pkt_len, first_pos, now, entry as u32);
                }
                next_burst_ps += u128::from(crate::workload::draw_gap_ps(spec.gaps, gap, &mut rng));
                did = true;
                if fit < want || want == 0 {
                    dropped = fit < want;
                    break;
                }
            }
            if pushed != 1 {
                ring.flush();
            }
            if ctx.distributed {
                maybe_schedule(shared, me, &mut tries, &mut passes);
            }
            // Idle, or behind a full ring (the burst that did not fit was dropped): a pause before
            // the next turn, so that a client that cannot push does not hammer the scheduler's
            // release index and the core (or its hyperthread sibling) the scheduler runs beside.
            // Drain row, 6 alternating runs each (docs/notes/2026-11-28-drain-burst.md): schedlab
            // / original 1.60-1.68 with the pause, 1.34-1.80 without.
            if !did || dropped {
                std::hint::spin_loop();
            }
        }
        spec_start = spec_end;
    }
    ring.flush();
    let disturbance = probe.finish(&format!("client{}", ctx.index));
    // Program over: keep seeing marks until the run stops.
    let mut idle_spins = 0u32;
    while shared.phase.load(Ordering::Relaxed) == RUN {
        if ctx.distributed {
            maybe_schedule(shared, me, &mut tries, &mut passes);
        }
        let poll_due = last_now >= next_poll;
        let marks = if poll_due { ring.marks(u64::MAX) } else { 0 };
        let now = clock.now();
        last_now = now;
        if poll_due {
            if marks > 0 {
                st.consume(&mut ring, marks, now);
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
    let now = clock.now();
    ring.sweep(|c| st.complete(c, now));
    let queued = ring.pushed() - st.transmitted - st.sched_drops;
    ClientResult {
        generated,
        ring_drops,
        sched_drops: st.sched_drops,
        transmitted: st.transmitted,
        bits: st.bits,
        queued_at_stop: queued,
        delay: st.delay.into_hist(),
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
        disturbance,
    }
}

#[cfg(test)]
mod tests {
    use super::StallWatch;

    #[test]
    fn a_client_catches_up_for_as_long_as_it_was_away() {
        let mut w = StallWatch::default();
        // Turns 300 ns apart, and a 19 us gap: no stall.
        w.turn(1_000, 1_300);
        w.turn(1_300, 20_300);
        assert!(!w.catching_up(20_300));
        // Away for 2 ms: catching up until 2 ms after it came back.
        w.turn(20_300, 2_020_300);
        assert!(w.catching_up(2_020_300) && w.catching_up(4_020_299));
        assert!(!w.catching_up(4_020_300));
        // Short turns do not end it early; a clock that steps back does not start one.
        w.turn(2_020_300, 2_020_600);
        assert!(w.catching_up(3_000_000));
        let mut v = StallWatch::default();
        v.turn(5_000_000, 1_000);
        assert!(!v.catching_up(1_000));
    }
}
