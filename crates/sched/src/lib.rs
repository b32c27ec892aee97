//! Real multi-threaded scheduler harness: client SPSC rings, one scheduler thread, emulated link.
pub mod cli;
