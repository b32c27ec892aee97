//! [`AnyPolicy`]: every policy behind one enum, so front ends choose at run time while the hot loop
//! stays statically dispatched (no virtual call per packet).

use crate::{AlphaSched, Drr, Fifo, Message, Packet, Policy, PolicyError, Qfq, RoundRobin, RoundRobinHead, TrackSched, Wf2qPlus};

/// Any policy of this crate.
// Variants differ in size (QFQ keeps fixed group tables inline); boxing them would add an
// indirection to every call, which is what this enum exists to avoid.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum AnyPolicy<T> {
    /// First in, first out.
    Fifo(Fifo<T>),
    /// Round robin over messages.
    RoundRobin(RoundRobin<T>),
    /// RR′, new messages at the head.
    RoundRobinHead(RoundRobinHead<T>),
    /// Alpha scheduling (including shortest-first and tracking α).
    Alpha(AlphaSched<T>),
    /// Tracking α ranked by the current α (§13).
    Track(TrackSched<T>),
    /// Deficit round robin over weighted flows.
    Drr(Drr<T>),
    /// WF2Q+ over weighted flows.
    Wf2qPlus(Wf2qPlus<T>),
    /// Quick Fair Queueing over weighted flows.
    Qfq(Qfq<T>),
}

macro_rules! each {
    ($self:expr, $p:ident => $e:expr) => {
        match $self {
            AnyPolicy::Fifo($p) => $e,
            AnyPolicy::RoundRobin($p) => $e,
            AnyPolicy::RoundRobinHead($p) => $e,
            AnyPolicy::Alpha($p) => $e,
            AnyPolicy::Track($p) => $e,
            AnyPolicy::Drr($p) => $e,
            AnyPolicy::Wf2qPlus($p) => $e,
            AnyPolicy::Qfq($p) => $e,
        }
    };
}

impl<T: Copy> Policy<T> for AnyPolicy<T> {
    #[inline]
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        each!(self, p => p.enqueue(msg))
    }
    #[inline]
    fn dequeue(&mut self) -> Option<Packet<T>> {
        each!(self, p => p.dequeue())
    }
    #[inline]
    fn dequeue_many<F: FnMut(u64, T)>(&mut self, n: u64, done: &mut F) -> u64 {
        each!(self, p => p.dequeue_many(n, done))
    }
    #[inline]
    fn bypass(&mut self, packets: u64) -> bool {
        each!(self, p => p.bypass(packets))
    }
    fn is_empty(&self) -> bool {
        each!(self, p => p.is_empty())
    }
    fn queued_messages(&self) -> usize {
        each!(self, p => p.queued_messages())
    }
    fn queued_packets(&self) -> u64 {
        each!(self, p => p.queued_packets())
    }
    fn label(&self) -> String {
        each!(self, p => p.label())
    }
}
