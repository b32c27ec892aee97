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
//!
//! ## Layout
//! `sched` holds the scheduler ([`AlphaSched`], its [`Policy`](crate::Policy) implementation and
//! the configuration types), `classes` the per-length FIFOs and their tournament, `rest` the
//! structures for every waiting message not in a class (the tail, the sorted vector or heap, the
//! preempted heads) and the choice of the next message among all of them. `lean` holds
//! [`LeanAlpha`], the same decisions for the fixed-α case with every message a small tag in its
//! length's FIFO (no slab): the simulator's fast path for the report's alpha strategies.

mod classes;
mod lean;
mod rest;
mod sched;

use std::cmp::Ordering;

pub use lean::{LeanAlpha, LEAN_CLASSES};
pub(crate) use sched::{num_label, track_label};
pub use sched::{Alpha, AlphaConfig, AlphaSched, Tracking, ALPHA_MAX};

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

/// Rank of a key as one integer: (priority, arrival) in lexicographic order, lowest served first.
#[inline(always)]
fn rank(k: &Key) -> u128 {
    (u128::from((k.key as u64) ^ (1 << 63)) << 64) | u128::from(k.seq)
}
