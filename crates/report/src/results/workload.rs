//! What a result records about a named workload its lengths were drawn from (`sim --workload w3`,
//! `dist:w3` in a `sched`/`predict` traffic file): one type for the `schedlab.sim`,
//! `schedlab.sched`, `schedlab.sched-repeat` and `schedlab.predict` kinds. How it is printed is
//! each command's concern (a plain function in the command's crate), not this type's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A named workload a run drew its message lengths from: the name, how its table was read, the
/// table's checksum, source and commit, and the mean length in packets.
///
/// Two groups of fields are recorded by one side only, and are absent from the JSON otherwise:
/// `unit` and `mean_size` by the simulator (`--workload`), `written` by traffic files (`sched`,
/// `predict`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub name: String,
    /// `step` or `interp`.
    pub reading: String,
    /// Payload bytes per packet (byte tables; `None` for tables in packets).
    pub bytes_per_packet: Option<u32>,
    pub checksum: String,
    pub source: String,
    pub commit: String,
    /// The table's unit (`bytes` or `packets`); `mean_size` is in it (simulator results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// The table's mean under the reading, in `unit` (simulator results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_size: Option<f64>,
    /// Mean length, packets.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub mean_packets: f64,
    /// As a traffic file writes it after `dist:` (`w3:step:1460`; traffic-file results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}
