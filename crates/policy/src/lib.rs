//! # schedlab-policy — scheduling policies, written once
//!
//! This is the bottom layer of schedlab. A *policy* decides, each time the outlet (a link, an
//! interconnect port, a NIC ring) can take one more packet, **which** packet goes next. Nothing in
//! this crate does I/O or reads a clock: the only notion of time a policy has is the number of
//! packets it has itself sent (the "node clock" `c` of the alpha-scheduling report), so the same
//! code runs in the discrete-event simulator (`schedlab-sim`, simulated time) and in the real
//! multi-threaded harness (`schedlab-sched`, wall-clock time), in the spirit of dummynet's `dn_alg`
//! table shared by its kernel and userland tests.
//!
//! ## The one trait
//! [`Policy`] is deliberately narrow: *messages made of packets arrive* ([`Policy::enqueue`]) and
//! *the outlet takes one packet at a time* ([`Policy::dequeue`]). A message carries an opaque,
//! copyable payload `T` that is handed back with every packet of it, so the caller keeps its own
//! bookkeeping (arrival time in the simulator, ring slot in the harness) without the policy knowing.
//!
//! ## The policies
//! Message-level policies of L. Cherkasova and T. Rokicki, *Alpha Message Scheduling for
//! Packet-Switched Interconnects*, HP Labs (§3–§6, §10, §11, §13; semantics of the §16 listing):
//! - [`Fifo`] — first in, first out (§3; the listing's α = 0).
//! - [`RoundRobin`] — one packet per message per turn; the served message goes to the tail when its
//!   packet *starts* service (§4; listing α = −1).
//! - [`RoundRobinHead`] — RR′: new messages are inserted at the head, behind other new messages not
//!   yet served (§4; listing α = −2).
//! - [`AlphaSched`] — priority `c + α·l`, lowest first, the head's priority drops by α per packet
//!   sent, a strictly lower newcomer preempts, ties go oldest first (§6). Also shortest-remaining-first
//!   (α = ∞, §5), tracking α (§13), per-message α (§10) and in-order delivery per flow (§11).
//!
//! Flow-level (weighted) policies live beside them and implement the same trait: [`Drr`] (deficit
//! round robin), [`Wf2qPlus`] and [`Qfq`], each over flows configured by [`FlowWeight`]s (see
//! [`any::AnyPolicy`]).
//!
//! ## One vocabulary: names to policies
//! Front ends never map names to policies themselves: [`PolicySpec::parse`] reads a name (`fifo`,
//! `mrr`, `rr'`, `alpha:10` or `10`, `sf`, `track:1:100`, `prio`, `drr`, `wf2qp`, `qfq`),
//! [`PolicySpec::label`] gives its table label and [`PolicySpec::build`] makes the policy, so a
//! name means one policy in every front end and every policy is reachable from each. The seeds'
//! own spellings that differ between front ends (`rr` is the report's message round robin in the
//! simulator but deficit round robin in the harness; the listing's `-1`/`-2`) are resolved by an
//! explicit [`Dialect`]. The full table is in [`spec`].
//!
//! ```
//! use schedlab_policy::{BuildOptions, Dialect, FlowWeight, Policy, PolicySpec};
//! let sim_rr = PolicySpec::parse("rr", Dialect::Sim).unwrap();
//! let sched_rr = PolicySpec::parse("rr", Dialect::Sched).unwrap();
//! assert_eq!((sim_rr.label().as_str(), sched_rr.label().as_str()), ("RR", "DRR"));
//! assert_eq!(PolicySpec::parse(&sched_rr.name(), Dialect::Sim).unwrap(), sched_rr);
//! let flows = vec![FlowWeight::new(1, 1500); 4];
//! let p = sched_rr.build::<u32>(&BuildOptions::default().flows(&flows));
//! assert_eq!(p.label(), "DRR");
//! ```
#![forbid(unsafe_code)]

pub mod alpha;
pub mod any;
pub mod drr;
pub mod qfq;
mod ring;
pub mod rr;
pub mod spec;
pub mod track;
pub mod wf2qp;

pub use alpha::{Alpha, AlphaConfig, AlphaSched, LeanAlpha, Tracking};
pub use any::AnyPolicy;
pub use drr::{Drr, FlowWeight};
pub use qfq::Qfq;
pub use rr::{Fifo, RoundRobin, RoundRobinHead};
pub use spec::{BuildOptions, Dialect, Family, PolicySpec, SpecError, DEFAULT_ALPHA};
pub use track::{AlphaStats, TrackSched};
pub use wf2qp::Wf2qPlus;

/// Identifies the sender (application, client thread, flow) a message belongs to.
pub type FlowId = u32;

/// A message offered to a policy: `packets` packets of `packet_bytes` bytes each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Message<T> {
    /// Caller's payload, handed back with every packet of this message.
    pub item: T,
    /// Which sender it comes from (used by flow-level policies and by §11 in-order delivery).
    pub flow: FlowId,
    /// Number of packets, at least 1.
    pub packets: u32,
    /// Size of each packet in bytes (message-level policies ignore it; byte-fair ones use it).
    pub packet_bytes: u32,
    /// Per-message α (§10 "alpha as a priority"); `None` uses the policy's own α.
    pub alpha: Option<Alpha>,
}

impl<T> Message<T> {
    /// A message of `packets` unit-size packets from `flow`, with the policy's own α.
    pub fn new(item: T, flow: FlowId, packets: u32) -> Self {
        Message { item, flow, packets, packet_bytes: 1, alpha: None }
    }
    /// Sets the size of each packet in bytes.
    pub fn with_bytes(mut self, packet_bytes: u32) -> Self {
        self.packet_bytes = packet_bytes;
        self
    }
    /// Sets a per-message α (§10).
    pub fn with_alpha(mut self, alpha: Alpha) -> Self {
        self.alpha = Some(alpha);
        self
    }
}

/// One packet taken by the outlet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<T> {
    /// The payload of the message this packet belongs to.
    pub item: T,
    /// The message's flow.
    pub flow: FlowId,
    /// The packet's size in bytes.
    pub bytes: u32,
    /// True when this is the last packet of its message (the message is now delivered).
    pub last: bool,
}

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// A message must have at least one packet.
    #[error("a message must have at least one packet (got 0)")]
    EmptyMessage,
    /// Packets must have at least one byte.
    #[error("a packet must have at least one byte (got 0)")]
    EmptyPacket,
    /// The flow is not configured in a flow-level policy.
    #[error("flow {flow} is not configured (the policy has {flows} flows); configure more flows")]
    UnknownFlow { flow: FlowId, flows: usize },
    /// A per-message α is out of range.
    #[error("per-message alpha {0} is out of range: use a finite value in [0, {max}]", max = alpha::ALPHA_MAX)]
    BadAlpha(f64),
}

/// A scheduling policy: messages made of packets arrive; the outlet takes one packet at a time.
///
/// Contract, checked by the property tests of this crate:
/// - `dequeue` returns `Some` if and only if `!is_empty()` (work conservation);
/// - every packet enqueued is dequeued exactly once, and the packet marked `last` is the final one
///   of its message;
/// - no method reads a clock or does I/O; identical call sequences give identical results.
pub trait Policy<T: Copy> {
    /// Offers a message. Its packets become eligible at once.
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError>;
    /// Takes the next packet, or `None` when nothing waits.
    fn dequeue(&mut self) -> Option<Packet<T>>;
    /// Takes up to `n` packets in a row, exactly as `n` calls of [`Policy::dequeue`] would, and
    /// calls `done(i, item)` for each message whose last packet was the `i`-th taken (from 0).
    /// Returns how many were taken (fewer than `n` only if the policy ran empty).
    ///
    /// Policies whose order cannot change without an arrival (FIFO, alpha: the head runs on until
    /// it completes) override this to cost O(messages completed) rather than O(packets); the
    /// simulator relies on it between arrivals. Property tests check it against `dequeue`.
    #[inline]
    fn dequeue_many<F: FnMut(u64, T)>(&mut self, n: u64, done: &mut F) -> u64
    where
        Self: Sized,
    {
        for i in 0..n {
            match self.dequeue() {
                Some(p) => {
                    if p.last {
                        done(i, p.item);
                    }
                }
                None => return i,
            }
        }
        n
    }
    /// A lock-step simulator's shortcut: a message of `packets` packets arrived while this policy
    /// was empty and was sent whole before anything else arrived, so every policy would have sent
    /// it the same way; the caller sent it without passing it through. Returns true when the
    /// policy's later decisions are exactly those it would make had the message passed through
    /// (after advancing any packet clock by `packets` here); false, the default, when it cannot
    /// promise that (say, flow-level policies that remember finish tags), and the caller must then
    /// enqueue the message and dequeue its packets as usual. Call it only while the policy is
    /// empty. Property tests check it against passing the message through.
    #[inline]
    fn bypass(&mut self, packets: u64) -> bool {
        let _ = packets;
        false
    }
    /// True when no packet waits.
    fn is_empty(&self) -> bool;
    /// Messages with packets still waiting.
    fn queued_messages(&self) -> usize;
    /// Packets still waiting.
    fn queued_packets(&self) -> u64;
    /// Short human name, as printed in tables (`FIFO`, `RR`, `RR'`, `10`, `SF`, `DRR`, ...).
    fn label(&self) -> String;
}

pub(crate) fn check_message<T>(msg: &Message<T>) -> Result<(), PolicyError> {
    if msg.packets == 0 {
        return Err(PolicyError::EmptyMessage);
    }
    if msg.packet_bytes == 0 {
        return Err(PolicyError::EmptyPacket);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;
    /// Drains a policy, returning the (item, last) sequence.
    pub fn drain<T: Copy, P: Policy<T>>(p: &mut P) -> Vec<(T, bool)> {
        let mut out = Vec::new();
        while let Some(pk) = p.dequeue() {
            out.push((pk.item, pk.last));
        }
        assert!(p.is_empty());
        out
    }
}
