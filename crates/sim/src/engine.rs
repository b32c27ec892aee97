//! The discrete-event engine: every strategy runs in lock step on one sample path (§7, §16).
//!
//! Semantics (each one matters; see `shared/REFERENCE.md`):
//! - **Common random numbers.** Each arrival puts its own copy of the message into every
//!   strategy's queue; one server takes one packet from every non-empty queue at the same instant
//!   and then holds one shared service time `0.5 + Exp(mean 0.5)`. Total work is identical in every
//!   queue, so all queues are empty or busy together and `qlen` is the same in every row.
//! - A message arriving at an idle system has its first packet taken at once. A packet leaves its
//!   queue when its service *starts*; a message's latency is recorded when its last packet is taken.
//! - `qlen` = packets in − packets out, sampled every `queue_delay` time units from t = 0.
//! - Statistics are cumulative from t = 0 (no warm-up deletion), like the report's tables.
//!
//! Events are processed in (time, kind) order; the only simultaneous events possible are the
//! first arrival at t = 0 and user trace entries, which are handled in file order.
//!
//! Closed-loop applications (§2) make arrivals depend on the strategy, so that mode runs each
//! strategy on its own sample path with the same seed instead of in lock step.
//!
//! Lock step also gives a shortcut: a message that arrives to empty queues and has all its packets
//! taken before the next arrival is sent the same way by every strategy. The common-case generator
//! marks it (`Kind::Alone`) and each lane records its latency without passing it through the
//! policy, when the policy agrees ([`Policy::bypass`]). That is a third of the messages at 50%
//! load and nearly all at 1%; the results are unchanged (tested against the general generator).

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use schedlab_policy::{Alpha, AnyPolicy, BuildOptions, FlowWeight, Message, Policy};
use schedlab_report::LogHist;
use serde::Serialize;

use crate::expo::Ziggurat;
use crate::model::{listing_alpha, report_defaults, AlphaClass, LengthDist, Service, Strategy, TraceArrival};

/// Where messages come from.
#[derive(Clone, Debug)]
pub enum Arrivals {
    /// Poisson arrivals with mean gap `mean_len × 100 / traffic` (the report's model).
    Poisson,
    /// Messages from a trace file, in order; the run ends when all are delivered.
    Trace(Arc<Vec<TraceArrival>>),
    /// `apps` closed-loop applications (§2): each sends its next message an exponential think time
    /// after its previous one was delivered. The mean think time is chosen so that the offered load
    /// with zero queueing delay equals the traffic level: `apps × mean_len × 100 / traffic`.
    Closed { apps: u32 },
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Offered load in percent of the outlet's capacity.
    pub traffic: f64,
    pub strategies: Vec<Strategy>,
    pub dist: LengthDist,
    /// Queue-length sampling period in time units (the listing's `-q`, default 200).
    pub queue_delay: f64,
    /// Stop once this many packets have arrived (Poisson and closed loop).
    pub packets: u64,
    pub seed: u64,
    /// Number of applications messages are spread over (uniformly at random) in open-loop runs.
    pub apps: u32,
    /// §11: keep each application's messages in order in the alpha strategies.
    pub in_order: bool,
    /// §10: per-message α classes (used by the `prio` strategy; latency reported per class).
    pub msg_alpha: Vec<AlphaClass>,
    pub arrivals: Arrivals,
    /// Batches for batch-means confidence intervals.
    pub batches: u32,
    /// Record the listing's cumulative reports at t = 200000(1.1^k − 1).
    pub checkpoints: bool,
    /// The packet service-time model (`--service`; the report's by default).
    pub service: Service,
    /// Weight per application for the flow-level strategies (DRR, WF2Q+, QFQ): application `i`
    /// is flow `i`; applications beyond the list (all, when it is empty) have weight 1.
    pub weights: Vec<u32>,
}

impl SimConfig {
    /// The report's model at `traffic` percent with the 13 default strategies.
    pub fn report(traffic: f64, packets: u64, seed: u64) -> Self {
        SimConfig {
            traffic,
            strategies: report_defaults(),
            dist: LengthDist::report_default(),
            queue_delay: 200.0,
            packets,
            seed,
            apps: 1,
            in_order: false,
            msg_alpha: Vec::new(),
            arrivals: Arrivals::Poisson,
            batches: 20,
            checkpoints: false,
            service: Service::Report,
            weights: Vec::new(),
        }
    }
}

/// The payload each queue carries per message (the policy hands it back with each packet).
#[derive(Clone, Copy, Debug)]
struct Msg {
    t: f64,
    len: u32,
    app: u32,
    seq: u32,
    class: u32,
}

/// Mean, confidence interval and percentiles of a latency population (time units).
#[derive(Clone, Debug, Serialize)]
pub struct LatStats {
    /// Message length in packets (0 = all messages).
    pub len: u32,
    pub count: u64,
    pub mean_tu: f64,
    /// Half-width of the 95% confidence interval of the mean, by batch means (NaN if too few batches).
    pub ci95_tu: f64,
    pub p50_tu: f64,
    pub p99_tu: f64,
    pub max_tu: f64,
    /// Batch means in batch order, NaN for a batch with no message, aligned across strategies
    /// (what `stats` uses for paired differences, warm-up deletion and diagnostics).
    #[serde(skip)]
    pub batch_means: Vec<f64>,
}

/// Results of one strategy.
#[derive(Clone, Debug, Serialize)]
pub struct StrategyResult {
    pub label: String,
    pub listing_alpha: f64,
    /// Per message length present, in length order.
    pub by_len: Vec<LatStats>,
    /// All messages together (`avlat`).
    pub overall: LatStats,
    /// Per §10 α class (empty unless `--msg-alpha`).
    pub by_class: Vec<LatStats>,
    /// Messages delivered after a later message of the same application (overtaken: §11).
    pub reordered: u64,
    pub packets_out: u64,
    pub qlen_pkts: f64,
    /// §12 effective packet period (latency + 1) / length: min and max over lengths.
    pub period_min: f64,
    pub period_max: f64,
    /// Renormalisations of the alpha clock (0 for other strategies).
    pub clock_renormalisations: u64,
    /// Per (§10 class, length): latency (empty unless `--msg-alpha`).
    pub by_class_len: Vec<crate::questions::ClassLen>,
    /// §13: the α a tracking strategy (`track:`) chose; `None` for the others.
    pub alpha_chosen: Option<crate::questions::AlphaChosen>,
    /// §11 in-order delivery applies to this strategy (the alpha family, with `--in-order`).
    pub in_order_applies: bool,
    /// This strategy's sample path: packets in, simulated time and qlen's 95% half-width (the
    /// run's own in open loop; each strategy's own in closed loop).
    pub packets_in: u64,
    pub sim_time_tu: f64,
    pub qlen_ci95_pkts: f64,
    /// Offered load, a fraction of the outlet's capacity: traffic / 100 (closed loop: the load
    /// with zero queueing delay, N x E[length] / mean think time).
    pub offered_load: f64,
    /// Carried load: packets sent / simulated time.
    pub carried_load: f64,
}

/// One `>>` block of the listing: cumulative state at a report time.
#[derive(Clone, Debug, Serialize)]
pub struct Checkpoint {
    pub time_tu: f64,
    pub packets_in: u64,
    /// Per strategy: (listing α, qlen, packets out, per-length mean latencies in length order, avlat).
    pub rows: Vec<(f64, f64, u64, Vec<f64>, f64)>,
    /// Closed loop: packets in of each row's own sample path (empty: `packets_in` for all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub row_packets_in: Vec<u64>,
}

/// Results of one run (one traffic level).
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub traffic_pct: f64,
    pub seed: u64,
    pub packets_in: u64,
    pub sim_time_tu: f64,
    pub qlen_pkts: f64,
    /// Half-width of the 95% confidence interval of `qlen_pkts` (batch means).
    pub qlen_ci95_pkts: f64,
    /// The per-batch mean queue lengths behind `qlen_ci95_pkts` (used by `stats`).
    #[serde(skip)]
    pub qlen_batch_means: Vec<f64>,
    pub strategies: Vec<StrategyResult>,
    pub checkpoints: Vec<Checkpoint>,
    /// True when the run was stopped early (Ctrl-C); statistics cover what ran.
    pub interrupted: bool,
    /// Closed loop (§2): the number of applications (then `sim_time_tu`, `qlen_pkts` and
    /// `qlen_ci95_pkts` are per strategy, and NaN here).
    pub closed_apps: Option<u32>,
    /// Applications messages are spread over.
    pub apps: u32,
    /// §11 in-order delivery was asked for.
    pub in_order: bool,
}

/// Latency accumulator for one message length (or one class) of one strategy.
///
/// Batch means are taken from snapshots of (count, sum) at batch boundaries, so recording a
/// message touches only the count, the sum and the histogram.
#[derive(Clone, Debug)]
struct Acc {
    sum: f64,
    hist: LogHist,
    snap_n: u64,
    snap_sum: f64,
    bmeans: Vec<f64>,
    /// Every batch's mean, NaN when it had no message (aligned across strategies).
    aligned: Vec<f64>,
}

impl Acc {
    fn new() -> Self {
        Acc { sum: 0.0, hist: LogHist::new(), snap_n: 0, snap_sum: 0.0, bmeans: Vec::new(), aligned: Vec::new() }
    }
    /// Messages recorded (the histogram counts them).
    #[inline(always)]
    fn n(&self) -> u64 {
        self.hist.len()
    }
    #[inline(always)]
    fn add(&mut self, lat: f64) {
        self.sum += lat;
        self.hist.record(lat);
    }
    /// (count, sum) since the last batch boundary.
    fn delta(&self) -> (u64, f64) {
        (self.n() - self.snap_n, self.sum - self.snap_sum)
    }
    fn close_batch(&mut self) {
        let (dn, ds) = self.delta();
        if dn > 0 {
            self.bmeans.push(ds / dn as f64);
        }
        self.aligned.push(if dn > 0 { ds / dn as f64 } else { f64::NAN });
        self.snap_n = self.n();
        self.snap_sum = self.sum;
    }
    fn mean(&self) -> f64 {
        if self.n() == 0 {
            0.0
        } else {
            self.sum / self.n() as f64
        }
    }
    fn stats(&self, len: u32) -> LatStats {
        LatStats {
            len,
            count: self.n(),
            mean_tu: self.mean(),
            ci95_tu: ci95(&self.bmeans),
            p50_tu: self.hist.quantile(0.5),
            p99_tu: self.hist.quantile(0.99),
            max_tu: self.hist.max(),
            batch_means: self.aligned.clone(),
        }
    }
}

/// Two-sided 97.5% Student t quantile.
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
        2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        d if d <= 30 => T[d - 1],
        _ => 1.96,
    }
}

/// Half-width of the 95% confidence interval of the mean from batch means.
pub fn ci95(bmeans: &[f64]) -> f64 {
    let b = bmeans.len();
    if b < 2 {
        return f64::NAN;
    }
    let m = bmeans.iter().sum::<f64>() / b as f64;
    let var = bmeans.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (b - 1) as f64;
    t975(b - 1) * (var / b as f64).sqrt()
}

/// What happens at one step of the shared sample path, as every lane sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A message arrives.
    Arrive,
    /// A message arrives to an empty queue and all its packets start before the next arrival:
    /// every strategy sends it the same way, so a lane may skip its policy ([`Policy::bypass`]).
    /// Its packet starts follow in the same chunk.
    Alone,
    /// A batch boundary (batch means).
    Batch,
    /// A listing report time.
    Check,
    /// The end of a chunk (serves the packet starts after the last other step).
    End,
}

/// One step of the shared sample path. Packet starts are not steps of their own: `before` says
/// how many of the chunk's packet starts (`Path::times`) come before this step, so a lane serves
/// the starts between two steps in one bulk `dequeue_many` and dispatches once per message.
#[derive(Clone, Copy, Debug)]
struct Step {
    msg: Msg,
    before: u32,
    kind: Kind,
}

/// A chunk of the sample path: steps plus the start times of the packets taken.
#[derive(Default)]
struct Path {
    steps: Vec<Step>,
    times: Vec<f64>,
}

const NO_MSG: Msg = Msg { t: 0.0, len: 0, app: 0, seq: 0, class: 0 };

impl Path {
    fn clear(&mut self) {
        self.steps.clear();
        self.times.clear();
    }
    #[inline(always)]
    fn push(&mut self, kind: Kind, msg: Msg) {
        self.steps.push(Step { msg, before: self.times.len() as u32, kind });
    }
    #[inline(always)]
    fn take(&mut self, t: f64) {
        self.times.push(t);
    }
}

/// Statistics of one lane (one strategy).
struct LaneStats {
    by_len: Vec<Acc>,
    /// Per-class or per-application statistics are kept (`by_class` or `last_seq` non-empty).
    extra: bool,
    /// Batch means of all messages together (the per-length accumulators hold the data).
    overall_bmeans: Vec<f64>,
    overall_aligned: Vec<f64>,
    by_class: Vec<Acc>,
    /// Per (§10 class, length).
    by_class_len: Vec<Vec<crate::questions::CellAcc>>,
    last_seq: Vec<u32>,
    seen: Vec<bool>,
    reordered: u64,
    packets_out: u64,
    /// §10: α per class, set only for the `prio` strategy.
    class_alpha: Vec<Alpha>,
    /// Per checkpoint: (packets out, per-length means, overall mean).
    checks: Vec<(u64, Vec<f64>, f64)>,
}

struct Lane {
    /// §10 class α values (for the per-class tables) and §11 asked for.
    class_alphas: Vec<f64>,
    in_order: bool,
    strategy: Strategy,
    policy: AnyPolicy<Msg>,
    stats: LaneStats,
}

impl Lane {
    fn new(s: &Strategy, cfg: &SimConfig, max_len: u32) -> Lane {
        let fallback = cfg.msg_alpha.first().map(|c| c.alpha).unwrap_or(10.0);
        // Flow-level policies: one flow per application (weights from `--weights`), unit packets.
        let napps = (cfg.apps.max(1) as usize).max(cfg.weights.len());
        let flows: Vec<FlowWeight> = (0..napps).map(|i| FlowWeight::new(cfg.weights.get(i).copied().unwrap_or(1), 1)).collect();
        let opts =
            BuildOptions::default().flows(&flows).in_order(cfg.in_order).default_alpha(Alpha::new(fallback).expect("validated"));
        let policy = s.build(&opts);
        let apps = if cfg.apps > 1 { cfg.apps as usize } else { 0 };
        let class_alpha = if matches!(s, Strategy::Prio) {
            cfg.msg_alpha.iter().map(|c| Alpha::new(c.alpha).expect("validated")).collect()
        } else {
            Vec::new()
        };
        Lane {
            class_alphas: cfg.msg_alpha.iter().map(|c| c.alpha).collect(),
            in_order: cfg.in_order,
            strategy: s.clone(),
            policy,
            stats: LaneStats {
                by_len: (0..=max_len).map(|_| Acc::new()).collect(),
                extra: !cfg.msg_alpha.is_empty() || apps > 0,
                overall_bmeans: Vec::new(),
                overall_aligned: Vec::new(),
                by_class: cfg.msg_alpha.iter().map(|_| Acc::new()).collect(),
                by_class_len: Vec::new(),
                last_seq: vec![0; apps],
                seen: vec![false; apps],
                reordered: 0,
                packets_out: 0,
                class_alpha,
                checks: Vec::new(),
            },
        }
    }

    /// Replays a run of events; statically dispatched per policy type so the loop stays tight.
    fn replay(&mut self, path: &Path, delivered: &mut Vec<u32>) {
        let st = &mut self.stats;
        if delivered.capacity() > 0 {
            // Closed loops: collect the applications whose message was delivered.
            return replay::<_, true>(&mut self.policy, st, path, delivered);
        }
        match &mut self.policy {
            AnyPolicy::Fifo(p) => replay::<_, false>(p, st, path, delivered),
            AnyPolicy::RoundRobin(p) => replay::<_, false>(p, st, path, delivered),
            AnyPolicy::RoundRobinHead(p) => replay::<_, false>(p, st, path, delivered),
            AnyPolicy::Alpha(p) => replay::<_, false>(p, st, path, delivered),
            AnyPolicy::Track(p) => replay::<_, false>(p, st, path, delivered),
            #[allow(unreachable_patterns)]
            other => replay::<_, false>(other, st, path, delivered),
        }
    }

    fn result(&self, qlen: f64) -> StrategyResult {
        let st = &self.stats;
        let by_len: Vec<LatStats> =
            st.by_len.iter().enumerate().filter(|(_, a)| a.n() > 0).map(|(l, a)| a.stats(l as u32)).collect();
        let periods: Vec<f64> = by_len.iter().map(|s| (s.mean_tu + 1.0) / f64::from(s.len)).collect();
        StrategyResult {
            label: self.strategy.label(),
            listing_alpha: listing_alpha(&self.strategy),
            period_min: periods.iter().copied().fold(f64::INFINITY, f64::min),
            period_max: periods.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            by_len,
            overall: st.overall().stats(0),
            by_class: st.by_class.iter().enumerate().map(|(i, a)| a.stats(i as u32)).collect(),
            reordered: st.reordered,
            packets_out: st.packets_out,
            qlen_pkts: qlen,
            clock_renormalisations: match &self.policy {
                AnyPolicy::Alpha(a) => a.renormalisations(),
                _ => 0,
            },
            by_class_len: crate::questions::class_len_results(&st.by_class_len, &self.class_alphas),
            alpha_chosen: match &self.policy {
                AnyPolicy::Track(t) => Some(t.alpha_stats().into()),
                _ => None,
            },
            in_order_applies: self.in_order && matches!(self.policy, AnyPolicy::Alpha(_) | AnyPolicy::Track(_)),
            packets_in: 0,
            sim_time_tu: 0.0,
            qlen_ci95_pkts: 0.0,
            offered_load: 0.0,
            carried_load: 0.0,
        }
    }
}

impl LaneStats {
    #[inline(always)]
    fn delivered(&mut self, m: Msg, now: f64) {
        let lat = now - m.t;
        self.by_len[m.len as usize].add(lat);
        if self.extra {
            self.delivered_extra(m, lat);
        }
    }

    /// Per-class latency (§10) and reordering counts (§11), when asked for.
    #[cold]
    fn delivered_extra(&mut self, m: Msg, lat: f64) {
        if let Some(c) = self.by_class.get_mut(m.class as usize) {
            c.add(lat);
            crate::questions::record_class_len(&mut self.by_class_len, m.class, m.len, lat);
        }
        if !self.last_seq.is_empty() {
            let a = m.app as usize;
            if self.seen[a] && m.seq < self.last_seq[a] {
                self.reordered += 1;
            } else {
                self.last_seq[a] = m.seq;
                self.seen[a] = true;
            }
        }
    }

    fn close_batch(&mut self) {
        let (dn, ds) = self.by_len.iter().map(Acc::delta).fold((0, 0.0), |(n, s), (a, b)| (n + a, s + b));
        if dn > 0 {
            self.overall_bmeans.push(ds / dn as f64);
        }
        self.overall_aligned.push(if dn > 0 { ds / dn as f64 } else { f64::NAN });
        for a in &mut self.by_len {
            a.close_batch();
        }
        for a in &mut self.by_class {
            a.close_batch();
        }
        self.by_class_len.iter_mut().flatten().for_each(crate::questions::CellAcc::close_batch);
    }

    /// All messages together: per-length accumulators merged.
    fn overall(&self) -> Acc {
        let mut o = Acc::new();
        for a in self.by_len.iter().filter(|a| a.n() > 0) {
            o.sum += a.sum;
            o.hist.merge(&a.hist);
        }
        o.bmeans = self.overall_bmeans.clone();
        o.aligned = self.overall_aligned.clone();
        o
    }

    #[cold]
    fn event(&mut self, kind: Kind) {
        match kind {
            Kind::Batch => self.close_batch(),
            Kind::Check => self.check(),
            Kind::End => {}
            Kind::Arrive | Kind::Alone => unreachable!("arrivals are handled inline"),
        }
    }

    fn check(&mut self) {
        let lens = self.by_len.iter().filter(|a| a.n() > 0).map(Acc::mean).collect();
        let all = self.overall().mean();
        self.checks.push((self.packets_out, lens, all));
    }
}

/// The hot loop: one lane through a chunk of the path. With `COLLECT` (closed loops), the
/// applications whose message was delivered are pushed to `delivered`.
#[inline(never)]
fn replay<P: Policy<Msg>, const COLLECT: bool>(p: &mut P, st: &mut LaneStats, path: &Path, delivered: &mut Vec<u32>) {
    let mut served = 0;
    // A lone message that bypassed the policy, and its packets not yet started.
    let mut alone: Option<(Msg, usize)> = None;
    for s in &path.steps {
        let upto = s.before as usize;
        if upto > served {
            let times = &path.times[served..upto];
            match &mut alone {
                None => serve::<P, COLLECT>(p, st, times, delivered),
                Some((m, left)) => {
                    debug_assert!(times.len() <= *left, "a lone message's packets run until it is sent");
                    *left -= times.len();
                    st.packets_out += times.len() as u64;
                    if *left == 0 {
                        st.delivered(*m, times[times.len() - 1]);
                        if COLLECT {
                            delivered.push(m.app);
                        }
                        alone = None;
                    }
                }
            }
            served = upto;
        }
        match s.kind {
            Kind::Alone if p.bypass(u64::from(s.msg.len)) => alone = Some((s.msg, s.msg.len as usize)),
            Kind::Arrive | Kind::Alone => {
                let m = s.msg;
                let mut msg = Message::new(m, m.app, m.len);
                if let Some(a) = st.class_alpha.get(m.class as usize) {
                    msg.alpha = Some(*a);
                }
                p.enqueue(msg).expect("validated message");
            }
            other => st.event(other),
        }
    }
    debug_assert_eq!(served, path.times.len(), "a chunk ends with an End step");
    debug_assert!(alone.is_none(), "a lone message is sent within its chunk");
}

/// The packet starts at `times`, in a row with no arrival between them: every queue sends one
/// packet at each. (Called from one place so that the policy's bulk dequeue is inlined.)
#[inline(always)]
fn serve<P: Policy<Msg>, const COLLECT: bool>(p: &mut P, st: &mut LaneStats, times: &[f64], delivered: &mut Vec<u32>) {
    let got = p.dequeue_many(times.len() as u64, &mut |i, m: Msg| {
        st.delivered(m, times[i as usize]);
        if COLLECT {
            delivered.push(m.app);
        }
    });
    debug_assert_eq!(got, times.len() as u64, "lock step: every queue is busy together");
    st.packets_out += got;
}

/// Shared progress and cancellation for a run.
#[derive(Debug, Default)]
pub struct Control {
    /// Packets arrived so far (updated every ~65k arrivals).
    pub progress: AtomicU64,
    /// Set to stop early; the run returns what it has, marked `interrupted`.
    pub stop: AtomicBool,
}

enum Source {
    Poisson { mean_gap: f64, next: f64 },
    Trace { v: Arc<Vec<TraceArrival>>, i: usize },
    Closed { think: f64, ready: BinaryHeap<(std::cmp::Reverse<OrdF64>, u32)> },
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

impl Service {
    /// One packet's service time, from the service stream (the deterministic model draws nothing).
    #[inline(always)]
    fn draw(self, zig: &Ziggurat, rng: &mut Xoshiro256PlusPlus) -> f64 {
        match self {
            Service::Report => 0.5 + 0.5 * zig.sample(rng),
            Service::Det => 1.0,
            Service::Exp => zig.sample(rng),
        }
    }
}

/// Random streams: one per purpose so that changing one model part leaves the others' draws alone.
struct Rngs {
    arrival: Xoshiro256PlusPlus,
    length: Xoshiro256PlusPlus,
    service: Xoshiro256PlusPlus,
    misc: Xoshiro256PlusPlus,
}

impl Rngs {
    fn new(seed: u64) -> Self {
        let s = |k: u64| Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k);
        Rngs { arrival: s(1), length: s(2), service: s(3), misc: s(4) }
    }
}

/// Produces the shared sample path: arrivals, packet starts, batch boundaries and report times.
///
/// Because total work is identical in every queue, whether the server is busy depends only on
/// packets in − packets out, so the path can be generated once for all strategies.
struct Generator<'a> {
    cfg: &'a SimConfig,
    rng: Rngs,
    zig: &'static Ziggurat,
    src: Source,
    apps: u32,
    target: u64,
    batch: u64,
    next_batch: u64,
    seq_per_app: Vec<u32>,
    class_cum: Vec<f64>,
    now: f64,
    busy: bool,
    service_end: f64,
    packets_in: u64,
    packets_out: u64,
    next_sample: f64,
    qsum: f64,
    qn: u64,
    /// (qsum, qn) at the last batch boundary, and the per-batch mean queue lengths.
    qsnap: (f64, u64),
    qbatches: Vec<f64>,
    stat_delay: f64,
    next_check: f64,
    /// (time, packets in, qlen) at each report time.
    checks: Vec<(f64, u64, f64)>,
    arrivals_done: bool,
    /// Time of the next arrival (infinity when there is none).
    t_arr: f64,
    finished: bool,
    since_poll: u32,
    interrupted: bool,
}

impl<'a> Generator<'a> {
    fn new(cfg: &'a SimConfig) -> Self {
        let mut rng = Rngs::new(cfg.seed);
        let zig = Ziggurat::shared();
        let mean_len = cfg.dist.mean();
        let src = match &cfg.arrivals {
            Arrivals::Poisson => Source::Poisson { mean_gap: mean_len * 100.0 / cfg.traffic, next: 0.0 },
            Arrivals::Trace(v) => Source::Trace { v: v.clone(), i: 0 },
            Arrivals::Closed { apps } => {
                let think = f64::from(*apps) * mean_len * 100.0 / cfg.traffic;
                let mut ready = BinaryHeap::new();
                for a in 0..*apps {
                    ready.push((std::cmp::Reverse(OrdF64(zig.sample(&mut rng.misc) * think)), a));
                }
                Source::Closed { think, ready }
            }
        };
        let target = match &cfg.arrivals {
            Arrivals::Trace(v) => v.iter().map(|a| u64::from(a.len)).sum(),
            _ => cfg.packets.max(1),
        };
        let batch = (target / u64::from(cfg.batches.max(1))).max(1);
        let apps = match cfg.arrivals {
            Arrivals::Closed { apps } => apps.max(1),
            _ => cfg.apps.max(1),
        };
        let mut g = Generator {
            cfg,
            rng,
            zig,
            src,
            apps,
            target,
            batch,
            next_batch: batch,
            seq_per_app: vec![0; apps as usize],
            class_cum: cfg
                .msg_alpha
                .iter()
                .scan(0.0, |acc, c| {
                    *acc += c.frac;
                    Some(*acc)
                })
                .collect(),
            now: 0.0,
            busy: false,
            service_end: f64::INFINITY,
            packets_in: 0,
            packets_out: 0,
            next_sample: cfg.queue_delay,
            qsum: 0.0,
            qn: 0,
            qsnap: (0.0, 0),
            qbatches: Vec::new(),
            stat_delay: 20_000.0,
            next_check: if cfg.checkpoints { 20_000.0 } else { f64::INFINITY },
            checks: Vec::new(),
            arrivals_done: false,
            t_arr: 0.0,
            finished: false,
            since_poll: 0,
            interrupted: false,
        };
        g.t_arr = g.peek_arrival();
        g
    }

    fn peek_arrival(&self) -> f64 {
        if self.arrivals_done {
            return f64::INFINITY;
        }
        match &self.src {
            Source::Poisson { next, .. } => *next,
            Source::Trace { v, i } => v.get(*i).map_or(f64::INFINITY, |a| a.time),
            Source::Closed { ready, .. } => ready.peek().map_or(f64::INFINITY, |r| r.0 .0 .0),
        }
    }

    fn close_qbatch(&mut self) {
        let dn = self.qn - self.qsnap.1;
        if dn > 0 {
            self.qbatches.push((self.qsum - self.qsnap.0) / dn as f64);
        }
        self.qsnap = (self.qsum, self.qn);
    }

    fn qlen(&self) -> f64 {
        if self.qn > 0 {
            self.qsum / self.qn as f64
        } else {
            0.0
        }
    }

    /// A closed-loop application's message was delivered at `now`: it thinks, then sends again.
    fn delivered(&mut self, app: u32) {
        if let Source::Closed { think, ready } = &mut self.src {
            let t = self.now + self.zig.sample(&mut self.rng.misc) * *think;
            ready.push((std::cmp::Reverse(OrdF64(t)), app));
        }
        self.t_arr = self.peek_arrival();
    }

    fn take(&mut self, out: &mut Path) {
        self.packets_out += 1;
        out.take(self.now);
        self.service_end = self.now + self.cfg.service.draw(self.zig, &mut self.rng.service);
    }

    /// Appends the next step's events (at least one unless finished) to `out`.
    fn step(&mut self, out: &mut Path, ctl: &Control) {
        loop {
            if self.finished {
                return;
            }
            let t_arr = self.t_arr;
            let t_srv = if self.busy { self.service_end } else { f64::INFINITY };
            let t_next = t_arr.min(t_srv);
            if t_next == f64::INFINITY {
                self.finished = true; // a trace fully delivered
                return;
            }
            // Periodic observers fire first when due; a report time ends the step.
            if self.next_sample <= t_next || self.next_check <= t_next {
                if self.fire_observer(out) {
                    return;
                }
                continue;
            }
            if t_arr <= t_srv {
                self.arrive(t_arr, out);
                if !matches!(self.cfg.arrivals, Arrivals::Trace(_)) && self.packets_in >= self.target {
                    self.finished = true;
                }
                self.poll(ctl);
            } else {
                // A service period ends: start the next packet of every queue, if any.
                self.now = t_srv;
                if self.packets_in > self.packets_out {
                    self.take(out);
                } else {
                    self.busy = false;
                    continue;
                }
            }
            return;
        }
    }

    /// Fires the periodic observers (queue-length samples, listing report times) due at or before
    /// `t`, in time order (a sample before a report time when they coincide).
    #[inline(never)]
    fn observe(&mut self, t: f64, out: &mut Path) {
        while self.next_sample <= t || self.next_check <= t {
            self.fire_observer(out);
        }
    }

    /// Fires the earlier of the next queue-length sample and the next listing report time (the
    /// sample when they coincide). True when it was a report time.
    fn fire_observer(&mut self, out: &mut Path) -> bool {
        if self.next_sample <= self.next_check {
            self.now = self.next_sample;
            self.qsum += (self.packets_in - self.packets_out) as f64;
            self.qn += 1;
            self.next_sample += self.cfg.queue_delay;
            false
        } else {
            self.now = self.next_check;
            self.checks.push((self.now, self.packets_in, self.qlen()));
            out.push(Kind::Check, NO_MSG);
            self.stat_delay *= 1.1;
            self.next_check += self.stat_delay;
            true
        }
    }

    /// Batch boundaries reached by the packets that have arrived.
    #[inline(always)]
    fn close_batches(&mut self, out: &mut Path) {
        while self.packets_in >= self.next_batch {
            out.push(Kind::Batch, NO_MSG);
            self.close_qbatch();
            self.next_batch += self.batch;
        }
    }

    /// Counts an arrival; every 65536 of them, publishes progress and honours a stop request.
    #[inline(always)]
    fn poll(&mut self, ctl: &Control) {
        self.since_poll += 1;
        if self.since_poll >= 1 << 16 {
            self.since_poll = 0;
            ctl.progress.store(self.packets_in, Ordering::Relaxed);
            if ctl.stop.load(Ordering::Relaxed) {
                self.interrupted = true;
                self.finished = true;
            }
        }
    }

    /// Poisson arrivals, one application, no §10 classes: the common case, generated by a tight
    /// loop until `out` holds `chunk` packet starts or the run ends. Produces exactly the events
    /// [`Generator::step`] would, with the same random draws, except that an arrival whose message
    /// is alone (the queue was empty and all its packets start before the next arrival) is marked
    /// [`Kind::Alone`]. A chunk ends only after the packet starts that follow an arrival, so a lone
    /// message's packets are in its own chunk.
    fn fill_poisson(&mut self, out: &mut Path, ctl: &Control, chunk: usize) {
        let Source::Poisson { mean_gap, next } = self.src else { unreachable!("Poisson source") };
        debug_assert!(self.apps == 1 && self.class_cum.is_empty());
        let zig = self.zig;
        let mut t_arr = next;
        let mut service = self.rng.service.clone();
        // The step of the last arrival, when it found the queue empty.
        let mut lone: Option<usize> = None;
        while !self.finished {
            if self.busy {
                // Service periods that end before the next arrival (ties go to the arrival): the
                // next packet of every queue starts, or the server goes idle. State in locals.
                let mut t = self.service_end;
                let mut sent = self.packets_out;
                let backlog_end = self.packets_in;
                let mut next_obs = self.next_sample.min(self.next_check);
                while t < t_arr {
                    if t >= next_obs {
                        self.packets_out = sent;
                        self.observe(t, out);
                        next_obs = self.next_sample.min(self.next_check);
                    }
                    self.now = t;
                    if sent == backlog_end {
                        self.busy = false;
                        break;
                    }
                    sent += 1;
                    out.take(t);
                    t += 0.5 + 0.5 * zig.sample(&mut service);
                }
                self.packets_out = sent;
                self.service_end = t;
                if let Some(i) = lone.take() {
                    if sent == backlog_end {
                        out.steps[i].kind = Kind::Alone;
                    }
                }
            }
            if out.times.len() >= chunk {
                break;
            }
            let t = t_arr;
            if t >= self.next_sample || t >= self.next_check {
                self.observe(t, out);
            }
            self.now = t;
            let u: f64 = self.rng.length.random();
            let len = self.cfg.dist.sample(u);
            t_arr = t + mean_gap * zig.sample(&mut self.rng.arrival);
            let seq = self.seq_per_app[0];
            self.seq_per_app[0] = seq.wrapping_add(1);
            if self.packets_in == self.packets_out {
                lone = Some(out.steps.len());
            }
            out.push(Kind::Arrive, Msg { t, len, app: 0, seq, class: 0 });
            self.packets_in += u64::from(len);
            if !self.busy {
                self.busy = true;
                self.packets_out += 1;
                out.take(t);
                self.service_end = t + 0.5 + 0.5 * zig.sample(&mut service);
            }
            self.close_batches(out);
            if self.packets_in >= self.target {
                self.finished = true;
            }
            self.poll(ctl);
        }
        self.rng.service = service;
        self.src = Source::Poisson { mean_gap, next: t_arr };
        self.t_arr = t_arr;
    }

    #[inline]
    fn arrive(&mut self, t: f64, out: &mut Path) {
        self.now = t;
        let apps = self.apps;
        let (len, app) = match &mut self.src {
            Source::Poisson { mean_gap, next } => {
                let u: f64 = self.rng.length.random();
                let len = self.cfg.dist.sample(u);
                let app = if apps > 1 { self.rng.misc.random_range(0..apps) } else { 0 };
                *next = t + *mean_gap * self.zig.sample(&mut self.rng.arrival);
                (len, app)
            }
            Source::Trace { v, i } => {
                let a = v[*i];
                *i += 1;
                if *i == v.len() {
                    self.arrivals_done = true;
                }
                (a.len, a.app.min(apps - 1))
            }
            Source::Closed { ready, .. } => {
                let (_, app) = ready.pop().expect("peeked");
                let u: f64 = self.rng.length.random();
                (self.cfg.dist.sample(u), app)
            }
        };
        let class = if self.class_cum.is_empty() {
            0
        } else {
            let u: f64 = self.rng.misc.random();
            self.class_cum.iter().position(|&c| u < c).unwrap_or(self.class_cum.len() - 1) as u32
        };
        let seq = self.seq_per_app[app as usize];
        self.seq_per_app[app as usize] = seq.wrapping_add(1);
        self.t_arr = match &self.src {
            Source::Poisson { next, .. } => *next,
            _ => self.peek_arrival(),
        };
        out.push(Kind::Arrive, Msg { t, len, app, seq, class });
        self.packets_in += u64::from(len);
        if !self.busy {
            self.busy = true;
            self.take(out);
        }
        self.close_batches(out);
    }
}

/// Packet starts generated before every lane replays them (small enough to stay in cache).
const CHUNK: usize = 1 << 12;

/// Runs one configuration on one thread and returns the cumulative statistics
/// (the same as [`run_threads`] with one thread).
pub fn run(cfg: &SimConfig, ctl: &Control) -> RunResult {
    run_threads(cfg, ctl, 1)
}

/// Runs one configuration with up to `threads` threads and returns the cumulative statistics,
/// bit-identical for every thread count.
///
/// Open loops generate the shared sample path once, in chunks, and replay each chunk through every
/// strategy (lane), which keeps each strategy's state in cache. With more than one thread the lanes
/// are split into groups, one per thread: the calling thread generates each chunk and replays its
/// own group, the other threads replay theirs from the same chunk. Closed
/// loops (§2) feed each strategy its own path, one event at a time, with the same seed; their
/// strategies are independent and are shared out over the threads.
pub fn run_threads(cfg: &SimConfig, ctl: &Control, threads: usize) -> RunResult {
    let max_len = match &cfg.arrivals {
        Arrivals::Trace(v) => v.iter().map(|a| a.len).max().unwrap_or(1),
        _ => cfg.dist.max_len(),
    };
    if let Arrivals::Closed { .. } = cfg.arrivals {
        let n = cfg.strategies.len();
        let threads = threads.clamp(1, n.max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let closed_one = || {
            let mut mine = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return mine;
                }
                mine.push((i, run_closed(cfg, ctl, max_len, &cfg.strategies[i])));
            }
        };
        let mut results: Vec<Option<RunResult>> = (0..n).map(|_| None).collect();
        std::thread::scope(|s| {
            let workers: Vec<_> = (1..threads).map(|_| s.spawn(closed_one)).collect();
            let mut all = closed_one();
            for w in workers {
                all.extend(w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            for (i, r) in all {
                results[i] = Some(r);
            }
        });
        let runs = results.into_iter().map(|r| r.expect("every strategy ran")).collect();
        return crate::questions::merge_closed(runs).expect("at least one strategy");
    }
    run_open(cfg, ctl, max_len, true, threads)
}

/// One strategy of a closed loop on its own sample path.
fn run_closed(cfg: &SimConfig, ctl: &Control, max_len: u32, s: &Strategy) -> RunResult {
    let mut lane = Lane::new(s, cfg, max_len);
    let mut gen = Generator::new(cfg);
    let mut buf = Path::default();
    let mut delivered = Vec::with_capacity(16);
    while !gen.finished {
        buf.clear();
        gen.step(&mut buf, ctl);
        buf.push(Kind::End, NO_MSG);
        lane.replay(&buf, &mut delivered);
        for app in delivered.drain(..) {
            gen.delivered(app);
        }
    }
    buf.clear();
    buf.push(Kind::Batch, NO_MSG);
    buf.push(Kind::End, NO_MSG);
    gen.close_qbatch();
    lane.replay(&buf, &mut delivered);
    // Each strategy had its own path, so qlen is that strategy's own.
    finish(cfg, ctl, &gen, std::slice::from_ref(&lane))
}

/// Generates the next chunk of the shared path into `buf` (cleared first); the last chunk of the
/// run closes the final batch. Every chunk ends with an `End` step.
fn next_chunk(gen: &mut Generator<'_>, buf: &mut Path, ctl: &Control, fast: bool) {
    buf.clear();
    if fast {
        gen.fill_poisson(buf, ctl, CHUNK);
    } else {
        while buf.times.len() < CHUNK && !gen.finished {
            gen.step(buf, ctl);
        }
    }
    if gen.finished {
        buf.push(Kind::Batch, NO_MSG);
        gen.close_qbatch();
    }
    buf.push(Kind::End, NO_MSG);
}

/// An open loop in lock step on `threads` threads; `allow_fast` lets the common case use
/// [`Generator::fill_poisson`] (tests turn it off to compare against the general generator).
fn run_open(cfg: &SimConfig, ctl: &Control, max_len: u32, allow_fast: bool, threads: usize) -> RunResult {
    let mut lanes: Vec<Lane> = cfg.strategies.iter().map(|s| Lane::new(s, cfg, max_len)).collect();
    let mut gen = Generator::new(cfg);
    // The fast generator draws the report's service times only; other models take the general one.
    let fast = allow_fast
        && matches!(cfg.arrivals, Arrivals::Poisson)
        && gen.apps == 1
        && gen.class_cum.is_empty()
        && cfg.service == Service::Report;
    let threads = threads.clamp(1, lanes.len().max(1));
    let mut buf = Path::default();
    let mut none = Vec::new();
    if threads == 1 {
        while !gen.finished {
            next_chunk(&mut gen, &mut buf, ctl, fast);
            for lane in &mut lanes {
                lane.replay(&buf, &mut none);
            }
        }
        return finish(cfg, ctl, &gen, &lanes);
    }
    // Calibration: the first chunks run on this thread, timing the generator and every lane, so
    // that the lanes can be split into groups of about equal cost (the split changes no result).
    let mut gen_ns = Vec::with_capacity(CALIBRATION_CHUNKS);
    let mut lane_ns: Vec<Vec<u64>> = vec![Vec::with_capacity(CALIBRATION_CHUNKS); lanes.len()];
    while !gen.finished && gen_ns.len() < CALIBRATION_CHUNKS {
        let t0 = Instant::now();
        next_chunk(&mut gen, &mut buf, ctl, fast);
        gen_ns.push(t0.elapsed().as_nanos() as u64);
        for (lane, ns) in lanes.iter_mut().zip(&mut lane_ns) {
            let t0 = Instant::now();
            lane.replay(&buf, &mut none);
            ns.push(t0.elapsed().as_nanos() as u64);
        }
    }
    if !gen.finished {
        let cost: Vec<u64> = lane_ns.iter_mut().map(|v| median_u64(v)).collect();
        let groups = split_lanes(&cost, median_u64(&mut gen_ns), threads);
        replay_parallel(&mut gen, &mut lanes, &groups, ctl, fast);
    }
    finish(cfg, ctl, &gen, &lanes)
}

/// Chunks replayed on the generating thread alone to measure each lane's cost.
const CALIBRATION_CHUNKS: usize = 16;

/// Chunks a worker may have queued behind the one it is replaying (bounds memory and lead).
const QUEUED_CHUNKS: usize = 4;

fn median_u64(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Splits lanes of the given costs into `groups` groups of about equal total cost (longest
/// processing time first); group 0 also carries `gen_cost`, the generator's. Returns the lane
/// indices of each group, in increasing order; groups may be empty only if there are fewer lanes.
fn split_lanes(cost: &[u64], gen_cost: u64, groups: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..cost.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(cost[i]), i));
    let mut load = vec![0u64; groups.max(1)];
    load[0] = gen_cost;
    let mut out = vec![Vec::new(); groups.max(1)];
    for i in order {
        let g = (0..load.len()).min_by_key(|&g| (load[g], g)).expect("at least one group");
        load[g] += cost[i].max(1);
        out[g].push(i);
    }
    for g in &mut out {
        g.sort_unstable();
    }
    out
}

/// Generates the rest of the path on this thread and replays it through `lanes` split into
/// `groups`: this thread replays group 0 after generating each chunk, one worker thread per other
/// group replays the same chunk (shared read-only through an `Arc`). Each lane sees the same
/// chunks in the same order as on one thread, so every result is the same bit for bit.
fn replay_parallel(gen: &mut Generator<'_>, lanes: &mut [Lane], groups: &[Vec<usize>], ctl: &Control, fast: bool) {
    let mut refs: Vec<Option<&mut Lane>> = lanes.iter_mut().map(Some).collect();
    let mut groups =
        groups.iter().map(|g| -> Vec<&mut Lane> { g.iter().map(|&i| refs[i].take().expect("each lane in one group")).collect() });
    let mut mine = groups.next().unwrap_or_default();
    let theirs: Vec<Vec<&mut Lane>> = groups.collect();
    std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        for mut group in theirs {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<Path>>(QUEUED_CHUNKS);
            senders.push(tx);
            workers.push(s.spawn(move || {
                let mut none = Vec::new();
                for chunk in rx {
                    for lane in &mut group {
                        lane.replay(&chunk, &mut none);
                    }
                }
            }));
        }
        // Chunks in flight, oldest first; one whose workers are all done is reused.
        let mut pool: std::collections::VecDeque<Arc<Path>> = std::collections::VecDeque::new();
        let mut none = Vec::new();
        'gen: while !gen.finished {
            let mut chunk = match pool.pop_front() {
                Some(mut c) => {
                    if Arc::get_mut(&mut c).is_some() {
                        c
                    } else {
                        pool.push_front(c);
                        Arc::new(Path::default())
                    }
                }
                None => Arc::new(Path::default()),
            };
            next_chunk(gen, Arc::get_mut(&mut chunk).expect("not shared"), ctl, fast);
            for tx in &senders {
                if tx.send(Arc::clone(&chunk)).is_err() {
                    break 'gen; // a worker panicked: joined below
                }
            }
            for lane in &mut mine {
                lane.replay(&chunk, &mut none);
            }
            pool.push_back(chunk);
        }
        drop(senders);
        for w in workers {
            w.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });
}

fn finish(cfg: &SimConfig, ctl: &Control, gen: &Generator<'_>, lanes: &[Lane]) -> RunResult {
    ctl.progress.store(gen.packets_in, Ordering::Relaxed);
    let ctl_packets = gen.packets_in;
    let qlen = gen.qlen();
    let checkpoints = gen
        .checks
        .iter()
        .enumerate()
        .map(|(k, &(t, pin, q))| Checkpoint {
            time_tu: t,
            packets_in: pin,
            rows: lanes
                .iter()
                .filter_map(|l| {
                    let (out, lens, all) = l.stats.checks.get(k)?.clone();
                    Some((listing_alpha(&l.strategy), q, out, lens, all))
                })
                .collect(),
            row_packets_in: Vec::new(),
        })
        .collect();
    RunResult {
        traffic_pct: cfg.traffic,
        seed: cfg.seed,
        packets_in: ctl_packets,
        sim_time_tu: gen.now,
        qlen_pkts: qlen,
        qlen_ci95_pkts: ci95(&gen.qbatches),
        qlen_batch_means: gen.qbatches.clone(),
        strategies: lanes
            .iter()
            .map(|l| {
                let mut s = l.result(qlen);
                crate::questions::fill_path_fields(&mut s, cfg.traffic, ctl_packets, gen.now, ci95(&gen.qbatches));
                s
            })
            .collect(),
        checkpoints,
        interrupted: gen.interrupted,
        closed_apps: match cfg.arrivals {
            Arrivals::Closed { apps } => Some(apps),
            _ => None,
        },
        apps: gen.apps,
        in_order: cfg.in_order,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_strategy;

    /// Equal, numbers to 1e-12 relative: the two generators add a service time to the clock in a
    /// different order, so latencies can differ in the last bit.
    fn same(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!((x - y).abs() <= 1e-12 * x.abs().max(y.abs()), "{at}: {x} vs {y}");
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len(), "{at}");
                x.iter().zip(y).enumerate().for_each(|(i, (x, y))| same(x, y, &format!("{at}[{i}]")));
            }
            (Value::Object(x), Value::Object(y)) => {
                assert_eq!(x.len(), y.len(), "{at}");
                x.iter().for_each(|(k, v)| same(v, &y[k], &format!("{at}.{k}")));
            }
            _ => assert_eq!(a, b, "{at}"),
        }
    }

    /// The fast generator, whose lone messages bypass the policies, gives exactly the results of
    /// the general generator, at loads where few or most messages are alone; with tracking α,
    /// §11 ordering and α = 0 too.
    #[test]
    fn fast_path_with_lone_messages_equals_the_general_path() {
        let mut strategies = report_defaults();
        strategies.push(Strategy::Track { low: 1.0, high: 100.0, gain: 1.0 });
        strategies.push(parse_strategy("0").unwrap());
        for (traffic, seed) in [(0.5, 1), (30.0, 2), (70.0, 3), (96.0, 4)] {
            for in_order in [false, true] {
                let cfg = SimConfig { strategies: strategies.clone(), in_order, ..SimConfig::report(traffic, 150_000, seed) };
                let ctl = Control::default();
                let max_len = cfg.dist.max_len();
                let fast = serde_json::to_value(run_open(&cfg, &ctl, max_len, true, 1)).unwrap();
                let general = serde_json::to_value(run_open(&cfg, &ctl, max_len, false, 1)).unwrap();
                same(&fast, &general, &format!("traffic {traffic}%, in order {in_order}"));
            }
        }
    }

    /// The configurations the speed work diffs for bit-identity: the report's model with report
    /// times; §10 classes, §11 order, tracking, prio and applications; a custom distribution with
    /// the general generator; a trace; a closed loop.
    fn configs() -> Vec<(&'static str, SimConfig)> {
        let mut strategies = report_defaults();
        strategies.push(Strategy::Track { low: 1.0, high: 100.0, gain: 1.0 });
        let mixed: Vec<Strategy> =
            ["RR'", "FIFO", "10", "track:1:100", "prio", "SF"].iter().map(|s| parse_strategy(s).unwrap()).collect();
        let trace: Vec<TraceArrival> = (0..60_000)
            .map(|i| TraceArrival { time: f64::from(i) * 5.3, len: 1 + (i * 7 % 11) as u32, app: (i % 3) as u32 })
            .collect();
        vec![
            ("report 95% with report times", SimConfig { checkpoints: true, strategies, ..SimConfig::report(95.0, 400_000, 1) }),
            ("report 50%", SimConfig::report(50.0, 300_000, 2)),
            (
                "apps, in order, msg-alpha, prio, tracking",
                SimConfig {
                    strategies: mixed.clone(),
                    apps: 4,
                    in_order: true,
                    msg_alpha: vec![AlphaClass { alpha: 1.0, frac: 0.5 }, AlphaClass { alpha: 100.0, frac: 0.5 }],
                    ..SimConfig::report(60.0, 300_000, 3)
                },
            ),
            (
                "custom distribution",
                SimConfig {
                    dist: LengthDist::new(&[(1, 3, 50.0), (8, 12, 40.0), (30, 30, 10.0)]).unwrap(),
                    ..SimConfig::report(90.0, 300_000, 4)
                },
            ),
            ("trace", SimConfig { arrivals: Arrivals::Trace(Arc::new(trace)), apps: 3, ..SimConfig::report(90.0, 1, 5) }),
            ("closed loop", SimConfig { arrivals: Arrivals::Closed { apps: 8 }, ..SimConfig::report(80.0, 100_000, 6) }),
        ]
    }

    /// Replaying the lanes on several threads gives the same results, bit for bit, as one thread.
    #[test]
    fn every_thread_count_gives_bit_identical_results() {
        for (name, cfg) in configs() {
            let ctl = Control::default();
            let one = serde_json::to_string(&run_threads(&cfg, &ctl, 1)).unwrap();
            for threads in [2, 3, 5, 13, 64] {
                let many = serde_json::to_string(&run_threads(&cfg, &ctl, threads)).unwrap();
                assert!(one == many, "{name}: {threads} threads differ from one");
            }
        }
        // The general generator too (what non-Poisson or multi-application runs use).
        let cfg = SimConfig::report(95.0, 300_000, 7);
        let ctl = Control::default();
        let max_len = cfg.dist.max_len();
        let one = serde_json::to_string(&run_open(&cfg, &ctl, max_len, false, 1)).unwrap();
        let two = serde_json::to_string(&run_open(&cfg, &ctl, max_len, false, 2)).unwrap();
        assert!(one == two, "general generator: 2 threads differ from one");
    }

    /// The split puts every lane in exactly one group and balances the costs.
    #[test]
    fn lanes_are_split_into_balanced_groups() {
        let cost = [5, 9, 1, 7, 3, 3, 8, 2, 6, 4, 10, 1, 5];
        for groups in 1..=14 {
            let g = split_lanes(&cost, 12, groups);
            assert_eq!(g.len(), groups);
            let mut all: Vec<usize> = g.iter().flatten().copied().collect();
            all.sort_unstable();
            assert_eq!(all, (0..cost.len()).collect::<Vec<_>>(), "{groups} groups");
            if groups == 2 {
                let load0: u64 = 12 + g[0].iter().map(|&i| cost[i]).sum::<u64>();
                let load1: u64 = g[1].iter().map(|&i| cost[i]).sum();
                assert!(load0.abs_diff(load1) <= 10, "{load0} vs {load1}");
            }
        }
    }
}
