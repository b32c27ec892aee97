//! What can stop a run before or while it starts: a configuration the harness cannot run, a
//! primitive the kernel refused, a thread that could not start or that panicked. Each message
//! says what to change; the binary adds its own context (`anyhow`) on top.

use schedlab_prims::PrimsError;

/// Why [`crate::harness::run`] did not produce a result. A cause from below (the kernel's refusal)
/// is part of the message and not also a `source()`: the binary prints the chain with `{:#}`, which
/// would print it twice.
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
    #[error("distributed mode (-D) needs a {mechanism} notifier: {cause}")]
    Notifier { mechanism: String, cause: PrimsError },
    #[error("cannot create the scheduler lock ({kind}): {cause}")]
    Lock { kind: String, cause: PrimsError },
    #[error("cannot start the scheduler thread: {0}")]
    SpawnScheduler(std::io::Error),
    #[error("cannot start client thread {index}: {cause}")]
    SpawnClient { index: usize, cause: std::io::Error },
    #[error("the scheduler thread panicked")]
    SchedulerPanicked,
    #[error("a client thread panicked")]
    ClientPanicked,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// The kernel's refusal is in the message once, and not repeated by the source chain the
    /// binary prints with `{:#}`.
    #[test]
    fn a_cause_is_printed_once() {
        let io = || std::io::Error::from_raw_os_error(11);
        let errs = [
            HarnessError::SpawnClient { index: 2, cause: io() },
            HarnessError::Lock { kind: "spin".into(), cause: PrimsError::Os { what: "lock", err: io() } },
            HarnessError::Notifier { mechanism: "futex".into(), cause: PrimsError::Os { what: "futex", err: io() } },
            HarnessError::SpawnScheduler(io()),
        ];
        let cause = io().to_string();
        for e in errs {
            let chain = format!("{:#}", anyhow::Error::new(e));
            assert_eq!(chain.matches(&cause).count(), 1, "{chain}");
        }
        assert!(HarnessError::SpawnClient { index: 0, cause: io() }.source().is_none());
    }
}
