//! # schedlab-predict — the model's prediction and the real scheduler's measurement, side by side
//!
//! The simulator (`schedlab-sim`) and the real harness (`schedlab-sched`) run the same policy code
//! (`schedlab-policy`) but never import each other; they meet here.
//!
//! - [`compare`]: the recorded messages of a harness run, their arrivals replayed through the
//!   simulator with a deterministic service time, measured vs predicted per message length, and
//!   where the measured time went;
//! - [`order`]: the exact-order check — the harness's release sequence against the simulator's
//!   from the arrivals as the scheduler saw them;
//! - [`repeat`]: `--repeat N`: runs set aside by the verdict dropped and named, median and spread
//!   of the rest;
//!
//! The library face: a [`config::Config`] (plain data), [`run::run`] (or [`run::run_with`], with
//! progress and an interrupt) returning the typed result [`run::Predict`]
//! (`schedlab_report::results::predict`, `schedlab.predict/1`) with each run's "cannot keep up"
//! verdict, and its writers in [`output`] (text, JSON, plot). [`cli`] turns `schedlab predict`'s
//! command line (schedlab sched's options, `--algs`, `--plot`, `--json`) into a `Config`; [`app`]
//! is the command's flow (run, print, write files, exit code).
pub mod app;
pub mod cli;
pub mod compare;
pub mod config;
pub mod order;
pub mod output;
pub mod repeat;
pub mod run;
