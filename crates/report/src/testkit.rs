//! Test kit: how a test says it skipped.
//!
//! libtest has no runtime skip, and it captures what a passing test prints, so a bare
//! `eprintln!("SKIP…"); return` counts as a pass nobody sees. [`skip`] (and the [`skip!`] macro,
//! which also returns) prints the reason to stderr *and* appends one line
//! `SKIP<TAB>test<TAB>reason` to the file named by `SCHEDLAB_SKIP_LOG`, when that variable is set.
//! `.ci/run` sets it, then counts and names every skip in its summary, so a skip is never read as a
//! pass.
//!
//! Use it for what this machine lacks (a CPU count, root, a package, a kernel feature), or for a
//! measurement this run cannot judge because the machine disturbed it (a client that lost its CPU
//! longer than its ring holds; two programs whose own run-to-run swing exceeds the tolerance), the
//! reason naming the figure that says so; a server that fails to start is a failure, not a skip.

use std::io::Write;

/// The environment variable naming the file that skips are appended to.
pub const SKIP_LOG_ENV: &str = "SCHEDLAB_SKIP_LOG";

/// Records that `test` was skipped for `reason`: a `SKIP: test: reason` line on stderr and, when
/// `SCHEDLAB_SKIP_LOG` is set, one tab-separated line appended to that file.
pub fn skip(test: &str, reason: &str) {
    skip_to(std::env::var_os(SKIP_LOG_ENV).map(std::path::PathBuf::from).as_deref(), test, reason);
}

fn skip_to(log: Option<&std::path::Path>, test: &str, reason: &str) {
    let reason = reason.replace(['\n', '\t'], " ");
    eprintln!("SKIP: {test}: {reason}");
    if let Some(path) = log {
        // One write call per line with O_APPEND: lines from parallel tests do not interleave.
        let line = format!("SKIP\t{test}\t{reason}\n");
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
        match file {
            Ok(mut f) => {
                if let Err(e) = f.write_all(line.as_bytes()) {
                    eprintln!("warning: cannot append to {}: {e}", path.display());
                }
            }
            Err(e) => eprintln!("warning: cannot open {}: {e}", path.display()),
        }
    }
}

/// The current test's name as libtest gives it to its thread (`module::test_name`), or `?`.
pub fn current_test() -> String {
    std::thread::current().name().unwrap_or("?").to_string()
}

/// Skips the current test: records the reason with [`skip`] under the current test's name, then
/// returns from the enclosing function. `skip!("no chromium ({})", why)` takes `format!` arguments.
#[macro_export]
macro_rules! skip {
    ($($arg:tt)*) => {{
        $crate::testkit::skip(&$crate::testkit::current_test(), &format!($($arg)*));
        return;
    }};
}

/// Drops root for the calling thread only, for a test that needs an unprivileged thread in a
/// process run as root: the raw `setresuid` system call changes one thread's credentials (glibc's
/// `setresuid` would change every thread of the process), threads it starts inherit them, and
/// leaving uid 0 clears the thread's capabilities (`CAP_SYS_NICE`, `CAP_NET_ADMIN`). Returns false,
/// changing nothing, when the thread was not root.
pub fn drop_root_in_this_thread() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return false;
    }
    // SAFETY: a plain system call on the calling thread's credentials.
    let rc = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
    assert_eq!(rc, 0, "setresuid: {}", std::io::Error::last_os_error());
    true
}

/// The calling process's soft `RLIMIT_RTPRIO`: the highest SCHED_FIFO priority it may take
/// without `CAP_SYS_NICE`.
pub fn rtprio_limit() -> u64 {
    // SAFETY: rlimit is plain data; getrlimit writes it.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        assert_eq!(libc::getrlimit(libc::RLIMIT_RTPRIO, &mut r), 0);
        r.rlim_cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_appends_one_line_naming_the_test() {
        let dir = std::env::temp_dir().join(format!("schedlab-skip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips.log");
        let _ = std::fs::remove_file(&log);
        // Through skip_to, not the environment, which other tests in this process share.
        skip_to(Some(&log), "a::b", "no root");
        skip_to(Some(&log), "a::c", "two\nlines\tand a tab");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, ["SKIP\ta::b\tno root", "SKIP\ta::c\ttwo lines and a tab"]);
        assert!(current_test().contains("a_skip_appends_one_line_naming_the_test"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
