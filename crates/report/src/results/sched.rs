//! `schedlab sched --json`: one run of the scheduler harness, per client and in total.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::disturb::Disturbance;
use crate::hist::Summary;
use crate::machine::{MachineInfo, ThreadInfo};

super::schema_tag!(
    /// `"schedlab.sched/1"`.
    SchedSchema,
    "schedlab.sched",
    1
);

/// One harness run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sched {
    pub schema: SchedSchema,
    /// The machine the run was measured on.
    pub machine: MachineInfo,
    /// The command line as it was run (argv, the binary's path first).
    pub command: Vec<String>,
    /// The traffic program's source: its path, or the embedded default's name.
    pub traffic: String,
    /// The named workloads (`dist:w3`) the traffic file draws from: name, reading, checksum,
    /// source and commit (empty for hand-written lengths).
    pub workloads: Vec<super::workload::Workload>,
    pub seed: u64,
    /// Client threads (`-t`).
    pub threads: usize,
    /// Ring size between each client and the scheduler, packets (`-q`).
    pub queue_pkts: usize,
    /// The policy's canonical name (e.g. `alpha:10`, `drr`).
    pub alg: String,
    /// Its row label (e.g. `10`, `DRR`), as every table prints it.
    pub label: String,
    /// Flows the policy was configured with.
    pub flows: usize,
    /// The emulated link's rate (`-b`), or null when unlimited.
    pub link_nominal_bps: Option<u64>,
    /// Transmitted bits over the run's duration.
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub link_achieved_bps: f64,
    /// `link_achieved_bps / link_nominal_bps`, or null when the link is unlimited.
    pub link_utilisation: Option<f64>,
    /// Scheduler poll interval (`-i`), ns.
    pub sched_poll_ns: u64,
    /// Client poll interval (`-c`), ns.
    pub client_poll_ns: u64,
    /// Release batch, packets.
    pub batch: usize,
    /// `-D`: clients run scheduler passes themselves.
    pub distributed: bool,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub elapsed_s: f64,
    /// The harness clock's source: `tsc` (`rdtscp`, the kernel's clocksource) or `clock_gettime`.
    pub clock: String,
    /// Ctrl-C stopped the run: the figures cover the part that ran.
    pub interrupted: bool,
    /// The scheduler thread's placement, read back from the kernel.
    pub scheduler_thread: Option<ThreadInfo>,
    pub scheduler_requested_cpu: Option<usize>,
    pub scheduler_pin_error: Option<String>,
    /// Passes run by the scheduler thread (clients' passes in -D are `client_sched_passes`).
    pub scheduler_passes: u64,
    pub client_sched_passes: u64,
    /// The original's counters.
    pub counters: SchedCounters,
    /// Queue limit `-qmax` and the level `-qmin` it drops down to, packets.
    pub qmax_pkts: u64,
    pub qmin_pkts: u64,
    /// Clients that ran their program (`-k`).
    pub active_clients: usize,
    /// `-D`: the try-lock primitive, or null outside `-D`.
    pub lock: Option<String>,
    /// `-D`: the notification primitive, or null outside `-D`.
    pub notify: Option<String>,
    /// `-D`: what the primitives cost, or null outside `-D`.
    pub distributed_cost: Option<DistCost>,
    /// CPUs this process could use.
    pub cpus_available: Vec<usize>,
    /// One entry per client thread, in order.
    pub clients: Vec<SchedClient>,
    pub total_pkts: u64,
    pub total_bits: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub total_rate_pps: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub total_rate_bps: f64,
    /// Ring-full and scheduler drops of every client.
    pub total_drops: u64,
    /// Every client's delay together (client enqueue to client dequeue), µs.
    pub total_delay_us: Summary,
    /// Per measuring thread (the scheduler thread, then the clients): switches, migrations, the
    /// longest gap in its loop.
    pub disturbance: Vec<Disturbance>,
}

impl super::Kind for Sched {
    const NAME: &'static str = SchedSchema::NAME;
    const VERSION: u32 = SchedSchema::VERSION;
    const FILE: &'static str = "sched.schema.json";
}

/// One client's figures.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedClient {
    /// The client's index (0-based).
    pub client: usize,
    pub generated_pkts: u64,
    pub transmitted_pkts: u64,
    /// Packets dropped because the client's ring was full.
    pub ring_full_drops: u64,
    /// Packets the scheduler dropped (queue limit, policy).
    pub sched_drops: u64,
    /// Packets in the ring or the policy when the run stopped.
    pub queued_at_stop_pkts: u64,
    /// Transmitted bits.
    pub bits: u64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub rate_bps: f64,
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub rate_pps: f64,
    /// Client enqueue to client dequeue (the mark seen), µs.
    pub delay_us: Summary,
    /// Scheduler passes this client ran (`-D`).
    pub sched_passes_run: u64,
    /// Polls that found marks (the original's `cli_slow_read`).
    pub mark_polls: u64,
    /// Ran its program (`-k`).
    pub active: bool,
    /// The CPU it was to be pinned to (`--client-cpus`, or the default placement).
    pub requested_cpu: Option<usize>,
    /// Why pinning failed, when it did.
    pub pin_error: Option<String>,
    /// What it got, read back from the kernel.
    pub thread: ThreadInfo,
}

/// The original's counters of the scheduler's passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedCounters {
    /// Passes that neither took nor released a packet (`check_idle`).
    pub idle_passes: u64,
    /// Passes that ended with packets queued but the emulated link still busy (`stat_early`).
    pub early_passes: u64,
    /// Ring visits that took at least one message (`sch_fetch`).
    pub fetches: u64,
    /// Release batches: passes that marked at least one packet for the clients (`sch_pub`).
    pub publishes: u64,
    /// Packets dropped because the policy held `-qmax` packets (part of `sched_drops`).
    pub qlimit_drops: u64,
    /// Times the queue limit was reached with the link busy.
    pub qlimit_hits: u64,
    /// Ring visits cut short by the queue limit while the link was idle.
    pub qlimit_deferred: u64,
}

/// What distributed mode (`-D`) cost: the try-lock and notification traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistCost {
    /// Clients' try-locks that found the scheduler role held by someone else.
    pub trylock_busy: u64,
    /// Clients' try-locks that took the role (each then ran one pass).
    pub trylock_free: u64,
    /// Times the role changed hands between different threads.
    pub handovers: u64,
    /// Times the scheduler thread went to sleep, leaving the role to the clients.
    pub sleeps: u64,
    /// Times the scheduler thread woke up with a notification.
    pub wakeups: u64,
    /// Notifications clients sent to wake it.
    pub notifies: u64,
    /// Try-lock calls timed (one in every sample interval).
    pub trylock_sampled: u64,
    /// Mean time of one try-lock call, from the timed calls (ns; includes one clock read).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub trylock_avg_ns: f64,
    /// Mean time of one notify call, every call timed (ns).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub notify_avg_ns: f64,
    /// Time spent in try-lock calls, estimated from the samples (s).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub trylock_total_s: f64,
    /// Time spent in notify calls (s).
    #[serde(deserialize_with = "super::nan_or_number")]
    #[schemars(with = "super::NullableF64")]
    pub notify_total_s: f64,
}
