//! # schedlab-sweep — grids of simulator runs at scale
//!
//! A sweep spec (TOML, [`spec`]) names axes — traffic levels, length distributions, service
//! models, packet counts, seeds — and options fixed across them. Each point of the grid is a
//! *cell*: one simulator run with every strategy in lock step. [`run::run_cell`] turns a cell
//! into rows of the tidy table ([`table`]), and is the one entry point that the local pool
//! ([`run::run_local`]), the Python package and its Ray backend all call, so every backend gives
//! identical numbers for the same seeds. [`journal`] makes local runs resumable.
//!
//! The library face is [`job`]: a [`job::Config`], [`job::prepare`] and [`job::run`] (the whole
//! sweep into its table, resumable), [`job::merge`]; the table's writers are in [`table`] (CSV,
//! Parquet, and JSON lines of the typed row `schedlab.sweep-row/1`); its errors are a typed
//! [`job::JobError`]. [`cli`] turns `schedlab sweep` and `schedlab sweep merge` command lines into
//! a `Config` and does nothing else; [`app`] is the command as the binary runs it (parse, prepare,
//! run with a progress bar, report on stderr).

pub mod app;
pub mod cli;
pub mod job;
pub mod journal;
pub mod run;
pub mod spec;
pub mod table;

pub use run::run_cell;
pub use spec::{CellJob, Sweep};

/// This build's version, recorded in every row and in the sweep fingerprint.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
