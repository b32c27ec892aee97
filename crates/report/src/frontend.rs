//! The front-end kit every command shares, so each of these concerns has one home:
//! - [`now_ns`]: the one clock read (`CLOCK_MONOTONIC`, nanoseconds) that timestamps and
//!   measurement loops use;
//! - [`interrupt`]: one SIGINT/SIGTERM handler per process; long runs poll
//!   [`Interrupt::requested`], stop, print what they have and exit with [`exit::INTERRUPTED`]; a
//!   second signal ends the process at once;
//! - [`guard_closed_pipes`]: output whose reader went away (`schedlab sim | head -1`) ends the
//!   process quietly with [`exit::CLOSED_PIPE`] instead of a panic;
//! - [`exit`]: the exit codes, documented in the README;
//! - [`check_writable`]: an output file named on the command line is checked before anything is
//!   measured, not found unwritable after the run.
//!
//! The JSON and CSV writers are in [`crate::export`].

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};

/// Exit codes of every schedlab command.
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// An error (bad input file, a failed system call, ...); the message says what to do.
    pub const ERROR: i32 = 1;
    /// A usage error: an unknown option or a bad option value.
    pub const USAGE: i32 = 2;
    /// Interrupted by SIGINT or SIGTERM; the partial results were written.
    pub const INTERRUPTED: i32 = 130;
    /// The reader of the output went away (a closed pipe), as a C tool killed by SIGPIPE.
    pub const CLOSED_PIPE: i32 = 141;
}

/// Nanoseconds on `CLOCK_MONOTONIC` (the vDSO path on Linux).
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The process's interrupt state: set by the first SIGINT or SIGTERM.
pub struct Interrupt {
    flag: AtomicBool,
    signals: AtomicU32,
    subscribers: Mutex<Vec<mpsc::Sender<()>>>,
}

static INTERRUPT: OnceLock<Interrupt> = OnceLock::new();

/// The process's one interrupt flag, installing the SIGINT/SIGTERM handler on first use.
///
/// The first signal sets the flag and wakes every [`Interrupt::subscribe`]r; the run is expected to
/// stop and write its partial results. A second signal exits at once with [`exit::INTERRUPTED`].
/// If a handler cannot be installed (another library took the signals), the flag simply never
/// sets and the signal keeps its default action; [`Interrupt::installed`] says which.
pub fn interrupt() -> &'static Interrupt {
    let mut first = false;
    let i = INTERRUPT.get_or_init(|| {
        first = true;
        Interrupt { flag: AtomicBool::new(false), signals: AtomicU32::new(0), subscribers: Mutex::new(Vec::new()) }
    });
    if first {
        install_handler();
    }
    i
}

fn install_handler() {
    let ok = ctrlc::set_handler(|| {
        let Some(i) = INTERRUPT.get() else { return };
        if i.signals.fetch_add(1, Ordering::SeqCst) >= 1 {
            std::process::exit(exit::INTERRUPTED);
        }
        i.flag.store(true, Ordering::SeqCst);
        if let Ok(subs) = i.subscribers.lock() {
            for s in subs.iter() {
                let _ = s.send(());
            }
        }
    })
    .is_ok();
    INSTALLED.store(ok, Ordering::SeqCst);
}

/// Whether [`install_handler`] succeeded.
static INSTALLED: AtomicBool = AtomicBool::new(false);

impl Interrupt {
    /// True once SIGINT or SIGTERM arrived.
    #[inline]
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
    /// The flag itself, for loops and libraries that take an `&AtomicBool`.
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }
    /// A channel that receives one message per signal (for threads that block instead of polling).
    pub fn subscribe(&self) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        if let Ok(mut subs) = self.subscribers.lock() {
            // A signal that came between the handler's installation and this call is not lost.
            if self.requested() {
                let _ = tx.send(());
            }
            subs.push(tx);
        }
        rx
    }
    /// Whether the handler is in place (false when another handler owned the signals).
    pub fn installed(&self) -> bool {
        INSTALLED.load(Ordering::SeqCst)
    }
    /// Sets the flag as a signal would (tests, and runs stopped for another reason).
    pub fn request(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }
}

/// Makes a write to a closed stdout or stderr end the process quietly with
/// [`exit::CLOSED_PIPE`], as SIGPIPE ends a C tool, instead of panicking (Rust ignores SIGPIPE, so
/// `println!` to a closed pipe panics). Every other panic keeps the default report. Call once, at
/// the start of `main`.
pub fn guard_closed_pipes() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_pipe_panic(msg) {
            std::process::exit(exit::CLOSED_PIPE);
        }
        default(info);
    }));
}

/// An output file that cannot be written, found before measuring.
#[derive(Debug, thiserror::Error)]
#[error("{what} file {} cannot be written (checked before measuring)", path.display())]
pub struct NotWritable {
    /// The option that names the file (`--json`, `-o`, ...).
    pub what: String,
    pub path: std::path::PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Fails unless `path` can be written, without truncating an existing file or leaving a new one
/// behind; `what` is the option that names it. `-` (stdout) always passes.
pub fn check_writable(path: &std::path::Path, what: &str) -> Result<(), NotWritable> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let r = if path.exists() {
        std::fs::OpenOptions::new().append(true).open(path).map(drop)
    } else {
        std::fs::OpenOptions::new().write(true).create_new(true).open(path).and_then(|_| std::fs::remove_file(path))
    };
    r.map_err(|source| NotWritable { what: what.to_string(), path: path.to_path_buf(), source })
}

/// The message std's print macros panic with when their stream's reader is gone.
fn is_closed_pipe_panic(msg: &str) -> bool {
    (msg.starts_with("failed printing to stdout") || msg.starts_with("failed printing to stderr"))
        && (msg.contains("Broken pipe") || msg.contains("os error 32"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_in_nanoseconds() {
        let a = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = now_ns();
        assert!(b > a && b - a >= 2_000_000 && b - a < 2_000_000_000, "{a} {b}");
    }

    #[test]
    fn closed_pipe_panics_are_recognised_and_others_are_not() {
        assert!(is_closed_pipe_panic("failed printing to stdout: Broken pipe (os error 32)"));
        assert!(is_closed_pipe_panic("failed printing to stderr: Broken pipe (os error 32)"));
        assert!(!is_closed_pipe_panic("failed printing to stdout: No space left on device (os error 28)"));
        assert!(!is_closed_pipe_panic("index out of bounds"));
    }

    #[test]
    fn writability_is_checked_without_side_effects() {
        let dir = std::env::temp_dir().join(format!("schedlab-frontend-wr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.txt");
        check_writable(&f, "-o").unwrap();
        assert!(!f.exists(), "no file is left behind");
        std::fs::write(&f, "keep").unwrap();
        check_writable(&f, "-o").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "keep", "an existing file is not truncated");
        let e = check_writable(&dir.join("none/x.txt"), "--histfile").unwrap_err();
        assert!(e.to_string().contains("--histfile file") && e.to_string().contains("none/x.txt"), "{e}");
        assert_eq!(e.source.kind(), std::io::ErrorKind::NotFound);
        check_writable(std::path::Path::new("-"), "--json").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_flag_is_shared_and_subscribers_are_told() {
        let i = interrupt();
        assert!(std::ptr::eq(i, interrupt()), "one flag per process");
        let rx = i.subscribe();
        assert!(i.installed());
        // SAFETY: raising SIGINT in this test process runs the handler installed above.
        unsafe { libc::raise(libc::SIGINT) };
        rx.recv_timeout(std::time::Duration::from_secs(5)).expect("subscriber woken");
        assert!(i.requested());
    }
}
