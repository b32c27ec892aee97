//! What a run measured: per client, the scheduler's independent view, distributed mode's costs.

use schedlab_report::disturb::Disturbance;
use schedlab_report::machine::ThreadInfo;
use schedlab_report::Hist;

use super::{SchedCounters, TraceEvent};
use crate::messages::MsgRecord;
use crate::units::Nanos;

/// What distributed mode (`-D`) cost: the try-lock and notification traffic; the report's type,
/// filled in by the run (one type from the harness to the JSON).
pub use schedlab_report::results::sched::DistCost;

/// One timestamp record (the six fields of the timestamp files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TsRecord {
    pub cli_enq: u64,
    pub sch_enq: u64,
    pub sch_deq: u64,
    pub cli_deq: u64,
    pub len: u32,
    pub dropped: bool,
}

/// What one client did.
#[derive(Clone, Debug)]
pub struct ClientResult {
    pub generated: u64,
    pub ring_drops: u64,
    pub sched_drops: u64,
    pub transmitted: u64,
    pub bits: u64,
    /// Packets pushed but not transmitted/dropped at the end (in the ring or the policy).
    pub queued_at_stop: u64,
    /// Enqueue to mark seen, ns.
    pub delay: Hist,
    pub timestamps: Vec<TsRecord>,
    pub timestamps_truncated: u64,
    pub thread: ThreadInfo,
    /// The CPU this client was to be pinned to, and the error if pinning failed.
    pub requested_cpu: Option<usize>,
    pub pin_error: Option<String>,
    /// Ran its program (`-k`).
    pub active: bool,
    pub sched_passes: u64,
    /// One record per burst (with `Config::messages`), in generation order.
    pub messages: Vec<MsgRecord>,
    /// Polls that found at least one mark (the original's client head reads).
    pub mark_polls: u64,
    /// Timestamp records whose deltas would have been negative (clamped to 0): always 0 with
    /// the clock discipline of this module; counted so that a test can prove it.
    pub ts_clamped: u64,
    /// Sum over the timestamp records of each packet's life (mark seen - `cli_enq`, ns), read
    /// independently of the three deltas (which must add up to it).
    pub ts_life_sum_ns: u128,
    /// What disturbed this client over its program (switches, migrations, the longest gap
    /// between two iterations of its loop).
    pub disturbance: Disturbance,
}

/// The scheduler's independent view at the end, per client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedView {
    pub taken: Vec<u64>,
    pub released: Vec<u64>,
    pub sched_drops: Vec<u64>,
    pub policy_queued: u64,
    pub passes: u64,
    pub counters: SchedCounters,
}

/// Everything a run measured.
#[derive(Debug)]
pub struct RunResult {
    pub clients: Vec<ClientResult>,
    pub sched: SchedView,
    pub elapsed: Nanos,
    pub interrupted: bool,
    pub scheduler_thread: Option<ThreadInfo>,
    pub sched_pin_error: Option<String>,
    pub client_passes: u64,
    /// Distributed mode's costs (zero outside `-D`).
    pub dist: DistCost,
    pub trace: Option<Vec<TraceEvent>>,
    /// The clock's source: `"tsc"` or `"clock_gettime"` (see [`crate::clock`]).
    pub clock: &'static str,
    /// What disturbed the scheduler thread from the start of the run to its stop (`None` when
    /// it stopped before the run started).
    pub sched_disturbance: Option<Disturbance>,
}

impl RunResult {
    /// The measuring threads' disturbance: the scheduler thread first, then the clients.
    pub fn disturbance(&self) -> Vec<Disturbance> {
        self.sched_disturbance.iter().cloned().chain(self.clients.iter().map(|c| c.disturbance.clone())).collect()
    }
}
