//! Thin, checked wrappers over the socket options and system calls the servers and client use.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `SO_INCOMING_NAPI_ID` (not in every libc release).
pub const SO_INCOMING_NAPI_ID: libc::c_int = 56;

/// Turns a `-1` return into the current `errno`.
pub fn cvt(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Sets an integer socket option.
pub fn set_int(fd: RawFd, level: libc::c_int, opt: libc::c_int, val: libc::c_int) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int and its exact size.
    let r = unsafe {
        libc::setsockopt(fd, level, opt, (&val as *const libc::c_int).cast(), size_of::<libc::c_int>() as libc::socklen_t)
    };
    cvt(r as libc::c_long).map(|_| ())
}

/// Reads an integer socket option.
pub fn get_int(fd: RawFd, level: libc::c_int, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut val: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: val and len are live and len holds val's size.
    let r = unsafe { libc::getsockopt(fd, level, opt, (&mut val as *mut libc::c_int).cast(), &mut len) };
    cvt(r as libc::c_long).map(|_| val)
}

/// Sets `TCP_NODELAY`.
pub fn set_nodelay(fd: RawFd) -> io::Result<()> {
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)
}

/// `SO_BUSY_POLL` of the socket, microseconds.
pub fn busy_poll(fd: RawFd) -> io::Result<u32> {
    get_int(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL).map(|v| v as u32)
}

/// Sets `SO_BUSY_POLL` to `us` microseconds (raising it needs CAP_NET_ADMIN on some kernels; 6.18
/// lets any thread) and reads it back.
pub fn set_busy_poll(fd: RawFd, us: u32) -> io::Result<u32> {
    set_int(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL, us.min(i32::MAX as u32) as libc::c_int)?;
    get_int(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL).map(|v| v as u32)
}

/// The NAPI id of the device queue the socket last received from; 0 when there is none
/// (loopback, and veth without GRO/XDP), in which case busy polling has nothing to poll.
pub fn napi_id(fd: RawFd) -> io::Result<u32> {
    get_int(fd, libc::SOL_SOCKET, SO_INCOMING_NAPI_ID).map(|v| v as u32)
}

/// Sets the socket buffers to `bytes` each, bypassing `rmem_max`/`wmem_max` when privileged
/// (`SO_*BUFFORCE`); returns the sizes the kernel actually granted (it doubles the request).
pub fn set_buffers(fd: RawFd, bytes: usize) -> (usize, usize) {
    let v = bytes.min(i32::MAX as usize / 2) as libc::c_int;
    for (force, plain) in [(libc::SO_SNDBUFFORCE, libc::SO_SNDBUF), (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF)] {
        if set_int(fd, libc::SOL_SOCKET, force, v).is_err() {
            let _ = set_int(fd, libc::SOL_SOCKET, plain, v);
        }
    }
    let g = |o| get_int(fd, libc::SOL_SOCKET, o).map(|v| v as usize).unwrap_or(0);
    (g(libc::SO_SNDBUF), g(libc::SO_RCVBUF))
}

/// Sets the socket buffers with plain `SO_SNDBUF`/`SO_RCVBUF` (capped by `wmem_max`/`rmem_max`,
/// like the originals' test-burst); returns the sizes granted.
pub fn set_buffers_plain(fd: RawFd, bytes: usize) -> (usize, usize) {
    let v = bytes.min(i32::MAX as usize / 2) as libc::c_int;
    let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, v);
    let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, v);
    let g = |o| get_int(fd, libc::SOL_SOCKET, o).map(|v| v as usize).unwrap_or(0);
    (g(libc::SO_SNDBUF), g(libc::SO_RCVBUF))
}

/// Sets `TCP_CONGESTION` (e.g. `cubic`, which the originals set on every socket).
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: passes a pointer to the live bytes of `name` and their length.
    let r = unsafe {
        libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_ptr().cast(), name.len() as libc::socklen_t)
    };
    cvt(r as libc::c_long).map(|_| ())
}

/// Reads `TCP_CONGESTION`.
pub fn congestion(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is live and len holds its size.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr().cast(), &mut len) };
    cvt(r as libc::c_long)?;
    let b = &buf[..(len as usize).min(buf.len())];
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Ok(String::from_utf8_lossy(&b[..end]).into_owned())
}

/// Sets `SO_RCVTIMEO` or `SO_SNDTIMEO`.
pub fn set_timeout(fd: RawFd, opt: libc::c_int, d: std::time::Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: passes a pointer to a live timeval and its exact size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&tv as *const libc::timeval).cast(),
            size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    cvt(r as libc::c_long).map(|_| ())
}

/// User and system CPU time of the calling thread so far, in nanoseconds (`RUSAGE_THREAD`).
pub fn thread_times() -> (u64, u64) {
    // SAFETY: a zeroed rusage is a valid out-buffer.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is live; getrusage writes one struct rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (0, 0);
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// Byte counters the kernel keeps per TCP connection (`struct tcp_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpBytes {
    /// Bytes sent and acknowledged by the peer (`tcpi_bytes_acked`).
    pub acked: u64,
    /// Bytes received (`tcpi_bytes_received`).
    pub received: u64,
}

/// Reads `tcpi_bytes_acked` and `tcpi_bytes_received` (Linux 4.1+).
pub fn tcp_bytes(fd: RawFd) -> io::Result<TcpBytes> {
    // struct tcp_info is 232+ bytes on current kernels; the two counters sit at offsets 120/128.
    let mut buf = [0u64; 40];
    let mut len = size_of::<[u64; 40]>() as libc::socklen_t;
    // SAFETY: buf is live and len holds its size; the kernel writes at most len bytes.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr().cast(), &mut len) };
    cvt(r as libc::c_long)?;
    if (len as usize) < 136 {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "tcp_info has no byte counters on this kernel"));
    }
    Ok(TcpBytes { acked: buf[15], received: buf[16] })
}

/// True once the peer's FIN has arrived (TCP state CLOSE_WAIT, LAST_ACK, CLOSING, TIME_WAIT or
/// CLOSE), from `tcpi_state`.
pub fn peer_closed(fd: RawFd) -> bool {
    let mut buf = [0u8; 8];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is live and len holds its size; the kernel writes at most len bytes.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr().cast(), &mut len) };
    // tcp_states.h: TIME_WAIT 6, CLOSE 7, CLOSE_WAIT 8, LAST_ACK 9, CLOSING 11.
    r == 0 && len >= 1 && matches!(buf[0], 6..=9 | 11)
}

/// Bytes waiting in the receive queue (`SIOCINQ`) and not yet acknowledged in the send queue
/// (`SIOCOUTQ`) of a TCP socket.
pub fn queued(fd: RawFd) -> io::Result<(usize, usize)> {
    let (mut inq, mut outq): (libc::c_int, libc::c_int) = (0, 0);
    // SAFETY: both ioctls write one c_int through the pointer, which is live.
    cvt(unsafe { libc::ioctl(fd, libc::FIONREAD, &mut inq) } as libc::c_long)?;
    // SAFETY: as above.
    cvt(unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut outq) } as libc::c_long)?;
    Ok((inq.max(0) as usize, outq.max(0) as usize))
}

/// Creates a non-blocking, close-on-exec eventfd.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain system call; a non-negative result is a new fd we own.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    cvt(fd as libc::c_long)?;
    // SAFETY: fd was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds 1 to an eventfd (wakes whoever polls it).
pub fn eventfd_signal(fd: &OwnedFd) -> io::Result<()> {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64.
    let r = unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    cvt(r as libc::c_long).map(|_| ())
}

/// Waits until one of `fds` has `events` pending or `timeout_ms` passed (-1: forever);
/// returns the `revents` of each fd. EINTR counts as a timeout with nothing ready.
pub fn poll(fds: &[(RawFd, libc::c_short)], timeout_ms: i32) -> io::Result<Vec<libc::c_short>> {
    let mut p: Vec<libc::pollfd> = fds.iter().map(|&(fd, events)| libc::pollfd { fd, events, revents: 0 }).collect();
    // SAFETY: p is a live array of p.len() pollfd structs.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![0; p.len()]);
        }
        return Err(e);
    }
    Ok(p.iter().map(|x| x.revents).collect())
}

/// Makes `fd` non-blocking (`FIONBIO`, one system call).
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: FIONBIO reads one c_int through the pointer, which is live.
    cvt(unsafe { libc::ioctl(fd, libc::FIONBIO, &on) } as libc::c_long).map(|_| ())
}

/// A close-on-exec pipe (read end, write end) asked to hold `size` bytes; returns the capacity
/// the kernel granted (`F_SETPIPE_SZ` fails above `pipe-max-size` or the per-user pipe pages for
/// the unprivileged: the pipe then keeps the size `F_GETPIPE_SZ` reports).
pub fn pipe(size: usize) -> io::Result<(OwnedFd, OwnedFd, usize)> {
    let mut p = [0 as libc::c_int; 2];
    // SAFETY: p has room for the two descriptors pipe2 writes.
    cvt(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } as libc::c_long)?;
    // SAFETY: both descriptors are new and owned only here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
    let want = size.min(i32::MAX as usize) as libc::c_int;
    // SAFETY: fcntl on our own pipe; no memory is passed.
    let mut got = unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
    if got <= 0 {
        // SAFETY: as above.
        got = unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_GETPIPE_SZ) };
    }
    let cap = if got > 0 { got as usize } else { 64 << 10 };
    Ok((rd, wr, cap))
}

/// `splice(2)` of up to `len` bytes from `from` to `to` (a socket or a pipe each; no offsets),
/// with `SPLICE_F_MOVE`, and `SPLICE_F_NONBLOCK` when `nonblock` (with a non-blocking socket the
/// call then never sleeps: `WouldBlock` instead).
pub fn splice(from: RawFd, to: RawFd, len: usize, nonblock: bool) -> io::Result<usize> {
    let flags = libc::SPLICE_F_MOVE | if nonblock { libc::SPLICE_F_NONBLOCK } else { 0 };
    // SAFETY: splice between two fds the caller holds; null offsets are required for sockets and
    // pipes; no user memory is involved.
    let n = unsafe { libc::splice(from, std::ptr::null_mut(), to, std::ptr::null_mut(), len, flags) };
    cvt(n as libc::c_long).map(|n| n as usize)
}

/// `shutdown(fd, SHUT_RDWR)`, ignoring "not connected".
pub fn shutdown_rdwr(fd: RawFd) {
    // SAFETY: shutdown on an fd has no memory effects; errors (ENOTCONN) are harmless here.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// Number of open file descriptors of this process (entries of `/proc/self/fd`).
pub fn open_fds() -> io::Result<usize> {
    // The directory handle itself is one entry while reading: subtract it.
    Ok(std::fs::read_dir("/proc/self/fd")?.count().saturating_sub(1))
}

/// A `kB` field of `/proc/self/status` (`VmHWM`: peak resident set, `VmRSS`: resident set).
pub fn status_kib(field: &str) -> Option<u64> {
    parse_status_kib(&std::fs::read_to_string("/proc/self/status").ok()?, field)
}

/// Finds `field:   123 kB` in the text of a `/proc/PID/status` file.
pub fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Number of threads of this process (`/proc/self/task`).
pub fn thread_count() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// A zeroed byte buffer that starts on a page boundary: what every receive and send of the
/// echo goes through.
///
/// Why the alignment matters (measured, not assumed): the kernel copies socket data to and from
/// user memory with `rep movsb` (`_copy_to_iter`), and on AMD Zen 3 (FSRM, the machine this was
/// measured on) that copy runs at about half speed for some offsets of the destination against
/// the source (the skb's page fragment) within a 64-byte line: a receive buffer 8 or 16 bytes
/// into its page made a 1 MiB echo take 500-530 us, one at 0, 32, 48 or 64 bytes 290-330 us. A
/// 128 KiB `Vec` comes from glibc's `mmap` path, 16 bytes into its page, so the client spent
/// twice the kernel time in the receive copy (530-650 us against test-burst's 290-330 us, same
/// server); page alignment removes that and makes the copies independent of allocator history.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>; &AlignedBuf only hands out
// shared byte slices.
unsafe impl Send for AlignedBuf {}
// SAFETY: as above; no interior mutability.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Alignment of the first byte.
    pub const ALIGN: usize = 4096;

    fn layout(len: usize) -> std::alloc::Layout {
        // A zero-sized allocation is not allowed: an empty buffer still takes one page.
        std::alloc::Layout::from_size_align(len.max(1), Self::ALIGN).expect("buffer size overflows isize")
    }

    /// `len` zero bytes, page-aligned.
    pub fn zeroed(len: usize) -> AlignedBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }
}

/// Cache line size the receive buffers are laid out for.
pub const LINE: usize = 64;

/// Where in a page-aligned buffer to receive the stream byte at position `pos` (bytes received
/// so far on the connection): at the same offset within a cache line as the sender's copy of it.
///
/// The kernel's receive copy (`rep movsb`, see [`AlignedBuf`]) reads the skb's page fragment,
/// where the sender laid the stream out contiguously (a fragment starts on a page: byte `pos`
/// sits at `pos % 64` in its line, unless the sender's fragments restarted mid-stream). A
/// receive that always lands at offset 0 is misaligned against that source whenever the bytes
/// received before it are not a multiple of 64, which on loopback is the rule (MSS 65483): then
/// the copy into it runs at half speed. Receiving at `pos % 64` keeps destination and source in
/// the same position within a line. Buffers are [`LINE`] bytes longer than a chunk for this.
pub fn line_offset(pos: u64) -> usize {
    (pos % LINE as u64) as usize
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr points at len initialised (zeroed or since written) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated in `zeroed` with exactly this layout and is freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes at {:p})", self.len, self.ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn loopback_has_no_napi_and_counts_bytes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        use std::io::{Read, Write};
        c.write_all(b"hello").unwrap();
        let mut b = [0u8; 5];
        s.read_exact(&mut b).unwrap();
        assert_eq!(napi_id(s.as_raw_fd()).unwrap(), 0, "loopback has no NAPI id");
        let t = tcp_bytes(s.as_raw_fd()).unwrap();
        assert_eq!(t.received, 5);
        let bp = set_busy_poll(s.as_raw_fd(), 50);
        if let Ok(v) = bp {
            assert_eq!(v, 50);
        }
        let (snd, rcv) = set_buffers(c.as_raw_fd(), 8192);
        assert!(snd >= 8192 && rcv >= 8192, "{snd} {rcv}");
    }

    #[test]
    fn status_fields() {
        let t = "Name:\tx\nVmHWM:\t   4242 kB\nVmRSS:\t 17 kB\n";
        assert_eq!(parse_status_kib(t, "VmHWM"), Some(4242));
        assert_eq!(parse_status_kib(t, "VmRSS"), Some(17));
        assert_eq!(parse_status_kib(t, "VmSwap"), None);
        assert!(status_kib("VmHWM").unwrap() > 0);
    }

    #[test]
    fn eventfd_wakes_poll() {
        let e = eventfd().unwrap();
        let r = poll(&[(e.as_raw_fd(), libc::POLLIN)], 0).unwrap();
        assert_eq!(r[0] & libc::POLLIN, 0, "nothing signalled yet");
        eventfd_signal(&e).unwrap();
        let r = poll(&[(e.as_raw_fd(), libc::POLLIN)], 0).unwrap();
        assert!(r[0] & libc::POLLIN != 0);
    }

    #[test]
    fn line_offset_follows_the_stream_position() {
        assert_eq!(line_offset(0), 0);
        assert_eq!(line_offset(65483), 65483 % 64);
        assert_eq!(line_offset(64 * 1000 + 5), 5);
        assert!((0..1000u64).all(|p| line_offset(p) < LINE && (p - line_offset(p) as u64).is_multiple_of(LINE as u64)));
    }

    #[test]
    fn aligned_buf_is_page_aligned_zeroed_and_writable() {
        for len in [0usize, 1, 100, 128 << 10, (128 << 10) + 3] {
            let mut b = AlignedBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % AlignedBuf::ALIGN, 0, "{len} bytes at {b:?}");
            assert!(b.iter().all(|&x| x == 0));
            for (i, x) in b.iter_mut().enumerate() {
                *x = i as u8;
            }
            assert!(b.iter().enumerate().all(|(i, &x)| x == i as u8));
        }
    }
}
