//! Message records: one per burst a client generated (a message of the traffic program), kept by
//! the client while it runs and written by `schedlab sched --messages FILE`; and the arrival trace
//! (`--trace-out FILE`, the `sim --trace` format) so that any run can be replayed by the simulator.
//!
//! A message's times are those of its packets: `cli_enq` and `sch_enq` of its first packet,
//! `sch_deq` and `cli_deq` of its last (all `CLOCK_MONOTONIC` ns; 0 when it never happened, e.g.
//! for a message the full ring refused).

use std::io::Write;

use crate::ring::Completion;

/// One message (burst) of one client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MsgRecord {
    pub client: u32,
    /// Packets the program asked for.
    pub packets: u32,
    /// Packets that entered the ring (fewer when the ring was full).
    pub pushed: u32,
    pub packet_bytes: u32,
    /// Ring position of its first packet.
    pub first_pos: u64,
    pub cli_enq_ns: u64,
    pub sch_enq_ns: u64,
    pub sch_deq_ns: u64,
    pub cli_deq_ns: u64,
    /// Packets the client has seen transmitted or dropped.
    pub seen: u32,
    /// Some packet was refused (full ring) or dropped by the scheduler.
    pub dropped: bool,
    /// Index of the client's program entry that generated it (its `alpha:X` is the message's α
    /// under `prio`).
    pub entry: u32,
}

impl MsgRecord {
    /// Every packet of the message was transmitted and seen by the client.
    pub fn delivered(&self) -> bool {
        !self.dropped && self.seen == self.packets
    }
    /// Arrival (`cli_enq` of the first packet) to release of the last packet, ns.
    pub fn queueing_ns(&self) -> u64 {
        self.sch_deq_ns.saturating_sub(self.cli_enq_ns)
    }
}

/// A client's message log: records appended as bursts are generated, completed as the client
/// sees its packets.
#[derive(Debug, Default)]
pub struct MessageLog {
    pub records: Vec<MsgRecord>,
}

impl MessageLog {
    /// A log with room for `expect` messages (allocated and touched now, not on the hot path).
    pub fn with_capacity(expect: usize) -> MessageLog {
        let mut records = vec![MsgRecord::default(); expect];
        records.clear();
        MessageLog { records }
    }

    /// A burst of `packets` was generated at `now` by program entry `entry`; `pushed` of them
    /// entered the ring from position `first_pos`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn generated(&mut self, client: u32, packets: u32, pushed: u32, packet_bytes: u32, first_pos: u64, now: u64, entry: u32) {
        self.records.push(MsgRecord {
            client,
            packets,
            pushed,
            packet_bytes,
            first_pos,
            cli_enq_ns: now,
            dropped: pushed < packets,
            entry,
            ..MsgRecord::default()
        });
    }

    /// The client saw packet `c` at `now`.
    #[inline]
    pub fn completed(&mut self, c: &Completion, now: u64) {
        // Messages are in position order; the one holding `c.pos` is the first whose end is past it.
        let i = self.records.partition_point(|r| r.first_pos + u64::from(r.pushed) <= c.pos);
        let Some(r) = self.records.get_mut(i) else { return };
        if c.pos < r.first_pos {
            return;
        }
        if c.pos == r.first_pos {
            r.sch_enq_ns = c.sch_enq;
        }
        r.seen += 1;
        r.dropped |= c.dropped;
        r.sch_deq_ns = r.sch_deq_ns.max(c.sch_deq);
        r.cli_deq_ns = r.cli_deq_ns.max(now);
    }
}

/// Writes one line per message, TAB separated, with a header line:
/// `client packets packet_bytes cli_enq_ns sch_enq_ns sch_deq_ns cli_deq_ns dropped`
/// (`dropped`: 1 when some packet was refused or dropped, or the message was not fully delivered
/// when the run stopped).
pub fn write_messages(w: &mut impl Write, msgs: &[MsgRecord]) -> std::io::Result<()> {
    writeln!(w, "# client\tpackets\tpacket_bytes\tcli_enq_ns\tsch_enq_ns\tsch_deq_ns\tcli_deq_ns\tdropped")?;
    for m in msgs {
        writeln!(
            w,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            m.client,
            m.packets,
            m.packet_bytes,
            m.cli_enq_ns,
            m.sch_enq_ns,
            m.sch_deq_ns,
            m.cli_deq_ns,
            u8::from(!m.delivered())
        )?;
    }
    Ok(())
}

/// All clients' messages, in arrival order (`cli_enq`, then client).
pub fn merged(per_client: &[&[MsgRecord]]) -> Vec<MsgRecord> {
    let mut v: Vec<MsgRecord> = per_client.iter().flat_map(|m| m.iter().copied()).collect();
    v.sort_by_key(|m| (m.cli_enq_ns, m.client, m.first_pos));
    v
}

/// Writes the arrivals in the `sim --trace` format: `TIME LENGTH APP` with TIME in ns from the
/// first arrival, LENGTH in packets, APP the client. Messages refused whole by the full ring did
/// not arrive and are left out; a header comment gives the time unit that makes one packet take
/// one time unit at `link_bps`.
pub fn write_trace(w: &mut impl Write, msgs: &[MsgRecord], link_bps: Option<u64>, seed: u64) -> std::io::Result<()> {
    let arrived: Vec<&MsgRecord> = msgs.iter().filter(|m| m.pushed > 0).collect();
    let t0 = arrived.first().map_or(0, |m| m.cli_enq_ns);
    writeln!(w, "# schedlab sched arrival trace (seed {seed}): TIME_ns LENGTH_pkts CLIENT")?;
    if let (Some(bps), Some(m)) = (link_bps, arrived.first()) {
        let unit_ns = f64::from(m.packet_bytes) * 8.0 * 1e9 / bps as f64;
        writeln!(
            w,
            "# one {}-byte packet at {bps} b/s takes {unit_ns} ns: replay with schedlab sim --trace FILE --time-unit {unit_ns}ns --service det",
            m.packet_bytes
        )?;
    }
    for m in arrived {
        writeln!(w, "{} {} {}", m.cli_enq_ns - t0, m.pushed, m.client)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(pos: u64, sch_enq: u64, sch_deq: u64, dropped: bool) -> Completion {
        Completion { pos, cli_enq: 0, sch_enq, sch_deq, len: 100, dropped }
    }

    #[test]
    fn completions_land_in_their_messages() {
        let mut log = MessageLog::with_capacity(4);
        log.generated(0, 3, 3, 100, 0, 10, 0);
        log.generated(0, 2, 0, 100, 3, 20, 0); // refused by the full ring
        log.generated(0, 1, 1, 100, 3, 30, 0);
        log.completed(&done(3, 31, 40, false), 45); // out of order: the later message first
        log.completed(&done(0, 11, 50, false), 55);
        log.completed(&done(1, 11, 51, false), 55);
        assert!(!log.records[0].delivered());
        log.completed(&done(2, 11, 52, false), 60);
        let r = &log.records;
        assert_eq!((r[0].sch_enq_ns, r[0].sch_deq_ns, r[0].cli_deq_ns, r[0].seen), (11, 52, 60, 3));
        assert!(r[0].delivered() && r[2].delivered() && !r[1].delivered());
        assert_eq!(r[0].queueing_ns(), 42);
        assert_eq!((r[2].sch_enq_ns, r[2].sch_deq_ns), (31, 40));
        let mut out = Vec::new();
        write_messages(&mut out, r).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().nth(1).unwrap(), "0\t3\t100\t10\t11\t52\t60\t0");
        assert_eq!(text.lines().nth(2).unwrap(), "0\t2\t100\t20\t0\t0\t0\t1");
        let mut tr = Vec::new();
        write_trace(&mut tr, r, Some(8_000_000), 5).unwrap();
        let text = String::from_utf8(tr).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(lines, vec!["0 3 0", "20 1 0"]);
        assert!(text.contains("--time-unit 100000ns"), "{text}");
    }

    #[test]
    fn dropped_packets_mark_the_message() {
        let mut log = MessageLog::with_capacity(1);
        log.generated(1, 2, 2, 60, 0, 5, 0);
        log.completed(&done(0, 6, 7, true), 8);
        log.completed(&done(1, 6, 7, true), 8);
        assert!(log.records[0].dropped && !log.records[0].delivered());
    }
}
