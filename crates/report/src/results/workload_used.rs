//! What a result records about a named workload (`dist:w3` in a traffic file) its traffic drew
//! from: shared by the `schedlab.sched` and `schedlab.predict` kinds.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A named workload a run's traffic drew from: the name, how it was read, the table's checksum,
/// source and commit, and the mean length in packets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadUsed {
    pub name: String,
    /// `step` or `interp`.
    pub reading: String,
    /// Payload bytes per packet (byte tables; `None` for tables in packets).
    pub bytes_per_packet: Option<u32>,
    pub checksum: String,
    pub source: String,
    pub commit: String,
    pub mean_packets: f64,
    /// As a traffic file writes it after `dist:` (`w3:step:1460`).
    pub written: String,
}

impl fmt::Display for WorkloadUsed {
    /// `workload w3 (step CDF, 1460 B/packet, mean 2.6 packets; fnv1a64:…; github.com/… @ ab09ecb…)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "workload {} ({} CDF", self.name, self.reading)?;
        if let Some(b) = self.bytes_per_packet {
            write!(f, ", {b} B/packet")?;
        }
        write!(f, ", mean {:.4} packets; {}; {} @ {})", self.mean_packets, self.checksum, self.source, self.commit)
    }
}
