//! Micro-benchmarks of scheduler building blocks: trylock, notify, semtest.
pub mod cli;
