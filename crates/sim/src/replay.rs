//! Trace replay through one policy with a deterministic service time: the simulator's view of a
//! recorded run (`schedlab predict`).
//!
//! One server (the link) takes one packet at a time from the policy; a packet of a message takes
//! that message's `service` time units (a link at a fixed rate: `packet_bytes × 8 / rate`).
//! Semantics, the same as the engine's (see [`crate::engine`]):
//! - a message arriving at an idle server has its first packet taken at once;
//! - a packet leaves the policy when its service *starts*, and the next decision is made when it
//!   ends; arrivals at the same instant as a decision are enqueued first, in trace order;
//! - a message's latency is the start of its last packet minus its arrival.
//!
//! The policy is passed in already built, so any policy of `schedlab-policy` can be replayed.

use schedlab_policy::{Message, Policy};

/// One message of the trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayArrival {
    /// Arrival time in time units; non-decreasing along the trace.
    pub time: f64,
    /// The sender (flow, application).
    pub client: u32,
    pub packets: u32,
    /// Bytes per packet (flow-level policies count bytes).
    pub bytes: u32,
    /// Service time of each of its packets, time units.
    pub service: f64,
}

/// One packet taken by the server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayPacket {
    /// Index of its message in the trace.
    pub msg: usize,
    /// Start of its service, time units.
    pub start: f64,
    /// The last packet of its message.
    pub last: bool,
}

/// The replay's outcome.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replay {
    /// Packets in service order.
    pub packets: Vec<ReplayPacket>,
    /// Per message: start of its last packet (`None` when the policy refused it).
    pub last_start: Vec<Option<f64>>,
    /// Messages the policy refused (e.g. a flow it has no weight for), in trace order.
    pub refused: Vec<usize>,
}

impl Replay {
    /// Latency of message `i` (start of its last packet − arrival), time units.
    pub fn latency(&self, arrivals: &[ReplayArrival], i: usize) -> Option<f64> {
        self.last_start[i].map(|s| s - arrivals[i].time)
    }
}

/// Why a trace cannot be replayed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("arrival {index}: time {time} is earlier than the previous arrival")]
    OutOfOrder { index: usize, time: f64 },
    #[error("arrival {index}: {what} must be positive and finite")]
    Bad { index: usize, what: &'static str },
}

/// Replays `arrivals` through `policy` (payload: the message's index in the trace).
pub fn replay<P: Policy<usize>>(mut policy: P, arrivals: &[ReplayArrival]) -> Result<Replay, ReplayError> {
    let mut prev = f64::NEG_INFINITY;
    for (index, a) in arrivals.iter().enumerate() {
        if !(a.time.is_finite() && a.time >= 0.0) {
            return Err(ReplayError::Bad { index, what: "the time" });
        }
        if a.time < prev {
            return Err(ReplayError::OutOfOrder { index, time: a.time });
        }
        if !(a.service.is_finite() && a.service > 0.0) {
            return Err(ReplayError::Bad { index, what: "the service time" });
        }
        if a.packets == 0 || a.bytes == 0 {
            return Err(ReplayError::Bad { index, what: "the packet count and size" });
        }
        prev = a.time;
    }
    let total: u64 = arrivals.iter().map(|a| u64::from(a.packets)).sum();
    let mut out =
        Replay { packets: Vec::with_capacity(total as usize), last_start: vec![None; arrivals.len()], refused: Vec::new() };
    let mut next = 0;
    // The server is free from `t` on.
    let mut t = 0.0f64;
    loop {
        if policy.is_empty() {
            match arrivals.get(next) {
                None => break,
                Some(a) => t = t.max(a.time),
            }
        }
        while let Some(a) = arrivals.get(next) {
            if a.time > t {
                break;
            }
            let msg = Message::new(next, a.client, a.packets).with_bytes(a.bytes);
            if policy.enqueue(msg).is_err() {
                out.refused.push(next);
            }
            next += 1;
        }
        let Some(pk) = policy.dequeue() else { continue };
        out.packets.push(ReplayPacket { msg: pk.item, start: t, last: pk.last });
        if pk.last {
            out.last_start[pk.item] = Some(t);
        }
        t += arrivals[pk.item].service;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_policy::{AlphaSched, Fifo};

    fn a(time: f64, client: u32, packets: u32) -> ReplayArrival {
        ReplayArrival { time, client, packets, bytes: 1500, service: 1.0 }
    }

    #[test]
    fn fifo_by_hand() {
        let tr = [a(0.0, 0, 2), a(0.5, 1, 1), a(5.0, 0, 1)];
        let r = replay(Fifo::new(), &tr).unwrap();
        let starts: Vec<(usize, f64)> = r.packets.iter().map(|p| (p.msg, p.start)).collect();
        assert_eq!(starts, vec![(0, 0.0), (0, 1.0), (1, 2.0), (2, 5.0)]);
        assert_eq!(r.latency(&tr, 0), Some(1.0));
        assert_eq!(r.latency(&tr, 1), Some(1.5));
        assert_eq!(r.latency(&tr, 2), Some(0.0));
    }

    #[test]
    fn arrivals_at_a_decision_instant_are_seen_first() {
        // SF: the 1-packet message arriving exactly when packet 1 ends goes before packet 2.
        let tr = [a(0.0, 0, 3), a(1.0, 1, 1)];
        let r = replay(AlphaSched::shortest_first(), &tr).unwrap();
        let order: Vec<usize> = r.packets.iter().map(|p| p.msg).collect();
        assert_eq!(order, vec![0, 1, 0, 0]);
        // Just after the instant, it waits one more packet, and then ties (1 packet left each)
        // go to the older message.
        let tr = [a(0.0, 0, 3), a(1.0 + 1e-9, 1, 1)];
        let order: Vec<usize> = replay(AlphaSched::shortest_first(), &tr).unwrap().packets.iter().map(|p| p.msg).collect();
        assert_eq!(order, vec![0, 0, 0, 1]);
        let tr = [a(0.0, 0, 4), a(1.0 + 1e-9, 1, 1)];
        let order: Vec<usize> = replay(AlphaSched::shortest_first(), &tr).unwrap().packets.iter().map(|p| p.msg).collect();
        assert_eq!(order, vec![0, 0, 1, 0, 0]);
    }

    #[test]
    fn bad_traces_are_refused() {
        assert!(matches!(replay(Fifo::new(), &[a(1.0, 0, 1), a(0.5, 0, 1)]), Err(ReplayError::OutOfOrder { index: 1, .. })));
        assert!(replay(Fifo::new(), &[a(f64::NAN, 0, 1)]).is_err());
        assert!(replay(Fifo::new(), &[a(0.0, 0, 0)]).is_err());
        assert_eq!(replay(Fifo::new(), &[]).unwrap(), Replay::default());
    }

    proptest::proptest! {
        /// Work conservation: the server is never idle while a packet waits, and every packet is
        /// served exactly once.
        #[test]
        fn fifo_is_work_conserving(gaps in proptest::collection::vec((0.0f64..4.0, 1u32..5), 1..60)) {
            let mut t = 0.0;
            let tr: Vec<ReplayArrival> = gaps.iter().enumerate().map(|(i, &(g, n))| { t += g; a(t, i as u32 % 3, n) }).collect();
            let r = replay(Fifo::new(), &tr).unwrap();
            let total: u32 = tr.iter().map(|x| x.packets).sum();
            proptest::prop_assert_eq!(r.packets.len() as u32, total);
            let mut free = 0.0f64;
            let mut k = 0;
            for p in &r.packets {
                // Starts at the later of server free and the message's arrival (FIFO: in order).
                let expect = free.max(tr[p.msg].time);
                proptest::prop_assert!((p.start - expect).abs() < 1e-9);
                free = p.start + 1.0;
                proptest::prop_assert!(p.msg >= k);
                k = p.msg;
            }
        }
    }
}
