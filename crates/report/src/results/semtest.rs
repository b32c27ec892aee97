//! `schedlab semtest --json`: round-trip or one-way latency of thread pairs (marco and polo).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::prims::{ClockInfo, Context, RtRequest, ThreadGot};
use crate::disturb::Disturbance;
use crate::hist::Summary;
use crate::machine::MachineInfo;

super::schema_tag!(
    /// `"schedlab.semtest/1"`.
    SemtestSchema,
    "schedlab.semtest",
    1
);

/// One `semtest` run and what it ran on.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Semtest {
    pub schema: SemtestSchema,
    /// `semtest`.
    pub command: String,
    /// The command line as it was run.
    pub argv: Vec<String>,
    pub machine: MachineInfo,
    pub clock: ClockInfo,
    /// Requests that were not granted (the run was made anyway because of --allow-degraded).
    pub degraded: Vec<String>,
    pub run: SemtestRun,
}

impl Semtest {
    pub fn new(ctx: Context, run: SemtestRun) -> Semtest {
        let Context { argv, machine, clock, degraded } = ctx;
        Semtest { schema: SemtestSchema, command: "semtest".into(), argv, machine, clock, degraded, run }
    }
}

impl super::Kind for Semtest {
    const NAME: &'static str = SemtestSchema::NAME;
    const VERSION: u32 = SemtestSchema::VERSION;
    const FILE: &'static str = "semtest.schema.json";
}

/// Where the two threads of each pair run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Marco of pair c on CPU c, polo on a random permutation of the CPUs (the original's `-a`).
    Permuted,
    /// Both threads of pair c on CPU c.
    SameCore,
    /// Marco of pair c on CPU c, polo on the next CPU.
    CrossCore,
    /// No pinning (the original's `-A`).
    Unpinned,
    /// Every pair's marco on the first CPU, polo on the second.
    Fixed(usize, usize),
}

/// What was run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemtestConfig {
    pub pairs: usize,
    pub iterations: u64,
    pub warmup: u64,
    /// What one sample measures: `roundtrip` or `oneway`.
    pub mode: String,
    /// `eventfd`, `pipe`, `futex`, `sem`, `condvar` or `unix`.
    pub primitive: String,
    pub placement: Placement,
    pub rt: Option<RtRequest>,
    pub interval_us: u64,
    pub mlockall: bool,
    pub allow_degraded: bool,
    /// Seed of the polo permutation (placement `permuted`).
    pub seed: u64,
    /// Stop after this long (`-D`), even before `iterations`.
    pub duration_ns: Option<u64>,
}

/// Result of asking for `mlockall(MCL_CURRENT | MCL_FUTURE)`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MlockResult {
    pub requested: bool,
    pub locked: bool,
    pub error: Option<String>,
}

/// One pair's figures, in microseconds.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemtestPair {
    pub index: usize,
    pub marco_cpu_requested: Option<usize>,
    pub polo_cpu_requested: Option<usize>,
    /// CPUs the threads ran on when they finished (read back).
    pub marco_cpu_at_end: i32,
    pub polo_cpu_at_end: i32,
    pub lat_us: Summary,
    /// What disturbed each thread of the pair.
    pub marco_disturbance: Disturbance,
    pub polo_disturbance: Disturbance,
}

/// Mean and median of per-pair values (the original's "usvg" and "middle").
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Global {
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub value_us: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub avg_us: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub middle_us: f64,
}

/// A whole run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemtestRun {
    pub config: SemtestConfig,
    pub mlock: MlockResult,
    pub threads: Vec<ThreadGot>,
    pub degraded: Vec<String>,
    pub pairs: Vec<SemtestPair>,
    /// Largest per-pair maximum, with the mean and median of the per-pair maxima.
    pub max_global: Global,
    /// Smallest per-pair minimum, with mean and median of the minima.
    pub min_global: Global,
    /// Every sample of every pair together.
    pub all_lat_us: Summary,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub duration_s: f64,
    pub interrupted: bool,
}
