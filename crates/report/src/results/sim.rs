//! `schedlab sim --json`: every traffic level's runs (the report's tables), their statistics, and
//! with replications every replication's runs.
//!
//! Time is in time units (`_tu`: the mean packet service time), queue lengths in packets
//! (`_pkts`). Floats that may be NaN (an empty sample, too few batches, the run-level figures of a
//! closed loop) are written as `null`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::machine::MachineInfo;

super::schema_tag!(
    /// `"schedlab.sim/1"`.
    SimSchema,
    "schedlab.sim",
    1
);

/// What `time_unit` says: the unit of every `_tu` field.
pub const TIME_UNIT: &str = "mean packet service time (tu)";

/// One `schedlab sim` run: every traffic level.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sim {
    pub schema: SimSchema,
    /// `sim`.
    pub command: String,
    /// The command line as it was run (the binary's path first).
    pub argv: Vec<String>,
    /// The first replication's seed.
    pub seed: u64,
    /// The unit of every `_tu` field ([`TIME_UNIT`]).
    pub time_unit: String,
    /// The packet service-time model: `report`, `det` or `exp`.
    pub service: String,
    /// The machine the simulation ran on.
    pub machine: MachineInfo,
    /// The message-length distribution the arrivals drew from.
    pub length_distribution: LengthDistribution,
    /// One per traffic level: the one run, or with replications the replications' means.
    pub runs: Vec<Run>,
    /// One per traffic level: confidence intervals, comparison, diagnostics, theory.
    pub statistics: Vec<LevelStatistics>,
    /// Every level's warnings.
    pub warnings: Vec<String>,
    /// With more than one replication: each replication's seed and runs (one per level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replications: Option<Vec<Replication>>,
}

impl super::Kind for Sim {
    const NAME: &'static str = SimSchema::NAME;
    const VERSION: u32 = SimSchema::VERSION;
    const FILE: &'static str = "sim.schema.json";
    fn check_more(&self) -> Result<(), String> {
        if self.command != "sim" {
            return Err(format!("`command` is {:?}, not \"sim\"", self.command));
        }
        if self.runs.len() != self.statistics.len() {
            return Err(format!("{} runs but {} levels of statistics", self.runs.len(), self.statistics.len()));
        }
        if let Some(reps) = &self.replications {
            if let Some((i, r)) = reps.iter().enumerate().find(|(_, r)| r.runs.len() != self.runs.len()) {
                return Err(format!("replication {i} has {} runs, the result {} levels", r.runs.len(), self.runs.len()));
            }
        }
        Ok(())
    }
}

/// A mixture of uniform integer length ranges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LengthDistribution {
    pub ranges: Vec<LengthRange>,
    /// The named workload (`--workload`) the ranges were read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<super::workload::Workload>,
}

/// Lengths `low..=high` packets, uniform, with probability `frac`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LengthRange {
    pub low: u32,
    pub high: u32,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub frac: f64,
}

/// One replication's seed and its runs, one per traffic level.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Replication {
    pub seed: u64,
    pub runs: Vec<Run>,
}

/// One run: one traffic level, every strategy.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Offered load, percent of the link.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub traffic_pct: f64,
    pub seed: u64,
    /// Arrival packets.
    pub packets_in: u64,
    /// Simulated time (null in closed loop: each strategy has its own).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub sim_time_tu: f64,
    /// Mean queue length (null in closed loop).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub qlen_pkts: f64,
    /// Half-width of its 95% confidence interval, batch means (null in closed loop).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub qlen_ci95_pkts: f64,
    /// One per strategy, in the order asked for.
    pub strategies: Vec<StrategyRun>,
    /// The listing's `>>` blocks: cumulative state at its report times.
    pub checkpoints: Vec<Checkpoint>,
    /// Ctrl-C stopped the run: the figures cover what ran.
    pub interrupted: bool,
    /// Closed loop (§2): the number of applications; null in open loop.
    pub closed_apps: Option<u32>,
    /// Applications messages are spread over.
    pub apps: u32,
    /// §11 in-order delivery was asked for.
    pub in_order: bool,
    /// The named workload the lengths came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<super::workload::Workload>,
}

/// One strategy's results in one run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrategyRun {
    /// The strategy's row label (`FIFO`, `RR`, `10`, `SF`, ...).
    pub label: String,
    /// The report listing's alpha code of the strategy.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub listing_alpha: f64,
    /// Per message length present (or per size bucket), in length order.
    pub by_len: Vec<Latency>,
    /// All messages together (`avlat`; `len` 0).
    pub overall: Latency,
    /// Per §10 α class (empty unless `--msg-alpha`).
    pub by_class: Vec<Latency>,
    /// Messages delivered after a later message of the same application (§11).
    pub reordered: u64,
    /// Packets released.
    pub packets_out: u64,
    /// Mean queue length.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub qlen_pkts: f64,
    /// §12 effective packet period (latency + 1) / length, the least over lengths, time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub period_min: f64,
    /// The same, the largest over lengths.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub period_max: f64,
    /// Renormalisations of the alpha clock (0 for other strategies).
    pub clock_renormalisations: u64,
    /// Per (§10 class, length) latency (empty unless `--msg-alpha`).
    pub by_class_len: Vec<ClassLength>,
    /// §13: the α a tracking strategy chose; null for the others.
    pub alpha_chosen: Option<AlphaChosen>,
    /// §11 in-order delivery applies to this strategy.
    pub in_order_applies: bool,
    /// This strategy's sample path: arrival packets.
    pub packets_in: u64,
    /// Its simulated time.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub sim_time_tu: f64,
    /// Half-width of the 95% confidence interval of its queue length.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub qlen_ci95_pkts: f64,
    /// Offered load, a fraction of the link (traffic / 100; closed loop: at zero queueing delay).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub offered_load: f64,
    /// Carried load: packets sent per time unit.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub carried_load: f64,
}

/// Latency of a population of messages (one length, one size bucket, one class, or all).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// Message length, packets (0: all messages); for a size bucket, its largest length.
    pub len: u32,
    /// The size bucket, when statistics are kept per bucket (a named workload, many lengths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Bucket>,
    /// Messages delivered.
    pub count: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_tu: f64,
    /// Half-width of the mean's 95% confidence interval, batch means.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub ci95_tu: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p50_tu: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p99_tu: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub max_tu: f64,
    /// Mean slowdown: (latency + 1) / length (null where not kept).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub slowdown_mean: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub slowdown_p50: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub slowdown_p99: f64,
}

/// A size bucket: lengths `low..=high` packets, between the `pct_low` and `pct_high` size
/// percentiles (fractions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    pub low: u32,
    pub high: u32,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub pct_low: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub pct_high: f64,
}

/// Mean latency of one §10 α class and one length.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassLength {
    /// Class index, in `--msg-alpha` order.
    pub class: u32,
    /// The class's α.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub alpha: f64,
    /// Message length, packets.
    pub len: u32,
    pub count: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_tu: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub ci95_tu: f64,
}

/// The α a tracking strategy used, one sample per packet start.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlphaChosen {
    pub samples: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p10: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p50: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p90: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub min: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub max: f64,
}

/// One strategy's row of a `>>` block: listing α, queue length (packets), packets out, per-length
/// mean latencies in length order (time units), avlat (time units); null for NaN.
pub type CheckpointRow = (Option<f64>, Option<f64>, u64, Vec<Option<f64>>, Option<f64>);

/// One `>>` block of the listing: cumulative state at a report time.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub time_tu: f64,
    pub packets_in: u64,
    /// One row per strategy.
    pub rows: Vec<CheckpointRow>,
    /// Closed loop: arrival packets of each row's own sample path (absent: `packets_in` for all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub row_packets_in: Vec<u64>,
}

/// The statistics of one traffic level.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LevelStatistics {
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub traffic_pct: f64,
    pub replications: usize,
    pub seeds: Vec<u64>,
    /// How `ci95` was computed.
    pub method: String,
    pub warmup: Warmup,
    pub diagnostics: Diagnostics,
    /// The queue length's cell (packets).
    pub qlen: Cell,
    /// Per strategy, its mean-latency cells (time units).
    pub strategies: Vec<StrategyCells>,
    /// Queueing theory's values, where the model has closed forms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theory: Option<Theory>,
    /// `--compare BASE`: each strategy's paired difference from BASE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    pub warnings: Vec<String>,
}

/// One cell: the queue length (packets), or a strategy's mean latency for a length (time
/// units; `len` 0 = all messages).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    pub len: u32,
    /// Steady-state estimate (over replications: the mean of theirs).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean: f64,
    /// 95% half-width: batch means (one replication) or Student t across replications.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub ci95: f64,
    /// Each replication's estimate, in seed order (null where the length did not occur).
    pub per_replication: Vec<Option<f64>>,
    /// Queueing theory's value, when the model has a closed form for this cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analytic: Option<f64>,
    /// The simulated value differs from `analytic` by more than `ci95`; absent (undetermined)
    /// when there is no analytic value or no half-width to judge by (too few batches or messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flagged: Option<bool>,
}

/// A strategy's cells.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrategyCells {
    pub label: String,
    pub cells: Vec<Cell>,
}

/// The warm-up deleted from the steady-state statistics.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Warmup {
    /// `none`, `packets` or `MSER on the queue-length batch means`.
    pub rule: String,
    /// Per replication: batches deleted.
    pub batches_deleted: Vec<usize>,
    /// Per replication: the arrival packets they held.
    pub packets_deleted: Vec<u64>,
}

/// Batch-means diagnostics.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Diagnostics {
    /// Batches per replication.
    pub batches: u32,
    /// Arrival packets per batch.
    pub batch_packets: u64,
    /// Arrival packets per replication.
    pub packets: u64,
    /// Per replication, over the batches kept after the warm-up (null: too few).
    pub qlen_lag1_autocorrelation: Vec<Option<f64>>,
    /// Per strategy (label), per replication: lag-1 autocorrelation of the avlat batch means.
    pub avlat_lag1_autocorrelation: Vec<(String, Vec<Option<f64>>)>,
    /// M^X/G/1 relaxation time (Poisson arrivals only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relaxation_time_tu: Option<f64>,
    /// Arrival packets a run of this load needs (Poisson arrivals only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_needed: Option<f64>,
}

/// Queueing theory's closed forms for the level.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Theory {
    /// The model (`M^X/G/1 ...`).
    pub model: String,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub rho: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_len_pkts: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_sq_len_pkts: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_service_tu: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_sq_service_tu: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub qlen_pkts: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub fifo_first_packet_wait_tu: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub fifo_avlat_tu: f64,
    /// RR's mean wait for a message's first packet (null when the run has no RR strategy: its
    /// solver is not run).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub rr_first_packet_wait_tu: f64,
    /// Mean latency over all messages under RR by the closed form (null without RR, as above).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub rr_avlat_tu: f64,
    /// The same under SF.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub sf_avlat_tu: f64,
}

/// `--compare BASE`: paired differences of mean latency from BASE.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    /// BASE's label.
    pub base: String,
    pub method: String,
    pub rows: Vec<DiffRow>,
}

/// One strategy and length against BASE.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffRow {
    pub strategy: String,
    /// Message length, packets (0: all messages).
    pub len: u32,
    /// Mean latency minus BASE's.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub diff_tu: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub ci95_tu: f64,
    /// `diff_tu` over BASE's mean latency.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub relative: f64,
    /// `lower`, `higher` or `no difference`.
    pub verdict: String,
    /// Each replication's difference, in seed order (null where the length did not occur).
    pub per_replication: Vec<Option<f64>>,
}
