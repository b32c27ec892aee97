//! What can stop a run before or while it starts: a configuration the harness cannot run, a
//! primitive the kernel refused, a thread that could not start or that panicked. Each message
//! says what to change; the binary adds its own context (`anyhow`) on top.

use schedlab_prims::PrimsError;

/// Why [`crate::harness::run`] did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("need at least one client thread (-t)")]
    NoClients,
    #[error("the queue size (-q) must be in 1..={max}")]
    QueueSize { max: usize },
    #[error("packet length {len} exceeds {max} bytes")]
    PacketTooLong { len: u32, max: u32 },
    #[error("one program per client thread")]
    Programs,
    #[error(
        "thread {thread} sends bursts of {burst} packets but the queue (-q) holds {queue}: with -alg {alg} a burst is \
         one message and must fit in the queue; raise -q"
    )]
    BurstOverQueue { thread: usize, burst: u32, queue: usize, alg: String },
    #[error(
        "-flowsets configures {flows} flows but there are {clients} clients (client i is flow i): add flows, e.g. \
         -flowsets 1:1500:{clients}"
    )]
    TooFewFlows { flows: usize, clients: usize },
    #[error("distributed mode (-D) needs a {mechanism} notifier: {source}")]
    Notifier { mechanism: String, source: PrimsError },
    #[error("cannot create the scheduler lock ({kind}): {source}")]
    Lock { kind: String, source: PrimsError },
    #[error("cannot start the scheduler thread: {0}")]
    SpawnScheduler(std::io::Error),
    #[error("cannot start client thread {index}: {source}")]
    SpawnClient { index: usize, source: std::io::Error },
    #[error("the scheduler thread panicked")]
    SchedulerPanicked,
    #[error("a client thread panicked")]
    ClientPanicked,
}
