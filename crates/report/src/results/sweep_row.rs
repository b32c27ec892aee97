//! `schedlab sweep`: one row of the tidy table (one cell, one strategy, one message length), as
//! the JSON-lines writer (`schedlab sweep`'s `table::write_jsonl`) writes it. The CSV and Parquet
//! tables hold the same columns, in the same order ([`SweepRow::COLUMNS`]), without the tag.
//!
//! Time is in time units (`_tu`: the mean packet service time).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

super::schema_tag!(
    /// `"schedlab.sweep-row/1"`.
    SweepRowSchema,
    "schedlab.sweep-row",
    1
);

/// One row of the sweep table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepRow {
    pub schema: SweepRowSchema,
    /// The sweep's fingerprint (spec and version): rows of one sweep share it.
    pub sweep_id: String,
    /// This cell's index in the whole grid (0-based).
    pub cell: i64,
    /// Cells in the whole grid.
    pub cells_total: i64,
    /// Offered load, percent of the link.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub traffic_pct: f64,
    /// The message-length distribution's name.
    pub lengths: String,
    /// Its mean message length, packets.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_len_pkts: f64,
    /// For lengths drawn from a named workload (`schedlab workloads`), how its table was read:
    /// `step` or `interp` (empty for other lengths).
    pub workload_reading: String,
    /// The workload's payload bytes per packet (byte tables; `null` for tables in packets and for
    /// other lengths).
    #[serde(deserialize_with = "int_or_null")]
    #[schemars(with = "NullableI64")]
    pub workload_bytes_per_pkt: Option<i64>,
    /// The workload table's checksum, `fnv1a64:` and 16 hex digits (empty for other lengths).
    pub workload_checksum: String,
    /// Where the workload table comes from: repository and path (empty for other lengths).
    pub workload_source: String,
    /// The source repository's commit the table was taken at (empty for other lengths).
    pub workload_commit: String,
    /// The service-time model (`report`).
    pub service: String,
    /// Arrival packets simulated.
    pub packets: i64,
    /// The run's seed.
    pub seed: i64,
    /// Replication index of this cell (0-based).
    pub replication: i64,
    /// The queue sampling delay, time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub queue_delay_tu: f64,
    /// Batches of the batch-means confidence intervals.
    pub batches: i64,
    /// Applications messages are spread over.
    pub apps: i64,
    /// Closed-loop applications (0: open Poisson arrivals).
    pub closed_apps: i64,
    /// Section 11 in-order delivery per application.
    pub in_order: bool,
    /// The strategy's label (`FIFO`, `RR`, `10`, `SF`, ...).
    pub strategy: String,
    /// The report listing's alpha code of the strategy.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub listing_alpha: f64,
    /// Message length, packets (0: all messages together).
    pub len_pkts: i64,
    /// Messages delivered.
    pub msgs: i64,
    /// Mean message latency, time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_lat_tu: f64,
    /// Half-width of its 95% confidence interval (batch means), time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub ci95_lat_tu: f64,
    /// Median latency, time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p50_lat_tu: f64,
    /// 99th percentile latency, time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub p99_lat_tu: f64,
    /// Largest latency, time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub max_lat_tu: f64,
    /// Section 12 effective packet period: (latency + 1) / length, time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub eff_period_tu: f64,
    /// Mean queue length, packets.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub qlen_pkts: f64,
    /// Half-width of its 95% confidence interval, packets.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub qlen_ci95_pkts: f64,
    /// Packets that arrived.
    pub packets_in: i64,
    /// Packets released.
    pub packets_out: i64,
    /// Simulated time, time units.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub sim_time_tu: f64,
    /// The schedlab version that wrote the row.
    pub schedlab_version: String,
}

impl SweepRow {
    /// The table's columns, in order (the CSV header; the tag is not a column).
    pub const COLUMNS: [&'static str; 36] = [
        "sweep_id",
        "cell",
        "cells_total",
        "traffic_pct",
        "lengths",
        "mean_len_pkts",
        "workload_reading",
        "workload_bytes_per_pkt",
        "workload_checksum",
        "workload_source",
        "workload_commit",
        "service",
        "packets",
        "seed",
        "replication",
        "queue_delay_tu",
        "batches",
        "apps",
        "closed_apps",
        "in_order",
        "strategy",
        "listing_alpha",
        "len_pkts",
        "msgs",
        "mean_lat_tu",
        "ci95_lat_tu",
        "p50_lat_tu",
        "p99_lat_tu",
        "max_lat_tu",
        "eff_period_tu",
        "qlen_pkts",
        "qlen_ci95_pkts",
        "packets_in",
        "packets_out",
        "sim_time_tu",
        "schedlab_version",
    ];
}

/// Reads an integer or `null`, and (unlike a plain `Option`) refuses a row without the field: a
/// row written before the column existed is not read as a row of lengths that are no workload.
fn int_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Option::<i64>::deserialize(d)
}

/// The schema of an integer that is always present and may be `null`.
struct NullableI64;

impl JsonSchema for NullableI64 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NullableI64".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["integer", "null"], "format": "int64"})
    }
}

impl super::Kind for SweepRow {
    const NAME: &'static str = SweepRowSchema::NAME;
    const VERSION: u32 = SweepRowSchema::VERSION;
    const FILE: &'static str = "sweep-row.schema.json";
}
