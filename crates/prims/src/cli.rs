//! Command-line entry point (being built; see the issue tracker).
use std::ffi::OsString;

/// Runs the command; `args[0]` is the command name.
pub fn main(args: Vec<OsString>) -> anyhow::Result<i32> {
    anyhow::bail!("'{}' is not available in this build yet", args[0].to_string_lossy())
}
