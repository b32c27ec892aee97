//! The exact-order check: the sequence of packets the harness released, against the sequence the
//! simulator produces from the arrivals as the scheduler saw them.
//!
//! The harness's scheduler trace records every enqueue with its time in the link's own clock
//! (`vt_ns`, see [`schedlab_sched::harness::TraceEvent`]) and every release. Replaying those
//! enqueues through the simulator with the same policy and a service time of
//! `bytes × 8 / link rate` must release the same packets in the same order, however late the
//! scheduler's passes were: any difference is a bug in the harness's link emulation, its ring
//! hand-over or the replay.

use schedlab_policy::Policy;
use schedlab_sched::harness::TraceEvent;
use schedlab_sim::replay::{replay, ReplayArrival, ReplayError};

use crate::compare::service_ns;

/// Outcome of the check.
#[derive(Clone, Debug)]
pub struct OrderCheck {
    /// Packets the harness released.
    pub harness_pkts: usize,
    /// Packets the simulator released (the harness may stop with packets still queued).
    pub simulator_pkts: usize,
    /// Position of the first difference among the first `harness_pkts` releases, if any.
    pub first_mismatch: Option<usize>,
    /// Per policy message `(client, ring position of its first packet)`: when the link's own
    /// clock started its last packet (absolute ns, the scheduler trace's clock). The harness's
    /// `sch_deq` minus this is how late the scheduler's pass came for that slot.
    pub virtual_last_start: std::collections::HashMap<(u32, u64), u64>,
}

impl OrderCheck {
    /// Every packet the harness released is the one the simulator releases at that position.
    pub fn identical(&self) -> bool {
        self.summary().identical()
    }

    /// What `predict --json` writes of it (the typed result's part).
    pub fn summary(&self) -> schedlab_report::results::predict::OrderCheck {
        schedlab_report::results::predict::OrderCheck {
            harness_pkts: self.harness_pkts,
            simulator_pkts: self.simulator_pkts,
            first_mismatch: self.first_mismatch,
        }
    }
}

/// Compares the harness's releases in `trace` with the simulator's replay of its enqueues.
pub fn check<P: Policy<usize>>(policy: P, trace: &[TraceEvent], link_bps: u64) -> Result<OrderCheck, ReplayError> {
    let mut keys = Vec::new();
    let mut arrivals = Vec::new();
    let mut released = Vec::new();
    let t0 = trace.iter().find_map(|e| match e {
        TraceEvent::Enqueue { vt_ns, .. } => Some(*vt_ns),
        _ => None,
    });
    // The harness stamps a late pass's arrivals just before the overdue slot; an arrival into an
    // empty policy in the same pass restarts the link at the pass time, so keep times
    // non-decreasing (the pass decides with all of them present either way).
    let mut prev = 0;
    for e in trace {
        match *e {
            TraceEvent::Enqueue { client, pos, packets, bytes, vt_ns } => {
                keys.push((client, pos));
                prev = prev.max(vt_ns.saturating_sub(t0.unwrap_or(0)));
                arrivals.push(ReplayArrival { time: prev as f64, client, packets, bytes, service: service_ns(bytes, link_bps) });
            }
            TraceEvent::Release { client, pos } => released.push((client, pos)),
        }
    }
    let r = replay(policy, &arrivals)?;
    let sim: Vec<(u32, u64)> = r.packets.iter().map(|p| keys[p.msg]).collect();
    let first_mismatch = released.iter().zip(&sim).position(|(a, b)| a != b);
    let virtual_last_start =
        r.last_start.iter().enumerate().filter_map(|(i, s)| s.map(|s| (keys[i], t0.unwrap_or(0) + s.round() as u64))).collect();
    Ok(OrderCheck { harness_pkts: released.len(), simulator_pkts: sim.len(), first_mismatch, virtual_last_start })
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_policy::{AlphaSched, Fifo};

    fn enq(client: u32, pos: u64, packets: u32, vt_ns: u64) -> TraceEvent {
        TraceEvent::Enqueue { client, pos, packets, bytes: 1500, vt_ns }
    }
    fn rel(client: u32, pos: u64) -> TraceEvent {
        TraceEvent::Release { client, pos }
    }

    #[test]
    fn a_late_pass_decides_with_what_it_saw() {
        // 1 Gb/s: 12 us per packet. Client 0 sends 4 packets at 0; the pass at 30 us (late for
        // the 24 us slot) sees client 1's 1-packet message, stamped just before the slot: SF
        // sends it before client 0's last packet, and so does the simulator.
        let t = vec![enq(0, 0, 4, 0), rel(0, 0), rel(0, 0), enq(1, 0, 1, 23_999), rel(1, 0), rel(0, 0), rel(0, 0)];
        let c = check(AlphaSched::shortest_first(), &t, 1_000_000_000).unwrap();
        assert!(c.identical(), "{c:?}");
        assert_eq!((c.harness_pkts, c.simulator_pkts), (5, 5));
        assert_eq!(c.virtual_last_start[&(1, 0)], 24_000);
        assert_eq!(c.virtual_last_start[&(0, 0)], 48_000);
        // Had the scheduler released client 0's packet first, the check would say where.
        let t = vec![enq(0, 0, 4, 0), rel(0, 0), rel(0, 0), enq(1, 0, 1, 23_999), rel(0, 0), rel(1, 0), rel(0, 0)];
        let c = check(AlphaSched::shortest_first(), &t, 1_000_000_000).unwrap();
        assert_eq!(c.first_mismatch, Some(2));
        assert!(!c.identical());
        // An arrival into an empty policy restarts the link at the pass time; a second one in
        // the same pass is stamped a nanosecond earlier by the harness and kept in order here.
        let t = vec![enq(0, 0, 1, 100), enq(1, 0, 1, 99), rel(0, 0), rel(1, 0)];
        assert!(check(Fifo::new(), &t, 1_000_000_000).unwrap().identical());
        // FIFO: order by enqueue.
        let t = vec![enq(0, 0, 2, 0), enq(1, 0, 1, 5), rel(0, 0), rel(0, 0), rel(1, 0)];
        assert!(check(Fifo::new(), &t, 1_000_000_000).unwrap().identical());
    }
}
