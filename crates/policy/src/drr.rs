//! Deficit round robin (M. Shreedhar, G. Varghese, SIGCOMM '95), the harness's `-alg rr`.
//!
//! Flow-level and weighted: flow `f` gets a quantum of `weight × max_len` bytes per round, so
//! backlogged flows share the outlet in proportion to their weights (in bytes). Every operation is
//! O(1): the active flows form a ring (`VecDeque` of flow ids) and each flow keeps a FIFO of its
//! pending messages, served one packet at a time in arrival order.
//!
//! A flow that empties leaves the ring and forgets its deficit (idle flows earn no credit); when it
//! becomes active again it joins the tail with a fresh quantum.

use std::collections::VecDeque;

use crate::rr::Pending;
use crate::{check_message, FlowId, Message, Packet, Policy, PolicyError};

/// The configuration of one flow of a flow-level weighted policy (DRR, WF2Q+, QFQ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowWeight {
    /// Relative weight, at least 1.
    pub weight: u32,
    /// Largest packet the flow sends, in bytes (at least 1); DRR's quantum is `weight × max_len`.
    pub max_len: u32,
}

impl FlowWeight {
    /// A flow of the given weight and maximum packet length (both clamped to at least 1).
    pub fn new(weight: u32, max_len: u32) -> Self {
        FlowWeight { weight: weight.max(1), max_len: max_len.max(1) }
    }
}

/// Per-flow FIFO of messages shared by the flow-level policies.
#[derive(Debug, Clone)]
pub(crate) struct FlowQueue<T> {
    pub msgs: VecDeque<Pending<T>>,
}

impl<T: Copy> FlowQueue<T> {
    pub(crate) fn new() -> Self {
        FlowQueue { msgs: VecDeque::new() }
    }
    /// Size in bytes of the next packet, if any.
    #[inline]
    pub(crate) fn head_bytes(&self) -> Option<u32> {
        self.msgs.front().map(|m| m.bytes)
    }
    /// Takes the next packet (the queue must not be empty).
    #[inline]
    pub(crate) fn take(&mut self) -> Packet<T> {
        let head = self.msgs.front_mut().expect("take on an empty flow queue");
        let p = head.take();
        if p.last {
            self.msgs.pop_front();
        }
        p
    }
}

/// The counter accessors of a flow-level policy with `messages` and `packets` fields.
macro_rules! queue_counters {
    () => {
        fn is_empty(&self) -> bool {
            self.packets == 0
        }
        fn queued_messages(&self) -> usize {
            self.messages
        }
        fn queued_packets(&self) -> u64 {
            self.packets
        }
    };
}
pub(crate) use queue_counters;

/// Checks the message and returns its flow index.
pub(crate) fn flow_index<T>(msg: &Message<T>, flows: usize) -> Result<usize, PolicyError> {
    check_message(msg)?;
    let f = msg.flow as usize;
    if f >= flows {
        return Err(PolicyError::UnknownFlow { flow: msg.flow as FlowId, flows });
    }
    Ok(f)
}

#[derive(Debug, Clone)]
struct DrrFlow<T> {
    q: FlowQueue<T>,
    quantum: u64,
    deficit: u64,
    active: bool,
}

/// Deficit round robin over configured flows; see the module documentation.
#[derive(Debug, Clone)]
pub struct Drr<T> {
    flows: Vec<DrrFlow<T>>,
    ring: VecDeque<u32>,
    messages: usize,
    packets: u64,
}

impl<T: Copy> Drr<T> {
    /// One flow per entry of `flows`, numbered from 0.
    pub fn new(flows: &[FlowWeight]) -> Self {
        Drr {
            flows: flows
                .iter()
                .map(|f| DrrFlow {
                    q: FlowQueue::new(),
                    quantum: u64::from(f.weight.max(1)) * u64::from(f.max_len.max(1)),
                    deficit: 0,
                    active: false,
                })
                .collect(),
            ring: VecDeque::with_capacity(flows.len()),
            messages: 0,
            packets: 0,
        }
    }
    /// Number of configured flows.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }
}

impl<T: Copy> Policy<T> for Drr<T> {
    #[inline]
    fn enqueue(&mut self, msg: Message<T>) -> Result<(), PolicyError> {
        let f = flow_index(&msg, self.flows.len())?;
        let fl = &mut self.flows[f];
        fl.q.msgs.push_back(Pending::of(&msg));
        if !fl.active {
            fl.active = true;
            fl.deficit = fl.quantum;
            self.ring.push_back(f as u32);
        }
        self.messages += 1;
        self.packets += u64::from(msg.packets);
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self) -> Option<Packet<T>> {
        loop {
            let f = *self.ring.front()? as usize;
            let fl = &mut self.flows[f];
            let need = u64::from(fl.q.head_bytes().expect("active flow has a packet"));
            if fl.deficit >= need {
                fl.deficit -= need;
                let p = fl.q.take();
                if p.last {
                    self.messages -= 1;
                }
                self.packets -= 1;
                if fl.q.msgs.is_empty() {
                    fl.active = false;
                    fl.deficit = 0;
                    self.ring.pop_front();
                }
                return Some(p);
            }
            // Out of credit: next round for this flow.
            fl.deficit += fl.quantum;
            if self.ring.len() > 1 {
                // The front goes to the back (pop + push: inline, where `rotate_left` is an
                // out-of-line call); alone in the ring, the flow stays where it is and the loop
                // gives it the next round at once.
                self.ring.pop_front();
                self.ring.push_back(f as u32);
            }
        }
    }

    queue_counters!();
    fn label(&self) -> String {
        "DRR".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::drain;

    #[test]
    fn equal_weights_alternate_packets_of_max_len() {
        let mut d = Drr::new(&[FlowWeight::new(1, 100), FlowWeight::new(1, 100)]);
        for i in 0..3 {
            d.enqueue(Message::new(('a', i), 0, 1).with_bytes(100)).unwrap();
            d.enqueue(Message::new(('b', i), 1, 1).with_bytes(100)).unwrap();
        }
        let s: Vec<char> = drain(&mut d).into_iter().map(|x| x.0 .0).collect();
        assert_eq!(s, vec!['a', 'b', 'a', 'b', 'a', 'b']);
    }

    #[test]
    fn weights_three_to_one_give_three_packets_per_round() {
        let mut d = Drr::new(&[FlowWeight::new(3, 100), FlowWeight::new(1, 100)]);
        for _ in 0..12 {
            d.enqueue(Message::new('a', 0, 1).with_bytes(100)).unwrap();
            d.enqueue(Message::new('b', 1, 1).with_bytes(100)).unwrap();
        }
        let s: String = (0..8).map(|_| d.dequeue().unwrap().item).collect();
        assert_eq!(s, "aaabaaab");
    }

    #[test]
    fn deficit_is_byte_based() {
        // Flow 0 sends 50-byte packets, flow 1 100-byte packets, same weight: 2 of a per 1 of b.
        let mut d = Drr::new(&[FlowWeight::new(1, 100), FlowWeight::new(1, 100)]);
        for _ in 0..8 {
            d.enqueue(Message::new('a', 0, 1).with_bytes(50)).unwrap();
            d.enqueue(Message::new('b', 1, 1).with_bytes(100)).unwrap();
        }
        let s: String = (0..6).map(|_| d.dequeue().unwrap().item).collect();
        assert_eq!(s, "aabaab");
    }

    #[test]
    fn multi_packet_messages_mark_last_and_unknown_flows_are_refused() {
        let mut d = Drr::new(&[FlowWeight::new(1, 10)]);
        d.enqueue(Message::new(7, 0, 3).with_bytes(10)).unwrap();
        assert_eq!(d.queued_messages(), 1);
        assert_eq!(drain(&mut d), vec![(7, false), (7, false), (7, true)]);
        assert_eq!(d.enqueue(Message::new(1, 1, 1)), Err(PolicyError::UnknownFlow { flow: 1, flows: 1 }));
        assert_eq!(d.enqueue(Message::new(1, 0, 0)), Err(PolicyError::EmptyMessage));
        assert_eq!(d.queued_packets(), 0);
    }

    #[test]
    fn oversized_packets_still_go_out() {
        let mut d = Drr::new(&[FlowWeight::new(1, 10), FlowWeight::new(1, 10)]);
        d.enqueue(Message::new('a', 0, 1).with_bytes(35)).unwrap();
        d.enqueue(Message::new('b', 1, 1).with_bytes(10)).unwrap();
        let s: String = drain(&mut d).into_iter().map(|x| x.0).collect();
        assert_eq!(s, "ba");
    }
}

/// Property tests shared by the three flow-level policies (DRR, WF2Q+, QFQ).
#[cfg(test)]
mod flow_props {
    use super::*;
    use crate::{Qfq, Wf2qPlus};
    use proptest::prelude::*;

    fn each_policy(flows: &[FlowWeight]) -> Vec<Box<dyn Policy<(u32, u32)>>> {
        vec![Box::new(Drr::new(flows)), Box::new(Wf2qPlus::new(flows)), Box::new(Qfq::new(flows))]
    }

    #[derive(Clone, Debug)]
    enum Op {
        Enq { flow: u32, packets: u32, bytes: u32 },
        Deq,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u32..6, 1u32..5, 1u32..1600).prop_map(|(flow, packets, bytes)| Op::Enq { flow, packets, bytes }),
            Just(Op::Deq),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 200 }, ..ProptestConfig::default() })]

        /// Work conservation, every packet exactly once, per-flow FIFO order, `last` on the final
        /// packet of each message, and exact counters, for any interleaving of operations.
        #[test]
        fn every_packet_once_in_flow_order(
            weights in proptest::collection::vec((1u32..20, 64u32..1600), 1..6),
            ops in proptest::collection::vec(op(), 1..300),
        ) {
            let flows: Vec<FlowWeight> = weights.iter().map(|&(w, l)| FlowWeight::new(w, l)).collect();
            for mut p in each_policy(&flows) {
                let mut next_msg = 0u32;
                let mut expect: Vec<std::collections::VecDeque<(u32, u32)>> = vec![Default::default(); flows.len()];
                let mut queued = 0u64;
                let mut run = |p: &mut Box<dyn Policy<(u32, u32)>>, op: &Op, queued: &mut u64| -> Result<(), TestCaseError> {
                    match *op {
                        Op::Enq { flow, packets, bytes } => {
                            let r = p.enqueue(Message::new((flow, next_msg), flow, packets).with_bytes(bytes));
                            if (flow as usize) < flows.len() {
                                prop_assert!(r.is_ok());
                                for k in 0..packets {
                                    expect[flow as usize].push_back((next_msg, packets - 1 - k));
                                }
                                *queued += u64::from(packets);
                                next_msg += 1;
                            } else {
                                prop_assert_eq!(r, Err(PolicyError::UnknownFlow { flow, flows: flows.len() }));
                            }
                        }
                        Op::Deq => {
                            prop_assert_eq!(p.is_empty(), *queued == 0);
                            match p.dequeue() {
                                None => prop_assert_eq!(*queued, 0),
                                Some(pk) => {
                                    let (msg, left) = expect[pk.flow as usize].pop_front().expect("packet from an empty flow");
                                    prop_assert_eq!(pk.item, (pk.flow, msg));
                                    prop_assert_eq!(pk.last, left == 0);
                                    *queued -= 1;
                                }
                            }
                        }
                    }
                    prop_assert_eq!(p.queued_packets(), *queued);
                    Ok(())
                };
                for o in &ops {
                    run(&mut p, o, &mut queued)?;
                }
                while queued > 0 {
                    run(&mut p, &Op::Deq, &mut queued)?;
                }
                prop_assert!(p.dequeue().is_none());
                prop_assert_eq!(p.queued_messages(), 0);
            }
        }

        /// Backlogged flows get byte shares proportional to their weights (3:1 plus random extras).
        #[test]
        // A statistical property over 4000 dequeues per case: minutes under Miri, nothing unsafe in it.
        #[cfg_attr(miri, ignore)]
        fn backlogged_shares_follow_weights(
            extra in proptest::collection::vec(1u32..6, 0..3),
            sizes in proptest::collection::vec(64u32..1500, 16),
        ) {
            let mut w = vec![3u32, 1];
            w.extend(extra);
            let flows: Vec<FlowWeight> = w.iter().map(|&x| FlowWeight::new(x, 1500)).collect();
            let wsum: u32 = w.iter().sum();
            for mut p in each_policy(&flows) {
                let label = p.label();
                let mut served = vec![0u64; flows.len()];
                let mut n = 0usize;
                // Keep every flow backlogged with 4 packets while 4000 packets go out.
                for f in 0..flows.len() {
                    for _ in 0..4 {
                        p.enqueue(Message::new((f as u32, 0), f as u32, 1).with_bytes(sizes[n % sizes.len()])).unwrap();
                        n += 1;
                    }
                }
                for _ in 0..4000 {
                    let pk = p.dequeue().unwrap();
                    served[pk.flow as usize] += u64::from(pk.bytes);
                    p.enqueue(Message::new((pk.flow, 0), pk.flow, 1).with_bytes(sizes[n % sizes.len()])).unwrap();
                    n += 1;
                }
                let total: u64 = served.iter().sum();
                for (f, &b) in served.iter().enumerate() {
                    let share = b as f64 / total as f64;
                    let want = f64::from(w[f]) / f64::from(wsum);
                    prop_assert!((share - want).abs() < 0.03 + 0.05 * want, "{} flow {} share {:.3} want {:.3}", label, f, share, want);
                }
            }
        }
    }
}
