//! The scheduler: [`AlphaSched`], its [`Policy`] implementation and the configuration types.

use super::rest::Waiting;
use super::Key;
use crate::rr::Pending;
use crate::{check_message, Message, Packet, Policy, PolicyError};

/// Largest finite α accepted. Larger values behave as shortest-first in any realistic run; use
/// [`AlphaConfig::shortest_first`] for α = ∞.
pub const ALPHA_MAX: f64 = 1e9;
const FRAC_BITS: u32 = 16;
pub(super) const ONE: i64 = 1 << FRAC_BITS;

/// A finite, non-negative α, stored in fixed point (1/65536 resolution).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Alpha(i64);

impl Alpha {
    /// α = 0 (FIFO).
    pub const ZERO: Alpha = Alpha(0);

    /// Validates and converts α. Fails for NaN, negative, or above [`ALPHA_MAX`].
    pub fn new(alpha: f64) -> Result<Alpha, PolicyError> {
        if !alpha.is_finite() || !(0.0..=ALPHA_MAX).contains(&alpha) {
            return Err(PolicyError::BadAlpha(alpha));
        }
        Ok(Alpha((alpha * ONE as f64).round() as i64))
    }
    /// The value as a float.
    pub fn get(self) -> f64 {
        self.0 as f64 / ONE as f64
    }
    pub(crate) fn fx(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for Alpha {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

/// How α follows the load (§13): `α = clamp(gain × packets queued, low, high)`, evaluated when a
/// message is inserted; the message keeps that α while it waits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tracking {
    /// Lower limit of α (the report suggests 1).
    pub low: Alpha,
    /// Upper limit of α (the report suggests 100).
    pub high: Alpha,
    /// α per queued packet.
    pub gain: f64,
}

/// Configuration of an [`AlphaSched`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlphaConfig {
    /// Fixed α used when neither tracking nor a per-message α applies.
    pub alpha: Alpha,
    /// α = ∞: shortest remaining first (§5). Overrides `alpha`, tracking and per-message α.
    pub infinite: bool,
    /// α tracks the queue length (§13).
    pub tracking: Option<Tracking>,
    /// Keep each flow's messages in order (§11).
    pub in_order: bool,
    /// Clock value (in packets) at which priorities are renormalised. Only tests need to change it.
    pub renormalize_at: u64,
}

impl AlphaConfig {
    /// Fixed α.
    pub fn fixed(alpha: Alpha) -> Self {
        AlphaConfig { alpha, infinite: false, tracking: None, in_order: false, renormalize_at: 1 << 30 }
    }
    /// Shortest remaining first (α = ∞).
    pub fn shortest_first() -> Self {
        AlphaConfig { infinite: true, ..Self::fixed(Alpha::ZERO) }
    }
    /// α tracking the queue length between `low` and `high`.
    pub fn tracking(low: Alpha, high: Alpha, gain: f64) -> Self {
        AlphaConfig { tracking: Some(Tracking { low, high, gain }), ..Self::fixed(low) }
    }
}

#[derive(Clone, Copy, Debug)]
struct Body<T> {
    alpha: i64,
    p: Pending<T>,
    /// While the slot is free: the next free slot ([`NO_SLOT`] at the end of the list).
    next_free: u32,
}

/// End of the free-slot list.
const NO_SLOT: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, Default)]
struct FlowOrder {
    last_key: i64,
    outstanding: u32,
}

/// Alpha scheduling; see the module documentation.
#[derive(Debug, Clone)]
pub struct AlphaSched<T> {
    cfg: AlphaConfig,
    head: Option<Key>,
    rest: Waiting,
    bodies: Vec<Body<T>>,
    /// First free slot of `bodies` (a list threaded through the free bodies).
    free: u32,
    /// Clock value that triggers renormalisation, in fixed point.
    renorm_fx: i64,
    /// Node clock in fixed point (packets sent × 65536, minus renormalisation shifts).
    tick: i64,
    /// Clock increment per packet: 65536, or 0 for shortest-first.
    tick_step: i64,
    /// The fixed α in fixed point (1 for SF) when neither tracking nor §11 applies.
    own_fx: Option<i64>,
    /// Newcomers with the policy's own α use length classes: fixed α > 0 or SF, no §11 order.
    classes: bool,
    seq: u64,
    packets: u64,
    flows: Vec<FlowOrder>,
    renormalisations: u64,
}

impl<T: Copy> AlphaSched<T> {
    /// A policy with the given configuration.
    pub fn new(cfg: AlphaConfig) -> Self {
        AlphaSched {
            cfg,
            head: None,
            rest: Waiting::new(),
            bodies: Vec::new(),
            free: NO_SLOT,
            renorm_fx: (cfg.renormalize_at.min(1 << 40) as i64).saturating_mul(ONE),
            tick: 0,
            tick_step: if cfg.infinite { 0 } else { ONE },
            own_fx: match (cfg.infinite, cfg.tracking) {
                (true, _) => Some(1),
                (false, None) => Some(cfg.alpha.fx()),
                (false, Some(_)) => None,
            },
            classes: !cfg.in_order && (cfg.infinite || (cfg.tracking.is_none() && cfg.alpha > Alpha::ZERO)),
            seq: 0,
            packets: 0,
            flows: Vec::new(),
            renormalisations: 0,
        }
    }
    /// Fixed α.
    pub fn with_alpha(alpha: Alpha) -> Self {
        Self::new(AlphaConfig::fixed(alpha))
    }
    /// Shortest remaining first.
    pub fn shortest_first() -> Self {
        Self::new(AlphaConfig::shortest_first())
    }
    /// How many times the clock was renormalised.
    pub fn renormalisations(&self) -> u64 {
        self.renormalisations
    }
    /// The node clock in packets since the last renormalisation (bounded).
    pub fn clock(&self) -> f64 {
        self.tick as f64 / ONE as f64
    }
    /// The configuration.
    pub fn config(&self) -> &AlphaConfig {
        &self.cfg
    }

    fn alpha_for(&self, msg: &Message<T>) -> i64 {
        if self.cfg.infinite {
            return 1;
        }
        if let Some(a) = msg.alpha {
            return a.fx();
        }
        if let Some(t) = self.cfg.tracking {
            let a = (t.gain * self.packets as f64 * ONE as f64).round();
            let a = if a.is_finite() { a as i64 } else { t.high.fx() };
            return a.clamp(t.low.fx(), t.high.fx().max(t.low.fx()));
        }
        self.cfg.alpha.fx()
    }

    /// Puts a completed message's slot on the free list.
    #[inline(always)]
    fn release(&mut self, slot: u32) {
        self.bodies[slot as usize].next_free = self.free;
        self.free = slot;
    }

    fn renormalise(&mut self) {
        let shift = self.tick;
        self.tick = 0;
        if let Some(h) = self.head.as_mut() {
            h.key -= shift;
        }
        self.rest.shift(shift);
        for f in &mut self.flows {
            f.last_key -= shift;
        }
        self.renormalisations += 1;
    }
}

impl<T: Copy> Policy<T> for AlphaSched<T> {
    #[inline(always)]
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        check_message(&msg)?;
        let alpha = match self.own_fx {
            Some(a) if msg.alpha.is_none() => a,
            _ => self.alpha_for(&msg),
        };
        // α·l can pass i64 only for absurd lengths (α ≤ 10⁹ in fixed point times l > 10⁵
        // packets): such a message saturates to the largest priority instead of wrapping.
        let key = alpha.checked_mul(i64::from(msg.packets)).and_then(|k| k.checked_add(self.tick));
        let mut key = key.unwrap_or(i64::MAX);
        if self.cfg.in_order {
            let i = msg.flow as usize;
            if i >= self.flows.len() {
                self.flows.resize(i + 1, FlowOrder::default());
            }
            let f = &mut self.flows[i];
            if f.outstanding > 0 && key < f.last_key {
                key = f.last_key;
            }
            f.last_key = key;
            f.outstanding += 1;
        }
        let body = Body { alpha, p: Pending::of(&msg), next_free: NO_SLOT };
        let slot = match self.bodies.get_mut(self.free as usize) {
            Some(b) => {
                let slot = self.free;
                self.free = b.next_free;
                *b = body;
                slot
            }
            None => {
                self.bodies.push(body);
                (self.bodies.len() - 1) as u32
            }
        };
        let e = Key { key, seq: self.seq, slot };
        self.seq += 1;
        self.packets += u64::from(msg.packets);
        // Length classes need priorities that grow with the clock within a length: the lane's
        // own fixed α > 0 (or SF), not tracking, per-message α or §11 ordering (see `Classes`).
        let own_alpha = self.cfg.infinite || msg.alpha.is_none();
        let class = if self.classes && own_alpha { self.rest.classes.class_of(msg.packets) } else { None };
        match (self.head, class) {
            (Some(h), _) if key < h.key => {
                self.rest.push_preempted(h);
                self.head = Some(e);
            }
            (_, Some(c)) => self.rest.classes.push(c, e),
            (_, None) => self.rest.push(e),
        }
        Ok(())
    }

    #[inline(always)]
    fn dequeue(&mut self) -> Option<Packet<T>> {
        if self.head.is_none() {
            self.head = Some(self.rest.pop()?);
        }
        let h = self.head.as_mut()?;
        self.tick += self.tick_step;
        let body = &mut self.bodies[h.slot as usize];
        let p = body.p.take();
        h.key -= body.alpha;
        self.packets -= 1;
        if p.last {
            let slot = h.slot;
            self.release(slot);
            self.head = None;
            if self.cfg.in_order {
                if let Some(f) = self.flows.get_mut(p.flow as usize) {
                    f.outstanding -= 1;
                }
            }
        }
        if self.tick >= self.renorm_fx {
            self.renormalise();
        }
        Some(p)
    }

    #[inline]
    fn dequeue_many<F: FnMut(u64, T)>(&mut self, n: u64, done: &mut F) -> u64 {
        // Without an arrival nothing can preempt the head: it runs until it completes, then the
        // next one starts. One data-dependent branch per message: does it finish in this run?
        if n == 0 {
            return 0;
        }
        let Some(mut h) = self.head.take().or_else(|| self.rest.pop()) else { return 0 };
        let mut i = 0;
        loop {
            let body = &mut self.bodies[h.slot as usize];
            let rem = n - i;
            let left = u64::from(body.p.left);
            if left > rem {
                body.p.left -= rem as u32;
                h.key -= body.alpha * rem as i64;
                i = n;
                self.head = Some(h);
                break;
            }
            // It completes: its priority and packet count are never looked at again (the slot
            // is free), and the clock advances once for the whole run below.
            i += left;
            done(i - 1, body.p.item);
            let flow = body.p.flow;
            self.release(h.slot);
            if self.cfg.in_order {
                if let Some(f) = self.flows.get_mut(flow as usize) {
                    f.outstanding -= 1;
                }
            }
            // The next message starts at once (even when the run ends here, in which case the
            // test at the top of the loop puts it in place with no packet sent): it is the best
            // waiting now, and a newcomer that beats it preempts it like any head.
            match self.rest.pop() {
                Some(k) => h = k,
                None => break,
            }
        }
        self.packets -= i;
        self.tick += self.tick_step * i as i64;
        if self.tick >= self.renorm_fx {
            self.renormalise();
        }
        i
    }
    #[inline]
    fn bypass(&mut self, packets: u64) -> bool {
        // An emptied queue remembers only its clock: the arrival counter's gaps do not matter
        // (only the order of arrivals is compared), tracking α sees no queued packets either way,
        // and §11's last priority per flow is ignored while the flow has nothing outstanding.
        debug_assert!(self.is_empty());
        self.tick += self.tick_step * packets as i64;
        if self.tick >= self.renorm_fx {
            self.renormalise();
        }
        true
    }
    fn is_empty(&self) -> bool {
        self.head.is_none() && self.rest.is_empty()
    }
    fn queued_messages(&self) -> usize {
        self.rest.len() + usize::from(self.head.is_some())
    }
    fn queued_packets(&self) -> u64 {
        self.packets
    }
    fn label(&self) -> String {
        if self.cfg.infinite {
            "SF".into()
        } else if let Some(t) = self.cfg.tracking {
            track_label("track-insert", t.low.get(), t.high.get(), t.gain)
        } else {
            self.cfg.alpha.to_string()
        }
    }
}

/// A number for a label: plain when short, `1e300` style when it would be long.
pub(crate) fn num_label(x: f64) -> String {
    let plain = format!("{x}");
    if plain.len() <= 12 {
        plain
    } else {
        format!("{x:e}")
    }
}

/// The label of a tracking policy: `KINDlow-high`, with `xGAIN` unless the gain is 1.
pub(crate) fn track_label(kind: &str, low: f64, high: f64, gain: f64) -> String {
    let (low, high) = (num_label(low), num_label(high));
    if gain == 1.0 {
        format!("{kind}{low}-{high}")
    } else {
        format!("{kind}{low}-{high}x{}", num_label(gain))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alpha::rank;
    use crate::testutil::drain;

    fn a(x: f64) -> Alpha {
        Alpha::new(x).unwrap()
    }

    #[test]
    fn alpha_zero_is_fifo() {
        let mut p = AlphaSched::with_alpha(a(0.0));
        p.enqueue(Message::new('a', 0, 3)).unwrap();
        p.enqueue(Message::new('b', 1, 1)).unwrap();
        let s: Vec<char> = drain(&mut p).into_iter().map(|x| x.0).collect();
        assert_eq!(s, vec!['a', 'a', 'a', 'b']);
    }

    #[test]
    fn short_newcomer_preempts_only_when_strictly_lower() {
        // a: 5 packets at c=0, alpha 1 -> key 5. After 2 packets: c=2, head key 3.
        let mut p = AlphaSched::with_alpha(a(1.0));
        p.enqueue(Message::new('a', 0, 5)).unwrap();
        p.dequeue();
        p.dequeue();
        // b: 1 packet -> key 1*1 + 2 = 3 == head key 3: no preemption, tie goes to the older.
        p.enqueue(Message::new('b', 1, 1)).unwrap();
        assert_eq!(p.dequeue().unwrap().item, 'a');
        // c=3, head key 2. c: 1 packet -> key 1 + 3 = 4 > 2; b (3) waits too.
        // d: 0-alpha can't happen; use a per-message alpha 0 -> key 3 + 0 = 3 > 2: no preemption.
        let s: Vec<char> = drain(&mut p).into_iter().map(|x| x.0).collect();
        assert_eq!(s, vec!['a', 'a', 'b']);
    }

    #[test]
    fn preemption_happens_when_lower() {
        let mut p = AlphaSched::with_alpha(a(10.0));
        p.enqueue(Message::new('L', 0, 20)).unwrap(); // key 200
        p.dequeue(); // c=1, head key 190
        p.enqueue(Message::new('s', 1, 1)).unwrap(); // key 11 < 190
        assert_eq!(p.dequeue().unwrap(), Packet { item: 's', flow: 1, bytes: 1, last: true });
        assert_eq!(p.dequeue().unwrap().item, 'L');
    }

    #[test]
    fn equal_priorities_of_different_lengths_go_oldest_first() {
        // The head never yields (per-message α 0: priority 0). c (2 packets) is seen before a
        // (3 packets), so the class of length 2 is created first; b (2 packets, one packet later)
        // ties with a at priority 3, and a, the older, must go first.
        let mut p = AlphaSched::with_alpha(a(1.0));
        p.enqueue(Message::new('h', 0, 2).with_alpha(a(0.0))).unwrap();
        p.enqueue(Message::new('c', 1, 2)).unwrap(); // 0 + 2
        p.enqueue(Message::new('a', 2, 3)).unwrap(); // 0 + 3
        assert_eq!(p.dequeue().unwrap().item, 'h');
        p.enqueue(Message::new('b', 3, 2)).unwrap(); // 1 + 2 = 3, ties with a
        let s: Vec<char> = drain(&mut p).into_iter().filter(|x| x.1).map(|x| x.0).collect();
        assert_eq!(s, vec!['h', 'c', 'a', 'b']);
    }

    #[test]
    fn huge_alpha_times_length_saturates_instead_of_wrapping() {
        let mut p = AlphaSched::with_alpha(a(ALPHA_MAX));
        p.enqueue(Message::new('s', 0, 1)).unwrap();
        p.enqueue(Message::new('L', 1, u32::MAX)).unwrap();
        p.enqueue(Message::new('m', 2, 3)).unwrap();
        assert_eq!(p.dequeue().unwrap().item, 's');
        assert_eq!(p.dequeue().unwrap().item, 'm', "the huge message ranks last, it did not wrap to first");
    }

    #[test]
    fn shortest_first_picks_fewest_remaining() {
        let mut p = AlphaSched::shortest_first();
        p.enqueue(Message::new('a', 0, 3)).unwrap();
        p.dequeue(); // a has 2 left
        p.enqueue(Message::new('b', 1, 2)).unwrap(); // ties with a: a keeps going
        p.enqueue(Message::new('c', 2, 1)).unwrap(); // preempts
        let s: Vec<char> = drain(&mut p).into_iter().map(|x| x.0).collect();
        assert_eq!(s, vec!['c', 'a', 'a', 'b', 'b']);
    }

    #[test]
    fn in_order_keeps_a_flows_messages_in_sequence() {
        let mut cfg = AlphaConfig::fixed(a(10.0));
        cfg.in_order = true;
        let mut p = AlphaSched::new(cfg);
        p.enqueue(Message::new(1, 7, 5)).unwrap();
        p.enqueue(Message::new(2, 7, 1)).unwrap(); // would jump ahead without §11
        p.enqueue(Message::new(3, 8, 1)).unwrap(); // other flow: free to jump
        let s: Vec<i32> = drain(&mut p).into_iter().filter(|x| x.1).map(|x| x.0).collect();
        assert_eq!(s, vec![3, 1, 2]);
        let mut p = AlphaSched::with_alpha(a(10.0));
        p.enqueue(Message::new(1, 7, 5)).unwrap();
        p.enqueue(Message::new(2, 7, 1)).unwrap();
        let s: Vec<i32> = drain(&mut p).into_iter().filter(|x| x.1).map(|x| x.0).collect();
        assert_eq!(s, vec![2, 1]);
    }

    #[test]
    fn per_message_alpha_acts_as_priority() {
        let mut p = AlphaSched::with_alpha(a(10.0));
        p.enqueue(Message::new('x', 0, 2).with_alpha(a(100.0))).unwrap(); // 200
        p.enqueue(Message::new('y', 1, 2).with_alpha(a(1.0))).unwrap(); // 2
        assert_eq!(p.dequeue().unwrap().item, 'y');
    }

    #[test]
    fn tracking_alpha_follows_queue_length() {
        let mut p = AlphaSched::new(AlphaConfig::tracking(a(1.0), a(100.0), 1.0));
        p.enqueue(Message::new('a', 0, 50)).unwrap(); // q=0 -> alpha 1 (low), key 50
        p.enqueue(Message::new('b', 0, 2)).unwrap(); // q=50 -> alpha 50, key 100
        p.enqueue(Message::new('c', 0, 1)).unwrap(); // q=52 -> alpha 52, key 52
        let s: Vec<char> = drain(&mut p).into_iter().filter(|x| x.1).map(|x| x.0).collect();
        assert_eq!(s, vec!['a', 'c', 'b']);
        assert_eq!(p.label(), "track-insert1-100");
    }

    #[test]
    fn bad_alpha_is_refused() {
        assert!(Alpha::new(-1.0).is_err());
        assert!(Alpha::new(f64::NAN).is_err());
        assert!(Alpha::new(1e12).is_err());
        assert_eq!(a(2.5).get(), 2.5);
    }

    /// A small deterministic generator so this test needs no RNG crate.
    fn lcg(s: &mut u64) -> u64 {
        *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *s >> 33
    }

    fn run_trace(cfg: AlphaConfig, steps: usize) -> (Vec<(u64, bool)>, u64, f64) {
        let mut p = AlphaSched::new(cfg);
        let mut s = 42u64;
        let mut out = Vec::with_capacity(steps);
        let mut id = 0u64;
        for _ in 0..steps {
            // Arrive with probability ~0.2 per step, lengths 1..=20: load just under 1 packet/step.
            if lcg(&mut s) % 100 < 19 {
                let len = if lcg(&mut s).is_multiple_of(10) { 20 } else { 1 + (lcg(&mut s) % 5) as u32 };
                p.enqueue(Message::new(id, (id % 7) as u32, len)).unwrap();
                id += 1;
            }
            if let Some(pk) = p.dequeue() {
                out.push((pk.item, pk.last));
            }
        }
        (out, p.renormalisations(), p.clock())
    }

    /// Structural invariants: classes are FIFOs in rank order with correct cached fronts, the
    /// preempted heads are stacked best on top, the head ranks before every waiting message.
    fn check_invariants<T: Copy>(p: &AlphaSched<T>) {
        let w = &p.rest;
        let c = &w.classes;
        let mut total = 0;
        for (i, q) in c.queues.iter().enumerate() {
            let mut q = q.clone();
            assert_eq!(q.front().map_or(i64::MAX, |k| k.key), c.keys[i], "class {i}: cached front");
            if i < c.lens.len() {
                assert_eq!(c.of_len[c.lens[i] as usize] as usize, i + 1, "class {i}: length map");
                assert!(i == 0 || c.lens[i - 1] > c.lens[i], "classes longest first");
            } else {
                assert!(q.is_empty(), "unused class {i} is empty");
            }
            let mut last = None;
            while let Some(k) = q.pop_front() {
                assert!(last.is_none_or(|r| r < rank(&k)), "class {i} in rank order");
                last = Some(rank(&k));
                total += 1;
            }
        }
        assert_eq!(total, c.len, "class count");
        let mut s = w.preempted.clone();
        let mut above: Option<u128> = None;
        while let Some(k) = s.pop_back() {
            assert!(above.is_none_or(|r| r < rank(&k)), "preempted stack: best on top");
            above = Some(rank(&k));
        }
        if let Some(h) = p.head {
            let front = if c.len == 0 { u128::MAX } else { rank(c.front(c.best())) };
            let all_fronts = c.queues.iter().filter_map(|q| q.front()).map(rank).min().unwrap_or(u128::MAX);
            assert_eq!(front, all_fronts, "the best class front is the best by (priority, arrival)");
            let best = [front, w.preempted.back().map_or(u128::MAX, rank), w.tail.front().map_or(u128::MAX, rank)];
            // A head may have been overtaken only by packets it sent itself (its rank drops).
            assert!(best.iter().all(|&b| rank(&h) < b || b == u128::MAX), "head is the best message");
        }
    }

    #[test]
    fn invariants_hold_under_bulk_and_single_dequeues() {
        for (alpha, lens) in [(1.0, 6u64), (10.0, 6), (60.0, 12), (2.5, 30)] {
            let mut p = AlphaSched::new(AlphaConfig { renormalize_at: 500, ..AlphaConfig::fixed(a(alpha)) });
            let mut sf = AlphaSched::new(AlphaConfig { renormalize_at: 500, ..AlphaConfig::shortest_first() });
            let mut s = 7u64;
            let mut id = 0u64;
            for step in 0..60_000 {
                if lcg(&mut s) % 100 < 20 {
                    let len = 1 + (lcg(&mut s) % lens) as u32;
                    p.enqueue(Message::new(id, 0, len)).unwrap();
                    sf.enqueue(Message::new(id, 0, len)).unwrap();
                    id += 1;
                }
                if step % 3 == 0 {
                    let n = lcg(&mut s) % 9;
                    let a1 = p.dequeue_many(n, &mut |_, _| {});
                    let a2 = sf.dequeue_many(n, &mut |_, _| {});
                    assert_eq!(a1, a2, "work conserving alike");
                } else {
                    assert_eq!(p.dequeue().is_some(), sf.dequeue().is_some());
                }
                if step % 97 == 0 {
                    check_invariants(&p);
                    check_invariants(&sf);
                }
            }
            assert!(p.renormalisations() > 10);
        }
    }

    #[test]
    fn clock_stays_bounded_without_changing_any_decision() {
        for alpha in [0.0, 1.0, 3.0, 10.0, 100.0, 2.5] {
            let base = AlphaConfig::fixed(a(alpha));
            let (reference, r0, _) = run_trace(base, 200_000);
            assert_eq!(r0, 0);
            let (bounded, r1, clock) = run_trace(AlphaConfig { renormalize_at: 64, ..base }, 200_000);
            assert!(r1 > 1000, "renormalised {r1} times");
            assert!(clock < 64.0, "clock {clock} must stay below the bound");
            assert_eq!(reference, bounded, "alpha {alpha}: renormalisation changed a decision");
        }
        let mut io = AlphaConfig::fixed(a(10.0));
        io.in_order = true;
        let (reference, _, _) = run_trace(io, 100_000);
        let (bounded, _, _) = run_trace(AlphaConfig { renormalize_at: 50, ..io }, 100_000);
        assert_eq!(reference, bounded);
    }
}
