//! `schedlab trylock --json`: what a try-lock costs, busy and free, per worker and in all.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::prims::{ClockInfo, Context, ThreadGot};
use crate::disturb::Disturbance;
use crate::hist::Summary;
use crate::machine::MachineInfo;

super::schema_tag!(
    /// `"schedlab.trylock/1"`.
    TrylockSchema,
    "schedlab.trylock",
    1
);

/// One `trylock` run and what it ran on.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trylock {
    pub schema: TrylockSchema,
    /// `trylock`.
    pub command: String,
    /// The command line as it was run.
    pub argv: Vec<String>,
    pub machine: MachineInfo,
    pub clock: ClockInfo,
    /// Requests that were not granted (the run was made anyway because of --allow-degraded).
    pub degraded: Vec<String>,
    pub run: TrylockRun,
}

impl Trylock {
    pub fn new(ctx: Context, run: TrylockRun) -> Trylock {
        let Context { argv, machine, clock, degraded } = ctx;
        Trylock { schema: TrylockSchema, command: "trylock".into(), argv, machine, clock, degraded, run }
    }
}

impl super::Kind for Trylock {
    const NAME: &'static str = TrylockSchema::NAME;
    const VERSION: u32 = TrylockSchema::VERSION;
    const FILE: &'static str = "trylock.schema.json";
}

/// What was run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrylockConfig {
    /// `busy` (test A), `free` (test B) or `pingpong`.
    pub test: String,
    /// The lock: `sem`, `mutex`, `spinlock`, `futex`, `tas`, `ttas` or `ticket`.
    pub lock: String,
    pub threads: usize,
    /// Operations (tries, or hand-overs in ping-pong) per thread.
    pub ops_per_thread: u64,
    /// CPU of the thread that allocates and first touches the lock (`-x`).
    pub alloc_cpu: Option<usize>,
    /// CPU for each worker (null = not pinned).
    pub worker_cpus: Vec<Option<usize>>,
    /// Busy samples kept per thread for `-o`.
    pub ring: usize,
    pub allow_degraded: bool,
    /// Test B: which thread held the lock before each free try was recorded.
    pub track_handover: bool,
    /// How the loops call the lock: `direct` or `trait-object`.
    pub dispatch: String,
}

/// One worker's figures. Costs are in nanoseconds and include one clock read.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrylockWorker {
    pub index: usize,
    /// CPU the worker was running on when it finished.
    pub cpu_at_end: i32,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub duration_s: f64,
    /// CPU time the worker's thread got during the loop.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub cpu_s: f64,
    /// Test A: CPU time per try, ns.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub busy_ns_per_try_cpu: f64,
    pub busy_samples: u64,
    pub free_samples: u64,
    pub post_samples: u64,
    /// Tries per second (test A).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub rate_ops_per_s: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub busy_avg_ns: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub free_avg_ns: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub post_avg_ns: f64,
    pub busy_ns: Summary,
    pub free_ns: Summary,
    pub post_ns: Summary,
    /// Free tries that took the lock just released by another thread.
    pub free_handover_samples: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub free_handover_avg_ns: f64,
    pub free_handover_ns: Summary,
    /// What disturbed the worker during its loop.
    pub disturbance: Option<Disturbance>,
}

/// Every worker's samples together, ns (each sample includes one clock read).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrylockAll {
    pub busy_ns: Summary,
    pub free_ns: Summary,
    pub post_ns: Summary,
    /// Free tries that took a lock another thread had just released.
    pub free_handover_ns: Summary,
}

/// A whole run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrylockRun {
    pub config: TrylockConfig,
    /// CPU the lock was allocated on (read back), if `-x` was given.
    pub alloc_cpu_got: Option<i32>,
    pub threads: Vec<ThreadGot>,
    pub workers: Vec<TrylockWorker>,
    /// All workers' samples together (test B and ping-pong).
    pub all: TrylockAll,
    pub interrupted: bool,
}
