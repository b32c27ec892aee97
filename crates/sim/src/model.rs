//! The simulation model of the report (§7): message lengths, arrivals, service times, strategies.
//! Everything here is validated at the boundary; the engine trusts it.

use std::path::{Path, PathBuf};

use schedlab_policy::{Alpha, Dialect, PolicySpec, SpecError};
use schedlab_report::results::workload::Workload;

/// Why a model description was refused. Messages say what to change.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ModelError {
    #[error("traffic {0}% is outside (0, 100): give a load strictly between 0 and 100 percent")]
    Traffic(f64),
    #[error("length range {low}..{high}: lengths must be whole packets >= 1 with low <= high")]
    Lengths { low: i64, high: i64 },
    #[error("length range {low}..{high} has percentage {pct}: percentages must be > 0 and finite")]
    Percent { low: i64, high: i64, pct: f64 },
    #[error("length distribution percentages sum to {0}, not 100: make them add up to 100")]
    PercentSum(f64),
    #[error("message lengths above {max} packets are not supported (got {got})")]
    TooLong { got: i64, max: u32 },
    #[error("queue sampling delay {0} must be a positive number of time units")]
    QueueDelay(f64),
    #[error(transparent)]
    Strategy(#[from] SpecError),
    #[error("bad alpha '{0}': {1}")]
    Alpha(String, String),
    #[error("{file}:{line}: field '{field}': {msg}")]
    File { file: PathBuf, line: usize, field: &'static str, msg: String },
    /// A fault of the whole file (no one line to blame).
    #[error("{file}: {msg}")]
    WholeFile { file: PathBuf, msg: String },
    #[error("cannot read {file}: {msg}")]
    Io { file: PathBuf, msg: String },
    #[error("{0}")]
    Other(String),
}

/// Longest message length accepted, in packets: YAPS's cap (pFabric data mining reaches
/// 666,667). Statistics are kept per length only when lengths are few (see
/// `engine::statistics::Keys`), so no array is sized by it.
pub const MAX_LEN: u32 = 2_500_000;

/// One component of a length distribution: uniform integer in `low..=high` with probability `frac`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LenRange {
    pub low: u32,
    pub high: u32,
    pub frac: f64,
}

/// Slots of [`LengthDist`]'s guide to its cumulative table (a power of two).
const GUIDE: usize = 1024;

/// A guide slot of a distribution of single lengths: its first range `lo` (the guide's entry)
/// and the one cumulative bound within it (`+∞` when none); `lo` is [`WIDE`] when the slot
/// holds more than one bound (then the guided bisection decides).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Slot {
    bound: f64,
    lo: u32,
}
const WIDE: u32 = u32::MAX;

/// A message-length distribution: a mixture of uniform integer ranges (the listing's `-m`, a
/// `--dist` file, or a named workload's exact packet distribution).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LengthDist {
    pub ranges: Vec<LenRange>,
    /// Cumulative probabilities, same order as `ranges`.
    #[serde(skip)]
    cum: Vec<f64>,
    /// Where [`LengthDist::sample`]'s bisection over `cum` starts for u in [j/G, (j+1)/G)
    /// (G = [`GUIDE`]): `guide[j]` is its answer for u = j/G, so a draw searches only
    /// `cum[guide[j]..guide[j + 1]]`, a few entries, instead of hundreds (named workloads).
    #[serde(skip)]
    guide: Vec<u32>,
    /// When every range is a single length (a step reading: W1-W5) and there is a guide: per guide
    /// slot, the answer with one comparison, when the slot holds at most one cumulative bound
    /// (see [`Slot`]; empty otherwise). `lens[i]` is range `i`'s length.
    #[serde(skip)]
    slots: Vec<Slot>,
    #[serde(skip)]
    lens: Vec<u32>,
    /// The named workload this distribution was read from, with how it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
}

impl LengthDist {
    /// The report's default: 90% uniform 1..5, 10% exactly 20 (mean 4.7 packets).
    pub fn report_default() -> Self {
        Self::new(&[(1, 5, 90.0), (20, 20, 10.0)]).expect("default distribution is valid")
    }

    /// Builds from `(low, high, percent)` triples; percentages must sum to 100.
    pub fn new(parts: &[(i64, i64, f64)]) -> Result<Self, ModelError> {
        if parts.is_empty() {
            return Err(ModelError::Other("empty length distribution: give at least one LOW HIGH PERCENT".into()));
        }
        let mut ranges = Vec::new();
        let mut sum = 0.0;
        for &(low, high, pct) in parts {
            if low < 1 || high < low {
                return Err(ModelError::Lengths { low, high });
            }
            if high > i64::from(MAX_LEN) {
                return Err(ModelError::TooLong { got: high, max: MAX_LEN });
            }
            if !(pct.is_finite() && pct > 0.0) {
                return Err(ModelError::Percent { low, high, pct });
            }
            sum += pct;
            ranges.push(LenRange { low: low as u32, high: high as u32, frac: pct / 100.0 });
        }
        if (sum - 100.0).abs() > 1e-6 {
            return Err(ModelError::PercentSum(sum));
        }
        Ok(Self::from_ranges(ranges))
    }

    fn from_ranges(ranges: Vec<LenRange>) -> Self {
        let mut acc = 0.0;
        let cum = ranges
            .iter()
            .map(|r| {
                acc += r.frac;
                acc
            })
            .collect::<Vec<f64>>();
        let guide = if cum.len() > 8 {
            let below = &cum[..cum.len() - 1];
            (0..=GUIDE).map(|j| below.partition_point(|&c| j as f64 / GUIDE as f64 >= c) as u32).collect()
        } else {
            Vec::new()
        };
        let slots = if !guide.is_empty() && ranges.iter().all(|r| r.low == r.high) {
            let below = &cum[..cum.len() - 1];
            guide
                .windows(2)
                .map(|w| match w[1] - w[0] {
                    0 => Slot { bound: f64::INFINITY, lo: w[0] },
                    1 => Slot { bound: below[w[0] as usize], lo: w[0] },
                    _ => Slot { bound: f64::INFINITY, lo: WIDE },
                })
                .collect()
        } else {
            Vec::new()
        };
        let lens = if slots.is_empty() { Vec::new() } else { ranges.iter().map(|r| r.low).collect() };
        LengthDist { ranges, cum, guide, slots, lens, workload: None }
    }

    /// The named workload `name` (see `schedlab workloads`) read with `reading` (`None`: the
    /// source's own rule) and, for byte tables, `bytes_per_packet` payload bytes per packet (`None`:
    /// 1460); a value given for a table in packets is an error.
    pub fn workload(name: &str, reading: Option<&str>, bytes_per_packet: Option<u64>) -> Result<Self, ModelError> {
        use schedlab_workload as wl;
        let w = wl::named(name).map_err(|e| ModelError::Other(format!("--workload: {e}")))?;
        let reading = match reading {
            Some(r) => wl::Reading::parse(r).map_err(|e| ModelError::Other(format!("--reading: {e}")))?,
            None => w.default_reading,
        };
        // A table in packets (W5, pFabric) refuses a value: it has nothing to cut.
        let bpp = w.bytes_per_packet(bytes_per_packet).map_err(|e| ModelError::Other(format!("--bytes-per-packet: {e}")))?;
        Self::of_workload(&w, reading, bpp)
    }

    /// The named workload `w` read with `reading` and, for a byte table, cut at `bpp` payload
    /// bytes per packet (ignored for a table in packets): the parts, already checked, that
    /// `schedlab_workload::parse_named` returns for `NAME[:READING[:BYTES_PER_PACKET]]`.
    pub fn of_workload(
        w: &schedlab_workload::Workload,
        reading: schedlab_workload::Reading,
        bpp: u32,
    ) -> Result<Self, ModelError> {
        let parts = w.packet_ranges(reading, bpp);
        if let Some(r) = parts.iter().find(|r| r.high > MAX_LEN) {
            return Err(ModelError::TooLong { got: i64::from(r.high), max: MAX_LEN });
        }
        let total: f64 = parts.iter().map(|r| r.prob).sum();
        let ranges = parts.iter().map(|r| LenRange { low: r.low, high: r.high, frac: r.prob / total }).collect();
        let mut d = Self::from_ranges(ranges);
        let tag = w.tag(reading, bpp);
        d.workload = Some(Workload {
            name: tag.name,
            reading: reading.name().into(),
            bytes_per_packet: tag.bytes_per_packet,
            checksum: tag.checksum,
            source: tag.source,
            commit: tag.commit,
            unit: Some(w.unit.name().into()),
            mean_size: Some(w.mean(reading)),
            mean_packets: d.mean(),
            written: None,
        });
        Ok(d)
    }

    /// Reads `LOW HIGH PERCENT` lines (`#` comments, blank lines ignored).
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io { file: path.into(), msg: e.to_string() })?;
        Self::parse(&text, path)
    }

    /// Parses the text of a distribution file; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ModelError> {
        let mut parts = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let err = |field, msg: String| ModelError::File { file: path.into(), line: i + 1, field, msg };
            if f.len() != 3 {
                return Err(err("line", format!("expected 'LOW HIGH PERCENT', got {} fields", f.len())));
            }
            let low: i64 = f[0].parse().map_err(|_| err("LOW", format!("'{}' is not a whole number", f[0])))?;
            let high: i64 = f[1].parse().map_err(|_| err("HIGH", format!("'{}' is not a whole number", f[1])))?;
            let pct: f64 = f[2].parse().map_err(|_| err("PERCENT", format!("'{}' is not a number", f[2])))?;
            if low < 1 || high < low {
                return Err(err("LOW/HIGH", format!("lengths must be >= 1 with LOW <= HIGH (got {low} {high})")));
            }
            parts.push((low, high, pct));
        }
        Self::new(&parts).map_err(|e| match e {
            ModelError::PercentSum(_) | ModelError::TooLong { .. } | ModelError::Percent { .. } | ModelError::Other(_) => {
                ModelError::WholeFile { file: path.into(), msg: e.to_string() }
            }
            other => other,
        })
    }

    /// Mean length in packets (the listing's `avgmeslen`).
    pub fn mean(&self) -> f64 {
        self.ranges.iter().map(|r| r.frac * f64::from(r.low + r.high) / 2.0).sum()
    }

    /// Longest possible length.
    pub fn max_len(&self) -> u32 {
        self.ranges.iter().map(|r| r.high).max().unwrap_or(1)
    }

    /// P(length ≤ `len`).
    pub fn cdf(&self, len: u32) -> f64 {
        self.ranges
            .iter()
            .map(|r| {
                if len < r.low {
                    0.0
                } else if len >= r.high {
                    r.frac
                } else {
                    r.frac * f64::from(len - r.low + 1) / f64::from(r.high - r.low + 1)
                }
            })
            .sum::<f64>()
            .min(1.0)
    }

    /// The smallest length whose [`LengthDist::cdf`] reaches `q` (to 1e-12).
    pub fn quantile(&self, q: f64) -> u32 {
        let (mut lo, mut hi) = (1u32, self.max_len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cdf(mid) >= q - 1e-12 {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// Lengths that can occur, increasing, or `None` when there are more than `limit`.
    pub fn support_upto(&self, limit: usize) -> Option<Vec<u32>> {
        let total: u64 = self.ranges.iter().map(|r| u64::from(r.high - r.low) + 1).sum();
        if total > (limit as u64).saturating_mul(4) {
            return None;
        }
        let s = self.support();
        (s.len() <= limit).then_some(s)
    }

    /// Lengths that can occur, increasing.
    pub fn support(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.ranges.iter().flat_map(|r| r.low..=r.high).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Draws a length from `u` uniform in [0, 1): pick the range, then a uniform integer in it.
    #[inline]
    pub fn sample(&self, u: f64) -> u32 {
        if !self.slots.is_empty() {
            // Single-length ranges: `range_of` is guide[j] plus the bounds of slot j at or below
            // u, and a slot of at most one bound answers with one comparison (+∞: none), so
            // one slot read and one length read, the second depending on the first, instead of
            // the guide, the bisection and the ranges, each depending on the last.
            let j = ((u * GUIDE as f64) as usize).min(GUIDE - 1);
            let s = self.slots[j];
            if s.lo != WIDE {
                return self.lens[s.lo as usize + usize::from(u >= s.bound)];
            }
        }
        let i = self.range_of(u);
        let r = &self.ranges[i];
        if r.low == r.high {
            return r.low;
        }
        let lo = if i == 0 { 0.0 } else { self.cum[i - 1] };
        let within = ((u - lo) / r.frac).clamp(0.0, 1.0 - 1e-12);
        r.low + (within * f64::from(r.high - r.low + 1)) as u32
    }

    /// The range `u` falls in: the number of cumulative bounds (the last excluded) at or below it.
    #[inline(always)]
    fn range_of(&self, u: f64) -> usize {
        if self.cum.len() > 8 {
            // Many ranges (a named workload; the guide is built for them): the bisection within
            // the guide's bounds. The index is non-decreasing in u, and j/G ≤ u < (j+1)/G exactly
            // (G is a power of two), so it lies between the guide's entries j and j + 1.
            let below = &self.cum[..self.cum.len() - 1];
            let j = ((u * GUIDE as f64) as usize).min(GUIDE - 1);
            let (lo, hi) = (self.guide[j] as usize, self.guide[j + 1] as usize);
            lo + below[lo..hi].partition_point(|&c| u >= c)
        } else {
            let mut i = 0;
            while i + 1 < self.cum.len() && u >= self.cum[i] {
                i += 1;
            }
            i
        }
    }
}

/// Breakpoints a [`LengthTable`] holds at most (it then covers up to one more length interval).
const TABLE_BREAKS: usize = 7;

/// [`LengthDist::sample`] as a look-up: the function is a step function of `u` (piecewise
/// constant, with finitely many steps), so its value is the value of the last step at or below
/// `u`. The steps are found once, exactly (by bisection on the bits of `u`), so a draw gives the
/// same length bit for bit as the formula, without its division and without a branch on the
/// range; the generator draws one per message.
#[derive(Clone, Debug)]
pub struct LengthTable {
    /// Where each step after the first starts, increasing; +∞ past the last.
    breaks: [f64; TABLE_BREAKS],
    /// The length on each step (`lens[k]` for `u` at or past `k` breakpoints).
    lens: [u32; TABLE_BREAKS + 1],
}

impl LengthTable {
    /// The length for `u` in [0, 1): as [`LengthDist::sample`].
    #[inline(always)]
    pub fn sample(&self, u: f64) -> u32 {
        let k: usize = self.breaks.iter().map(|&b| usize::from(u >= b)).sum();
        self.lens[k % (TABLE_BREAKS + 1)]
    }
}

impl LengthDist {
    /// The look-up form of [`LengthDist::sample`], or `None` when it has more steps than a table
    /// holds (then the formula is used).
    pub fn table(&self) -> Option<LengthTable> {
        // Candidate step starts: each range's first u, and within a range the first u at which
        // each further length is reached (the formula is non-decreasing in u within a range:
        // every operation in it rounds monotonically).
        let mut starts = Vec::new();
        for (i, r) in self.ranges.iter().enumerate() {
            let lo = if i == 0 { 0.0 } else { self.cum[i - 1] };
            let hi = if i + 1 == self.ranges.len() { 1.0 } else { self.cum[i] };
            if lo >= hi {
                continue; // no u selects this range
            }
            if i > 0 {
                starts.push(lo);
            }
            for len in r.low + 1..=r.high {
                match first_at_least(|u| self.sample(u), lo, hi, len) {
                    Some(u) => starts.push(u),
                    None => break,
                }
                if starts.len() > 4 * TABLE_BREAKS {
                    return None;
                }
            }
        }
        starts.sort_by(f64::total_cmp);
        starts.dedup();
        // Keep the starts where the length changes.
        let mut breaks = Vec::new();
        let mut lens = vec![self.sample(0.0)];
        for &u in &starts {
            let l = self.sample(u);
            if l != *lens.last().expect("one at least") {
                breaks.push(u);
                lens.push(l);
            }
        }
        if breaks.len() > TABLE_BREAKS {
            return None;
        }
        let mut t = LengthTable { breaks: [f64::INFINITY; TABLE_BREAKS], lens: [0; TABLE_BREAKS + 1] };
        t.breaks[..breaks.len()].copy_from_slice(&breaks);
        t.lens[..lens.len()].copy_from_slice(&lens);
        Some(t)
    }
}

/// The least `u` in [lo, hi) (0 <= lo < hi <= 1) with `f(u) >= target`, for `f` non-decreasing
/// there, by bisection on the bit patterns (which order like the values for non-negative floats).
fn first_at_least(f: impl Fn(f64) -> u32, lo: f64, hi: f64, target: u32) -> Option<f64> {
    let (mut a, mut b) = (lo.to_bits(), hi.to_bits() - 1); // b: the last float below hi
    if f(f64::from_bits(b)) < target {
        return None;
    }
    while a < b {
        let m = a + (b - a) / 2;
        if f(f64::from_bits(m)) >= target {
            b = m;
        } else {
            a = m + 1;
        }
    }
    Some(f64::from_bits(a))
}

/// Which scheduling strategy a queue runs: a policy of the shared vocabulary
/// ([`schedlab_policy::spec`]), parsed in the simulator's dialect by [`parse_strategy`].
pub type Strategy = PolicySpec;

/// Parses a strategy name in the simulator's dialect: RR', RR (the report's message round robin),
/// FIFO, SF, a number α (or −2/−1/0 as in the listing), `track:LOW:HIGH[:GAIN]`, prio, and the
/// flow-level drr, wf2qp, qfq (see [`schedlab_policy::spec`]).
pub fn parse_strategy(s: &str) -> Result<Strategy, ModelError> {
    Ok(PolicySpec::parse(s, Dialect::Sim)?)
}

/// The report's 13 default strategies: RR', RR, FIFO, 1, 2, 3, 6, 10, 20, 30, 60, 100, SF.
pub fn report_defaults() -> Vec<Strategy> {
    let mut v = vec![PolicySpec::RoundRobinHead, PolicySpec::RoundRobin, PolicySpec::Fifo];
    v.extend([1.0, 2.0, 3.0, 6.0, 10.0, 20.0, 30.0, 60.0, 100.0].map(PolicySpec::Alpha));
    v.push(PolicySpec::ShortestFirst);
    v
}

/// The listing's numeric α for the `>>` lines (−2, −1, 0, α, 1e6); beyond the listing (the `>>`
/// lines print their label instead): prio −3, DRR −4, WF2Q+ −5, QFQ −6, tracking −7, tracking
/// fixed at insertion −8, QFQ+ −9.
pub fn listing_alpha(s: &Strategy) -> f64 {
    match s {
        PolicySpec::RoundRobinHead => -2.0,
        PolicySpec::RoundRobin => -1.0,
        PolicySpec::Fifo => 0.0,
        PolicySpec::Alpha(a) => *a,
        PolicySpec::ShortestFirst => 1e6,
        PolicySpec::Track { .. } => -7.0,
        PolicySpec::TrackInsert { .. } => -8.0,
        PolicySpec::Prio => -3.0,
        PolicySpec::Drr => -4.0,
        PolicySpec::Wf2qPlus => -5.0,
        PolicySpec::Qfq => -6.0,
        PolicySpec::QfqPlus(_) => -9.0,
    }
}

/// A §10 priority class: messages drawn with probability `frac` get α = `alpha`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AlphaClass {
    pub alpha: f64,
    pub frac: f64,
}

/// Parses `ALPHA:PERCENT,ALPHA:PERCENT,...` (percentages sum to 100).
pub fn parse_alpha_classes(s: &str) -> Result<Vec<AlphaClass>, ModelError> {
    let mut v = Vec::new();
    let mut sum = 0.0;
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (a, p) = part
            .split_once(':')
            .ok_or_else(|| ModelError::Other(format!("--msg-alpha entry '{part}': expected ALPHA:PERCENT")))?;
        let alpha: f64 =
            a.trim().parse().map_err(|_| ModelError::Other(format!("--msg-alpha entry '{part}': ALPHA is not a number")))?;
        Alpha::new(alpha).map_err(|e| ModelError::Alpha(a.into(), e.to_string()))?;
        let pct: f64 =
            p.trim().parse().map_err(|_| ModelError::Other(format!("--msg-alpha entry '{part}': PERCENT is not a number")))?;
        if !(pct.is_finite() && pct > 0.0) {
            return Err(ModelError::Other(format!("--msg-alpha entry '{part}': PERCENT must be > 0")));
        }
        sum += pct;
        v.push(AlphaClass { alpha, frac: pct / 100.0 });
    }
    if v.is_empty() {
        return Err(ModelError::Other("--msg-alpha needs at least one ALPHA:PERCENT".into()));
    }
    if (sum - 100.0).abs() > 1e-6 {
        return Err(ModelError::Other(format!(
            "--msg-alpha percentages sum to {sum}, not 100: make the PERCENT of the ALPHA:PERCENT entries add up to 100 (e.g. 1:50,100:50)"
        )));
    }
    Ok(v)
}

/// One message of an arrival trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceArrival {
    pub time: f64,
    pub len: u32,
    pub app: u32,
}

/// Reads an arrival trace: lines `TIME LENGTH [APP]`, times non-decreasing, `#` comments.
pub fn read_trace(path: &Path) -> Result<Vec<TraceArrival>, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io { file: path.into(), msg: e.to_string() })?;
    parse_trace(&text, path, 1.0)
}

/// Parses the text of an arrival trace; `path` names it in errors. TIME values are divided by
/// `unit` (trace units per simulator time unit, see [`parse_time_unit`]; 1 when the trace is in
/// time units already).
pub fn parse_trace(text: &str, path: &Path, unit: f64) -> Result<Vec<TraceArrival>, ModelError> {
    if !(unit.is_finite() && unit > 0.0) {
        return Err(ModelError::Other(format!("trace time unit {unit} must be a positive number")));
    }
    let mut v: Vec<TraceArrival> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |field, msg: String| ModelError::File { file: path.into(), line: i + 1, field, msg };
        let f: Vec<&str> = line.split_whitespace().collect();
        if !(2..=3).contains(&f.len()) {
            return Err(err("line", format!("expected 'TIME LENGTH [APP]', got {} fields", f.len())));
        }
        let time: f64 = f[0].parse().map_err(|_| err("TIME", format!("'{}' is not a number", f[0])))?;
        if !(time.is_finite() && time >= 0.0) {
            return Err(err("TIME", format!("{time} must be a finite time >= 0")));
        }
        if !(time / unit).is_finite() {
            return Err(err("TIME", format!("{time} in time units of {unit} is beyond any finite time")));
        }
        if let Some(prev) = v.last() {
            if time / unit < prev.time {
                return Err(err("TIME", format!("{time} is earlier than the previous arrival {}", prev.time * unit)));
            }
        }
        let len: i64 = f[1].parse().map_err(|_| err("LENGTH", format!("'{}' is not a whole number", f[1])))?;
        if len < 1 || len > i64::from(MAX_LEN) {
            return Err(err("LENGTH", format!("{len} must be between 1 and {MAX_LEN} packets")));
        }
        let app: u32 = match f.get(2) {
            Some(a) => a.parse().map_err(|_| err("APP", format!("'{a}' is not an application number")))?,
            None => 0,
        };
        v.push(TraceArrival { time: time / unit, len: len as u32, app });
    }
    if v.is_empty() {
        return Err(ModelError::WholeFile { file: path.into(), msg: "the trace has no arrivals".into() });
    }
    Ok(v)
}

/// Parses `--time-unit`: how long one simulator time unit (one mean packet service time) is in
/// the trace's TIME units. A duration with a unit (`12us`, `12µs`, `1.5ms`, `800ns`, `2s`) means
/// the trace's TIME is in nanoseconds (as `schedlab sched --trace-out` writes it); a bare number
/// is the ratio itself (`12000`: 12000 trace units per time unit). Returns the ratio (> 0).
pub fn parse_time_unit(s: &str) -> Result<f64, ModelError> {
    let t = s.trim();
    let bad = |why: &str| {
        ModelError::Other(format!(
            "--time-unit '{s}': {why}; give the duration of one packet time, e.g. 12us (trace in nanoseconds) or a plain ratio like 12000"
        ))
    };
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'));
    let (num, suffix) = match split {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, ""),
    };
    let v: f64 = num.parse().map_err(|_| bad("not a number"))?;
    let ns_per = match suffix {
        "" => 1.0,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad("unknown unit (use ns, us, ms or s)")),
    };
    let r = v * ns_per;
    if !(r.is_finite() && r > 0.0) {
        return Err(bad("must be positive"));
    }
    Ok(r)
}

/// The packet service-time model (`--service`). Every model has mean 1 time unit, so a traffic
/// level means the same load under each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Service {
    /// The report's `0.5 + Exp(mean 0.5)` (§7).
    #[default]
    Report,
    /// Every packet takes exactly one time unit: a link at a fixed rate.
    Det,
    /// Exponential with mean 1 (M/M/1-like packets).
    Exp,
}

impl Service {
    /// Parses `report`, `det` (also `deterministic`, `fixed`) or `exp` (also `exponential`).
    pub fn parse(s: &str) -> Result<Service, ModelError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "report" => Ok(Service::Report),
            "det" | "deterministic" | "fixed" => Ok(Service::Det),
            "exp" | "exponential" => Ok(Service::Exp),
            _ => Err(ModelError::Other(format!(
                "--service '{s}': use report (0.5 + Exp(0.5), the report's), det (one time unit per packet) or exp (Exp(1))"
            ))),
        }
    }
    /// The name as given to `--service`.
    pub fn name(self) -> &'static str {
        match self {
            Service::Report => "report",
            Service::Det => "det",
            Service::Exp => "exp",
        }
    }
}

/// Largest flow weight accepted by `--weights`.
pub const MAX_WEIGHT: u32 = 1 << 16;

/// Parses `--weights`: one weight per application, comma-separated, for the flow-level strategies
/// (drr, wf2qp, qfq; application `i` is flow `i`). `W:N` repeats weight `W` for `N` applications,
/// like `sched`'s flowsets: `1:2,3:2` is `1,1,3,3`.
pub fn parse_weights(s: &str) -> Result<Vec<u32>, ModelError> {
    let mut v = Vec::new();
    for (k, part) in s.split(',').enumerate() {
        let ctx = |msg: String| ModelError::Other(format!("--weights entry {} '{part}': {msg}", k + 1));
        let (w, n) = match part.split_once(':') {
            Some((w, n)) => (w.trim(), n.trim()),
            None => (part.trim(), "1"),
        };
        let w: u64 = w.parse().map_err(|_| ctx(format!("WEIGHT '{w}' is not a whole number")))?;
        let n: u64 = n.parse().map_err(|_| ctx(format!("COUNT '{n}' is not a whole number")))?;
        if w == 0 || w > u64::from(MAX_WEIGHT) {
            return Err(ctx(format!("WEIGHT must be in 1..={MAX_WEIGHT}")));
        }
        if n == 0 || n > (1 << 16) - v.len() as u64 {
            return Err(ctx("COUNT must be >= 1 and the applications at most 65536".into()));
        }
        v.extend(std::iter::repeat_n(w as u32, n as usize));
    }
    Ok(v)
}

/// Validates a traffic level in percent.
pub fn check_traffic(t: f64) -> Result<f64, ModelError> {
    if t.is_finite() && t > 0.0 && t < 100.0 {
        Ok(t)
    } else {
        Err(ModelError::Traffic(t))
    }
}

#[cfg(test)]
mod tests {
    /// The table gives the formula's length for every u: at, just below and just above each
    /// step, and at a million random points, for the report's distribution and others.
    #[test]
    fn length_table_equals_the_formula() {
        let dists = [
            LengthDist::report_default(),
            LengthDist::new(&[(1, 1, 50.0), (100, 100, 50.0)]).unwrap(),
            LengthDist::new(&[(10, 12, 33.3), (1, 3, 33.3), (7, 7, 33.4)]).unwrap(),
            LengthDist::new(&[(3, 3, 100.0)]).unwrap(),
            LengthDist::new(&[(1, 8, 100.0)]).unwrap(),
        ];
        let mut s = 0x9e37_79b9_u64;
        for d in &dists {
            let t = d.table().expect("a small distribution has a table");
            let check = |u: f64| {
                if (0.0..1.0).contains(&u) {
                    assert_eq!(t.sample(u), d.sample(u), "{d:?} at u = {u:e}");
                }
            };
            for &b in t.breaks.iter().filter(|b| b.is_finite()) {
                for u in [b, f64::from_bits(b.to_bits() - 1), f64::from_bits(b.to_bits() + 1)] {
                    check(u);
                }
            }
            for &c in &d.cum {
                check(c);
                check(f64::from_bits(c.to_bits() - 1));
            }
            check(0.0);
            check(f64::from_bits(1.0f64.to_bits() - 1));
            for _ in 0..1_000_000 {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                check((s >> 11) as f64 * (1.0 / (1u64 << 53) as f64));
            }
        }
        // Too many steps for a table: the formula is used.
        assert!(LengthDist::new(&[(1, 100, 100.0)]).unwrap().table().is_none());
    }

    use super::*;

    /// Points to probe a length draw at: `edges`, every cumulative bound of `d` and its two
    /// neighbouring doubles, and 200,000 random u from an LCG seeded with `seed`.
    fn probes(d: &LengthDist, edges: impl IntoIterator<Item = f64>, mut seed: u64) -> Vec<f64> {
        let mut us: Vec<f64> = edges.into_iter().collect();
        for &c in &d.cum {
            us.extend([c, f64::from_bits(c.to_bits() - 1), f64::from_bits(c.to_bits() + 1)]);
        }
        for _ in 0..200_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            us.push((seed >> 11) as f64 / (1u64 << 53) as f64);
        }
        us
    }

    /// The guided bisection picks the range the whole bisection picks (then `sample` maps it to a
    /// length as before), for every named
    /// workload: at random u, at each cumulative boundary and its neighbouring doubles, and at
    /// the guide's own slot edges.
    #[test]
    fn guided_sampling_equals_the_whole_bisection() {
        let whole = |d: &LengthDist, u: f64| d.cum[..d.cum.len() - 1].partition_point(|&c| u >= c);
        for (k, name) in ["w1", "w2", "w3", "w4", "w5", "pfabric-websearch", "pfabric-datamining"].into_iter().enumerate() {
            let d = LengthDist::workload(name, None, None).unwrap();
            if d.cum.len() <= 8 {
                continue;
            }
            assert_eq!(d.guide.len(), GUIDE + 1, "{name}");
            let us = probes(&d, (0..GUIDE).map(|j| j as f64 / GUIDE as f64), 0x9e37_79b9_7f4a_7c15 + k as u64);
            for u in us.into_iter().filter(|u| (0.0..1.0).contains(u)) {
                assert_eq!(d.range_of(u), whole(&d, u), "{name} at u = {u:e}");
            }
        }
    }

    /// A single-length distribution's slot answer is `sample`'s answer through the guided
    /// bisection, for every named workload and reading that has slots: at random u, at every
    /// cumulative bound and its neighbouring doubles, and at the slot edges.
    #[test]
    fn slot_sampling_equals_the_ranges() {
        let by_range = |d: &LengthDist, u: f64| {
            let r = &d.ranges[d.range_of(u)];
            assert_eq!(r.low, r.high);
            r.low
        };
        let mut with_slots = Vec::new();
        let names = ["w1", "w2", "w3", "w4", "w5", "w1-sampled", "pfabric-websearch", "pfabric-datamining"];
        for (name, reading, cut) in names.iter().flat_map(|&n| {
            [None, Some("step"), Some("interp")]
                .into_iter()
                .flat_map(move |r| [None, Some(500), Some(9000)].into_iter().map(move |c| (n, r, c)))
        }) {
            let Ok(d) = LengthDist::workload(name, reading, cut) else { continue };
            if d.slots.is_empty() {
                continue;
            }
            with_slots.push(format!("{name}:{reading:?}:{cut:?}"));
            let edges = (0..=GUIDE).flat_map(|j| {
                let e = j as f64 / GUIDE as f64;
                [e, f64::from_bits(e.to_bits().wrapping_sub(1))]
            });
            let us = probes(&d, edges, 0x2545_f491_4f6c_dd1d + with_slots.len() as u64);
            for u in us.into_iter().filter(|u| (0.0..1.0).contains(u)) {
                assert_eq!(d.sample(u), by_range(&d, u), "{name} {reading:?} {cut:?} at u = {u:e}");
            }
        }
        assert!(with_slots.iter().any(|n| n.starts_with("w4:None")), "{with_slots:?}");
    }

    /// A count near `u64::MAX` is refused with the limit, not an overflow (found by the
    /// `sim_parsers` fuzz target).
    #[test]
    fn weights_refuse_a_huge_count() {
        for s in ["2:2,4:18446744073709551615", "1:65536,1:1", "3:18446744073709551615"] {
            let e = parse_weights(s).unwrap_err().to_string();
            assert!(e.contains("at most 65536"), "{s}: {e}");
        }
        assert_eq!(parse_weights("1:65535,2:1").unwrap().len(), 1 << 16);
    }

    #[test]
    fn default_distribution_matches_the_report() {
        let d = LengthDist::report_default();
        assert!((d.mean() - 4.7).abs() < 1e-12);
        assert_eq!(d.support(), vec![1, 2, 3, 4, 5, 20]);
        let mut counts = [0u32; 21];
        let n = 100_000;
        for i in 0..n {
            counts[d.sample((i as f64 + 0.5) / n as f64) as usize] += 1;
        }
        for (l, &c) in counts.iter().enumerate().take(6).skip(1) {
            assert_eq!(c, 18_000, "len {l}");
        }
        assert_eq!(counts[20], 10_000);
    }

    #[test]
    fn bad_distributions_are_refused() {
        assert_eq!(LengthDist::new(&[(1, 5, 50.0)]), Err(ModelError::PercentSum(50.0)));
        assert_eq!(LengthDist::new(&[(0, 5, 100.0)]), Err(ModelError::Lengths { low: 0, high: 5 }));
        assert_eq!(LengthDist::new(&[(5, 1, 100.0)]), Err(ModelError::Lengths { low: 5, high: 1 }));
        assert!(LengthDist::new(&[(1, 5, -10.0), (1, 1, 110.0)]).is_err());
    }

    #[test]
    fn strategies_parse_like_the_listing() {
        assert_eq!(parse_strategy("-2").unwrap(), Strategy::RoundRobinHead);
        assert_eq!(parse_strategy("-1").unwrap(), Strategy::RoundRobin);
        assert_eq!(parse_strategy("RR").unwrap(), Strategy::RoundRobin);
        assert_eq!(parse_strategy("0").unwrap(), Strategy::Fifo);
        assert_eq!(parse_strategy("1e6").unwrap(), Strategy::ShortestFirst);
        assert_eq!(parse_strategy("RR'").unwrap(), Strategy::RoundRobinHead);
        assert_eq!(parse_strategy("10").unwrap().label(), "10");
        assert_eq!(parse_strategy("track:1:100").unwrap().label(), "track1-100");
        assert_eq!(parse_strategy("drr").unwrap(), Strategy::Drr);
        assert!(parse_strategy("-5").is_err());
        assert!(parse_strategy("bogus").is_err());
        assert!(parse_strategy("track:100:1").is_err());
        assert_eq!(report_defaults().len(), 13);
        let listing: Vec<f64> = report_defaults().iter().map(listing_alpha).collect();
        assert_eq!(listing, [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 6.0, 10.0, 20.0, 30.0, 60.0, 100.0, 1e6]);
    }

    #[test]
    fn service_time_unit_and_weights_parse() {
        assert_eq!(Service::parse("report").unwrap(), Service::Report);
        assert_eq!(Service::parse(" DET ").unwrap(), Service::Det);
        assert_eq!(Service::parse("exp").unwrap(), Service::Exp);
        assert_eq!(Service::default(), Service::Report);
        assert!(Service::parse("poisson").unwrap_err().to_string().contains("use report"));
        assert_eq!(parse_time_unit("12us").unwrap(), 12_000.0);
        assert_eq!(parse_time_unit("12µs").unwrap(), 12_000.0);
        assert_eq!(parse_time_unit("1.5ms").unwrap(), 1.5e6);
        assert_eq!(parse_time_unit("800ns").unwrap(), 800.0);
        assert_eq!(parse_time_unit("2s").unwrap(), 2e9);
        assert_eq!(parse_time_unit("12000").unwrap(), 12_000.0);
        for bad in ["", "us", "0us", "-3us", "12 parsecs", "nan", "inf"] {
            assert!(parse_time_unit(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_weights("1,3").unwrap(), [1, 3]);
        assert_eq!(parse_weights("1:2,3:2").unwrap(), [1, 1, 3, 3]);
        assert!(parse_weights("0").unwrap_err().to_string().contains("entry 1 '0'"));
        assert!(parse_weights("1,x").unwrap_err().to_string().contains("entry 2"));
        assert!(parse_weights("1:0").is_err());
        assert!(parse_weights("1:99999999").is_err());
        assert!(parse_weights("").is_err());
    }

    #[test]
    fn trace_times_scale_by_the_time_unit() {
        let p = Path::new("t.txt");
        let v = parse_trace("0 1 0\n12000 3 1\n36000 2 0 # ns\n", p, 12_000.0).unwrap();
        assert_eq!(v.iter().map(|a| a.time).collect::<Vec<_>>(), [0.0, 1.0, 3.0]);
        assert_eq!(v[1], TraceArrival { time: 1.0, len: 3, app: 1 });
        let e = parse_trace("5 1\n4 1\n", p, 1000.0).unwrap_err().to_string();
        assert!(e.contains("t.txt:2") && e.contains("4 is earlier than the previous arrival 5"), "{e}");
        assert!(parse_trace("1 1\n", p, 0.0).is_err());
        assert!(parse_trace("# nothing\n", p, 1.0).unwrap_err().to_string().contains("no arrivals"));
        let e = parse_trace("# nothing\n", p, 1.0).unwrap_err().to_string();
        assert!(!e.contains(":0:"), "{e}");
        // Whole-file faults of a length distribution name the file, with no line 0.
        let d = Path::new("d.txt");
        let e = LengthDist::parse("1 5 50\n20 20 40\n", d).unwrap_err().to_string();
        assert_eq!(e, "d.txt: length distribution percentages sum to 90, not 100: make them add up to 100");
        let e = LengthDist::parse("# only a comment\n", d).unwrap_err().to_string();
        assert!(e.starts_with("d.txt: empty length distribution"), "{e}");
        assert_eq!(LengthDist::parse("1 5 100\n", p).unwrap().support(), vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn traffic_bounds() {
        assert!(check_traffic(0.0).is_err());
        assert!(check_traffic(100.0).is_err());
        assert!(check_traffic(f64::NAN).is_err());
        assert_eq!(check_traffic(0.01), Ok(0.01));
    }

    #[test]
    fn trace_errors_name_line_and_field() {
        let dir = std::env::temp_dir().join(format!("schedlab-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.txt");
        std::fs::write(&p, "# t len app\n0.5 3\n1.0 x\n").unwrap();
        let e = read_trace(&p).unwrap_err().to_string();
        assert!(e.contains("t.txt:3") && e.contains("LENGTH"), "{e}");
        std::fs::write(&p, "2 3\n1 3\n").unwrap();
        assert!(read_trace(&p).unwrap_err().to_string().contains(":2: field 'TIME'"));
        std::fs::write(&p, "0 3 1\n1.5 20 2\n").unwrap();
        assert_eq!(read_trace(&p).unwrap().len(), 2);
        std::fs::write(&p, "1 5 100\n").unwrap();
        assert!(LengthDist::from_file(&p).unwrap().support() == vec![1, 2, 3, 4, 5]);
        std::fs::write(&p, "1 5 90\n").unwrap();
        assert!(LengthDist::from_file(&p).unwrap_err().to_string().contains("sum to 90"));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Fuzz regression (fuzz/regressions/sim_parsers): a large TIME over a tiny --time-unit gave
    /// an infinite arrival time.
    #[test]
    fn trace_time_overflowing_the_unit_is_refused() {
        let e = parse_trace("1e300 1\n", Path::new("t"), 1e-300).unwrap_err();
        assert!(e.to_string().contains("beyond any finite time"), "{e}");
        assert_eq!(parse_trace("1e300 1\n", Path::new("t"), 1.0).unwrap()[0].time, 1e300);
    }
}
