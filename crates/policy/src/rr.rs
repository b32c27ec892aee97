//! FIFO and the two round-robin variants of the alpha-scheduling report (§3, §4).
//!
//! All three keep plain ring buffers, so each operation is O(1); the §16 listing's sorted linked
//! list with integer priorities degenerates to exactly these orders (see the module tests).

use crate::ring::Ring;
use crate::{check_message, FlowId, Message, Packet, Policy, PolicyError};

/// A message still waiting, with its unsent packet count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending<T> {
    pub item: T,
    pub flow: FlowId,
    pub left: u32,
    pub bytes: u32,
}

impl<T: Copy> Pending<T> {
    pub(crate) fn of(msg: &Message<T>) -> Self {
        Pending { item: msg.item, flow: msg.flow, left: msg.packets, bytes: msg.packet_bytes }
    }
    /// Sends one packet of this message.
    #[inline]
    pub(crate) fn take(&mut self) -> Packet<T> {
        self.left -= 1;
        Packet { item: self.item, flow: self.flow, bytes: self.bytes, last: self.left == 0 }
    }
}

/// A line of waiting messages with its packet count: the state FIFO and RR share.
#[derive(Debug, Clone)]
struct Line<T> {
    q: Ring<Pending<T>>,
    packets: u64,
}

impl<T: Copy> Default for Line<T> {
    fn default() -> Self {
        Line { q: Ring::default(), packets: 0 }
    }
}

impl<T: Copy> Line<T> {
    #[inline(always)]
    fn push_back(&mut self, msg: &Message<T>) -> Result<(), PolicyError> {
        check_message(msg)?;
        self.packets += u64::from(msg.packets);
        self.q.push_back(Pending::of(msg));
        Ok(())
    }
}

/// Up to `n` round-robin turns of one packet each over `ring` (the served message moves to the
/// back, or leaves with its last packet: `done` is told, with the turn number); returns the turns
/// taken. Whole rounds in which no message completes change nothing but every packet count (each
/// message is served once and the ring comes back to the same order), so they are taken at once
/// when at least a round's turns remain: only the rounds where a message completes go turn by turn.
#[inline(always)]
fn round_robin<T: Copy, F: FnMut(u64, T)>(ring: &mut Ring<Pending<T>>, n: u64, done: &mut F) -> u64 {
    let mut i = 0;
    while i < n && !ring.is_empty() {
        let len = ring.len() as u64;
        let rest = n - i;
        if len == 1 {
            // One message (the usual case at light load): its turns follow one another.
            let Some(h) = ring.front_mut() else { break };
            let k = rest.min(u64::from(h.left));
            h.left -= k as u32;
            i += k;
            if h.left == 0 {
                done(i - 1, h.item);
                ring.pop_front();
            }
            continue;
        }
        if len == 2 {
            // Two messages (the usual case of a busy period at moderate load), in closed form:
            // they alternate until the one with fewer packets left (the front on a tie) leaves.
            let (Some(mut x), Some(mut y)) = (ring.pop_front(), ring.pop_front()) else { break };
            let (a, b) = (u64::from(x.left), u64::from(y.left));
            // Turns until one leaves: the front leaves at its a-th turn, 2a - 1, the other at 2b.
            let first = if a <= b { 2 * a - 1 } else { 2 * b };
            if rest < first {
                // Nobody leaves: the front gets the odd turns, the other the even ones.
                x.left -= rest.div_ceil(2) as u32;
                y.left -= (rest / 2) as u32;
                let (p, q) = if rest % 2 == 1 { (y, x) } else { (x, y) };
                ring.push_back(p);
                ring.push_back(q);
                i += rest;
                continue;
            }
            if a <= b {
                y.left -= (a - 1) as u32;
                done(i + first - 1, x.item);
                ring.push_back(y);
            } else {
                x.left -= b as u32;
                done(i + first - 1, y.item);
                ring.push_back(x);
            }
            i += first;
            continue;
        }
        if rest >= len {
            let mut least = u32::MAX;
            ring.for_each_mut(|h| least = least.min(h.left));
            // Whole rounds that leave every message at least one packet.
            let rounds = (rest / len).min(u64::from(least) - 1);
            if rounds > 0 {
                ring.for_each_mut(|h| h.left -= rounds as u32);
                i += rounds * len;
            }
        }
        // Then turn by turn, until a round is over (a message leaves) or the turns run out.
        let at = i;
        i += ring.rotate_many(
            (n - i).min(len),
            |h| {
                h.left -= 1;
                h.left > 0
            },
            |k, h| done(at + k, h.item),
        );
    }
    i
}

/// The queries every line-based policy answers the same way.
macro_rules! line_queries {
    ($label:expr) => {
        fn is_empty(&self) -> bool {
            self.0.q.is_empty()
        }
        fn queued_messages(&self) -> usize {
            self.0.q.len()
        }
        fn queued_packets(&self) -> u64 {
            self.0.packets
        }
        fn label(&self) -> String {
            $label.into()
        }
    };
}

/// First in, first out: a message's packets all go before the next message's (§3; listing α = 0).
#[derive(Debug, Clone)]
pub struct Fifo<T>(Line<T>);

impl<T: Copy> Default for Fifo<T> {
    fn default() -> Self {
        Fifo(Line::default())
    }
}

impl<T: Copy> Fifo<T> {
    /// An empty FIFO.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T: Copy> Policy<T> for Fifo<T> {
    #[inline(always)]
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        self.0.push_back(&msg)
    }
    #[inline(always)]
    fn dequeue(&mut self) -> Option<Packet<T>> {
        let l = &mut self.0;
        let head = l.q.front_mut()?;
        let p = head.take();
        if p.last {
            l.q.pop_front();
        }
        l.packets -= 1;
        Some(p)
    }
    #[inline]
    fn dequeue_many<F: FnMut(u64, T)>(&mut self, n: u64, done: &mut F) -> u64 {
        let l = &mut self.0;
        let mut i = 0;
        while i < n {
            let Some(head) = l.q.front_mut() else { break };
            let k = (n - i).min(u64::from(head.left));
            head.left -= k as u32;
            i += k;
            if head.left == 0 {
                done(i - 1, head.item);
                l.q.pop_front();
            }
        }
        l.packets -= i;
        i
    }
    #[inline]
    fn bypass(&mut self, _packets: u64) -> bool {
        // An emptied queue keeps no memory of what it sent.
        debug_assert!(self.is_empty());
        true
    }
    line_queries!("FIFO");
}

/// Round robin over messages, one packet per turn (§4; listing α = −1).
///
/// New messages join the tail. The served message moves to the tail when its packet *starts*
/// service, so a message arriving during that service queues behind it (the listing's `toend`).
#[derive(Debug, Clone)]
pub struct RoundRobin<T>(Line<T>);

impl<T: Copy> Default for RoundRobin<T> {
    fn default() -> Self {
        RoundRobin(Line::default())
    }
}

impl<T: Copy> RoundRobin<T> {
    /// An empty round robin.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T: Copy> Policy<T> for RoundRobin<T> {
    #[inline(always)]
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        self.0.push_back(&msg)
    }
    #[inline(always)]
    fn dequeue(&mut self) -> Option<Packet<T>> {
        let l = &mut self.0;
        let head = l.q.rotate_front(|h| {
            h.left -= 1;
            h.left > 0
        })?;
        l.packets -= 1;
        Some(Packet { item: head.item, flow: head.flow, bytes: head.bytes, last: head.left == 0 })
    }
    #[inline]
    fn dequeue_many<F: FnMut(u64, T)>(&mut self, n: u64, done: &mut F) -> u64 {
        let l = &mut self.0;
        let i = round_robin(&mut l.q, n, done);
        l.packets -= i;
        i
    }
    #[inline]
    fn bypass(&mut self, _packets: u64) -> bool {
        // An emptied queue keeps no memory of what it sent.
        debug_assert!(self.is_empty());
        true
    }
    line_queries!("RR");
}

/// RR′: round robin with new messages inserted at the head (§4; listing α = −2).
///
/// A new message goes in front of every message already served once, but behind other new messages
/// not yet served, so new messages form a FIFO block at the front of the ring: one ring, with the
/// length of that block (usually 0 or 1, so inserting behind it is O(1) in practice).
#[derive(Debug, Clone)]
pub struct RoundRobinHead<T> {
    ring: Ring<Pending<T>>,
    /// New messages not yet served, at the front of `ring`.
    fresh: usize,
    packets: u64,
}

impl<T: Copy> Default for RoundRobinHead<T> {
    fn default() -> Self {
        RoundRobinHead { ring: Ring::default(), fresh: 0, packets: 0 }
    }
}

impl<T: Copy> RoundRobinHead<T> {
    /// An empty RR′.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T: Copy> Policy<T> for RoundRobinHead<T> {
    #[inline(always)]
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        check_message(&msg)?;
        self.packets += u64::from(msg.packets);
        self.ring.insert(self.fresh, Pending::of(&msg));
        self.fresh += 1;
        Ok(())
    }
    #[inline(always)]
    fn dequeue(&mut self) -> Option<Packet<T>> {
        let head = self.ring.rotate_front(|h| {
            h.left -= 1;
            h.left > 0
        })?;
        self.fresh = self.fresh.saturating_sub(1);
        self.packets -= 1;
        Some(Packet { item: head.item, flow: head.flow, bytes: head.bytes, last: head.left == 0 })
    }
    #[inline]
    fn dequeue_many<F: FnMut(u64, T)>(&mut self, n: u64, done: &mut F) -> u64 {
        // The fresh block is served first simply by being at the front; each message served
        // moves to the back (or leaves), as in plain round robin.
        let i = round_robin(&mut self.ring, n, done);
        self.fresh = self.fresh.saturating_sub(i as usize);
        self.packets -= i;
        i
    }
    #[inline]
    fn bypass(&mut self, _packets: u64) -> bool {
        // An emptied queue keeps no memory of what it sent.
        debug_assert!(self.is_empty());
        true
    }
    fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }
    fn queued_messages(&self) -> usize {
        self.ring.len()
    }
    fn queued_packets(&self) -> u64 {
        self.packets
    }
    fn label(&self) -> String {
        "RR'".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::drain;

    #[test]
    fn fifo_sends_whole_messages_in_order() {
        let mut f = Fifo::new();
        f.enqueue(Message::new('a', 0, 2)).unwrap();
        f.enqueue(Message::new('b', 1, 1)).unwrap();
        assert_eq!(drain(&mut f), vec![('a', false), ('a', true), ('b', true)]);
    }

    #[test]
    fn rr_interleaves_one_packet_per_turn() {
        let mut r = RoundRobin::new();
        r.enqueue(Message::new('a', 0, 3)).unwrap();
        r.enqueue(Message::new('b', 1, 2)).unwrap();
        let seq: Vec<char> = drain(&mut r).into_iter().map(|x| x.0).collect();
        assert_eq!(seq, vec!['a', 'b', 'a', 'b', 'a']);
    }

    #[test]
    fn rr_requeues_at_start_of_service() {
        // 'a' is being served (its first packet taken); 'b' arrives during that service and must
        // queue *behind* 'a', which already moved to the tail.
        let mut r = RoundRobin::new();
        r.enqueue(Message::new('a', 0, 3)).unwrap();
        assert_eq!(r.dequeue().unwrap().item, 'a');
        r.enqueue(Message::new('b', 1, 1)).unwrap();
        let seq: Vec<char> = drain(&mut r).into_iter().map(|x| x.0).collect();
        assert_eq!(seq, vec!['a', 'b', 'a']);
    }

    #[test]
    fn rr_prime_puts_new_messages_first_behind_other_new_ones() {
        let mut r = RoundRobinHead::new();
        r.enqueue(Message::new('a', 0, 3)).unwrap();
        assert_eq!(r.dequeue().unwrap().item, 'a');
        r.enqueue(Message::new('b', 1, 2)).unwrap();
        r.enqueue(Message::new('c', 2, 1)).unwrap();
        let seq: Vec<char> = drain(&mut r).into_iter().map(|x| x.0).collect();
        assert_eq!(seq, vec!['b', 'c', 'a', 'b', 'a']);
    }

    /// Long runs of turns over few messages (where whole rounds are taken at once) send what
    /// turn-by-turn dequeues send, for RR and RR', with arrivals between the runs.
    #[test]
    fn whole_rounds_equal_turn_by_turn() {
        fn check<P: Policy<u32>>(mut bulk: P, mut single: P) {
            let lens = [5u32, 9, 3, 12, 1, 40, 2, 7, 7, 30];
            let mut id = 0;
            for (k, &len) in lens.iter().enumerate() {
                for _ in 0..=(k % 3) {
                    bulk.enqueue(Message::new(id, 0, len + id % 4)).unwrap();
                    single.enqueue(Message::new(id, 0, len + id % 4)).unwrap();
                    id += 1;
                }
                let n = [1u64, 4, 17, 60, 3, 200, 9, 33, 100, 1000][k];
                let (got, want) = bulk_and_single(&mut bulk, &mut single, n);
                assert_eq!(got, want, "run {k}");
                assert_eq!(bulk.queued_packets(), single.queued_packets());
            }
            assert!(bulk.is_empty(), "the last run drains both");
        }
        check(RoundRobin::new(), RoundRobin::new());
        check(RoundRobinHead::new(), RoundRobinHead::new());
    }

    /// Packets sent, and the (turn, message) of each message completed.
    type Sent = (u64, Vec<(u64, u32)>);

    /// Up to `n` packets from `bulk` in one `dequeue_many` and from `single` one `dequeue` at a
    /// time.
    fn bulk_and_single<P: Policy<u32>>(bulk: &mut P, single: &mut P, n: u64) -> (Sent, Sent) {
        let mut got = Vec::new();
        let sent = bulk.dequeue_many(n, &mut |i, item| got.push((i, item)));
        let mut want = Vec::new();
        let mut took = 0;
        for i in 0..n {
            let Some(p) = single.dequeue() else { break };
            took += 1;
            if p.last {
                want.push((i, p.item));
            }
        }
        ((sent, got), (took, want))
    }

    /// Bulk dequeues of random sizes over random arrivals give exactly the turn-by-turn
    /// deliveries, for rings of every size (two messages take a closed form).
    #[test]
    fn bulk_turns_equal_turn_by_turn_at_random() {
        fn check<P: Policy<u32>>(mut bulk: P, mut single: P) {
            let mut s = 0x9e37_79b9_u64;
            let mut rnd = move |m: u64| {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (s >> 33) % m
            };
            for id in 0..20_000u32 {
                if rnd(3) > 0 || bulk.is_empty() {
                    let range = if rnd(4) == 0 { 20 } else { 5 };
                    let len = 1 + rnd(range) as u32;
                    bulk.enqueue(Message::new(id, 0, len)).unwrap();
                    single.enqueue(Message::new(id, 0, len)).unwrap();
                }
                let (got, want) = bulk_and_single(&mut bulk, &mut single, rnd(12));
                assert_eq!(got, want, "step {id}");
                assert_eq!(bulk.queued_packets(), single.queued_packets());
                assert_eq!(bulk.queued_messages(), single.queued_messages());
            }
        }
        check(RoundRobin::new(), RoundRobin::new());
        check(RoundRobinHead::new(), RoundRobinHead::new());
    }

    #[test]
    fn zero_packet_message_is_refused() {
        let mut f = Fifo::new();
        assert_eq!(f.enqueue(Message::new(0, 0, 0)), Err(PolicyError::EmptyMessage));
        assert!(f.is_empty());
    }
}
