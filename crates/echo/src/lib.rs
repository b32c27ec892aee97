//! # schedlab-echo — TCP echo latency across server mechanisms
//!
//! The layer behind `schedlab echo`, `burst` (alias `test-burst`), `hist` and `echo-bench`
//! (seed 004). It measures how long a burst of bytes takes to travel to an echo server and back,
//! and how that depends on the mechanism the server uses to echo:
//!
//! - [`server`]: echo servers — `naive` (blocking recv/send), `iosubmit` (Linux AIO through raw
//!   `io_submit`, the write of the previous data and the next read in one call), `splice`
//!   (socket → pipe → socket), `sockmap` (an eBPF stream parser and verdict program redirect the
//!   bytes back into the same socket: the echo never reaches user space) and `io_uring`. Every
//!   server serves many connections at once, counts the bytes it echoed per connection, and on
//!   shutdown closes every socket and detaches and closes its BPF objects, then checks by id that
//!   none remain.
//! - [`bpf`]: the few `bpf(2)` commands the sockmap server needs, with its two programs assembled
//!   by hand (no clang, no libbpf).
//! - [`aio`]: the Linux AIO system calls (`io_setup`, `io_submit`, `io_getevents`, `io_destroy`).
//! - [`client`]: the burst client — non-blocking send of the whole burst while reading the echo
//!   back (or request/response), every echoed byte verified, one round-trip time per round.
//! - [`stats`]: exact statistics of a list of numbers (the seed's `mmhistogram`): min, avg,
//!   median, max, population standard deviation, percentiles, log2 ASCII histogram, trimming.
//! - [`bench`]: the whole matrix (modes × sizes × busy poll off/on), on loopback or across two
//!   network namespaces ([`netns`]), with CSV files and candlestick charts ([`png`] renders the
//!   SVG to PNG).
//! - [`cli`]: argv into an [`cli::EchoCommand`] (plain data) and the help texts; [`app`]: the
//!   commands' flow (run, print, write files, exit code).
//!
//! Kernel-dependent mechanisms are probed first ([`server::Mode::probe`]); a missing one is an
//! [`EchoError::Unsupported`] that says what is missing.

pub mod aio;
pub mod app;
pub mod bench;
pub mod bpf;
pub mod cli;
pub mod client;
pub mod error;
pub mod netns;
pub mod png;
pub mod server;
pub mod size;
pub mod stats;
pub mod sys;

pub use error::EchoError;
pub use size::Size;
