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

/// A waiting message: arrival clock (packets sent before it arrived), arrival sequence, body slot.
#[derive(Clone, Copy, Debug)]
struct Entry {
    clock: u64,
    seq: u64,
    slot: u32,
}

/// The messages of one remaining length, in arrival order.
#[derive(Clone, Debug)]
struct LenQueue {
    rem: u32,
    q: VecDeque<Entry>,
    /// Position in `active` while not empty.
    pos: u32,
}

/// Remaining lengths below this find their queue by index; longer ones through a map.
const DENSE: u32 = 1 << 16;

/// Queued-packet counts up to this are kept exactly in the α histogram; above, one bin.
const QBINS: usize = 1 << 16;

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
    /// Waiting messages, one queue per remaining length, each in arrival order.
    queues: Vec<LenQueue>,
    /// Queue of each remaining length below [`DENSE`] (`u32::MAX`: none yet).
    qid: Vec<u32>,
    /// Queue of each longer remaining length.
    qid_big: HashMap<u32, u32>,
    /// Queues that are not empty (unordered).
    active: Vec<u32>,
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
    /// α samples: count per queued-packet value (the last bin holds all above).
    qhist: Vec<u64>,
    alpha_sum: f64,
    /// `Some((lo, hi))`: the head beats every queue front under any α in `lo..=hi` (strictly, by
    /// rank alone), computed at the last scan, and nothing was queued since. Sending a packet
    /// lowers only the head's rank (by α ≥ 0, for every α at once), so the interval stays valid
    /// while nothing is queued: a decision whose α lies in it needs no scan (see [`Self::reach`]).
    settled: Option<(i64, i64)>,
    /// The fewest queued packets at which α reaches `high` (`u64::MAX`: never), so that
    /// [`Self::alpha_at`] skips the rounding where α sits at its limit.
    q_high: u64,
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
            queues: Vec::new(),
            qid: Vec::new(),
            qid_big: HashMap::new(),
            active: Vec::new(),
            head: None,
            bodies: Vec::new(),
            free: Vec::new(),
            clock: 0,
            seq: 0,
            packets: 0,
            messages: 0,
            flows: Vec::new(),
            qhist: Vec::new(),
            alpha_sum: 0.0,
            settled: None,
            q_high: u64::MAX,
        };
        s.q_high = s.first_at_high();
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
        self.alpha_exact(q)
    }

    /// α in fixed point for `q` queued packets: clamp(round(gain × q × 65536), low, high).
    #[inline(always)]
    fn alpha_exact(&self, q: u64) -> i64 {
        let a = (self.gain * q as f64 * ONE as f64).round();
        let a = if a.is_finite() && a < i64::MAX as f64 { a as i64 } else { self.high };
        a.clamp(self.low, self.high)
    }

    /// α now, in fixed point (as a float: α = this / 65536).
    pub fn current_alpha(&self) -> f64 {
        self.alpha_at(self.packets) as f64 / ONE as f64
    }

    #[inline(always)]
    fn record(&mut self, q: u64, alpha: i64) {
        let i = (q as usize).min(QBINS);
        if i >= self.qhist.len() {
            self.qhist.resize(i + 1, 0);
        }
        self.qhist[i] += 1;
        self.alpha_sum += alpha as f64 / ONE as f64;
    }

    /// [`Self::record`] for `m` packet starts in a row at α `alpha`, with `top`, `top − 1`, …,
    /// `top − m + 1` packets queued, giving the same histogram and the same `alpha_sum`, bit for
    /// bit, as `m` calls would. The sum's terms are multiples of 2⁻¹⁶ (α is fixed point), so
    /// while the sum stays below 2³⁷ every addition of the calls is exact and the sum is
    /// `(65536·sum + m·alpha) / 65536` at once; beyond, the terms are added one by one.
    #[inline]
    fn record_many(&mut self, top: u64, m: u64, alpha: i64) {
        if m == 0 {
            return;
        }
        let low = top + 1 - m;
        let last = (top as usize).min(QBINS);
        if last >= self.qhist.len() {
            self.qhist.resize(last + 1, 0);
        }
        if top >= QBINS as u64 {
            // The starts with at least QBINS packets queued share the last bin.
            self.qhist[QBINS] += top + 1 - low.max(QBINS as u64);
        }
        if low < QBINS as u64 {
            for c in &mut self.qhist[low as usize..=(top as usize).min(QBINS - 1)] {
                *c += 1;
            }
        }
        const EXACT: f64 = (1u64 << 37) as f64;
        if alpha >= 0 && self.alpha_sum >= 0.0 && self.alpha_sum < EXACT {
            // Exact: the sum is a multiple of 2⁻¹⁶ below 2³⁷.
            let total = (self.alpha_sum * ONE as f64) as u128 + u128::from(m) * alpha as u128;
            if total <= 1u128 << 53 {
                self.alpha_sum = total as f64 / ONE as f64;
                return;
            }
        }
        for _ in 0..m {
            self.alpha_sum += alpha as f64 / ONE as f64;
        }
    }

    /// Records the α of the packet starts from now on, while the head `h` keeps the best rank
    /// without a scan (its α lies in the settled interval `lo..=hi`), up to `max` of them (at
    /// most the head's remaining packets): returns how many. α = `high` from `q_high` queued
    /// packets up, so those starts are checked and recorded at once; below, one by one.
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
        while k < max {
            let a = self.alpha_at(q);
            if a < lo || a > hi {
                break;
            }
            self.record(q, a);
            k += 1;
            q -= 1;
        }
        k
    }

    /// The α used at the packet starts so far: mean (exact) and percentiles (exact while the
    /// queue held at most 65536 packets; above, counted as 65536 queued packets).
    pub fn alpha_stats(&self) -> AlphaStats {
        let n: u64 = self.qhist.iter().sum();
        if n == 0 {
            return AlphaStats::default();
        }
        let a = |q: usize| self.alpha_at(q as u64) as f64 / ONE as f64;
        let quantile = |p: f64| {
            let target = ((p * n as f64).ceil() as u64).clamp(1, n);
            let mut acc = 0;
            for (q, &c) in self.qhist.iter().enumerate() {
                acc += c;
                if acc >= target {
                    return a(q);
                }
            }
            a(self.qhist.len() - 1)
        };
        let first = self.qhist.iter().position(|&c| c > 0).unwrap_or(0);
        let last = self.qhist.iter().rposition(|&c| c > 0).unwrap_or(0);
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

    /// Priority of `e` (remaining length `rem`) under α `alpha`, with the arrival order: the
    /// lowest is served first.
    #[inline(always)]
    fn rank(alpha: i64, rem: u32, e: &Entry) -> (i128, u64) {
        (i128::from(alpha) * i128::from(rem) + i128::from(e.clock) * i128::from(ONE), e.seq)
    }

    /// The queue of remaining length `rem`, made on first use.
    #[inline]
    fn queue_of(&mut self, rem: u32) -> usize {
        let found = if rem < DENSE { self.qid.get(rem as usize).copied() } else { self.qid_big.get(&rem).copied() };
        match found {
            Some(id) if id != u32::MAX => id as usize,
            _ => {
                let id = self.queues.len() as u32;
                self.queues.push(LenQueue { rem, q: VecDeque::new(), pos: u32::MAX });
                if rem < DENSE {
                    if rem as usize >= self.qid.len() {
                        self.qid.resize(rem as usize + 1, u32::MAX);
                    }
                    self.qid[rem as usize] = id;
                } else {
                    self.qid_big.insert(rem, id);
                }
                id as usize
            }
        }
    }

    /// Puts `e` (remaining length `rem`) into its queue at its arrival position.
    #[inline]
    fn insert(&mut self, rem: u32, e: Entry) {
        self.settled = None;
        let id = self.queue_of(rem);
        let lq = &mut self.queues[id];
        if lq.q.is_empty() {
            lq.pos = self.active.len() as u32;
            self.active.push(id as u32);
        }
        match lq.q.back() {
            Some(b) if b.seq > e.seq => {
                let i = lq.q.partition_point(|x| x.seq < e.seq);
                lq.q.insert(i, e);
            }
            _ => lq.q.push_back(e),
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
        let id = self.queue_of(rem);
        let lq = &mut self.queues[id];
        debug_assert!(lq.q.back().is_none_or(|b| b.seq < e.seq), "a newcomer is the newest");
        let front = lq.q.is_empty();
        if front {
            lq.pos = self.active.len() as u32;
            self.active.push(id as u32);
        }
        lq.q.push_back(e);
        if front {
            let rh = self.bodies[h.slot as usize].left;
            self.settled = Some(Self::narrow(range, rh, h.clock, rem, e.clock));
        }
    }

    /// Takes the front of queue `id`.
    #[inline]
    fn take_front(&mut self, id: u32) -> Entry {
        let lq = &mut self.queues[id as usize];
        let e = lq.q.pop_front().expect("an active queue is not empty");
        if lq.q.is_empty() {
            let p = lq.pos as usize;
            lq.pos = u32::MAX;
            self.active.swap_remove(p);
            if let Some(&moved) = self.active.get(p) {
                self.queues[moved as usize].pos = p as u32;
            }
        }
        e
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
        let mut best: Option<(u32, (i128, u64))> = None;
        for &id in &self.active {
            let lq = &self.queues[id as usize];
            let f = lq.q.front().expect("an active queue is not empty");
            let k = Self::rank(alpha, lq.rem, f);
            if best.is_none_or(|(_, b)| k < b) {
                best = Some((id, k));
            }
        }
        let head = match (self.head, best) {
            (Some(h), Some((id, k))) => {
                let hrem = self.bodies[h.slot as usize].left;
                if k < Self::rank(alpha, hrem, &h) {
                    self.insert(hrem, h);
                    self.take_front(id)
                } else {
                    h
                }
            }
            (Some(h), None) => h,
            (None, Some((id, _))) => self.take_front(id),
            (None, None) => unreachable!("messages are queued"),
        };
        self.settled = Some(self.reach(head));
        Some(self.send(head))
    }

    /// The α (fixed point) under which `head` beats every queue front by rank alone:
    /// α·r_h + 65536·c_h < α·r_m + 65536·c_m for each front m (its queue's oldest, so the
    /// strongest of the queue under any α). With d = r_h − r_m and e = 65536·(c_h − c_m) that is
    /// α·d < −e: an upper bound ⌊(−e−1)/d⌋ when d > 0, a lower bound ⌊e/−d⌋ + 1 when d < 0,
    /// nothing when d = 0 (then the arrival order decides, whatever α is). Ties in rank
    /// (decided by arrival order) fall outside, which only costs a scan.
    fn reach(&self, head: Entry) -> (i64, i64) {
        let rh = self.bodies[head.slot as usize].left;
        let mut range = (i64::MIN, i64::MAX);
        for &id in &self.active {
            let lq = &self.queues[id as usize];
            let f = lq.q.front().expect("an active queue is not empty");
            range = Self::narrow(range, rh, head.clock, lq.rem, f.clock);
        }
        range
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
        // From `q_high` queued packets up α is `high`: those starts are recorded at once.
        let mut q = packets;
        if q >= self.q_high.max(1) {
            let m = q - self.q_high.max(1) + 1;
            self.record_many(q, m, self.high);
            q -= m;
        }
        for q in (1..=q).rev() {
            let a = self.alpha_at(q);
            self.record(q, a);
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
        ) {
            let t = tr(low, low + span, gain);
            let mut p = TrackSched::new(t, in_order);
            let mut r = Reference { t, in_order, msgs: Vec::new(), clock: 0, seq: 0 };
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
            let mut id = 0u32;
            for op in ops {
                match op {
                    Op::Arrive { flow, len } => {
                        if one.is_empty() && flow == 0 {
                            // A lone message: passed through one, bypassed by the other.
                            one.enqueue(Message::new(id, flow, len)).unwrap();
                            while one.dequeue().is_some() {}
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
                                Some(pk) => if pk.last { want.push((i, pk.item)); },
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
            prop_assert_eq!(&one.qhist, &bulk.qhist);
            prop_assert_eq!(one.alpha_sum.to_bits(), bulk.alpha_sum.to_bits());
            prop_assert_eq!(one.alpha_stats(), bulk.alpha_stats());
        }
    }

    /// `record_many` equals as many `record` calls, bit for bit: across the histogram's last bin,
    /// and where the α sum leaves the range in which its additions are exact.
    #[test]
    fn record_many_equals_single_records() {
        let t = tr(1.0, 100.0, 1.0);
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
            assert_eq!(a.qhist, b.qhist, "{sum} {top} {m}");
            assert_eq!(a.alpha_sum.to_bits(), b.alpha_sum.to_bits(), "{sum} {top} {m}: {} vs {}", a.alpha_sum, b.alpha_sum);
        }
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
