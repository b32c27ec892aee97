//! `schedlab predict --json`: one workload on the real harness and through the simulator,
//! measured against predicted per message length, per policy.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::disturb::Disturbance;
use crate::machine::MachineInfo;

super::schema_tag!(
    /// `"schedlab.predict/1"`.
    PredictSchema,
    "schedlab.predict",
    1
);

/// The whole comparison: the workload, and one run per policy (and per `--repeat` run).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Predict {
    pub schema: PredictSchema,
    /// The machine the harness ran on.
    pub machine: MachineInfo,
    /// The command line (program name first).
    pub command: Vec<String>,
    /// Seed of the workload (message lengths, Poisson gaps).
    pub seed: u64,
    /// Where the clients' traffic program came from (`-f FILE`, or the default).
    pub traffic: String,
    /// The named workloads (`dist:w3`) the traffic file draws from: name, reading, checksum,
    /// source and commit (empty for hand-written lengths).
    pub workloads: Vec<super::workload::Workload>,
    /// Client threads.
    pub threads: usize,
    /// Each client's ring, packets.
    pub queue_pkts: usize,
    /// The scheduler's poll interval (`-i`), ns.
    pub sched_poll_ns: u64,
    /// The clients' poll interval (`-c`), ns.
    pub client_poll_ns: u64,
    /// Silence appended to every client's program so queues empty, ns.
    pub drain_ns: u64,
    /// Runs per policy (`--repeat`).
    pub repeat: usize,
    /// One per policy and run, in the order they were made.
    pub runs: Vec<AlgRun>,
    /// Per policy over the `--repeat` runs (empty without `--repeat`).
    pub summaries: Vec<RepeatSummary>,
}

impl super::Kind for Predict {
    const NAME: &'static str = PredictSchema::NAME;
    const VERSION: u32 = PredictSchema::VERSION;
    const FILE: &'static str = "predict.schema.json";
}

/// One policy's run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlgRun {
    /// The policy's canonical name (`alpha:10`, `drr`).
    pub alg: String,
    /// Its row label (`10`, `DRR`).
    pub label: String,
    pub verdict: Verdict,
    /// Messages the clients generated.
    pub messages: usize,
    /// Messages whose every packet was released.
    pub delivered: usize,
    pub generated_bits: u64,
    /// What the traffic program asked for (rate × duration, summed), bits.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub nominal_offered_bits: f64,
    pub link_nominal_bps: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub link_achieved_bps: f64,
    /// The deterministic service time of one packet (packet bits / link rate), ns.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub service_ns: f64,
    /// Packets dropped at full client rings.
    pub ring_drops: u64,
    /// Packets still queued after the drain period.
    pub queued_at_stop_pkts: u64,
    /// Per message length, the last row for all lengths (`len_pkts` 0): measured and predicted,
    /// or measured only (`predicted` false: the predicted figures are null).
    pub rows: Vec<CompareRow>,
    /// The model's prediction was made (the harness kept up with the link).
    pub predicted: bool,
    /// The exact release-order check (null without the scheduler's trace).
    pub order_check: Option<OrderCheck>,
    /// Release lateness: the harness's `sch_deq` of a message's last packet minus the start of
    /// that packet in the link's own clock.
    pub release_lateness: Lat,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub elapsed_s: f64,
    /// 1-based run number under `--repeat` (1 without it).
    pub repeat_run: usize,
    /// Per measuring thread (scheduler, clients): switches, migrations, longest loop gap.
    pub disturbance: Vec<Disturbance>,
}

/// Whether the harness kept up with the link, and why not.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// The comparison stands: the harness kept up with the link and was not disturbed.
    pub kept_up: bool,
    /// It kept up with the link but was disturbed (late pickup, a stalled scheduler).
    pub disturbed: bool,
    pub reasons: Vec<String>,
}

/// Mean, median and 99th percentile of a latency, µs (null: no sample).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Lat {
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_us: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p50_us: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p99_us: f64,
}

/// Where the measured time went, mean µs per message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Breakdown {
    /// `sch_enq − cli_enq` of the first packet.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub ring_wait_us: f64,
    /// `sch_deq` of the last packet − `sch_enq` of the first.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub sched_queue_us: f64,
    /// `cli_deq − sch_deq` of the last packet.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub release_to_seen_us: f64,
}

/// One row of the comparison: one message length (0 = all lengths), or one size bucket.
///
/// Rule: with at most 64 distinct lengths among the compared messages there is one row per
/// length (`bucket` absent); with more (a named workload such as `dist:w3`), one row per size
/// bucket by the compared messages' own size percentiles (deciles, then 99% and 99.9%, as `sim`
/// buckets), `len_pkts` the bucket's longest length and `bucket` its range. The last row is all
/// messages together either way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareRow {
    /// The message length, packets; a bucket's longest length; 0 for all messages together.
    pub len_pkts: u32,
    /// The size bucket this row holds (absent for a single length and for all messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<LenBucket>,
    pub count: usize,
    /// Queueing latency (arrival to the release of the last packet) on the harness.
    pub measured: Lat,
    /// The same, from the simulator's replay of the recorded arrivals.
    pub predicted: Lat,
    /// measured mean / predicted mean (null when the prediction is 0 or absent).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub ratio_mean: f64,
    pub breakdown: Breakdown,
}

/// A size bucket of a comparison: lengths `low..=high` packets, holding the messages between the
/// `pct_low` and `pct_high` size percentiles (fractions of the compared messages with a shorter
/// length, and with one no longer).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LenBucket {
    pub low: u32,
    pub high: u32,
    pub pct_low: f64,
    pub pct_high: f64,
}

/// The harness's release sequence against the simulator's from the same arrivals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderCheck {
    /// Packets the harness released.
    pub harness_pkts: usize,
    /// Packets the simulator released (the harness may stop with packets still queued).
    pub simulator_pkts: usize,
    /// Position of the first difference among the first `harness_pkts` releases, if any.
    pub first_mismatch: Option<usize>,
}

impl OrderCheck {
    /// Every packet the harness released is the one the simulator releases at that position.
    pub fn identical(&self) -> bool {
        self.first_mismatch.is_none() && self.simulator_pkts >= self.harness_pkts
    }
}

/// A run `--repeat` set aside, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetAside {
    /// 1-based, in the order the runs were made.
    pub run: usize,
    pub reasons: Vec<String>,
}

/// Median, extremes and the largest deviation from the median, of the kept runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spread {
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub median: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub min: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub max: f64,
    /// max |x − median| / median, in percent.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub max_dev_pct: f64,
}

impl Spread {
    /// `None` for no finite value.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        let max_dev = v.iter().map(|x| (x - median).abs()).fold(0.0, f64::max);
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            max_dev_pct: if median != 0.0 { 100.0 * max_dev / median.abs() } else { f64::NAN },
        })
    }
}

/// One policy over its `--repeat` runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepeatSummary {
    pub alg: String,
    pub runs: usize,
    pub kept: usize,
    pub set_aside: Vec<SetAside>,
    /// Measured / predicted overall mean latency over the kept runs (null: none kept).
    pub ratio: Option<Spread>,
    pub measured_mean_us: Option<Spread>,
    pub predicted_mean_us: Option<Spread>,
    /// The kept runs' ratios, in run order.
    #[serde(deserialize_with = "nan_or_numbers")]
    #[schemars(with = "Vec<Option<f64>>")]
    pub kept_ratios: Vec<f64>,
}

/// A list of floats, each written as a number or (NaN, infinite) as `null`.
fn nan_or_numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    Ok(Vec::<Option<f64>>::deserialize(d)?.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
}
