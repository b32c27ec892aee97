//! Typed errors of the echo layer. The I/O error is part of each message (not a separate
//! `source`), so that printing the chain does not repeat it.

use std::io;

/// Everything that can go wrong in the echo layer, with what to do about it in the message.
#[derive(Debug, thiserror::Error)]
pub enum EchoError {
    /// A size argument could not be parsed.
    #[error("invalid size '{input}': {reason}")]
    BadSize { input: String, reason: String },
    /// An address argument could not be parsed or resolved.
    #[error("invalid address '{input}': {reason} (expected IP:PORT, e.g. 127.0.0.1:1234)")]
    BadAddress { input: String, reason: String },
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {err}{hint}")]
    Bind { addr: String, err: io::Error, hint: &'static str },
    /// A kernel mechanism is missing or refused.
    #[error("{what} is not available: {reason}")]
    Unsupported { what: &'static str, reason: String },
    /// A CPU asked for is not one this process may run on.
    #[error("cannot pin {what} to CPU {cpu}: this process may run on CPUs {allowed:?} only")]
    BadCpu { what: &'static str, cpu: usize, allowed: Vec<usize> },
    /// A system call failed.
    #[error("{context}: {err}")]
    Io { context: String, err: io::Error },
    /// A BPF program was rejected by the verifier.
    #[error("the kernel rejected BPF program '{name}': {err}\nverifier log:\n{log}")]
    BpfLoad { name: String, err: io::Error, log: String },
    /// The echo differed from what was sent.
    #[error("echo mismatch in round {round} at byte {offset} of {size}: sent {sent:#04x}, received {got:#04x}")]
    Mismatch { round: u64, offset: usize, size: usize, sent: u8, got: u8 },
    /// The server closed the connection before echoing the whole burst.
    #[error("the server closed the connection in round {round} after echoing {got} of {size} bytes")]
    Closed { round: u64, got: usize, size: usize },
    /// A round did not finish in time.
    #[error("round {round} timed out after {secs:.1} s with {sent} of {size} bytes sent and {got} received{hint}")]
    Timeout { round: u64, secs: f64, sent: usize, got: usize, size: usize, hint: &'static str },
    /// Something went wrong with one of several targets of a run (1-based, in the order given).
    #[error("target {index} ({addr}): {err}")]
    Target { index: usize, addr: String, err: Box<EchoError> },
}

impl EchoError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, err: io::Error) -> Self {
        EchoError::Io { context: context.into(), err }
    }
}

/// Adds context to `io::Result`s.
pub trait IoContext<T> {
    /// Maps the error to [`EchoError::Io`] with `ctx` (evaluated only on error).
    fn ctx<S: Into<String>>(self, ctx: impl FnOnce() -> S) -> Result<T, EchoError>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx<S: Into<String>>(self, ctx: impl FnOnce() -> S) -> Result<T, EchoError> {
        self.map_err(|e| EchoError::io(ctx(), e))
    }
}
