//! Discrete-event simulator (being built).
pub mod cli;
