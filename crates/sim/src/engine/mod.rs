//! The discrete-event engine: every strategy runs in lock step on one sample path (§7, §16).
//!
//! Semantics (each one matters; see `shared/REFERENCE.md`):
//! - **Common random numbers.** Each arrival puts its own copy of the message into every
//!   strategy's queue; one server takes one packet from every non-empty queue at the same instant
//!   and then holds one shared service time `0.5 + Exp(mean 0.5)`. Total work is identical in every
//!   queue, so all queues are empty or busy together and `qlen` is the same in every row.
//! - A message arriving at an idle system has its first packet taken at once. A packet leaves its
//!   queue when its service *starts*; a message's latency is recorded when its last packet is taken.
//! - `qlen` = packets in − packets out, sampled every `queue_delay` time units from t = 0.
//! - Statistics are cumulative from t = 0 (no warm-up deletion), like the report's tables.
//!
//! Events are processed in (time, kind) order; the only simultaneous events possible are the
//! first arrival at t = 0 and user trace entries, which are handled in file order.
//!
//! Closed-loop applications (§2) make arrivals depend on the strategy, so that mode runs each
//! strategy on its own sample path with the same seed instead of in lock step.
//!
//! Lock step also gives a shortcut: a message that arrives to empty queues and has all its packets
//! taken before the next arrival is sent the same way by every strategy. The common-case generator
//! marks it (`Kind::Alone`) and each lane records its latency without passing it through the
//! policy, when the policy agrees ([`Policy::bypass`](schedlab_policy::Policy::bypass)). That
//! is a third of the messages at 50% load and nearly all at 1%; the results are unchanged
//! (tested against the general generator). Its latency is the same in every lane that bypasses
//! it, so the generator records it in the histogram once for all of them, and each lane adds it
//! only to its own sum and count, in delivery order (sums stay the same bit for bit).
//!
//! A second shortcut reaches busy periods of several messages: in one whose first and last
//! arrivals are D packet starts apart, every fixed-α alpha strategy with α > D sends the messages
//! exactly as shortest-first does (the α term of a priority outweighs any difference of arrival
//! clocks). One of those lanes replays the period and the others copy its deliveries
//! (`lanes::Lean`; the proof is at `LeanAlpha::agrees_with_shortest_first`).
//!
//! Layout: `generator` produces the shared sample path (arrivals, packet starts, batch
//! boundaries, report times) in chunks; `lanes` replays a chunk through one strategy;
//! `statistics` holds the latency accumulators and the result types; `run` drives a run
//! (chunking, the lane-parallel threads, closed loops) and assembles its results.

mod generator;
mod lanes;
mod run;
mod statistics;
mod swing;

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use crate::model::{report_defaults, AlphaClass, LengthDist, Service, Strategy, TraceArrival};

pub use run::{run, run_threads};
pub use statistics::{
    ci95, empirical_buckets, t975, AlphaChosen, Bucket, Checkpoint, ClassLen, LatStats, RunResult, StrategyResult, BUCKET_EDGES,
    MAX_LENGTH_COLUMNS,
};

/// Shared progress and cancellation for a run.
#[derive(Debug, Default)]
pub struct Control {
    /// Packets arrived so far (updated every ~65k arrivals).
    pub progress: AtomicU64,
    /// Set to stop early; the run returns what it has, marked `interrupted`.
    pub stop: AtomicBool,
}

/// Where messages come from.
#[derive(Clone, Debug)]
pub enum Arrivals {
    /// Poisson arrivals with mean gap `mean_len × 100 / traffic` (the report's model).
    Poisson,
    /// Messages from a trace file, in order; the run ends when all are delivered.
    Trace(Arc<Vec<TraceArrival>>),
    /// `apps` closed-loop applications (§2): each sends its next message an exponential think time
    /// after its previous one was delivered. The mean think time is chosen so that the offered load
    /// with zero queueing delay equals the traffic level: `apps × mean_len × 100 / traffic`.
    Closed { apps: u32 },
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Offered load in percent of the outlet's capacity.
    pub traffic: f64,
    pub strategies: Vec<Strategy>,
    pub dist: LengthDist,
    /// Queue-length sampling period in time units (the listing's `-q`, default 200).
    pub queue_delay: f64,
    /// Stop once this many packets have arrived (Poisson and closed loop).
    pub packets: u64,
    pub seed: u64,
    /// Number of applications messages are spread over (uniformly at random) in open-loop runs.
    pub apps: u32,
    /// §11: keep each application's messages in order in the alpha strategies.
    pub in_order: bool,
    /// §10: per-message α classes (used by the `prio` strategy; latency reported per class).
    pub msg_alpha: Vec<AlphaClass>,
    pub arrivals: Arrivals,
    /// Batches for batch-means confidence intervals.
    pub batches: u32,
    /// Record the listing's cumulative reports at t = 200000(1.1^k − 1).
    pub checkpoints: bool,
    /// The packet service-time model (`--service`; the report's by default).
    pub service: Service,
    /// Weight per application for the flow-level strategies (DRR, WF2Q+, QFQ): application `i`
    /// is flow `i`; applications beyond the list (all, when it is empty) have weight 1.
    pub weights: Vec<u32>,
}

impl SimConfig {
    /// The report's model at `traffic` percent with the 13 default strategies.
    pub fn report(traffic: f64, packets: u64, seed: u64) -> Self {
        SimConfig {
            traffic,
            strategies: report_defaults(),
            dist: LengthDist::report_default(),
            queue_delay: 200.0,
            packets,
            seed,
            apps: 1,
            in_order: false,
            msg_alpha: Vec::new(),
            arrivals: Arrivals::Poisson,
            batches: 20,
            checkpoints: false,
            service: Service::Report,
            weights: Vec::new(),
        }
    }
}

/// The payload each queue carries per message (the policy hands it back with each packet).
#[derive(Clone, Copy, Debug)]
struct Msg {
    t: f64,
    len: u32,
    app: u32,
    seq: u32,
    class: u32,
}

/// What happens at one step of the shared sample path, as every lane sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A message arrives.
    Arrive,
    /// A message arrives to an empty queue and all its packets start before the next arrival:
    /// every strategy sends it the same way, so a lane may skip its policy
    /// ([`Policy::bypass`](schedlab_policy::Policy::bypass)). Its packet starts follow in the
    /// same chunk.
    Alone,
    /// A batch boundary (batch means).
    Batch,
    /// A listing report time.
    Check,
    /// The end of a chunk (serves the packet starts after the last other step).
    End,
}
