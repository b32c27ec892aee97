//! `schedlab rdma share --json`: how two flows shared the link.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hist::Summary;

super::schema_tag!(
    /// `"schedlab.rdma-share/1"`.
    RdmaShareSchema,
    "schedlab.rdma-share",
    1
);

/// The share of two flows, cut when the first one finished.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RdmaShare {
    pub schema: RdmaShareSchema,
    /// `EMULATED` if either flow was emulated, else the common backend, or `unknown`.
    pub backend: String,
    /// Flow A and flow B.
    pub flows: [FlowShare; 2],
    /// Jain's fairness index of the two share rates (1 = equal).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub jain: f64,
    /// Width of the throughput windows, µs.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub window_us: f64,
    /// Throughput of both flows per window, in time order.
    pub windows: Vec<Window>,
}

impl super::Kind for RdmaShare {
    const NAME: &'static str = RdmaShareSchema::NAME;
    const VERSION: u32 = RdmaShareSchema::VERSION;
    const FILE: &'static str = "rdma-share.schema.json";
}

/// One flow's share.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowShare {
    /// `A` or `B`.
    pub name: String,
    /// The file the flow's completions were read from.
    pub source: String,
    /// The backend that wrote the file (`EMULATED`, `verbs`, or `unknown` for the original tool's files).
    pub backend: String,
    pub bytes_per_msg: u64,
    /// Messages the run was asked for, when known.
    pub count: Option<u64>,
    /// This flow finished first.
    pub finished_first: bool,
    /// Completed messages at the cut.
    pub completed_at_cut: u64,
    /// The completion time the bandwidth is computed over, µs.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub cut_time_us: f64,
    /// Last completion of the flow, µs.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub end_time_us: f64,
    /// Throughput up to the cut, Gbit/s.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub gbps: f64,
    /// Latency of every message in the file (µs).
    pub lat_us: Summary,
    /// Messages in the file fewer than the count asked for (interrupted run).
    pub incomplete: bool,
}

/// Throughput of both flows in one window.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Window {
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub start_ms: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub end_ms: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub a_gbps: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub b_gbps: f64,
    /// Jain's index of the two rates in this window (1 when both are idle).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub jain: f64,
}
