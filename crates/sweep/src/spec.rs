//! Sweep specifications: a TOML file naming the axes of a grid and the options fixed across it.
//!
//! ```toml
//! name = "alpha-vs-load"
//! traffic = [50, 90, 95]                   # percent (axis)
//! strategies = ["RR'", "RR", "FIFO", 10, "SF"]   # run in lock step inside every cell
//! lengths = ["report", "bimodal"]          # named distributions (axis); "report" is built in,
//!                                          # and so are the workloads: "w3", "w4:interp",
//!                                          # "w2:step:1442" (NAME[:READING[:BYTES_PER_PACKET]])
//! service = ["report"]                     # service-time model (axis)
//! packets = "10M"                          # arrival packets per cell (axis: a list is allowed)
//! seeds = [1, 2, 3]                        # or: replications = 3 (seeds seed, seed+1, ...)
//!
//! [distributions.bimodal]                  # inline ranges LOW HIGH PERCENT ...
//! ranges = [[1, 1, 50], [100, 100, 50]]
//! [distributions.measured]                 # ... or a file of `LOW HIGH PERCENT` lines
//! file = "measured.txt"                    # relative to the spec file
//!
//! [options]                                # fixed across the grid
//! queue_delay_tu = 200
//! batches = 20
//!
//! [[grid]]                                 # optional sub-grids: each overrides traffic,
//! traffic = [97, 98]                       # lengths, service or packets, and the cells of
//! packets = "100M"                         # all blocks are concatenated
//! ```
//!
//! A *cell* is one point of the grid (traffic, lengths, service, packets, seed): one simulator run
//! with every strategy in lock step. Everything is validated by [`Sweep::parse`] before anything
//! runs; errors name the key.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use schedlab_report::units::parse_count;
use schedlab_sim::model::{check_traffic, parse_alpha_classes, parse_strategy, report_defaults, AlphaClass};
use schedlab_sim::{LengthDist, Strategy};
use serde::{Deserialize, Serialize};

/// Why a spec was refused; every message names the key to change.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    /// The TOML itself, or a key the spec does not know (the message has line and column).
    #[error("{file}: {msg}")]
    Toml { file: String, msg: String },
    /// A key whose value is refused.
    #[error("{file}: key '{key}': {msg}")]
    Key { file: String, key: String, msg: String },
}

/// The most cells one sweep may have (each is a simulator run; at a tenth of a second each, a
/// million is a day of one core).
pub const MAX_CELLS: u64 = 1_000_000;

/// One length distribution as the cells carry it: `(low, high, percent)` ranges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub name: String,
    /// Ranges (empty for a named workload, which is rebuilt from `workload` where it runs).
    pub ranges: Vec<(u32, u32, f64)>,
    /// A named workload `NAME[:READING[:BYTES_PER_PACKET]]` (see `schedlab workloads`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
}

/// The simulator's distribution of a named workload written `NAME[:READING[:BYTES_PER_PACKET]]`
/// (read by [`schedlab_workload::parse_named`]: a BYTES_PER_PACKET given for a table in packets,
/// `w5:step:1442`, is refused, not ignored).
pub fn workload_dist(spec: &str) -> Result<LengthDist, String> {
    let (w, reading, bpp) = schedlab_workload::parse_named(spec).map_err(|e| format!("'{spec}': {e}"))?;
    LengthDist::of_workload(&w, reading, bpp).map_err(|e| format!("'{spec}': {e}"))
}

impl Dist {
    /// The simulator's distribution (validated when the spec was read).
    pub fn to_length_dist(&self) -> Result<LengthDist, String> {
        if let Some(w) = &self.workload {
            return workload_dist(w);
        }
        let parts: Vec<(i64, i64, f64)> = self.ranges.iter().map(|&(l, h, p)| (i64::from(l), i64::from(h), p)).collect();
        LengthDist::new(&parts).map_err(|e| e.to_string())
    }
}

/// True when `l` names a shipped workload (before any `:READING`).
fn schedlab_workload_name(l: &str) -> bool {
    let name = l.split(':').next().unwrap_or_default();
    LengthDist::workload(name, None, None).is_ok()
}

/// Options fixed across the grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    pub queue_delay_tu: f64,
    pub batches: u32,
    pub apps: u32,
    /// Closed-loop applications (§2); 0 = open loop (Poisson arrivals).
    pub closed: u32,
    pub in_order: bool,
    pub msg_alpha: Vec<(f64, f64)>,
}

impl Default for Options {
    fn default() -> Self {
        Options { queue_delay_tu: 200.0, batches: 20, apps: 1, closed: 0, in_order: false, msg_alpha: Vec::new() }
    }
}

/// Everything one cell needs to run, self-contained (it travels to Ray workers as JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellJob {
    pub sweep_id: String,
    pub cell: u64,
    pub cells_total: u64,
    pub traffic_pct: f64,
    pub lengths: Dist,
    pub service: String,
    pub packets: u64,
    pub seed: u64,
    pub replication: u32,
    /// Strategy names as written in the spec (parsed again where the cell runs).
    pub strategies: Vec<String>,
    pub options: Options,
}

impl CellJob {
    /// A short stable description of the cell's parameters (used in messages and the journal).
    pub fn key(&self) -> String {
        format!(
            "traffic={} lengths={} service={} packets={} seed={}",
            self.traffic_pct, self.lengths.name, self.service, self.packets, self.seed
        )
    }
}

/// A validated sweep: its cells in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub name: String,
    /// Fingerprint of everything that determines the results (hex): parts of one sweep share it.
    pub sweep_id: String,
    pub cells: Vec<CellJob>,
}

/// The service models this build's simulator has.
pub const SERVICE_MODELS: [&str; 1] = ["report"];

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<String>,
    traffic: Option<Vec<f64>>,
    strategies: Option<Vec<toml::Value>>,
    lengths: Option<Vec<String>>,
    service: Option<Vec<String>>,
    packets: Option<toml::Value>,
    seeds: Option<Vec<i64>>,
    replications: Option<i64>,
    seed: Option<i64>,
    options: Option<RawOptions>,
    #[serde(default)]
    distributions: BTreeMap<String, RawDist>,
    #[serde(default)]
    grid: Vec<RawGrid>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct RawOptions {
    queue_delay_tu: Option<f64>,
    batches: Option<i64>,
    apps: Option<i64>,
    closed: Option<i64>,
    in_order: Option<bool>,
    msg_alpha: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawDist {
    ranges: Option<Vec<(i64, i64, f64)>>,
    file: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct RawGrid {
    traffic: Option<Vec<f64>>,
    lengths: Option<Vec<String>>,
    service: Option<Vec<String>>,
    packets: Option<toml::Value>,
}

/// Parses counts like `100000`, `50k`, `"20M"`, `1e8` (a TOML integer, float or string).
fn count(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 1 => Ok(*i as u64),
        toml::Value::Integer(i) => Err(format!("{i} must be >= 1")),
        toml::Value::Float(f) => parse_count(&f.to_string()).map_err(|e| e.to_string()),
        toml::Value::String(s) => parse_count(s).map_err(|e| e.to_string()),
        other => Err(format!("a {} is not a count (e.g. 1000000, \"10M\", 1e7)", other.type_str())),
    }
}

fn counts(v: &toml::Value) -> Result<Vec<u64>, String> {
    match v {
        toml::Value::Array(a) => a.iter().map(count).collect(),
        one => Ok(vec![count(one)?]),
    }
}

/// FNV-1a, 64 bits: a stable fingerprint (not a security hash).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Sweep {
    /// Parses and validates a spec. `file` names it in messages; `base` is the folder that
    /// relative distribution files are read from.
    pub fn parse(text: &str, file: &str, base: &Path) -> Result<Sweep, SpecError> {
        Sweep::parse_with(text, file, &|f: &str| LengthDist::from_file(&base.join(f)))
    }

    /// [`Sweep::parse`] with the distribution files (`file = "PATH"`) given by `dist_file` instead
    /// of read from disk (for fuzzing and tests).
    pub fn parse_with(
        text: &str,
        file: &str,
        dist_file: &dyn Fn(&str) -> Result<LengthDist, schedlab_sim::model::ModelError>,
    ) -> Result<Sweep, SpecError> {
        let raw: RawSpec = toml::from_str(text).map_err(|e| SpecError::Toml { file: file.into(), msg: e.to_string() })?;
        let key = |k: &str, msg: String| SpecError::Key { file: file.into(), key: k.into(), msg };

        // Strategies: strings or numbers, each parsed by the simulator's own vocabulary.
        let strategies: Vec<String> = match &raw.strategies {
            None => report_defaults().iter().map(Strategy::label).collect(),
            Some(v) if v.is_empty() => return Err(key("strategies", "empty list: name at least one strategy".into())),
            Some(v) => v
                .iter()
                .map(|x| match x {
                    toml::Value::String(s) => Ok(s.clone()),
                    toml::Value::Integer(i) => Ok(i.to_string()),
                    toml::Value::Float(f) => Ok(f.to_string()),
                    other => Err(key("strategies", format!("a {} is neither a name nor a number", other.type_str()))),
                })
                .collect::<Result<_, _>>()?,
        };
        let mut labels = BTreeSet::new();
        for s in &strategies {
            let st = parse_strategy(s).map_err(|e| key("strategies", e.to_string()))?;
            if !labels.insert(st.label()) {
                return Err(key("strategies", format!("'{s}' is listed twice")));
            }
        }

        // Fixed options.
        let ro = raw.options.unwrap_or_default();
        let mut options = Options::default();
        if let Some(q) = ro.queue_delay_tu {
            if !(q.is_finite() && q > 0.0) {
                return Err(key("options.queue_delay_tu", format!("{q} must be a positive number of time units")));
            }
            options.queue_delay_tu = q;
        }
        if let Some(b) = ro.batches {
            if !(2..=100_000).contains(&b) {
                return Err(key("options.batches", format!("{b}: need 2..=100000 batches for a confidence interval")));
            }
            options.batches = b as u32;
        }
        if let (Some(_), Some(_)) = (ro.apps, ro.closed) {
            return Err(key("options.closed", "conflicts with options.apps: closed = N already sets N applications".into()));
        }
        if let Some(a) = ro.apps {
            if !(1..=1_000_000).contains(&a) {
                return Err(key("options.apps", format!("{a}: need 1..=1000000 applications")));
            }
            options.apps = a as u32;
        }
        if let Some(c) = ro.closed {
            if !(1..=1_000_000).contains(&c) {
                return Err(key("options.closed", format!("{c}: need 1..=1000000 closed-loop applications")));
            }
            options.closed = c as u32;
            options.apps = c as u32;
        }
        options.in_order = ro.in_order.unwrap_or(false);
        if let Some(m) = &ro.msg_alpha {
            let classes: Vec<AlphaClass> = parse_alpha_classes(m).map_err(|e| key("options.msg_alpha", e.to_string()))?;
            options.msg_alpha = classes.iter().map(|c| (c.alpha, c.frac * 100.0)).collect();
        }
        let has_prio = labels.contains("prio");
        if has_prio && options.msg_alpha.is_empty() {
            return Err(key("strategies", "'prio' needs options.msg_alpha = \"ALPHA:PERCENT,...\"".into()));
        }
        if !has_prio && !options.msg_alpha.is_empty() {
            return Err(key("options.msg_alpha", "is only used by the 'prio' strategy: add \"prio\" to strategies".into()));
        }

        // Distributions: the built-in "report" plus the spec's own.
        let mut dists: BTreeMap<String, Dist> = BTreeMap::new();
        let report = LengthDist::report_default();
        dists.insert(
            "report".into(),
            Dist {
                name: "report".into(),
                ranges: report.ranges.iter().map(|r| (r.low, r.high, r.frac * 100.0)).collect(),
                workload: None,
            },
        );
        for (name, d) in &raw.distributions {
            let k = format!("distributions.{name}");
            if name == "report" {
                return Err(key(&k, "'report' is the built-in distribution (90% 1..5, 10% 20): pick another name".into()));
            }
            let ld = match (&d.ranges, &d.file) {
                (Some(_), Some(_)) => return Err(key(&k, "give either ranges or file, not both".into())),
                (None, None) => return Err(key(&k, "needs ranges = [[LOW, HIGH, PERCENT], ...] or file = \"PATH\"".into())),
                (Some(r), None) => LengthDist::new(r).map_err(|e| key(&format!("{k}.ranges"), e.to_string()))?,
                (None, Some(f)) => dist_file(f).map_err(|e| key(&format!("{k}.file"), e.to_string()))?,
            };
            dists.insert(
                name.clone(),
                Dist {
                    name: name.clone(),
                    ranges: ld.ranges.iter().map(|r| (r.low, r.high, r.frac * 100.0)).collect(),
                    workload: None,
                },
            );
        }

        // Seeds or replications.
        let seeds: Vec<u64> = match (&raw.seeds, raw.replications, raw.seed) {
            (Some(_), Some(_), _) => {
                return Err(key("replications", "conflicts with seeds: give a seed list or a replication count".into()))
            }
            (Some(_), None, Some(_)) => {
                return Err(key("seed", "conflicts with seeds: 'seed' is the first seed of 'replications'".into()))
            }
            (Some(s), None, None) => {
                if s.is_empty() {
                    return Err(key("seeds", "empty list: the grid would have no cells".into()));
                }
                let mut seen = BTreeSet::new();
                for &x in s {
                    if x < 0 {
                        return Err(key("seeds", format!("{x}: seeds are >= 0")));
                    }
                    if !seen.insert(x) {
                        return Err(key("seeds", format!("{x} is listed twice")));
                    }
                }
                s.iter().map(|&x| x as u64).collect()
            }
            (None, r, s) => {
                let r = r.unwrap_or(1);
                if !(1..=1_000_000).contains(&r) {
                    return Err(key("replications", format!("{r}: need 1..=1000000 replications")));
                }
                let s = s.unwrap_or(1);
                if s < 0 {
                    return Err(key("seed", format!("{s}: seeds are >= 0")));
                }
                (0..r as u64).map(|i| s as u64 + i).collect()
            }
        };

        // Grid blocks: the top level alone, or each [[grid]] over the top level's defaults.
        let top = RawGrid { traffic: raw.traffic, lengths: raw.lengths, service: raw.service, packets: raw.packets };
        let blocks: Vec<(String, RawGrid)> = if raw.grid.is_empty() {
            vec![(String::new(), top)]
        } else {
            raw.grid
                .into_iter()
                .enumerate()
                .map(|(i, g)| {
                    (
                        format!("grid[{i}]."),
                        RawGrid {
                            traffic: g.traffic.or_else(|| top.traffic.clone()),
                            lengths: g.lengths.or_else(|| top.lengths.clone()),
                            service: g.service.or_else(|| top.service.clone()),
                            packets: g.packets.or_else(|| top.packets.clone()),
                        },
                    )
                })
                .collect()
        };

        let mut cells = Vec::new();
        let mut seen = BTreeSet::new();
        for (prefix, g) in &blocks {
            let traffic = g.traffic.clone().ok_or_else(|| {
                key(&format!("{prefix}traffic"), "missing: list the traffic levels in percent, e.g. traffic = [50, 90]".into())
            })?;
            if traffic.is_empty() {
                return Err(key(&format!("{prefix}traffic"), "empty list: the grid would have no cells".into()));
            }
            for &t in &traffic {
                check_traffic(t).map_err(|e| key(&format!("{prefix}traffic"), e.to_string()))?;
            }
            let lengths = g.lengths.clone().unwrap_or_else(|| {
                // Default: every distribution the spec defines, or the report's when it defines none.
                if raw.distributions.is_empty() {
                    vec!["report".into()]
                } else {
                    raw.distributions.keys().cloned().collect()
                }
            });
            if lengths.is_empty() {
                return Err(key(&format!("{prefix}lengths"), "empty list: the grid would have no cells".into()));
            }
            for l in &lengths {
                if !dists.contains_key(l) && schedlab_workload_name(l) {
                    workload_dist(l).map_err(|e| key(&format!("{prefix}lengths"), e))?;
                    dists.insert(l.clone(), Dist { name: l.clone(), ranges: Vec::new(), workload: Some(l.clone()) });
                }
                if !dists.contains_key(l) {
                    let known: Vec<&str> = dists.keys().map(String::as_str).collect();
                    return Err(key(
                        &format!("{prefix}lengths"),
                        format!("unknown distribution '{l}': define [distributions.{l}] or use one of {known:?}"),
                    ));
                }
            }
            let service = g.service.clone().unwrap_or_else(|| vec!["report".into()]);
            if service.is_empty() {
                return Err(key(&format!("{prefix}service"), "empty list: the grid would have no cells".into()));
            }
            for s in &service {
                if !SERVICE_MODELS.contains(&s.as_str()) {
                    return Err(key(
                        &format!("{prefix}service"),
                        format!("unknown service model '{s}': this simulator has {SERVICE_MODELS:?} (0.5 + Exp(mean 0.5) time units per packet)"),
                    ));
                }
            }
            let packets = match &g.packets {
                None => {
                    return Err(key(
                        &format!("{prefix}packets"),
                        "missing: give arrival packets per cell, e.g. packets = \"10M\"".into(),
                    ))
                }
                Some(v) => counts(v).map_err(|e| key(&format!("{prefix}packets"), e))?,
            };
            if packets.is_empty() {
                return Err(key(&format!("{prefix}packets"), "empty list: the grid would have no cells".into()));
            }
            // Counted before any cell is made: a few lists (or `replications`) multiply to more
            // cells than memory holds long before any of them could run.
            let here = [traffic.len(), lengths.len(), service.len(), packets.len(), seeds.len()]
                .iter()
                .fold(1u64, |n, &k| n.saturating_mul(k as u64));
            let total = here.saturating_add(cells.len() as u64);
            if total > MAX_CELLS {
                return Err(key(
                    &format!("{prefix}traffic"),
                    format!(
                        "the grid has {total} cells ({} traffic x {} lengths x {} service x {} packets x {} seeds{}); \
                         at most {MAX_CELLS} in one sweep: split it into several specs",
                        traffic.len(),
                        lengths.len(),
                        service.len(),
                        packets.len(),
                        seeds.len(),
                        if cells.is_empty() { String::new() } else { format!(", plus {} in the blocks before", cells.len()) }
                    ),
                ));
            }
            for &t in &traffic {
                for l in &lengths {
                    for s in &service {
                        for &p in &packets {
                            for (r, &seed) in seeds.iter().enumerate() {
                                let job = CellJob {
                                    sweep_id: String::new(),
                                    cell: cells.len() as u64,
                                    cells_total: 0,
                                    traffic_pct: t,
                                    lengths: dists[l].clone(),
                                    service: s.clone(),
                                    packets: p,
                                    seed,
                                    replication: r as u32,
                                    strategies: strategies.clone(),
                                    options: options.clone(),
                                };
                                if !seen.insert(job.key()) {
                                    return Err(key(
                                        &format!("{prefix}traffic"),
                                        format!("the cell {} appears twice in the grid", job.key()),
                                    ));
                                }
                                cells.push(job);
                            }
                        }
                    }
                }
            }
        }
        if cells.is_empty() {
            return Err(key("traffic", "the grid has no cells".into()));
        }
        // The fingerprint covers everything that determines results, and this build's version.
        let mut fp = String::from(crate::VERSION);
        for c in &cells {
            fp.push_str(&serde_json::to_string(c).expect("cells serialise"));
        }
        let sweep_id = format!("{:016x}", fnv1a(fp.as_bytes()));
        let total = cells.len() as u64;
        for c in &mut cells {
            c.sweep_id = sweep_id.clone();
            c.cells_total = total;
        }
        Ok(Sweep { name: raw.name.unwrap_or_else(|| "sweep".into()), sweep_id, cells })
    }

    /// Reads and parses a spec file.
    pub fn from_file(path: &Path) -> Result<Sweep, SpecError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| SpecError::Toml { file: file.clone(), msg: format!("cannot read: {e}") })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Sweep::parse(&text, &file, base)
    }

    /// The cells of shard `i` of `n` (1-based): every n-th cell, so each shard gets a mix of loads.
    pub fn shard(&self, i: u32, n: u32) -> Vec<&CellJob> {
        self.cells.iter().filter(|c| c.cell % u64::from(n) == u64::from(i - 1)).collect()
    }
}

/// Parses `--shard I/N` (1 <= I <= N).
pub fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let (i, n) = s.split_once('/').ok_or_else(|| format!("--shard '{s}': expected I/N, e.g. 2/8"))?;
    let i: u32 = i.trim().parse().map_err(|_| format!("--shard '{s}': I is not a whole number"))?;
    let n: u32 = n.trim().parse().map_err(|_| format!("--shard '{s}': N is not a whole number"))?;
    if n == 0 || i == 0 || i > n {
        return Err(format!("--shard '{s}': need 1 <= I <= N (shards count from 1)"));
    }
    Ok((i, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Sweep, SpecError> {
        Sweep::parse(t, "spec.toml", Path::new("."))
    }
    fn err(t: &str) -> String {
        parse(t).unwrap_err().to_string()
    }

    /// Named workloads are lengths of their own: `NAME[:READING[:BYTES_PER_PACKET]]`, carried
    /// to the cell by name and rebuilt where it runs; bad readings name the key.
    #[test]
    fn named_workloads_are_lengths() {
        let s = parse("traffic = [50]\npackets = 1000\nlengths = [\"w3\", \"w4:interp\", \"w2:step:1442\"]\n").unwrap();
        let names: Vec<&str> = s.cells.iter().map(|c| c.lengths.name.as_str()).collect();
        assert_eq!(names, ["w3", "w4:interp", "w2:step:1442"]);
        let d = s.cells[1].lengths.to_length_dist().unwrap();
        let w = d.workload.as_ref().unwrap();
        assert_eq!((w.name.as_str(), w.reading.as_str(), w.bytes_per_packet), ("w4", "interp", Some(1460)));
        assert_eq!(s.cells[2].lengths.to_length_dist().unwrap().workload.unwrap().bytes_per_packet, Some(1442));
        assert!(err("traffic = [50]\npackets = 1\nlengths = [\"w4:smooth\"]\n").contains("key 'lengths'"));
        assert!(err("traffic = [50]\npackets = 1\nlengths = [\"w9\"]\n").contains("unknown distribution 'w9'"));
        // A negative or huge bytes per packet is out of range, not "not a whole number".
        for bad in ["w3:step:-1", "w3:step:99999999999999999999", "w3:step:0"] {
            let e = err(&format!("traffic = [50]\npackets = 1\nlengths = [\"{bad}\"]\n"));
            assert!(e.contains("key 'lengths'") && e.contains("between 1 and 1000000"), "{bad}: {e}");
        }
        // A bytes per packet for a table in packets is refused with the value and the workload,
        // not ignored (it would run as plain "w5" under the name "w5:step:1442").
        for (bad, name) in [("w5:step:1442", "w5"), ("pfabric-websearch::1460", "pfabric-websearch")] {
            let e = err(&format!("traffic = [50]\npackets = 1\nlengths = [\"{bad}\"]\n"));
            assert!(e.contains("key 'lengths'") && e.contains(&format!("'{bad}'")), "{bad}: {e}");
            assert!(e.contains(&format!("{name} is measured in packets")) && e.contains("does not apply: drop it"), "{bad}: {e}");
            assert!(!e.contains("--bytes-per-packet"), "{bad}: a spec has no flags: {e}");
        }
        assert!(err("traffic = [50]\npackets = 1\nlengths = [\"w5:step:1442\"]\n").contains("bytes per packet 1442"));
        let s = parse("traffic = [50]\npackets = 1000\nlengths = [\"w5:interp\"]\n").unwrap();
        assert_eq!(s.cells[0].lengths.to_length_dist().unwrap().workload.unwrap().bytes_per_packet, None);
    }

    /// A short spec can describe more cells than memory holds: refused before any is made.
    #[test]
    fn a_grid_of_too_many_cells_is_refused() {
        let traffic: Vec<String> = (1..=99).map(|t| t.to_string()).collect();
        let spec = |reps: u32| format!("traffic = [{}]\npackets = 1000\nreplications = {reps}\n", traffic.join(", "));
        let refused = |reps: u32| match parse(&spec(reps)) {
            Ok(s) => panic!("{reps} replications: {} cells accepted", s.cells.len()),
            Err(e) => e.to_string(),
        };
        let e = refused(1_000_000);
        assert!(e.contains("key 'traffic'") && e.contains("99000000 cells") && e.contains("at most 1000000"), "{e}");
        // 99 x 10102 = 1000098, just over.
        assert!(refused(10_102).contains("1000098 cells"));
        assert_eq!(parse(&spec(100)).map(|s| s.cells.len()).ok(), Some(9_900));
    }

    #[test]
    fn a_small_grid_expands_in_order() {
        let s = parse("traffic = [50, 90]\nstrategies = [\"RR\", 10, \"SF\"]\npackets = \"10k\"\nreplications = 2\nseed = 7\n")
            .unwrap();
        assert_eq!(s.cells.len(), 4);
        let keys: Vec<(f64, u64)> = s.cells.iter().map(|c| (c.traffic_pct, c.seed)).collect();
        assert_eq!(keys, vec![(50.0, 7), (50.0, 8), (90.0, 7), (90.0, 8)]);
        assert_eq!(s.cells[0].strategies, vec!["RR", "10", "SF"]);
        assert_eq!(s.cells[3].cells_total, 4);
        assert_eq!(s.cells[0].packets, 10_000);
        assert_eq!(s.cells[0].lengths.name, "report");
    }

    #[test]
    fn the_fingerprint_follows_the_parameters() {
        let a = parse("traffic = [50]\npackets = 1000\n").unwrap();
        let b = parse("traffic = [50]\npackets = 1000\n# a comment\n").unwrap();
        let c = parse("traffic = [50]\npackets = 1001\n").unwrap();
        assert_eq!(a.sweep_id, b.sweep_id);
        assert_ne!(a.sweep_id, c.sweep_id);
    }

    #[test]
    fn grid_blocks_concatenate() {
        let s = parse("packets = 1000\nseeds = [1]\n[[grid]]\ntraffic = [1, 50]\n[[grid]]\ntraffic = [95]\npackets = \"2k\"\n")
            .unwrap();
        let v: Vec<(f64, u64)> = s.cells.iter().map(|c| (c.traffic_pct, c.packets)).collect();
        assert_eq!(v, vec![(1.0, 1000), (50.0, 1000), (95.0, 2000)]);
    }

    #[test]
    fn errors_name_the_key() {
        assert!(err("trafic = [50]\npackets = 1\n").contains("unknown field `trafic`"));
        assert!(err("traffic = []\npackets = 1\n").contains("key 'traffic': empty list"));
        assert!(err("packets = 1\n").contains("key 'traffic': missing"));
        assert!(err("traffic = [50]\n").contains("key 'packets': missing"));
        assert!(err("traffic = [150]\npackets = 1\n").contains("key 'traffic'"));
        assert!(err("traffic = [50]\npackets = 1\nseeds = [1]\nreplications = 2\n").contains("key 'replications': conflicts"));
        assert!(err("traffic = [50]\npackets = 1\nstrategies = [\"bogus\"]\n").contains("key 'strategies'"));
        assert!(err("traffic = [50]\npackets = 1\nstrategies = [\"prio\"]\n").contains("options.msg_alpha"));
        assert!(err("traffic = [50]\npackets = 1\nlengths = [\"x\"]\n").contains("unknown distribution 'x'"));
        assert!(err("traffic = [50]\npackets = 1\nservice = [\"fast\"]\n").contains("key 'service'"));
        assert!(err("traffic = [50]\npackets = \"lots\"\n").contains("key 'packets'"));
        assert!(err("traffic = [50, 50]\npackets = 1\n").contains("appears twice"));
        assert!(err("traffic = [50]\npackets = 1\n[options]\napps = 2\nclosed = 3\n").contains("options.closed"));
        assert!(err("traffic = [50]\npackets = 1\n[options]\nbogus = 1\n").contains("unknown field `bogus`"));
        assert!(err("traffic = [50]\npackets = 1\n[distributions.d]\nfile = \"/nonexistent/d.txt\"\n")
            .contains("key 'distributions.d.file': cannot read /nonexistent/d.txt"));
        assert!(err("traffic = [50]\npackets = 1\n[distributions.d]\nranges = [[1, 5, 50]]\n").contains("distributions.d.ranges"));
        assert!(err("traffic = [50]\npackets = 1\n[[grid]]\ntraffic = []\n").contains("key 'grid[0].traffic'"));
    }

    #[test]
    fn distributions_inline_and_by_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.txt"), "# low high pct\n1 1 50\n100 100 50\n").unwrap();
        let t = "traffic = [50]\npackets = 1\n[distributions.bi]\nranges = [[1, 2, 60], [8, 8, 40]]\n[distributions.f]\nfile = \"d.txt\"\n";
        let s = Sweep::parse(t, "s.toml", dir.path()).unwrap();
        let names: Vec<&str> = s.cells.iter().map(|c| c.lengths.name.as_str()).collect();
        assert_eq!(names, vec!["bi", "f"]);
        assert_eq!(s.cells[1].lengths.ranges, vec![(1, 1, 50.0), (100, 100, 50.0)]);
    }

    #[test]
    fn shards_partition_the_cells() {
        let s = parse("traffic = [10, 20, 30, 40, 50]\npackets = 1\nreplications = 3\n").unwrap();
        let mut all: Vec<u64> = (1..=4).flat_map(|i| s.shard(i, 4).into_iter().map(|c| c.cell)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..15).collect::<Vec<_>>());
        assert_eq!(parse_shard("2/8"), Ok((2, 8)));
        assert!(parse_shard("0/8").is_err());
        assert!(parse_shard("9/8").is_err());
        assert!(parse_shard("x").is_err());
    }
}
