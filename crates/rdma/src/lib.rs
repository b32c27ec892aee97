//! # schedlab-rdma — perftest-style RDMA flows with per-message timestamps
//!
//! The layer that measures how two RDMA flows share one link, after the modified perftest
//! `write_bw` of seed 003:
//! - [`types`]: the operation (`-O`), message size, polling mode and the queue-pair address the
//!   two ends exchange;
//! - [`backend`]: one verbs-shaped trait ([`backend::Endpoint`]: RC queue-pair transitions, work
//!   requests, completion queue polling and events) with two implementations — libibverbs
//!   through `sideway` (cargo feature `verbs`) and an emulation over TCP that keeps the same
//!   work-request / completion semantics and labels everything it produces `EMULATED`;
//! - [`bench`]: the benchmark itself — TCP connection setup, INIT→RTR→RTS, the sender that posts
//!   the next work request only after polling the previous completion, the receiver that keeps
//!   `-t` receives posted, and the result (perftest's line plus latency percentiles);
//! - [`record`]: the per-message `-o` file (`Task_cnt`, completion time, latency);
//! - [`share`]: the two-flow analysis (`schedlab rdma share A.txt B.txt`): each flow's Gbps up to
//!   the moment the first one finished, throughput over time in windows, latency percentiles,
//!   Jain's fairness index and an SVG plot;
//! - [`cli`]: `schedlab rdma`'s argv into plain data and its help text; [`app`]: the commands'
//!   flow (run, print, write files, exit code).
pub mod app;
pub mod backend;
pub mod bench;
pub mod cli;
pub mod record;
pub mod share;
pub mod types;
