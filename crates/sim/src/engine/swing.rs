//! The swing lane: one lane that moves between the generating thread and the worker while a
//! lane-parallel run goes on, so that two threads stay busy although their fixed groups of lanes
//! cannot be split evenly.
//!
//! With two threads the lanes are split into two fixed groups, one per thread, by a cost model
//! measured on the machine (see `run::Costs`). Lanes come in sizes of a tenth to a fifth of a
//! thread's work, so the best fixed split still leaves one thread several percent behind the other
//! (9% on the report's lanes at 95% on the Intel VM), and a model calibrated on one thread
//! mispredicts by more on other CPUs (AMD: the generating thread's hand-over costs twice the
//! generator's own time). One lane is therefore kept out of both groups and swings: whichever
//! thread owns it replays it, and it moves to the other thread when the chunk queue between them
//! says the owner has fallen behind. Over a run it spends on each side the share of chunks that
//! keeps both busy, whatever the machine; neither thread ever waits for it.
//!
//! The queue's fill is the signal: the generating thread has sent `sent` chunks and the worker
//! has finished `done`. When the lag `sent − done` reaches the rule's high mark the worker is the
//! slower side and the generating thread asks for the lane; when it falls to the low mark the
//! worker is about to starve and asks for it. The owner hands it over at its next chunk boundary,
//! with the index of the next chunk it needs: the worker attaches it when that chunk arrives, the
//! generating thread replays it at once over the chunks it still holds (the lane was behind it).
//! Every lane replays every chunk exactly once and in order, on one thread at a time, so results
//! stay identical bit for bit.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The two sides a swing lane moves between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Side {
    Nobody = 0,
    /// The thread that generates the chunks (and replays group 0).
    Generator = 1,
    /// The worker thread of group 1.
    Worker = 2,
}

impl Side {
    fn from_u8(v: u8) -> Side {
        match v {
            1 => Side::Generator,
            2 => Side::Worker,
            _ => Side::Nobody,
        }
    }
    fn other(self) -> Side {
        match self {
            Side::Generator => Side::Worker,
            Side::Worker => Side::Generator,
            Side::Nobody => Side::Nobody,
        }
    }
}

/// When each side asks for the lane, in chunks of lag (`sent − done`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Rule {
    /// The generating thread asks when the lag is at least this.
    pub(super) generator_at: usize,
    /// The worker asks when the lag is at most this.
    pub(super) worker_at: usize,
}

/// A lane in transit and the index (within the segment) of the next chunk it must replay.
pub(super) type Travelling<L> = (L, usize);

/// The state the two threads share about the swing lane `L` and the queue between them.
pub(super) struct Handover<L> {
    rule: Rule,
    slot: Mutex<Option<Travelling<L>>>,
    /// Where the lane in `slot` goes (`Nobody`: the slot is empty).
    to: AtomicU8,
    /// The side that last asked for the lane (a stale request from the side that now owns it
    /// is ignored).
    wanted_by: AtomicU8,
    sent: AtomicUsize,
    done: AtomicUsize,
    moves: AtomicUsize,
}

impl<L> Handover<L> {
    pub(super) fn new(rule: Rule) -> Handover<L> {
        Handover {
            rule,
            slot: Mutex::new(None),
            to: AtomicU8::new(Side::Nobody as u8),
            wanted_by: AtomicU8::new(Side::Nobody as u8),
            sent: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            moves: AtomicUsize::new(0),
        }
    }

    /// The generating thread has sent one more chunk.
    pub(super) fn sent_one(&self) {
        self.sent.fetch_add(1, Ordering::Release);
    }

    /// The worker has finished one more chunk.
    pub(super) fn done_one(&self) {
        self.done.fetch_add(1, Ordering::Release);
    }

    /// How many times the lane changed sides.
    pub(super) fn moves(&self) -> usize {
        self.moves.load(Ordering::Relaxed)
    }

    fn lag(&self) -> usize {
        self.sent.load(Ordering::Acquire).saturating_sub(self.done.load(Ordering::Acquire))
    }

    /// The lane if it is in transit to `me`.
    pub(super) fn take(&self, me: Side) -> Option<Travelling<L>> {
        if Side::from_u8(self.to.load(Ordering::Acquire)) != me {
            return None;
        }
        let got = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.to.store(Side::Nobody as u8, Ordering::Release);
        got
    }

    /// Called by the owner `me` after replaying chunk `next − 1`: hands the lane to the other side
    /// if that side asked for it, else gives it back.
    pub(super) fn offer(&self, me: Side, lane: L, next: usize) -> Option<L> {
        if Side::from_u8(self.wanted_by.load(Ordering::Acquire)) != me.other() {
            return Some(lane);
        }
        self.wanted_by.store(Side::Nobody as u8, Ordering::Relaxed);
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some((lane, next));
        self.moves.fetch_add(1, Ordering::Relaxed);
        self.to.store(me.other() as u8, Ordering::Release);
        None
    }

    /// Called by `me`, which does not own the lane: asks for it when the lag says `me` has time
    /// to spare, not while the lane is in the slot. (A worker that has taken the lane but waits
    /// for the chunk it needs next has emptied the slot: the generating thread may then ask, and
    /// the lane may come back after one chunk on the worker. Harmless: it costs a move.)
    pub(super) fn maybe_ask(&self, me: Side) {
        if Side::from_u8(self.to.load(Ordering::Acquire)) != Side::Nobody {
            return;
        }
        let lag = self.lag();
        let ask = match me {
            Side::Generator => lag >= self.rule.generator_at,
            Side::Worker => lag <= self.rule.worker_at,
            Side::Nobody => false,
        };
        if ask {
            self.wanted_by.store(me as u8, Ordering::Release);
        }
    }

    /// After both threads stopped: the lane if it is still in transit.
    pub(super) fn into_travelling(self) -> Option<Travelling<L>> {
        self.slot.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Rule = Rule { generator_at: 5, worker_at: 2 };

    /// Counts of chunks sent and done, as the two threads would make them.
    fn lagging(h: &Handover<u32>, sent: usize, done: usize) {
        (0..sent).for_each(|_| h.sent_one());
        (0..done).for_each(|_| h.done_one());
    }

    #[test]
    fn each_side_asks_at_its_mark_and_the_owner_hands_over_at_a_chunk_boundary() {
        // Lag 4: neither side asks.
        let h = Handover::new(RULE);
        lagging(&h, 6, 2);
        h.maybe_ask(Side::Generator);
        h.maybe_ask(Side::Worker);
        assert_eq!(h.offer(Side::Worker, 7, 3), Some(7));
        assert_eq!(h.offer(Side::Generator, 7, 6), Some(7));
        assert_eq!(h.moves(), 0);
        // Lag 5: the generating thread asks; the worker hands it over after chunk 2.
        h.sent_one();
        h.maybe_ask(Side::Generator);
        assert_eq!(h.offer(Side::Worker, 7, 3), None);
        assert_eq!(h.take(Side::Worker), None, "the lane goes to the other side");
        assert_eq!(h.take(Side::Generator), Some((7, 3)));
        assert_eq!(h.take(Side::Generator), None, "taken once");
        assert_eq!(h.moves(), 1);
        // A stale request from the side that now owns the lane is ignored.
        assert_eq!(h.offer(Side::Generator, 7, 7), Some(7));
        // Lag 2: the worker asks; the generating thread hands it over after chunk 6.
        lagging(&h, 0, 5);
        h.maybe_ask(Side::Worker);
        assert_eq!(h.offer(Side::Generator, 7, 7), None);
        // While the lane is in the slot, neither side asks.
        lagging(&h, 4, 0);
        h.maybe_ask(Side::Generator);
        assert_eq!(h.take(Side::Worker), Some((7, 7)));
        assert_eq!(h.offer(Side::Worker, 7, 8), Some(7), "the generating thread asked while the lane was in the slot");
        assert_eq!(h.moves(), 2);
    }

    #[test]
    fn a_lane_left_in_the_slot_is_found_at_the_end() {
        let h = Handover::new(Rule { generator_at: 0, worker_at: usize::MAX });
        h.maybe_ask(Side::Worker);
        assert_eq!(h.offer(Side::Generator, 3u32, 9), None);
        assert_eq!(h.into_travelling(), Some((3, 9)));
    }
}
