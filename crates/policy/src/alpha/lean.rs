//! The lean form of [`AlphaSched`] for the common case of the report's runs: a fixed α > 0 or
//! shortest-first, no §11 ordering, no per-message or tracking α, and at most [`LEAN_CLASSES`]
//! message lengths, all known up front. The simulator replays its alpha strategies through it.
//!
//! It makes exactly the decisions of [`AlphaSched`] in that case (tested below against it, call
//! for call, with and without frequent renormalisation; the simulator also compares whole runs).
//! With a fixed α a newcomer's priority is `clock + α·l` and the clock never goes back, so the
//! messages of one length enter in priority order: each length is a FIFO and the next message is
//! the best of the class fronts and of the stack of preempted heads (see the module documentation
//! for why ties come out oldest first). What differs from [`AlphaSched`] is only the layout:
//! - every class FIFO, the head and the preempted stack hold whole entries (priority, arrival
//!   number, packets left, the caller's tag and the length), so there is no slab of message bodies
//!   to allocate from, index and free;
//! - the classes are made up front, one per possible length (longest first, as [`AlphaSched`]
//!   orders them), so a newcomer's class is one table look-up;
//! - taking the next message skips the tournament over the classes when nothing was preempted and
//!   no class holds a message (the common case below saturation);
//! - a message is only a small `Copy` tag (the simulator's arrival time) and its length, so
//!   entries stay a few scalars: a wider payload copied through the stack in vector halves and
//!   read back across them stalled store forwarding on every completed message.

use super::classes::{tournament, MAX_CLASSES, MAX_CLASS_LEN};
use super::sched::ONE;
#[cfg(any(doc, test))]
use super::AlphaSched;
use super::{Alpha, AlphaConfig};

/// Length classes a [`LeanAlpha`] can hold: as many as [`AlphaSched`] keeps apart.
pub const LEAN_CLASSES: usize = MAX_CLASSES;

/// A waiting message: its priority, arrival number (ties go to the lower), packets left, the
/// caller's tag and the length. A few scalars, so that copies stay in registers.
#[derive(Clone, Copy, Debug)]
struct Entry<T> {
    key: i64,
    seq: u64,
    tag: T,
    left: u32,
    len: u32,
}

impl<T: Copy + Default> Entry<T> {
    /// A free slot; as the head, no message (a real entry has packets left).
    #[inline(always)]
    fn empty() -> Self {
        Entry { key: i64::MAX, seq: 0, tag: T::default(), left: 0, len: 0 }
    }
}

/// A FIFO of entries in a power-of-two ring that is never empty of slots, so the front slot can
/// be read even when the FIFO is empty (a stale entry), which lets callers select, not branch.
#[derive(Clone, Debug)]
struct Fifo<T> {
    buf: Vec<Entry<T>>,
    /// Front and one past the back, unmasked.
    head: usize,
    tail: usize,
}

impl<T: Copy + Default> Fifo<T> {
    fn new() -> Self {
        Fifo { buf: vec![Entry::empty(); 16], head: 0, tail: 0 }
    }
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.head == self.tail
    }
    #[inline(always)]
    fn push(&mut self, e: Entry<T>) {
        if self.tail.wrapping_sub(self.head) == self.buf.len() {
            self.grow();
        }
        let m = self.buf.len() - 1;
        self.buf[self.tail & m] = e;
        self.tail = self.tail.wrapping_add(1);
    }
    #[cold]
    fn grow(&mut self) {
        let m = self.buf.len() - 1;
        let mut v = vec![Entry::empty(); self.buf.len() * 2];
        for (k, slot) in v.iter_mut().enumerate().take(self.buf.len()) {
            *slot = self.buf[self.head.wrapping_add(k) & m];
        }
        self.tail = self.buf.len();
        self.head = 0;
        self.buf = v;
    }
    /// The front slot: the front entry, or a stale one when empty.
    #[inline(always)]
    fn front(&self) -> &Entry<T> {
        &self.buf[self.head & (self.buf.len() - 1)]
    }
    /// Takes the front entry (the FIFO is not empty).
    #[inline(always)]
    fn pop(&mut self) -> Entry<T> {
        let e = *self.front();
        self.head = self.head.wrapping_add(1);
        e
    }
    fn for_each_mut(&mut self, mut f: impl FnMut(&mut Entry<T>)) {
        let m = self.buf.len() - 1;
        for k in 0..self.tail.wrapping_sub(self.head) {
            f(&mut self.buf[self.head.wrapping_add(k) & m]);
        }
    }
}

/// Fixed-α (or shortest-first) alpha scheduling of messages known by a `Copy` tag and a length;
/// see the module documentation.
#[derive(Clone, Debug)]
pub struct LeanAlpha<T> {
    /// α in fixed point (1 for shortest-first).
    alpha: i64,
    /// Clock increment per packet: [`ONE`], or 0 for shortest-first.
    tick_step: i64,
    /// Node clock in fixed point, since the last renormalisation.
    tick: i64,
    renorm_fx: i64,
    renormalisations: u64,
    seq: u64,
    /// The message being sent (an empty entry, with no packet left, when none).
    head: Entry<T>,
    /// Message length → class (only lengths that can occur are looked up).
    class_of: Vec<u8>,
    /// Priority of each class's front; `i64::MAX` when empty or unused.
    keys: [i64; LEAN_CLASSES],
    queues: [Fifo<T>; LEAN_CLASSES],
    /// Messages in the classes.
    waiting: usize,
    /// Preempted heads, best on top (last).
    preempted: Vec<Entry<T>>,
}

impl<T: Copy + Default> LeanAlpha<T> {
    /// The lean scheduler for `cfg` when messages have one of `lengths` packets, or `None` when the
    /// configuration needs more than it offers (tracking, §11 order, α = 0, too many lengths).
    pub fn new(cfg: &AlphaConfig, lengths: &[u32]) -> Option<LeanAlpha<T>> {
        if cfg.tracking.is_some() || cfg.in_order || !(cfg.infinite || cfg.alpha > Alpha::ZERO) {
            return None;
        }
        if lengths.is_empty() || lengths.len() > LEAN_CLASSES || lengths.iter().any(|&l| l == 0 || l > MAX_CLASS_LEN) {
            return None;
        }
        let mut by_len = lengths.to_vec();
        by_len.sort_unstable_by(|a, b| b.cmp(a));
        by_len.dedup();
        let mut class_of = vec![0u8; by_len[0] as usize + 1];
        for (c, &l) in by_len.iter().enumerate() {
            class_of[l as usize] = c as u8;
        }
        Some(LeanAlpha {
            alpha: if cfg.infinite { 1 } else { cfg.alpha.fx() },
            tick_step: if cfg.infinite { 0 } else { ONE },
            tick: 0,
            renorm_fx: (cfg.renormalize_at.min(1 << 40) as i64).saturating_mul(ONE),
            renormalisations: 0,
            seq: 0,
            head: Entry::empty(),
            class_of,
            keys: [i64::MAX; LEAN_CLASSES],
            queues: std::array::from_fn(|_| Fifo::new()),
            waiting: 0,
            preempted: Vec::new(),
        })
    }

    /// How many times the clock was renormalised.
    pub fn renormalisations(&self) -> u64 {
        self.renormalisations
    }

    /// True when no message waits.
    pub fn is_empty(&self) -> bool {
        self.head.left == 0 && self.waiting == 0 && self.preempted.is_empty()
    }

    /// A message of `len` packets arrives (`len` is one of the lengths given to [`LeanAlpha::new`]).
    #[inline(always)]
    pub fn enqueue(&mut self, tag: T, len: u32) {
        let c = usize::from(self.class_of[len as usize]) % LEAN_CLASSES;
        // No overflow: α < 2^46 in fixed point, l ≤ 2^12 and the clock stays below 2^47.
        let key = self.alpha * i64::from(len) + self.tick;
        let e = Entry { key, seq: self.seq, tag, left: len, len };
        self.seq += 1;
        if self.head.left > 0 && key < self.head.key {
            // A head ranks before every waiting message, so the stack stays best on top.
            self.preempted.push(std::mem::replace(&mut self.head, e));
            return;
        }
        // Priorities grow within a class: the front changes only when the class was empty.
        let q = &mut self.queues[c];
        self.keys[c] = std::hint::select_unpredictable(q.is_empty(), key, self.keys[c]);
        q.push(e);
        self.waiting += 1;
    }

    /// The class with the best front; ties go to the lower index, the longer and older message.
    #[inline(always)]
    fn best(&self) -> usize {
        tournament(&self.keys)
    }

    /// Takes the front of class `c` (which is not empty).
    #[inline(always)]
    fn pop_class(&mut self, c: usize) -> Entry<T> {
        let c = c % LEAN_CLASSES;
        let q = &mut self.queues[c];
        let e = q.pop();
        self.keys[c] = std::hint::select_unpredictable(q.is_empty(), i64::MAX, q.front().key);
        self.waiting -= 1;
        e
    }

    /// The next message to send, taken from the classes or the preempted heads.
    #[inline(always)]
    fn pop(&mut self) -> Option<Entry<T>> {
        let Some(p) = self.preempted.last() else {
            if self.waiting == 0 {
                return None;
            }
            let c = self.best();
            return Some(self.pop_class(c));
        };
        if self.waiting == 0 {
            return self.preempted.pop();
        }
        let c = self.best();
        let key = self.keys[c];
        if p.key < key || (p.key == key && p.seq < self.queues[c % LEAN_CLASSES].front().seq) {
            self.preempted.pop()
        } else {
            Some(self.pop_class(c))
        }
    }

    /// Sends up to `n` packets in a row, calling `done(i, tag, len)` for each message whose last
    /// packet was the `i`-th; returns how many were sent. As [`AlphaSched`]'s `dequeue_many`: nothing can preempt the head without an arrival, so it runs until
    /// it completes, then the next starts.
    #[inline(always)]
    pub fn dequeue_many(&mut self, n: u64, mut done: impl FnMut(u64, T, u32)) -> u64 {
        if n == 0 {
            return 0;
        }
        let mut h = self.head;
        if h.left == 0 {
            match self.pop() {
                Some(e) => h = e,
                None => return 0,
            }
        }
        let mut i = 0;
        loop {
            let rem = n - i;
            let left = u64::from(h.left);
            if left > rem {
                h.left -= rem as u32;
                h.key -= self.alpha * rem as i64;
                i = n;
                break;
            }
            i += left;
            done(i - 1, h.tag, h.len);
            // The next message starts at once (with no packet sent when the run ends here).
            match self.pop() {
                Some(e) => h = e,
                None => {
                    h = Entry::empty();
                    break;
                }
            }
        }
        self.head = h;
        self.tick += self.tick_step * i as i64;
        if self.tick >= self.renorm_fx {
            self.renormalise();
        }
        i
    }

    /// A message of `packets` packets was sent whole while nothing waited ([`AlphaSched`]'s
    /// `bypass`): only the clock moves.
    #[inline(always)]
    pub fn bypass(&mut self, packets: u64) {
        debug_assert!(self.is_empty());
        self.tick += self.tick_step * packets as i64;
        if self.tick >= self.renorm_fx {
            self.renormalise();
        }
    }

    /// α in fixed point, `None` for shortest-first: lanes sorted by it (`None` last) agree with
    /// shortest-first from some point on (see [`LeanAlpha::agrees_with_shortest_first`]).
    pub fn fixed_alpha(&self) -> Option<i64> {
        (self.tick_step != 0).then_some(self.alpha)
    }

    /// True when this scheduler, with nothing waiting, would send a busy period of `packets`
    /// packets (the messages that arrive until every queue is empty again) whose first and last
    /// arrivals are `spread` packet starts apart exactly as shortest-first does, and its clock
    /// would not be renormalised within it: then [`LeanAlpha::skip_busy_period`] may stand for
    /// replaying it. (`spread` is below `packets`: the last message's packets start after it.)
    ///
    /// Why α > `spread` is enough: a message's priority is α × (its packets left) + (the clock at
    /// its arrival), and shortest-first ranks by packets left, oldest first on a tie. Two
    /// messages of the period arrive at most `spread` packet starts apart, so their clocks differ
    /// by less than α: when their packets left differ, that term decides as in shortest-first,
    /// and when they are equal, the older one's lower clock (or, equal clocks, its lower arrival
    /// number) decides, as in shortest-first.
    pub fn agrees_with_shortest_first(&self, packets: u64, spread: u64) -> bool {
        debug_assert!(spread < packets.max(1));
        let within = self.tick.saturating_add(self.tick_step.saturating_mul(packets as i64)) < self.renorm_fx;
        let agrees = self.tick_step == 0 || self.alpha > (spread as i64).saturating_mul(ONE);
        self.is_empty() && agrees && within
    }

    /// A busy period of `packets` packets in `messages` messages that shortest-first sent, when
    /// [`LeanAlpha::agrees_with_shortest_first`] said this scheduler sends it alike: only the
    /// clock and the arrival count move, as if it had been replayed.
    pub fn skip_busy_period(&mut self, packets: u64, messages: u64) {
        debug_assert!(self.agrees_with_shortest_first(packets, 0));
        self.tick += self.tick_step * packets as i64;
        self.seq += messages;
    }

    /// Shifts the clock and every priority down by the clock (no decision changes).
    #[cold]
    fn renormalise(&mut self) {
        let shift = self.tick;
        self.tick = 0;
        if self.head.left > 0 {
            self.head.key -= shift;
        }
        for (c, q) in self.queues.iter_mut().enumerate() {
            q.for_each_mut(|e| e.key -= shift);
            self.keys[c] = if q.is_empty() { i64::MAX } else { q.front().key };
        }
        self.preempted.iter_mut().for_each(|e| e.key -= shift);
        self.renormalisations += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, Policy};

    /// Random arrivals, runs of packet starts and bypasses, through the lean form and the policy
    /// alike: the same messages complete at the same packet, and the clock is renormalised the same
    /// number of times.
    #[test]
    fn makes_the_policys_decisions() {
        let lens_sets: [&[u32]; 4] = [&[1, 2, 3, 4, 5, 20], &[1], &[7, 3, 4096, 1, 2, 9, 11, 5], &[2, 30]];
        let mut s = 0x1234_5678_u64;
        let mut rnd = move || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            s >> 33
        };
        for lens in lens_sets {
            for (alpha, infinite) in [(1.0, false), (2.5, false), (10.0, false), (100.0, false), (1e6, false), (0.0, true)] {
                for renorm in [1 << 30, 300] {
                    let base =
                        if infinite { AlphaConfig::shortest_first() } else { AlphaConfig::fixed(Alpha::new(alpha).unwrap()) };
                    let cfg = AlphaConfig { renormalize_at: renorm, ..base };
                    let mut lean = LeanAlpha::<f64>::new(&cfg, lens).expect("a lean configuration");
                    let mut pol: AlphaSched<(f64, u32)> = AlphaSched::new(cfg);
                    for step in 0..40_000 {
                        let r = rnd() % 100;
                        if r < 30 {
                            let len = lens[(rnd() % lens.len() as u64) as usize];
                            let t = f64::from(step);
                            if lean.is_empty() && r < 3 {
                                assert!(pol.is_empty());
                                lean.bypass(u64::from(len));
                                assert!(pol.bypass(u64::from(len)));
                            } else {
                                lean.enqueue(t, len);
                                pol.enqueue(Message::new((t, len), 0, len)).unwrap();
                            }
                        } else {
                            let n = rnd() % 12;
                            let mut a = Vec::new();
                            let mut b = Vec::new();
                            let got_a = lean.dequeue_many(n, |i, t, len| a.push((i, t, len)));
                            let got_b = pol.dequeue_many(n, &mut |i, (t, len): (f64, u32)| b.push((i, t, len)));
                            assert_eq!(got_a, got_b, "{lens:?} α {alpha} step {step}");
                            assert_eq!(a, b, "{lens:?} α {alpha} step {step}");
                        }
                    }
                    assert_eq!(lean.renormalisations(), pol.renormalisations(), "{lens:?} α {alpha}");
                    if renorm == 300 && !infinite {
                        assert!(lean.renormalisations() > 10);
                    }
                }
            }
        }
    }

    /// Busy periods from an empty queue: every α that says it agrees with shortest-first for the
    /// period's packets and spread sends its messages at the same packet starts as shortest-first
    /// (accepting α > spread − 1 instead fails this test), and
    /// after `skip_busy_period` on a copy, the next periods go on alike (clock and arrival count
    /// as if replayed). Some α do not agree (or the statement is empty) and some do.
    #[test]
    fn agrees_with_shortest_first_within_short_busy_periods() {
        let lens = [1u32, 2, 3, 4, 5, 20];
        let mut s = 0x9e37_79b9_u64;
        let mut rnd = move || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            s >> 33
        };
        let (mut agreed, mut declined) = (0, 0);
        for alpha in [0.5, 1.0, 3.0, 6.0, 10.0, 30.0, 60.0, 100.0] {
            let cfg = AlphaConfig { renormalize_at: 5_000, ..AlphaConfig::fixed(Alpha::new(alpha).unwrap()) };
            let mut a = LeanAlpha::<f64>::new(&cfg, &lens).unwrap();
            let mut skipped = a.clone();
            let mut sf = LeanAlpha::<f64>::new(&AlphaConfig::shortest_first(), &lens).unwrap();
            for period in 0..3_000 {
                // A busy period: arrivals between runs of packet starts until every queue empties.
                let mut steps = Vec::new();
                let (mut packets, mut messages) = (0u64, 0u64);
                // Packet starts before the period's last arrival.
                let mut spread;
                let mut waiting = 0u64;
                loop {
                    let len = lens[(rnd() % 6) as usize];
                    spread = packets - waiting;
                    steps.push((true, u64::from(len)));
                    packets += u64::from(len);
                    messages += 1;
                    waiting += u64::from(len);
                    let run = 1 + rnd() % 6;
                    let n = run.min(waiting);
                    steps.push((false, n));
                    waiting -= n;
                    if waiting == 0 || rnd() % 4 == 0 {
                        steps.push((false, waiting));
                        break;
                    }
                }
                let agrees = a.agrees_with_shortest_first(packets, spread);
                assert_eq!(agrees, skipped.agrees_with_shortest_first(packets, spread), "the copy's state is the replayed one's");
                let (mut got_a, mut got_sf) = (Vec::new(), Vec::new());
                for (k, &(arrive, n)) in steps.iter().enumerate() {
                    let t = (period * 100 + k) as f64;
                    if arrive {
                        a.enqueue(t, n as u32);
                        sf.enqueue(t, n as u32);
                    } else {
                        assert_eq!(a.dequeue_many(n, |i, t, _| got_a.push((k, i, t))), n);
                        assert_eq!(sf.dequeue_many(n, |i, t, _| got_sf.push((k, i, t))), n);
                    }
                }
                assert!(a.is_empty() && sf.is_empty());
                if agrees {
                    assert_eq!(got_a, got_sf, "α {alpha}, period {period} of {packets} packets, spread {spread}");
                    skipped.skip_busy_period(packets, messages);
                    agreed += 1;
                } else {
                    skipped = a.clone();
                    declined += 1;
                }
                assert_eq!((skipped.tick, skipped.seq), (a.tick, a.seq), "α {alpha}, period {period}");
            }
        }
        assert!(agreed > 1_000 && declined > 1_000, "{agreed} agreed, {declined} declined");
    }

    #[test]
    fn declines_what_it_does_not_cover() {
        let fixed = AlphaConfig::fixed(Alpha::new(10.0).unwrap());
        assert!(LeanAlpha::<f64>::new(&fixed, &[1, 2]).is_some());
        assert!(LeanAlpha::<f64>::new(&AlphaConfig::fixed(Alpha::ZERO), &[1, 2]).is_none());
        assert!(LeanAlpha::<f64>::new(&AlphaConfig { in_order: true, ..fixed }, &[1, 2]).is_none());
        let one = Alpha::new(1.0).unwrap();
        assert!(LeanAlpha::<f64>::new(&AlphaConfig::tracking(one, Alpha::new(100.0).unwrap(), 1.0), &[1, 2]).is_none());
        assert!(LeanAlpha::<f64>::new(&fixed, &[1, 2, 3, 4, 5, 6, 7, 8, 9]).is_none());
        assert!(LeanAlpha::<f64>::new(&fixed, &[1, 5000]).is_none());
        assert!(LeanAlpha::<f64>::new(&fixed, &[]).is_none());
    }
}
