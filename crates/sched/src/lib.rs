//! # schedlab-sched — the real multi-threaded scheduler harness
//!
//! The layer above `schedlab-policy`: the very policies the simulator runs, now driven by real
//! threads at millions of packets per second.
//!
//! - [`traffic`]: client programs (the seed's traffic file: `DURATION RATE [PKTLEN [BURST]]`,
//!   `thread N`);
//! - [`ring`]: one bounded lock-free single-producer/single-consumer ring per client, where a slot
//!   holds its packet from generation until the client sees it transmitted;
//! - [`harness`]: client threads, the scheduler (a thread, or in distributed mode `-D` whichever
//!   client holds the scheduler lock), link emulation at `-b`, exact per-client accounting
//!   (generated = transmitted + dropped + still queued);
//! - [`workload`]: message workloads (length distributions, Poisson gaps, the clients' seeded
//!   generators);
//! - [`messages`]: per-message records and the arrival trace for the simulator;
//! - [`units`]: bandwidth and duration newtypes and their parsers (`20M`, `10T`, `5us`);
//! - [`bench`]: the policy pair cost and ring/harness throughput measurements;
//! - [`config`]: the seed's command line verbatim as a library: argv -> [`config::Argv`], the
//!   traffic program loaded -> [`config::Args`] (the harness [`harness::Config`]), the files a run
//!   writes; used by `schedlab sched`, `schedlab predict` and the fuzz targets;
//! - [`output`]: the writers of a run: the typed report (`schedlab.sched/1`), the human text,
//!   the JSON and `--disturbance-csv` files, `--bench`'s policy cost table;
//! - [`repeat`]: `--repeat N`: the rule that sets a disturbed run aside (from the rings' fill
//!   and pass times), the summary over the kept runs;
//! - [`cli`]: `schedlab sched`'s argv -> [`config::Argv`] (and the help text), nothing else;
//! - [`app`]: the command as the binary runs it: parse, load, check the output files, run (or
//!   `--repeat`), write the files, print.
//!
//! - [`clock`]: the harness's clock (`CLOCK_MONOTONIC` nanoseconds, read with `rdtscp` where the
//!   kernel keeps time with the TSC).
//!
//! Timestamps are `CLOCK_MONOTONIC` nanoseconds (see [`harness`] and [`clock`]).
pub mod app;
pub mod bench;
pub mod cli;
pub mod clock;
pub mod config;
pub mod harness;
pub mod messages;
pub mod output;
pub mod repeat;
pub mod ring;
pub mod traffic;
pub mod units;
pub mod workload;
