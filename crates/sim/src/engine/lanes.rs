//! A lane: one strategy replaying the shared sample path through its policy.

use schedlab_policy::rr::{Fifo, RoundRobin, RoundRobinHead};
use schedlab_policy::{Alpha, AnyPolicy, BuildOptions, FlowWeight, LeanAlpha, Message, Policy};
use schedlab_report::LogHist;

use super::generator::Path;
use super::statistics::{class_len_results, Acc, Keys, LaneStats, LatStats, StrategyResult};
use super::Kind;
use super::{Msg, SimConfig};
use crate::model::{listing_alpha, Strategy};

#[derive(Clone)]
pub(super) struct Lane {
    /// §10 class α values (for the per-class tables) and §11 asked for.
    class_alphas: Vec<f64>,
    pub(super) in_order: bool,
    pub(super) strategy: Strategy,
    policy: AnyPolicy<Msg>,
    /// The lean form of `policy` when it is a fixed-α alpha policy the lean lane covers (it then
    /// replays in place of `policy`, which stays untouched).
    lean: Option<LeanAlpha<f64>>,
    /// `policy` carrying only a message's arrival time and length, when it is FIFO or a round
    /// robin and the lane keeps no per-class or per-application statistics (it then replays in
    /// place of `policy`, which stays untouched): smaller queue entries, no §10 α to look up.
    plain: Option<AnyPolicy<Tag>>,
    pub(super) stats: LaneStats,
}

/// What a plain lane's queue carries per message (16 bytes, as `len` and `app` share the word).
#[derive(Clone, Copy, Debug)]
struct Tag {
    t: f64,
    len: u32,
    app: u32,
}

/// What a lane's queue carries per message: the whole message, or for a plain lane only what
/// its latency needs. [`replay`] is written once over it.
trait Carried: Copy {
    /// What is kept of `m`.
    fn carry(m: Msg) -> Self;
    /// The queued form of `m`, with its §10 class α where the lane keeps classes.
    fn queued(m: Msg, st: &LaneStats) -> Message<Self>;
    /// Records its delivery at `now`.
    fn deliver(self, st: &mut LaneStats, now: f64);
    /// Its application (closed loops).
    fn app(self) -> u32;
}

impl Carried for Msg {
    #[inline(always)]
    fn carry(m: Msg) -> Msg {
        m
    }
    #[inline(always)]
    fn queued(m: Msg, st: &LaneStats) -> Message<Msg> {
        let mut msg = Message::new(m, m.app, m.len);
        if let Some(a) = st.class_alpha.get(m.class as usize) {
            msg.alpha = Some(*a);
        }
        msg
    }
    #[inline(always)]
    fn deliver(self, st: &mut LaneStats, now: f64) {
        st.delivered(self, now);
    }
    #[inline(always)]
    fn app(self) -> u32 {
        self.app
    }
}

impl Carried for Tag {
    #[inline(always)]
    fn carry(m: Msg) -> Tag {
        Tag { t: m.t, len: m.len, app: m.app }
    }
    #[inline(always)]
    fn queued(m: Msg, _: &LaneStats) -> Message<Tag> {
        Message::new(Tag::carry(m), m.app, m.len)
    }
    #[inline(always)]
    fn deliver(self, st: &mut LaneStats, now: f64) {
        st.delivered_plain(self.t, self.len, now);
    }
    #[inline(always)]
    fn app(self) -> u32 {
        self.app
    }
}

impl Lane {
    /// A lane for strategy `s`; `lengths` are the message lengths that can occur (empty when
    /// unknown), and `lean` allows the lean alpha lane where it applies.
    pub(super) fn new(s: &Strategy, cfg: &SimConfig, max_len: u32, lengths: &[u32], lean: bool) -> Lane {
        let fallback = cfg.msg_alpha.first().map(|c| c.alpha).unwrap_or(schedlab_policy::DEFAULT_ALPHA);
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
        // Lean lanes keep only a message's arrival time and length: not for per-class or
        // per-application statistics.
        let extra = !cfg.msg_alpha.is_empty() || apps > 0;
        let plain = match s {
            Strategy::Fifo | Strategy::RoundRobin | Strategy::RoundRobinHead if lean && !extra => Some(s.build(&opts)),
            _ => None,
        };
        let lean = match &policy {
            AnyPolicy::Alpha(a) if lean && !extra && class_alpha.is_empty() => LeanAlpha::new(a.config(), lengths),
            _ => None,
        };
        let keys = Keys::for_config(cfg);
        Lane {
            lean,
            plain,
            class_alphas: cfg.msg_alpha.iter().map(|c| c.alpha).collect(),
            in_order: cfg.in_order,
            strategy: s.clone(),
            policy,
            stats: LaneStats {
                by_len: (0..keys.slots(max_len)).map(|_| Acc::new()).collect(),
                keys,
                extra,
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
                pending: Vec::new(),
            },
        }
    }

    /// True when the lane replays through the lean alpha lane.
    pub(super) fn is_lean(&self) -> bool {
        self.lean.is_some()
    }

    /// True when the lane replays through a plain policy (arrival time and length only).
    pub(super) fn is_plain(&self) -> bool {
        self.plain.is_some()
    }

    /// Which lanes [`replay_group`] replays together with this one: 0 the lean alpha lanes, 1 the
    /// plain lanes, `None` when it replays alone.
    pub(super) fn family(&self) -> Option<usize> {
        if self.is_lean() {
            Some(0)
        } else if self.is_plain() {
            Some(1)
        } else {
            None
        }
    }

    /// Replays a run of events; statically dispatched per policy type so the loop stays tight.
    pub(super) fn replay(&mut self, path: &Path, delivered: &mut Vec<u32>) {
        let st = &mut self.stats;
        if let Some(p) = &mut self.lean {
            debug_assert!(delivered.capacity() == 0, "closed loops do not use lean lanes");
            return replay_joint(&mut [(p, st)][..], path);
        }
        if let Some(p) = &mut self.plain {
            debug_assert!(delivered.capacity() == 0, "closed loops do not use plain lanes");
            return match p {
                AnyPolicy::Fifo(p) => replay_joint(&mut [(p, st)][..], path),
                AnyPolicy::RoundRobin(p) => replay_joint(&mut [(p, st)][..], path),
                AnyPolicy::RoundRobinHead(p) => replay_joint(&mut [(p, st)][..], path),
                other => replay::<_, _, false>(other, st, path, delivered),
            };
        }
        if delivered.capacity() > 0 {
            // Closed loops: collect the applications whose message was delivered.
            return replay::<_, _, true>(&mut self.policy, st, path, delivered);
        }
        match &mut self.policy {
            AnyPolicy::Fifo(p) => replay::<_, _, false>(p, st, path, delivered),
            AnyPolicy::RoundRobin(p) => replay::<_, _, false>(p, st, path, delivered),
            AnyPolicy::RoundRobinHead(p) => replay::<_, _, false>(p, st, path, delivered),
            AnyPolicy::Alpha(p) => replay::<_, _, false>(p, st, path, delivered),
            AnyPolicy::Track(p) => replay::<_, _, false>(p, st, path, delivered),
            #[allow(unreachable_patterns)]
            other => replay::<_, _, false>(other, st, path, delivered),
        }
    }

    /// The lane's results; `lone` holds the generator's histograms of lone messages per length
    /// (which the joint lanes count without recording them).
    pub(super) fn result(&self, qlen: f64, lone: &[LogHist]) -> StrategyResult {
        let st = &self.stats;
        let lone = (self.lean.is_some() || self.plain.is_some()).then_some(lone);
        let by_len: Vec<LatStats> = st
            .by_len
            .iter()
            .enumerate()
            .filter(|(_, a)| a.n() > 0)
            .map(|(l, a)| match &st.keys {
                Keys::Lengths => a.stats_with(l as u32, lone.and_then(|v| v.get(l))),
                Keys::Buckets(b) => LatStats { bucket: Some(b[l]), ..a.stats(b[l].high) },
            })
            .collect();
        let mut overall = st.overall(lone).stats(0);
        if overall.slowdown_mean.is_nan() && overall.count > 0 {
            // Per length: the mean slowdown over all messages from each length's.
            let sum: f64 = by_len.iter().map(|s| s.count as f64 * s.slowdown_mean).sum();
            overall.slowdown_mean = sum / overall.count as f64;
        }
        let periods: Vec<f64> = by_len.iter().map(|s| s.slowdown_mean).collect();
        StrategyResult {
            label: self.strategy.label(),
            listing_alpha: listing_alpha(&self.strategy),
            period_min: periods.iter().copied().fold(f64::INFINITY, f64::min),
            period_max: periods.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            by_len,
            overall,
            by_class: st.by_class.iter().enumerate().map(|(i, a)| a.stats(i as u32)).collect(),
            reordered: st.reordered,
            packets_out: st.packets_out,
            qlen_pkts: qlen,
            clock_renormalisations: match (&self.lean, &self.policy) {
                (Some(l), _) => l.renormalisations(),
                (None, AnyPolicy::Alpha(a)) => a.renormalisations(),
                _ => 0,
            },
            by_class_len: class_len_results(&st.by_class_len, &self.class_alphas),
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

/// The hot loop: one lane through a chunk of the path. With `COLLECT` (closed loops), the
/// applications whose message was delivered are pushed to `delivered`.
#[inline(never)]
fn replay<C: Carried, P: Policy<C>, const COLLECT: bool>(p: &mut P, st: &mut LaneStats, path: &Path, delivered: &mut Vec<u32>) {
    let mut served = 0;
    // A lone message that bypassed the policy, and its packets not yet started.
    let mut alone: Option<(Msg, usize)> = None;
    for (k, s) in path.steps.iter().enumerate() {
        let upto = s.before as usize;
        if upto > served {
            let times = &path.times[served..upto];
            st.packets_out += times.len() as u64;
            match &mut alone {
                None => serve::<C, P, COLLECT>(p, st, times, delivered),
                Some((m, left)) => {
                    if lone_advance(left, times.len()) {
                        C::carry(*m).deliver(st, times[times.len() - 1]);
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
            Kind::Alone if p.bypass(u64::from(s.msg.len)) => match lone_sent_whole(path, k, upto, s.msg.len) {
                Some(end) => {
                    st.packets_out += u64::from(s.msg.len);
                    C::carry(s.msg).deliver(st, path.times[end - 1]);
                    if COLLECT {
                        delivered.push(s.msg.app);
                    }
                    served = end;
                }
                None => alone = Some((s.msg, s.msg.len as usize)),
            },
            Kind::Arrive | Kind::Alone => p.enqueue(C::queued(s.msg, st)).expect("validated message"),
            other => st.event(other),
        }
    }
    debug_assert_eq!(served, path.times.len(), "a chunk ends with an End step");
    debug_assert!(alone.is_none(), "a lone message is sent within its chunk");
}

/// Counts `n` more packets of a lone message started (`left` of them were not); true once its
/// last packet has.
#[inline(always)]
fn lone_advance(left: &mut usize, n: usize) -> bool {
    debug_assert!(n <= *left, "a lone message's packets run until it is sent");
    *left -= n;
    *left == 0
}

/// Where the packets of the lone message of step `k`, which start at `upto`, end when nothing
/// happens before its last packet starts (the usual case): it is then sent at once.
#[inline(always)]
fn lone_sent_whole(path: &Path, k: usize, upto: usize, len: u32) -> Option<usize> {
    let end = upto + len as usize;
    path.steps.get(k + 1).is_some_and(|n| n.before as usize >= end).then_some(end)
}

/// Replays a chunk through a group of lanes: the lean alpha lanes together, step by step (each
/// step is decoded once for all of them, and their branches on it are taken once), the plain
/// FIFO, RR and RR' lanes together likewise, each by its own type, the others one by one. Every
/// lane sees the same calls in the same order as when replayed alone. (One walk through the chunk
/// for all of them was 2-3% slower than these two.)
pub(super) fn replay_group<'a>(lanes: impl IntoIterator<Item = &'a mut Lane>, path: &Path, none: &mut Vec<u32>) {
    let mut lean: Vec<(&mut LeanAlpha<f64>, &mut LaneStats)> = Vec::new();
    let mut fifo: Vec<(&mut Fifo<Tag>, &mut LaneStats)> = Vec::new();
    let mut rr: Vec<(&mut RoundRobin<Tag>, &mut LaneStats)> = Vec::new();
    let mut rr_head: Vec<(&mut RoundRobinHead<Tag>, &mut LaneStats)> = Vec::new();
    for lane in lanes {
        match lane {
            Lane { lean: Some(p), stats, .. } => lean.push((p, stats)),
            Lane { plain: Some(AnyPolicy::Fifo(p)), stats, .. } => fifo.push((p, stats)),
            Lane { plain: Some(AnyPolicy::RoundRobin(p)), stats, .. } => rr.push((p, stats)),
            Lane { plain: Some(AnyPolicy::RoundRobinHead(p)), stats, .. } => rr_head.push((p, stats)),
            other => other.replay(path, none),
        }
    }
    match lean.len() {
        0 => {}
        1 => replay_joint(&mut lean[..], path),
        _ => {
            // By α, shortest-first last: from some lane on, every lane agrees with
            // shortest-first in a given busy period (see `Lean`).
            lean.sort_by_key(|(p, _)| p.fixed_alpha().unwrap_or(i64::MAX));
            replay_joint(&mut Lean::new(&mut lean), path);
        }
    }
    if fifo.len() + rr.len() + rr_head.len() > 0 {
        replay_joint(&mut (&mut fifo[..], &mut (&mut rr[..], &mut rr_head[..])), path);
    }
}

/// What [`replay_joint`] asks of a lane's scheduler: open loops, messages known by arrival time
/// and length, lone messages always bypassed.
trait Joint {
    /// A message of `len` packets that arrived at `t` joins the queue.
    fn join(&mut self, t: f64, len: u32);
    /// Sends one packet at each of `times` (there are that many), recording each message that
    /// completes in `st`.
    fn serve(&mut self, times: &[f64], st: &mut LaneStats);
    /// A lone message of `len` packets is sent whole while nothing waits.
    fn skip(&mut self, len: u32);
}

impl Joint for LeanAlpha<f64> {
    #[inline(always)]
    fn join(&mut self, t: f64, len: u32) {
        self.enqueue(t, len);
    }
    #[inline(always)]
    fn serve(&mut self, times: &[f64], st: &mut LaneStats) {
        let got = self.dequeue_many(times.len() as u64, |i, t, len| st.delivered_plain(t, len, times[i as usize]));
        debug_assert_eq!(got, times.len() as u64, "lock step: every queue is busy together");
    }
    #[inline(always)]
    fn skip(&mut self, len: u32) {
        self.bypass(u64::from(len));
    }
}

/// [`Joint`] for the policies of the plain lanes, each with its own `enqueue`, bulk dequeue and
/// `bypass` inlined.
macro_rules! plain_joint {
    ($($policy:ident),*) => {$(
        impl Joint for $policy<Tag> {
            #[inline(always)]
            fn join(&mut self, t: f64, len: u32) {
                self.enqueue(Message::new(Tag { t, len, app: 0 }, 0, len)).expect("validated message");
            }
            #[inline(always)]
            fn serve(&mut self, times: &[f64], st: &mut LaneStats) {
                serve::<Tag, _, false>(self, st, times, &mut Vec::new());
            }
            #[inline(always)]
            fn skip(&mut self, len: u32) {
                let bypassed = self.bypass(u64::from(len));
                debug_assert!(bypassed, "FIFO and round robin bypass lone messages");
            }
        }
    )*};
}
plain_joint!(Fifo, RoundRobin, RoundRobinHead);

/// Lanes that [`replay_joint`] replays together: the lanes of one [`Joint`] kind, or two groups.
/// Each kind's lanes are dispatched statically, and each loop over them runs as many times as the
/// kind has lanes (for the report's FIFO, RR and RR', once each).
trait Group {
    /// Sends one packet at each of `times` in every lane.
    fn serve(&mut self, times: &[f64]);
    /// A lone message that arrived at `t`, of `len` packets, was sent (its last packet started at
    /// `now`).
    fn lone(&mut self, t: f64, len: u32, now: f64);
    /// A lone message of `len` packets is bypassed.
    fn skip(&mut self, len: u32);
    /// A message of `len` packets that arrived at `t` joins every lane's queue.
    fn join(&mut self, t: f64, len: u32);
    /// A batch boundary, report time or chunk end, in every lane's statistics; `sent` packets
    /// started since the previous one in this chunk. (Every lane sends every packet of the path,
    /// so the lanes count them here, not at every packet start.)
    fn event(&mut self, kind: Kind, sent: u64);
    /// True when the lanes would share a busy period beginning with the next arrival: every
    /// queue is empty and the group shares periods.
    #[inline(always)]
    fn shares_periods(&self) -> bool {
        false
    }
    /// A busy period of `packets` packets whose first and last arrivals are `spread` packet
    /// starts apart begins with the next arrival (every queue is empty).
    #[inline(always)]
    fn begin_period(&mut self, _packets: u64, _spread: u64) {}
}

impl<J: Joint> Group for [(&mut J, &mut LaneStats)] {
    #[inline(always)]
    fn serve(&mut self, times: &[f64]) {
        for (p, st) in self.iter_mut() {
            p.serve(times, st);
        }
    }
    #[inline(always)]
    fn lone(&mut self, t: f64, len: u32, now: f64) {
        for (_, st) in self.iter_mut() {
            st.delivered_lone(t, len, now);
        }
    }
    #[inline(always)]
    fn skip(&mut self, len: u32) {
        for (p, _) in self.iter_mut() {
            p.skip(len);
        }
    }
    #[inline(always)]
    fn join(&mut self, t: f64, len: u32) {
        for (p, _) in self.iter_mut() {
            p.join(t, len);
        }
    }
    #[inline(always)]
    fn event(&mut self, kind: Kind, sent: u64) {
        for (_, st) in self.iter_mut() {
            st.packets_out += sent;
            st.event(kind);
        }
    }
}

impl<A: Group + ?Sized, B: Group + ?Sized> Group for (&mut A, &mut B) {
    #[inline(always)]
    fn serve(&mut self, times: &[f64]) {
        self.0.serve(times);
        self.1.serve(times);
    }
    #[inline(always)]
    fn lone(&mut self, t: f64, len: u32, now: f64) {
        self.0.lone(t, len, now);
        self.1.lone(t, len, now);
    }
    #[inline(always)]
    fn skip(&mut self, len: u32) {
        self.0.skip(len);
        self.1.skip(len);
    }
    #[inline(always)]
    fn join(&mut self, t: f64, len: u32) {
        self.0.join(t, len);
        self.1.join(t, len);
    }
    #[inline(always)]
    fn event(&mut self, kind: Kind, sent: u64) {
        self.0.event(kind, sent);
        self.1.event(kind, sent);
    }
    #[inline(always)]
    fn shares_periods(&self) -> bool {
        self.0.shares_periods() || self.1.shares_periods()
    }
    #[inline(always)]
    fn begin_period(&mut self, packets: u64, spread: u64) {
        self.0.begin_period(packets, spread);
        self.1.begin_period(packets, spread);
    }
}

/// The lean alpha lanes of a group, sorted by α (shortest-first last), sharing busy periods.
///
/// In a busy period (from an arrival to empty queues until they are empty again) whose first and
/// last arrivals are D packet starts apart, every lane with α > D sends the messages exactly as
/// shortest-first does ([`LeanAlpha::agrees_with_shortest_first`]). So the first of those lanes
/// replays the period, and the ones after it copy its deliveries (at the period's end, or before
/// an event within it) and move their clocks past it ([`LeanAlpha::skip_busy_period`]): they see
/// the same deliveries in the same order as when replaying, so every statistic is the same bit
/// for bit. At 50% traffic most busy periods are a few messages a packet or two apart, and most
/// of the report's ten alpha lanes share them (3-4% less time on one core); at 90-95% few do.
struct Lean<'g, 'l> {
    lanes: &'g mut [(&'l mut LeanAlpha<f64>, &'l mut LaneStats)],
    /// The lanes that replay: all, or within a shared busy period those up to the one whose
    /// deliveries the others copy.
    active: usize,
    /// Packets of the shared busy period not yet started (0: none in progress).
    left: u64,
    /// The shared busy period's packets and the messages that have joined it.
    packets: u64,
    messages: u64,
    /// Where the replaying lane's deliveries not yet copied begin in its pending list.
    mark: usize,
}

impl<'g, 'l> Lean<'g, 'l> {
    fn new(lanes: &'g mut [(&'l mut LeanAlpha<f64>, &'l mut LaneStats)]) -> Self {
        let active = lanes.len();
        Lean { lanes, active, left: 0, packets: 0, messages: 0, mark: 0 }
    }

    /// Appends the deliveries of the replaying lane not yet copied to every copying lane.
    #[inline(always)]
    fn copy(&mut self) {
        let (run, copies) = self.lanes.split_at_mut(self.active);
        let pending = &run[self.active - 1].1.pending;
        for (_, st) in copies {
            st.pending.extend_from_slice(&pending[self.mark..]);
        }
        self.mark = pending.len();
    }
}

impl Group for Lean<'_, '_> {
    #[inline(always)]
    fn serve(&mut self, times: &[f64]) {
        self.lanes[..self.active].serve(times);
        if self.left > 0 {
            self.left -= times.len() as u64;
            if self.left == 0 {
                self.copy();
                for (p, _) in &mut self.lanes[self.active..] {
                    p.skip_busy_period(self.packets, self.messages);
                }
                self.active = self.lanes.len();
            }
        }
    }
    #[inline(always)]
    fn lone(&mut self, t: f64, len: u32, now: f64) {
        self.lanes.lone(t, len, now);
    }
    #[inline(always)]
    fn skip(&mut self, len: u32) {
        self.lanes.skip(len);
    }
    #[inline(always)]
    fn join(&mut self, t: f64, len: u32) {
        self.lanes[..self.active].join(t, len);
        self.messages += 1;
    }
    #[inline(always)]
    fn event(&mut self, kind: Kind, sent: u64) {
        if self.left > 0 {
            self.copy();
        }
        self.lanes.event(kind, sent);
        // Every lane's pending deliveries were recorded.
        self.mark = 0;
    }
    #[inline(always)]
    fn shares_periods(&self) -> bool {
        // The lanes are in lock step: when one has nothing waiting, none has.
        self.left == 0 && self.lanes[0].0.is_empty()
    }
    #[inline(always)]
    fn begin_period(&mut self, packets: u64, spread: u64) {
        debug_assert_eq!(self.left, 0, "busy periods do not overlap");
        // The lanes that agree, from the last (shortest-first) back: they replay or copy.
        let agree = self.lanes.iter().rev().take_while(|(p, _)| p.agrees_with_shortest_first(packets, spread)).count();
        if agree < 2 {
            return;
        }
        let first = self.lanes.len() - agree;
        self.active = first + 1;
        self.left = packets;
        self.packets = packets;
        self.messages = 0;
        self.mark = self.lanes[first].1.pending.len();
    }
}

/// [`replay`] for a [`Group`] of lanes (open loops), all of them together: each step is decoded
/// once.
#[inline(never)]
fn replay_joint<G: Group + ?Sized>(lanes: &mut G, path: &Path) {
    let mut served = 0;
    // Packet starts up to the previous event (the lanes count them at events).
    let mut counted = 0;
    // A lone message is bypassed by every lane alike: the one whose packets have not all started.
    let mut alone: Option<(Msg, usize)> = None;
    for (k, s) in path.steps.iter().enumerate() {
        let upto = s.before as usize;
        if upto > served {
            let times = &path.times[served..upto];
            match &mut alone {
                None => lanes.serve(times),
                Some((m, left)) => {
                    if lone_advance(left, times.len()) {
                        lanes.lone(m.t, m.len, times[times.len() - 1]);
                        alone = None;
                    }
                }
            }
            served = upto;
        }
        match s.kind {
            Kind::Alone => {
                lanes.skip(s.msg.len);
                match lone_sent_whole(path, k, upto, s.msg.len) {
                    Some(end) => {
                        lanes.lone(s.msg.t, s.msg.len, path.times[end - 1]);
                        served = end;
                    }
                    None => alone = Some((s.msg, s.msg.len as usize)),
                }
            }
            Kind::Arrive => {
                if lanes.shares_periods() {
                    if let Some((packets, spread)) = busy_period(path, k) {
                        lanes.begin_period(packets, spread);
                    }
                }
                lanes.join(s.msg.t, s.msg.len);
            }
            other => {
                lanes.event(other, (upto - counted) as u64);
                counted = upto;
            }
        }
    }
    debug_assert_eq!(served, path.times.len(), "a chunk ends with an End step");
    debug_assert!(alone.is_none(), "a lone message is sent within its chunk");
}

/// The busy period that the arrival of step `k` begins (every queue is empty then), when it ends
/// within the chunk: its packets, and the packet starts between its first and last arrivals.
/// It ends at the first step before which as many packets have started since step `k` as have
/// arrived.
fn busy_period(path: &Path, k: usize) -> Option<(u64, u64)> {
    let first = &path.steps[k];
    let (mut arrived, mut spread) = (u64::from(first.msg.len), 0);
    for s in &path.steps[k + 1..] {
        let started = u64::from(s.before - first.before);
        if started >= arrived {
            return Some((arrived, spread));
        }
        if matches!(s.kind, Kind::Arrive | Kind::Alone) {
            arrived += u64::from(s.msg.len);
            spread = started;
        }
    }
    None
}

/// The packet starts at `times`, in a row with no arrival between them: every queue sends one
/// packet at each. (Called from one place so that the policy's bulk dequeue is inlined.)
#[inline(always)]
fn serve<C: Carried, P: Policy<C>, const COLLECT: bool>(p: &mut P, st: &mut LaneStats, times: &[f64], delivered: &mut Vec<u32>) {
    let got = p.dequeue_many(times.len() as u64, &mut |i, m: C| {
        m.deliver(st, times[i as usize]);
        if COLLECT {
            delivered.push(m.app());
        }
    });
    debug_assert_eq!(got, times.len() as u64, "lock step: every queue is busy together");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::generator::NO_MSG;

    /// A busy period ends before the first step by which as many packets have started as have
    /// arrived in it; its spread is the packet starts before its last arrival; one that the
    /// chunk does not finish is not shared.
    #[test]
    fn busy_periods_are_read_off_the_chunk() {
        let msg = |len| Msg { t: 0.0, len, app: 0, seq: 0, class: 0 };
        let mut p = Path::default();
        p.push(Kind::Arrive, msg(3));
        p.take(0.0);
        p.push(Kind::Arrive, msg(2));
        p.take(1.0);
        p.take(2.0);
        p.push(Kind::Batch, NO_MSG);
        p.take(3.0);
        p.take(4.0);
        p.push(Kind::Arrive, msg(1));
        p.take(5.0);
        p.push(Kind::Arrive, msg(4));
        p.take(6.0);
        p.push(Kind::End, NO_MSG);
        assert_eq!(busy_period(&p, 0), Some((5, 1)));
        assert_eq!(busy_period(&p, 3), Some((1, 0)));
        assert_eq!(busy_period(&p, 4), None);
    }
}
