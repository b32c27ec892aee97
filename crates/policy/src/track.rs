//! Tracking α ranked by the *current* α (§13): [`TrackSched`].
//!
//! §13 asks for an α that follows the load, to get "a high degree of bandwidth fairness, no
//! starvation, and a near-optimal average latency". With `α(t) = clamp(gain × Q(t), low, high)`,
//! where `Q(t)` is the number of packets queued (the head's remaining ones included), a waiting
//! message `m` has at time `t` the priority
//!
//! ```text
//! prio(m, t) = α(t) · remaining(m) + c(m)
//! ```
//!
//! with `c(m)` the node clock (packets sent so far) when `m` arrived: the priority of fixed α
//! (`c + α·l`, dropping by α per packet sent, see [`crate::alpha`]) with today's α instead of the
//! α of the moment the message arrived. At every packet start the message with the lowest
//! priority is served (ties: the oldest arrival); the message being sent is ranked like any
//! other, so it may be overtaken at a packet boundary when α changes. The older rule, which fixes
//! α into each message's priority when it is inserted, is
//! [`AlphaConfig::tracking`](crate::AlphaConfig::tracking) (`track-insert:` in
//! [`crate::PolicySpec`]).
//!
//! ## Data structure
//! All messages of one remaining length `r` share `α(t)·r`, so among them the order is the order
//! of `c`, which is the arrival order: one queue per remaining length, ordered by arrival, holds
//! every waiting message, and the best message is the best of the queues' fronts, whatever α is.
//! A decision costs O(distinct remaining lengths) (a scan of the non-empty queues), not a re-sort.
//! The queues' fronts sit together in one array, so that the scan reads nothing else; the
//! messages behind a front (rare where lengths are many) wait in a pooled deque of their own.
//! Newcomers are appended (they are the newest); the message being sent is held apart and, when
//! overtaken, put back into the queue of its remaining length at its arrival position (binary
//! search; it is usually near the front, being older than most).
//!
//! Arithmetic is exact: α is kept in fixed point (1/65536, as in [`crate::alpha`]) and the clock
//! in whole packets, compared as 128-bit integers; the clock needs no renormalisation.
//!
//! ## §11 and per-message α
//! With `in_order`, a message waits outside the queues until every earlier message of its flow is
//! delivered (it cannot start before then, which is what the fixed-α rule amounts to as well), and
//! then ranks by its own arrival clock. A per-message α (§10) is ignored: every message follows
//! the tracked α (use `prio` or `track-insert` for §10 classes).
//!
//! ## The α the run chose
//! [`TrackSched::alpha_stats`] gives the mean and percentiles of α over packet starts (one sample
//! per packet sent, that is, over the busy time).

use std::collections::{HashMap, VecDeque};

use crate::alpha::Tracking;
use crate::rr::Pending;
use crate::{check_message, FlowId, Message, Packet, Policy, PolicyError};

const ONE: i64 = 1 << 16;

/// `x.round()` (halves away from zero) without a call into libm: for |x| < 2⁵², `x as i64`
/// truncates exactly and the fraction `x − trunc(x)` is exact; larger values (and ±∞, NaN) are
/// their own rounding.
#[inline(always)]
fn round_half_away(x: f64) -> f64 {
    const BIG: f64 = (1u64 << 52) as f64;
    if x.abs() < BIG {
        let t = x as i64 as f64;
        let f = x - t;
        if f >= 0.5 {
            t + 1.0
        } else if f <= -0.5 {
            t - 1.0
        } else {
            t
        }
    } else {
        x
    }
}

/// A waiting message: arrival clock (packets sent before it arrived), arrival sequence, body slot.
#[derive(Clone, Copy, Debug)]
struct Entry {
    clock: u64,
    seq: u64,
    slot: u32,
}

/// The front of one remaining length's queue (its oldest message, the strongest of the queue
/// under any α), kept with the others' fronts in one contiguous array so that a scan reads no
/// other memory.
#[derive(Clone, Copy, Debug)]
struct Front {
    clock: u64,
    seq: u64,
    rem: u32,
    slot: u32,
    /// The queue's other messages, in arrival order: an index into `rests` ([`NONE`]: none).
    rest: u32,
}

impl Front {
    #[inline(always)]
    fn entry(&self) -> Entry {
        Entry { clock: self.clock, seq: self.seq, slot: self.slot }
    }

    #[inline(always)]
    fn set(&mut self, e: Entry) {
        (self.clock, self.seq, self.slot) = (e.clock, e.seq, e.slot);
    }
}

/// No queue front, no rest.
const NONE: u32 = u32::MAX;

/// Remaining lengths below this find their front by index; longer ones through a map.
const DENSE: u32 = 1 << 16;

/// Queued-packet counts up to this are kept exactly in the α histogram; above, one bin.
const QBINS: usize = 1 << 16;

/// α is kept in a table for queued-packet counts below `q_high` when there are at most this
/// many of them.
const TABLE: u64 = 1 << 12;

/// Mean and percentiles of the α a tracking policy used, one sample per packet sent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AlphaStats {
    /// Packet starts sampled.
    pub samples: u64,
    pub mean: f64,
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
}

/// α tracking the queue, every waiting message ranked by the current α; see the module docs.
#[derive(Clone, Debug)]
pub struct TrackSched<T> {
    low: i64,
    high: i64,
    gain: f64,
    /// Display values of the limits, for the label.
    t: Tracking,
    in_order: bool,
    /// Waiting messages, one queue per remaining length, each in arrival order: the fronts of
    /// the non-empty queues (unordered), each with the rest of its queue.
    fronts: Vec<Front>,
    /// Position in `fronts` of each remaining length below [`DENSE`] ([`NONE`]: empty queue).
    pos: Vec<u32>,
    /// Position in `fronts` of each longer remaining length with a non-empty queue.
    pos_big: HashMap<u32, u32>,
    /// The queues behind their fronts (only where a queue holds more than one message), and
    /// those not in use.
    rests: Vec<VecDeque<Entry>>,
    free_rests: Vec<u32>,
    head: Option<Entry>,
    bodies: Vec<Pending<T>>,
    free: Vec<u32>,
    /// Packets sent so far.
    clock: u64,
    seq: u64,
    /// Packets queued (the head's remaining ones included).
    packets: u64,
    messages: usize,
    /// §11: per flow, whether a message is outstanding, and those held behind it.
    flows: Vec<(bool, VecDeque<Entry>)>,
    /// α samples: count per queued-packet value (the last bin holds all above), as differences
    /// of consecutive counts (wrapping), so that a run of starts is recorded in O(1); see
    /// [`Self::qhist`].
    qdiff: Vec<u64>,
    alpha_sum: f64,
    /// `Some((lo, hi))`: the head beats every queue front under any α in `lo..=hi` (strictly, by
    /// rank alone), computed at the last scan, and nothing was queued since. Sending a packet
    /// lowers only the head's rank (by α ≥ 0, for every α at once), so the interval stays valid
    /// while nothing is queued: a decision whose α lies in it needs no scan (see [`Self::reach`]).
    settled: Option<(i64, i64)>,
    /// The fewest queued packets at which α reaches `high` (`u64::MAX`: never), so that
    /// [`Self::alpha_at`] skips the rounding where α sits at its limit.
    q_high: u64,
    /// The histogram's last bin, `min(QBINS, q_high)`: from `q_high` queued packets up every
    /// start has α = `high`, so one bin holds them all without changing a statistic.
    bins: usize,
    /// α for each queued-packet count below `q_high`, when `q_high` ≤ [`TABLE`] (else empty).
    table: Vec<i64>,
}

impl<T: Copy> TrackSched<T> {
    /// α = clamp(gain × queued packets, low, high), ranked by the current α.
    pub fn new(t: Tracking, in_order: bool) -> Self {
        let mut s = TrackSched {
            low: t.low.fx(),
            high: t.high.fx().max(t.low.fx()),
            gain: t.gain,
            t,
            in_order,
            fronts: Vec::new(),
            pos: Vec::new(),
            pos_big: HashMap::new(),
            rests: Vec::new(),
            free_rests: Vec::new(),
            head: None,
            bodies: Vec::new(),
            free: Vec::new(),
            clock: 0,
            seq: 0,
            packets: 0,
            messages: 0,
            flows: Vec::new(),
            qdiff: Vec::new(),
            alpha_sum: 0.0,
            settled: None,
            q_high: u64::MAX,
            bins: QBINS,
            table: Vec::new(),
        };
        s.q_high = s.first_at_high();
        s.bins = QBINS.min(usize::try_from(s.q_high).unwrap_or(usize::MAX));
        if s.q_high <= TABLE {
            s.table = (0..s.q_high).map(|q| s.alpha_exact(q)).collect();
        }
        s
    }

    /// The smallest queued-packet count whose α is `high` (α is non-decreasing in the count for
    /// a gain ≥ 0), by bisection over [`Self::alpha_exact`]; `u64::MAX` when none is.
    fn first_at_high(&self) -> u64 {
        if self.gain.is_nan() || self.gain < 0.0 || self.alpha_exact(u64::MAX) < self.high {
            return u64::MAX;
        }
        let (mut lo, mut hi) = (0u64, u64::MAX);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.alpha_exact(mid) >= self.high {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// The tracking parameters.
    pub fn tracking(&self) -> Tracking {
        self.t
    }

    /// α in fixed point for `q` queued packets (the same as [`Self::alpha_exact`]).
    #[inline(always)]
    fn alpha_at(&self, q: u64) -> i64 {
        if q >= self.q_high {
            return self.high;
        }
        if let Some(&a) = self.table.get(q as usize) {
            return a;
        }
        self.alpha_exact(q)
    }

    /// α in fixed point for `q` queued packets: clamp(round(gain × q × 65536), low, high).
    #[inline(always)]
    fn alpha_exact(&self, q: u64) -> i64 {
        let a = round_half_away(self.gain * q as f64 * ONE as f64);
        let a = if a.is_finite() && a < i64::MAX as f64 { a as i64 } else { self.high };
        a.clamp(self.low, self.high)
    }

    /// α now, in fixed point (as a float: α = this / 65536).
    pub fn current_alpha(&self) -> f64 {
        self.alpha_at(self.packets) as f64 / ONE as f64
    }

    /// Counts one α sample in each histogram bin of `low..=top` queued packets (counts at and
    /// above `bins` share the last bin): two entries of the difference array per range.
    #[inline(always)]
    fn count_range(&mut self, low: u64, top: u64) {
        let bins = self.bins;
        let last = (top as usize).min(bins);
        if last + 1 >= self.qdiff.len() {
            self.qdiff.resize(last + 2, 0);
        }
        if low < bins as u64 {
            let end = (top as usize).min(bins - 1);
            self.qdiff[low as usize] = self.qdiff[low as usize].wrapping_add(1);
            self.qdiff[end + 1] = self.qdiff[end + 1].wrapping_sub(1);
        }
        if top >= bins as u64 {
            // The starts with at least `bins` packets queued share the last bin.
            let c = top + 1 - low.max(bins as u64);
            self.qdiff[bins] = self.qdiff[bins].wrapping_add(c);
            self.qdiff[bins + 1] = self.qdiff[bins + 1].wrapping_sub(c);
        }
    }

    /// The α histogram: the count of packet starts per queued-packet value (the last bin,
    /// `bins`, holds all at or above it), up to the largest value sampled.
    fn qhist(&self) -> Vec<u64> {
        let mut acc = 0u64;
        let mut h: Vec<u64> = self
            .qdiff
            .iter()
            .map(|&d| {
                acc = acc.wrapping_add(d);
                acc
            })
            .collect();
        while h.last() == Some(&0) {
            h.pop();
        }
        h
    }

    #[inline(always)]
    fn record(&mut self, q: u64, alpha: i64) {
        self.count_range(q, q);
        self.alpha_sum += alpha as f64 / ONE as f64;
    }

    /// [`Self::record`] for `m` packet starts in a row at α `alpha`, with `top`, `top − 1`, …,
    /// `top − m + 1` packets queued, giving the same histogram and the same `alpha_sum`, bit for
    /// bit, as `m` calls would (see [`Self::add_alphas`]).
    #[inline]
    fn record_many(&mut self, top: u64, m: u64, alpha: i64) {
        if m == 0 {
            return;
        }
        self.count_range(top + 1 - m, top);
        self.add_alphas(u128::from(m) * alpha.max(0) as u128, alpha >= 0, m, |_, _| alpha);
    }

    /// Adds to `alpha_sum` the α of `m` packet starts, α(i) for the i-th of them (i = 0..m),
    /// whose sum in fixed point is `total` (all of them ≥ 0 when `nonneg`), with the same
    /// result, bit for bit, as adding α(i)/65536 one by one in order. The terms are multiples of
    /// 2⁻¹⁶, so while the sum stays below 2³⁷ every one of those additions is exact and the sum
    /// is `(65536·sum + total) / 65536` at once; beyond, the terms are added one by one.
    #[inline(always)]
    fn add_alphas(&mut self, total: u128, nonneg: bool, m: u64, alpha: impl Fn(&Self, u64) -> i64) {
        const EXACT: f64 = (1u64 << 37) as f64;
        if nonneg && self.alpha_sum >= 0.0 && self.alpha_sum < EXACT {
            // Exact: the sum is a multiple of 2⁻¹⁶ below 2³⁷, so 65536 times it is an integer
            // below 2⁵³.
            let total = u128::from((self.alpha_sum * ONE as f64) as u64) + total;
            if total <= 1u128 << 53 {
                self.alpha_sum = total as u64 as f64 / ONE as f64;
                return;
            }
        }
        for i in 0..m {
            self.alpha_sum += alpha(self, i) as f64 / ONE as f64;
        }
    }

    /// Records the α of the packet starts from now on, while the head `h` keeps the best rank
    /// without a scan (its α lies in the settled interval `lo..=hi`), up to `max` of them (at
    /// most the head's remaining packets): returns how many. α = `high` from `q_high` queued
    /// packets up, so those starts are checked and recorded at once; below, α is computed for
    /// each start, and the run is recorded at once.
    #[inline]
    fn settled_run(&mut self, lo: i64, hi: i64, max: u64) -> u64 {
        let mut q = self.packets;
        let mut k = 0;
        if q >= self.q_high && lo <= self.high && self.high <= hi {
            let m = (q - self.q_high + 1).min(max);
            self.record_many(q, m, self.high);
            k = m;
            q -= m;
        }
        if k < max {
            let top = q;
            let mut total = 0u128;
            while k < max {
                let a = self.alpha_at(q);
                if a < lo || a > hi {
                    break;
                }
                total += a as u128;
                k += 1;
                q -= 1;
            }
            if q < top {
                self.count_range(q + 1, top);
                // Every α is at least `low` ≥ 0.
                self.add_alphas(total, self.low >= 0, top - q, |s, i| s.alpha_at(top - i));
            }
        }
        k
    }

    /// The α used at the packet starts so far: mean (exact) and percentiles (exact while the
    /// queue held at most 65536 packets; above, counted as 65536 queued packets). The starts
    /// with `q_high` or more packets queued share one bin: they share their α, `high`, so the
    /// statistics are those of a bin per count.
    pub fn alpha_stats(&self) -> AlphaStats {
        let qhist = self.qhist();
        let n: u64 = qhist.iter().sum();
        if n == 0 {
            return AlphaStats::default();
        }
        let a = |q: usize| self.alpha_at(q as u64) as f64 / ONE as f64;
        let quantile = |p: f64| {
            let target = ((p * n as f64).ceil() as u64).clamp(1, n);
            let mut acc = 0;
            for (q, &c) in qhist.iter().enumerate() {
                acc += c;
                if acc >= target {
                    return a(q);
                }
            }
            a(qhist.len() - 1)
        };
        let first = qhist.iter().position(|&c| c > 0).unwrap_or(0);
        let last = qhist.iter().rposition(|&c| c > 0).unwrap_or(0);
        AlphaStats {
            samples: n,
            mean: self.alpha_sum / n as f64,
            p10: quantile(0.1),
            p50: quantile(0.5),
            p90: quantile(0.9),
            min: a(first),
            max: a(last),
        }
    }

    /// Priority under α `alpha` of a message of remaining length `rem` that arrived at clock
    /// `clock` as number `seq`: the lowest is served first.
    #[inline(always)]
    fn rank(alpha: i64, rem: u32, clock: u64, seq: u64) -> (i128, u64) {
        (i128::from(alpha) * i128::from(rem) + i128::from(clock) * i128::from(ONE), seq)
    }

    /// Position in `fronts` of the queue of remaining length `rem` ([`NONE`]: empty).
    #[inline(always)]
    fn pos_of(&self, rem: u32) -> u32 {
        if rem < DENSE {
            self.pos.get(rem as usize).copied().unwrap_or(NONE)
        } else {
            self.pos_big.get(&rem).copied().unwrap_or(NONE)
        }
    }

    #[inline(always)]
    fn set_pos(&mut self, rem: u32, p: u32) {
        if rem < DENSE {
            if rem as usize >= self.pos.len() {
                self.pos.resize(rem as usize + 1, NONE);
            }
            self.pos[rem as usize] = p;
        } else if p == NONE {
            self.pos_big.remove(&rem);
        } else {
            self.pos_big.insert(rem, p);
        }
    }

    /// Makes `e` the front of the (empty) queue of remaining length `rem`.
    #[inline(always)]
    fn open(&mut self, rem: u32, e: Entry) {
        let p = self.fronts.len() as u32;
        self.fronts.push(Front { clock: e.clock, seq: e.seq, rem, slot: e.slot, rest: NONE });
        self.set_pos(rem, p);
    }

    /// The rest of the queue whose front is at `p`, made (or reused) on first use.
    #[inline]
    fn rest_of(&mut self, p: usize) -> usize {
        let r = self.fronts[p].rest;
        if r != NONE {
            return r as usize;
        }
        let r = match self.free_rests.pop() {
            Some(r) => r,
            None => {
                self.rests.push(VecDeque::new());
                (self.rests.len() - 1) as u32
            }
        };
        self.fronts[p].rest = r;
        r as usize
    }

    /// Puts `e` (remaining length `rem`) into its queue at its arrival position.
    #[inline]
    fn insert(&mut self, rem: u32, e: Entry) {
        self.settled = None;
        let p = self.pos_of(rem);
        if p == NONE {
            return self.open(rem, e);
        }
        let p = p as usize;
        let r = self.rest_of(p);
        let f = &mut self.fronts[p];
        let q = &mut self.rests[r];
        if e.seq < f.seq {
            // The new front; the old one heads the rest.
            q.push_front(f.entry());
            f.set(e);
            return;
        }
        match q.back() {
            Some(b) if b.seq > e.seq => {
                let i = q.partition_point(|x| x.seq < e.seq);
                q.insert(i, e);
            }
            _ => q.push_back(e),
        }
    }

    /// Puts a newcomer `e` (remaining length `rem`, the newest message) into its queue, keeping
    /// the settled interval: a newcomer behind others of its length changes no queue front, and
    /// one that becomes a front adds one bound to it (rather than a scan at the next packet
    /// start: an arrival costs O(1), not O(distinct remaining lengths)).
    #[inline]
    fn insert_new(&mut self, rem: u32, e: Entry) {
        let (Some(h), Some(range)) = (self.head, self.settled) else {
            return self.insert(rem, e);
        };
        let p = self.pos_of(rem);
        if p == NONE {
            self.open(rem, e);
            let rh = self.bodies[h.slot as usize].left;
            self.settled = Some(Self::narrow(range, rh, h.clock, rem, e.clock));
        } else {
            let r = self.rest_of(p as usize);
            let q = &mut self.rests[r];
            debug_assert!(q.back().is_none_or(|b| b.seq < e.seq), "a newcomer is the newest");
            q.push_back(e);
        }
    }

    /// Takes the front at position `p` of `fronts`.
    #[inline]
    fn take_front(&mut self, p: usize) -> Entry {
        let f = self.fronts[p];
        if f.rest != NONE {
            // The next of its queue becomes the front.
            let q = &mut self.rests[f.rest as usize];
            let next = q.pop_front().expect("a rest is not empty");
            let empty = q.is_empty();
            let fr = &mut self.fronts[p];
            fr.set(next);
            if empty {
                fr.rest = NONE;
                self.free_rests.push(f.rest);
            }
        } else {
            self.fronts.swap_remove(p);
            self.set_pos(f.rem, NONE);
            if let Some(moved) = self.fronts.get(p) {
                let rem = moved.rem;
                self.set_pos(rem, p as u32);
            }
        }
        f.entry()
    }

    /// Decides who sends the next packet (the best message under the current α) and sends it.
    #[inline]
    fn step(&mut self) -> Option<Packet<T>> {
        if self.messages == 0 {
            return None;
        }
        let q = self.packets;
        let alpha = self.alpha_at(q);
        self.record(q, alpha);
        if let (Some(h), Some((lo, hi))) = (self.head, self.settled) {
            if lo <= alpha && alpha <= hi {
                // The head beats every queue front under this α (the interval of the last scan)
                // and only its own rank has dropped since: it is still the best (the profile of
                // W4 under track:1:100 spent 60% of the run in the scan below).
                return Some(self.send(h));
            }
        }
        // The best queue front.
        let mut best: Option<(usize, (i128, u64))> = None;
        if self.narrow_ranks(alpha) {
            // Every rank fits 64 bits: the same comparisons, in 64-bit arithmetic.
            let (mut bi, mut bk) = (usize::MAX, (i64::MAX, u64::MAX));
            for (i, f) in self.fronts.iter().enumerate() {
                let k = (alpha * i64::from(f.rem) + ((f.clock as i64) << 16), f.seq);
                if k < bk {
                    (bi, bk) = (i, k);
                }
            }
            if bi != usize::MAX {
                best = Some((bi, (i128::from(bk.0), bk.1)));
            }
        } else {
            for (i, f) in self.fronts.iter().enumerate() {
                let k = Self::rank(alpha, f.rem, f.clock, f.seq);
                if best.is_none_or(|(_, b)| k < b) {
                    best = Some((i, k));
                }
            }
        }
        let head = match (self.head, best) {
            (Some(h), Some((p, k))) => {
                let hrem = self.bodies[h.slot as usize].left;
                if k < Self::rank(alpha, hrem, h.clock, h.seq) {
                    let e = self.take_front(p);
                    self.insert(hrem, h);
                    e
                } else {
                    h
                }
            }
            (Some(h), None) => h,
            (None, Some((p, _))) => self.take_front(p),
            (None, None) => unreachable!("messages are queued"),
        };
        self.settled = Some(self.reach(head));
        Some(self.send(head))
    }

    /// Whether every rank under α `alpha` (fixed point) fits 64 bits: α < 2³⁰ and remaining
    /// lengths below 2³² give α·r < 2⁶², and arrival clocks (at most the clock now) below 2⁴⁵
    /// give 65536·c < 2⁶¹; so do the clock differences of [`Self::reach`].
    #[inline(always)]
    fn narrow_ranks(&self, alpha: i64) -> bool {
        (0..1 << 30).contains(&alpha) && self.clock < 1 << 45
    }

    /// The α (fixed point) under which `head` beats every queue front by rank alone:
    /// α·r_h + 65536·c_h < α·r_m + 65536·c_m for each front m (its queue's oldest, so the
    /// strongest of the queue under any α). With d = r_h − r_m and e = 65536·(c_h − c_m) that is
    /// α·d < −e: an upper bound ⌊(−e−1)/d⌋ when d > 0, a lower bound ⌊e/−d⌋ + 1 when d < 0,
    /// nothing when d = 0 (then the arrival order decides, whatever α is). Ties in rank
    /// (decided by arrival order) fall outside, which only costs a scan.
    ///
    /// The interval is that of [`Self::narrow`] applied to every front in turn, computed with
    /// one division per side: ⌊·⌋ and the clamp to 64 bits are non-decreasing, so the least
    /// upper bound is ⌊the least fraction (−e−1)/d⌋ and the greatest lower bound ⌊the greatest
    /// fraction e/−d⌋ + 1; fractions (positive denominators below 2³³, numerators below 2⁸¹ in
    /// magnitude) are compared by cross-multiplication in 128 bits.
    fn reach(&self, head: Entry) -> (i64, i64) {
        let rh = self.bodies[head.slot as usize].left;
        if self.clock >= 1 << 45 {
            // Clock differences beyond 64 bits: one bound at a time.
            return self.fronts.iter().fold((i64::MIN, i64::MAX), |r, f| Self::narrow(r, rh, head.clock, f.rem, f.clock));
        }
        // Every clock difference times 65536 fits 64 bits (below 2⁶¹), as does every
        // difference of remaining lengths; their products are taken in 128 bits.
        let (mut up, mut down) = ((0i64, 0i64), (0i64, 0i64));
        for f in &self.fronts {
            let d = i64::from(rh) - i64::from(f.rem);
            let e = (head.clock as i64 - f.clock as i64) << 16;
            if d > 0 {
                let n = -e - 1;
                if up.1 == 0 || i128::from(n) * i128::from(up.1) < i128::from(up.0) * i128::from(d) {
                    up = (n, d);
                }
            } else if d < 0 && (down.1 == 0 || i128::from(e) * i128::from(down.1) > i128::from(down.0) * i128::from(-d)) {
                down = (e, -d);
            }
        }
        let hi = if up.1 == 0 { i64::MAX } else { up.0.div_euclid(up.1) };
        let lo = if down.1 == 0 { i64::MIN } else { down.0.div_euclid(down.1) + 1 };
        (lo, hi)
    }

    /// [`Self::reach`] in 128-bit arithmetic throughout (the rule the 64-bit form follows; kept
    /// for the tests).
    #[cfg(test)]
    fn reach_wide(&self, head: Entry) -> (i64, i64) {
        let rh = self.bodies[head.slot as usize].left;
        // The least (−e−1)/d over d > 0 and the greatest e/−d over d < 0, as (numerator,
        // denominator); a zero denominator: none yet.
        let (mut up, mut down) = ((0i128, 0i128), (0i128, 0i128));
        for f in &self.fronts {
            let d = i128::from(rh) - i128::from(f.rem);
            let e = (i128::from(head.clock) - i128::from(f.clock)) * i128::from(ONE);
            if d > 0 {
                let n = -e - 1;
                if up.1 == 0 || n * up.1 < up.0 * d {
                    up = (n, d);
                }
            } else if d < 0 && (down.1 == 0 || e * down.1 > down.0 * -d) {
                down = (e, -d);
            }
        }
        let clamp = |x: i128| x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        // 64-bit division where both fit: the same quotient as 128-bit division.
        let floor = |(n, d): (i128, i128)| match (i64::try_from(n), i64::try_from(d)) {
            (Ok(n), Ok(d)) => i128::from(n.div_euclid(d)),
            _ => n.div_euclid(d),
        };
        let hi = if up.1 == 0 { i64::MAX } else { clamp(floor(up)) };
        let lo = if down.1 == 0 { i64::MIN } else { clamp(floor(down) + 1) };
        (lo, hi)
    }

    /// `range` (an interval of α in fixed point) narrowed to the α under which a head of `rh`
    /// remaining packets that arrived at clock `ch` beats, by rank alone, a front of `rm`
    /// remaining packets that arrived at clock `cm` (see [`Self::reach`]).
    #[inline]
    fn narrow((lo, hi): (i64, i64), rh: u32, ch: u64, rm: u32, cm: u64) -> (i64, i64) {
        let d = i64::from(rh) - i64::from(rm);
        let e = (i128::from(ch) - i128::from(cm)) * i128::from(ONE);
        let clamp = |x: i128| x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        // 64-bit division where the numerator fits (clock differences below 2⁴⁷ packets):
        // the same quotient as 128-bit division, which the profile showed at 3% of a W4 run.
        let small = e > -(1i128 << 62) && e < 1i128 << 62;
        if d > 0 {
            let q = if small { i128::from((-(e as i64) - 1).div_euclid(d)) } else { (-e - 1).div_euclid(i128::from(d)) };
            (lo, hi.min(clamp(q)))
        } else if d < 0 {
            let q = if small { i128::from((e as i64).div_euclid(-d)) } else { e.div_euclid(i128::from(-d)) };
            (lo.max(clamp(q + 1)), hi)
        } else {
            (lo, hi)
        }
    }

    /// Sends the next packet of `head`, the best message under the current α.
    #[inline(always)]
    fn send(&mut self, head: Entry) -> Packet<T> {
        self.send_run(head, 1)
    }

    /// Sends the next `k` packets of `head` (at least one, at most its remaining ones), the best
    /// message at each of their starts; returns the last of them.
    #[inline(always)]
    fn send_run(&mut self, head: Entry, k: u64) -> Packet<T> {
        let body = &mut self.bodies[head.slot as usize];
        debug_assert!(k >= 1 && k <= u64::from(body.left));
        body.left -= k as u32 - 1;
        let p = body.take();
        self.clock += k;
        self.packets -= k;
        if p.last {
            self.head = None;
            self.settled = None;
            self.messages -= 1;
            self.free.push(head.slot);
            if self.in_order {
                self.release_next(p.flow);
            }
        } else {
            self.head = Some(head);
        }
        p
    }

    /// §11: the flow's message was delivered; its next held message may now compete.
    fn release_next(&mut self, flow: FlowId) {
        let Some(f) = self.flows.get_mut(flow as usize) else { return };
        match f.1.pop_front() {
            Some(e) => {
                let rem = self.bodies[e.slot as usize].left;
                self.insert(rem, e);
            }
            None => f.0 = false,
        }
    }
}

impl<T: Copy> Policy<T> for TrackSched<T> {
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        check_message(&msg)?;
        let body = Pending::of(&msg);
        let slot = match self.free.pop() {
            Some(s) => {
                self.bodies[s as usize] = body;
                s
            }
            None => {
                self.bodies.push(body);
                (self.bodies.len() - 1) as u32
            }
        };
        let e = Entry { clock: self.clock, seq: self.seq, slot };
        self.seq += 1;
        self.packets += u64::from(msg.packets);
        self.messages += 1;
        if self.in_order {
            let i = msg.flow as usize;
            if i >= self.flows.len() {
                self.flows.resize_with(i + 1, || (false, VecDeque::new()));
            }
            let f = &mut self.flows[i];
            if f.0 {
                f.1.push_back(e);
                return Ok(());
            }
            f.0 = true;
        }
        self.insert_new(msg.packets, e);
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self) -> Option<Packet<T>> {
        self.step()
    }

    #[inline]
    fn dequeue_many<F: FnMut(u64, T)>(&mut self, n: u64, done: &mut F) -> u64 {
        // α changes with every packet sent, so every packet start is a decision; but while α
        // stays in the interval settled at the last scan, the head wins each of them without a
        // scan (see `settled`), so those starts are taken as one run.
        let mut i = 0;
        while i < n {
            if let (Some(h), Some((lo, hi))) = (self.head, self.settled) {
                let left = u64::from(self.bodies[h.slot as usize].left);
                let k = self.settled_run(lo, hi, (n - i).min(left));
                if k > 0 {
                    let p = self.send_run(h, k);
                    i += k;
                    if p.last {
                        done(i - 1, p.item);
                    }
                    continue;
                }
            }
            match self.step() {
                Some(p) => {
                    if p.last {
                        done(i, p.item);
                    }
                    i += 1;
                }
                None => return i,
            }
        }
        n
    }

    fn bypass(&mut self, packets: u64) -> bool {
        // A lone message is the only one queued at each of its packet starts: it is chosen each
        // time, with α computed from its own remaining packets, which is recorded as it would be.
        debug_assert!(self.is_empty());
        // From `q_high` queued packets up α is `high`: those starts are recorded at once; the
        // others (q down to 1) likewise, once their α is summed.
        let mut q = packets;
        if q >= self.q_high.max(1) {
            let m = q - self.q_high.max(1) + 1;
            self.record_many(q, m, self.high);
            q -= m;
        }
        if q > 0 {
            let total: u128 = (1..=q).map(|q| self.alpha_at(q) as u128).sum();
            self.count_range(1, q);
            self.add_alphas(total, self.low >= 0, q, |s, i| s.alpha_at(q - i));
        }
        self.clock += packets;
        true
    }

    fn is_empty(&self) -> bool {
        self.messages == 0
    }
    fn queued_messages(&self) -> usize {
        self.messages
    }
    fn queued_packets(&self) -> u64 {
        self.packets
    }
    fn label(&self) -> String {
        crate::alpha::track_label("track", self.t.low.get(), self.t.high.get(), self.t.gain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Alpha;
    use proptest::prelude::*;

    fn tr(low: f64, high: f64, gain: f64) -> Tracking {
        Tracking { low: Alpha::new(low).unwrap(), high: Alpha::new(high).unwrap(), gain }
    }

    /// The rule stated plainly: at each packet start, scan every eligible waiting message and
    /// serve the one with the lowest α(t)·remaining + 65536·arrival clock (then oldest).
    struct Reference {
        t: Tracking,
        in_order: bool,
        /// (item, flow, remaining, arrival clock, seq)
        msgs: Vec<(u32, u32, u32, u64, u64)>,
        clock: u64,
        seq: u64,
    }

    impl Reference {
        fn alpha(&self) -> i64 {
            let q: u64 = self.msgs.iter().map(|m| u64::from(m.2)).sum();
            let a = (self.t.gain * q as f64 * ONE as f64).round();
            let a = if a.is_finite() && a < i64::MAX as f64 { a as i64 } else { self.t.high.fx() };
            a.clamp(self.t.low.fx(), self.t.high.fx())
        }
        fn enqueue(&mut self, item: u32, flow: u32, len: u32) {
            self.msgs.push((item, flow, len, self.clock, self.seq));
            self.seq += 1;
        }
        fn dequeue(&mut self) -> Option<(u32, bool)> {
            let a = i128::from(self.alpha());
            let eligible = |m: &(u32, u32, u32, u64, u64), all: &[(u32, u32, u32, u64, u64)]| {
                !self.in_order || !all.iter().any(|o| o.1 == m.1 && o.4 < m.4)
            };
            let i = (0..self.msgs.len()).filter(|&i| eligible(&self.msgs[i], &self.msgs)).min_by_key(|&i| {
                let m = self.msgs[i];
                (a * i128::from(m.2) + i128::from(m.3) * i128::from(ONE), m.4)
            })?;
            self.clock += 1;
            self.msgs[i].2 -= 1;
            let item = self.msgs[i].0;
            let last = self.msgs[i].2 == 0;
            if last {
                self.msgs.remove(i);
            }
            Some((item, last))
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Arrive { flow: u32, len: u32 },
        Serve(u8),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            (0u32..3, prop_oneof![1u32..6, Just(20u32), 1u32..40]).prop_map(|(flow, len)| Op::Arrive { flow, len }),
            (0u8..12).prop_map(Op::Serve),
        ];
        proptest::collection::vec(op, 1..300)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The per-length queues serve exactly the packets the brute-force scan does, for single
        /// and bulk dequeues, with and without §11 order.
        #[test]
        fn matches_the_brute_force_scan(
            ops in ops(),
            low in 0.0f64..5.0,
            span in 0.0f64..200.0,
            gain in prop_oneof![Just(1.0f64), 0.0f64..3.0],
            in_order in any::<bool>(),
            bulk in any::<bool>(),
            // A clock that starts just below 2⁴⁵ crosses from the 64-bit scan and interval
            // to the 128-bit ones within the case.
            start in prop_oneof![3 => Just(0u64), 1 => Just((1u64 << 45) - 64)],
        ) {
            let t = tr(low, low + span, gain);
            let mut p = TrackSched::new(t, in_order);
            p.clock = start;
            let mut r = Reference { t, in_order, msgs: Vec::new(), clock: start, seq: 0 };
            let mut id = 0u32;
            for op in ops {
                match op {
                    Op::Arrive { flow, len } => {
                        p.enqueue(Message::new(id, flow, len)).unwrap();
                        r.enqueue(id, flow, len);
                        id += 1;
                    }
                    Op::Serve(n) => {
                        if bulk {
                            let mut want = Vec::new();
                            let mut k = 0;
                            while k < u64::from(n) {
                                match r.dequeue() {
                                    Some((item, last)) => { if last { want.push((k, item)); } k += 1; }
                                    None => break,
                                }
                            }
                            let mut got = Vec::new();
                            let sent = p.dequeue_many(u64::from(n), &mut |i, item| got.push((i, item)));
                            prop_assert_eq!(sent, k);
                            prop_assert_eq!(got, want);
                        } else {
                            for _ in 0..n {
                                let want = r.dequeue();
                                let got = p.dequeue().map(|pk| (pk.item, pk.last));
                                prop_assert_eq!(got, want);
                            }
                        }
                    }
                }
                prop_assert_eq!(p.queued_packets(), r.msgs.iter().map(|m| u64::from(m.2)).sum::<u64>());
            }
            while let Some(want) = r.dequeue() {
                prop_assert_eq!(p.dequeue().map(|pk| (pk.item, pk.last)), Some(want));
            }
            prop_assert!(p.dequeue().is_none() && p.is_empty());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Bulk dequeues (runs of the head's packets without a scan) and lone-message bypasses
        /// record the same α samples, bit for bit, as single dequeues and packets passed
        /// through: the same histogram and the same mean, with queues long enough to sit at
        /// `high` for long runs.
        #[test]
        fn runs_record_the_alpha_of_single_dequeues(
            ops in proptest::collection::vec(
                prop_oneof![
                    (0u32..3, prop_oneof![1u32..6, 100u32..3000]).prop_map(|(flow, len)| Op::Arrive { flow, len }),
                    (0u8..=255).prop_map(Op::Serve),
                ],
                1..120,
            ),
            low in 0.0f64..5.0,
            span in 0.0f64..200.0,
            gain in prop_oneof![Just(1.0f64), 0.0f64..3.0],
            in_order in any::<bool>(),
        ) {
            let t = tr(low, low + span, gain);
            let (mut one, mut bulk) = (TrackSched::new(t, in_order), TrackSched::new(t, in_order));
            // A bin per queued-packet count up to QBINS, rather than one from `q_high` up.
            let mut wide = TrackSched::new(t, in_order);
            wide.bins = QBINS;
            let mut id = 0u32;
            for op in ops {
                match op {
                    Op::Arrive { flow, len } => {
                        wide.enqueue(Message::new(id, flow, len)).unwrap();
                        if one.is_empty() && flow == 0 {
                            // A lone message: passed through one, bypassed by the other.
                            one.enqueue(Message::new(id, flow, len)).unwrap();
                            while one.dequeue().is_some() {
                                prop_assert!(wide.dequeue().is_some());
                            }
                            prop_assert!(bulk.bypass(u64::from(len)));
                        } else {
                            one.enqueue(Message::new(id, flow, len)).unwrap();
                            bulk.enqueue(Message::new(id, flow, len)).unwrap();
                        }
                        id += 1;
                    }
                    Op::Serve(n) => {
                        let n = u64::from(n) * 7;
                        let mut want = Vec::new();
                        for i in 0..n {
                            match one.dequeue() {
                                Some(pk) => {
                                    prop_assert_eq!(wide.dequeue().map(|w| (w.item, w.last)), Some((pk.item, pk.last)));
                                    if pk.last { want.push((i, pk.item)); }
                                }
                                None => break,
                            }
                        }
                        let mut got = Vec::new();
                        bulk.dequeue_many(n, &mut |i, item| got.push((i, item)));
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(one.queued_packets(), bulk.queued_packets());
            }
            prop_assert_eq!(one.qhist(), bulk.qhist());
            prop_assert_eq!(one.alpha_sum.to_bits(), bulk.alpha_sum.to_bits());
            prop_assert_eq!(one.alpha_stats(), bulk.alpha_stats());
            prop_assert_eq!(wide.alpha_stats(), one.alpha_stats());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// The settled interval computed with one division per side (64-bit, and 128-bit) is
        /// the interval narrowed one front at a time, for every front as the head; clocks from
        /// a few packets to beyond 2⁴⁵ (where the 64-bit form steps aside).
        #[test]
        fn reach_is_the_fold_of_narrow(
            msgs in proptest::collection::vec(
                (prop_oneof![1u32..30, 1u32..5000, 60_000u32..70_000], prop_oneof![0u64..1000, 0u64..1 << 40, 0u64..1 << 58]),
                1..40,
            ),
        ) {
            let mut p = TrackSched::<u32>::new(tr(1.0, 100.0, 1.0), false);
            for (i, &(len, dc)) in msgs.iter().enumerate() {
                p.clock += dc;
                p.enqueue(Message::new(i as u32, 0, len)).unwrap();
            }
            for f in p.fronts.clone() {
                let h = f.entry();
                let rh = p.bodies[h.slot as usize].left;
                let fold = p.fronts.iter().fold((i64::MIN, i64::MAX), |r, g| TrackSched::<u32>::narrow(r, rh, h.clock, g.rem, g.clock));
                prop_assert_eq!(p.reach(h), fold);
                prop_assert_eq!(p.reach_wide(h), fold);
            }
        }
    }

    /// `record_many` equals as many `record` calls, bit for bit: across the histogram's last bin,
    /// and where the α sum leaves the range in which its additions are exact.
    #[test]
    fn record_many_equals_single_records() {
        // α reaches `high` only at 102,400 queued packets: the histogram's last bin is QBINS.
        let t = tr(1.0, 100.0, 1.0 / 1024.0);
        let cases: [(f64, u64, u64, i64); 6] = [
            (0.0, 10, 10, 100 << 16),
            (3.5, (QBINS + 5) as u64, 20, 7 << 16),
            (0.0, (QBINS + 500) as u64, 400, 100 << 16),
            (0.0, (QBINS - 1) as u64, 3, 3 << 16),
            ((1u64 << 37) as f64 - 1000.0, 5000, 4000, 100 << 16),
            ((1u64 << 40) as f64 + 0.5, 3000, 3000, (1 << 16) + 1),
        ];
        for (sum, top, m, alpha) in cases {
            let (mut a, mut b) = (TrackSched::<u8>::new(t, false), TrackSched::<u8>::new(t, false));
            a.alpha_sum = sum;
            b.alpha_sum = sum;
            a.record_many(top, m, alpha);
            for q in (top + 1 - m..=top).rev() {
                b.record(q, alpha);
            }
            assert_eq!(a.qhist(), b.qhist(), "{sum} {top} {m}");
            assert_eq!(a.alpha_sum.to_bits(), b.alpha_sum.to_bits(), "{sum} {top} {m}: {} vs {}", a.alpha_sum, b.alpha_sum);
        }
    }

    /// `round_half_away` is `f64::round` (up to the sign of zero), at the halves, near 2⁵² and
    /// beyond, and at random values of the size α takes.
    #[test]
    fn round_half_away_is_round() {
        let two52 = (1u64 << 52) as f64;
        let mut xs = vec![
            0.0,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            -0.5,
            -2.5,
            -0.49999999999999994,
            two52 - 0.5,
            two52 - 1.5,
            two52,
            two52 + 1.0,
            2.0 * two52 + 2.0,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut x = 0.123_456_789f64;
        for _ in 0..100_000 {
            x = (x * 7919.0 + 0.37).fract();
            xs.push(x * 6_553_600.0);
            xs.push(-x * 1e12);
            xs.push(x * 3.0 * 65536.0);
        }
        for x in xs {
            let (a, b) = (round_half_away(x), x.round());
            assert!(a == b || (a.is_nan() && b.is_nan()), "{x}: {a} vs {b}");
        }
        assert!(round_half_away(f64::NAN).is_nan());
    }

    #[test]
    fn a_short_newcomer_overtakes_an_earlier_long_message_as_alpha_grows() {
        // L (20 packets) arrives to an empty queue: α = 20 at its first packet. s (1 packet) and
        // many 5-packet messages then arrive; with α ranked at insertion s would carry the large
        // α of a full queue; with the current α every waiting message is compared alike.
        let mut p = TrackSched::new(tr(1.0, 100.0, 1.0), false);
        p.enqueue(Message::new('L', 0, 20)).unwrap();
        assert_eq!(p.dequeue().unwrap().item, 'L'); // alpha 20: L alone
        p.enqueue(Message::new('s', 0, 1)).unwrap();
        // q = 19 + 1 = 20: L's priority 20*19 + 0, s's 20*1 + 65536*1 in fixed point: s first.
        assert_eq!(p.dequeue().unwrap().item, 's');
        assert_eq!(p.dequeue().unwrap().item, 'L');
    }

    #[test]
    fn alpha_follows_the_queue_and_is_reported() {
        let mut p = TrackSched::new(tr(2.0, 10.0, 0.5), false);
        assert_eq!(p.current_alpha(), 2.0);
        p.enqueue(Message::new(0, 0, 30)).unwrap();
        assert_eq!(p.current_alpha(), 10.0);
        while p.dequeue().is_some() {}
        let s = p.alpha_stats();
        assert_eq!(s.samples, 30);
        // q = 30..1: α = clamp(q/2, 2, 10): 10 for q >= 20 (11 samples), q/2 for 4..=19, 2 below.
        let want: f64 = (1..=30).map(|q| (f64::from(q) * 0.5).clamp(2.0, 10.0)).sum::<f64>() / 30.0;
        assert!((s.mean - want).abs() < 1e-9, "{} vs {want}", s.mean);
        assert_eq!((s.min, s.max), (2.0, 10.0));
        assert_eq!(s.p50, 7.5); // the 15th smallest q is 15
        assert_eq!(p.label(), "track2-10x0.5");
        // A lone message's bypass records the same α samples.
        let mut b = TrackSched::<u8>::new(tr(2.0, 10.0, 0.5), false);
        assert!(b.bypass(30));
        assert_eq!(b.alpha_stats(), s);
    }

    #[test]
    fn in_order_holds_a_flows_later_messages() {
        let mut p = TrackSched::new(tr(1.0, 100.0, 1.0), true);
        p.enqueue(Message::new(1, 7, 5)).unwrap();
        p.enqueue(Message::new(2, 7, 1)).unwrap();
        p.enqueue(Message::new(3, 8, 1)).unwrap();
        let mut order = Vec::new();
        while let Some(pk) = p.dequeue() {
            if pk.last {
                order.push(pk.item);
            }
        }
        assert_eq!(order, vec![3, 1, 2]);
    }
}
