//! WF2Q+ (J. C. R. Bennett, H. Zhang, *Hierarchical packet fair queueing algorithms*, 1997), the
//! harness's `-alg wf2qp`.
//!
//! Each backlogged flow has a virtual start `S` and finish `F = S + len / weight` for its head
//! packet. A flow is *eligible* when `S ≤ V`; the eligible flow with the smallest `F` is served. The
//! system virtual time advances by `len / Σ weights of backlogged flows` per packet and never lags
//! the smallest `S` (so the policy is work conserving). A flow that becomes backlogged starts at
//! `S = max(F_previous, V)`.
//!
//! ## Arithmetic
//! Virtual times are 64-bit fixed point (`len × 2^24 / weight`) compared with wrapping differences,
//! as dummynet does, so the clock may run forever: only keys within 2^63 of each other are ever
//! compared. Two binary heaps (eligible flows by `F`, ineligible by `S`) make each operation
//! O(log n) in the number of backlogged flows.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::drr::{flow_index, queue_counters, FlowQueue, FlowWeight};
use crate::rr::Pending;
use crate::{Message, Packet, Policy, PolicyError};

const SCALE_BITS: u32 = 24;

/// A virtual time: wrapping 64-bit fixed point, ordered by the sign of the difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Vt(pub u64);

impl Vt {
    #[inline]
    pub(crate) fn add(self, d: u64) -> Vt {
        Vt(self.0.wrapping_add(d))
    }
    #[inline]
    pub(crate) fn max(self, o: Vt) -> Vt {
        if self < o {
            o
        } else {
            self
        }
    }
}
impl Ord for Vt {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        (self.0.wrapping_sub(o.0) as i64).cmp(&0)
    }
}
impl PartialOrd for Vt {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// `len / weight` in virtual-time units.
#[inline]
pub(crate) fn vlen(len: u32, inv_weight: u64) -> u64 {
    u64::from(len).wrapping_mul(inv_weight)
}

#[derive(Debug, Clone)]
struct Wf2qFlow<T> {
    q: FlowQueue<T>,
    weight: u64,
    inv_weight: u64,
    s: Vt,
    f: Vt,
}

/// WF2Q+ over configured flows; see the module documentation.
#[derive(Debug, Clone)]
pub struct Wf2qPlus<T> {
    flows: Vec<Wf2qFlow<T>>,
    eligible: BinaryHeap<Reverse<(Vt, u32)>>,
    waiting: BinaryHeap<Reverse<(Vt, u32)>>,
    v: Vt,
    wsum: u64,
    messages: usize,
    packets: u64,
}

impl<T: Copy> Wf2qPlus<T> {
    /// One flow per entry of `flows`, numbered from 0.
    pub fn new(flows: &[FlowWeight]) -> Self {
        Wf2qPlus {
            flows: flows
                .iter()
                .map(|f| Wf2qFlow {
                    q: FlowQueue::new(),
                    weight: u64::from(f.weight.max(1)),
                    inv_weight: (1u64 << SCALE_BITS) / u64::from(f.weight.max(1)),
                    s: Vt::default(),
                    f: Vt::default(),
                })
                .collect(),
            eligible: BinaryHeap::new(),
            waiting: BinaryHeap::new(),
            v: Vt::default(),
            wsum: 0,
            messages: 0,
            packets: 0,
        }
    }

    /// Files flow `i` (with head start `s`) in the eligible or waiting heap.
    #[inline]
    fn file(&mut self, i: usize) {
        let fl = &self.flows[i];
        if fl.s <= self.v {
            self.eligible.push(Reverse((fl.f, i as u32)));
        } else {
            self.waiting.push(Reverse((fl.s, i as u32)));
        }
    }
}

impl<T: Copy> Policy<T> for Wf2qPlus<T> {
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        let i = flow_index(&msg, self.flows.len())?;
        let v = self.v;
        let fl = &mut self.flows[i];
        let was_idle = fl.q.msgs.is_empty();
        fl.q.msgs.push_back(Pending::of(&msg));
        self.messages += 1;
        self.packets += u64::from(msg.packets);
        if was_idle {
            fl.s = fl.f.max(v);
            fl.f = fl.s.add(vlen(msg.packet_bytes, fl.inv_weight));
            self.wsum += fl.weight;
            self.file(i);
        }
        Ok(())
    }

    fn dequeue(&mut self) -> Option<Packet<T>> {
        if self.eligible.is_empty() {
            // Nothing eligible: jump V to the smallest start (work conservation).
            let Reverse((s, _)) = *self.waiting.peek()?;
            self.v = self.v.max(s);
        }
        while let Some(&Reverse((s, i))) = self.waiting.peek() {
            if s > self.v {
                break;
            }
            self.waiting.pop();
            self.eligible.push(Reverse((self.flows[i as usize].f, i)));
        }
        let Reverse((_, i)) = self.eligible.pop()?;
        let i = i as usize;
        let wsum = self.wsum.max(1);
        let fl = &mut self.flows[i];
        let p = fl.q.take();
        self.v = self.v.add((u64::from(p.bytes) << SCALE_BITS) / wsum);
        if p.last {
            self.messages -= 1;
        }
        self.packets -= 1;
        if let Some(next) = fl.q.head_bytes() {
            fl.s = fl.f;
            fl.f = fl.s.add(vlen(next, fl.inv_weight));
            self.file(i);
        } else {
            self.wsum -= fl.weight;
        }
        Some(p)
    }

    queue_counters!();
    fn label(&self) -> String {
        "WF2Q+".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::drain;

    #[test]
    fn wrapping_virtual_time_orders_across_overflow() {
        let a = Vt(u64::MAX - 5);
        let b = a.add(10);
        assert!(a < b);
        assert_eq!(a.max(b), b);
    }

    #[test]
    fn weights_three_to_one_interleave_smoothly() {
        let mut w = Wf2qPlus::new(&[FlowWeight::new(3, 100), FlowWeight::new(1, 100)]);
        for _ in 0..12 {
            w.enqueue(Message::new('a', 0, 1).with_bytes(100)).unwrap();
            w.enqueue(Message::new('b', 1, 1).with_bytes(100)).unwrap();
        }
        let s: String = (0..8).map(|_| w.dequeue().unwrap().item).collect();
        assert_eq!(s.matches('a').count(), 6, "{s}");
        // WF2Q+ never lets the heavy flow run more than one packet ahead of its fluid share.
        assert!(!s.contains("aaaa"), "{s}");
    }

    #[test]
    fn newcomer_does_not_get_credit_for_idle_time() {
        let mut w = Wf2qPlus::new(&[FlowWeight::new(1, 10), FlowWeight::new(1, 10)]);
        for _ in 0..10 {
            w.enqueue(Message::new('a', 0, 1).with_bytes(10)).unwrap();
        }
        for _ in 0..6 {
            w.dequeue();
        }
        for _ in 0..4 {
            w.enqueue(Message::new('b', 1, 1).with_bytes(10)).unwrap();
        }
        let s: String = drain(&mut w).into_iter().map(|x| x.0).collect();
        assert_eq!(s.len(), 8);
        assert!(s.starts_with("ab") || s.starts_with("ba"), "{s}");
        assert!(!s.contains("bbb"), "{s}");
    }

    #[test]
    fn unknown_flow_is_refused() {
        let mut w: Wf2qPlus<u8> = Wf2qPlus::new(&[FlowWeight::new(1, 10)]);
        assert_eq!(w.enqueue(Message::new(0, 3, 1)), Err(PolicyError::UnknownFlow { flow: 3, flows: 1 }));
        assert!(w.is_empty());
        assert_eq!(w.dequeue(), None);
    }
}
