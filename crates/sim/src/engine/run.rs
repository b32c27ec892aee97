//! The driver: chunks of the path replayed through every lane, on one thread or split over
//! several (lane-parallel), closed loops one strategy at a time, and the run's results.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::generator::{Generator, Path, NO_MSG};
use super::lanes::{replay_group, Lane};
use super::statistics::{ci95, fill_path_fields, merge_closed, Checkpoint, RunResult};
use super::swing::{Handover, Rule, Side, Travelling};
use super::Kind;
use super::{Arrivals, Control, SimConfig};
use crate::model::{listing_alpha, Strategy};

/// Packet starts generated before every lane replays them: 128 kB, within L2. Larger chunks than
/// 4096 re-warm the generator's tables (evicted while the lanes replay) less often: W4 3% faster.
const CHUNK: usize = 1 << 14;

/// Runs one configuration on one thread and returns the cumulative statistics
/// (the same as [`run_threads`] with one thread).
pub fn run(cfg: &SimConfig, ctl: &Control) -> RunResult {
    run_threads(cfg, ctl, 1)
}

/// Runs one configuration with up to `threads` threads and returns the cumulative statistics,
/// bit-identical for every thread count.
///
/// Open loops generate the shared sample path once, in chunks, and replay each chunk through every
/// strategy (lane), which keeps each strategy's state in cache. With more than one thread the lanes
/// are split into groups, one per thread: the calling thread generates each chunk and replays its
/// own group, the other threads replay theirs from the same chunk. Closed
/// loops (§2) feed each strategy its own path, one event at a time, with the same seed; their
/// strategies are independent and are shared out over the threads.
pub fn run_threads(cfg: &SimConfig, ctl: &Control, threads: usize) -> RunResult {
    run_with(cfg, ctl, threads, Shortcuts::ALL)
}

/// [`run_threads`] with the shortcuts `allow` allows.
fn run_with(cfg: &SimConfig, ctl: &Control, threads: usize, allow: Shortcuts) -> RunResult {
    let max_len = match &cfg.arrivals {
        Arrivals::Trace(v) => v.iter().map(|a| a.len).max().unwrap_or(1),
        _ => cfg.dist.max_len(),
    };
    if let Arrivals::Closed { .. } = cfg.arrivals {
        let n = cfg.strategies.len();
        let threads = threads.clamp(1, n.max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let closed_one = || {
            let mut mine = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return mine;
                }
                mine.push((i, run_closed(cfg, ctl, max_len, &cfg.strategies[i])));
            }
        };
        let mut results: Vec<Option<RunResult>> = (0..n).map(|_| None).collect();
        std::thread::scope(|s| {
            let workers: Vec<_> = (1..threads).map(|_| s.spawn(closed_one)).collect();
            let mut all = closed_one();
            for w in workers {
                all.extend(w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            for (i, r) in all {
                results[i] = Some(r);
            }
        });
        let runs = results.into_iter().map(|r| r.expect("every strategy ran")).collect();
        return merge_closed(runs).expect("at least one strategy");
    }
    run_open(cfg, ctl, max_len, allow, threads)
}

/// The shortcuts a run may take (tests turn them off to compare against the general code).
#[derive(Clone, Copy, Debug)]
struct Shortcuts {
    /// The common case's generator, [`Generator::fill_poisson`].
    fast_gen: bool,
    /// Lean alpha lanes ([`schedlab_policy::LeanAlpha`]) and plain FIFO/RR lanes where they apply.
    lean: bool,
}

impl Shortcuts {
    const ALL: Shortcuts = Shortcuts { fast_gen: true, lean: true };
}

/// The message lengths that can occur in a run (what the lean alpha lanes need to know).
fn lengths(cfg: &SimConfig) -> Vec<u32> {
    match &cfg.arrivals {
        Arrivals::Trace(v) => {
            let mut l: Vec<u32> = v.iter().map(|a| a.len).collect();
            l.sort_unstable();
            l.dedup();
            l
        }
        // Unknown (no lean lane) when there are more than a lean lane takes.
        _ => cfg.dist.support_upto(schedlab_policy::alpha::LEAN_CLASSES).unwrap_or_default(),
    }
}

/// One strategy of a closed loop on its own sample path.
fn run_closed(cfg: &SimConfig, ctl: &Control, max_len: u32, s: &Strategy) -> RunResult {
    // Closed loops need each delivered message's application: no lean lane.
    let mut lane = Lane::new(s, cfg, max_len, &[], false);
    let mut gen = Generator::new(cfg);
    let mut buf = Path::default();
    let mut delivered = Vec::with_capacity(16);
    while !gen.finished {
        buf.clear();
        gen.step(&mut buf, ctl);
        buf.push(Kind::End, NO_MSG);
        lane.replay(&buf, &mut delivered);
        for app in delivered.drain(..) {
            gen.delivered(app);
        }
    }
    buf.clear();
    buf.push(Kind::Batch, NO_MSG);
    buf.push(Kind::End, NO_MSG);
    gen.close_qbatch();
    lane.replay(&buf, &mut delivered);
    // Each strategy had its own path, so qlen is that strategy's own.
    finish(cfg, ctl, &gen, std::slice::from_ref(&lane))
}

/// Generates the next chunk of the shared path into `buf` (cleared first); the last chunk of the
/// run closes the final batch. Every chunk ends with an `End` step.
fn next_chunk(gen: &mut Generator<'_>, buf: &mut Path, ctl: &Control, fast: bool) {
    buf.clear();
    if fast {
        gen.fill_poisson(buf, ctl, CHUNK);
    } else {
        while buf.times.len() < CHUNK && !gen.finished {
            gen.step(buf, ctl);
        }
    }
    if gen.finished {
        buf.push(Kind::Batch, NO_MSG);
        gen.close_qbatch();
    }
    buf.push(Kind::End, NO_MSG);
}

/// An open loop in lock step on `threads` threads, with the shortcuts `allow` allows.
fn run_open(cfg: &SimConfig, ctl: &Control, max_len: u32, allow: Shortcuts, threads: usize) -> RunResult {
    let lens = lengths(cfg);
    let mut lanes: Vec<Lane> = cfg.strategies.iter().map(|s| Lane::new(s, cfg, max_len, &lens, allow.lean)).collect();
    let mut gen = Generator::new(cfg);
    // The fast generator: Poisson arrivals of one application without §10 classes, any service model.
    let fast = allow.fast_gen && matches!(cfg.arrivals, Arrivals::Poisson) && gen.apps == 1 && gen.class_cum.is_empty();
    let threads = threads.clamp(1, lanes.len().max(1));
    let mut buf = Path::default();
    let mut none = Vec::new();
    if threads == 1 {
        while !gen.finished {
            next_chunk(&mut gen, &mut buf, ctl, fast);
            replay_group(&mut lanes, &buf, &mut none);
        }
        return finish(cfg, ctl, &gen, &lanes);
    }
    // Calibration: the first chunks run on this thread, timing the generator, every lane alone
    // and, on every other chunk, each family of lanes replayed together (see `Costs`), so that
    // the lanes can be split into groups of about equal cost (the split changes no result).
    let families: Vec<Option<usize>> = lanes.iter().map(Lane::family).collect();
    let calibration_start = Instant::now();
    let mut gen_ns = Vec::with_capacity(CALIBRATION_CHUNKS);
    let mut lane_ns: Vec<Vec<u64>> = vec![Vec::with_capacity(CALIBRATION_CHUNKS); lanes.len()];
    let mut family_ns: [Vec<u64>; FAMILIES] = Default::default();
    while !gen.finished && gen_ns.len() < CALIBRATION_CHUNKS {
        let t0 = Instant::now();
        next_chunk(&mut gen, &mut buf, ctl, fast);
        gen_ns.push(t0.elapsed().as_nanos() as u64);
        let together = gen_ns.len() % 2 == 0;
        if together {
            for (f, ns) in family_ns.iter_mut().enumerate() {
                let t0 = Instant::now();
                replay_group(lanes.iter_mut().filter(|l| l.family() == Some(f)), &buf, &mut none);
                ns.push(t0.elapsed().as_nanos() as u64);
            }
        }
        for ((lane, ns), fam) in lanes.iter_mut().zip(&mut lane_ns).zip(&families) {
            if together && fam.is_some() {
                continue;
            }
            let t0 = Instant::now();
            lane.replay(&buf, &mut none);
            ns.push(t0.elapsed().as_nanos() as u64);
        }
    }
    if !gen.finished {
        let alone: Vec<u64> = lane_ns.iter_mut().map(|v| median_u64(v)).collect();
        let together: Vec<u64> = family_ns.iter_mut().map(|v| median_u64(v)).collect();
        let costs = Costs::new(&alone, &families, &together);
        let gen_cost = median_u64(&mut gen_ns);
        let mut fit = Fit { gen_cost, worker_scale: SCALE_ONE };
        let mut split = costs.split_swing(fit.gen_cost, fit.worker_scale, threads);
        let mut segment = FIRST_SEGMENT;
        let trace = std::env::var_os("SCHEDLAB_SIM_SPLIT_TRACE").is_some();
        if trace {
            eprintln!(
                "sim split: calibrated on {} chunks in {:.1} ms: generator {gen_cost} ns/chunk, lanes alone {alone:?}, families together {together:?}",
                gen_ns.len(),
                calibration_start.elapsed().as_secs_f64() * 1e3
            );
        }
        while !gen.finished {
            let start = if costs.swing_share(&split, &fit) >= 0.5 { Side::Generator } else { Side::Worker };
            let seg = replay_parallel(&mut gen, &mut lanes, &split, ctl, fast, segment, start, SWING_RULE);
            if gen.finished {
                break;
            }
            fit = fit.refit(&costs, &split.groups, &seg.ns, gen_cost);
            let next = costs.split_swing(fit.gen_cost, fit.worker_scale, threads);
            let (now_load, next_load) = (costs.load(&split, &fit), costs.load(&next, &fit));
            if trace {
                eprintln!(
                    "sim split: {segment} chunks, measured ns/chunk {:?}, swing lane {:?} on the generating thread for {} of {} chunks \
                     ({} moves), fit gen {} ns worker x{:.3}, groups {:?} (model {now_load} ns), best {:?} swing {:?} (model {next_load} ns)",
                    seg.ns,
                    split.swing,
                    seg.swing_on_generator,
                    seg.chunks,
                    seg.moves,
                    fit.gen_cost,
                    fit.worker_scale as f64 / SCALE_ONE as f64,
                    split.groups,
                    next.groups,
                    next.swing,
                );
            }
            // Move lanes only for a clear gain (the measurements are medians of one segment).
            if next_load + next_load / RESPLIT_GAIN < now_load {
                split = next;
            }
            segment = (segment * 2).min(LAST_SEGMENT);
        }
    }
    finish(cfg, ctl, &gen, &lanes)
}

/// Fixed point of [`Fit::worker_scale`].
const SCALE_ONE: u64 = 1024;

/// Chunks of the first parallel segment; each next one is twice as long, up to [`LAST_SEGMENT`].
/// Between segments the lanes may move between threads (the workers hand their lanes back, and
/// take their new groups' copies at the next segment).
const FIRST_SEGMENT: usize = 64;
const LAST_SEGMENT: usize = 2048;

/// A new split is taken when the model, refitted, says it is faster by more than 1/RESPLIT_GAIN.
const RESPLIT_GAIN: u64 = 40;

/// The cost model's correction from what the threads measured while replaying in parallel: lanes
/// calibrated on one thread cost about `worker_scale / SCALE_ONE` times as much on a worker
/// (which reads each chunk from the generating core's cache), and the generating thread's own
/// per-chunk work beyond its lanes (generating, handing chunks over) costs `gen_cost`. Measured on
/// an AMD EPYC VM, the generating thread's overhead while another core reads its chunks was about
/// twice the generator's cost alone, more than on the Intel VM the single-thread costs were tuned
/// on; a split from single-thread costs alone left the worker idle part of the time.
#[derive(Clone, Copy, Debug)]
struct Fit {
    gen_cost: u64,
    worker_scale: u64,
}

impl Fit {
    /// The fit from one segment's medians per chunk (`measured[g]`: the thread of group `g`),
    /// averaged with the previous fit (half each) so that one disturbed segment does not swing
    /// the split. The generator's cost never falls below half its calibrated `gen_cost0`, the
    /// workers' scale stays within 1/2..4.
    fn refit(self, costs: &Costs, groups: &[Vec<usize>], measured: &[u64], gen_cost0: u64) -> Fit {
        let lanes0 = costs.of(groups[0].iter().copied());
        let gen_now = measured[0].saturating_sub(lanes0).max(gen_cost0 / 2);
        let (mut got, mut model) = (0u64, 0u64);
        for (g, m) in groups.iter().zip(measured).skip(1) {
            if !g.is_empty() {
                got += m;
                model += costs.of(g.iter().copied());
            }
        }
        let scale_now = (got * SCALE_ONE).checked_div(model).map_or(self.worker_scale, |s| s.clamp(SCALE_ONE / 2, 4 * SCALE_ONE));
        Fit { gen_cost: (self.gen_cost + gen_now) / 2, worker_scale: (self.worker_scale + scale_now) / 2 }
    }
}

/// Chunks replayed on the generating thread alone to measure the lanes' costs (half of them
/// lane by lane, half family by family).
const CALIBRATION_CHUNKS: usize = 32;

/// Chunks kept in rotation before one is reused: enough that the workers' caches have let go of
/// a chunk's lines before the generator writes it again (writing lines another core still holds
/// costs a round trip per line).
const POOL_CHUNKS: usize = 16;

/// Chunks a worker may have queued behind the one it is replaying (bounds memory and lead).
const QUEUED_CHUNKS: usize = 6;

/// When the swing lane moves (see [`super::swing`]): to the generating thread when the worker
/// has five chunks to do (one in hand, four queued: it is falling behind, and the generating
/// thread would block on the third send after that), to the worker when it has two or fewer (it
/// would soon wait for chunks).
const SWING_RULE: Rule = Rule { generator_at: QUEUED_CHUNKS - 1, worker_at: 2 };

// The swing lane's catching up on the generating thread needs the chunks after the worker's last
// one, which the channel keeps within QUEUED_CHUNKS (and the take comes before the reuse in each
// turn of the generating loop).
const _: () = assert!(POOL_CHUNKS > QUEUED_CHUNKS + 1);

/// Splits of lanes whose modelled cost is within 1/NEAR_BEST of the best count as equal (see
/// [`Costs::split`]).
const NEAR_BEST: u64 = 32;

/// Families of lanes that `replay_group` replays together (see [`Lane::family`]).
const FAMILIES: usize = 2;

fn median_u64(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// What replaying a chunk costs a group of lanes on one thread. Lanes of one family replayed
/// together share the walk through the chunk's steps (each step is decoded once for all of them),
/// so a family's cost is not the sum of its lanes' costs alone: it is modelled as one shared part
/// per family present in the group plus each lane's own part. With the report's lanes at 90%,
/// the split on costs measured lane by lane (and again during a parallel trial) gave 1.64-1.73x
/// one thread on two threads; this model, with the preference for whole families in
/// [`Costs::split`], 1.94x (`crates/sim/bench/scaling.sh`, the default run, medians of 5).
#[derive(Clone, Debug)]
struct Costs {
    /// Each lane's cost replayed alone (what the swing lane costs: it replays by itself).
    alone: Vec<u64>,
    /// Each lane's own part.
    own: Vec<u64>,
    family: Vec<Option<usize>>,
    /// Each family's shared part.
    shared: [u64; FAMILIES],
    /// For up to 16 lanes, the sum of the own parts of every subset (bit i: lane i), so that the
    /// exhaustive splits cost a lookup per subset.
    own_sums: Vec<u64>,
    /// The lanes of each family, as a subset.
    members: [u32; FAMILIES],
}

impl Costs {
    /// From each lane's cost replayed alone and each family's replayed together: a family of k
    /// lanes that costs `together` shares `(sum of alone - together) / (k - 1)` (at most its
    /// cheapest lane's cost).
    fn new(alone: &[u64], family: &[Option<usize>], together: &[u64]) -> Costs {
        let mut shared = [0; FAMILIES];
        for (f, s) in shared.iter_mut().enumerate() {
            let members: Vec<u64> = alone.iter().zip(family).filter(|(_, g)| **g == Some(f)).map(|(c, _)| *c).collect();
            if members.len() >= 2 {
                let sum: u64 = members.iter().sum();
                let cheapest = members.iter().copied().min().unwrap_or(0);
                *s = (sum.saturating_sub(together[f]) / (members.len() as u64 - 1)).min(cheapest);
            }
        }
        let own: Vec<u64> = alone.iter().zip(family).map(|(c, f)| (c - f.map_or(0, |f| shared[f])).max(1)).collect();
        let mut own_sums = Vec::new();
        if own.len() <= 16 {
            own_sums = vec![0u64; 1 << own.len()];
            for m in 1..own_sums.len() {
                own_sums[m] = own_sums[m & (m - 1)] + own[m.trailing_zeros() as usize];
            }
        }
        let mut members = [0u32; FAMILIES];
        for (i, f) in family.iter().enumerate() {
            if let Some(f) = f {
                members[*f] |= 1 << i;
            }
        }
        Costs { alone: alone.to_vec(), own, family: family.to_vec(), shared, own_sums, members }
    }

    /// [`Costs::of`] for the subset `m` of up to 16 lanes (bit i: lane i), by lookup.
    fn of_mask(&self, m: u32) -> u64 {
        self.own_sums[m as usize] + (0..FAMILIES).filter(|&f| m & self.members[f] != 0).map(|f| self.shared[f]).sum::<u64>()
    }

    /// The cost of the lanes of `group` replayed on one thread.
    fn of(&self, group: impl IntoIterator<Item = usize>) -> u64 {
        let mut present = [false; FAMILIES];
        let mut cost = 0;
        for i in group {
            cost += self.own[i];
            if let Some(f) = self.family[i] {
                present[f] = true;
            }
        }
        cost + present.iter().zip(&self.shared).filter(|(p, _)| **p).map(|(_, s)| s).sum::<u64>()
    }

    /// Splits the lanes into `groups` groups of about equal cost; group 0 also carries
    /// `gen_cost`, the generator's. Two groups of up to 16 lanes are split exactly (every subset
    /// is tried; the least subset, by bits, of the best); more, longest own part first, each to
    /// the group it costs least. Returns the lane indices of each group, in increasing order;
    /// groups may be empty only if there are fewer lanes.
    #[cfg(test)]
    fn split(&self, gen_cost: u64, groups: usize) -> Vec<Vec<usize>> {
        self.split_scaled(gen_cost, SCALE_ONE, groups)
    }

    /// The modelled time per chunk of the slowest thread under `split`.
    fn load(&self, split: &Split, fit: &Fit) -> u64 {
        match self.swing_balance(split, fit) {
            Some((t, _)) => t,
            None => {
                let loads = split.groups.iter().enumerate();
                loads.map(|(g, m)| self.on(g, self.of(m.iter().copied()), fit.gen_cost, fit.worker_scale)).max().unwrap_or(0)
            }
        }
    }

    /// The modelled share of chunks the swing lane of `split` replays on the generating thread
    /// (1 without a swing lane).
    fn swing_share(&self, split: &Split, fit: &Fit) -> f64 {
        self.swing_balance(split, fit).map_or(1.0, |(_, f)| f)
    }

    /// [`swung`] for a split of two groups with a swing lane.
    fn swing_balance(&self, split: &Split, fit: &Fit) -> Option<(u64, f64)> {
        let (Some(s), [g0, g1]) = (split.swing, split.groups.as_slice()) else { return None };
        let a = self.on(0, self.of(g0.iter().copied()), fit.gen_cost, fit.worker_scale);
        let b = self.on(1, self.of(g1.iter().copied()), fit.gen_cost, fit.worker_scale);
        Some(swung(a, b, self.alone[s], self.alone[s] * fit.worker_scale / SCALE_ONE))
    }

    /// How a split of the lanes (bit i of `gen_side` set: lane i with the generator) treats the
    /// families, lane `except` left out: how many families it splits, and how many it keeps
    /// whole with the generator (see [`Costs::split_scaled`]).
    fn families(&self, gen_side: u32, except: Option<usize>) -> (u32, std::cmp::Reverse<u32>) {
        let n = self.own.len();
        let (mut split, mut with_gen) = (0, 0);
        for f in 0..FAMILIES {
            let mut sides = (0..n).filter(|&i| Some(i) != except && self.family[i] == Some(f)).map(|i| gen_side >> i & 1);
            if let Some(first) = sides.next() {
                if sides.any(|s| s != first) {
                    split += 1;
                } else if first == 1 {
                    with_gen += 1;
                }
            }
        }
        (split, std::cmp::Reverse(with_gen))
    }

    /// The best split into `groups` with, for two groups of up to 16 lanes, one lane left out
    /// of both to swing between the threads (see [`super::swing`]): every lane is tried as the
    /// swing lane, with every split of the others, and a split is charged the time at which the
    /// swing lane, replayed alone, evens the two threads out as far as its cost allows. Among
    /// splits within 1/NEAR_BEST of the best, the preference of [`Costs::split_scaled`]; a fixed
    /// split without a swing lane is kept only when it is clearly better.
    fn split_swing(&self, gen_cost: u64, worker_scale: u64, groups: usize) -> Split {
        let fixed = Split { groups: self.split_scaled(gen_cost, worker_scale, groups), swing: None };
        let n = self.own.len();
        if groups != 2 || !(2..=16).contains(&n) {
            return fixed;
        }
        let fit = Fit { gen_cost, worker_scale };
        let full = (1u32 << n) - 1;
        let each = |visit: &mut dyn FnMut(u64, usize, u32)| {
            for s in 0..n {
                let others = full & !(1 << s);
                let (c0, c1) = (self.alone[s], self.alone[s] * worker_scale / SCALE_ONE);
                let mut m = others;
                loop {
                    visit(
                        swung(gen_cost + self.of_mask(m), self.of_mask(others & !m) * worker_scale / SCALE_ONE, c0, c1).0,
                        s,
                        m,
                    );
                    if m == 0 {
                        break;
                    }
                    m = (m - 1) & others;
                }
            }
        };
        let mut least = u64::MAX;
        each(&mut |t, _, _| least = least.min(t));
        // (families, modelled time, swing lane, lanes with the generator), least first.
        type Key = ((u32, std::cmp::Reverse<u32>), u64, usize, u32);
        let mut best: Option<Key> = None;
        each(&mut |t, s, m| {
            if t <= least + least / NEAR_BEST {
                let key = (self.families(m, Some(s)), t, s, m);
                if best.as_ref().is_none_or(|b| key < *b) {
                    best = Some(key);
                }
            }
        });
        match best {
            Some((_, t, s, m)) if self.load(&fixed, &fit) + least / NEAR_BEST >= t => {
                let side = |set: bool| (0..n).filter(|&i| i != s && (m >> i & 1 == 1) == set).collect();
                Split { groups: vec![side(true), side(false)], swing: Some(s) }
            }
            _ => fixed,
        }
    }

    /// The cost on thread `g` of lanes that cost `lanes` on one thread alone.
    fn on(&self, g: usize, lanes: u64, gen_cost: u64, worker_scale: u64) -> u64 {
        if g == 0 {
            gen_cost + lanes
        } else {
            lanes * worker_scale / SCALE_ONE
        }
    }

    /// [`Costs::split`] with the lanes of every group but the first costing `worker_scale /
    /// SCALE_ONE` times their calibrated cost (see [`Fit`]).
    fn split_scaled(&self, gen_cost: u64, worker_scale: u64, groups: usize) -> Vec<Vec<usize>> {
        let n = self.own.len();
        let groups = groups.max(1);
        if groups == 2 && n <= 16 {
            let members = |mask: u32, set: bool| (0..n).filter(move |&i| (mask >> i & 1 == 1) == set);
            let full = (1u32 << n) - 1;
            let load = |m: u32| {
                self.on(0, self.of_mask(m), gen_cost, worker_scale).max(self.on(
                    1,
                    self.of_mask(full & !m),
                    gen_cost,
                    worker_scale,
                ))
            };
            let least = (0..1u32 << n).map(load).min().unwrap_or(0);
            // Among the splits within the model's precision of the best, the one that splits
            // the fewest families and keeps the most whole with the generator, whose thread has
            // the chunk in its cache. With the report's lanes at 90%, the model's best split left
            // the plain lanes with four alpha lanes on the worker; the plain lanes and one alpha
            // lane with the generator took 7% less time (alternating runs, medians of 9).
            let best = (0..1u32 << n)
                .filter(|&m| load(m) <= least + least / NEAR_BEST)
                .min_by_key(|&m| (self.families(m, None), load(m), m))
                .unwrap_or(0);
            return vec![members(best, true).collect(), members(best, false).collect()];
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(self.own[i]), i));
        let mut out = vec![Vec::new(); groups];
        for i in order {
            let after = |g: usize| self.on(g, self.of(out[g].iter().copied().chain([i])), gen_cost, worker_scale);
            let g = (0..groups).min_by_key(|&g| (after(g), g)).expect("at least one group");
            out[g].push(i);
        }
        for g in &mut out {
            g.sort_unstable();
        }
        out
    }
}

/// The time per chunk of two threads whose fixed work costs `a` and `b` per chunk and who share
/// a swing lane costing `c0` on the first and `c1` on the second, and the share of chunks it
/// replays on the first: it goes where it evens the two out, as far as its cost allows.
fn swung(a: u64, b: u64, c0: u64, c1: u64) -> (u64, f64) {
    if a + c0 <= b {
        (b, 1.0)
    } else if b + c1 <= a {
        (a, 0.0)
    } else {
        // a + f·c0 = b + (1 − f)·c1
        ((a * c1 + b * c0 + c0 * c1) / (c0 + c1), (b + c1 - a) as f64 / (c0 + c1) as f64)
    }
}

/// Where a parallel segment's lanes replay: group g on thread g (group 0 with the generator)
/// and, with two threads, possibly a lane in neither group that swings between them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Split {
    groups: Vec<Vec<usize>>,
    swing: Option<usize>,
}

/// What one parallel segment measured.
#[derive(Debug)]
struct Segment {
    /// Per group, the median time per chunk its thread spent on the group (group 0: also
    /// generating and handing over), not waiting and not on the swing lane.
    ns: Vec<u64>,
    /// Chunks replayed.
    chunks: usize,
    /// Of them, the chunks the swing lane replayed on the generating thread.
    swing_on_generator: usize,
    /// Times the swing lane changed threads.
    moves: usize,
}

/// Generates up to `chunks` more chunks of the path on this thread and replays them through
/// `lanes` placed by `split`: this thread replays group 0 after generating each chunk, one worker
/// thread per other group replays the same chunk (shared read-only through an `Arc`), and the
/// swing lane, if any, starts on side `start` and moves between this thread and the first worker
/// by `rule` (see [`super::swing`]). Each lane sees the same chunks in the same order as on one
/// thread, so every result is the same bit for bit.
#[allow(clippy::too_many_arguments)]
fn replay_parallel(
    gen: &mut Generator<'_>,
    lanes: &mut [Lane],
    split: &Split,
    ctl: &Control,
    fast: bool,
    chunks: usize,
    start: Side,
    rule: Rule,
) -> Segment {
    assert!(split.swing.is_none() || split.groups.len() == 2, "a swing lane needs exactly two groups: {split:?}");
    let mut refs: Vec<Option<&mut Lane>> = lanes.iter_mut().map(Some).collect();
    let swing = split.swing;
    let home: Option<&mut Lane> = swing.map(|s| refs[s].take().expect("the swing lane is in no group"));
    let traveller: Option<Lane> = home.as_deref().cloned();
    let (mut on_gen, on_worker) = if start == Side::Worker { (None, traveller) } else { (traveller, None) };
    let mut groups = split
        .groups
        .iter()
        .map(|g| -> Vec<&mut Lane> { g.iter().map(|&i| refs[i].take().expect("each lane in one group")).collect() });
    let mut mine = groups.next().unwrap_or_default();
    let theirs: Vec<Vec<&mut Lane>> = groups.collect();
    let handover: Handover<Lane> = Handover::new(rule);
    // Chunks in flight and the last ones replayed, oldest first, with their index in the
    // segment; one whose workers are all done is reused. The swing lane catches up from here.
    let mut pool: std::collections::VecDeque<(usize, Arc<Path>)> = std::collections::VecDeque::new();
    let mut none = Vec::new();
    let mut k = 0;
    let mut swing_on_generator = 0;
    let (measured, from_worker) = std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        let mut on_worker = on_worker;
        for (w, mut group) in theirs.into_iter().enumerate() {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<Path>>(QUEUED_CHUNKS);
            senders.push(tx);
            let swings = swing.is_some() && w == 0;
            let mut lane = if swings { on_worker.take() } else { None };
            let handover = &handover;
            workers.push(s.spawn(move || {
                let mut none = Vec::new();
                let mut ns = Vec::with_capacity(chunks);
                // The worker's own copies of its lanes, allocated on this thread: replaying the
                // lanes in place shared cache lines with the generating thread's lanes (the
                // `Lane`s lie side by side in one `Vec`): two threads were 1.42x one thread
                // that way, 1.65x with the copies. They go back in place at the end.
                let mut own: Vec<Lane> = group.iter().map(|l| (**l).clone()).collect();
                let mut pending: Option<Travelling<Lane>> = None;
                let mut seen = 0;
                for chunk in rx {
                    if swings && lane.is_none() {
                        pending = pending.or_else(|| handover.take(Side::Worker));
                        // It was handed over after the generating thread replayed the chunk before.
                        if pending.as_ref().is_some_and(|(_, next)| *next == seen) {
                            lane = pending.take().map(|(l, _)| l);
                        }
                    }
                    let t0 = Instant::now();
                    replay_group(own.iter_mut(), &chunk, &mut none);
                    ns.push(t0.elapsed().as_nanos() as u64);
                    seen += 1;
                    if swings {
                        if let Some(l) = lane.as_mut() {
                            l.replay(&chunk, &mut none);
                        }
                        handover.done_one();
                        match lane.take() {
                            Some(l) => lane = handover.offer(Side::Worker, l, seen),
                            None if pending.is_none() => handover.maybe_ask(Side::Worker),
                            None => {}
                        }
                    }
                }
                for (l, o) in group.iter_mut().zip(own) {
                    **l = o;
                }
                (median_u64(&mut ns), lane.map(|l| (l, seen)).or(pending))
            }));
        }
        let mut ns = Vec::with_capacity(chunks);
        'gen: while !gen.finished && k < chunks {
            let t0 = Instant::now();
            // Time on other work than this thread's group: waiting for a worker, the swing lane.
            let mut off = std::time::Duration::ZERO;
            // Take the lane before a chunk is reused below: its catching up may need it.
            if swing.is_some() && on_gen.is_none() {
                if let Some((mut l, next)) = handover.take(Side::Generator) {
                    let s0 = Instant::now();
                    swing_on_generator += catch_up(&mut l, &pool, next, k, &mut none);
                    off += s0.elapsed();
                    on_gen = Some(l);
                }
            }
            let reuse = if pool.len() >= POOL_CHUNKS { pool.pop_front() } else { None };
            let mut chunk = match reuse {
                Some((i, mut c)) => {
                    if Arc::get_mut(&mut c).is_some() {
                        c
                    } else {
                        pool.push_front((i, c));
                        Arc::new(Path::default())
                    }
                }
                None => Arc::new(Path::default()),
            };
            next_chunk(gen, Arc::get_mut(&mut chunk).expect("not shared"), ctl, fast);
            for tx in &senders {
                let c = Arc::clone(&chunk);
                let c = match tx.try_send(c) {
                    Ok(()) => continue,
                    Err(std::sync::mpsc::TrySendError::Full(c)) => c,
                    Err(std::sync::mpsc::TrySendError::Disconnected(_)) => break 'gen, // a worker panicked: joined below
                };
                let w0 = Instant::now();
                if tx.send(c).is_err() {
                    break 'gen;
                }
                off += w0.elapsed();
            }
            if swing.is_some() {
                handover.sent_one();
            }
            replay_group(mine.iter_mut().map(|l| &mut **l), &chunk, &mut none);
            if let Some(l) = on_gen.as_mut() {
                let s0 = Instant::now();
                l.replay(&chunk, &mut none);
                off += s0.elapsed();
                swing_on_generator += 1;
            }
            pool.push_back((k, chunk));
            k += 1;
            if swing.is_some() {
                match on_gen.take() {
                    Some(l) => on_gen = handover.offer(Side::Generator, l, k),
                    None => handover.maybe_ask(Side::Generator),
                }
            }
            ns.push(t0.elapsed().saturating_sub(off).as_nanos() as u64);
        }
        drop(senders);
        let mut measured = vec![median_u64(&mut ns)];
        let mut from_worker = None;
        for w in workers {
            let (m, lane) = w.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            measured.push(m);
            from_worker = from_worker.or(lane);
        }
        (measured, from_worker)
    });
    // The swing lane is on this thread, came back from the worker, or is still in transit; it
    // replays what it has not yet replayed and goes back in place.
    let moves = handover.moves();
    let last = on_gen.map(|l| (l, k)).or(from_worker).or_else(|| handover.into_travelling());
    if let (Some(home), Some((mut l, next))) = (home, last) {
        swing_on_generator += catch_up(&mut l, &pool, next, k, &mut none);
        *home = l;
    }
    Segment { ns: measured, chunks: k, swing_on_generator, moves }
}

/// Replays `lane` over the chunks of `pool` with index `from..to` (all of them must be there)
/// and returns how many it replayed.
fn catch_up(
    lane: &mut Lane,
    pool: &std::collections::VecDeque<(usize, Arc<Path>)>,
    from: usize,
    to: usize,
    none: &mut Vec<u32>,
) -> usize {
    if from >= to {
        return 0;
    }
    let first = pool.iter().position(|(i, _)| *i == from);
    let first = first.unwrap_or_else(|| panic!("the swing lane needs chunk {from}, which is no longer held (a bug)"));
    for (i, (at, chunk)) in pool.iter().skip(first).take(to - from).enumerate() {
        assert_eq!(*at, from + i, "the held chunks are in order");
        lane.replay(chunk, none);
    }
    to - from
}

fn finish(cfg: &SimConfig, ctl: &Control, gen: &Generator<'_>, lanes: &[Lane]) -> RunResult {
    ctl.progress.store(gen.packets_in, Ordering::Relaxed);
    let ctl_packets = gen.packets_in;
    let qlen = gen.qlen();
    let checkpoints = gen
        .checks
        .iter()
        .enumerate()
        .map(|(k, &(t, pin, q))| Checkpoint {
            time_tu: t,
            packets_in: pin,
            rows: lanes
                .iter()
                .filter_map(|l| {
                    let (out, lens, all) = l.stats.checks.get(k)?.clone();
                    Some((listing_alpha(&l.strategy), q, out, lens, all))
                })
                .collect(),
            row_packets_in: Vec::new(),
        })
        .collect();
    RunResult {
        traffic_pct: cfg.traffic,
        seed: cfg.seed,
        packets_in: ctl_packets,
        sim_time_tu: gen.now,
        qlen_pkts: qlen,
        qlen_ci95_pkts: ci95(&gen.qbatches),
        qlen_batch_means: gen.qbatches.clone(),
        strategies: lanes
            .iter()
            .map(|l| {
                let mut s = l.result(qlen, &gen.lone);
                fill_path_fields(&mut s, cfg.traffic, ctl_packets, gen.now, ci95(&gen.qbatches));
                s
            })
            .collect(),
        checkpoints,
        interrupted: gen.interrupted,
        closed_apps: match cfg.arrivals {
            Arrivals::Closed { apps } => Some(apps),
            _ => None,
        },
        apps: gen.apps,
        in_order: cfg.in_order,
        workload: cfg.dist.workload.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{parse_strategy, report_defaults, AlphaClass, LengthDist, Service, TraceArrival};

    /// The general generator, lean lanes allowed.
    const GENERAL_GEN: Shortcuts = Shortcuts { fast_gen: false, lean: true };

    /// Equal, numbers to 1e-12 relative: the two generators add a service time to the clock in a
    /// different order, so latencies can differ in the last bit.
    fn same(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!((x - y).abs() <= 1e-12 * x.abs().max(y.abs()), "{at}: {x} vs {y}");
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len(), "{at}");
                x.iter().zip(y).enumerate().for_each(|(i, (x, y))| same(x, y, &format!("{at}[{i}]")));
            }
            (Value::Object(x), Value::Object(y)) => {
                assert_eq!(x.len(), y.len(), "{at}");
                x.iter().for_each(|(k, v)| same(v, &y[k], &format!("{at}.{k}")));
            }
            _ => assert_eq!(a, b, "{at}"),
        }
    }

    /// The fast generator, whose lone messages bypass the policies, gives exactly the results of
    /// the general generator, at loads where few or most messages are alone; with tracking α,
    /// §11 ordering and α = 0 too.
    #[test]
    fn fast_path_with_lone_messages_equals_the_general_path() {
        let mut strategies = report_defaults();
        strategies.push(Strategy::Track { low: 1.0, high: 100.0, gain: 1.0 });
        strategies.push(parse_strategy("0").unwrap());
        for (traffic, seed) in [(0.5, 1), (30.0, 2), (70.0, 3), (96.0, 4)] {
            for in_order in [false, true] {
                let cfg = SimConfig { strategies: strategies.clone(), in_order, ..SimConfig::report(traffic, 150_000, seed) };
                let ctl = Control::default();
                let max_len = cfg.dist.max_len();
                let fast = serde_json::to_value(run_open(&cfg, &ctl, max_len, Shortcuts::ALL, 1)).unwrap();
                let general = serde_json::to_value(run_open(&cfg, &ctl, max_len, GENERAL_GEN, 1)).unwrap();
                same(&fast, &general, &format!("traffic {traffic}%, in order {in_order}"));
            }
        }
    }

    /// The configurations the speed work diffs for bit-identity: the report's model with report
    /// times; §10 classes, §11 order, tracking, prio and applications; a custom distribution with
    /// the general generator; a trace; a closed loop.
    fn configs() -> Vec<(&'static str, SimConfig)> {
        let mut strategies = report_defaults();
        strategies.push(Strategy::Track { low: 1.0, high: 100.0, gain: 1.0 });
        let mixed: Vec<Strategy> =
            ["RR'", "FIFO", "10", "track:1:100", "prio", "SF"].iter().map(|s| parse_strategy(s).unwrap()).collect();
        let trace: Vec<TraceArrival> = (0..60_000)
            .map(|i| TraceArrival { time: f64::from(i) * 5.3, len: 1 + (i * 7 % 11) as u32, app: (i % 3) as u32 })
            .collect();
        vec![
            ("report 95% with report times", SimConfig { checkpoints: true, strategies, ..SimConfig::report(95.0, 400_000, 1) }),
            ("report 50%", SimConfig::report(50.0, 300_000, 2)),
            (
                "apps, in order, msg-alpha, prio, tracking",
                SimConfig {
                    strategies: mixed.clone(),
                    apps: 4,
                    in_order: true,
                    msg_alpha: vec![AlphaClass { alpha: 1.0, frac: 0.5 }, AlphaClass { alpha: 100.0, frac: 0.5 }],
                    ..SimConfig::report(60.0, 300_000, 3)
                },
            ),
            (
                "custom distribution",
                SimConfig {
                    dist: LengthDist::new(&[(1, 3, 50.0), (8, 12, 40.0), (30, 30, 10.0)]).unwrap(),
                    ..SimConfig::report(90.0, 300_000, 4)
                },
            ),
            ("trace", SimConfig { arrivals: Arrivals::Trace(Arc::new(trace)), apps: 3, ..SimConfig::report(90.0, 1, 5) }),
            ("closed loop", SimConfig { arrivals: Arrivals::Closed { apps: 8 }, ..SimConfig::report(80.0, 100_000, 6) }),
        ]
    }

    /// Replaying the lanes on several threads gives the same results, bit for bit, as one thread.
    #[test]
    fn every_thread_count_gives_bit_identical_results() {
        for (name, cfg) in configs() {
            let ctl = Control::default();
            let one = serde_json::to_string(&run_threads(&cfg, &ctl, 1)).unwrap();
            for threads in [2, 3, 5, 13, 64] {
                let many = serde_json::to_string(&run_threads(&cfg, &ctl, threads)).unwrap();
                assert!(one == many, "{name}: {threads} threads differ from one");
            }
        }
        // The general generator too (what non-Poisson or multi-application runs use).
        let cfg = SimConfig::report(95.0, 300_000, 7);
        let ctl = Control::default();
        let max_len = cfg.dist.max_len();
        let one = serde_json::to_string(&run_open(&cfg, &ctl, max_len, GENERAL_GEN, 1)).unwrap();
        let two = serde_json::to_string(&run_open(&cfg, &ctl, max_len, GENERAL_GEN, 2)).unwrap();
        assert!(one == two, "general generator: 2 threads differ from one");
    }

    /// Lean alpha lanes and plain FIFO/RR lanes give the same results, bit for bit, as the
    /// policies carrying whole messages, with either generator, in open and closed loops, on one
    /// thread and two.
    #[test]
    fn lean_alpha_lanes_give_bit_identical_results() {
        let mut all = configs();
        all.push(("report 99% exponential service", SimConfig { service: Service::Exp, ..SimConfig::report(99.0, 300_000, 8) }));
        all.push((
            "report 90% deterministic service",
            SimConfig { service: Service::Det, ..SimConfig::report(90.0, 300_000, 12) },
        ));
        all.push((
            "eight lengths",
            SimConfig { dist: LengthDist::new(&[(1, 7, 90.0), (40, 40, 10.0)]).unwrap(), ..SimConfig::report(93.0, 300_000, 9) },
        ));
        // The report's ten alpha lanes are lean; RR', RR and FIFO are not; §10 classes turn it off.
        let report = SimConfig::report(95.0, 1000, 1);
        let lean = |cfg: &SimConfig| {
            let lens = lengths(cfg);
            cfg.strategies.iter().filter(|s| Lane::new(s, cfg, cfg.dist.max_len(), &lens, true).is_lean()).count()
        };
        assert_eq!(lean(&report), 10);
        assert_eq!(lean(&SimConfig { msg_alpha: vec![AlphaClass { alpha: 1.0, frac: 1.0 }], ..report.clone() }), 0);
        // RR', RR and FIFO replay through plain policies (arrival time and length only), unless
        // per-class or per-application statistics are kept.
        let plain = |cfg: &SimConfig| {
            let lens = lengths(cfg);
            cfg.strategies.iter().filter(|s| Lane::new(s, cfg, cfg.dist.max_len(), &lens, true).is_plain()).count()
        };
        assert_eq!(plain(&report), 3);
        assert_eq!(plain(&SimConfig { apps: 2, ..report.clone() }), 0);
        for (name, cfg) in all {
            let ctl = Control::default();
            for fast_gen in [true, false] {
                let reference = run_with(&cfg, &ctl, 1, Shortcuts { fast_gen, lean: false });
                let reference = serde_json::to_string(&reference).unwrap();
                for threads in [1, 2] {
                    let lean = serde_json::to_string(&run_with(&cfg, &ctl, threads, Shortcuts { fast_gen, lean: true })).unwrap();
                    assert!(reference == lean, "{name}: fast generator {fast_gen}, {threads} threads");
                }
            }
        }
    }

    /// Lanes that move between threads from one parallel segment to the next (as the corrected
    /// split does) give the same results, bit for bit, as one thread.
    #[test]
    fn lanes_moving_between_segments_give_bit_identical_results() {
        // Eight segments of seven chunks each.
        let cfg = SimConfig::report(95.0, (CHUNK * 7 * 8) as u64, 11);
        let ctl = Control::default();
        let one = serde_json::to_string(&run_threads(&cfg, &ctl, 1)).unwrap();
        let lens = lengths(&cfg);
        let mut lanes: Vec<Lane> = cfg.strategies.iter().map(|s| Lane::new(s, &cfg, cfg.dist.max_len(), &lens, true)).collect();
        let mut gen = Generator::new(&cfg);
        let n = lanes.len();
        let fixed = |groups: Vec<Vec<usize>>| Split { groups, swing: None };
        let splits = [
            fixed(vec![(0..n / 2).collect::<Vec<_>>(), (n / 2..n).collect()]),
            fixed(vec![(0..n).filter(|i| i % 2 == 0).collect(), (0..n).filter(|i| i % 2 == 1).collect()]),
            fixed(vec![vec![0], (1..n).collect(), vec![]]),
            Split { groups: vec![(1..n / 2).collect(), (n / 2..n).collect()], swing: Some(0) },
        ];
        let mut k = 0;
        while !gen.finished {
            let split = &splits[k % splits.len()];
            let seg = replay_parallel(&mut gen, &mut lanes, split, &ctl, true, 7, Side::Worker, SWING_RULE);
            assert_eq!(seg.ns.len(), split.groups.len());
            k += 1;
        }
        assert!(k > 6, "the run took {k} segments");
        let moved = serde_json::to_string(&finish(&cfg, &ctl, &gen, &lanes)).unwrap();
        assert!(one == moved, "lanes moved between threads differ from one thread");
    }

    /// A swing lane that changes threads as often as it can, in both directions (the rule asks
    /// for it whatever the lag), and one that stays on the worker, give the same results, bit for
    /// bit, as one thread, whichever lane swings, wherever it starts, with a light or a heavy
    /// worker and segments of 1, 2 or 9 chunks (so that segments end with the lane on either
    /// thread, waiting on the worker for its chunk, or in the slot); the generating thread's
    /// catching up over held chunks is exercised on every move to it.
    #[test]
    fn a_swing_lane_moving_at_every_chunk_gives_bit_identical_results() {
        let always = Rule { generator_at: 0, worker_at: usize::MAX };
        // The generating thread never asks; the worker asks only at lag 0, and owns it already.
        let stay_on_worker = Rule { generator_at: usize::MAX, worker_at: 0 };
        let mut strategies = report_defaults();
        strategies.push(Strategy::Track { low: 1.0, high: 100.0, gain: 1.0 });
        let cfg = SimConfig { strategies, ..SimConfig::report(92.0, (CHUNK * 24) as u64, 13) };
        let ctl = Control::default();
        let one = serde_json::to_string(&run_threads(&cfg, &ctl, 1)).unwrap();
        let lens = lengths(&cfg);
        let n = cfg.strategies.len();
        let cases = [
            (0, Side::Generator, always, 4, 9),
            (5, Side::Worker, always, 4, 2),
            (3, Side::Generator, always, 1, 1),
            (n - 1, Side::Worker, always, 11, 2),
            (n - 1, Side::Worker, stay_on_worker, 4, 9),
        ];
        for (swing, start, rule, with_gen, segment) in cases {
            let mut lanes: Vec<Lane> =
                cfg.strategies.iter().map(|s| Lane::new(s, &cfg, cfg.dist.max_len(), &lens, true)).collect();
            let mut gen = Generator::new(&cfg);
            let others: Vec<usize> = (0..n).filter(|&i| i != swing).collect();
            let split = Split { groups: vec![others[..with_gen].to_vec(), others[with_gen..].to_vec()], swing: Some(swing) };
            let (mut moves, mut on_gen, mut chunks) = (0, 0, 0);
            while !gen.finished {
                let seg = replay_parallel(&mut gen, &mut lanes, &split, &ctl, true, segment, start, rule);
                (moves, on_gen, chunks) = (moves + seg.moves, on_gen + seg.swing_on_generator, chunks + seg.chunks);
            }
            let swung = serde_json::to_string(&finish(&cfg, &ctl, &gen, &lanes)).unwrap();
            let case = format!("swing lane {swing} from {start:?}, {with_gen} lanes with the generator, segments of {segment}");
            assert!(one == swung, "{case}: differs from one thread");
            if rule.generator_at == 0 && segment >= 9 {
                // A lane handed to the worker waits there for the chunk it needs next, up to a
                // queue's length behind the generating thread. (In shorter segments, which
                // start with the lane on the same side each time, moves depend on timing.)
                assert!(moves >= chunks / (QUEUED_CHUNKS + 2), "{case}: {moves} moves in {chunks} chunks");
                assert!(on_gen > 0 && on_gen < chunks, "{case}: {on_gen} of {chunks} chunks on the generating thread");
            } else if rule.generator_at == usize::MAX {
                assert_eq!((moves, on_gen), (0, 0), "{case}");
            }
        }
    }

    /// A run stopped part of the way through a segment while a swing lane moves at every chunk
    /// gives the same results, bit for bit, as one thread stopped before the same chunk.
    #[test]
    fn a_stopped_run_with_a_swing_lane_equals_one_thread_stopped_alike() {
        let cfg = SimConfig::report(95.0, (CHUNK * 40) as u64, 17);
        let lens = lengths(&cfg);
        let fresh =
            || -> Vec<Lane> { cfg.strategies.iter().map(|s| Lane::new(s, &cfg, cfg.dist.max_len(), &lens, true)).collect() };
        let stop_before = 10;
        let (ctl, mut lanes, mut gen, mut buf, mut none) =
            (Control::default(), fresh(), Generator::new(&cfg), Path::default(), Vec::new());
        let mut k = 0;
        while !gen.finished {
            if k == stop_before {
                ctl.stop.store(true, Ordering::Relaxed);
            }
            next_chunk(&mut gen, &mut buf, &ctl, true);
            replay_group(&mut lanes, &buf, &mut none);
            k += 1;
        }
        let one = serde_json::to_string(&finish(&cfg, &ctl, &gen, &lanes)).unwrap();
        let always = Rule { generator_at: 0, worker_at: usize::MAX };
        let n = cfg.strategies.len();
        let split = Split { groups: vec![(1..5).collect(), (5..n).collect()], swing: Some(0) };
        let (ctl, mut lanes, mut gen) = (Control::default(), fresh(), Generator::new(&cfg));
        let mut k = 0;
        while !gen.finished {
            if k == stop_before {
                ctl.stop.store(true, Ordering::Relaxed);
            }
            k += replay_parallel(&mut gen, &mut lanes, &split, &ctl, true, 5, Side::Worker, always).chunks;
        }
        let stopped = finish(&cfg, &ctl, &gen, &lanes);
        assert!(stopped.interrupted, "the run stopped early");
        assert!(one == serde_json::to_string(&stopped).unwrap(), "two threads with a swing lane differ from one, stopped alike");
    }

    /// The swing lane evens two threads out as far as its cost allows, and the split picks the
    /// lane and the groups that do it best.
    #[test]
    fn the_swing_lane_evens_out_the_threads() {
        assert_eq!(swung(100, 80, 40, 40), (110, 0.25));
        assert_eq!(swung(10, 80, 40, 40), (80, 1.0));
        assert_eq!(swung(200, 80, 40, 40), (200, 0.0));
        assert_eq!(swung(0, 0, 0, 0), (0, 1.0));
        // Five lanes of 30 and a generator of 20: fixed, the best is 20 + 60 against 90; a swing
        // lane of 30 evens them at (20 + 60 + 60 + 30) / 2 = 85.
        let costs = Costs::new(&[30; 5], &[None; 5], &[0, 0]);
        let fit = Fit { gen_cost: 20, worker_scale: SCALE_ONE };
        let fixed = Split { groups: costs.split_scaled(20, SCALE_ONE, 2), swing: None };
        assert_eq!(costs.load(&fixed, &fit), 90);
        let best = costs.split_swing(20, SCALE_ONE, 2);
        assert_eq!(best.groups.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2], "{best:?}");
        assert!(best.swing.is_some());
        assert_eq!(costs.load(&best, &fit), 85);
        // 80 + f·30 = 60 + (1 − f)·30: a sixth of the chunks with the generator.
        assert!((costs.swing_share(&best, &fit) - 1.0 / 6.0).abs() < 1e-9);
        // Three groups: no swing lane.
        assert_eq!(costs.split_swing(20, SCALE_ONE, 3).swing, None);
        // With families and a worker 1.5x as slow, against every split with every swing lane
        // modelled through `Costs::load` (lists, not the subset table): the pick is within the
        // model's precision of the best, and its groups and swing lane hold every lane once.
        let alone = [40, 40, 20, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25];
        let family: Vec<Option<usize>> = (0..13).map(|i| Some(if i < 3 { 1 } else { 0 })).collect();
        let costs = Costs::new(&alone, &family, &[160, 80]);
        let fit = Fit { gen_cost: 45, worker_scale: SCALE_ONE * 3 / 2 };
        let pick = costs.split_swing(fit.gen_cost, fit.worker_scale, 2);
        let mut all: Vec<usize> = pick.groups.iter().flatten().copied().chain(pick.swing).collect();
        all.sort_unstable();
        assert_eq!(all, (0..13).collect::<Vec<_>>(), "{pick:?}");
        let mut best = u64::MAX;
        for s in (0..13).map(Some).chain([None]) {
            for m in 0..1u32 << 13 {
                if s.is_some_and(|s| m >> s & 1 == 1) {
                    continue;
                }
                let side = |set: bool| (0..13).filter(|&i| Some(i) != s && (m >> i & 1 == 1) == set).collect();
                best = best.min(costs.load(&Split { groups: vec![side(true), side(false)], swing: s }, &fit));
            }
        }
        let got = costs.load(&pick, &fit);
        assert!(got <= best + best / NEAR_BEST, "picked {got} against the best {best}: {pick:?}");
    }

    /// The refitted model charges the generating thread what it measured beyond its lanes and
    /// scales the workers' lanes by what they measured against the calibration; a worker twice
    /// as slow as calibrated gets fewer lanes.
    #[test]
    fn the_fit_follows_the_measured_threads() {
        let alone = [10; 8];
        let costs = Costs::new(&alone, &[None; 8], &[0, 0]);
        let even = costs.split_scaled(0, SCALE_ONE, 2);
        assert_eq!(even.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4]);
        let fit = Fit { gen_cost: 0, worker_scale: SCALE_ONE };
        // Measured: the generating thread 40 + 20 of overhead, the worker 80 for lanes of 40.
        let f = fit.refit(&costs, &even, &[60, 80], 0);
        assert_eq!((f.gen_cost, f.worker_scale), (10, (SCALE_ONE + 2 * SCALE_ONE) / 2));
        let f = f.refit(&costs, &even, &[60, 80], 0);
        assert_eq!(f.worker_scale, (SCALE_ONE * 3 / 2 + 2 * SCALE_ONE) / 2);
        let g = costs.split_scaled(f.gen_cost, f.worker_scale, 2);
        assert!(g[0].len() > g[1].len(), "{g:?}");
        let fixed = |groups: Vec<Vec<usize>>| Split { groups, swing: None };
        assert!(costs.load(&fixed(g), &f) < costs.load(&fixed(even), &f));
    }

    /// The split puts every lane in exactly one group and balances the costs, with a family's
    /// shared part paid once per group that holds any of it.
    #[test]
    fn lanes_are_split_into_balanced_groups() {
        let alone = [5, 9, 1, 7, 3, 3, 8, 2, 6, 4, 10, 1, 5];
        let none = vec![None; alone.len()];
        let costs = Costs::new(&alone, &none, &[0, 0]);
        assert_eq!(costs.own, alone);
        for groups in 1..=14 {
            let g = costs.split(12, groups);
            assert_eq!(g.len(), groups);
            let mut all: Vec<usize> = g.iter().flatten().copied().collect();
            all.sort_unstable();
            assert_eq!(all, (0..alone.len()).collect::<Vec<_>>(), "{groups} groups");
            if groups == 2 {
                let (load0, load1) = (12 + costs.of(g[0].iter().copied()), costs.of(g[1].iter().copied()));
                assert!(load0.abs_diff(load1) <= 1, "{load0} vs {load1}");
            }
        }
        // Ten lanes of 25 that cost 160 together (each shares 10 of its 25) and three of 40, 40
        // and 20 that cost 80 together (each shares 10): the best split keeps the ten together.
        let alone = [40, 40, 20, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25];
        let family: Vec<Option<usize>> = (0..13).map(|i| Some(if i < 3 { 1 } else { 0 })).collect();
        let costs = Costs::new(&alone, &family, &[160, 80]);
        assert_eq!(costs.shared, [10, 10]);
        assert_eq!(costs.of(3..13), 160);
        assert_eq!(costs.of(0..3), 80);
        let g = costs.split(45, 2);
        let (load0, load1) = (45 + costs.of(g[0].iter().copied()), costs.of(g[1].iter().copied()));
        // The generator, the three and one of the ten against nine of the ten: 150 and 145.
        assert_eq!(g, vec![vec![0, 1, 2, 3], (4..13).collect::<Vec<_>>()]);
        assert_eq!((load0, load1), (150, 145));
        // Three groups: every lane placed once.
        let g = costs.split(45, 3);
        assert_eq!(g.iter().map(Vec::len).sum::<usize>(), 13);
    }
}
