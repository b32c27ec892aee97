//! Latency statistics: per-length accumulators with batch means, a lane's statistics, and the
//! result types of a run.

use schedlab_report::LogHist;
use serde::Serialize;

use super::Kind;
use super::Msg;
use schedlab_policy::{Alpha, AlphaStats};

/// Mean, confidence interval and percentiles of a latency population (time units), and of its
/// slowdown.
///
/// **Slowdown** is a message's completion time over its own service time: (latency + E[S]) /
/// (length × E[S]) with E[S] = 1 time unit, i.e. (latency + 1) / length. Latency ends when the
/// last packet *starts* (the report's definition); adding the last packet's mean service gives
/// the completion time in expectation (its service is drawn independently of when it starts).
/// It is the report's §12 effective packet period, and 1 for a message sent alone at once.
#[derive(Clone, Debug, Serialize)]
pub struct LatStats {
    /// Message length in packets (0 = all messages); for a size bucket, its largest length.
    pub len: u32,
    /// The size bucket these messages fall in, when the run keeps statistics per bucket
    /// (lengths are many: a named workload or more than [`MAX_LENGTH_COLUMNS`] lengths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Bucket>,
    pub count: u64,
    pub mean_tu: f64,
    /// Half-width of the 95% confidence interval of the mean, by batch means (NaN if too few batches).
    pub ci95_tu: f64,
    pub p50_tu: f64,
    pub p99_tu: f64,
    pub max_tu: f64,
    /// Mean slowdown, and its p50 and p99 (NaN, written null, where not kept: all messages
    /// together when statistics are per length).
    pub slowdown_mean: f64,
    pub slowdown_p50: f64,
    pub slowdown_p99: f64,
    /// Batch means in batch order, NaN for a batch with no message, aligned across strategies
    /// (what `stats` uses for paired differences, warm-up deletion and diagnostics).
    #[serde(skip)]
    pub batch_means: Vec<f64>,
}

/// Most distinct lengths kept one by one; with more (or a named workload) statistics are kept
/// per size bucket.
pub const MAX_LENGTH_COLUMNS: usize = 64;

/// Size-percentile edges of the buckets: deciles, then the top 1% and 0.1% apart (where a
/// heavy tail's long messages are). Edges that fall on the same length merge.
pub const BUCKET_EDGES: [f64; 12] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 0.999, 1.0];

/// One size bucket: lengths `low..=high`, holding the messages between the `pct_low` and
/// `pct_high` size percentiles (fractions of messages with a shorter length, and with one no
/// longer).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bucket {
    pub low: u32,
    pub high: u32,
    pub pct_low: f64,
    pub pct_high: f64,
}

/// How delivered messages are grouped: per length (index = length) or per size bucket.
#[derive(Clone, Debug, PartialEq)]
pub enum Keys {
    Lengths,
    Buckets(Vec<Bucket>),
}

impl Keys {
    /// The grouping a run of `cfg` uses: per length when there are at most
    /// [`MAX_LENGTH_COLUMNS`] lengths of at most 100,000 packets and no named workload, else
    /// buckets by size percentile.
    pub fn for_config(cfg: &super::SimConfig) -> Keys {
        match &cfg.arrivals {
            super::Arrivals::Trace(v) => {
                let mut l: Vec<u32> = v.iter().map(|a| a.len).collect();
                l.sort_unstable();
                let mut d = l.clone();
                d.dedup();
                if d.len() <= MAX_LENGTH_COLUMNS && d.last().is_some_and(|&m| m <= 100_000) {
                    return Keys::Lengths;
                }
                Keys::Buckets(empirical_buckets(&l))
            }
            _ => {
                let d = &cfg.dist;
                let few = d.support_upto(MAX_LENGTH_COLUMNS).is_some() && d.max_len() <= 100_000;
                if few && d.workload.is_none() {
                    return Keys::Lengths;
                }
                Keys::Buckets(buckets(|x| d.cdf(x), |p| d.quantile(p)))
            }
        }
    }

    /// Accumulators needed for lengths up to `max_len`.
    pub fn slots(&self, max_len: u32) -> usize {
        match self {
            Keys::Lengths => max_len as usize + 1,
            Keys::Buckets(b) => b.len(),
        }
    }
}

/// The bucket of a message of `len` packets: the first whose `high` reaches `len` (the last for
/// longer ones). The buckets are few and increasing, so the count of those below `len` is that
/// index; counted without a branch, since heavy-tailed lengths make a bisection's branches
/// unpredictable (a mispredicted branch or two per delivered message, per lane).
#[inline(always)]
fn bucket_of(b: &[Bucket], len: u32) -> usize {
    let below: usize = b.iter().map(|x| usize::from(x.high < len)).sum();
    below.min(b.len() - 1)
}

/// Buckets of a sample of lengths (sorted, not empty) by its own size percentiles at
/// [`BUCKET_EDGES`]: the rule a `--trace` run of the simulator uses, and `predict` for the
/// messages it compares.
pub fn empirical_buckets(sorted: &[u32]) -> Vec<Bucket> {
    if sorted.is_empty() {
        return Vec::new();
    }
    let n = sorted.len() as f64;
    let cdf = |x: u32| sorted.partition_point(|&y| y <= x) as f64 / n;
    let q = |p: f64| sorted[((p * n).ceil() as usize).clamp(1, sorted.len()) - 1];
    buckets(cdf, q)
}

/// Buckets from a CDF and its quantile function.
fn buckets(cdf: impl Fn(u32) -> f64, quantile: impl Fn(f64) -> u32) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::new();
    let mut low = quantile(0.0).max(1);
    for &e in &BUCKET_EDGES {
        let high = quantile(e);
        if high < low {
            // This edge falls on a length an earlier bucket holds (an atom spanning several
            // edges): the edges share that bucket.
            continue;
        }
        out.push(Bucket { low, high, pct_low: cdf(low - 1), pct_high: cdf(high) });
        low = high + 1;
    }
    out
}

/// Results of one strategy.
#[derive(Clone, Debug, Serialize)]
pub struct StrategyResult {
    pub label: String,
    pub listing_alpha: f64,
    /// Per message length present, in length order.
    pub by_len: Vec<LatStats>,
    /// All messages together (`avlat`).
    pub overall: LatStats,
    /// Per §10 α class (empty unless `--msg-alpha`).
    pub by_class: Vec<LatStats>,
    /// Messages delivered after a later message of the same application (overtaken: §11).
    pub reordered: u64,
    pub packets_out: u64,
    pub qlen_pkts: f64,
    /// §12 effective packet period (latency + 1) / length: min and max over lengths.
    pub period_min: f64,
    pub period_max: f64,
    /// Renormalisations of the alpha clock (0 for other strategies).
    pub clock_renormalisations: u64,
    /// Per (§10 class, length): latency (empty unless `--msg-alpha`).
    pub by_class_len: Vec<ClassLen>,
    /// §13: the α a tracking strategy (`track:`) chose; `None` for the others.
    pub alpha_chosen: Option<AlphaChosen>,
    /// §11 in-order delivery applies to this strategy (the alpha family, with `--in-order`).
    pub in_order_applies: bool,
    /// This strategy's sample path: packets in, simulated time and qlen's 95% half-width (the
    /// run's own in open loop; each strategy's own in closed loop).
    pub packets_in: u64,
    pub sim_time_tu: f64,
    pub qlen_ci95_pkts: f64,
    /// Offered load, a fraction of the outlet's capacity: traffic / 100 (closed loop: the load
    /// with zero queueing delay, N x E[length] / mean think time).
    pub offered_load: f64,
    /// Carried load: packets sent / simulated time.
    pub carried_load: f64,
}

/// One `>>` block of the listing: cumulative state at a report time.
#[derive(Clone, Debug, Serialize)]
pub struct Checkpoint {
    pub time_tu: f64,
    pub packets_in: u64,
    /// Per strategy: (listing α, qlen, packets out, per-length mean latencies in length order, avlat).
    pub rows: Vec<(f64, f64, u64, Vec<f64>, f64)>,
    /// Closed loop: packets in of each row's own sample path (empty: `packets_in` for all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub row_packets_in: Vec<u64>,
}

/// Results of one run (one traffic level).
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub traffic_pct: f64,
    pub seed: u64,
    pub packets_in: u64,
    pub sim_time_tu: f64,
    pub qlen_pkts: f64,
    /// Half-width of the 95% confidence interval of `qlen_pkts` (batch means).
    pub qlen_ci95_pkts: f64,
    /// The per-batch mean queue lengths behind `qlen_ci95_pkts` (used by `stats`).
    #[serde(skip)]
    pub qlen_batch_means: Vec<f64>,
    pub strategies: Vec<StrategyResult>,
    pub checkpoints: Vec<Checkpoint>,
    /// True when the run was stopped early (Ctrl-C); statistics cover what ran.
    pub interrupted: bool,
    /// Closed loop (§2): the number of applications (then `sim_time_tu`, `qlen_pkts` and
    /// `qlen_ci95_pkts` are per strategy, and NaN here).
    pub closed_apps: Option<u32>,
    /// Applications messages are spread over.
    pub apps: u32,
    /// §11 in-order delivery was asked for.
    pub in_order: bool,
    /// The named workload the lengths came from (`--workload`): name, reading, bytes per
    /// packet, checksum, source and commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<schedlab_report::results::workload::Workload>,
}

/// Latency accumulator for one message length (or one class) of one strategy.
///
/// Batch means are taken from snapshots of (count, sum) at batch boundaries, so recording a
/// message touches only the count, the sum and the histogram.
#[derive(Clone, Debug)]
pub(super) struct Acc {
    pub(super) sum: f64,
    hist: LogHist,
    /// Lone messages added to `sum` and the count only: their latencies are in the generator's
    /// histogram of lone messages, which every lane that bypasses them shares (see
    /// [`LaneStats::delivered_lone`]).
    lone: u64,
    snap_n: u64,
    snap_sum: f64,
    bmeans: Vec<f64>,
    /// Every batch's mean, NaN when it had no message (aligned across strategies).
    aligned: Vec<f64>,
    /// Slowdowns, kept only per size bucket (per length they follow from the latencies).
    sd_sum: f64,
    sd_hist: LogHist,
}

impl Acc {
    pub(super) fn new() -> Self {
        Acc {
            sum: 0.0,
            hist: LogHist::new(),
            lone: 0,
            snap_n: 0,
            snap_sum: 0.0,
            bmeans: Vec::new(),
            aligned: Vec::new(),
            sd_sum: 0.0,
            sd_hist: LogHist::new(),
        }
    }
    /// Messages recorded (the histogram counts them: a sum over its buckets, so callers take it
    /// once, at batch boundaries and in reports).
    pub(super) fn n(&self) -> u64 {
        self.hist.len() + self.lone
    }
    #[inline(always)]
    fn add(&mut self, lat: f64) {
        self.sum += lat;
        self.hist.record(lat);
    }
    /// A latency and the slowdown of its message of `len` packets (size buckets).
    #[inline(always)]
    fn add_sized(&mut self, lat: f64, len: u32) {
        self.add(lat);
        let sd = (lat + 1.0) / f64::from(len);
        self.sd_sum += sd;
        self.sd_hist.record(sd);
    }
    /// A lone message's latency, whose histogram entry is the shared one's.
    #[inline(always)]
    fn add_lone(&mut self, lat: f64) {
        self.sum += lat;
        self.lone += 1;
    }
    /// (count, sum) since the last batch boundary.
    fn delta(&self) -> (u64, f64) {
        (self.n() - self.snap_n, self.sum - self.snap_sum)
    }
    fn close_batch(&mut self) {
        let (dn, ds) = self.delta();
        if dn > 0 {
            self.bmeans.push(ds / dn as f64);
        }
        self.aligned.push(if dn > 0 { ds / dn as f64 } else { f64::NAN });
        self.snap_n += dn;
        self.snap_sum = self.sum;
    }
    pub(super) fn mean(&self) -> f64 {
        match self.n() {
            0 => 0.0,
            n => self.sum / n as f64,
        }
    }
    pub(super) fn stats(&self, len: u32) -> LatStats {
        self.stats_with(len, None)
    }
    /// [`Acc::stats`] with the shared histogram of the lone messages this accumulator counted.
    pub(super) fn stats_with(&self, len: u32, lone: Option<&LogHist>) -> LatStats {
        let merged;
        let hist = match lone {
            Some(l) if self.lone > 0 => {
                let mut m = self.hist.clone();
                m.merge(l);
                merged = m;
                &merged
            }
            _ => &self.hist,
        };
        debug_assert_eq!(hist.len(), self.n(), "every lone message counted is in the shared histogram");
        let n = self.n();
        // No message: no latency figure (NaN, written null), never a 0 that reads as measured.
        let none = |x: f64| if n == 0 { f64::NAN } else { x };
        let (p50, p99) = (none(hist.quantile(0.5)), none(hist.quantile(0.99)));
        // Slowdowns: kept (size buckets), else from the latencies of one length, else unknown.
        let (sd_mean, sd50, sd99) = if !self.sd_hist.is_empty() {
            (self.sd_sum / n as f64, self.sd_hist.quantile(0.5), self.sd_hist.quantile(0.99))
        } else if len > 0 && n > 0 {
            let k = f64::from(len);
            ((self.mean() + 1.0) / k, (p50 + 1.0) / k, (p99 + 1.0) / k)
        } else {
            (f64::NAN, f64::NAN, f64::NAN)
        };
        LatStats {
            len,
            bucket: None,
            count: n,
            mean_tu: none(self.mean()),
            ci95_tu: ci95(&self.bmeans),
            p50_tu: p50,
            p99_tu: p99,
            max_tu: none(hist.max()),
            slowdown_mean: sd_mean,
            slowdown_p50: sd50,
            slowdown_p99: sd99,
            batch_means: self.aligned.clone(),
        }
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (two-sided 95%): the table
/// for df ≤ 30, the Cornish–Fisher expansion around the normal quantile above (error < 2e-4 at
/// df = 31, smaller beyond; never the normal quantile itself, which would narrow an interval of
/// 32 batches by 4%). NaN for df = 0.
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
        2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    if df == 0 {
        return f64::NAN;
    }
    if df <= 30 {
        return T[df - 1];
    }
    let z: f64 = 1.959_963_984_540_054;
    let v = df as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * v)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v * v * v)
}

/// Half-width of the 95% confidence interval of the mean from batch means.
pub fn ci95(bmeans: &[f64]) -> f64 {
    let b = bmeans.len();
    if b < 2 {
        return f64::NAN;
    }
    let m = bmeans.iter().sum::<f64>() / b as f64;
    let var = bmeans.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (b - 1) as f64;
    t975(b - 1) * (var / b as f64).sqrt()
}

/// Statistics of one lane (one strategy).
#[derive(Clone)]
pub(super) struct LaneStats {
    /// Per length or per size bucket, as `keys` says.
    pub(super) by_len: Vec<Acc>,
    pub(super) keys: Keys,
    /// Per-class or per-application statistics are kept (`by_class` or `last_seq` non-empty).
    pub(super) extra: bool,
    /// Batch means of all messages together (the per-length accumulators hold the data).
    pub(super) overall_bmeans: Vec<f64>,
    pub(super) overall_aligned: Vec<f64>,
    pub(super) by_class: Vec<Acc>,
    /// Per (§10 class, length).
    pub(super) by_class_len: Vec<Vec<CellAcc>>,
    pub(super) last_seq: Vec<u32>,
    pub(super) seen: Vec<bool>,
    pub(super) reordered: u64,
    pub(super) packets_out: u64,
    /// §10: α per class, set only for the `prio` strategy.
    pub(super) class_alpha: Vec<Alpha>,
    /// Per checkpoint: (packets out, per-length means, overall mean).
    pub(super) checks: Vec<(u64, Vec<f64>, f64)>,
    /// Latencies (and lengths) of delivered messages not yet added to `by_len`: added in
    /// delivery order by [`LaneStats::flush`] at every event (a chunk ends with one), before any
    /// statistic is read.
    pub(super) pending: Vec<(f64, u32)>,
}

impl LaneStats {
    #[inline(always)]
    pub(super) fn delivered(&mut self, m: Msg, now: f64) {
        let lat = now - m.t;
        self.pending.push((lat, m.len));
        if self.extra {
            self.delivered_extra(m, lat);
        }
    }

    /// A message of `len` packets that arrived at `t` was delivered at `now`, in a lane that keeps
    /// no per-class or per-application statistics (what `delivered` does then).
    #[inline(always)]
    pub(super) fn delivered_plain(&mut self, t: f64, len: u32, now: f64) {
        debug_assert!(!self.extra);
        self.pending.push((now - t, len));
    }

    /// A lone message (every lane sends it alike, see `Kind::Alone`) of `len` packets that
    /// arrived at `t` was delivered at `now`, in a lane that keeps no per-class or
    /// per-application statistics. Its latency goes into the sum and the count here, in
    /// delivery order after the pending ones (so every sum is the same as when added at
    /// delivery); into the histogram it goes once for all lanes, by the generator.
    #[inline(always)]
    pub(super) fn delivered_lone(&mut self, t: f64, len: u32, now: f64) {
        debug_assert!(!self.extra);
        if let Keys::Buckets(_) = self.keys {
            // Per bucket each message's slowdown is recorded too: no shared histogram.
            self.pending.push((now - t, len));
            return;
        }
        if !self.pending.is_empty() {
            self.flush();
        }
        self.by_len[len as usize].add_lone(now - t);
    }

    /// Adds the pending latencies to the per-length accumulators, in delivery order (so every
    /// sum is the same as when added one by one at delivery). Recording them apart from the
    /// scheduling keeps each histogram update off the scheduler's chain of dependent loads.
    #[inline(never)]
    pub(super) fn flush(&mut self) {
        let LaneStats { by_len, pending, keys, .. } = self;
        match keys {
            Keys::Lengths => {
                for &(lat, len) in pending.iter() {
                    by_len[len as usize].add(lat);
                }
            }
            Keys::Buckets(b) => {
                for &(lat, len) in pending.iter() {
                    by_len[bucket_of(b, len)].add_sized(lat, len);
                }
            }
        }
        pending.clear();
    }

    /// Per-class latency (§10) and reordering counts (§11), when asked for.
    #[cold]
    fn delivered_extra(&mut self, m: Msg, lat: f64) {
        if let Some(c) = self.by_class.get_mut(m.class as usize) {
            c.add(lat);
            record_class_len(&mut self.by_class_len, m.class, m.len, lat);
        }
        if !self.last_seq.is_empty() {
            let a = m.app as usize;
            if self.seen[a] && m.seq < self.last_seq[a] {
                self.reordered += 1;
            } else {
                self.last_seq[a] = m.seq;
                self.seen[a] = true;
            }
        }
    }

    fn close_batch(&mut self) {
        let (dn, ds) = self.by_len.iter().map(Acc::delta).fold((0, 0.0), |(n, s), (a, b)| (n + a, s + b));
        if dn > 0 {
            self.overall_bmeans.push(ds / dn as f64);
        }
        self.overall_aligned.push(if dn > 0 { ds / dn as f64 } else { f64::NAN });
        for a in &mut self.by_len {
            a.close_batch();
        }
        for a in &mut self.by_class {
            a.close_batch();
        }
        self.by_class_len.iter_mut().flatten().for_each(CellAcc::close_batch);
    }

    /// All messages together: per-length accumulators merged (with the shared histograms of the
    /// lone messages, per length, when the lane counted them).
    pub(super) fn overall(&self, lone: Option<&[LogHist]>) -> Acc {
        let mut o = Acc::new();
        for (l, a) in self.by_len.iter().enumerate().filter(|(_, a)| a.n() > 0) {
            o.sum += a.sum;
            o.hist.merge(&a.hist);
            o.sd_sum += a.sd_sum;
            o.sd_hist.merge(&a.sd_hist);
            match (lone.and_then(|v| v.get(l)), a.lone > 0) {
                (Some(h), true) => o.hist.merge(h),
                _ => o.lone += a.lone,
            }
        }
        o.bmeans = self.overall_bmeans.clone();
        o.aligned = self.overall_aligned.clone();
        o
    }

    #[cold]
    pub(super) fn event(&mut self, kind: Kind) {
        self.flush();
        match kind {
            Kind::Batch => self.close_batch(),
            Kind::Check => self.check(),
            Kind::End => {}
            Kind::Arrive | Kind::Alone => unreachable!("arrivals are handled inline"),
        }
    }

    fn check(&mut self) {
        let lens = self.by_len.iter().filter(|a| a.n() > 0).map(Acc::mean).collect();
        let all = self.overall(None).mean();
        self.checks.push((self.packets_out, lens, all));
    }
}

// ---- §10 per-(class, length) cells, §13 chosen α, and result assembly (see `crate::questions`)

/// Latency accumulator of one (class, length) cell: count, sum and batch means.
#[derive(Clone, Debug, Default)]
pub(crate) struct CellAcc {
    n: u64,
    sum: f64,
    snap_n: u64,
    snap_sum: f64,
    bmeans: Vec<f64>,
}

impl CellAcc {
    pub(crate) fn add(&mut self, lat: f64) {
        self.n += 1;
        self.sum += lat;
    }
    pub(crate) fn close_batch(&mut self) {
        let dn = self.n - self.snap_n;
        if dn > 0 {
            self.bmeans.push((self.sum - self.snap_sum) / dn as f64);
        }
        self.snap_n = self.n;
        self.snap_sum = self.sum;
    }
}

/// Records `lat` in the cell of (`class`, `len`), growing the table as needed.
pub(crate) fn record_class_len(cells: &mut Vec<Vec<CellAcc>>, class: u32, len: u32, lat: f64) {
    let (c, l) = (class as usize, len as usize);
    if cells.len() <= c {
        cells.resize_with(c + 1, Vec::new);
    }
    if cells[c].len() <= l {
        cells[c].resize_with(l + 1, CellAcc::default);
    }
    cells[c][l].add(lat);
}

/// Mean latency of the messages of one §10 α class and one length.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ClassLen {
    /// Class index, in `--msg-alpha` order.
    pub class: u32,
    /// The class's α (used by the `prio` strategy only; other strategies ignore it).
    pub alpha: f64,
    pub len: u32,
    pub count: u64,
    pub mean_tu: f64,
    /// Half-width of the 95% confidence interval (batch means; NaN with too few batches).
    pub ci95_tu: f64,
}

/// The (class, length) cells that saw messages.
pub(crate) fn class_len_results(cells: &[Vec<CellAcc>], alphas: &[f64]) -> Vec<ClassLen> {
    let mut out = Vec::new();
    for (c, row) in cells.iter().enumerate() {
        for (l, a) in row.iter().enumerate().filter(|(_, a)| a.n > 0) {
            out.push(ClassLen {
                class: c as u32,
                alpha: alphas.get(c).copied().unwrap_or(f64::NAN),
                len: l as u32,
                count: a.n,
                mean_tu: a.sum / a.n as f64,
                ci95_tu: ci95(&a.bmeans),
            });
        }
    }
    out
}

/// The α a tracking strategy used, one sample per packet start (that is, over the busy time).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct AlphaChosen {
    pub samples: u64,
    pub mean: f64,
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
}

impl From<AlphaStats> for AlphaChosen {
    fn from(s: AlphaStats) -> Self {
        AlphaChosen { samples: s.samples, mean: s.mean, p10: s.p10, p50: s.p50, p90: s.p90, min: s.min, max: s.max }
    }
}

/// Sets a strategy's own sample-path fields: packets in, simulated time, qlen's interval, and
/// the offered (`traffic / 100`) and carried (packets sent / simulated time) load.
pub(crate) fn fill_path_fields(s: &mut StrategyResult, traffic_pct: f64, packets_in: u64, sim_time: f64, qci: f64) {
    s.packets_in = packets_in;
    s.sim_time_tu = sim_time;
    s.qlen_ci95_pkts = qci;
    s.offered_load = traffic_pct / 100.0;
    s.carried_load = if sim_time > 0.0 { s.packets_out as f64 / sim_time } else { 0.0 };
}

/// Merges the runs of a closed loop (one strategy each, each on its own sample path). The
/// run-level `sim_time_tu`, `qlen_pkts` and `qlen_ci95_pkts` have no single value then: they are
/// NaN (JSON `null`); each strategy carries its own. The listing's report times are the same in
/// every run, so the `>>` blocks are merged by index, each row with its own packets in.
pub(crate) fn merge_closed(runs: Vec<RunResult>) -> Option<RunResult> {
    let mut it = runs.into_iter();
    let mut m = it.next()?;
    let own_in = |r: &RunResult| r.checkpoints.iter().map(|c| vec![c.packets_in; c.rows.len()]).collect::<Vec<_>>();
    let mut row_in = own_in(&m);
    for r in it {
        for (k, c) in r.checkpoints.iter().enumerate() {
            if k < m.checkpoints.len() {
                m.checkpoints[k].rows.extend(c.rows.iter().cloned());
                row_in[k].extend(std::iter::repeat_n(c.packets_in, c.rows.len()));
            } else {
                m.checkpoints.push(c.clone());
                row_in.push(vec![c.packets_in; c.rows.len()]);
            }
        }
        m.strategies.extend(r.strategies);
        m.interrupted |= r.interrupted;
        m.packets_in = m.packets_in.max(r.packets_in);
    }
    for (c, v) in m.checkpoints.iter_mut().zip(row_in) {
        c.row_packets_in = v;
    }
    m.sim_time_tu = f64::NAN;
    m.qlen_pkts = f64::NAN;
    m.qlen_ci95_pkts = f64::NAN;
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane_stats(max_len: u32) -> LaneStats {
        LaneStats {
            by_len: (0..=max_len).map(|_| Acc::new()).collect(),
            keys: Keys::Lengths,
            extra: false,
            overall_bmeans: Vec::new(),
            overall_aligned: Vec::new(),
            by_class: Vec::new(),
            by_class_len: Vec::new(),
            last_seq: Vec::new(),
            seen: Vec::new(),
            reordered: 0,
            packets_out: 0,
            class_alpha: Vec::new(),
            checks: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// The branch-free bucket of a length is the bisection's: every length of the named
    /// workloads' buckets (and beyond the last), and a hand-made set with one-length buckets.
    #[test]
    fn bucket_of_counts_as_the_bisection_finds() {
        let by_bisection = |b: &[Bucket], len: u32| b.partition_point(|x| x.high < len).min(b.len() - 1);
        let mut sets: Vec<Vec<Bucket>> = ["w4", "w3", "pfabric-datamining"]
            .iter()
            .map(|w| {
                let d = crate::model::LengthDist::workload(w, None, None).unwrap();
                buckets(|x| d.cdf(x), |p| d.quantile(p))
            })
            .collect();
        let one = |low, high| Bucket { low, high, pct_low: 0.0, pct_high: 0.0 };
        sets.push(vec![one(1, 1), one(2, 2), one(3, 9), one(10, 10)]);
        for b in &sets {
            assert!(b.len() > 1);
            let top = b[b.len() - 1].high;
            for len in (0..=top.min(20_000) + 5).chain([top - 1, top, top + 1, u32::MAX]) {
                assert_eq!(bucket_of(b, len), by_bisection(b, len), "length {len} in {b:?}");
            }
        }
    }

    /// Deferred recording (flushed at events) keeps every statistic as when each latency is
    /// added at delivery: sums bit for bit (same order of additions), counts, percentiles, batch
    /// means and checkpoints.
    #[test]
    fn deferred_recording_equals_recording_at_delivery() {
        let mut st = lane_stats(20);
        let mut direct: Vec<Acc> = (0..=20).map(|_| Acc::new()).collect();
        let mut s = 0x2545_f491_u64;
        let mut now = 0.0;
        for k in 0..20_000u32 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let len = [1, 2, 3, 4, 5, 20][(s >> 40) as usize % 6];
            let t = now - (s >> 11) as f64 / (1u64 << 53) as f64 * 0.1 * f64::from(len * len);
            now += 0.37;
            if k % 2 == 0 {
                st.delivered(Msg { t, len, app: 0, seq: k, class: 0 }, now);
            } else {
                st.delivered_plain(t, len, now);
            }
            direct[len as usize].add(now - t);
            match k % 997 {
                0 => {
                    st.event(Kind::Batch);
                    direct.iter_mut().for_each(Acc::close_batch);
                }
                500 => st.event(Kind::Check),
                _ => {}
            }
        }
        st.event(Kind::End);
        for (a, b) in st.by_len.iter().zip(&direct) {
            assert_eq!(a.sum.to_bits(), b.sum.to_bits());
            assert_eq!(a.n(), b.n());
            let (x, y) = (a.stats(0), b.stats(0));
            // Bit patterns: lengths without a message have NaN figures on both sides.
            let bits = |s: &LatStats| [s.p50_tu, s.p99_tu, s.max_tu].map(f64::to_bits);
            assert_eq!(bits(&x), bits(&y));
            assert_eq!(format!("{:?}", x.batch_means), format!("{:?}", y.batch_means));
        }
        assert_eq!(st.checks.len(), 20);
        assert!(st.checks.iter().all(|c| c.1.len() == 6), "every length seen by the first checkpoint");
    }

    /// Lone messages counted by the lane and kept in a shared histogram give the statistics of
    /// recording them in the lane: sums bit for bit, counts, percentiles, maxima, batch means,
    /// checkpoints and the overall figures.
    #[test]
    fn lone_messages_in_a_shared_histogram_equal_recording_them() {
        let (mut split, mut whole) = (lane_stats(5), lane_stats(5));
        let mut shared: Vec<LogHist> = (0..=5).map(|_| LogHist::new()).collect();
        let mut s = 0x51ed_2705_u64;
        let mut now = 0.0;
        for k in 0..30_000u32 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let len = 1 + (s >> 45) as u32 % 5;
            let t = now - (s >> 11) as f64 / (1u64 << 53) as f64 * 3.0 * f64::from(len);
            now += 0.41;
            if (s >> 20).is_multiple_of(3) {
                split.delivered_lone(t, len, now);
                shared[len as usize].record(now - t);
            } else {
                split.delivered_plain(t, len, now);
            }
            whole.delivered_plain(t, len, now);
            for kind in match k % 1499 {
                0 => &[Kind::Batch][..],
                700 => &[Kind::Check][..],
                _ => &[][..],
            } {
                split.event(*kind);
                whole.event(*kind);
            }
        }
        split.event(Kind::End);
        whole.event(Kind::End);
        for (l, (a, b)) in split.by_len.iter().zip(&whole.by_len).enumerate().skip(1) {
            assert!(a.lone > 0, "length {l} had lone messages");
            assert_eq!(a.sum.to_bits(), b.sum.to_bits(), "length {l}");
            let (x, y) = (a.stats_with(l as u32, Some(&shared[l])), b.stats(l as u32));
            assert_eq!((x.count, x.p50_tu, x.p99_tu, x.max_tu), (y.count, y.p50_tu, y.p99_tu, y.max_tu), "length {l}");
            assert_eq!(format!("{:?}", x.batch_means), format!("{:?}", y.batch_means), "length {l}");
        }
        assert_eq!(format!("{:?}", split.checks), format!("{:?}", whole.checks));
        let (x, y) = (split.overall(Some(&shared)).stats(0), whole.overall(None).stats(0));
        assert_eq!((x.count, x.mean_tu.to_bits(), x.p99_tu, x.max_tu), (y.count, y.mean_tu.to_bits(), y.p99_tu, y.max_tu));
    }
}
