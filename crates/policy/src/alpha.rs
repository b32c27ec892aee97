//! Alpha scheduling (§6 of the report), with shortest-first (§5), tracking α (§13), per-message α
//! (§10) and in-order delivery per flow (§11).
//!
//! A message of `l` packets enters with priority `c + α·l`, where `c` is the policy's node clock
//! (packets it has sent so far). The lowest priority is served first. The head message's priority
//! drops by α for each packet it sends, so it stays up to date; a newcomer preempts it only when
//! strictly lower; ties go to the oldest message.
//!
//! ## Exactness and the bounded clock
//! Priorities are kept in fixed point (α is rounded to 1/65536), so every comparison is exact
//! integer arithmetic, as in the listing where α and the clock are integers. §6 says the clock is
//! "easy to keep bounded without changing the scheduling solution": whenever it passes
//! [`AlphaConfig::renormalize_at`], the clock and every stored priority are shifted down by the same
//! amount. Only differences of priorities are ever compared, so no decision changes (tested below
//! by running the same workload with and without frequent renormalisation). The report's own 97%
//! run overflowed its 32-bit clock; this one cannot.
//!
//! ## Data structure
//! The head (the message currently being sent) is held apart from the others, which wait keyed by
//! (priority, arrival sequence), with the message bodies in a slab. With the policy's own fixed
//! α > 0 (or SF), messages of one length enter in priority order, so each length is a FIFO
//! (`Classes`: O(1) push; the next message is the best of at most eight fronts, found by a
//! branch-free tournament on the priorities alone, ties going to the longer and therefore older
//! message). A preempted head goes on a stack, best on top. Everything else (per-message α,
//! tracking α, §11 ordering, α = 0, a ninth length) goes to a FIFO tail when it is behind every
//! waiting message, otherwise into a sorted vector (a binary heap when long) by binary search
//! instead of the listing's linear scan of a linked list. The next message is the best of these
//! fronts; sending packets of the head is O(1), and a run of packet starts with no arrival costs
//! O(messages completed).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use crate::ring::Ring;
use crate::rr::Pending;
use crate::{check_message, Message, Packet, Policy, PolicyError};

/// Largest finite α accepted. Larger values behave as shortest-first in any realistic run; use
/// [`AlphaConfig::shortest_first`] for α = ∞.
pub const ALPHA_MAX: f64 = 1e9;
const FRAC_BITS: u32 = 16;
const ONE: i64 = 1 << FRAC_BITS;

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

/// Heap key: priority, arrival sequence (ties go oldest first) and the slot of the message body.
/// Kept small (24 bytes) so heap moves are cheap; the body lives in a slab.
#[derive(Clone, Copy, Debug)]
struct Key {
    key: i64,
    seq: u64,
    slot: u32,
}

impl PartialEq for Key {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key && self.seq == o.seq
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    // BinaryHeap is a max-heap: the *lowest* (key, seq) must compare greatest.
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key).then_with(|| o.seq.cmp(&self.seq))
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

/// The waiting messages other than the head, ordered by (priority, arrival).
///
/// Short queues (the common case: a few tens of messages at 95% load) are a vector sorted with the
/// next message *last*, so taking it is O(1) and inserting is a binary search plus a short memmove;
/// at these sizes that beats a binary heap by a wide margin. Past [`TO_HEAP`] entries it turns
/// into a binary heap (O(log n) both ways) and back below [`TO_SORTED`].
#[derive(Clone, Debug)]
enum Rest {
    Sorted(Vec<Key>),
    Heap(BinaryHeap<Key>),
}

const TO_HEAP: usize = 512;
const TO_SORTED: usize = 64;

impl Rest {
    /// The entry that goes last, when cheap to know (sorted form only).
    #[inline(always)]
    fn last_rank(&self) -> Option<(i64, u64)> {
        match self {
            Rest::Sorted(v) => v.first().map(|k| (k.key, k.seq)),
            Rest::Heap(_) => None,
        }
    }
    #[inline(always)]
    fn next_rank(&self) -> Option<(i64, u64)> {
        match self {
            Rest::Sorted(v) => v.last().map(|k| (k.key, k.seq)),
            Rest::Heap(h) => h.peek().map(|k| (k.key, k.seq)),
        }
    }
    #[inline]
    fn push(&mut self, k: Key) {
        match self {
            Rest::Sorted(v) => {
                // `Key`'s order is reversed (the lowest priority value is greatest), so ascending
                // `Key` order puts the next message last. Keys never tie (seq is unique).
                let i = v.partition_point(|x| *x < k);
                v.insert(i, k);
                if v.len() > TO_HEAP {
                    *self = Rest::Heap(BinaryHeap::from(std::mem::take(v)));
                }
            }
            Rest::Heap(h) => h.push(k),
        }
    }
    #[inline]
    fn pop(&mut self) -> Option<Key> {
        match self {
            Rest::Sorted(v) => v.pop(),
            Rest::Heap(h) => {
                let k = h.pop();
                if h.len() < TO_SORTED {
                    *self = Rest::Sorted(std::mem::take(h).into_sorted_vec());
                }
                k
            }
        }
    }
    fn len(&self) -> usize {
        match self {
            Rest::Sorted(v) => v.len(),
            Rest::Heap(h) => h.len(),
        }
    }
    /// Shifts every key down by `shift` (order is unchanged).
    fn shift(&mut self, shift: i64) {
        match self {
            Rest::Sorted(v) => v.iter_mut().for_each(|k| k.key -= shift),
            Rest::Heap(h) => {
                let mut v = std::mem::take(h).into_vec();
                v.iter_mut().for_each(|k| k.key -= shift);
                *h = BinaryHeap::from(v);
            }
        }
    }
}

/// Rank of a key as one integer: (priority, arrival) in lexicographic order, lowest served first.
#[inline(always)]
fn rank(k: &Key) -> u128 {
    (u128::from((k.key as u64) ^ (1 << 63)) << 64) | u128::from(k.seq)
}

/// Classes a lane keeps apart (message lengths seen first get one; later lengths use `Rest`).
const MAX_CLASSES: usize = 8;
/// Longest message length that can have a class.
const MAX_CLASS_LEN: u32 = 1 << 12;

/// Newcomers with the policy's own α, one FIFO per message length.
///
/// With a fixed α a newcomer's priority is `clock + α·l`, and the clock never goes back, so the
/// messages of one length enter in priority order and leave in arrival order: each length is a
/// FIFO, pushing is O(1), and the next message is the best of at most [`MAX_CLASSES`] fronts. (§9
/// of the report makes the same observation: among messages of one length alpha scheduling is
/// FIFO.) A head that is preempted has a smaller priority than its length implies and goes to the
/// stack of preempted heads instead.
///
/// Only the fronts' priorities are compared, not their arrival order: for α > 0 two fronts of
/// different lengths with equal priorities `c₁ + α·l₁ = c₂ + α·l₂` have `c₁ > c₂` when `l₁ < l₂`,
/// so the longer one entered at an earlier clock and is the older. Keeping the classes sorted by
/// length, longest first, and taking the first strict minimum therefore breaks ties by arrival
/// exactly. (With SF every class front's priority is its length, so there are no ties; α = 0 has
/// no classes: every newcomer is then behind all others anyway.)
#[derive(Clone, Debug)]
struct Classes {
    /// Message length → class index + 1 (0: no class yet).
    of_len: Vec<u8>,
    /// Length of each class, longest first.
    lens: Vec<u32>,
    /// One FIFO per class (unused ones empty); indices are taken modulo [`MAX_CLASSES`], which
    /// lets the compiler drop the bounds checks.
    queues: [Ring<Key>; MAX_CLASSES],
    /// Priority of each class's front; `i64::MAX` when empty (also for unused classes). Real
    /// priorities stay far below it: the clock is renormalised and α·l ≤ 2⁴⁶·2¹².
    keys: [i64; MAX_CLASSES],
    len: usize,
}

impl Classes {
    fn new() -> Self {
        Classes {
            of_len: Vec::new(),
            lens: Vec::new(),
            queues: std::array::from_fn(|_| Ring::default()),
            keys: [i64::MAX; MAX_CLASSES],
            len: 0,
        }
    }

    /// The class of messages of `packets` packets, created on first sight while there is room.
    #[inline(always)]
    fn class_of(&mut self, packets: u32) -> Option<usize> {
        match self.of_len.get(packets as usize) {
            Some(&c) if c > 0 => Some(usize::from(c - 1)),
            _ => self.new_class(packets),
        }
    }

    /// Adds a class in its place in the length order (rare: at most [`MAX_CLASSES`] times).
    #[cold]
    fn new_class(&mut self, packets: u32) -> Option<usize> {
        if packets > MAX_CLASS_LEN || self.lens.len() == MAX_CLASSES {
            return None;
        }
        if self.of_len.len() <= packets as usize {
            self.of_len.resize(packets as usize + 1, 0);
        }
        let at = self.lens.partition_point(|&l| l > packets);
        self.lens.insert(at, packets);
        // The last slot is unused and empty: rotating it to `at` opens the new class there.
        self.queues[at..].rotate_right(1);
        self.keys.copy_within(at..MAX_CLASSES - 1, at + 1);
        self.keys[at] = i64::MAX;
        for (c, &l) in self.lens.iter().enumerate() {
            self.of_len[l as usize] = c as u8 + 1;
        }
        Some(at)
    }

    /// Appends `k` to class `c`.
    #[inline(always)]
    fn push(&mut self, c: usize, k: Key) {
        // Priorities grow within a class, so the front changes only when the class was empty;
        // whether it was is unpredictable, so the cached front is selected, not branched on.
        let c = c % MAX_CLASSES;
        let q = &mut self.queues[c];
        self.keys[c] = std::hint::select_unpredictable(q.is_empty(), k.key, self.keys[c]);
        q.push_back(k);
        self.len += 1;
    }

    /// The class with the best front (meaningful when any class holds a message).
    #[inline(always)]
    fn best(&self) -> usize {
        // A fixed three-level tournament over all eight slots (unused ones hold `i64::MAX`): no
        // loop and no branch, every step a conditional move (which class is best is
        // unpredictable). The right side wins only when strictly lower, so ties go to the lower
        // index, the longer class.
        #[inline(always)]
        fn min(a: (usize, i64), b: (usize, i64)) -> (usize, i64) {
            let right = b.1 < a.1;
            (std::hint::select_unpredictable(right, b.0, a.0), std::hint::select_unpredictable(right, b.1, a.1))
        }
        let k = &self.keys;
        let ab = min(min((0, k[0]), (1, k[1])), min((2, k[2]), (3, k[3])));
        let cd = min(min((4, k[4]), (5, k[5])), min((6, k[6]), (7, k[7])));
        min(ab, cd).0
    }

    /// The front of class `c` (which is not empty).
    #[inline(always)]
    fn front(&self, c: usize) -> &Key {
        self.queues[c % MAX_CLASSES].front().expect("the best class is not empty")
    }

    /// Takes the front of class `c` (which is not empty).
    #[inline(always)]
    fn pop(&mut self, c: usize) -> Key {
        let c = c % MAX_CLASSES;
        let q = &mut self.queues[c];
        let k = q.pop_front().expect("the best class is not empty");
        // Whether the class is now empty is unpredictable: select, don't branch.
        self.keys[c] = std::hint::select_unpredictable(q.is_empty(), i64::MAX, q.front_or_stale().key);
        self.len -= 1;
        k
    }

    fn shift(&mut self, shift: i64) {
        for (c, q) in self.queues.iter_mut().enumerate() {
            q.for_each_mut(|k| k.key -= shift);
            self.keys[c] = q.front().map_or(i64::MAX, |k| k.key);
        }
    }
}

/// The waiting messages other than the head: a FIFO `tail` of newcomers that arrived in priority
/// order behind everything else (O(1): the usual case for small α, and for any fixed α among
/// messages of one length, §9), the `rest` for the others, the length `classes` and the
/// `preempted` heads; the next message is the best of their fronts.
#[derive(Clone, Debug)]
struct Waiting {
    tail: VecDeque<Key>,
    rest: Rest,
    classes: Classes,
    /// Preempted heads, best on top. A head was the best waiting message when it started (or it
    /// preempted the one that was), its priority only drops while it is served, and nothing else
    /// joins this stack meanwhile; so each preempted head ranks before every entry below it.
    preempted: Ring<Key>,
}

impl Waiting {
    fn new() -> Self {
        Waiting { tail: VecDeque::new(), rest: Rest::Sorted(Vec::new()), classes: Classes::new(), preempted: Ring::default() }
    }
    /// A head preempted by a newcomer.
    #[inline(always)]
    fn push_preempted(&mut self, k: Key) {
        debug_assert!(self.preempted.back().is_none_or(|t| rank(&k) < rank(t)), "preempted heads stack in order");
        self.preempted.push_back(k);
    }
    #[inline]
    fn push(&mut self, k: Key) {
        let r = (k.key, k.seq);
        let behind_all = match self.tail.back() {
            Some(b) => (b.key, b.seq) < r,
            None => match self.rest.len() {
                0 => true,
                _ => self.rest.last_rank().is_some_and(|m| m < r),
            },
        };
        if behind_all {
            self.tail.push_back(k);
        } else {
            self.rest.push(k);
        }
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<Key> {
        let c = self.classes.best();
        if self.tail.is_empty() && self.rest.len() == 0 {
            // Every newcomer had a length class: the best class front or the top preempted head.
            // With every class empty the best class's priority is `i64::MAX`, so a preempted
            // head wins the first test; a tie with a real front is settled by arrival.
            let key = self.classes.keys[c];
            return match self.preempted.back() {
                Some(p) if p.key < key || (p.key == key && (self.classes.len == 0 || p.seq < self.classes.front(c).seq)) => {
                    self.preempted.pop_back()
                }
                _ => (self.classes.len != 0).then(|| self.classes.pop(c)),
            };
        }
        self.pop_general(c)
    }

    /// `pop` when messages without a class wait too.
    fn pop_general(&mut self, c: usize) -> Option<Key> {
        let best = if self.classes.len == 0 { u128::MAX } else { rank(self.classes.front(c)) };
        let tail = self.tail.front().map_or(u128::MAX, rank);
        let rest = self.rest.next_rank().map_or(u128::MAX, |(key, seq)| rank(&Key { key, seq, slot: 0 }));
        let pre = self.preempted.back().map_or(u128::MAX, rank);
        let m = best.min(tail).min(rest).min(pre);
        if m == u128::MAX {
            None
        } else if m == pre {
            self.preempted.pop_back()
        } else if m == best {
            Some(self.classes.pop(c))
        } else if m == rest {
            self.rest.pop()
        } else {
            self.tail.pop_front()
        }
    }
    fn len(&self) -> usize {
        self.tail.len() + self.rest.len() + self.classes.len + self.preempted.len()
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn shift(&mut self, shift: i64) {
        self.tail.iter_mut().for_each(|k| k.key -= shift);
        self.rest.shift(shift);
        self.classes.shift(shift);
        self.preempted.for_each_mut(|k| k.key -= shift);
    }
}

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
            crate::spec::track_label("track-insert", t.low.get(), t.high.get(), t.gain)
        } else {
            self.cfg.alpha.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
