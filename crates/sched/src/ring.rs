//! The bounded lock-free single-producer/single-consumer ring between one client and the
//! scheduler.
//!
//! A slot carries one packet for its whole life: the client fills it and publishes it, the
//! scheduler takes it (enqueues it into the policy), later *releases* it (marks it eligible for
//! transmission, the seed's "mark"), and the client, polling, sees the mark, counts the packet as
//! transmitted and frees the slot. So the ring size bounds a client's packets in flight, as in the
//! original.
//!
//! ## Protocol (all shared state is in the slots; cursors are private to each side)
//! - `seq`: the client stores `pos + 1` (Release) after writing the slot's data for ring position
//!   `pos`; the scheduler, at its cursor `pos`, sees the packet when `seq == pos + 1` (Acquire).
//! - `done`: the scheduler stores `pos + 1` (Release) after writing its timestamps into the slot;
//!   the client sees the mark when `done == pos + 1` (Acquire).
//! - Positions grow forever (u64), so a value from an earlier lap can never be mistaken for the
//!   current one (no ABA).
//! - Messages: a multi-packet message occupies consecutive positions; its first slot holds the
//!   message length. The client writes the slots in order and publishes each one, so seeing the
//!   *last* slot's `seq` proves all of them are written. The scheduler releases a message's packets
//!   in order and keeps the progress in its own private array, indexed by the message's first slot;
//!   the client frees slots only a whole message at a time, so that index is not reused while the
//!   message is in flight.
//!
//! ## Who touches `data`
//! Between `seq` publication and the `done` mark of a position, only the scheduler writes the
//! slot's scheduler fields and only reads the client fields; outside that window only the client
//! touches the slot. The two windows are ordered by the Release/Acquire pairs above, so there is no
//! data race. The loom model in `tests` checks exactly this (`cargo test -p schedlab-sched
//! --features loom --lib ring`).

#[cfg(feature = "loom")]
use loom::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};
#[cfg(not(feature = "loom"))]
use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

/// `UnsafeCell` with loom's closure API, so the same code runs under loom and std.
#[cfg(not(feature = "loom"))]
#[derive(Debug, Default)]
struct Cell<T>(std::cell::UnsafeCell<T>);
#[cfg(not(feature = "loom"))]
impl<T> Cell<T> {
    fn new(v: T) -> Self {
        Cell(std::cell::UnsafeCell::new(v))
    }
    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
    #[inline(always)]
    fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
#[cfg(feature = "loom")]
#[derive(Debug)]
struct Cell<T>(loom::cell::UnsafeCell<T>);
#[cfg(feature = "loom")]
impl<T> Cell<T> {
    fn new(v: T) -> Self {
        Cell(loom::cell::UnsafeCell::new(v))
    }
    fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        self.0.with(f)
    }
    fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        self.0.with_mut(f)
    }
}

/// Client-written part of a slot.
#[derive(Clone, Copy, Debug, Default)]
struct ClientData {
    cli_enq: u64,
    len: u32,
    /// Packets in the message starting here (only meaningful in a message's first slot).
    msg_len: u32,
}

/// Scheduler-written part of a slot.
#[derive(Clone, Copy, Debug, Default)]
struct SchedData {
    sch_enq: u64,
    sch_deq: u64,
    dropped: bool,
}

#[repr(align(64))]
#[derive(Debug)]
struct Slot {
    seq: AtomicU64,
    done: AtomicU64,
    cli: Cell<ClientData>,
    sch: Cell<SchedData>,
}

#[derive(Debug)]
struct Ring {
    slots: Box<[Slot]>,
}

// SAFETY: the `Cell`s are only accessed following the protocol in the module documentation: each
// field group has exactly one writer at a time, and hand-over between the client and the
// scheduler goes through Release stores and Acquire loads of `seq` / `done`. The `Producer` and
// `Consumer` handles are unique (not Clone), so there is one client and one scheduler per ring.
unsafe impl Sync for Ring {}
// SAFETY: the ring owns plain data and atomics; moving it between threads is fine.
unsafe impl Send for Ring {}

/// A packet seen transmitted (or dropped by the scheduler) by the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Ring position of the packet (positions count the client's packets from 0).
    pub pos: u64,
    pub cli_enq: u64,
    pub sch_enq: u64,
    pub sch_deq: u64,
    pub len: u32,
    pub dropped: bool,
}

/// A message the scheduler found in the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incoming {
    /// Ring position of its first packet.
    pub pos: u64,
    pub packets: u32,
    pub len: u32,
    pub cli_enq: u64,
}

/// Creates a ring of `capacity` slots (at least 1) and its two unique ends.
pub fn channel(capacity: usize) -> (Producer, Consumer) {
    let capacity = capacity.max(1);
    let slots: Box<[Slot]> = (0..capacity)
        .map(|_| Slot {
            seq: AtomicU64::new(0),
            done: AtomicU64::new(0),
            cli: Cell::new(ClientData::default()),
            sch: Cell::new(SchedData::default()),
        })
        .collect();
    let ring = Arc::new(Ring { slots });
    (
        Producer {
            ring: ring.clone(),
            cap: capacity as u64,
            prod: 0,
            seen: 0,
            free: 0,
            msg_len: vec![0; capacity].into_boxed_slice(),
            counted: vec![false; capacity].into_boxed_slice(),
        },
        Consumer { ring, cap: capacity as u64, cons: 0, progress: vec![0; capacity].into_boxed_slice() },
    )
}

/// The client's end.
#[derive(Debug)]
pub struct Producer {
    ring: Arc<Ring>,
    cap: u64,
    /// Next position to fill.
    prod: u64,
    /// Next position whose mark has not been counted yet.
    seen: u64,
    /// First position not yet freed (slots below it may be refilled).
    free: u64,
    /// Client-private: message length by first slot index.
    msg_len: Box<[u32]>,
    /// Client-private: slot counted out of order by [`Producer::sweep`].
    counted: Box<[bool]>,
}

impl Producer {
    /// Ring size.
    pub fn capacity(&self) -> usize {
        self.cap as usize
    }
    /// Slots that can be filled now.
    #[inline]
    pub fn space(&self) -> u64 {
        self.cap - (self.prod - self.free)
    }
    /// Packets pushed so far.
    pub fn pushed(&self) -> u64 {
        self.prod
    }
    /// Packets whose mark has been counted, in position order.
    pub fn in_flight(&self) -> u64 {
        self.prod - self.seen
    }

    #[inline]
    fn slot(&self, pos: u64) -> &Slot {
        &self.ring.slots[(pos % self.cap) as usize]
    }

    /// Pushes one message of `packets` packets of `len` bytes stamped `now`. The caller checks
    /// [`Producer::space`] first; returns false (pushing nothing) when it does not fit.
    #[inline]
    pub fn push(&mut self, packets: u32, len: u32, now: u64) -> bool {
        if packets == 0 || u64::from(packets) > self.space() {
            return false;
        }
        let first = self.prod;
        self.msg_len[(first % self.cap) as usize] = packets;
        for k in 0..u64::from(packets) {
            let pos = first + k;
            let slot = self.slot(pos);
            let msg_len = if k == 0 { packets } else { 0 };
            // SAFETY: `pos < free + cap`, so the slot's previous occupant (pos - cap) was released
            // and its mark seen (`free` only passes fully released messages): neither side reads or
            // writes this slot's data until we publish `seq` below.
            slot.cli.with_mut(|p| unsafe { *p = ClientData { cli_enq: now, len, msg_len } });
            slot.seq.store(pos + 1, Ordering::Release);
        }
        self.prod = first + u64::from(packets);
        true
    }

    /// True when the next packet in position order has been released (a cheap peek).
    #[inline]
    pub fn has_mark(&self) -> bool {
        let pos = self.seen;
        pos < self.prod && {
            let idx = (pos % self.cap) as usize;
            self.counted[idx] || self.slot(pos).done.load(Ordering::Acquire) == pos + 1
        }
    }

    /// Counts released packets in position order, calling `f` for each, and frees the slots of
    /// fully released messages. Returns how many were counted.
    #[inline]
    pub fn poll(&mut self, f: impl FnMut(Completion)) -> u64 {
        self.poll_until(u64::MAX, f)
    }

    /// [`Producer::poll`], but stops before a packet the scheduler stamped after `now`: the
    /// caller reads its clock after [`Producer::has_mark`], so every packet counted has
    /// `sch_deq <= now` (its `cli_deq` is a real, non-negative delay).
    #[inline]
    pub fn poll_until(&mut self, now: u64, mut f: impl FnMut(Completion)) -> u64 {
        let start = self.seen;
        while self.seen < self.prod {
            let pos = self.seen;
            let idx = (pos % self.cap) as usize;
            if self.counted[idx] {
                self.counted[idx] = false;
            } else {
                let slot = self.slot(pos);
                if slot.done.load(Ordering::Acquire) != pos + 1 {
                    break;
                }
                let c = self.read(pos);
                if c.sch_deq > now {
                    break;
                }
                f(c);
            }
            self.seen += 1;
        }
        self.advance_free();
        self.seen - start
    }

    /// Like [`Producer::poll`] but also counts packets released out of order beyond the first
    /// unreleased one (message policies can release a later message first). Used at the end of
    /// a run so that every released packet is counted. O(packets in flight).
    pub fn sweep(&mut self, mut f: impl FnMut(Completion)) -> u64 {
        let mut n = self.poll(&mut f);
        for pos in self.seen..self.prod {
            let idx = (pos % self.cap) as usize;
            if !self.counted[idx] && self.slot(pos).done.load(Ordering::Acquire) == pos + 1 {
                self.counted[idx] = true;
                f(self.read(pos));
                n += 1;
            }
        }
        n
    }

    fn read(&self, pos: u64) -> Completion {
        let slot = self.slot(pos);
        // SAFETY: `done == pos + 1` was loaded with Acquire, so the scheduler's writes to the slot
        // happened before, and it does not touch this position again; the client fields are ours.
        let c = slot.cli.with(|p| unsafe { *p });
        // SAFETY: as above.
        let s = slot.sch.with(|p| unsafe { *p });
        Completion { pos, cli_enq: c.cli_enq, sch_enq: s.sch_enq, sch_deq: s.sch_deq, len: c.len, dropped: s.dropped }
    }

    fn advance_free(&mut self) {
        while self.free < self.seen {
            let n = u64::from(self.msg_len[(self.free % self.cap) as usize].max(1));
            if self.free + n > self.seen {
                break;
            }
            self.free += n;
        }
    }
}

/// The scheduler's end.
#[derive(Debug)]
pub struct Consumer {
    ring: Arc<Ring>,
    cap: u64,
    /// Next position to take.
    cons: u64,
    /// Scheduler-private: packets of the message starting at this slot already released.
    progress: Box<[u32]>,
}

impl Consumer {
    /// Packets taken so far.
    pub fn taken(&self) -> u64 {
        self.cons
    }

    #[inline]
    fn slot(&self, pos: u64) -> &Slot {
        &self.ring.slots[(pos % self.cap) as usize]
    }

    /// True when the client has published the slot at the cursor (a cheap peek, no stamp).
    #[inline]
    pub fn ready(&self) -> bool {
        let pos = self.cons;
        self.slot(pos).seq.load(Ordering::Acquire) == pos + 1
    }

    /// The next complete message, if the client has published one stamped no later than `now`;
    /// it is taken (the cursor moves past it) and stamped `now` as its scheduler enqueue time.
    /// (A message stamped after `now` stays for the next visit, so that `sch_enq >= cli_enq`
    /// always: the caller reads its clock after seeing the ring, see [`Consumer::ready`].)
    #[inline]
    pub fn take(&mut self, now: u64) -> Option<Incoming> {
        let pos = self.cons;
        let slot = self.slot(pos);
        if slot.seq.load(Ordering::Acquire) != pos + 1 {
            return None;
        }
        // SAFETY: `seq == pos + 1` (Acquire) means the client wrote the data and will not touch the
        // slot until it sees our `done` mark.
        let c = slot.cli.with(|p| unsafe { *p });
        if c.cli_enq > now {
            return None;
        }
        let n = c.msg_len.max(1);
        if n > 1 {
            let last = pos + u64::from(n) - 1;
            if self.slot(last).seq.load(Ordering::Acquire) != last + 1 {
                return None; // the client is still writing the message
            }
        }
        for k in 0..u64::from(n) {
            // SAFETY: every slot of the message is published (the last one's Acquire above orders
            // the client's earlier writes) and not yet marked: the scheduler fields are ours.
            self.slot(pos + k).sch.with_mut(|p| unsafe { (*p).sch_enq = now });
        }
        self.progress[(pos % self.cap) as usize] = 0;
        self.cons = pos + u64::from(n);
        Some(Incoming { pos, packets: n, len: c.len, cli_enq: c.cli_enq })
    }

    /// Releases the next packet of the message whose first packet is at `first` (taken with
    /// [`Consumer::take`]), stamped `now`; `dropped` marks a packet the policy refused.
    /// Returns the released packet's position.
    #[inline]
    pub fn release(&mut self, first: u64, now: u64, dropped: bool) -> u64 {
        let idx = (first % self.cap) as usize;
        let k = self.progress[idx];
        self.progress[idx] = k + 1;
        let pos = first + u64::from(k);
        let slot = self.slot(pos);
        // SAFETY: the position was taken and not yet marked, so the scheduler fields are ours.
        slot.sch.with_mut(|p| unsafe {
            (*p).sch_deq = now;
            (*p).dropped = dropped;
        });
        slot.done.store(pos + 1, Ordering::Release);
        pos
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;

    #[test]
    fn single_thread_lifecycle() {
        let (mut p, mut c) = channel(4);
        assert!(p.push(1, 60, 10));
        assert!(p.push(2, 100, 20));
        assert_eq!(p.space(), 1);
        assert!(!p.push(2, 100, 30), "does not fit");
        let a = c.take(11).unwrap();
        assert_eq!(a, Incoming { pos: 0, packets: 1, len: 60, cli_enq: 10 });
        let b = c.take(21).unwrap();
        assert_eq!((b.pos, b.packets), (1, 2));
        assert!(c.take(22).is_none());
        // Release the 2-packet message first (out of order), then the first one.
        assert_eq!(c.release(1, 30, false), 1);
        let mut got = Vec::new();
        assert_eq!(p.poll(|x| got.push(x)), 0, "position 0 not released yet");
        assert_eq!(c.release(0, 31, true), 0);
        assert_eq!(p.poll(|x| got.push(x)), 2);
        assert_eq!(got[0], Completion { pos: 0, cli_enq: 10, sch_enq: 11, sch_deq: 31, len: 60, dropped: true });
        assert_eq!(got[1].sch_deq, 30);
        // The 2-packet message is half released: its slots are not free yet.
        assert_eq!(p.space(), 1 + 1);
        assert_eq!(c.release(1, 40, false), 2);
        assert_eq!(p.poll(|_| {}), 1);
        assert_eq!(p.space(), 4);
        // Wrap around several laps.
        for round in 0..10u64 {
            assert!(p.push(3, 64, round));
            let m = c.take(round).unwrap();
            for _ in 0..3 {
                c.release(m.pos, round, false);
            }
            assert_eq!(p.poll(|x| assert_eq!(x.cli_enq, round)), 3);
        }
    }

    #[test]
    fn sweep_counts_out_of_order_releases_once() {
        let (mut p, mut c) = channel(8);
        for _ in 0..3 {
            p.push(1, 60, 0);
        }
        for _ in 0..3 {
            c.take(0).unwrap();
        }
        c.release(2, 5, false);
        assert_eq!(p.poll(|_| {}), 0);
        assert_eq!(p.sweep(|x| assert_eq!(x.sch_deq, 5)), 1);
        assert_eq!(p.in_flight(), 3, "counted out of order but not freed");
        c.release(0, 6, false);
        c.release(1, 7, false);
        let mut n = 0;
        assert_eq!(p.poll(|_| n += 1), 3);
        assert_eq!(n, 2, "the swept packet is not reported twice");
        assert_eq!(p.space(), 8);
    }

    /// Two real threads hammer a tiny ring with messages of 1..=3 packets; every packet arrives
    /// exactly once, in order, with its data intact.
    #[test]
    fn stress_two_threads_tiny_ring() {
        // Under Miri 300 messages keep the test to seconds (50,000 would time out).
        const MSGS: u64 = if cfg!(miri) { 300 } else { 50_000 };
        for cap in [3usize, 4, 7] {
            let (mut p, mut c) = channel(cap);
            let consumer = std::thread::spawn(move || {
                let mut expect = 0u64;
                let mut seen_msgs = 0u64;
                while seen_msgs < MSGS {
                    if let Some(m) = c.take(seen_msgs) {
                        assert_eq!(m.pos, expect);
                        assert_eq!(m.cli_enq, seen_msgs, "payload of message {seen_msgs}");
                        assert_eq!(m.len, 60 + m.packets);
                        for _ in 0..m.packets {
                            c.release(m.pos, seen_msgs, false);
                        }
                        expect += u64::from(m.packets);
                        seen_msgs += 1;
                    } else {
                        std::hint::spin_loop();
                    }
                }
                expect
            });
            let mut sent = 0u64;
            let mut got = 0u64;
            let mut msg = 0u64;
            while msg < MSGS {
                let n = (msg % 3) as u32 + 1;
                if p.space() >= u64::from(n) {
                    assert!(p.push(n, 60 + n, msg));
                    sent += u64::from(n);
                    msg += 1;
                }
                got += p.poll(|x| assert!(x.sch_enq == x.cli_enq && x.sch_deq == x.cli_enq));
            }
            while got < sent {
                got += p.poll(|_| {});
            }
            assert_eq!(consumer.join().unwrap(), sent);
            assert_eq!(p.in_flight(), 0);
        }
    }
}

#[cfg(all(test, feature = "loom"))]
mod loom_tests {
    use super::*;

    /// Every interleaving (up to 3 preemptions) of one client pushing a 1-packet and a 2-packet
    /// message through a two-slot ring (so the second wraps and must wait for a free slot) and one
    /// scheduler taking and releasing them. loom checks the Release/Acquire hand-over of `data`.
    #[test]
    fn loom_spsc_protocol() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let (mut p, mut c) = channel(2);
            let sched = loom::thread::spawn(move || {
                let mut taken = 0;
                let mut stamps = Vec::new();
                while taken < 2 {
                    if let Some(m) = c.take(10) {
                        stamps.push(m.cli_enq);
                        for _ in 0..m.packets {
                            c.release(m.pos, 7, false);
                        }
                        taken += 1;
                    } else {
                        loom::thread::yield_now();
                    }
                }
                stamps
            });
            let mut got = 0;
            for (i, n) in [(1u64, 1u32), (2, 2)] {
                while p.space() < u64::from(n) {
                    got += p.poll(|x| assert_eq!(x.sch_deq, 7));
                    loom::thread::yield_now();
                }
                assert!(p.push(n, 60, i));
            }
            while got < 3 {
                got += p.poll(|x| assert_eq!(x.sch_deq, 7));
                loom::thread::yield_now();
            }
            assert_eq!(sched.join().unwrap(), vec![1, 2]);
        });
    }
}
