//! The waiting messages not in a length class: a FIFO tail, a sorted vector (a heap when long) and
//! the stack of preempted heads; [`Waiting`] also picks the next message among them and the classes.

use std::collections::{BinaryHeap, VecDeque};

use super::classes::Classes;
use super::{rank, Key};
use crate::ring::Ring;

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

/// The waiting messages other than the head: a FIFO `tail` of newcomers that arrived in priority
/// order behind everything else (O(1): the usual case for small α, and for any fixed α among
/// messages of one length, §9), the `rest` for the others, the length `classes` and the
/// `preempted` heads; the next message is the best of their fronts.
#[derive(Clone, Debug)]
pub(super) struct Waiting {
    pub(super) tail: VecDeque<Key>,
    rest: Rest,
    pub(super) classes: Classes,
    /// Preempted heads, best on top. A head was the best waiting message when it started (or it
    /// preempted the one that was), its priority only drops while it is served, and nothing else
    /// joins this stack meanwhile; so each preempted head ranks before every entry below it.
    pub(super) preempted: Ring<Key>,
}

impl Waiting {
    pub(super) fn new() -> Self {
        Waiting { tail: VecDeque::new(), rest: Rest::Sorted(Vec::new()), classes: Classes::new(), preempted: Ring::default() }
    }
    /// A head preempted by a newcomer.
    #[inline(always)]
    pub(super) fn push_preempted(&mut self, k: Key) {
        debug_assert!(self.preempted.back().is_none_or(|t| rank(&k) < rank(t)), "preempted heads stack in order");
        self.preempted.push_back(k);
    }
    #[inline]
    pub(super) fn push(&mut self, k: Key) {
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
    pub(super) fn pop(&mut self) -> Option<Key> {
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
    pub(super) fn len(&self) -> usize {
        self.tail.len() + self.rest.len() + self.classes.len + self.preempted.len()
    }
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub(super) fn shift(&mut self, shift: i64) {
        self.tail.iter_mut().for_each(|k| k.key -= shift);
        self.rest.shift(shift);
        self.classes.shift(shift);
        self.preempted.for_each_mut(|k| k.key -= shift);
    }
}
