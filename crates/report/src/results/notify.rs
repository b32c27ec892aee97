//! `schedlab notify --json`: what a thread notification costs, sender and receiver side.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::prims::{ClockInfo, Context, ThreadGot};
use crate::disturb::Disturbance;
use crate::hist::Summary;
use crate::machine::MachineInfo;

super::schema_tag!(
    /// `"schedlab.notify/1"`.
    NotifySchema,
    "schedlab.notify",
    1
);

/// One `notify` run and what it ran on.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    pub schema: NotifySchema,
    /// `notify`.
    pub command: String,
    /// The command line as it was run.
    pub argv: Vec<String>,
    pub machine: MachineInfo,
    pub clock: ClockInfo,
    /// Requests that were not granted (the run was made anyway because of --allow-degraded).
    pub degraded: Vec<String>,
    pub run: NotifyRun,
}

impl Notify {
    pub fn new(ctx: Context, run: NotifyRun) -> Notify {
        let Context { argv, machine, clock, degraded } = ctx;
        Notify { schema: NotifySchema, command: "notify".into(), argv, machine, clock, degraded, run }
    }
}

impl super::Kind for Notify {
    const NAME: &'static str = NotifySchema::NAME;
    const VERSION: u32 = NotifySchema::VERSION;
    const FILE: &'static str = "notify.schema.json";
}

/// What was run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// `receiver` (test A: wake-up rate) or `sender` (test B: cost while the receiver sleeps).
    pub test: String,
    /// `eventfd`, `pipe`, `futex`, `sem`, `condvar` or `unix`.
    pub mechanism: String,
    pub notifications: u64,
    pub sender_cpu: Option<usize>,
    pub receiver_cpu: Option<usize>,
    /// Gap between two notifications in test B.
    pub gap_ns: u64,
    pub allow_degraded: bool,
    /// Stop sending after this long (`-D`), even if fewer than `notifications` were sent.
    pub duration_ns: Option<u64>,
}

/// Sender side.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifySender {
    pub cpu_at_end: i32,
    pub sent: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub duration_s: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub rate_ops_per_s: f64,
    /// Test B: cost of one `notify` (includes one clock read).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub cost_avg_ns: f64,
    pub cost_ns: Summary,
    /// Sending stopped at the `-D` deadline.
    pub stopped_by_duration: bool,
    /// Switches, migrations and the longest gap between two clock reads of its loop.
    pub disturbance: Option<Disturbance>,
}

/// Receiver side.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifyReceiver {
    pub cpu_at_end: i32,
    pub received: u64,
    pub wakeups: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub duration_s: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub rate_ops_per_s: f64,
    /// Test B: sender's timestamp before `notify` to the receiver's return from `wait`.
    pub wake_latency_ns: Summary,
    /// Switches (its waits are voluntary ones), migrations, the longest gap between two wakeups.
    pub disturbance: Option<Disturbance>,
}

/// A whole run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifyRun {
    pub config: NotifyConfig,
    pub threads: Vec<ThreadGot>,
    pub sender: NotifySender,
    pub receiver: NotifyReceiver,
    pub interrupted: bool,
}
