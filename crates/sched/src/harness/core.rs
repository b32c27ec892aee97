//! The pure scheduler core: ring visits, the policy, the emulated link and the queue limit, with
//! time as a parameter (a clock closure), so tests drive it with a synthetic clock and no threads.

use schedlab_policy::{Message, Policy};

use super::Item;
use crate::ring::Consumer;
use crate::units::Bps;

/// Messages taken from one ring per client per scheduler visit.
pub const VISIT: usize = 64;

/// One event of the scheduler's trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// `vt_ns`: the message's arrival in the link's own time: the pass time, or just before the
    /// link's next release when the pass is late and the policy was not empty (the harness
    /// decides that overdue release with this message present). A simulator replaying the
    /// enqueues at these times with a deterministic service of `bytes × 8 / link rate` makes the
    /// same decisions.
    Enqueue {
        client: u32,
        pos: u64,
        packets: u32,
        bytes: u32,
        vt_ns: u64,
    },
    Release {
        client: u32,
        pos: u64,
    },
}

/// The scheduler's counters (the original's `check_idle`, `stat_early`, `sch_fetch`, `sch_pub`):
/// the report's type, filled in place (one type from the pass to the JSON).
pub use schedlab_report::results::sched::SchedCounters;

/// The scheduler's state: the policy, the consumer ends, the link.
pub struct Core<P> {
    pub policy: P,
    rings: Vec<Consumer>,
    /// Link idle time in 2^-16 ps units; `None` cost means unlimited.
    next_idle: u128,
    fp_per_byte: Option<u128>,
    batch: usize,
    /// Read the clock again for the release batch after a pass took packets: needed when the
    /// release's time is recorded (`sch_deq` stamps, the trace); otherwise the visits' read
    /// serves the link too (one clock read per pass).
    fresh_release_read: bool,
    /// Packets inside the policy, the queue limits, and whether it is dropping (hysteresis).
    pending: u64,
    qmax: u64,
    qmin: u64,
    full: bool,
    /// Scratch: rings seen non-empty in this pass.
    ready: Vec<u32>,
    pub released: Vec<u64>,
    pub sched_drops: Vec<u64>,
    pub passes: u64,
    pub counters: SchedCounters,
    pub trace: Option<Vec<TraceEvent>>,
}

impl<P: Policy<Item>> Core<P> {
    pub fn new(policy: P, rings: Vec<Consumer>, bandwidth: Option<Bps>, batch: usize, trace: bool) -> Self {
        let n = rings.len();
        let fresh_release_read = trace || rings.iter().any(Consumer::stamps);
        Core {
            policy,
            rings,
            next_idle: 0,
            // ps per byte in 2^-16 units: 8 bits * 1e12 ps * 65536 / bw.
            fp_per_byte: bandwidth.map(|b| ((8u128 * 1_000_000_000_000u128) << 16) / u128::from(b.0.max(1))),
            batch: batch.max(1),
            fresh_release_read,
            pending: 0,
            qmax: u64::MAX,
            qmin: 0,
            full: false,
            ready: Vec::with_capacity(n),
            released: vec![0; n],
            sched_drops: vec![0; n],
            passes: 0,
            counters: SchedCounters::default(),
            trace: trace.then(Vec::new),
        }
    }

    /// Sets the queue limit: at `qmax` packets inside the policy, taken packets are dropped
    /// until the policy is down to `qmin`.
    pub fn with_queue_limit(mut self, qmax: u64, qmin: u64) -> Self {
        self.qmax = qmax.max(1);
        self.qmin = qmin.min(self.qmax - 1);
        self
    }

    /// Packets taken from client `c`'s ring so far.
    pub fn taken(&self, c: usize) -> u64 {
        self.rings[c].taken()
    }

    /// One scheduler pass at the fixed time `now` (ns), for tests with a synthetic clock.
    /// Returns the number of packets taken plus released.
    #[inline]
    pub fn pass(&mut self, now: u64) -> usize {
        self.pass_with(|_| now).0
    }

    /// One scheduler pass: take new messages from every ring, then release packets while the
    /// link is idle. `clock` is read once after the rings were seen non-empty (the visits'
    /// `sch_enq`) and once before the release batch if anything was taken and the release's time
    /// is recorded (the batch's `sch_deq` stamps, or the trace; otherwise the visits' read serves,
    /// so a pass reads the clock once); see the module documentation. Returns (packets taken +
    /// released, the last clock value read).
    ///
    /// `clock(ordered)`: with `ordered == false` (the visits' read) the read need not wait for the
    /// ring loads before it (`rdtsc`): a message stamped later than that read stays in its ring
    /// until the next visit (`Consumer::peek` checks), so `sch_enq >= cli_enq` holds either way,
    /// and the take loop's loads overlap the read. With `ordered == true` (the release batch's
    /// read) it must follow every earlier instruction, including that first read (`rdtscp`), so
    /// `sch_deq >= sch_enq`.
    #[inline]
    pub fn pass_with(&mut self, mut clock: impl FnMut(bool) -> u64) -> (usize, u64) {
        self.passes += 1;
        let mut work = 0;
        // Which rings have something, then one clock read for all of them: every message seen
        // here was published before the read (later ones wait for the next visit, see `take`).
        self.ready.clear();
        for c in 0..self.rings.len() {
            if self.rings[c].ready() {
                self.ready.push(c as u32);
            }
        }
        let last = if self.ready.is_empty() { None } else { Some(clock(false)) };
        // The state a visit updates, in locals for the whole pass (so that the policy's calls do
        // not force them back to memory at every message), written back at the end.
        let (qmax, qmin, limited, tracing) = (self.qmax, self.qmin, self.fp_per_byte.is_some(), self.trace.is_some());
        let (mut pending, mut full, mut next_idle) = (self.pending, self.full, self.next_idle);
        for k in 0..self.ready.len() {
            let c = self.ready[k] as usize;
            let now = last.unwrap_or(0);
            let now_fp = (u128::from(now) * 1000) << 16;
            let mut fetched = false;
            // The link can send now: this pass's release batch will make room in the policy.
            let link_idle = !limited || next_idle <= now_fp;
            // One ring for the whole visit (one bounds check), and each message's entry read
            // once (`peek`), for the queue-limit decision and the take (`commit`).
            let ring = &mut self.rings[c];
            for _ in 0..VISIT {
                let Some(m) = ring.peek(now) else { break };
                if full && pending <= qmin {
                    full = false;
                }
                if !full && pending + u64::from(m.packets) > qmax {
                    if link_idle {
                        // Over the limit only because this pass takes before it releases: leave
                        // the message in the ring for the next pass instead of dropping it.
                        self.counters.qlimit_deferred += 1;
                        break;
                    }
                    full = true;
                    self.counters.qlimit_hits += 1;
                }
                ring.commit(&m, now);
                fetched = true;
                work += m.packets as usize;
                // The link's clock and the trace (an unlimited link without a trace needs neither).
                if limited || tracing {
                    let was_empty = self.policy.is_empty();
                    if was_empty && next_idle < now_fp {
                        next_idle = now_fp;
                    }
                    if let Some(t) = self.trace.as_mut() {
                        let vt_ns = if was_empty || !limited {
                            now
                        } else {
                            now.min((((next_idle >> 16) / 1000) as u64).saturating_sub(1))
                        };
                        t.push(TraceEvent::Enqueue { client: c as u32, pos: m.pos, packets: m.packets, bytes: m.len, vt_ns });
                    }
                }
                let refused = if full {
                    self.counters.qlimit_drops += u64::from(m.packets);
                    true
                } else {
                    let item = Item { client: c as u32, pos: m.pos };
                    let msg = Message::new(item, c as u32, m.packets).with_bytes(m.len);
                    self.policy.enqueue(msg).is_err()
                };
                if refused {
                    for _ in 0..m.packets {
                        ring.release_later(m.pos, now, true);
                    }
                    self.sched_drops[c] += u64::from(m.packets);
                } else {
                    pending += u64::from(m.packets);
                }
            }
            self.counters.fetches += u64::from(fetched);
        }
        // The release batch's stamp: a fresh read when this pass took packets and sch_deq is
        // recorded (so that it measures the time spent in the policy), else the pass's only read.
        // Without stamps the link's decisions use the visits' read: at most the take loop's
        // duration earlier, which delays a release to a later pass but never changes the link's
        // rate (a backlogged link's `next_idle` advances by packet costs, not by clock reads).
        let now = match last {
            Some(t) if work == 0 || !self.fresh_release_read => t,
            _ => clock(true),
        };
        let now_fp = (u128::from(now) * 1000) << 16;
        let mut released = 0;
        let batch = self.batch;
        match self.fp_per_byte {
            // An unlimited link: the batch limit and the policy's backlog bound the batch.
            None => {
                while released < batch {
                    let Some(pk) = self.policy.dequeue() else { break };
                    pending = pending.saturating_sub(1);
                    self.release(pk.item, now, tracing);
                    released += 1;
                }
            }
            Some(cost) => {
                while released < batch && next_idle <= now_fp {
                    let Some(pk) = self.policy.dequeue() else { break };
                    pending = pending.saturating_sub(1);
                    self.release(pk.item, now, tracing);
                    next_idle += cost * u128::from(pk.bytes);
                    released += 1;
                }
            }
        }
        // The clients see this pass's releases: one store per ring that released in order.
        for ring in &mut self.rings {
            ring.publish();
        }
        work += released;
        if released > 0 {
            self.counters.publishes += 1;
        }
        if work == 0 {
            self.counters.idle_passes += 1;
        }
        if pending > 0 && limited && next_idle > now_fp {
            self.counters.early_passes += 1;
        }
        (self.pending, self.full, self.next_idle) = (pending, full, next_idle);
        (work, now)
    }

    /// Marks one packet of `item`'s message released: the ring's mark, the client's count, the
    /// trace (`tracing`: the trace is on, read once per batch).
    #[inline(always)]
    fn release(&mut self, item: Item, now: u64, tracing: bool) {
        let c = item.client as usize;
        self.rings[c].release_later(item.pos, now, false);
        self.released[c] += 1;
        if tracing {
            if let Some(t) = self.trace.as_mut() {
                t.push(TraceEvent::Release { client: item.client, pos: item.pos });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::{channel, Producer};
    use schedlab_policy::{Drr, Fifo, FlowWeight};

    /// A core over `n` rings with the producers kept by the test (no threads, synthetic clock).
    fn core(n: usize, bw: Option<u64>, batch: usize) -> (Core<Fifo<Item>>, Vec<Producer>) {
        let (ps, cs): (Vec<_>, Vec<_>) = (0..n).map(|_| channel(4096)).unzip();
        (Core::new(Fifo::new(), cs, bw.map(Bps), batch, false), ps)
    }

    const MS: u64 = 1_000_000;

    /// Pushes one message and publishes it at once, as a client does when it stops pushing.
    fn send(p: &mut Producer, packets: u32, len: u32, now: u64) {
        p.push(packets, len, now);
        p.flush();
    }

    #[test]
    fn link_releases_at_the_configured_rate_and_idle_earns_no_credit() {
        // 8 kb/s = 1000 bytes/s: one 100-byte packet per 100 ms.
        let (mut c, mut p) = core(1, Some(8_000), 500);
        for _ in 0..5 {
            send(&mut p[0], 1, 100, 1);
        }
        assert_eq!(c.pass(1_000 * MS), 5 + 1, "takes all five, releases one at once");
        assert_eq!(c.pass(1_050 * MS), 0);
        assert_eq!(c.pass(1_100 * MS), 1);
        // A late pass catches up with the backlog (the link was busy, not idle).
        assert_eq!(c.pass(1_350 * MS), 2, "the 1200 and 1300 ms slots");
        assert_eq!(c.pass(1_400 * MS), 1);
        assert_eq!(c.released[0], 5);
        // Long idle: a new packet goes at once, the next one 100 ms later, no burst of credit.
        send(&mut p[0], 1, 100, 2);
        send(&mut p[0], 1, 100, 2);
        assert_eq!(c.pass(10_000 * MS), 2 + 1);
        assert_eq!(c.pass(10_099 * MS), 0);
        assert_eq!(c.pass(10_100 * MS), 1);
    }

    #[test]
    fn batch_limit_and_ten_terabits_without_overflow() {
        let (mut c, mut p) = core(2, None, 7);
        for _ in 0..20 {
            send(&mut p[0], 1, 60, 1);
            send(&mut p[1], 1, 60, 1);
        }
        assert_eq!(c.pass(MS), 40 + 7, "unlimited link: the -B limit bounds a pass");
        assert_eq!(c.pass(MS), 7);
        // 10 Tb/s: 60-byte packets cost 48 ps each; 1000 of them fit in 48 ns.
        let (mut c, mut p) = core(1, Some(10_000_000_000_000), 5000);
        for _ in 0..2000 {
            send(&mut p[0], 1, 60, 1);
        }
        // Passes at one instant take VISIT messages each and release what fits in no time.
        let mut t = MS;
        while c.taken(0) < 2000 {
            c.pass(t);
        }
        let before = c.released[0];
        t += 48;
        c.pass(t);
        let sent = c.released[0] - before;
        assert!((990..=1010).contains(&sent), "{sent} packets in 48 ns at 10 Tb/s");
    }

    #[test]
    fn refused_messages_are_marked_dropped() {
        // A flow-level policy with one flow, two clients: client 1's packets are refused.
        let (ps, cs): (Vec<_>, Vec<_>) = (0..2).map(|_| channel(8)).unzip();
        let mut p = ps;
        let mut c = Core::new(Drr::new(&[FlowWeight::new(1, 1500)]), cs, None, 500, false);
        send(&mut p[0], 1, 100, 1);
        send(&mut p[1], 1, 100, 1);
        c.pass(MS);
        assert_eq!((c.released.clone(), c.sched_drops.clone()), (vec![1, 0], vec![0, 1]));
        let mut dropped = Vec::new();
        p[1].poll(|x| dropped.push(x.dropped));
        assert_eq!(dropped, vec![true]);
    }
}
