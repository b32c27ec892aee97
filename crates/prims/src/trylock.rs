//! `trylock`: what a trylock costs when the lock is busy, and when threads pass it around.
//!
//! - Test A ([`TrylockTest::Busy`]): the launcher holds the lock for the whole run; every worker
//!   calls `try_lock` in a tight loop. Only counts and a duration are taken (no per-operation
//!   clock), so `1 / rate` is the busy cost with nothing added.
//! - Test B ([`TrylockTest::Free`]): the lock starts free; each worker tries, and when it gets the
//!   lock releases it at once, so the token moves between threads. Every try and every unlock is
//!   timed with the clock on both sides; a busy try's sample also goes into a ring (the last
//!   `ring` per thread) that `-o` dumps.
//! - Ping-pong ([`TrylockTest::PingPong`]): two threads take strict turns; the holder keeps the
//!   lock until the other has found it busy, then releases it, and waits until the other has
//!   taken it. The same per-operation samples, in a pattern with no luck in it: the cross-check
//!   for test B.
//!
//! ## As exact as a plain C loop
//! The loops are generic over the lock type and compiled once per lock ([`run`] dispatches on
//! [`LockKind`]), so a `try_lock` is a direct call into libc exactly as in C; going through the
//! `dyn TryLock` trait object instead adds an indirect call per try, about 1 ns, which was 29%
//! of a 3.4 ns busy `sem_trywait` ([`Dispatch::TraitObject`] keeps that path for comparison).
//! Between two timed operations test B does what a C loop does — a sum, a count, a ring store —
//! plus one increment of a 1-ns-bucket array ([`FastHist`]); the HDR histograms are filled
//! after the loop. Which thread released the lock before a free try ("hand-over") is only
//! tracked on request ([`TrylockConfig::track_handover`]): tracking writes a word shared by all
//! threads at every acquisition, an extra cache-line transfer inside the hold that made test B's
//! busy cost swing from run to run.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use schedlab_report::disturb::Probe;
use schedlab_report::{Hist, Summary};
use serde::Serialize;

use crate::clock::{current_cpu, now_ns};
use crate::locks::{LockKind, TryLock};
use crate::place::{stop_requested, Gate, ThreadRequest};
use schedlab_report::results;

use crate::{serde_name, PrimsError};

/// Which test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrylockTest {
    Busy,
    Free,
    PingPong,
}

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct TrylockConfig {
    pub test: TrylockTest,
    pub lock: LockKind,
    pub threads: usize,
    /// Operations (tries, or hand-overs in ping-pong) per thread.
    pub ops_per_thread: u64,
    /// CPU of the thread that allocates and first touches the lock (`-x`).
    pub alloc_cpu: Option<usize>,
    /// CPU for each worker (`None` = not pinned).
    pub worker_cpus: Vec<Option<usize>>,
    /// Busy samples kept per thread for `-o`.
    pub ring: usize,
    pub allow_degraded: bool,
    /// Test B: record which thread held the lock before each free try (adds a shared write per
    /// acquisition; the ping-pong always tracks it).
    pub track_handover: bool,
    /// How the loops call the lock.
    pub dispatch: Dispatch,
}

/// How the measuring loops call the lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dispatch {
    /// A loop compiled for the concrete lock type: direct calls, as a C program makes them.
    #[default]
    Direct,
    /// Through `&dyn TryLock` (one indirect call per operation): kept to show what that costs.
    TraitObject,
}

/// Every worker's samples together, ns: the result type's.
pub use schedlab_report::results::trylock::TrylockAll as AllThreads;
/// A whole run: the result type's.
pub use schedlab_report::results::trylock::TrylockRun;
/// One worker's figures (the result type's; costs in ns, each including one clock read).
pub use schedlab_report::results::trylock::TrylockWorker;

/// What [`run`] measured: the typed run (`schedlab.trylock`'s `run`) and the raw busy samples
/// that `-o` dumps, which the result does not carry.
#[derive(Clone, Debug)]
pub struct Measured {
    pub run: TrylockRun,
    /// Per worker, in the order of `run.workers`: its last busy samples (ns), oldest first.
    pub busy_rings: Vec<Vec<u32>>,
}

impl TrylockConfig {
    /// The configuration as the typed result records it.
    pub fn to_result(&self) -> results::trylock::TrylockConfig {
        results::trylock::TrylockConfig {
            test: serde_name(&self.test),
            lock: serde_name(&self.lock),
            threads: self.threads,
            ops_per_thread: self.ops_per_thread,
            alloc_cpu: self.alloc_cpu,
            worker_cpus: self.worker_cpus.clone(),
            ring: self.ring,
            allow_degraded: self.allow_degraded,
            track_handover: self.track_handover,
            dispatch: serde_name(&self.dispatch),
        }
    }
}

/// Sum of the workers' try rates (test A).
pub fn total_rate(run: &TrylockRun) -> f64 {
    run.workers.iter().map(|w| w.rate_ops_per_s).sum()
}

/// Sample-weighted average busy / free / post cost over all workers, ns.
pub fn averages(run: &TrylockRun) -> (f64, f64, f64) {
    let avg = |n: fn(&TrylockWorker) -> u64, a: fn(&TrylockWorker) -> f64| {
        let total: u64 = run.workers.iter().map(n).sum();
        if total == 0 {
            0.0
        } else {
            run.workers.iter().map(|w| a(w) * n(w) as f64).sum::<f64>() / total as f64
        }
    };
    (
        avg(|w| w.busy_samples, |w| w.busy_avg_ns),
        avg(|w| w.free_samples, |w| w.free_avg_ns),
        avg(|w| w.post_samples, |w| w.post_avg_ns),
    )
}

/// One worker as its loop left it: its figures and the samples behind them.
struct Worker {
    figures: TrylockWorker,
    /// Busy, free, post and handed-over-free histograms (ns), to merge the workers (test B).
    hists: Option<Box<[Hist; 4]>>,
    /// Its last busy samples, oldest first.
    busy_ring: Vec<u32>,
}

/// No thread has held the lock yet.
const NOBODY: u32 = u32::MAX;

/// A ring of the last `cap` samples. Its memory is written once before the measurement, so no
/// page fault lands inside it.
struct Ring {
    buf: Vec<u32>,
    next: usize,
    wrapped: bool,
}

impl Ring {
    fn new(cap: usize) -> Ring {
        Ring { buf: vec![u32::MAX; cap], next: 0, wrapped: false }
    }
    #[inline(always)]
    fn push(&mut self, v: u64) {
        if let Some(slot) = self.buf.get_mut(self.next) {
            *slot = v.min(u32::MAX as u64) as u32;
            self.next += 1;
            if self.next == self.buf.len() {
                self.next = 0;
                self.wrapped = true;
            }
        }
    }
    fn into_ordered(mut self) -> Vec<u32> {
        if self.wrapped {
            self.buf.rotate_left(self.next);
        } else {
            self.buf.truncate(self.next);
        }
        self.buf
    }
}

/// Exact counts of 1-ns buckets below [`FastHist::SMALL`] ns (one increment per sample, the
/// cost of a C loop's ring store), larger values in an HDR histogram; turned into a [`Hist`]
/// after the loop.
pub struct FastHist {
    small: Box<[u64]>,
    big: Hist,
    n: u64,
    sum: u64,
}

impl Default for FastHist {
    fn default() -> Self {
        Self::new()
    }
}

impl FastHist {
    /// Values below this many ns are counted exactly, one bucket per ns.
    pub const SMALL: u64 = 1024;

    pub fn new() -> FastHist {
        FastHist { small: vec![0u64; Self::SMALL as usize].into_boxed_slice(), big: Hist::new(), n: 0, sum: 0 }
    }
    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        match self.small.get_mut(v as usize) {
            Some(c) => *c += 1,
            None => self.big.record(v),
        }
        self.n += 1;
        self.sum += v;
    }
    pub fn len(&self) -> u64 {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    /// All samples as an HDR histogram.
    pub fn into_hist(self) -> Hist {
        let mut h = self.big;
        for (v, &c) in self.small.iter().enumerate() {
            if c > 0 {
                h.record_n(v as u64, c);
            }
        }
        h
    }
}

/// Per-operation samples of one worker.
struct Samples {
    busy: FastHist,
    free: FastHist,
    post: FastHist,
    handover: FastHist,
    ring: Ring,
}

impl Samples {
    fn new(ring: usize) -> Samples {
        Samples {
            busy: FastHist::new(),
            free: FastHist::new(),
            post: FastHist::new(),
            handover: FastHist::new(),
            ring: Ring::new(ring),
        }
    }
    #[inline(always)]
    fn busy(&mut self, ns: u64) {
        self.busy.record(ns);
        self.ring.push(ns);
    }
    #[inline(always)]
    fn free(&mut self, ns: u64, handed_over: bool) {
        self.free.record(ns);
        if handed_over {
            self.handover.record(ns);
        }
    }
    #[inline(always)]
    fn post(&mut self, ns: u64) {
        self.post.record(ns);
    }
    fn finish(self, index: usize, duration_ns: u64, cpu_ns: u64, probe: &Probe) -> Worker {
        let (busy_avg_ns, free_avg_ns, post_avg_ns, free_handover_avg_ns) =
            (self.busy.mean(), self.free.mean(), self.post.mean(), self.handover.mean());
        let [busy, free, post, handover] = [self.busy, self.free, self.post, self.handover].map(FastHist::into_hist);
        let figures = TrylockWorker {
            index,
            cpu_at_end: current_cpu(),
            duration_s: duration_ns as f64 / 1e9,
            cpu_s: cpu_ns as f64 / 1e9,
            busy_ns_per_try_cpu: 0.0,
            busy_samples: busy.len(),
            free_samples: free.len(),
            post_samples: post.len(),
            rate_ops_per_s: 0.0,
            busy_avg_ns,
            free_avg_ns,
            post_avg_ns,
            busy_ns: busy.summary(1.0),
            free_ns: free.summary(1.0),
            post_ns: post.summary(1.0),
            free_handover_samples: handover.len(),
            free_handover_avg_ns,
            free_handover_ns: handover.summary(1.0),
            disturbance: Some(probe.finish(&format!("thread #{index:02}"))),
        };
        Worker { figures, hists: Some(Box::new([busy, free, post, handover])), busy_ring: self.ring.into_ordered() }
    }
}

/// CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Test A: tight loop of tries on a lock someone else holds. Generic, so that each lock gets
/// its own loop with a direct call (`L = dyn TryLock` gives the indirect-call version).
fn busy_loop<L: TryLock + ?Sized>(lock: &L, ops: u64, index: usize) -> Worker {
    const CHUNK: u64 = 4096;
    let (mut busy, mut free) = (0u64, 0u64);
    let c0 = thread_cpu_ns();
    let t0 = now_ns();
    // One clock read per chunk (4096 tries) for the gaps: the tries themselves stay untimed.
    let mut probe = Probe::start(t0);
    let mut done = 0;
    while done < ops && !stop_requested() {
        let n = CHUNK.min(ops - done);
        for _ in 0..n {
            if lock.try_lock() {
                free += 1;
                lock.unlock();
            } else {
                busy += 1;
            }
        }
        done += n;
        probe.tick(now_ns());
    }
    let dt = (now_ns() - t0).max(1);
    let cpu = (thread_cpu_ns() - c0).max(1);
    let none = Summary::default();
    let figures = TrylockWorker {
        index,
        cpu_at_end: current_cpu(),
        duration_s: dt as f64 / 1e9,
        cpu_s: cpu as f64 / 1e9,
        busy_ns_per_try_cpu: cpu as f64 / done.max(1) as f64,
        busy_samples: busy,
        free_samples: free,
        post_samples: 0,
        rate_ops_per_s: done as f64 * 1e9 / dt as f64,
        busy_avg_ns: 0.0,
        free_avg_ns: 0.0,
        post_avg_ns: 0.0,
        busy_ns: none,
        free_ns: none,
        post_ns: none,
        free_handover_samples: 0,
        free_handover_avg_ns: 0.0,
        free_handover_ns: none,
        disturbance: Some(probe.finish(&format!("thread #{index:02}"))),
    };
    Worker { figures, hists: None, busy_ring: Vec::new() }
}

/// Test B: tries and unlocks, each timed; the token wanders between threads. Between two timed
/// operations only what a C loop does happens (sum, count, ring store, one bucket increment),
/// plus, when `owner` is given, the hand-over bookkeeping.
fn free_loop<L: TryLock + ?Sized>(lock: &L, owner: Option<&AtomicU32>, ops: u64, index: usize, ring: usize) -> Worker {
    let mut s = Samples::new(ring);
    let me = index as u32;
    let c0 = thread_cpu_ns();
    let start = now_ns();
    let mut probe = Probe::start(start);
    for i in 0..ops {
        if i % 4096 == 0 && stop_requested() {
            break;
        }
        let t0 = now_ns();
        let ok = lock.try_lock();
        let t1 = now_ns();
        // Outside the timed interval.
        probe.tick(t1);
        if ok {
            let handed_over = match owner {
                Some(o) => {
                    let prev = o.load(Ordering::Relaxed);
                    if prev != me {
                        o.store(me, Ordering::Relaxed);
                    }
                    prev != NOBODY && prev != me
                }
                None => false,
            };
            s.free(t1 - t0, handed_over);
            let t2 = now_ns();
            lock.unlock();
            let t3 = now_ns();
            s.post(t3 - t2);
        } else {
            s.busy(t1 - t0);
        }
    }
    let end = now_ns();
    s.finish(index, end - start, thread_cpu_ns() - c0, &probe)
}

/// Shared state of the ping-pong.
#[derive(Default)]
struct Turns {
    /// Thread that holds (or last held) the lock.
    owner: AtomicU32,
    /// Set by the waiting thread after a try failed against the current holder.
    busy_seen: AtomicBool,
    /// Set by each thread when it has done all its rounds.
    done: [AtomicBool; 2],
}

/// Spins until `cond` or Ctrl-C; false on Ctrl-C.
#[inline]
fn spin_while(cond: impl Fn() -> bool) -> bool {
    while cond() {
        if stop_requested() {
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

/// Ping-pong: strict alternation of two threads on the lock, `rounds` acquisitions each. The
/// holder keeps the lock until the other thread has found it busy at least once, then unlocks;
/// the other's next try finds it free. So every round has busy tries against a lock held on the
/// other core, one free try just after the other core released it, and one unlock.
fn pingpong_loop<L: TryLock + ?Sized>(lock: &L, turns: &Turns, rounds: u64, me: usize, ring: usize) -> Worker {
    let peer = 1 - me;
    let mut s = Samples::new(ring);
    let c0 = thread_cpu_ns();
    let start = now_ns();
    let mut probe = Probe::start(start);
    'rounds: for _ in 0..rounds {
        loop {
            let t0 = now_ns();
            let ok = lock.try_lock();
            let t1 = now_ns();
            probe.tick(t1);
            if ok {
                let prev = turns.owner.load(Ordering::Acquire);
                s.free(t1 - t0, prev != NOBODY && prev != me as u32);
                break;
            }
            s.busy(t1 - t0);
            turns.busy_seen.store(true, Ordering::Release);
            if stop_requested() {
                break 'rounds;
            }
        }
        turns.busy_seen.store(false, Ordering::Release);
        turns.owner.store(me as u32, Ordering::Release);
        // Hold until the peer has hit the busy lock (unless it has no rounds left).
        let held = spin_while(|| !turns.busy_seen.load(Ordering::Acquire) && !turns.done[peer].load(Ordering::Acquire));
        let t2 = now_ns();
        lock.unlock();
        let t3 = now_ns();
        s.post(t3 - t2);
        if !held {
            break;
        }
        // Do not try again before the peer has taken the lock (strict alternation).
        if !spin_while(|| turns.owner.load(Ordering::Acquire) == me as u32 && !turns.done[peer].load(Ordering::Acquire)) {
            break;
        }
    }
    turns.done[me].store(true, Ordering::Release);
    s.finish(me, now_ns() - start, thread_cpu_ns() - c0, &probe)
}

/// Busy, free, post and handed-over-free samples of all workers together.
fn merge(workers: &[Worker]) -> AllThreads {
    let mut all = [Hist::new(), Hist::new(), Hist::new(), Hist::new()];
    for h in workers.iter().filter_map(|w| w.hists.as_ref()) {
        for (a, b) in all.iter_mut().zip(h.iter()) {
            a.merge(b);
        }
    }
    let [b, f, p, h] = all.map(|h| h.summary(1.0));
    AllThreads { busy_ns: b, free_ns: f, post_ns: p, free_handover_ns: h }
}

/// Validates a configuration before any thread is started.
pub fn validate(cfg: &TrylockConfig) -> Result<(), PrimsError> {
    if cfg.threads == 0 {
        return Err(PrimsError::BadInput("-n 0: at least one thread is needed".into()));
    }
    if cfg.test == TrylockTest::PingPong && cfg.threads != 2 {
        return Err(PrimsError::BadInput(format!(
            "--pingpong passes the lock between exactly 2 threads; got -n {}",
            cfg.threads
        )));
    }
    if cfg.ops_per_thread == 0 {
        return Err(PrimsError::BadInput("-t: the number of operations per thread must be above 0".into()));
    }
    if cfg.worker_cpus.len() != cfg.threads {
        return Err(PrimsError::BadInput("internal: one CPU entry per thread is needed".into()));
    }
    Ok(())
}

/// Runs the test. Returns `Err(Degraded)` (before measuring) if pinning was refused and
/// degraded runs are not allowed.
pub fn run(cfg: &TrylockConfig) -> Result<Measured, PrimsError> {
    validate(cfg)?;
    use crate::locks::{FutexLock, MutexLock, SemLock, SpinLock, TasLock, TicketLock, TtasLock};
    match (cfg.dispatch, cfg.lock) {
        (Dispatch::TraitObject, kind) => run_with(cfg, move || kind.create().map(Arc::<dyn TryLock>::from)),
        (Dispatch::Direct, LockKind::Sem) => run_with(cfg, || SemLock::new().map(Arc::new)),
        (Dispatch::Direct, LockKind::Mutex) => run_with(cfg, || Ok(Arc::new(MutexLock::new()))),
        (Dispatch::Direct, LockKind::Spinlock) => run_with(cfg, || SpinLock::new().map(Arc::new)),
        (Dispatch::Direct, LockKind::Futex) => run_with(cfg, || Ok(Arc::new(FutexLock::default()))),
        (Dispatch::Direct, LockKind::Tas) => run_with(cfg, || Ok(Arc::new(TasLock::default()))),
        (Dispatch::Direct, LockKind::Ttas) => run_with(cfg, || Ok(Arc::new(TtasLock::default()))),
        (Dispatch::Direct, LockKind::Ticket) => run_with(cfg, || Ok(Arc::new(TicketLock::default()))),
    }
}

/// [`run`] for one lock type: `make` creates the lock (on the `-x` CPU when asked).
fn run_with<L, F>(cfg: &TrylockConfig, make: F) -> Result<Measured, PrimsError>
where
    L: TryLock + ?Sized + 'static,
    F: FnOnce() -> Result<Arc<L>, PrimsError> + Send + 'static,
{
    // The lock is allocated (and first written) by a thread on the `-x` CPU.
    let (lock, alloc_cpu_got, mut extra) = match cfg.alloc_cpu {
        Some(cpu) => {
            let req = ThreadRequest { role: format!("lock allocator (-x {cpu})"), cpu: Some(cpu), rt: None };
            let (lock, got) = std::thread::spawn(move || {
                let got = crate::place::apply(&req);
                (make(), got)
            })
            .join()
            .map_err(|_| PrimsError::Worker("lock allocator panicked".into()))?;
            (lock?, Some(got.got.cpu), got.degraded)
        }
        None => (make()?, None, Vec::new()),
    };
    if cfg.test == TrylockTest::Busy && !lock.try_lock() {
        return Err(PrimsError::Worker("could not take the fresh lock to make it busy".into()));
    }
    let gate = Arc::new(Gate::new(cfg.threads, cfg.allow_degraded));
    let turns = Arc::new(Turns { owner: AtomicU32::new(NOBODY), ..Default::default() });
    let mut handles = Vec::new();
    for i in 0..cfg.threads {
        let spawned = {
            let (lock, gate, turns) = (lock.clone(), gate.clone(), turns.clone());
            let req = ThreadRequest { role: format!("thread #{i:02}"), cpu: cfg.worker_cpus[i], rt: None };
            let (test, ops, ring, track) = (cfg.test, cfg.ops_per_thread, cfg.ring, cfg.track_handover);
            std::thread::Builder::new().name(format!("trylock-{i}")).spawn(move || {
                gate.enter(i, &req)?;
                Some(match test {
                    TrylockTest::Busy => busy_loop(&*lock, ops, i),
                    TrylockTest::Free => free_loop(&*lock, track.then_some(&turns.owner), ops, i, ring),
                    TrylockTest::PingPong => pingpong_loop(&*lock, &turns, ops, i, ring),
                })
            })
        };
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                gate.cancel();
                for h in handles {
                    let _ = h.join();
                }
                if cfg.test == TrylockTest::Busy {
                    lock.unlock();
                }
                return Err(PrimsError::Os { what: "spawning a thread", err: e });
            }
        }
    }
    let verdict = gate.verdict(&std::mem::take(&mut extra));
    let mut workers = Vec::new();
    for h in handles {
        match h.join() {
            Ok(Some(w)) => workers.push(w),
            Ok(None) => {}
            Err(_) => return Err(PrimsError::Worker("a trylock thread panicked".into())),
        }
    }
    if cfg.test == TrylockTest::Busy {
        lock.unlock();
    }
    let threads = verdict?;
    let all = merge(&workers);
    let (figures, busy_rings) = workers.into_iter().map(|w| (w.figures, w.busy_ring)).unzip();
    let run =
        TrylockRun { config: cfg.to_result(), alloc_cpu_got, threads, workers: figures, all, interrupted: stop_requested() };
    Ok(Measured { run, busy_rings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(test: TrylockTest, lock: LockKind, threads: usize, ops: u64) -> TrylockConfig {
        TrylockConfig {
            test,
            lock,
            threads,
            ops_per_thread: ops,
            alloc_cpu: None,
            worker_cpus: vec![None; threads],
            ring: 1000,
            allow_degraded: false,
            track_handover: true,
            dispatch: Dispatch::Direct,
        }
    }

    #[test]
    fn both_dispatches_and_handover_switch_count_the_same() {
        for dispatch in [Dispatch::Direct, Dispatch::TraitObject] {
            for k in [LockKind::Sem, LockKind::Ticket] {
                let mut c = cfg(TrylockTest::Busy, k, 1, 10_000);
                c.dispatch = dispatch;
                let r = run(&c).unwrap().run;
                assert_eq!(r.workers[0].busy_samples, 10_000, "{dispatch:?} {k}");
                assert!(r.workers[0].busy_ns_per_try_cpu > 0.0 && r.workers[0].cpu_s > 0.0);
                let mut c = cfg(TrylockTest::Free, k, 2, 10_000);
                c.dispatch = dispatch;
                c.track_handover = false;
                let r = run(&c).unwrap().run;
                for w in &r.workers {
                    assert_eq!(w.busy_samples + w.free_samples, 10_000);
                    assert_eq!(w.free_handover_samples, 0, "not tracked");
                }
            }
        }
    }

    #[test]
    fn fast_hist_is_exact_below_its_limit_and_keeps_the_rest() {
        let mut f = FastHist::new();
        let mut h = Hist::new();
        for v in [0u64, 1, 3, 3, 40, 1023, 1024, 5000, 1_000_000] {
            f.record(v);
            h.record(v);
        }
        assert_eq!(f.len(), 9);
        assert!((f.mean() - 1_007_094.0 / 9.0).abs() < 1e-9, "the mean is exact: {}", f.mean());
        let fh = f.into_hist();
        assert_eq!(fh.summary(1.0), h.summary(1.0));
        assert!(FastHist::new().is_empty() && FastHist::new().mean() == 0.0);
    }

    proptest::proptest! {
        #[test]
        fn fast_hist_summary_equals_direct_recording(v in proptest::collection::vec(0u64..5000, 1..300)) {
            let mut f = FastHist::new();
            let mut h = Hist::new();
            for &x in &v {
                f.record(x);
                h.record(x);
            }
            let exact_mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
            proptest::prop_assert!((f.mean() - exact_mean).abs() < 1e-9);
            proptest::prop_assert_eq!(f.into_hist().summary(1.0), h.summary(1.0));
        }
    }

    #[test]
    fn busy_test_never_gets_the_lock() {
        for k in LockKind::ALL {
            let r = run(&cfg(TrylockTest::Busy, k, 2, 20_000)).unwrap().run;
            assert_eq!(r.workers.len(), 2);
            for w in &r.workers {
                assert_eq!(w.busy_samples, 20_000, "{k}");
                assert_eq!(w.free_samples, 0, "{k}");
                assert!(w.rate_ops_per_s > 0.0);
            }
            assert!(total_rate(&r) >= r.workers[0].rate_ops_per_s);
        }
    }

    #[test]
    fn free_test_accounts_for_every_try() {
        let m = run(&cfg(TrylockTest::Free, LockKind::Sem, 2, 20_000)).unwrap();
        assert_eq!(m.busy_rings.len(), m.run.workers.len());
        for (w, ring) in m.run.workers.iter().zip(&m.busy_rings) {
            assert_eq!(w.busy_samples + w.free_samples, 20_000);
            assert_eq!(w.free_samples, w.post_samples, "every acquisition is released once");
            assert!(ring.len() as u64 == w.busy_samples.min(1000));
            if w.free_samples > 0 {
                assert!(w.free_avg_ns > 0.0 && w.free_ns.min <= w.free_avg_ns);
            }
        }
        // One thread alone always finds the lock free.
        let r = run(&cfg(TrylockTest::Free, LockKind::Tas, 1, 5_000)).unwrap().run;
        assert_eq!(r.workers[0].free_samples, 5_000);
        assert_eq!(r.workers[0].busy_samples, 0);
        assert_eq!(r.workers[0].free_handover_samples, 0, "nobody else ever held it");
    }

    #[test]
    fn pingpong_alternates_strictly() {
        for k in [LockKind::Sem, LockKind::Ticket] {
            let r = run(&cfg(TrylockTest::PingPong, k, 2, 500)).unwrap().run;
            for w in &r.workers {
                assert_eq!(w.free_samples, 500, "{k}: one acquisition per round");
                assert_eq!(w.post_samples, 500);
                assert!(w.free_handover_samples >= 499, "{k}: every free try follows the other's unlock");
                assert!(w.busy_samples >= 499, "{k}: the holder waits for a busy try each round");
            }
        }
        assert!(run(&cfg(TrylockTest::PingPong, LockKind::Sem, 3, 10)).is_err());
    }

    #[test]
    fn ring_keeps_the_last_samples_in_order() {
        let mut r = Ring::new(3);
        for v in 1..=5 {
            r.push(v);
        }
        assert_eq!(r.into_ordered(), vec![3, 4, 5]);
        let mut r = Ring::new(4);
        r.push(7);
        assert_eq!(r.into_ordered(), vec![7]);
    }

    #[test]
    fn zero_threads_or_ops_is_refused() {
        assert!(validate(&cfg(TrylockTest::Busy, LockKind::Sem, 0, 10)).unwrap_err().to_string().contains("-n 0"));
        assert!(validate(&cfg(TrylockTest::Busy, LockKind::Sem, 1, 0)).is_err());
    }
}
