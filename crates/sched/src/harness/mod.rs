//! The run: client threads, their rings, the scheduler (a thread, or in distributed mode whoever
//! holds the scheduler lock), the emulated link, and the exact accounting at the end.
//!
//! ## Clock
//! Every timestamp is nanoseconds on the `CLOCK_MONOTONIC` time line, from [`crate::clock`] (one
//! `rdtscp` where the kernel keeps time with the TSC, else `clock_gettime`), read where the event
//! happens or once per batch *after* the ring was read, never before:
//! - `cli_enq`: the client's clock read before it writes and publishes the packet;
//! - `sch_enq`: read by the scheduler once it saw a client's ring non-empty, once per pass for
//!   the visits (a message stamped later than that read waits for the next visit, so the stage
//!   is never negative; this one read is a plain `rdtsc` that need not wait for the ring's loads);
//! - `sch_deq`: read after the pass's takes, once per release batch, before the marks are stored;
//! - `cli_deq`: read by the client after it counted the marks it will consume, once per poll
//!   (a mark stored later than that read is counted at the next poll).
//!
//! So each of the three deltas is a real, non-negative measurement of its stage, and a zero means
//! the two reads fell within the clock's resolution. The timestamp files' `cli_enq` is the
//! clock's absolute value; the other three fields are nanosecond deltas summing to the packet's
//! life (`cli_deq` time - `cli_enq`).
//!
//! ## Link emulation
//! The link is idle at `next_idle`; each released packet of `len` bytes moves it by
//! `len × 8 / bw`, kept in fixed point (2^-16 ps) so that even `10T` with 60-byte packets (48 ps)
//! accumulates exactly. The scheduler releases while `next_idle ≤ now`, at most `-B` packets per
//! pass. A packet enqueued into an empty policy sets `next_idle = max(next_idle, now)`: idle time
//! earns no credit, while a late scheduler pass still catches up with a backlog.
//!
//! ## Layout
//! - [`policy`]: the policy choice (`-alg`, a [`PolicySpec`] of the one vocabulary), the policy's
//!   payload and `prio`'s per-message α;
//! - [`core`]: the pure scheduler core, with time as a parameter (ring visits, the policy, the
//!   emulated link, the queue limit, the trace);
//! - [`threads`]: the run itself: client threads, the scheduler thread, distributed mode's
//!   scheduler role;
//! - [`results`]: what a run measured, per client and from the scheduler's view;
//! - [`error`]: why a run could not start or finish ([`HarnessError`]).

pub mod core;
pub mod error;
pub mod policy;
pub mod results;
pub mod threads;

pub use self::core::{Core, SchedCounters, TraceEvent, VISIT};
pub use self::error::HarnessError;
pub use self::policy::{alg_error, message_level, EntryAlphas, Item, PolicySpec, WithAlpha};
pub use self::results::{ClientResult, DistCost, RunResult, SchedView, TsRecord};
pub use self::threads::{run, CLIENT_SCHED_BUDGET, IDLE_BEFORE_SLEEP, TRYLOCK_SAMPLE};

use schedlab_policy::FlowWeight;
use schedlab_prims::chan::Mechanism;
use schedlab_prims::locks::LockKind;

use crate::traffic::Traffic;
use crate::units::{Bps, Nanos};

/// `CLOCK_MONOTONIC` in nanoseconds: the front-end kit's one clock read (the harness's hot paths
/// read [`crate::clock::Clock`], the same time line).
pub use schedlab_report::frontend::now_ns;

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Config {
    pub threads: usize,
    pub traffic: Traffic,
    pub queue: usize,
    /// `None`: unlimited.
    pub bandwidth: Option<Bps>,
    pub sched_poll: Nanos,
    pub client_poll: Nanos,
    pub sched_cpu: Option<usize>,
    /// `--client-cpus`: client i is pinned to `list[i % len]`. None: see [`client_placement`].
    pub client_cpus: Option<Vec<usize>>,
    /// `-k`: clients `0..active` run their programs; the others exist (their rings are polled)
    /// but send nothing.
    pub active: usize,
    pub batch: usize,
    pub distributed: bool,
    /// `-D`: the lock that hands the scheduler role around (default the original's semaphore).
    pub lock: LockKind,
    /// `-D`: how clients wake the sleeping scheduler thread (default the original's eventfd).
    pub notify: Mechanism,
    pub duration_cap: Option<Nanos>,
    /// The policy (`-alg`), parsed, labelled and built by `schedlab_policy::spec`.
    pub alg: PolicySpec,
    pub flows: Vec<FlowWeight>,
    /// Scheduler queue limit (`-qmax`, packets inside the policy): at this many packets the
    /// scheduler drops what it takes from the rings until the policy is down to `qmin` (`-qmin`).
    pub qmax: u64,
    pub qmin: u64,
    /// Timestamp records kept per client (0: none).
    pub ts_limit: usize,
    /// Record the scheduler's enqueue/release sequence (tests).
    pub trace: bool,
    /// Seed of the clients' generators (message lengths, Poisson gaps).
    pub seed: u64,
    /// Keep one record per message (burst) in every client.
    pub messages: bool,
}

impl Config {
    /// A configuration with the command line's defaults: one program per client, queue 100,
    /// unlimited link, zero polling intervals, no pinning, no queue limit beyond the rings.
    pub fn new(programs: Vec<Vec<crate::traffic::Spec>>, alg: PolicySpec, flows: Vec<FlowWeight>) -> Config {
        let threads = programs.len();
        Config {
            threads,
            traffic: Traffic { programs, warnings: vec![] },
            queue: 100,
            bandwidth: None,
            sched_poll: Nanos(0),
            client_poll: Nanos(0),
            sched_cpu: None,
            client_cpus: None,
            active: threads,
            batch: 500,
            distributed: false,
            lock: LockKind::Sem,
            notify: Mechanism::Eventfd,
            duration_cap: None,
            alg,
            flows,
            qmax: u64::MAX,
            qmin: 0,
            ts_limit: 0,
            trace: false,
            seed: 1,
            messages: false,
        }
    }
}

/// Where client `i` of `threads` is pinned: `--client-cpus` spread round robin; otherwise, when
/// the scheduler is pinned to CPU `a`, the allowed CPUs other than `a` round robin (all on `a`'s
/// neighbours, never on `a` while another CPU is allowed); otherwise not pinned.
pub fn client_placement(i: usize, client_cpus: Option<&[usize]>, sched_cpu: Option<usize>, allowed: &[usize]) -> Option<usize> {
    match (client_cpus, sched_cpu) {
        (Some(list), _) if !list.is_empty() => Some(list[i % list.len()]),
        (_, Some(a)) => {
            let others: Vec<usize> = allowed.iter().copied().filter(|&c| c != a).collect();
            if others.is_empty() {
                None
            } else {
                Some(others[i % others.len()])
            }
        }
        _ => None,
    }
}
