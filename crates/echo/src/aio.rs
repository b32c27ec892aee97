//! Linux native AIO (`io_setup`, `io_submit`, `io_getevents`, `io_destroy`) through raw system
//! calls. On a blocking socket the kernel performs each request inside `io_submit`, in order, so
//! one call can carry "write what was read last time" and "read the next chunk".
//!
//! Completions are taken from the completion ring the kernel maps into the process (the context
//! id is its address) whenever they are already there, as they are once a blocking socket's
//! requests returned from `io_submit`: one system call per round instead of two. `io_getevents`
//! is called only for what the ring does not hold yet, or when the ring's header is not one this
//! code knows (magic number, no incompatible features).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::sys::cvt;

/// `IOCB_CMD_PREAD`.
pub const IOCB_CMD_PREAD: u16 = 0;
/// `IOCB_CMD_PWRITE`.
pub const IOCB_CMD_PWRITE: u16 = 1;

/// `struct iocb` (little-endian layout: `aio_key` before `aio_rw_flags`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Iocb {
    pub aio_data: u64,
    pub aio_key: u32,
    pub aio_rw_flags: i32,
    pub aio_lio_opcode: u16,
    pub aio_reqprio: i16,
    pub aio_fildes: u32,
    pub aio_buf: u64,
    pub aio_nbytes: u64,
    pub aio_offset: i64,
    pub aio_reserved2: u64,
    pub aio_flags: u32,
    pub aio_resfd: u32,
}

/// `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct IoEvent {
    pub data: u64,
    pub obj: u64,
    pub res: i64,
    pub res2: i64,
}

/// An AIO context; destroyed on drop. It may move to another thread but is not shared between
/// threads (not `Sync`): completions are taken from its ring without a lock.
#[derive(Debug)]
pub struct AioContext {
    ctx: libc::c_ulong,
    _not_sync: std::marker::PhantomData<std::cell::Cell<()>>,
}

impl AioContext {
    /// `io_setup(nr)`.
    pub fn new(nr: u32) -> io::Result<Self> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: ctx is a live aio_context_t that the kernel fills in.
        cvt(unsafe { libc::syscall(libc::SYS_io_setup, nr as libc::c_long, &mut ctx as *mut libc::c_ulong) })?;
        Ok(AioContext { ctx, _not_sync: std::marker::PhantomData })
    }

    fn iocb(op: u16, fd: RawFd, buf: *const u8, len: usize, data: u64) -> Iocb {
        Iocb {
            aio_data: data,
            aio_lio_opcode: op,
            aio_fildes: fd as u32,
            aio_buf: buf as u64,
            aio_nbytes: len as u64,
            ..Default::default()
        }
    }

    /// A read request of `buf` from `fd`, tagged `data`.
    pub fn read_iocb(fd: RawFd, buf: &mut [u8], data: u64) -> Iocb {
        Self::iocb(IOCB_CMD_PREAD, fd, buf.as_mut_ptr(), buf.len(), data)
    }

    /// A write request of `buf` to `fd`, tagged `data`.
    pub fn write_iocb(fd: RawFd, buf: &[u8], data: u64) -> Iocb {
        Self::iocb(IOCB_CMD_PWRITE, fd, buf.as_ptr(), buf.len(), data)
    }

    /// Submits `iocbs` (at most [`MAX_BATCH`]) in one `io_submit` and waits for all their
    /// completions; `events` must have room for them. Completions already in the ring are taken
    /// from it without a system call ([`AioContext::reap`]).
    ///
    /// # Safety
    /// The buffers named by the iocbs must stay valid and unaliased until this returns (it does
    /// not return before every submitted request completed, or the context is destroyed).
    pub unsafe fn submit_and_wait(&self, iocbs: &mut [Iocb], events: &mut [IoEvent]) -> io::Result<usize> {
        if iocbs.len() > MAX_BATCH || events.len() < iocbs.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} requests, room for {} events (at most {MAX_BATCH})", iocbs.len(), events.len()),
            ));
        }
        let mut ptrs = [std::ptr::null_mut::<Iocb>(); MAX_BATCH];
        for (p, c) in ptrs.iter_mut().zip(iocbs.iter_mut()) {
            *p = c as *mut Iocb;
        }
        // SAFETY: the first iocbs.len() pointers point to live iocbs; the caller guarantees the
        // buffers they name.
        let n = cvt(unsafe { libc::syscall(libc::SYS_io_submit, self.ctx, iocbs.len() as libc::c_long, ptrs.as_mut_ptr()) })?
            as usize;
        let mut got = self.reap(&mut events[..n]);
        while got < n {
            // SAFETY: events has room for events.len() - got entries from index got; no timeout.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    (n - got) as libc::c_long,
                    (events.len() - got) as libc::c_long,
                    events.as_mut_ptr().add(got),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            match cvt(r) {
                Ok(k) => got += k as usize,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if n < iocbs.len() {
            return Err(io::Error::other(format!("io_submit accepted only {n} of {} requests", iocbs.len())));
        }
        Ok(n)
    }
}

/// Most requests [`AioContext::submit_and_wait`] takes at once.
pub const MAX_BATCH: usize = 8;

/// `AIO_RING_MAGIC`: the header of the completion ring the kernel maps at the context's address.
const AIO_RING_MAGIC: u32 = 0xa10a_10a1;

/// The header of the kernel's completion ring (`struct aio_ring`); the `io_event`s follow it.
#[repr(C)]
struct RingHeader {
    id: u32,
    nr: u32,
    head: AtomicU32,
    tail: AtomicU32,
    magic: u32,
    compat_features: u32,
    incompat_features: u32,
    header_length: u32,
}

impl AioContext {
    /// Takes up to `events.len()` completions that are already in the kernel's completion ring,
    /// without a system call; returns how many. Returns 0 when the ring's header is not the
    /// known one (then `io_getevents` does the work).
    ///
    /// The kernel writes an event, then (after a write barrier) advances `tail`; it reads `head`
    /// to see which slots are free again. So: `tail` is loaded with acquire ordering before the
    /// events are read, and `head` is stored with release ordering after they were copied.
    /// The context is not `Sync`, so no other thread moves `head` meanwhile.
    fn reap(&self, events: &mut [IoEvent]) -> usize {
        let ring = self.ctx as *const RingHeader;
        if ring.is_null() {
            return 0;
        }
        // SAFETY: the context id returned by io_setup is the address of the ring the kernel
        // mapped into this process, readable and writable until io_destroy (in Drop); its header
        // is a `struct aio_ring`, whose layout RingHeader repeats. The magic and feature fields
        // are checked before anything else is trusted.
        let h = unsafe { &*ring };
        if h.magic != AIO_RING_MAGIC || h.incompat_features != 0 || h.header_length as usize != std::mem::size_of::<RingHeader>()
        {
            return 0;
        }
        let nr = h.nr;
        let mut head = h.head.load(Ordering::Relaxed);
        let tail = h.tail.load(Ordering::Acquire);
        if nr == 0 || head >= nr || tail >= nr {
            return 0;
        }
        // SAFETY: the events array follows the header in the same mapping and holds `nr` slots.
        let slots = unsafe { ring.add(1) as *const IoEvent };
        let mut got = 0;
        while got < events.len() && head != tail {
            // SAFETY: head < nr (checked above, kept by the modulo below): a slot of the array;
            // the kernel published it before advancing tail (acquire load above). A volatile
            // read, since the kernel writes this memory.
            events[got] = unsafe { std::ptr::read_volatile(slots.add(head as usize)) };
            head = (head + 1) % nr;
            got += 1;
        }
        if got > 0 {
            h.head.store(head, Ordering::Release);
        }
        got
    }
}

impl Drop for AioContext {
    fn drop(&mut self) {
        // SAFETY: destroys the context we created; waits for outstanding requests.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

/// Checks that Linux AIO works on a socket here: one write and one read through io_submit.
pub fn probe() -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let ctx = AioContext::new(4).map_err(|e| format!("io_setup failed ({e}); check CONFIG_AIO and /proc/sys/fs/aio-max-nr"))?;
    let (a, b) = std::os::unix::net::UnixStream::pair().map_err(|e| e.to_string())?;
    let out = *b"ping";
    let mut inb = [0u8; 4];
    let mut iocbs = [AioContext::write_iocb(a.as_raw_fd(), &out, 1), AioContext::read_iocb(b.as_raw_fd(), &mut inb, 2)];
    let mut ev = [IoEvent::default(); 2];
    // SAFETY: out and inb live until submit_and_wait returns, which waits for both requests.
    unsafe { ctx.submit_and_wait(&mut iocbs, &mut ev) }.map_err(|e| format!("io_submit on a socket failed: {e}"))?;
    if inb != out {
        return Err("io_submit on a socket returned wrong data".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn iocb_layout() {
        assert_eq!(std::mem::size_of::<super::Iocb>(), 64);
        assert_eq!(std::mem::size_of::<super::IoEvent>(), 32);
    }

    /// Completions are taken from the mapped ring, in order, with their results, and the ring's
    /// head moves past them; the next batch is found there too.
    #[test]
    fn completions_are_reaped_from_the_ring() {
        use super::*;
        use std::os::fd::AsRawFd;
        if let Err(e) = probe() {
            schedlab_report::skip!("Linux AIO on sockets unavailable: {e}");
        }
        let ctx = AioContext::new(4).unwrap();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        for round in 0u8..3 {
            let out = [round; 5];
            let mut inb = [0u8; 5];
            let mut iocbs = [AioContext::write_iocb(a.as_raw_fd(), &out, 1), AioContext::read_iocb(b.as_raw_fd(), &mut inb, 2)];
            let mut ptrs: Vec<*mut Iocb> = iocbs.iter_mut().map(|c| c as *mut Iocb).collect();
            // SAFETY: out and inb outlive the requests, which complete inside io_submit (a write
            // that fits the socket buffer, then a read of data already there).
            let n = unsafe { libc::syscall(libc::SYS_io_submit, ctx.ctx, 2 as libc::c_long, ptrs.as_mut_ptr()) };
            assert_eq!(n, 2);
            let mut ev = [IoEvent::default(); 4];
            assert_eq!(ctx.reap(&mut ev), 2, "round {round}: both completions in the ring");
            assert_eq!((ev[0].data, ev[0].res, ev[1].data, ev[1].res), (1, 5, 2, 5));
            assert_eq!(inb, out);
            assert_eq!(ctx.reap(&mut ev), 0, "nothing left once taken");
        }
        // Through submit_and_wait: more requests than MAX_BATCH are refused, not truncated.
        let mut many = [Iocb::default(); MAX_BATCH + 1];
        let mut ev = [IoEvent::default(); MAX_BATCH + 1];
        // SAFETY: refused before anything is submitted.
        assert!(unsafe { ctx.submit_and_wait(&mut many, &mut ev) }.is_err());
    }

    #[test]
    fn probe_works_or_says_why() {
        match super::probe() {
            Ok(()) => {}
            Err(e) => {
                assert!(!e.is_empty());
                schedlab_report::skip!("Linux AIO on sockets unavailable: {e}");
            }
        }
    }
}
