//! `schedlab rdma --json`: one end's run of the perftest-style flow benchmark (client or server).
//!
//! The operation and the polling mode are spelled as the seed spells them and as the `-o`
//! sidecar writes them: `WRITE`, `READ`, `WRITE_IMM`, `SEND`; `busy`, `event`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::disturb::Disturbance;
use crate::hist::Summary;
use crate::machine::{MachineInfo, ThreadInfo};

super::schema_tag!(
    /// `"schedlab.rdma/1"`.
    RdmaSchema,
    "schedlab.rdma",
    1
);

/// One end's run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rdma {
    pub schema: RdmaSchema,
    /// `EMULATED` or `VERBS`.
    pub backend: String,
    /// `client` or `server`.
    pub role: String,
    /// The operation each work request performs (`-O`).
    pub op: RdmaOp,
    /// How completions were waited for (`-e`: `event`).
    pub poll: RdmaPoll,
    /// The device (or, emulated, the TCP connection) the queue pair ran on.
    pub device: String,
    /// Bytes per message (`-s`).
    pub bytes: u32,
    /// Messages asked for (`-n`).
    pub iterations: u64,
    /// Messages completed (fewer than `iterations` when interrupted or failed).
    pub completed: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub elapsed_s: f64,
    /// Average bandwidth over the run, Gbit/s.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub bw_avg_gbps: f64,
    /// Peak bandwidth, Gbit/s.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub bw_peak_gbps: f64,
    /// Messages per second, millions.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub msg_rate_mpps: f64,
    /// Client: completion minus post. Server: gap between successive receive completions (µs).
    pub lat_us: Summary,
    /// Client: time spent inside `post_send` (µs); null at the server.
    pub post_us: Option<Summary>,
    /// Receives kept posted at the receiver (`-t`).
    pub rx_depth: u32,
    /// This end's queue-pair address.
    pub local_qp: RdmaQp,
    /// The other end's queue-pair address.
    pub remote_qp: RdmaQp,
    /// Ctrl-C stopped the run.
    pub interrupted: bool,
    /// Why the run stopped before its last message, when it failed.
    pub failure: Option<String>,
    pub machine: MachineInfo,
    /// The measuring thread's placement.
    pub thread: ThreadInfo,
    /// What disturbed the measuring thread over its message loop (null where not measured).
    pub disturbance: Option<Disturbance>,
}

impl super::Kind for Rdma {
    const NAME: &'static str = RdmaSchema::NAME;
    const VERSION: u32 = RdmaSchema::VERSION;
    const FILE: &'static str = "rdma.schema.json";
    fn check_more(&self) -> Result<(), String> {
        if !matches!(self.role.as_str(), "client" | "server") {
            return Err(format!("`role` is {:?}: client or server", self.role));
        }
        if self.completed > self.iterations {
            return Err(format!("`completed` {} is more than `iterations` {}", self.completed, self.iterations));
        }
        Ok(())
    }
}

/// The RDMA operation, as the seed's `-O` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RdmaOp {
    /// `-O 0`.
    Write,
    /// `-O 1`.
    Read,
    /// `-O 2`.
    WriteImm,
    /// `-O 3`.
    Send,
}

/// How completions are waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RdmaPoll {
    /// Spin on the completion queue.
    Busy,
    /// Sleep until the completion event (`-e`).
    Event,
}

/// A queue-pair address, as the two ends exchange it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RdmaQp {
    /// Local identifier (InfiniBand; emulated: the wire's TCP port).
    pub lid: u16,
    /// Queue pair number (24 bits).
    pub qpn: u32,
    /// Initial packet sequence number (24 bits).
    pub psn: u32,
    /// Remote key of the registered buffer.
    pub rkey: u32,
    /// Virtual address of the registered buffer.
    pub addr: u64,
    /// Global identifier, 16 bytes.
    pub gid: [u8; 16],
}
