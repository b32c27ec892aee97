//! # schedlab-sim — the message-scheduling simulator
//!
//! A fast discrete-event simulator of the model in L. Cherkasova and T. Rokicki, *Alpha Message
//! Scheduling for Packet-Switched Interconnects* (HP Labs): messages of a few packets arrive at one
//! outlet; strategies from [`schedlab_policy`] decide packet order; all strategies run in lock step
//! on one sample path (common random numbers), exactly as the report's CSIM program (§16) did.
//!
//! Layers: [`replay`] (one recorded trace through one policy, deterministic service),
//! [`model`] (validated inputs: length distributions, strategies, traces),
//! [`engine`] (the event loop and statistics), [`expo`] (ziggurat exponential variates), [`wyrand`] (the per-packet service stream's generator), [`output`] (the report's tables, `>>` lines, JSON,
//! CSV), [`plot`] (Figures 1–4 as SVG), [`bench`](mod@bench) (throughput benchmark), [`cli`] (`schedlab sim`'s argv into a plan), [`app`] (the commands' flow: run, print, write, exit code).
//!
//! The library face is [`job`]: a [`job::Config`], [`job::run`] returning [`job::SimResults`],
//! and its writers (text, JSON, CSV); [`cli`] only turns argv into a `Config`.
//!
//! Time is measured in *time units*: the mean packet service time (field suffix `_tu`).

pub mod app;
pub mod bench;
pub mod cli;
pub mod engine;
pub mod expo;
pub mod format;
pub mod job;
pub mod model;
pub mod output;
pub mod plot;
pub mod questions;
pub mod replay;
pub mod replicate;
pub mod stats;
pub mod theory;
pub mod wyrand;

pub use engine::{run, Arrivals, Control, RunResult, SimConfig};
pub use model::{LengthDist, Strategy};
