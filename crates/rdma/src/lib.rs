//! perftest-style RDMA flow benchmark with per-request timestamps and two-flow share analysis.
pub mod cli;
