//! Notification mechanisms `notify` and `semtest` measure: one trait, six implementations.
//!
//! A [`Notifier`] carries "something happened" from one thread to another. `notify` adds one
//! notification; `wait` blocks until at least one is pending and consumes all pending ones,
//! returning how many (a counting mechanism such as eventfd hands several over in one wake-up,
//! which is how the seed's receiver counts fewer wake-ups than notifications).

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use serde::Serialize;

use crate::locks::{futex_wait, futex_wake, Sem};
use crate::PrimsError;

/// A one-directional notification channel between threads.
pub trait Notifier: Send + Sync {
    /// Posts one notification.
    fn notify(&self) -> io::Result<()>;
    /// Blocks until at least one notification is pending, consumes all pending ones and returns
    /// their number (at least 1).
    fn wait(&self) -> io::Result<u64>;
}

/// Which mechanism to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mechanism {
    /// Linux eventfd: write adds to a 64-bit counter, read returns and clears it (the seed's default).
    Eventfd,
    /// Unix pipe: one byte per notification, the reader drains what is there.
    Pipe,
    /// A futex word: a pending counter plus a sequence word the receiver sleeps on.
    Futex,
    /// POSIX unnamed semaphore: `sem_post` / `sem_wait` (then drained with `sem_trywait`).
    Sem,
    /// Mutex-protected counter plus a condition variable.
    Condvar,
    /// Unix stream socket pair: one byte per notification.
    Unix,
}

impl Mechanism {
    /// Every mechanism, in the order the help lists them.
    pub const ALL: [Mechanism; 6] =
        [Mechanism::Eventfd, Mechanism::Pipe, Mechanism::Futex, Mechanism::Sem, Mechanism::Condvar, Mechanism::Unix];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Eventfd => "eventfd",
            Mechanism::Pipe => "pipe",
            Mechanism::Futex => "futex",
            Mechanism::Sem => "sem",
            Mechanism::Condvar => "condvar",
            Mechanism::Unix => "unix",
        }
    }

    /// A new channel with nothing pending.
    pub fn create(self) -> Result<Box<dyn Notifier>, PrimsError> {
        Ok(match self {
            Mechanism::Eventfd => Box::new(EventFd::new()?),
            Mechanism::Pipe => Box::new(ByteChannel::pipe()?),
            Mechanism::Futex => Box::new(FutexChannel::default()),
            Mechanism::Sem => Box::new(SemChannel::new()?),
            Mechanism::Condvar => Box::new(CondvarChannel::default()),
            Mechanism::Unix => Box::new(ByteChannel::socketpair()?),
        })
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mechanism {
    type Err = PrimsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.to_ascii_lowercase();
        let alias = match s.as_str() {
            "semaphore" | "posix-sem" => "sem",
            "cond" | "condition" => "condvar",
            "socket" | "unix-socket" | "socketpair" => "unix",
            other => other,
        };
        Mechanism::ALL.iter().copied().find(|m| m.name() == alias).ok_or_else(|| PrimsError::UnknownName {
            what: "primitive",
            given: s,
            known: Mechanism::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
        })
    }
}

fn os_err(what: &'static str) -> PrimsError {
    PrimsError::Os { what, err: io::Error::last_os_error() }
}

/// Retries a syscall-like closure while it fails with EINTR.
fn retry_eintr(mut f: impl FnMut() -> isize) -> io::Result<isize> {
    loop {
        let r = f();
        if r >= 0 {
            return Ok(r);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Linux eventfd.
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A new eventfd with counter 0.
    pub fn new() -> Result<Self, PrimsError> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("eventfd"));
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }
}

impl Notifier for EventFd {
    fn notify(&self) -> io::Result<()> {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our descriptor.
        retry_eintr(|| unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) })?;
        Ok(())
    }
    fn wait(&self) -> io::Result<u64> {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64.
        retry_eintr(|| unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) })?;
        Ok(v)
    }
}

/// A byte stream (pipe or Unix socket pair): one byte per notification.
pub struct ByteChannel {
    rx: OwnedFd,
    tx: OwnedFd,
}

impl ByteChannel {
    /// A pipe.
    pub fn pipe() -> Result<Self, PrimsError> {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(os_err("pipe2"));
        }
        // SAFETY: both descriptors are fresh and owned by nobody else.
        Ok(unsafe { ByteChannel { rx: OwnedFd::from_raw_fd(fds[0]), tx: OwnedFd::from_raw_fd(fds[1]) } })
    }
    /// A connected Unix stream socket pair.
    pub fn socketpair() -> Result<Self, PrimsError> {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors socketpair writes.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
            return Err(os_err("socketpair"));
        }
        // SAFETY: both descriptors are fresh and owned by nobody else.
        Ok(unsafe { ByteChannel { rx: OwnedFd::from_raw_fd(fds[0]), tx: OwnedFd::from_raw_fd(fds[1]) } })
    }
}

impl Notifier for ByteChannel {
    fn notify(&self) -> io::Result<()> {
        let b = 1u8;
        // SAFETY: writes one byte from a valid location.
        retry_eintr(|| unsafe { libc::write(self.tx.as_raw_fd(), (&b as *const u8).cast(), 1) })?;
        Ok(())
    }
    fn wait(&self) -> io::Result<u64> {
        let mut buf = [0u8; 4096];
        // SAFETY: reads at most buf.len() bytes into buf.
        let n = retry_eintr(|| unsafe { libc::read(self.rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "notification channel closed"));
        }
        Ok(n as u64)
    }
}

/// Futex channel: `pending` counts notifications, `seq` changes on every notify and is what the
/// receiver sleeps on; the sender makes the wake syscall only when a receiver said it sleeps.
#[derive(Default)]
pub struct FutexChannel {
    pending: AtomicU64,
    seq: AtomicU32,
    sleepers: AtomicU32,
}

impl Notifier for FutexChannel {
    fn notify(&self) -> io::Result<()> {
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.seq.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            futex_wake(&self.seq, 1);
        }
        Ok(())
    }
    fn wait(&self) -> io::Result<u64> {
        loop {
            let s = self.seq.load(Ordering::SeqCst);
            let n = self.pending.swap(0, Ordering::SeqCst);
            if n > 0 {
                return Ok(n);
            }
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            // The kernel re-checks `seq == s` atomically: a notify after our load makes this
            // return at once instead of losing the wake-up.
            futex_wait(&self.seq, s);
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// POSIX semaphore channel.
pub struct SemChannel {
    sem: Sem,
}

impl SemChannel {
    /// A semaphore with value 0.
    pub fn new() -> Result<Self, PrimsError> {
        Ok(SemChannel { sem: Sem::new(0)? })
    }
}

impl Notifier for SemChannel {
    fn notify(&self) -> io::Result<()> {
        // SAFETY: initialised semaphore alive as long as self.
        if unsafe { libc::sem_post(self.sem.ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
    fn wait(&self) -> io::Result<u64> {
        // SAFETY: initialised semaphore alive as long as self.
        retry_eintr(|| unsafe { libc::sem_wait(self.sem.ptr()) } as isize)?;
        let mut n = 1;
        // SAFETY: as above.
        while unsafe { libc::sem_trywait(self.sem.ptr()) } == 0 {
            n += 1;
        }
        Ok(n)
    }
}

/// Mutex + condition variable around a counter.
#[derive(Default)]
pub struct CondvarChannel {
    pending: Mutex<u64>,
    cv: Condvar,
}

impl Notifier for CondvarChannel {
    fn notify(&self) -> io::Result<()> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        *p += 1;
        drop(p);
        self.cv.notify_one();
        Ok(())
    }
    fn wait(&self) -> io::Result<u64> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        while *p == 0 {
            p = self.cv.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        Ok(std::mem::take(&mut *p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_are_conserved_across_threads() {
        for m in Mechanism::ALL {
            let ch: Arc<dyn Notifier> = Arc::from(m.create().unwrap());
            let tx = ch.clone();
            let n = 5_000u64;
            let h = std::thread::spawn(move || {
                for _ in 0..n {
                    tx.notify().unwrap();
                }
            });
            let mut got = 0;
            let mut wakes = 0;
            while got < n {
                let k = ch.wait().unwrap();
                assert!(k >= 1, "{m}: a wait returns at least one notification");
                got += k;
                wakes += 1;
            }
            h.join().unwrap();
            assert_eq!(got, n, "{m}: nothing lost, nothing invented");
            assert!(wakes <= n);
        }
    }

    #[test]
    fn pending_notifications_are_handed_over_together() {
        for m in Mechanism::ALL {
            let ch = m.create().unwrap();
            for _ in 0..3 {
                ch.notify().unwrap();
            }
            assert_eq!(ch.wait().unwrap(), 3, "{m}");
        }
    }

    #[test]
    fn unknown_primitive_is_a_clear_error() {
        let e = "mqueue".parse::<Mechanism>().unwrap_err().to_string();
        assert!(e.contains("mqueue") && e.contains("eventfd"), "{e}");
        assert_eq!("socket".parse::<Mechanism>().unwrap(), Mechanism::Unix);
    }
}
