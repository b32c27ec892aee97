//! `schedlab echo-bench`: the TCP echo latency matrix (`results.json` in its `--out` folder).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hist::Summary;
use crate::machine::{MachineInfo, ThreadInfo};

super::schema_tag!(
    /// `"schedlab.echo-bench/1"`.
    EchoBenchSchema,
    "schedlab.echo-bench",
    1
);

/// One run of the matrix: modes × sizes × busy poll off/on.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EchoBench {
    pub schema: EchoBenchSchema,
    /// The machine the matrix ran on.
    pub machine: MachineInfo,
    /// The client thread's placement, read back from the kernel.
    pub client_thread: ThreadInfo,
    /// `loopback` or `netns` (a veth pair between two network namespaces).
    pub path: String,
    /// Measured rounds per cell.
    pub rounds: u64,
    /// Warm-up rounds per cell (not measured).
    pub warmup: u64,
    /// One row per (mode, size, busy poll) cell that ran.
    pub rows: Vec<EchoRow>,
    /// Cells not run, each with the reason.
    pub skipped: Vec<String>,
    /// The reference (`sockperf` ping-pong) per size; empty without it.
    pub peer: Vec<EchoRow>,
    /// True when Ctrl-C stopped the matrix early (the rows are those that finished).
    pub interrupted: bool,
}

impl super::Kind for EchoBench {
    const NAME: &'static str = EchoBenchSchema::NAME;
    const VERSION: u32 = EchoBenchSchema::VERSION;
    const FILE: &'static str = "echo-bench.schema.json";
}

/// One cell of the matrix.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EchoRow {
    /// The server's echo mechanism (`naive`, `iosubmit`, `splice`, `sockmap`, `io_uring`, or the reference's name).
    pub mode: String,
    /// Burst size in bytes.
    pub size_bytes: u64,
    /// `SO_BUSY_POLL` in microseconds, or null when busy polling was off.
    pub busy_poll_us: Option<u32>,
    /// Statistics of all measured rounds (µs).
    pub rtt_us: Summary,
    /// Statistics after dropping the slowest `trimmed_percent` (what the CSV files hold).
    pub trimmed_rtt_us: Summary,
    /// Percent of the slowest rounds dropped for `trimmed_rtt_us`.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub trimmed_percent: f64,
    /// CPU the client last ran on.
    pub client_cpu: i32,
    /// CPU the server connection last ran on, when known.
    pub server_cpu: Option<i32>,
    /// `SO_INCOMING_NAPI_ID` seen by the server (0: busy poll cannot act), when busy polling.
    pub napi_id: Option<u32>,
}
