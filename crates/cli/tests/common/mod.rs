//! Helpers shared by the CLI test files (each test file includes this module with `mod common;`).

/// Whether process `pid` catches signal `sig`: bit `sig - 1` of `SigCgt` in /proc/PID/status.
/// Tests send a signal only once this is true, so it is never lost to a handler not yet installed.
pub fn catches(pid: u32, sig: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
}
