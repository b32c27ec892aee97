//! The policy the harness runs: a [`PolicySpec`] of the one vocabulary (`schedlab_policy::spec`:
//! parsed, labelled and built there), the payload it schedules, and `prio`'s per-message α.
//!
//! `prio` (§10) takes each message's α from the traffic file: an entry's `alpha:X` column gives
//! every message of that entry α = X (entries without one use [`schedlab_policy::DEFAULT_ALPHA`]).
//! The scheduler learns which entry a message belongs to from its ring position: each client
//! records, before it pushes the first packet of an entry, the ring position where the entry
//! starts ([`EntryAlphas::begin`]); [`WithAlpha`] looks the position up at enqueue.

use std::sync::atomic::{AtomicU64, Ordering};

use schedlab_policy::{Alpha, Message, Packet, Policy, PolicyError, SpecError};

pub use schedlab_policy::{Dialect, Family, PolicySpec};

use crate::traffic::Spec;

/// The policy's payload: which client, which ring position (first packet of the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub client: u32,
    pub pos: u64,
}

/// A burst is one message for this policy (RR, RR′, the alpha family): it enters the ring whole
/// or not at all, and the policy sees it as one message.
pub fn message_level(spec: &PolicySpec) -> bool {
    spec.family() == Family::Message
}

/// A policy name refused by `-alg NAME [-alpha X]` (or `predict --algs`), as the front ends say
/// it: `unknown -alg 'NAME': use ...` with the harness dialect's vocabulary.
pub fn alg_error(e: SpecError) -> anyhow::Error {
    match e {
        SpecError::Unknown { name, dialect } => {
            anyhow::anyhow!("unknown -alg '{name}': use {}", schedlab_policy::spec::vocabulary(dialect))
        }
        SpecError::BadAlpha { name, msg } if name.trim().eq_ignore_ascii_case("alpha") => anyhow::anyhow!("-alpha: {msg}"),
        e => anyhow::anyhow!("-alg: {e}"),
    }
}

/// The α of every program entry of every client, and the ring position where each entry started.
#[derive(Debug)]
pub struct EntryAlphas {
    /// Per client, per entry: its first ring position (`u64::MAX` until the client begins it).
    starts: Vec<Box<[AtomicU64]>>,
    alphas: Vec<Vec<Option<Alpha>>>,
}

impl EntryAlphas {
    /// The entries of `programs` (one program per client); α values were validated by the parser.
    pub fn new(programs: &[Vec<Spec>]) -> EntryAlphas {
        EntryAlphas {
            starts: programs.iter().map(|p| p.iter().map(|_| AtomicU64::new(u64::MAX)).collect()).collect(),
            alphas: programs.iter().map(|p| p.iter().map(|s| s.alpha.and_then(|a| Alpha::new(a).ok())).collect()).collect(),
        }
    }

    /// Client `client` begins entry `entry` at ring position `pos` (call before pushing any of
    /// its packets: the ring's publication then carries this store to the scheduler).
    pub fn begin(&self, client: usize, entry: usize, pos: u64) {
        if let Some(s) = self.starts.get(client).and_then(|s| s.get(entry)) {
            s.store(pos, Ordering::Release);
        }
    }

    /// The α of the message whose first packet is at `pos` in `client`'s ring: that of the last
    /// entry begun at or before `pos`.
    pub fn alpha(&self, client: usize, pos: u64) -> Option<Alpha> {
        let starts = self.starts.get(client)?;
        // Begun entries start at non-decreasing positions; the others are u64::MAX.
        let k = starts.partition_point(|s| s.load(Ordering::Acquire) <= pos);
        k.checked_sub(1).and_then(|k| self.alphas[client][k])
    }
}

/// A policy whose messages get their α from `alpha_of(item)` at enqueue (`prio`, §10); every
/// other call is the inner policy's.
pub struct WithAlpha<P, F> {
    pub inner: P,
    alpha_of: F,
}

impl<P, F> WithAlpha<P, F> {
    pub fn new(inner: P, alpha_of: F) -> Self {
        WithAlpha { inner, alpha_of }
    }
}

impl<T: Copy, P: Policy<T>, F: Fn(&T) -> Option<Alpha>> Policy<T> for WithAlpha<P, F> {
    #[inline]
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        let msg = match (self.alpha_of)(&msg.item) {
            Some(a) => msg.with_alpha(a),
            None => msg,
        };
        self.inner.enqueue(msg)
    }
    #[inline]
    fn dequeue(&mut self) -> Option<Packet<T>> {
        self.inner.dequeue()
    }
    #[inline]
    fn dequeue_many<G: FnMut(u64, T)>(&mut self, n: u64, done: &mut G) -> u64 {
        self.inner.dequeue_many(n, done)
    }
    #[inline]
    fn bypass(&mut self, packets: u64) -> bool {
        self.inner.bypass(packets)
    }
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
    fn queued_messages(&self) -> usize {
        self.inner.queued_messages()
    }
    fn queued_packets(&self) -> u64 {
        self.inner.queued_packets()
    }
    fn label(&self) -> String {
        self.inner.label()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Bps, Nanos};

    #[test]
    fn entries_give_their_alpha_by_ring_position() {
        let mut a = Spec::fixed(Nanos(1), Bps(1), 1500, 1);
        a.alpha = Some(2.0);
        let mut b = a.clone();
        b.alpha = None;
        let mut c = a.clone();
        c.alpha = Some(50.0);
        let e = EntryAlphas::new(&[vec![a, b, c]]);
        assert_eq!(e.alpha(0, 0), None, "nothing begun yet");
        e.begin(0, 0, 0);
        assert_eq!(e.alpha(0, 7), Alpha::new(2.0).ok());
        e.begin(0, 1, 10);
        e.begin(0, 2, 10); // entry 1 pushed nothing
        assert_eq!(e.alpha(0, 9), Alpha::new(2.0).ok());
        assert_eq!(e.alpha(0, 10), Alpha::new(50.0).ok());
        assert_eq!(e.alpha(1, 0), None, "no such client");
        let mut p = WithAlpha::new(schedlab_policy::AlphaSched::with_alpha(Alpha::new(1.0).unwrap()), |i: &Item| {
            e.alpha(i.client as usize, i.pos)
        });
        p.enqueue(Message::new(Item { client: 0, pos: 0 }, 0, 3)).unwrap();
        assert_eq!(p.dequeue().unwrap().item.pos, 0);
        p.enqueue(Message::new(Item { client: 0, pos: 10 }, 1, 5)).unwrap();
        assert!(p.queued_packets() == 7 && p.label() == "1");
    }
}
