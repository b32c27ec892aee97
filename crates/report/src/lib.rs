//! # schedlab-report — what a run says about itself
//!
//! The output layer shared by every schedlab command:
//! - [`hist`]: HDR histograms and the percentile [`hist::Summary`] (p50 … p99.99, max) that every
//!   latency figure is reported with;
//! - [`export`]: JSON and CSV files whose field names carry their units (`lat_us`, `rate_pps`);
//! - [`machine`]: what the run actually got — kernel, CPU model, virtualisation, idle settings, and
//!   per thread the CPU, scheduling policy and priority read back from the kernel, never the label
//!   that was only asked for;
//! - [`plot`]: small dependency-free SVG charts (lines, bars, candlesticks) and the figures every
//!   command draws ([`plot::figures`]), for people who would rather look than read;
//! - [`page`]: `schedlab report`, one self-contained HTML page (inline SVG, one CSS block, no
//!   script) from any set of schedlab result files.
//!
//! - [`results`]: the typed result kinds (a `schema` tag with name and version in each), which
//!   the writers fill, the page reads, and whose JSON Schemas are committed under `schemas/`;
//! - [`disturb`]: per measuring thread, what disturbed it: involuntary switches, migrations, the
//!   longest gap in its own loop;
//! - [`frontend`]: the front-end kit: one clock read, one interrupt flag, output that survives a
//!   closed pipe, the exit codes;
//! - [`units`]: the front-end kit's one unit parser: rates, durations, counts, sizes.
//!
//! Nothing here knows about scheduling; the layers above (`sim`, `sched`, `prims`, `echo`, `rdma`)
//! depend on it, never the reverse.

pub mod disturb;
pub mod export;
pub mod frontend;
pub mod hist;
pub mod loghist;
pub mod machine;
pub mod page;
pub mod plot;
pub mod results;
pub mod testkit;
pub mod units;

pub use hist::{Hist, HistRecorder, Summary};
pub use loghist::LogHist;
pub use machine::{MachineInfo, ThreadInfo};
