//! # schedlab-prims — what the building blocks under a scheduler cost
//!
//! The distributed mode of the `sched` harness hands the scheduler role around with a
//! `sem_trywait` and wakes a sleeping scheduler through an eventfd. This crate measures exactly
//! those costs, honestly, as three commands:
//! - [`trylock`]: the cost of a trylock on a busy lock (test A, ops/s) and of trylock/unlock while
//!   threads pass the lock token around (test B, per-operation samples), for six lock designs
//!   ([`locks`]), plus a strict two-thread ping-pong used to cross-check test B;
//! - [`notify`]: receiver wake-up rate and sender cost for six notification mechanisms ([`chan`]);
//! - [`semtest`]: wake-up latency between thread pairs (round trip as the original, or one-way as
//!   rt-tests' `ptsematest`), with explicit placement and HDR percentiles.
//!
//! Every sample uses the nanosecond clock of [`clock`], whose own cost is measured and
//! reported. Every thread reads back what it actually got ([`place`]): CPU, policy, priority;
//! asked-for-but-refused pinning or real-time priority is reported as *degraded* and the commands
//! fail unless told `--allow-degraded`.
//!
//! Each measurement is a library face: a configuration ([`trylock::TrylockConfig`],
//! [`notify::NotifyConfig`], [`semtest::SemtestConfig`]) and a `run` that returns the typed
//! result's run (`schedlab_report::results::{trylock, notify, semtest}`) with the raw samples the
//! result does not carry. [`cli`] turns the seeds' command lines into those configurations and
//! nothing else; [`app`] runs them as the binary does: the seeds' output lines and the `--json`
//! results that embed the machine facts of `schedlab_report::machine`.

pub mod app;
pub mod chan;
pub mod cli;
pub mod clock;
pub mod locks;
pub mod notify;
pub mod place;
pub mod semtest;
pub mod trylock;

use thiserror::Error;

/// The name a unit-variant enum serialises to (`eventfd`, `pingpong`): the string the typed
/// results (`schedlab_report::results`) record for it.
pub(crate) fn serde_name<T: serde::Serialize>(x: &T) -> String {
    match serde_json::to_value(x) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => format!("<unnamed: {e}>"),
    }
}

/// Errors of the measurement layer.
#[derive(Debug, Error)]
pub enum PrimsError {
    #[error("unknown {what} '{given}'; choose one of: {known}")]
    UnknownName { what: &'static str, given: String, known: String },
    #[error("{what} failed: {err}")]
    Os { what: &'static str, err: std::io::Error },
    #[error("{what}: CPU {cpu} is not available to this process (allowed CPUs: {allowed})")]
    BadCpu { what: String, cpu: usize, allowed: String },
    #[error("{0}")]
    BadInput(String),
    #[error(
        "not measured: what was asked for was not granted:\n  {}\nfix the cause above, or pass --allow-degraded to measure anyway (the result then records what each thread really got)",
        .0.join("\n  ")
    )]
    Degraded(Vec<String>),
    #[error("a measuring thread failed: {0}")]
    Worker(String),
}
