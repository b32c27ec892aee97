//! `schedlab workloads --json`: the named message-size tables (W1–W5, pFabric web search and data
//! mining, W1's sampled variant), each with its provenance, the mean its source states and the
//! means the tables give, in the table's own unit and in packets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

super::schema_tag!(
    /// `"schedlab.workloads/1"`.
    WorkloadsSchema,
    "schedlab.workloads",
    1
);

/// The named workloads as `schedlab workloads` lists them (one, with `schedlab workloads NAME`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workloads {
    pub schema: WorkloadsSchema,
    /// `workloads`.
    pub command: String,
    /// Payload bytes per packet the `_pkts` means of the byte tables are cut at (1460, the MSS of
    /// a 1500-byte MTU; `sim --bytes-per-packet` and `dist:NAME:READING:BYTES` change it).
    pub default_bytes_per_packet: u32,
    /// In listing order.
    pub workloads: Vec<WorkloadTable>,
}

impl super::Kind for Workloads {
    const NAME: &'static str = WorkloadsSchema::NAME;
    const VERSION: u32 = WorkloadsSchema::VERSION;
    const FILE: &'static str = "workloads.schema.json";
}

/// One named workload's table. Means named `_size` are in the table's `unit` (bytes or packets);
/// means named `_pkts` are message lengths in packets, as the simulator and the harness draw them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadTable {
    /// The name the front ends take (`w3`, `pfabric-websearch`).
    pub name: String,
    /// What the workload is, in a few words.
    pub title: String,
    /// The unit of the table's SIZE column: `bytes` or `packets`.
    pub unit: String,
    /// Data lines of the table.
    pub points: usize,
    /// The source's own reading of the CDF (`step` or `interp`), the default of `sim --reading`
    /// and of `dist:NAME`.
    pub reading: String,
    /// The mean the source states, in `unit` (the table header's "Stated mean"); null where the
    /// source states none (pFabric).
    pub stated_mean_size: Option<f64>,
    /// The table's exact mean read as a step CDF, in `unit` (W1 with its analytic tail).
    pub step_mean_size: f64,
    /// The table's exact mean read as a linearly interpolated CDF, in `unit`.
    pub interp_mean_size: f64,
    /// Payload bytes per packet the `_pkts` means cut this table at: `default_bytes_per_packet`
    /// for a byte table, null for a table in packets (nothing to cut).
    pub bytes_per_packet: Option<u32>,
    /// Mean message length in packets, step reading.
    pub step_mean_pkts: f64,
    /// Mean message length in packets, interpolated reading (an interpolated draw of a packet
    /// table is rounded to the nearest packet).
    pub interp_mean_pkts: f64,
    /// W1: the table stops at P = 0.47 and the means include HomaSimulation's analytic
    /// Generalized Pareto tail.
    pub analytic_tail: bool,
    /// FNV-1a (64 bits) of the table file, `fnv1a64:` and 16 hex digits.
    pub checksum: String,
    /// The table's file in `crates/workload/tables/`.
    pub file: String,
    /// The source repository, as the table's header states it (`github.com/...`).
    pub repository: String,
    /// The table's path in the source repository.
    pub path: String,
    /// The source commit read (40 hex digits).
    pub commit: String,
}
