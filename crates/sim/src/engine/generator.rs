//! The shared sample path: arrivals, packet starts, batch boundaries and report times, generated
//! once for every lane.

use std::collections::BinaryHeap;
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{Arrivals, Control, Kind, Msg, SimConfig};
use crate::expo::Ziggurat;
use crate::model::{LengthTable, Service, TraceArrival};
use crate::wyrand::WyRand;
use schedlab_report::LogHist;

/// One step of the shared sample path. Packet starts are not steps of their own: `before` says
/// how many of the chunk's packet starts (`Path::times`) come before this step, so a lane serves
/// the starts between two steps in one bulk `dequeue_many` and dispatches once per message.
#[derive(Clone, Copy, Debug)]
pub(super) struct Step {
    pub(super) msg: Msg,
    pub(super) before: u32,
    pub(super) kind: Kind,
}

/// A chunk of the sample path: steps plus the start times of the packets taken.
#[derive(Default)]
pub(super) struct Path {
    pub(super) steps: Vec<Step>,
    pub(super) times: Vec<f64>,
}

pub(super) const NO_MSG: Msg = Msg { t: 0.0, len: 0, app: 0, seq: 0, class: 0 };

impl Path {
    pub(super) fn clear(&mut self) {
        self.steps.clear();
        self.times.clear();
    }
    #[inline(always)]
    pub(super) fn push(&mut self, kind: Kind, msg: Msg) {
        self.steps.push(Step { msg, before: self.times.len() as u32, kind });
    }
    #[inline(always)]
    pub(super) fn take(&mut self, t: f64) {
        self.times.push(t);
    }
}

enum Source {
    Poisson { mean_gap: f64, next: f64 },
    Trace { v: Arc<Vec<TraceArrival>>, i: usize },
    Closed { think: f64, ready: BinaryHeap<(std::cmp::Reverse<OrdF64>, u32)> },
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

impl Service {
    /// One packet's service time, from the service stream (the deterministic model draws nothing).
    #[inline(always)]
    fn draw(self, zig: &Ziggurat, rng: &mut WyRand) -> f64 {
        match self {
            // 0.5 + 0.5·X, the half drawn directly (the same bits).
            Service::Report => 0.5 + zig.sample_half(rng),
            Service::Det => 1.0,
            Service::Exp => zig.sample(rng),
        }
    }
}

/// Packets back to back, service times drawn by `draw`: from `t` on, while `t < limit` and there
/// is room, a packet starts at `t` (written to `room`) and holds the server for one service time
/// drawn from `service`. Returns the packets taken (at least one when `t < limit` and there is
/// room) and the end of the last one's service. The loop calls nothing but the ziggurat's rare
/// slow path, so the random state and the count stay in registers: through memory (a pushed
/// `Vec`'s length, the state behind a reference) each put a store-to-load round trip on every
/// packet's chain.
#[inline(always)]
fn take_run(
    zig: &Ziggurat,
    service: &mut WyRand,
    room: &mut [MaybeUninit<f64>],
    mut t: f64,
    limit: f64,
    draw: impl Fn(&Ziggurat, &mut WyRand) -> f64,
) -> (usize, f64) {
    let mut rng = service.clone();
    let mut k = 0;
    while k < room.len() && t < limit {
        room[k].write(t);
        k += 1;
        t += draw(zig, &mut rng);
    }
    *service = rng;
    (k, t)
}

/// Random streams: one per purpose so that changing one model part leaves the others' draws alone.
struct Rngs {
    arrival: Xoshiro256PlusPlus,
    pub(super) length: Xoshiro256PlusPlus,
    /// Drawn once per packet: wyrand, the cheapest good generator (see [`crate::wyrand`]).
    pub(super) service: WyRand,
    misc: Xoshiro256PlusPlus,
}

impl Rngs {
    pub(super) fn new(seed: u64) -> Self {
        let k = |k: u64| seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k;
        let s = |n| Xoshiro256PlusPlus::seed_from_u64(k(n));
        Rngs { arrival: s(1), length: s(2), service: WyRand::seed_from_u64(k(3)), misc: s(4) }
    }
}

/// Produces the shared sample path: arrivals, packet starts, batch boundaries and report times.
///
/// Because total work is identical in every queue, whether the server is busy depends only on
/// packets in − packets out, so the path can be generated once for all strategies.
pub(super) struct Generator<'a> {
    pub(super) cfg: &'a SimConfig,
    rng: Rngs,
    zig: &'static Ziggurat,
    src: Source,
    pub(super) apps: u32,
    target: u64,
    batch: u64,
    next_batch: u64,
    seq_per_app: Vec<u32>,
    pub(super) class_cum: Vec<f64>,
    pub(super) now: f64,
    busy: bool,
    service_end: f64,
    pub(super) packets_in: u64,
    pub(super) packets_out: u64,
    next_sample: f64,
    qsum: f64,
    qn: u64,
    /// (qsum, qn) at the last batch boundary, and the per-batch mean queue lengths.
    qsnap: (f64, u64),
    pub(super) qbatches: Vec<f64>,
    stat_delay: f64,
    next_check: f64,
    /// (time, packets in, qlen) at each report time.
    pub(super) checks: Vec<(f64, u64, f64)>,
    arrivals_done: bool,
    /// Time of the next arrival (infinity when there is none).
    t_arr: f64,
    pub(super) finished: bool,
    since_poll: u32,
    pub(super) interrupted: bool,
    /// The length distribution as a look-up table, when it has one (the fast generator's draws).
    lengths: Option<LengthTable>,
    /// Latencies of the lone messages (`Kind::Alone`), per length: recorded once here for all
    /// the lanes that bypass them, which count them without recording (see
    /// `LaneStats::delivered_lone`).
    pub(super) lone: Vec<LogHist>,
}

impl<'a> Generator<'a> {
    pub(super) fn new(cfg: &'a SimConfig) -> Self {
        let mut rng = Rngs::new(cfg.seed);
        let zig = Ziggurat::shared();
        let mean_len = cfg.dist.mean();
        let src = match &cfg.arrivals {
            Arrivals::Poisson => Source::Poisson { mean_gap: mean_len * 100.0 / cfg.traffic, next: 0.0 },
            Arrivals::Trace(v) => Source::Trace { v: v.clone(), i: 0 },
            Arrivals::Closed { apps } => {
                let think = f64::from(*apps) * mean_len * 100.0 / cfg.traffic;
                let mut ready = BinaryHeap::new();
                for a in 0..*apps {
                    ready.push((std::cmp::Reverse(OrdF64(zig.sample(&mut rng.misc) * think)), a));
                }
                Source::Closed { think, ready }
            }
        };
        let target = match &cfg.arrivals {
            Arrivals::Trace(v) => v.iter().map(|a| u64::from(a.len)).sum(),
            _ => cfg.packets.max(1),
        };
        let batch = (target / u64::from(cfg.batches.max(1))).max(1);
        let apps = match cfg.arrivals {
            Arrivals::Closed { apps } => apps.max(1),
            _ => cfg.apps.max(1),
        };
        let mut g = Generator {
            cfg,
            rng,
            zig,
            src,
            apps,
            target,
            batch,
            next_batch: batch,
            seq_per_app: vec![0; apps as usize],
            class_cum: cfg
                .msg_alpha
                .iter()
                .scan(0.0, |acc, c| {
                    *acc += c.frac;
                    Some(*acc)
                })
                .collect(),
            now: 0.0,
            busy: false,
            service_end: f64::INFINITY,
            packets_in: 0,
            packets_out: 0,
            next_sample: cfg.queue_delay,
            qsum: 0.0,
            qn: 0,
            qsnap: (0.0, 0),
            qbatches: Vec::new(),
            stat_delay: 20_000.0,
            next_check: if cfg.checkpoints { 20_000.0 } else { f64::INFINITY },
            checks: Vec::new(),
            arrivals_done: false,
            t_arr: 0.0,
            finished: false,
            since_poll: 0,
            interrupted: false,
            lengths: cfg.dist.table(),
            // One per length the distribution can draw (lone messages come from it only).
            // (None per size bucket: no array sized by the longest message.)
            lone: match super::statistics::Keys::for_config(cfg) {
                super::statistics::Keys::Lengths => (0..=cfg.dist.max_len()).map(|_| LogHist::new()).collect(),
                super::statistics::Keys::Buckets(_) => Vec::new(),
            },
        };
        g.t_arr = g.peek_arrival();
        g
    }

    fn peek_arrival(&self) -> f64 {
        if self.arrivals_done {
            return f64::INFINITY;
        }
        match &self.src {
            Source::Poisson { next, .. } => *next,
            Source::Trace { v, i } => v.get(*i).map_or(f64::INFINITY, |a| a.time),
            Source::Closed { ready, .. } => ready.peek().map_or(f64::INFINITY, |r| r.0 .0 .0),
        }
    }

    pub(super) fn close_qbatch(&mut self) {
        let dn = self.qn - self.qsnap.1;
        if dn > 0 {
            self.qbatches.push((self.qsum - self.qsnap.0) / dn as f64);
        }
        self.qsnap = (self.qsum, self.qn);
    }

    pub(super) fn qlen(&self) -> f64 {
        if self.qn > 0 {
            self.qsum / self.qn as f64
        } else {
            0.0
        }
    }

    /// A closed-loop application's message was delivered at `now`: it thinks, then sends again.
    pub(super) fn delivered(&mut self, app: u32) {
        if let Source::Closed { think, ready } = &mut self.src {
            let t = self.now + self.zig.sample(&mut self.rng.misc) * *think;
            ready.push((std::cmp::Reverse(OrdF64(t)), app));
        }
        self.t_arr = self.peek_arrival();
    }

    pub(super) fn take(&mut self, out: &mut Path) {
        self.packets_out += 1;
        out.take(self.now);
        self.service_end = self.now + self.cfg.service.draw(self.zig, &mut self.rng.service);
    }

    /// Appends the next step's events (at least one unless finished) to `out`.
    pub(super) fn step(&mut self, out: &mut Path, ctl: &Control) {
        loop {
            if self.finished {
                return;
            }
            let t_arr = self.t_arr;
            let t_srv = if self.busy { self.service_end } else { f64::INFINITY };
            let t_next = t_arr.min(t_srv);
            if t_next == f64::INFINITY {
                self.finished = true; // a trace fully delivered
                return;
            }
            // Periodic observers fire first when due; a report time ends the step.
            if self.next_sample <= t_next || self.next_check <= t_next {
                if self.fire_observer(out) {
                    return;
                }
                continue;
            }
            if t_arr <= t_srv {
                self.arrive(t_arr, out);
                if !matches!(self.cfg.arrivals, Arrivals::Trace(_)) && self.packets_in >= self.target {
                    self.finished = true;
                }
                self.poll(ctl);
            } else {
                // A service period ends: start the next packet of every queue, if any.
                self.now = t_srv;
                if self.packets_in > self.packets_out {
                    self.take(out);
                } else {
                    self.busy = false;
                    continue;
                }
            }
            return;
        }
    }

    /// Fires the periodic observers (queue-length samples, listing report times) due at or before
    /// `t`, in time order (a sample before a report time when they coincide).
    #[inline(never)]
    fn observe(&mut self, t: f64, out: &mut Path) {
        while self.next_sample <= t || self.next_check <= t {
            self.fire_observer(out);
        }
    }

    /// Fires the earlier of the next queue-length sample and the next listing report time (the
    /// sample when they coincide). True when it was a report time.
    fn fire_observer(&mut self, out: &mut Path) -> bool {
        if self.next_sample <= self.next_check {
            self.now = self.next_sample;
            self.qsum += (self.packets_in - self.packets_out) as f64;
            self.qn += 1;
            self.next_sample += self.cfg.queue_delay;
            false
        } else {
            self.now = self.next_check;
            self.checks.push((self.now, self.packets_in, self.qlen()));
            out.push(Kind::Check, NO_MSG);
            self.stat_delay *= 1.1;
            self.next_check += self.stat_delay;
            true
        }
    }

    /// Batch boundaries reached by the packets that have arrived.
    #[inline(always)]
    fn close_batches(&mut self, out: &mut Path) {
        while self.packets_in >= self.next_batch {
            out.push(Kind::Batch, NO_MSG);
            self.close_qbatch();
            self.next_batch += self.batch;
        }
    }

    /// Counts an arrival; every 65536 of them, publishes progress and honours a stop request.
    #[inline(always)]
    fn poll(&mut self, ctl: &Control) {
        self.since_poll += 1;
        if self.since_poll >= 1 << 16 {
            self.since_poll = 0;
            ctl.progress.store(self.packets_in, Ordering::Relaxed);
            if ctl.stop.load(Ordering::Relaxed) {
                self.interrupted = true;
                self.finished = true;
            }
        }
    }

    /// Poisson arrivals, one application, no §10 classes: the common case, generated by a tight
    /// loop until `out` holds `chunk` packet starts or the run ends. Produces exactly the events
    /// [`Generator::step`] would, with the same random draws, except that an arrival whose message
    /// is alone (the queue was empty and all its packets start before the next arrival) is marked
    /// [`Kind::Alone`]. A chunk ends only after the packet starts that follow an arrival, so a lone
    /// message's packets are in its own chunk.
    pub(super) fn fill_poisson(&mut self, out: &mut Path, ctl: &Control, chunk: usize) {
        // One loop per service model, so that the model is not matched per packet.
        match self.cfg.service {
            Service::Report => self.fill_poisson_with(out, ctl, chunk, |z, r| Service::Report.draw(z, r)),
            Service::Det => self.fill_poisson_with(out, ctl, chunk, |z, r| Service::Det.draw(z, r)),
            Service::Exp => self.fill_poisson_with(out, ctl, chunk, |z, r| Service::Exp.draw(z, r)),
        }
    }

    #[inline(always)]
    fn fill_poisson_with(
        &mut self,
        out: &mut Path,
        ctl: &Control,
        chunk: usize,
        draw: impl Fn(&Ziggurat, &mut WyRand) -> f64 + Copy,
    ) {
        let Source::Poisson { mean_gap, next } = self.src else { unreachable!("Poisson source") };
        debug_assert!(self.apps == 1 && self.class_cum.is_empty());
        let zig = self.zig;
        let mut t_arr = next;
        // The random streams live in locals (registers) for the whole chunk.
        let mut service = self.rng.service.clone();
        let mut arrival = self.rng.arrival.clone();
        let mut length = self.rng.length.clone();
        let table = self.lengths.clone();
        // The step of the last arrival, when it found the queue empty.
        let mut lone: Option<usize> = None;
        while !self.finished {
            if self.busy {
                // Service periods that end before the next arrival (ties go to the arrival): the
                // next packet of every queue starts, or the server goes idle. State in locals.
                let mut t = self.service_end;
                let mut sent = self.packets_out;
                let backlog_end = self.packets_in;
                let mut now = self.now;
                while t < t_arr {
                    let next_obs = self.next_sample.min(self.next_check);
                    if t >= next_obs {
                        self.packets_out = sent;
                        self.observe(t, out);
                        continue;
                    }
                    now = t;
                    if sent == backlog_end {
                        self.busy = false;
                        break;
                    }
                    // Packets back to back until the next arrival, observer or idle period.
                    let room = (backlog_end - sent) as usize;
                    out.times.reserve(room.min(1024));
                    let start = out.times.len();
                    let spare = out.times.spare_capacity_mut();
                    let n = room.min(spare.len());
                    let (taken, end) = take_run(zig, &mut service, &mut spare[..n], t, t_arr.min(next_obs), draw);
                    // SAFETY: `take_run` initialised the first `taken` slots of the spare capacity.
                    unsafe { out.times.set_len(start + taken) };
                    now = out.times[start + taken - 1];
                    sent += taken as u64;
                    t = end;
                }
                self.now = now;
                self.packets_out = sent;
                self.service_end = t;
                if let Some(i) = lone.take() {
                    if sent == backlog_end {
                        // All its packets have started, the last one last.
                        let s = &mut out.steps[i];
                        s.kind = Kind::Alone;
                        let (t, len) = (s.msg.t, s.msg.len as usize);
                        // (Per size bucket the lanes record lone messages themselves.)
                        if let Some(h) = self.lone.get_mut(len) {
                            h.record(out.times[out.times.len() - 1] - t);
                        }
                    }
                }
            }
            if out.times.len() >= chunk {
                break;
            }
            let t = t_arr;
            if t >= self.next_sample || t >= self.next_check {
                self.observe(t, out);
            }
            self.now = t;
            let u: f64 = length.random();
            let len = match &table {
                Some(t) => t.sample(u),
                None => self.cfg.dist.sample(u),
            };
            t_arr = t + mean_gap * zig.sample(&mut arrival);
            let seq = self.seq_per_app[0];
            self.seq_per_app[0] = seq.wrapping_add(1);
            if self.packets_in == self.packets_out {
                lone = Some(out.steps.len());
            }
            out.push(Kind::Arrive, Msg { t, len, app: 0, seq, class: 0 });
            self.packets_in += u64::from(len);
            if !self.busy {
                self.busy = true;
                self.packets_out += 1;
                out.take(t);
                self.service_end = t + draw(zig, &mut service);
            }
            self.close_batches(out);
            if self.packets_in >= self.target {
                self.finished = true;
            }
            self.poll(ctl);
        }
        self.rng.service = service;
        self.rng.arrival = arrival;
        self.rng.length = length;
        self.src = Source::Poisson { mean_gap, next: t_arr };
        self.t_arr = t_arr;
    }

    #[inline]
    fn arrive(&mut self, t: f64, out: &mut Path) {
        self.now = t;
        let apps = self.apps;
        let (len, app) = match &mut self.src {
            Source::Poisson { mean_gap, next } => {
                let u: f64 = self.rng.length.random();
                let len = self.cfg.dist.sample(u);
                let app = if apps > 1 { self.rng.misc.random_range(0..apps) } else { 0 };
                *next = t + *mean_gap * self.zig.sample(&mut self.rng.arrival);
                (len, app)
            }
            Source::Trace { v, i } => {
                let a = v[*i];
                *i += 1;
                if *i == v.len() {
                    self.arrivals_done = true;
                }
                (a.len, a.app.min(apps - 1))
            }
            Source::Closed { ready, .. } => {
                let (_, app) = ready.pop().expect("peeked");
                let u: f64 = self.rng.length.random();
                (self.cfg.dist.sample(u), app)
            }
        };
        let class = if self.class_cum.is_empty() {
            0
        } else {
            let u: f64 = self.rng.misc.random();
            self.class_cum.iter().position(|&c| u < c).unwrap_or(self.class_cum.len() - 1) as u32
        };
        let seq = self.seq_per_app[app as usize];
        self.seq_per_app[app as usize] = seq.wrapping_add(1);
        self.t_arr = match &self.src {
            Source::Poisson { next, .. } => *next,
            _ => self.peek_arrival(),
        };
        out.push(Kind::Arrive, Msg { t, len, app, seq, class });
        self.packets_in += u64::from(len);
        if !self.busy {
            self.busy = true;
            self.take(out);
        }
        self.close_batches(out);
    }
}
