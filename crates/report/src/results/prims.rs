//! What the `trylock`, `notify` and `semtest` results share: the sampling clock, the threads'
//! requests and what they got, and the fields around every run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::machine::{MachineInfo, ThreadInfo};

/// What a primitives result carries besides its run; each kind's `new` takes it.
#[derive(Clone, Debug)]
pub struct Context {
    /// The command line as it was run.
    pub argv: Vec<String>,
    pub machine: MachineInfo,
    pub clock: ClockInfo,
    /// Requests that were not granted (the run was made anyway because of --allow-degraded).
    pub degraded: Vec<String>,
}

/// What the sampling clock is and what one read of it costs, measured on this machine.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClockInfo {
    /// The clock's name (`CLOCK_MONOTONIC`).
    pub clock: String,
    /// `clock_getres` of the clock.
    pub resolution_ns: u64,
    /// Time of 1000 back-to-back reads divided by 1000 (best of ten batches).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub read_cost_amortized_ns: f64,
    /// Median difference between two consecutive reads (what a sample of "nothing" measures).
    pub read_cost_p50_ns: u64,
    /// Smallest difference seen between two consecutive reads.
    pub read_cost_min_ns: u64,
}

/// A real-time policy request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RtRequest {
    /// `SCHED_RR` when true, else `SCHED_FIFO`.
    pub round_robin: bool,
    pub priority: i32,
}

/// What a thread asked for.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadRequest {
    /// Role in the benchmark (`worker #0`, `sender`, `marco 1`, ...).
    pub role: String,
    /// CPU to pin to; null leaves placement to the scheduler.
    pub cpu: Option<usize>,
    /// Real-time policy; null keeps the inherited (normally SCHED_OTHER) policy.
    pub rt: Option<RtRequest>,
}

/// What a thread got, read back after asking.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadGot {
    pub requested: ThreadRequest,
    pub got: ThreadInfo,
    /// Requests not granted, in words (empty when everything was granted).
    pub degraded: Vec<String>,
}
