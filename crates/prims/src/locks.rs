//! The locks `trylock` measures: one trait, six implementations.
//!
//! Every lock offers only what the benchmark exercises — a non-blocking `try_lock` and an
//! `unlock` by the thread that holds it. The POSIX semaphore (`sem_trywait`/`sem_post`) is the
//! seed's primitive; the others show what the same token costs with other designs. Whether a
//! failed try *writes* the lock's cache line (`tas`, `futex`: an atomic swap or compare-and-swap)
//! or only reads it (`sem`, `ttas`) decides how much waiters slow down the holder.

use std::cell::UnsafeCell;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use serde::Serialize;

use crate::PrimsError;

/// A lock that can be tried without blocking.
pub trait TryLock: Send + Sync {
    /// Takes the lock if it is free; never blocks. True when taken.
    fn try_lock(&self) -> bool;
    /// Releases a lock the calling thread holds.
    fn unlock(&self);
}

/// Which lock to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// POSIX unnamed semaphore, value 1: `sem_trywait` / `sem_post` (the seed's primitive).
    Sem,
    /// `pthread_mutex_trylock` / `pthread_mutex_unlock` (default mutex type).
    Mutex,
    /// `pthread_spin_trylock` / `pthread_spin_unlock`.
    Spinlock,
    /// A futex word with the three states of Drepper's "Futexes are tricky" mutex.
    Futex,
    /// Test-and-set: one atomic swap (a busy try is an atomic write too).
    Tas,
    /// Test-and-test-and-set: a plain read first, the swap only if the lock looks free.
    Ttas,
    /// Ticket lock: `next`/`serving` counters; a try takes a ticket only when it would be served.
    Ticket,
}

impl LockKind {
    /// Every kind, in the order the help lists them.
    pub const ALL: [LockKind; 7] =
        [LockKind::Sem, LockKind::Mutex, LockKind::Spinlock, LockKind::Futex, LockKind::Tas, LockKind::Ttas, LockKind::Ticket];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Sem => "sem",
            LockKind::Mutex => "mutex",
            LockKind::Spinlock => "spinlock",
            LockKind::Futex => "futex",
            LockKind::Tas => "tas",
            LockKind::Ttas => "ttas",
            LockKind::Ticket => "ticket",
        }
    }

    /// A new, free lock of this kind (the calling thread's memory node/cache gets it first).
    pub fn create(self) -> Result<Box<dyn TryLock>, PrimsError> {
        Ok(match self {
            LockKind::Sem => Box::new(SemLock::new()?),
            LockKind::Mutex => Box::new(MutexLock::new()),
            LockKind::Spinlock => Box::new(SpinLock::new()?),
            LockKind::Futex => Box::new(FutexLock::default()),
            LockKind::Tas => Box::new(TasLock::default()),
            LockKind::Ttas => Box::new(TtasLock::default()),
            LockKind::Ticket => Box::new(TicketLock::default()),
        })
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LockKind {
    type Err = PrimsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.to_ascii_lowercase();
        let alias = match s.as_str() {
            "semaphore" | "posix-sem" => "sem",
            "pthread-mutex" => "mutex",
            "spin" | "pthread-spin" => "spinlock",
            other => other,
        };
        LockKind::ALL.iter().copied().find(|k| k.name() == alias).ok_or_else(|| PrimsError::UnknownName {
            what: "lock",
            given: s,
            known: LockKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
        })
    }
}

/// The libc synchronisation objects this crate wraps.
pub(crate) trait LibcSync {}
impl LibcSync for libc::sem_t {}
impl LibcSync for libc::pthread_mutex_t {}
impl LibcSync for libc::pthread_spinlock_t {}

/// A libc synchronisation object at a fixed heap address on its own cache line, so that nothing
/// else shares (or moves) the line the benchmark measures.
pub(crate) struct LibcCell<T: LibcSync> {
    cell: Box<CacheLine<T>>,
}

#[repr(align(64))]
struct CacheLine<T>(UnsafeCell<T>);

// SAFETY: the wrapped objects (sem_t, pthread mutexes and spinlocks; see `LibcSync`) are made to
// be used by many threads at once through their own libc functions, which is the only access
// `LibcCell` gives; the box keeps their address stable, as those functions require.
unsafe impl<T: LibcSync> Send for LibcCell<T> {}
// SAFETY: as above.
unsafe impl<T: LibcSync> Sync for LibcCell<T> {}

impl<T: LibcSync> LibcCell<T> {
    pub(crate) fn new(value: T) -> Self {
        LibcCell { cell: Box::new(CacheLine(UnsafeCell::new(value))) }
    }
    #[inline]
    pub(crate) fn ptr(&self) -> *mut T {
        self.cell.0.get()
    }
}

/// An unnamed, process-private POSIX semaphore.
pub(crate) struct Sem(LibcCell<libc::sem_t>);

impl Sem {
    /// A semaphore with initial `value`.
    pub(crate) fn new(value: u32) -> Result<Sem, PrimsError> {
        // SAFETY: sem_t is plain data; all-zero bytes are a valid initial value until sem_init below.
        let sem = LibcCell::new(unsafe { std::mem::zeroed::<libc::sem_t>() });
        // SAFETY: the pointer is valid, stable and exclusively ours; pshared 0 (threads of one process).
        if unsafe { libc::sem_init(sem.ptr(), 0, value) } != 0 {
            return Err(PrimsError::Os { what: "sem_init", err: std::io::Error::last_os_error() });
        }
        Ok(Sem(sem))
    }
    #[inline]
    pub(crate) fn ptr(&self) -> *mut libc::sem_t {
        self.0.ptr()
    }
}

impl Drop for Sem {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; no thread uses it any more (we own it exclusively).
        unsafe { libc::sem_destroy(self.ptr()) };
    }
}

/// POSIX unnamed semaphore used as a binary lock.
pub struct SemLock {
    sem: Sem,
}

impl SemLock {
    /// A free lock (semaphore value 1).
    pub fn new() -> Result<Self, PrimsError> {
        Ok(SemLock { sem: Sem::new(1)? })
    }
}

impl TryLock for SemLock {
    #[inline]
    fn try_lock(&self) -> bool {
        // SAFETY: the semaphore was initialised in `new` and lives as long as self.
        unsafe { libc::sem_trywait(self.sem.ptr()) == 0 }
    }
    #[inline]
    fn unlock(&self) {
        // SAFETY: as above.
        unsafe { libc::sem_post(self.sem.ptr()) };
    }
}

/// pthread mutex (default type).
pub struct MutexLock {
    m: LibcCell<libc::pthread_mutex_t>,
}

impl MutexLock {
    /// A free mutex.
    pub fn new() -> Self {
        MutexLock { m: LibcCell::new(libc::PTHREAD_MUTEX_INITIALIZER) }
    }
}

impl Default for MutexLock {
    fn default() -> Self {
        Self::new()
    }
}

impl TryLock for MutexLock {
    #[inline]
    fn try_lock(&self) -> bool {
        // SAFETY: statically initialised mutex, alive as long as self.
        unsafe { libc::pthread_mutex_trylock(self.m.ptr()) == 0 }
    }
    #[inline]
    fn unlock(&self) {
        // SAFETY: callers only unlock a mutex their own thread took with try_lock.
        unsafe { libc::pthread_mutex_unlock(self.m.ptr()) };
    }
}

impl Drop for MutexLock {
    fn drop(&mut self) {
        // SAFETY: exclusively owned, unlocked by the benchmark before drop.
        unsafe { libc::pthread_mutex_destroy(self.m.ptr()) };
    }
}

/// pthread spinlock.
pub struct SpinLock {
    s: LibcCell<libc::pthread_spinlock_t>,
}

impl SpinLock {
    /// A free spinlock.
    pub fn new() -> Result<Self, PrimsError> {
        let s = LibcCell::new(0 as libc::pthread_spinlock_t);
        // SAFETY: valid, stable pointer to our own storage; private to this process.
        let rc = unsafe { libc::pthread_spin_init(s.ptr(), libc::PTHREAD_PROCESS_PRIVATE) };
        if rc != 0 {
            return Err(PrimsError::Os { what: "pthread_spin_init", err: std::io::Error::from_raw_os_error(rc) });
        }
        Ok(SpinLock { s })
    }
}

impl TryLock for SpinLock {
    #[inline]
    fn try_lock(&self) -> bool {
        // SAFETY: initialised in `new`, alive as long as self.
        unsafe { libc::pthread_spin_trylock(self.s.ptr()) == 0 }
    }
    #[inline]
    fn unlock(&self) {
        // SAFETY: as above.
        unsafe { libc::pthread_spin_unlock(self.s.ptr()) };
    }
}

impl Drop for SpinLock {
    fn drop(&mut self) {
        // SAFETY: exclusively owned.
        unsafe { libc::pthread_spin_destroy(self.s.ptr()) };
    }
}

/// Futex word: 0 free, 1 taken, 2 taken with sleepers. `try_lock` is the 0→1 compare-and-swap;
/// `unlock` wakes one sleeper only when the word says there is one (a try never sleeps, so in
/// this benchmark the wake is never needed, exactly as in an uncontended futex mutex).
#[derive(Default)]
#[repr(align(64))]
pub struct FutexLock {
    word: AtomicU32,
}

impl TryLock for FutexLock {
    #[inline]
    fn try_lock(&self) -> bool {
        self.word.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }
    #[inline]
    fn unlock(&self) {
        if self.word.swap(0, Ordering::Release) == 2 {
            futex_wake(&self.word, 1);
        }
    }
}

/// Test-and-set spinlock: one swap.
#[derive(Default)]
#[repr(align(64))]
pub struct TasLock {
    held: AtomicBool,
}

impl TryLock for TasLock {
    #[inline]
    fn try_lock(&self) -> bool {
        !self.held.swap(true, Ordering::Acquire)
    }
    #[inline]
    fn unlock(&self) {
        self.held.store(false, Ordering::Release);
    }
}

/// Test-and-test-and-set spinlock: a failed try on a held lock only reads, so waiters share the
/// cache line instead of pulling it away from the holder.
#[derive(Default)]
#[repr(align(64))]
pub struct TtasLock {
    held: AtomicBool,
}

impl TryLock for TtasLock {
    #[inline]
    fn try_lock(&self) -> bool {
        !self.held.load(Ordering::Relaxed) && !self.held.swap(true, Ordering::Acquire)
    }
    #[inline]
    fn unlock(&self) {
        self.held.store(false, Ordering::Release);
    }
}

/// Ticket lock. A try takes a ticket only if it would be served at once, so a failed try
/// leaves no ticket behind.
#[derive(Default)]
#[repr(align(64))]
pub struct TicketLock {
    next: AtomicU32,
    serving: AtomicU32,
}

impl TryLock for TicketLock {
    #[inline]
    fn try_lock(&self) -> bool {
        let s = self.serving.load(Ordering::Acquire);
        self.next.compare_exchange(s, s.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed).is_ok()
    }
    #[inline]
    fn unlock(&self) {
        self.serving.fetch_add(1, Ordering::Release);
    }
}

/// `FUTEX_WAKE_PRIVATE` on `word`, waking up to `n` sleepers.
pub(crate) fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: the address is a live, aligned u32; FUTEX_WAKE only uses it as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n);
    }
}

/// `FUTEX_WAIT_PRIVATE`: sleeps while `word` still holds `expected`.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: the address is a live, aligned u32; a null timeout means wait without limit.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_lock_excludes_and_releases() {
        for k in LockKind::ALL {
            let l = k.create().unwrap();
            assert!(l.try_lock(), "{k}: a new lock is free");
            assert!(!l.try_lock(), "{k}: a held lock is busy");
            l.unlock();
            assert!(l.try_lock(), "{k}: free again after unlock");
            l.unlock();
        }
    }

    #[test]
    fn mutual_exclusion_under_contention() {
        for k in LockKind::ALL {
            let l: Arc<dyn TryLock> = Arc::from(k.create().unwrap());
            let inside = Arc::new(AtomicU32::new(0));
            let taken = Arc::new(AtomicU32::new(0));
            let hs: Vec<_> = (0..3)
                .map(|_| {
                    let (l, inside, taken) = (l.clone(), inside.clone(), taken.clone());
                    std::thread::spawn(move || {
                        for _ in 0..20_000 {
                            if l.try_lock() {
                                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                                taken.fetch_add(1, Ordering::Relaxed);
                                inside.fetch_sub(1, Ordering::SeqCst);
                                l.unlock();
                            }
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert!(taken.load(Ordering::Relaxed) > 0, "{k}");
            assert!(l.try_lock(), "{k}: left free");
            // Destroying a locked pthread mutex is undefined (ThreadSanitizer reports it).
            l.unlock();
        }
    }

    #[test]
    fn names_round_trip_and_unknown_is_an_error() {
        for k in LockKind::ALL {
            assert_eq!(k.name().parse::<LockKind>().unwrap(), k);
        }
        assert_eq!("SEMAPHORE".parse::<LockKind>().unwrap(), LockKind::Sem);
        let e = "rwlock".parse::<LockKind>().unwrap_err().to_string();
        assert!(e.contains("rwlock") && e.contains("ticket"), "{e}");
    }
}
