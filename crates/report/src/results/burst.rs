//! `schedlab burst --json`: round trips of bursts to one TCP echo server or several.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::disturb::Disturbance;
use crate::hist::Summary;
use crate::machine::{MachineInfo, ThreadInfo};

super::schema_tag!(
    /// `"schedlab.burst/1"`.
    BurstSchema,
    "schedlab.burst",
    1
);

/// One burst run. With one target its fields are at the top level and `targets` is absent; with
/// several (`--target`), `targets` has one entry each, in the order given (ADDR first).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Burst {
    pub schema: BurstSchema,
    pub machine: MachineInfo,
    /// The client thread's placement, read back from the kernel.
    pub thread: ThreadInfo,
    /// Burst size in bytes.
    pub size_bytes: u64,
    /// Measured rounds asked for (per target).
    pub rounds: u64,
    /// Warm-up rounds (not measured).
    pub warmup: u64,
    /// `burst` (send while reading the echo back, the seed) or `rr` (send all, then read all).
    pub mode: String,
    /// The client spun on non-blocking receives instead of blocking.
    pub spin: bool,
    /// Ctrl-C stopped the run: fewer rounds than asked for.
    pub interrupted: bool,
    /// One target: its fields, at the top level.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub single: Option<BurstTarget>,
    /// Several targets: one entry each, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<BurstTarget>,
}

impl Burst {
    /// The targets, one or several, in the order given.
    pub fn all_targets(&self) -> Vec<&BurstTarget> {
        self.single.iter().chain(&self.targets).collect()
    }
}

impl super::Kind for Burst {
    const NAME: &'static str = BurstSchema::NAME;
    const VERSION: u32 = BurstSchema::VERSION;
    const FILE: &'static str = "burst.schema.json";
    /// One target's fields, or `targets`, and not both. (A flattened target whose fields do not
    /// match reads as no target at all: this is where that is caught.)
    fn check_more(&self) -> Result<(), String> {
        match (&self.single, self.targets.is_empty()) {
            (None, true) => Err("neither one target's fields (`addr`, `rtt_us`, ...) that read, nor `targets`".into()),
            (Some(_), false) => Err("both one target's fields at the top level and `targets`".into()),
            _ => Ok(()),
        }
    }
}

/// One target's figures.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BurstTarget {
    /// The server's address.
    pub addr: String,
    /// The socket's buffers as the kernel set them.
    pub sndbuf_bytes: usize,
    pub rcvbuf_bytes: usize,
    /// `SO_BUSY_POLL` in microseconds, or null when off.
    pub busy_poll_us: Option<u32>,
    /// `SO_INCOMING_NAPI_ID` of the socket, when busy polling.
    pub napi_id: Option<u32>,
    /// Echoed bytes compared with what was sent.
    pub bytes_verified: u64,
    /// The congestion control in use.
    pub congestion: String,
    /// What the client itself cost, per round.
    pub client_cost: ClientCost,
    /// Round-trip time of the measured rounds, µs.
    pub rtt_us: Summary,
    /// Every measured round trip, µs, in order.
    pub rtt_samples_us: Vec<f64>,
    /// The client thread's switches, migrations and longest gap between rounds.
    pub disturbance: Option<Disturbance>,
    /// This target's p50 and p99 over target 1's, same run (several targets only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_to_first: Option<Ratio>,
}

/// A target's p50 and p99 over the first target's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ratio {
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p50: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p99: f64,
}

/// What the client itself cost over the measured rounds, per round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientCost {
    /// CPU time of the client thread per round (user + system), µs.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub cpu_us_per_round: f64,
    /// Of which in user space.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub user_us_per_round: f64,
    /// Of which in the kernel (system calls, TCP).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub sys_us_per_round: f64,
    /// Time spent checking the echo per round, µs, all of it.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub verify_us_per_round: f64,
    /// Of which inside the timed span.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub verify_in_span_us_per_round: f64,
    /// System calls per round (send + receive).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub syscalls_per_round: f64,
    /// Passes of the send/receive loop that moved nothing, per round (spins).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub idle_spins_per_round: f64,
}
