//! Linux native AIO (`io_setup`, `io_submit`, `io_getevents`, `io_destroy`) through raw system
//! calls. On a blocking socket the kernel performs each request inside `io_submit`, in order, so
//! one call can carry "write what was read last time" and "read the next chunk".

use std::io;
use std::os::fd::RawFd;

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

/// An AIO context; destroyed on drop.
#[derive(Debug)]
pub struct AioContext {
    ctx: libc::c_ulong,
}

impl AioContext {
    /// `io_setup(nr)`.
    pub fn new(nr: u32) -> io::Result<Self> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: ctx is a live aio_context_t that the kernel fills in.
        cvt(unsafe { libc::syscall(libc::SYS_io_setup, nr as libc::c_long, &mut ctx as *mut libc::c_ulong) })?;
        Ok(AioContext { ctx })
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

    /// Submits `iocbs` in one `io_submit` and waits for all their completions.
    ///
    /// # Safety
    /// The buffers named by the iocbs must stay valid and unaliased until this returns (it does
    /// not return before every submitted request completed, or the context is destroyed).
    pub unsafe fn submit_and_wait(&self, iocbs: &mut [Iocb], events: &mut [IoEvent]) -> io::Result<usize> {
        let mut ptrs: Vec<*mut Iocb> = iocbs.iter_mut().map(|c| c as *mut Iocb).collect();
        // SAFETY: ptrs point to live iocbs; the caller guarantees the buffers they name.
        let n =
            cvt(unsafe { libc::syscall(libc::SYS_io_submit, self.ctx, ptrs.len() as libc::c_long, ptrs.as_mut_ptr()) })? as usize;
        let mut got = 0usize;
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

    #[test]
    fn probe_works_or_says_why() {
        match super::probe() {
            Ok(()) => {}
            Err(e) => {
                assert!(!e.is_empty());
                eprintln!("SKIP: Linux AIO on sockets unavailable: {e}");
            }
        }
    }
}
