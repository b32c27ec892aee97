//! The verbs layer: one trait with work-request / completion-queue semantics, implemented by the
//! real libibverbs backend (`verbs` feature) and by an emulation over TCP.
//!
//! The trait follows the verbs calls one for one: queue-pair state transitions
//! (RESET → INIT → RTR → RTS), `post_send` / `post_recv` of work requests, `poll_cq` for work
//! completions, and `req_notify_cq` + `wait_cq_event` for event-driven completion handling.

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;
use thiserror::Error;

use crate::types::{MsgSize, Op, PollMode, QpInfo};

pub mod emulated;
#[cfg(feature = "verbs")]
pub mod verbs;

/// Which implementation runs the queue pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BackendKind {
    /// libibverbs through the `sideway` crate (needs an RDMA device).
    Verbs,
    /// The same semantics emulated over a TCP connection (any machine).
    Emulated,
}

impl BackendKind {
    /// Name used on the command line and in the exchange protocol.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Verbs => "verbs",
            BackendKind::Emulated => "emulated",
        }
    }
    /// Label printed on every output line, file header and JSON (`EMULATED` or `VERBS`).
    pub fn label(self) -> &'static str {
        match self {
            BackendKind::Verbs => "VERBS",
            BackendKind::Emulated => "EMULATED",
        }
    }
}

/// Queue-pair states the benchmark walks through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum QpState {
    Reset,
    Init,
    ReadyToReceive,
    ReadyToSend,
    Error,
}

/// Errors of the verbs layer.
#[derive(Debug, Error)]
pub enum BackendError {
    #[error("RDMA backend unavailable: {0}")]
    Unavailable(String),
    #[error("{call} failed: {err}")]
    Verbs { call: &'static str, err: std::io::Error },
    #[error("invalid queue-pair transition {from:?} -> {to:?}")]
    BadTransition { from: QpState, to: QpState },
    #[error("cannot {what} while the queue pair is in state {state:?}")]
    WrongState { what: &'static str, state: QpState },
    #[error("too many outstanding {queue} work requests (limit {limit})")]
    QueueFull { queue: &'static str, limit: u32 },
    #[error("work request {len} bytes exceeds the registered buffer ({buf} bytes)")]
    TooLong { len: u32, buf: u64 },
    #[error("emulated wire: {0}")]
    Wire(String),
    #[error("I/O error on the emulated wire: {0}")]
    Io(String),
}

impl From<std::io::Error> for BackendError {
    fn from(e: std::io::Error) -> Self {
        BackendError::Io(e.to_string())
    }
}

/// A send-queue work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr {
    pub wr_id: u64,
    pub op: Op,
    /// Bytes to move (from the start of the local registered buffer).
    pub len: u32,
    /// Remote buffer address and key (WRITE, WRITE_IMM, READ).
    pub remote_addr: u64,
    pub rkey: u32,
    /// Immediate data (WRITE_IMM; carried for SEND too, where it is ignored by the receiver).
    pub imm: u32,
}

/// Completion status (the subset of `ibv_wc_status` the benchmark can tell apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WcStatus {
    Success,
    /// The remote rejected the access (bad rkey or out-of-range address).
    RemoteAccessError,
    /// The posted receive buffer was too small for the incoming message.
    LocalLengthError,
    /// The responder could not take the request (its receive was too small).
    RemoteInvalidRequest,
    /// The queue pair went to the error state; outstanding requests are flushed.
    FlushError,
    /// Any other failure, with the raw provider status.
    Other(u32),
}

/// What a completion reports, like `ibv_wc_opcode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WcOpcode {
    Send,
    RdmaWrite,
    RdmaRead,
    Recv,
    RecvRdmaWithImm,
}

impl WcOpcode {
    /// The sender-side completion opcode of an operation.
    pub fn of_send(op: Op) -> WcOpcode {
        match op {
            Op::Write | Op::WriteImm => WcOpcode::RdmaWrite,
            Op::Read => WcOpcode::RdmaRead,
            Op::Send => WcOpcode::Send,
        }
    }
}

/// One work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub wr_id: u64,
    pub status: WcStatus,
    pub opcode: WcOpcode,
    pub byte_len: u32,
    pub imm: Option<u32>,
}

/// What an endpoint needs to come up.
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// Device name (`-d`); `None` = the first device.
    pub device: Option<String>,
    /// Device port (`-i`, 1-based).
    pub ib_port: u8,
    /// GID index (`-x`).
    pub gid_index: u32,
    /// Size of the registered buffer.
    pub buf_size: MsgSize,
    /// Maximum outstanding receives (`-t`).
    pub rx_depth: u32,
    /// Maximum outstanding sends.
    pub tx_depth: u32,
    /// Whether completion events are used (creates a completion channel).
    pub poll: PollMode,
    /// The address the control connection runs on (the emulated wire binds to it).
    pub local_ip: IpAddr,
    /// Bounds every blocking step of connection setup.
    pub setup_timeout: Duration,
}

/// One reliable-connection queue pair with its completion queue and registered buffer.
pub trait Endpoint {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;
    /// Human description of the device (`mlx5_0 port 1`, `emulated over TCP 127.0.0.1:40000`).
    fn device_desc(&self) -> String;
    /// The address the peer needs (QPN, PSN, rkey, buffer address, GID, LID).
    fn local_info(&self) -> QpInfo;
    /// Current queue-pair state.
    fn state(&self) -> QpState;
    /// RESET → INIT.
    fn to_init(&mut self) -> Result<(), BackendError>;
    /// INIT → RTR, aimed at the peer's queue pair.
    fn to_rtr(&mut self, remote: &QpInfo) -> Result<(), BackendError>;
    /// RTR → RTS.
    fn to_rts(&mut self) -> Result<(), BackendError>;
    /// Posts one signalled send-queue work request.
    fn post_send(&mut self, wr: &SendWr) -> Result<(), BackendError>;
    /// Posts one receive of up to `len` bytes into the registered buffer.
    fn post_recv(&mut self, wr_id: u64, len: u32) -> Result<(), BackendError>;
    /// Moves up to `max` completions into `out` without blocking; returns how many.
    fn poll_cq(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, BackendError>;
    /// Arms the completion queue: the next completion raises one event.
    fn req_notify_cq(&mut self) -> Result<(), BackendError>;
    /// Waits up to `timeout` for a completion event (and acknowledges it); false on timeout.
    fn wait_cq_event(&mut self, timeout: Duration) -> Result<bool, BackendError>;
}

/// Opens an endpoint of the requested kind.
pub fn open(kind: BackendKind, cfg: &EndpointConfig) -> Result<Box<dyn Endpoint>, BackendError> {
    match kind {
        BackendKind::Emulated => Ok(Box::new(emulated::EmulatedEndpoint::open(cfg)?)),
        BackendKind::Verbs => open_verbs(cfg),
    }
}

/// Checks, before any connection is made, that the backend can run here.
pub fn probe(kind: BackendKind, device: Option<&str>) -> Result<(), BackendError> {
    match kind {
        BackendKind::Emulated => Ok(()),
        BackendKind::Verbs => probe_verbs(device),
    }
}

#[cfg(feature = "verbs")]
fn probe_verbs(device: Option<&str>) -> Result<(), BackendError> {
    verbs::probe(device).map(|_| ())
}

#[cfg(not(feature = "verbs"))]
fn probe_verbs(_device: Option<&str>) -> Result<(), BackendError> {
    Err(verbs_not_built())
}

#[cfg(feature = "verbs")]
fn open_verbs(cfg: &EndpointConfig) -> Result<Box<dyn Endpoint>, BackendError> {
    Ok(Box::new(verbs::VerbsEndpoint::open(cfg)?))
}

#[cfg(not(feature = "verbs"))]
fn open_verbs(_cfg: &EndpointConfig) -> Result<Box<dyn Endpoint>, BackendError> {
    Err(verbs_not_built())
}

#[cfg(not(feature = "verbs"))]
fn verbs_not_built() -> BackendError {
    BackendError::Unavailable(
        "this schedlab was built without the real RDMA backend; rebuild with \
         `cargo build --release -p schedlab --features rdma-verbs`, or run with --backend emulated"
            .into(),
    )
}

/// A random 24-bit number (queue-pair numbers, packet sequence numbers) without a RNG dependency.
pub(crate) fn random24() -> u32 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    h.write_u32(std::process::id());
    (h.finish() as u32) & 0x00ff_ffff
}
