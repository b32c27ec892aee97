//! The bounded lock-free single-producer/single-consumer ring between one client and the
//! scheduler.
//!
//! A slot carries one packet for its whole life: the client fills it and publishes it, the
//! scheduler takes it (enqueues it into the policy), later *releases* it (marks it eligible for
//! transmission, the seed's "mark"), and the client, polling, sees the mark, counts the packet as
//! transmitted and frees the slot. So the ring size bounds a client's packets in flight, as in the
//! original.
//!
//! ## Layout (what crosses between the two CPUs, and how often)
//! Each side writes its own arrays; no cache line is written by both sides:
//! - `ent`: 16 bytes per slot (`cli_enq`, packet length, message length), written by the client,
//!   read by the scheduler: four packets per 64-byte line (aligned), as the original's entries;
//! - `tail`: the count of packets the client has published, alone in its own (128-byte) line.
//!   The client stores it once per completed line of entries (and at the end of a multi-packet
//!   message, and whenever it is about to stop pushing: [`Producer::flush`]), so the scheduler
//!   reads whole lines the client has finished with instead of polling the line the client is
//!   writing (which would move that line between the CPUs at every packet, twice); the scheduler
//!   keeps a private copy and reloads it only once it has taken everything up to it;
//! - `head`: the count of packets the scheduler has released in position order, alone in its own
//!   line (the original's `s_head`). The scheduler stores it once per pass
//!   ([`Consumer::publish`]), not per packet, and the client loads it once per poll: a batch of
//!   in-order releases moves one line between the CPUs;
//! - `done`: one 8-byte mark per slot, written by the scheduler, read by the client: eight marks
//!   per line, stored only for a packet `head` cannot cover when it is released: one released
//!   out of order (message policies may release a client's later message first) or dropped;
//! - `sch`: 16 bytes of scheduler stamps per slot (`sch_enq`, `sch_deq`). The client reads them
//!   only while it records timestamps, so when it does not their lines never leave the
//!   scheduler's cache.
//!
//! The arrays have a power-of-two number of slots (at least the capacity, at least a line), so a
//! position's slot is `pos & mask` (no division on the hot path); at most `capacity` packets are
//! in flight.
//!
//! ## Protocol (cursors are private to each side)
//! - The client writes the entries of a message, then (at once, or at a later [`Producer::flush`]
//!   or line completion) stores `tail` past them (Release); the scheduler, at its cursor `pos`,
//!   sees the packet when `tail > pos` (Acquire). `tail` only ever covers whole messages.
//! - Releases: the scheduler keeps `next`, the first position not yet released. A packet
//!   released at `next` and not dropped only moves `next`; any other release stores
//!   `done = (pos + 1) << 1 | dropped` (Release) after writing its stamps into `sch`, and `next`
//!   then passes every position that has such a mark of its own. [`Consumer::publish`] stores
//!   `head = next` (Release). The client sees position `pos` released when `head > pos`
//!   (Acquire), or when `done >> 1 == pos + 1` (Acquire); it was dropped iff its `done` is
//!   `(pos + 1) << 1 | 1` (below `head` that mark, if any, was stored before `head`).
//! - Positions grow forever (u64), so a mark from an earlier lap can never be mistaken for the
//!   current one (no ABA).
//! - Messages: a multi-packet message occupies consecutive positions; its first slot holds the
//!   message length. The scheduler releases a message's packets in order and keeps the progress
//!   in its own private array, indexed by the message's first slot (a one-packet message, the
//!   common case, leaves it untouched); the client frees slots only a whole message at a time, so
//!   that index is not reused while the message is in flight.
//!
//! ## Who touches the data
//! Between `tail` publication and the release of a position (`head` past it, or its `done`
//! mark), the scheduler reads the slot's entry and writes its `sch` stamps; outside that window
//! only the client touches both (the client also reads its own entries at any time, e.g. a
//! message's length when it frees the slots: both sides only read them in the window).
//! The two windows are ordered by the Release/Acquire pairs above, so there is no data race. The
//! loom model in `tests` checks exactly this (`cargo test -p schedlab-sched --features loom --lib
//! ring`).

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

/// Client-written part of a slot (16 bytes: four per cache line).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
struct ClientData {
    cli_enq: u64,
    len: u32,
    /// Packets in the message starting here (only meaningful in a message's first slot).
    msg_len: u32,
}

/// Entries per cache line.
const PER_LINE: u64 = 4;

/// One cache line of client entries.
#[derive(Debug)]
#[repr(C, align(64))]
struct Line([Cell<ClientData>; PER_LINE as usize]);

/// Largest ring capacity (the harness checks the queue size against it).
pub const MAX_CAPACITY: usize = 1 << 21;
/// Largest packet length (the traffic file's limit, as the original's `uint16_t`).
pub const MAX_LEN: u32 = 0xFFFF;

/// A value alone in its cache lines (128 bytes: the adjacent-line prefetcher pairs lines).
#[derive(Debug)]
#[repr(align(128))]
struct Padded<T>(T);

/// Scheduler-written stamps of a slot (16 bytes: four per cache line).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
struct SchedData {
    sch_enq: u64,
    sch_deq: u64,
}

#[derive(Debug)]
struct Ring {
    /// Packets published by the client (positions below it are readable by the scheduler).
    tail: Padded<AtomicU64>,
    /// Packets released in position order by the scheduler: every position below it is released
    /// (its own mark in `done` says whether it was dropped; no mark of its lap: sent).
    head: Padded<AtomicU64>,
    /// `slots - 1`: every array below holds `slots` entries (`ent` in lines of [`PER_LINE`]).
    mask: u64,
    ent: Box<[Line]>,
    sch: Box<[Cell<SchedData>]>,
    done: Box<[AtomicU64]>,
}

impl Ring {
    /// The client entry of position `pos`.
    #[inline(always)]
    fn entry(&self, pos: u64) -> &Cell<ClientData> {
        let idx = (pos & self.mask) as usize;
        debug_assert!(idx / (PER_LINE as usize) < self.ent.len());
        // SAFETY: `idx <= mask` and `ent` holds `(mask + 1) / PER_LINE` whole lines (`channel`
        // builds every array from the same `slots`, a power of two of at least `PER_LINE`).
        unsafe { self.ent.get_unchecked(idx / PER_LINE as usize).0.get_unchecked(idx % PER_LINE as usize) }
    }
    /// The scheduler's mark of position `pos`.
    #[inline(always)]
    fn done(&self, pos: u64) -> &AtomicU64 {
        let idx = (pos & self.mask) as usize;
        debug_assert!(idx < self.done.len());
        // SAFETY: `idx <= mask` and `done` holds `mask + 1` marks (`channel`).
        unsafe { self.done.get_unchecked(idx) }
    }
    /// The scheduler's stamps of position `pos`.
    #[inline(always)]
    fn sch(&self, pos: u64) -> &Cell<SchedData> {
        let idx = (pos & self.mask) as usize;
        debug_assert!(idx < self.sch.len());
        // SAFETY: `idx <= mask` and `sch` holds `mask + 1` entries (`channel`).
        unsafe { self.sch.get_unchecked(idx) }
    }
}

/// `v[pos & mask]` for a side's private per-slot array of `mask + 1` entries.
#[inline(always)]
fn slot_mut<T>(v: &mut [T], mask: u64, pos: u64) -> &mut T {
    let idx = (pos & mask) as usize;
    debug_assert!(idx < v.len());
    // SAFETY: callers pass the ring's `mask` and an array of `mask + 1` entries (`channel`
    // allocates `progress` and `counted` with `slots` entries), so `idx < v.len()`.
    unsafe { v.get_unchecked_mut(idx) }
}

// SAFETY: the `Cell`s are only accessed following the protocol in the module documentation: each
// array has exactly one writer at a time, and hand-over between the client and the scheduler
// goes through Release stores and Acquire loads of `tail` / `done`. The `Producer` and `Consumer`
// handles are unique (not Clone), so there is one client and one scheduler per ring.
unsafe impl Sync for Ring {}
// SAFETY: the ring owns plain data and atomics; moving it between threads is fine.
unsafe impl Send for Ring {}

/// A packet seen transmitted (or dropped by the scheduler) by the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Ring position of the packet (positions count the client's packets from 0).
    pub pos: u64,
    pub cli_enq: u64,
    /// The scheduler's stamps; 0 when the completion was read without stamps
    /// ([`Producer::consume`] with `stamps == false`).
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

/// The mark the scheduler stores for position `pos`.
#[inline(always)]
fn mark(pos: u64, dropped: bool) -> u64 {
    ((pos + 1) << 1) | u64::from(dropped)
}

/// Creates a ring of `capacity` slots (1..=[`MAX_CAPACITY`]) and its two unique ends.
///
/// # Panics
/// If `capacity` exceeds [`MAX_CAPACITY`] (the harness checks the queue size first).
pub fn channel(capacity: usize) -> (Producer, Consumer) {
    let capacity = capacity.max(1);
    assert!(capacity <= MAX_CAPACITY, "ring capacity {capacity} exceeds {MAX_CAPACITY}");
    let slots = capacity.next_power_of_two().max(PER_LINE as usize);
    let line = || Line(std::array::from_fn(|_| Cell::new(ClientData::default())));
    let ring = Arc::new(Ring {
        tail: Padded(AtomicU64::new(0)),
        head: Padded(AtomicU64::new(0)),
        mask: slots as u64 - 1,
        ent: (0..slots / PER_LINE as usize).map(|_| line()).collect(),
        sch: (0..slots).map(|_| Cell::new(SchedData::default())).collect(),
        done: (0..slots).map(|_| AtomicU64::new(0)).collect(),
    });
    let mask = slots as u64 - 1;
    (
        Producer {
            ring: ring.clone(),
            cap: capacity as u64,
            mask,
            prod: 0,
            published: 0,
            seen: 0,
            free: 0,
            multi: 0,
            swept: 0,
            write_prefetched: 0,
            prefetchw: has_prefetchw(),
            counted: vec![false; slots].into_boxed_slice(),
        },
        Consumer {
            ring,
            mask,
            cons: 0,
            tail: 0,
            next: 0,
            head: 0,
            out_of_order: 0,
            progress: vec![0; slots].into_boxed_slice(),
            prefetched: 0,
            stamps: true,
        },
    )
}

/// The client's end.
#[derive(Debug)]
pub struct Producer {
    ring: Arc<Ring>,
    cap: u64,
    mask: u64,
    /// Next position to fill.
    prod: u64,
    /// The last `tail` stored (positions from it to `prod` are written but not yet visible).
    published: u64,
    /// Next position whose mark has not been counted yet.
    seen: u64,
    /// First position not yet freed (slots below it may be refilled).
    free: u64,
    /// Messages of several packets pushed and not yet freed (while 0, every slot below `seen`
    /// can be freed at once, without reading the messages' lengths).
    multi: u64,
    /// Slots flagged in `counted` (while 0, `counted` is not read).
    swept: u64,
    /// The lines of entries below this position have been prefetched for writing.
    #[cfg_attr(not(all(target_arch = "x86_64", not(miri), not(feature = "loom"))), allow(dead_code))]
    write_prefetched: u64,
    /// The CPU has `prefetchw` (prefetch for writing).
    #[cfg_attr(not(all(target_arch = "x86_64", not(miri), not(feature = "loom"))), allow(dead_code))]
    prefetchw: bool,
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

    /// Pushes one message of `packets` packets of `len` bytes stamped `now`. The caller checks
    /// [`Producer::space`] first; returns false (pushing nothing) when it does not fit.
    ///
    /// The message becomes visible to the scheduler at once when it completes a line of entries
    /// or has several packets; otherwise at the next line completion or [`Producer::flush`],
    /// which the caller must call before it stops pushing for a while.
    ///
    /// # Panics
    /// If `len` exceeds [`MAX_LEN`] (the traffic file's limit; the harness checks it first).
    #[inline]
    pub fn push(&mut self, packets: u32, len: u32, now: u64) -> bool {
        assert!(len <= MAX_LEN, "packet length {len} exceeds {MAX_LEN}");
        if packets == 0 || u64::from(packets) > self.space() {
            return false;
        }
        let first = self.prod;
        self.prefetch_for_writing();
        for k in 0..u64::from(packets) {
            let pos = first + k;
            let msg_len = if k == 0 { packets } else { 0 };
            // SAFETY: `pos < free + cap`, so the slot's previous occupant (at most `pos - cap`,
            // the slots are at least `cap`) was released and its mark seen (`free` only passes
            // fully released messages): the scheduler does not read this entry until we publish
            // a `tail` past it.
            self.ring.entry(pos).with_mut(|p| unsafe { *p = ClientData { cli_enq: now, len, msg_len } });
        }
        self.prod = first + u64::from(packets);
        if packets > 1 {
            self.multi += 1;
            self.flush();
        } else if self.prod.is_multiple_of(PER_LINE) {
            self.flush();
        }
        true
    }

    /// Pushes `count` one-packet messages of `len` bytes stamped `now` (a burst of single
    /// packets: one space check, one publication). Returns false (pushing nothing) when they do
    /// not all fit.
    ///
    /// They become visible to the scheduler up to the last line of entries they complete (one
    /// store of `tail`); the rest of a line at the next completion or [`Producer::flush`], as
    /// with [`Producer::push`].
    ///
    /// # Panics
    /// If `len` exceeds [`MAX_LEN`].
    #[inline]
    pub fn push_singles(&mut self, count: u32, len: u32, now: u64) -> bool {
        assert!(len <= MAX_LEN, "packet length {len} exceeds {MAX_LEN}");
        if count == 0 || u64::from(count) > self.space() {
            return false;
        }
        let first = self.prod;
        let end = first + u64::from(count);
        self.prefetch_for_writing();
        for pos in first..end {
            // SAFETY: as in `push`: `pos < free + cap`, so the scheduler is done with this slot
            // and does not read it again until a `tail` past it is published.
            self.ring.entry(pos).with_mut(|p| unsafe { *p = ClientData { cli_enq: now, len, msg_len: 1 } });
        }
        self.prod = end;
        // Up to the last completed line (every position is a message boundary here; the
        // messages of several packets before these were published whole when pushed).
        let line_end = end & !(PER_LINE - 1);
        if line_end > self.published {
            self.published = line_end;
            self.ring.tail.0.store(line_end, Ordering::Release);
        }
        true
    }

    /// Asks for the lines of entries of the free slots ahead of `prod` (up to 64 positions) in
    /// the exclusive state, each line once: the scheduler read them last, so each store to them
    /// needs the line back from the scheduler's CPU, and without this the pushes wait for those
    /// transfers one line after the other.
    #[inline]
    fn prefetch_for_writing(&mut self) {
        #[cfg(all(target_arch = "x86_64", not(miri), not(feature = "loom")))]
        if self.prefetchw {
            let end = (self.free + self.cap).min(self.prod + 64) & !(PER_LINE - 1);
            let mut pos = self.write_prefetched.max(self.prod & !(PER_LINE - 1));
            while pos < end {
                let line = self.ring.entry(pos);
                // SAFETY: `prefetchw` is a hint that accesses no memory (this address is a live
                // line of the ring, of free slots); `prefetchw` was found in CPUID (`channel`).
                unsafe {
                    core::arch::asm!("prefetchw [{0}]", in(reg) (line as *const Cell<ClientData>), options(nostack, preserves_flags, readonly))
                };
                pos += PER_LINE;
            }
            self.write_prefetched = self.write_prefetched.max(end);
        }
    }

    /// Makes every pushed packet visible to the scheduler (one store, only if some are not).
    #[inline]
    pub fn flush(&mut self) {
        if self.published != self.prod {
            self.published = self.prod;
            self.ring.tail.0.store(self.prod, Ordering::Release);
        }
    }

    /// Packets pushed but not yet visible to the scheduler (see [`Producer::flush`]).
    pub fn unpublished(&self) -> u64 {
        self.prod - self.published
    }

    /// True when the packet at `pos` (not yet counted, at or past `head`) has its own mark.
    #[inline]
    fn marked(&self, pos: u64) -> bool {
        (self.swept > 0 && *self.counted_at(pos)) || self.ring.done(pos).load(Ordering::Acquire) >> 1 == pos + 1
    }

    #[inline(always)]
    fn counted_at(&self, pos: u64) -> &bool {
        let idx = (pos & self.mask) as usize;
        debug_assert!(idx < self.counted.len());
        // SAFETY: `counted` holds `mask + 1` flags (`channel`).
        unsafe { self.counted.get_unchecked(idx) }
    }

    /// True when the next packet in position order has been released (a cheap peek).
    #[inline]
    pub fn has_mark(&self) -> bool {
        self.seen < self.prod && (self.ring.head.0.load(Ordering::Acquire) > self.seen || self.marked(self.seen))
    }

    /// How many packets, in position order from the first uncounted one, have been released
    /// (at most `max`). Only looks: [`Producer::consume`] counts them. A caller that reads its
    /// clock after this call knows every one of them was marked before that read.
    ///
    /// One load of the scheduler's `head` covers every packet it released in position order;
    /// beyond it, each packet's own mark is read (packets released out of order, or dropped).
    /// The lines of those marks for (up to 64 of) the packets in flight past `head` are
    /// prefetched first, so that their transfers from the scheduler's CPU overlap.
    #[inline]
    pub fn marks(&self, max: u64) -> u64 {
        let head = self.ring.head.0.load(Ordering::Acquire).min(self.prod);
        let mut n = head.saturating_sub(self.seen).min(max);
        if n == max || self.seen + n >= self.prod {
            return n;
        }
        #[cfg(all(target_arch = "x86_64", not(miri), not(feature = "loom")))]
        {
            let start = self.seen + n;
            let end = self.prod.min(start + 64);
            let mut pos = start;
            while pos < end {
                let mark = self.ring.done(pos);
                // SAFETY: `prefetch` is a hint that accesses no memory (this address is a live
                // mark of the ring), and SSE, which it needs, is part of x86_64.
                unsafe {
                    core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>((mark as *const AtomicU64).cast())
                };
                pos += 8;
            }
        }
        while n < max && self.seen + n < self.prod && self.marked(self.seen + n) {
            n += 1;
        }
        n
    }

    /// Counts the next `n` packets, which [`Producer::marks`] reported released, calling `f` for
    /// each, and frees the slots of fully released messages. With `stamps` the completions carry
    /// the scheduler's stamps (reading them moves the scheduler's stamp lines to this CPU);
    /// without, those two fields are 0.
    #[inline]
    pub fn consume(&mut self, n: u64, stamps: bool, mut f: impl FnMut(Completion)) {
        let end = self.seen + n;
        debug_assert!(end <= self.prod, "consume: {n} packets past the pushed ones");
        for pos in self.seen..end {
            if self.swept > 0 && *self.counted_at(pos) {
                *slot_mut(&mut self.counted, self.mask, pos) = false;
                self.swept -= 1;
                continue;
            }
            // `marks` saw this position released (`head` past it, or its own mark, both loaded
            // with Acquire), so the mark read here is final: this lap's mark when the scheduler
            // stored one (out of order, or dropped), else an earlier lap's (released in order,
            // sent).
            let d = self.ring.done(pos).load(Ordering::Relaxed);
            f(self.read(pos, d == mark(pos, true), stamps));
        }
        self.seen = end;
        self.advance_free();
    }

    /// Counts every released packet in position order (up to the first unreleased one), with
    /// stamps. Returns how many were counted.
    #[inline]
    pub fn poll(&mut self, f: impl FnMut(Completion)) -> u64 {
        let n = self.marks(u64::MAX);
        self.consume(n, true, f);
        n
    }

    /// Like [`Producer::poll`] but also counts packets released out of order beyond the first
    /// unreleased one (message policies can release a later message first). Used at the end of
    /// a run so that every released packet is counted. O(packets in flight).
    pub fn sweep(&mut self, mut f: impl FnMut(Completion)) -> u64 {
        let mut n = self.poll(&mut f);
        for pos in self.seen..self.prod {
            if self.swept > 0 && *self.counted_at(pos) {
                continue;
            }
            let d = self.ring.done(pos).load(Ordering::Acquire);
            if d >> 1 == pos + 1 {
                *slot_mut(&mut self.counted, self.mask, pos) = true;
                self.swept += 1;
                f(self.read(pos, d & 1 == 1, true));
                n += 1;
            }
        }
        n
    }

    #[inline]
    fn read(&self, pos: u64, dropped: bool, stamps: bool) -> Completion {
        // SAFETY: the client's own entry; the scheduler only reads it (and is done with it: the
        // release was seen with an Acquire load before this call).
        let c = self.ring.entry(pos).with(|p| unsafe { *p });
        let s = if stamps {
            // SAFETY: the release of `pos` (`head` past it, or its own mark) was loaded with
            // Acquire, so the scheduler's writes to the stamps happened before, and it does not
            // touch this entry again until the client publishes the slot's next occupant.
            self.ring.sch(pos).with(|p| unsafe { *p })
        } else {
            SchedData::default()
        };
        Completion { pos, cli_enq: c.cli_enq, sch_enq: s.sch_enq, sch_deq: s.sch_deq, len: c.len, dropped }
    }

    fn advance_free(&mut self) {
        if self.multi == 0 {
            // Only one-packet messages in flight: every counted slot is free.
            self.free = self.seen;
            return;
        }
        while self.free < self.seen {
            // SAFETY: the client's own entry, which it wrote when it pushed the message starting
            // at `free` (the scheduler only reads entries).
            let n = u64::from(self.ring.entry(self.free).with(|p| unsafe { (*p).msg_len }).max(1));
            if self.free + n > self.seen {
                break;
            }
            if n > 1 {
                self.multi -= 1;
            }
            self.free += n;
        }
    }
}

/// True when the CPU has `prefetchw` (CPUID 0x8000_0001 ECX bit 8, AMD's 3DNowPrefetch and
/// Intel's PRFCHW).
fn has_prefetchw() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri), not(feature = "loom")))]
    {
        use core::arch::x86_64::__cpuid;
        __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(feature = "loom"))))]
    {
        false
    }
}

/// The scheduler's end.
#[derive(Debug)]
pub struct Consumer {
    ring: Arc<Ring>,
    mask: u64,
    /// Next position to take.
    cons: u64,
    /// Scheduler-private copy of the client's `tail` (reloaded by [`Consumer::ready`]).
    tail: u64,
    /// Every position below it is released (in order, or with its own mark): the next `head`.
    next: u64,
    /// The last `head` stored.
    head: u64,
    /// Positions at or past `next` released with their own mark (out of order, or dropped).
    out_of_order: u64,
    /// Scheduler-private, by a message's first slot: 0 at rest (no message of several packets
    /// starting there is in flight, so a one-packet message costs no write here); for a message
    /// of `n > 1` packets, `n << 32 | k` from its take until its last release, `k` packets of it
    /// released (the last release puts the 0 back).
    progress: Box<[u64]>,
    /// Scheduler-private: the lines of entries below this position have been prefetched.
    #[cfg_attr(not(all(target_arch = "x86_64", not(miri), not(feature = "loom"))), allow(dead_code))]
    prefetched: u64,
    /// Whether `take` and `release` write the scheduler's stamps (`sch`); see
    /// [`Consumer::set_stamps`].
    stamps: bool,
}

impl Consumer {
    /// Whether [`Consumer::take`] and [`Consumer::release`] write the scheduler's stamps
    /// (`sch_enq`, `sch_deq`; on by default). A harness whose client never asks for them
    /// ([`Producer::consume`] with `stamps == false` only: no timestamp records, no message log)
    /// turns them off, which saves two stores per packet on the scheduler's side; completions read
    /// with stamps would then carry stale values.
    pub fn set_stamps(&mut self, on: bool) {
        self.stamps = on;
    }

    /// Whether [`Consumer::take`] and [`Consumer::release`] write the scheduler's stamps.
    pub fn stamps(&self) -> bool {
        self.stamps
    }

    /// Packets taken so far.
    pub fn taken(&self) -> u64 {
        self.cons
    }

    /// True when the client has published the slot at the cursor (a cheap peek, no stamp). This
    /// is the one place that reloads the client's `tail`, and only when everything up to the
    /// private copy has been taken: a scheduler visit takes what was published when it began.
    ///
    /// The lines of entries of (up to 64 of) the published packets ahead of the cursor are
    /// prefetched at every visit (each line once), so that their transfers from the client's CPU
    /// overlap instead of stalling the takes one line after the other: after a reload of `tail`,
    /// and also when a visit stops early (the queue limit) with a backlog still in the ring.
    #[inline]
    pub fn ready(&mut self) -> bool {
        if self.cons >= self.tail {
            self.tail = self.ring.tail.0.load(Ordering::Acquire);
        }
        self.prefetch();
        self.cons < self.tail
    }

    #[inline]
    fn prefetch(&mut self) {
        #[cfg(all(target_arch = "x86_64", not(miri), not(feature = "loom")))]
        {
            let end = self.tail.min(self.cons + 64);
            let mut pos = self.prefetched.max(self.cons & !(PER_LINE - 1));
            while pos < end {
                let line = self.ring.entry(pos);
                // SAFETY: `prefetch` is a hint that accesses no memory (any address is allowed; this
                // one is a live line of the ring), and SSE, which it needs, is part of x86_64.
                unsafe {
                    core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                        (line as *const Cell<ClientData>).cast(),
                    )
                };
                pos += PER_LINE;
            }
            // A line only partly published is fetched again at the next visit (as before this
            // bookkeeping: the old rule prefetched from the cursor's line at every reload).
            self.prefetched = self.prefetched.max(end & !(PER_LINE - 1));
        }
    }

    /// The message at the cursor, if the client had published it at the last [`Consumer::ready`]
    /// and stamped it no later than `now` (a peek: nothing is taken or stamped; the entry is read
    /// once, for both the caller's decision and [`Consumer::commit`]).
    #[inline]
    pub fn peek(&self, now: u64) -> Option<Incoming> {
        let pos = self.cons;
        if pos >= self.tail {
            return None;
        }
        // SAFETY: `pos < tail` (Acquire) means the client wrote the entry and will not touch it
        // until it sees our release (`head` past it, or its own mark).
        let c = self.ring.entry(pos).with(|p| unsafe { *p });
        let n = c.msg_len.max(1);
        // A message stamped after `now` waits for the next visit; `pos + n > tail` cannot happen
        // (`tail` covers whole messages) and is refused for robustness.
        if c.cli_enq > now || pos + u64::from(n) > self.tail {
            return None;
        }
        Some(Incoming { pos, packets: n, len: c.len, cli_enq: c.cli_enq })
    }

    /// Takes `m`, which [`Consumer::peek`] just returned (the cursor moves past it), stamping
    /// `now` as its scheduler enqueue time.
    #[inline]
    pub fn commit(&mut self, m: &Incoming, now: u64) {
        debug_assert_eq!(m.pos, self.cons, "commit: not the message at the cursor");
        if self.stamps {
            for k in 0..u64::from(m.packets) {
                // SAFETY: every slot of the message is published and not yet marked: the stamps
                // are ours.
                self.ring.sch(m.pos + k).with_mut(|p| unsafe { (*p).sch_enq = now });
            }
        }
        if m.packets > 1 {
            let v = slot_mut(&mut self.progress, self.mask, m.pos);
            debug_assert_eq!(*v, 0, "commit: a message of several packets still in flight at position {}", m.pos);
            *v = u64::from(m.packets) << 32;
        }
        self.cons = m.pos + u64::from(m.packets);
    }

    /// The next message, if the client had published it at the last [`Consumer::ready`] and
    /// stamped it no later than `now`; it is taken (the cursor moves past it) and stamped `now` as
    /// its scheduler enqueue time. (A message stamped after `now` stays for the next visit, so
    /// that `sch_enq >= cli_enq` always: the caller reads its clock after seeing the ring.)
    /// [`Consumer::peek`] then [`Consumer::commit`].
    #[inline]
    pub fn take(&mut self, now: u64) -> Option<Incoming> {
        let m = self.peek(now)?;
        self.commit(&m, now);
        Some(m)
    }

    /// Releases the next packet of the message whose first packet is at `first` (taken with
    /// [`Consumer::take`]), stamped `now`; `dropped` marks a packet the policy refused, and the
    /// client sees the release at once ([`Consumer::release_later`] then [`Consumer::publish`]).
    /// Returns the released packet's position.
    #[inline]
    pub fn release(&mut self, first: u64, now: u64, dropped: bool) -> u64 {
        let pos = self.release_later(first, now, dropped);
        self.publish();
        pos
    }

    /// Like [`Consumer::release`], but a packet released in position order (the next one after
    /// every packet released so far) and not dropped becomes visible to the client only at the
    /// next [`Consumer::publish`]: one store of `head` for a whole batch instead of a mark per
    /// packet. A packet released out of order (message policies) or dropped gets its own mark
    /// at once, as `head` cannot cover it yet (or cannot say it was dropped).
    #[inline]
    pub fn release_later(&mut self, first: u64, now: u64, dropped: bool) -> u64 {
        let v = slot_mut(&mut self.progress, self.mask, first);
        // A one-packet message: its progress stays 0 (no write). Several packets: count this
        // one, and put the 0 back with the last.
        let k = *v & 0xFFFF_FFFF;
        if *v != 0 {
            *v = if k + 1 == *v >> 32 { 0 } else { *v + 1 };
        }
        let pos = first + k;
        debug_assert!(pos >= self.next && pos < self.cons, "release: position {pos} not taken, or released twice");
        if self.stamps {
            // SAFETY: the position was taken and not yet released, so its stamps are ours.
            self.ring.sch(pos).with_mut(|p| unsafe { (*p).sch_deq = now });
        }
        if pos == self.next && !dropped {
            self.next += 1;
        } else {
            self.ring.done(pos).store(mark(pos, dropped), Ordering::Release);
            self.out_of_order += 1;
        }
        // `next` passes the positions released earlier with their own marks (only this side
        // writes the marks, so its own Relaxed loads see them).
        while self.out_of_order > 0 && self.ring.done(self.next).load(Ordering::Relaxed) >> 1 == self.next + 1 {
            self.next += 1;
            self.out_of_order -= 1;
        }
        pos
    }

    /// Makes every release so far visible to the client (one store of `head`, only if it moved).
    #[inline]
    pub fn publish(&mut self) {
        if self.head != self.next {
            self.head = self.next;
            self.ring.head.0.store(self.next, Ordering::Release);
        }
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
        assert!(c.ready());
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
            assert!(c.ready());
            let m = c.take(round).unwrap();
            for _ in 0..3 {
                c.release(m.pos, round, false);
            }
            assert_eq!(p.poll(|x| assert_eq!(x.cli_enq, round)), 3);
        }
    }

    /// `marks` only looks; `consume` counts exactly what it reported, with or without the
    /// scheduler's stamps, and carries the dropped flag either way.
    #[test]
    fn marks_then_consume_with_and_without_stamps() {
        let (mut p, mut c) = channel(5);
        assert_eq!(p.marks(u64::MAX), 0);
        for t in 0..4 {
            assert!(p.push(1, 60 + t, 10 + u64::from(t)));
        }
        assert!(c.ready());
        for _ in 0..4 {
            let m = c.take(20).unwrap();
            c.release(m.pos, 30 + m.pos, m.pos == 1);
        }
        assert_eq!(p.marks(u64::MAX), 4);
        assert_eq!(p.marks(3), 3);
        assert_eq!(p.marks(3), 3, "marks() does not count");
        let mut got = Vec::new();
        p.consume(2, false, |x| got.push(x));
        assert_eq!(got[0], Completion { pos: 0, cli_enq: 10, sch_enq: 0, sch_deq: 0, len: 60, dropped: false });
        assert_eq!((got[1].pos, got[1].dropped, got[1].sch_deq), (1, true, 0));
        p.consume(2, true, |x| got.push(x));
        assert_eq!(got[2], Completion { pos: 2, cli_enq: 12, sch_enq: 20, sch_deq: 32, len: 62, dropped: false });
        assert_eq!(got.len(), 4);
        assert_eq!((p.marks(u64::MAX), p.in_flight(), p.space()), (0, 0, 5));
        // A capacity that is not a power of two still bounds the packets in flight.
        for t in 0..5 {
            assert!(p.push(1, 60, t));
        }
        assert_eq!(p.space(), 0);
        assert!(!p.push(1, 60, 9));
        assert!(c.ready());
        assert_eq!(c.take(99).map(|m| m.pos), Some(4));
    }

    /// A single packet becomes visible when it completes a line or at `flush`; a message at
    /// once; the scheduler sees what was published at its last `ready`.
    #[test]
    fn publication_by_line_message_and_flush() {
        let (mut p, mut c) = channel(16);
        assert!(p.push(1, 60, 1));
        assert_eq!(p.unpublished(), 1);
        assert!(!c.ready(), "a lone packet waits for its line or a flush");
        p.flush();
        assert_eq!(p.unpublished(), 0);
        assert!(c.ready());
        assert_eq!(c.take(10).map(|m| m.pos), Some(0));
        for t in 2..5 {
            assert!(p.push(1, 60, t));
        }
        assert_eq!(p.unpublished(), 0, "the fourth packet completed the line");
        assert!(p.push(3, 60, 5));
        assert_eq!(p.unpublished(), 0, "messages are published at once");
        assert!(p.push(1, 60, 6));
        assert_eq!(p.unpublished(), 0, "position 7 completed the second line");
        assert!(p.push(1, 60, 7));
        assert!(c.ready());
        let taken: Vec<u64> = std::iter::from_fn(|| c.take(10).map(|m| m.pos)).collect();
        assert_eq!(taken, vec![1, 2, 3, 4, 7]);
        assert!(c.take(10).is_none(), "position 8 was pushed but not flushed");
        p.flush();
        assert!(c.take(10).is_none(), "not before the next ready()");
        assert!(c.ready());
        assert_eq!(c.take(10).map(|m| m.pos), Some(8));
    }

    /// Without stamps the scheduler leaves `sch` alone; everything else a completion carries
    /// (position, client stamp, length, dropped) is intact.
    #[test]
    fn stamps_off_leaves_the_stamps_and_keeps_the_rest() {
        let (mut p, mut c) = channel(4);
        assert!(p.push(1, 60, 10));
        assert!(p.push(2, 90, 11));
        assert!(c.ready());
        let a = c.take(20).unwrap();
        c.set_stamps(false);
        let b = c.take(21).unwrap();
        c.release(a.pos, 30, true);
        c.release(b.pos, 31, false);
        c.release(b.pos, 32, false);
        let mut got = Vec::new();
        assert_eq!(p.poll(|x| got.push(x)), 3);
        // Message a was stamped on take (stamps on) but not on release; b never.
        assert_eq!(got[0], Completion { pos: 0, cli_enq: 10, sch_enq: 20, sch_deq: 0, len: 60, dropped: true });
        assert_eq!(got[1], Completion { pos: 1, cli_enq: 11, sch_enq: 0, sch_deq: 0, len: 90, dropped: false });
        assert_eq!((got[2].pos, got[2].cli_enq, got[2].sch_enq, got[2].sch_deq), (2, 11, 0, 0));
    }

    /// A burst of single packets: one call, published up to its last whole line. Releases in
    /// order are seen only after `publish` (one `head`); a dropped or out-of-order packet keeps
    /// its own mark, and `head` passes it once the packets before it are released.
    #[test]
    fn push_singles_and_batched_releases() {
        let (mut p, mut c) = channel(8);
        assert!(!p.push_singles(9, 60, 1), "does not fit: nothing pushed");
        assert!(p.push_singles(6, 60, 1));
        assert_eq!((p.pushed(), p.unpublished(), p.space()), (6, 2, 2), "published up to the line at 4");
        assert!(c.ready());
        let taken: Vec<u64> = std::iter::from_fn(|| c.take(5).map(|m| m.pos)).collect();
        assert_eq!(taken, vec![0, 1, 2, 3]);
        p.flush();
        assert!(c.ready());
        assert_eq!((c.take(5).map(|m| m.pos), c.take(5).map(|m| m.pos)), (Some(4), Some(5)));
        c.release_later(0, 7, false);
        c.release_later(1, 7, true);
        assert_eq!(p.marks(u64::MAX), 0, "position 0 waits for publish");
        c.publish();
        assert_eq!(p.marks(u64::MAX), 2, "head covers 0 and the marked 1");
        c.release_later(3, 8, false); // out of order: its own mark
        assert_eq!(p.marks(u64::MAX), 2);
        c.release_later(2, 8, false);
        c.release_later(5, 9, false);
        c.release_later(4, 9, false);
        c.publish();
        let mut got = Vec::new();
        p.consume(p.marks(u64::MAX), false, |x| got.push((x.pos, x.dropped)));
        assert_eq!(got, vec![(0, false), (1, true), (2, false), (3, false), (4, false), (5, false)]);
        assert_eq!((p.in_flight(), p.space()), (0, 8));
        // The next lap: the marks of the last one are stale, not releases.
        assert!(p.push_singles(8, 60, 2));
        p.flush();
        assert_eq!(p.marks(u64::MAX), 0);
        assert!(c.ready());
        for pos in 6..14 {
            assert_eq!(c.take(5).map(|m| m.pos), Some(pos));
            c.release_later(pos, 9, false);
        }
        c.publish();
        let mut dropped = 0;
        assert_eq!(p.poll(|x| dropped += u32::from(x.dropped)), 8);
        assert_eq!(dropped, 0, "last lap's dropped mark at slot 1 is not this lap's");
    }

    #[test]
    fn sweep_counts_out_of_order_releases_once() {
        let (mut p, mut c) = channel(8);
        for _ in 0..3 {
            p.push(1, 60, 0);
        }
        p.flush();
        assert!(c.ready());
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
                    if let Some(m) = c.take(seen_msgs).or_else(|| c.ready().then(|| c.take(seen_msgs)).flatten()) {
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
                } else {
                    p.flush(); // waiting for space: what was pushed must be visible
                }
                got += p.poll(|x| assert!(x.sch_enq == x.cli_enq && x.sch_deq == x.cli_enq));
            }
            p.flush();
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
                    if let Some(m) = c.take(10).or_else(|| c.ready().then(|| c.take(10)).flatten()) {
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
                p.flush();
            }
            while got < 3 {
                got += p.poll(|x| assert_eq!(x.sch_deq, 7));
                loom::thread::yield_now();
            }
            assert_eq!(sched.join().unwrap(), vec![1, 2]);
        });
    }

    /// The batched releases: `head` (one store per batch) and the marks of packets released out
    /// of order or dropped, and `head` passing those marks. Two one-packet messages through a
    /// two-slot ring, the second released first when both were taken (its own mark), then a
    /// two-packet message that wraps, its first packet dropped (its own mark, at `next`) and
    /// its second sent in order. The client checks every packet's position, dropped flag and
    /// stamp, and that every slot comes back.
    #[test]
    fn loom_batched_release_and_marks() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let (mut p, mut c) = channel(2);
            let sched = loom::thread::spawn(move || {
                let take = |c: &mut Consumer| c.take(10).or_else(|| c.ready().then(|| c.take(10)).flatten());
                let mut msgs = 0;
                while msgs < 3 {
                    let Some(m) = take(&mut c) else {
                        loom::thread::yield_now();
                        continue;
                    };
                    if m.packets == 2 {
                        c.release_later(m.pos, 20, true);
                        c.release_later(m.pos, 21, false);
                        msgs += 1;
                    } else if m.pos == 0 {
                        // The second message too, if it is there: released first (out of order).
                        if let Some(m1) = take(&mut c) {
                            c.release_later(m1.pos, 11, false);
                            msgs += 1;
                        }
                        c.release_later(0, 10, false);
                        msgs += 1;
                    } else {
                        c.release_later(m.pos, 11, false);
                        msgs += 1;
                    }
                    c.publish();
                }
            });
            let mut got = Vec::new();
            for (i, n) in [(1u64, 1u32), (2, 1), (3, 2)] {
                while p.space() < u64::from(n) {
                    p.poll(|x| got.push((x.pos, x.dropped, x.sch_deq)));
                    loom::thread::yield_now();
                }
                assert!(p.push(n, 60, i));
                p.flush();
            }
            while got.len() < 4 {
                p.poll(|x| got.push((x.pos, x.dropped, x.sch_deq)));
                loom::thread::yield_now();
            }
            sched.join().unwrap();
            assert_eq!(got, vec![(0, false, 10), (1, false, 11), (2, true, 20), (3, false, 21)]);
            assert_eq!((p.in_flight(), p.space()), (0, 2));
        });
    }
}
