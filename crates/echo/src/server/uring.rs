//! The io_uring server: one thread, one ring, every connection. Each connection has one request
//! in flight at a time, so nothing of it is touched by the kernel and by this loop at once.
//!
//! Three data paths ([`UringData`]):
//! - `copy`: a receive into the connection's 128 KiB buffer, then the send of what was received,
//!   submitted together with the next receive, linked behind it (`IOSQE_IO_LINK`): one
//!   `io_uring_enter` per round, which submits the send and the receive and waits;
//! - `splice`: a one-shot `POLL_ADD` for readable (or, while the socket's send buffer is full,
//!   writable); when it completes, the loop itself moves what is there socket → pipe → socket with
//!   non-blocking `splice(2)` and arms the next poll. io_uring's `IORING_OP_SPLICE` would do the
//!   same from an io-wq worker thread (splice requests are always punted there), a thread hop per
//!   request that made it slower than the copy;
//! - `auto`: copy until a receive brings [`AUTO_SPLICE_AT`] or more, then splice for the rest of
//!   the connection.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::{Shared, UringData, AUTO_SPLICE_AT, CHUNK, PIPE_SIZE};
use crate::sys;

const ACCEPT: u64 = 1;
const WAKE: u64 = 2;
const RECV: u64 = 3;
const SEND: u64 = 4;
const CANCEL: u64 = 5;
const POLL: u64 = 6;
/// A send linked to the receive behind it; completes visibly only when it fails or falls short
/// (`IOSQE_CQE_SKIP_SUCCESS`). The pair counts as one request in flight: either the receive
/// completes (the send went out in full) or the send does (failed; the kernel then cancels the
/// receive without a completion, `REQ_F_SKIP_LINK_CQES`).
const SENDL: u64 = 7;

/// `IORING_RECVSEND_POLL_FIRST`: the receive behind a send arms its poll without first trying a
/// receive that would find nothing (the peer has not seen the echo yet).
const RECVSEND_POLL_FIRST: u16 = 1;

/// Reads from the socket per wake-up before the connection goes back to the ring's queue (a
/// client that never stops sending must not starve the others).
const READS_PER_WAKE: u32 = 64;

/// Readable, or the peer half-closed (the splice then reads EOF).
const POLL_IN: u32 = (libc::POLLIN | libc::POLLRDHUP) as u32;
const POLL_OUT: u32 = libc::POLLOUT as u32;

fn ud(op: u64, slot: usize) -> u64 {
    ((slot as u64) << 3) | op
}

/// Checks that io_uring can be set up and runs a no-op.
pub(super) fn probe() -> Result<(), String> {
    let mut ring = IoUring::new(8)
        .map_err(|e| format!("io_uring_setup failed ({e}); check /proc/sys/kernel/io_uring_disabled and seccomp filters"))?;
    let nop = opcode::Nop::new().build().user_data(7);
    // SAFETY: a no-op references no memory.
    unsafe { ring.submission().push(&nop) }.map_err(|e| e.to_string())?;
    ring.submit_and_wait(1).map_err(|e| format!("io_uring_enter failed: {e}"))?;
    let c = ring.completion().next();
    match c {
        Some(c) if c.user_data() == 7 && c.result() == 0 => Ok(()),
        _ => Err("io_uring returned no completion for a no-op".into()),
    }
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    id: u64,
    path: Path,
    bytes: u64,
    busy: Option<super::BusyPollGot>,
    /// The server shut this connection down (on stop).
    shut: bool,
    /// Why the connection is copied although splice was asked for, or where `auto` switched.
    note: Option<String>,
    /// `auto` and still on copy: a receive of [`AUTO_SPLICE_AT`] or more moves the connection to splice.
    auto: bool,
}

/// A connection's data path and its state.
enum Path {
    Copy(CopyState),
    Splice(Pipe),
}

struct CopyState {
    buf: sys::AlignedBuf,
    /// Where the data being sent starts in `buf` (its stream position's offset within a cache
    /// line, [`sys::line_offset`]).
    off: usize,
    len: usize,
    sent: usize,
    /// Where the receive in flight writes.
    recv_off: usize,
    /// Bytes of the linked send in flight ahead of the receive (0: none).
    linked: usize,
    /// `auto`: move to splice once the current chunk is out.
    switch: bool,
}

impl CopyState {
    fn new() -> CopyState {
        CopyState {
            buf: sys::AlignedBuf::zeroed(CHUNK + sys::LINE),
            off: 0,
            len: 0,
            sent: 0,
            recv_off: 0,
            linked: 0,
            switch: false,
        }
    }
}

/// The splice path's pipe: `held` bytes spliced in from the socket and not yet out.
struct Pipe {
    rd: OwnedFd,
    wr: OwnedFd,
    cap: usize,
    held: usize,
    /// The peer half-closed: once the pipe is empty, the connection is done.
    eof: bool,
}

/// What the splice path does next.
enum Step {
    /// Wait for these poll events.
    Wait(u32),
    /// The connection is finished (EOF after everything was echoed, or an error).
    Done(io::Result<()>),
}

impl Pipe {
    /// Moves what is ready: empties the pipe into the socket, then splices what the socket holds
    /// into the pipe and out again, until the socket has nothing more (wait for readable) or
    /// cannot take more (wait for writable), or [`READS_PER_WAKE`] reads were done (then the
    /// readable poll completes at once, behind the other connections' completions). Never
    /// blocks: the socket is non-blocking and every splice is `SPLICE_F_NONBLOCK`.
    fn pump(&mut self, fd: RawFd, bytes: &mut u64) -> Step {
        let mut reads = 0;
        loop {
            while self.held > 0 {
                match sys::splice(self.rd.as_raw_fd(), fd, self.held, true) {
                    Ok(0) => {
                        return Step::Done(Err(io::Error::new(io::ErrorKind::WriteZero, "splice to the socket wrote nothing")))
                    }
                    Ok(m) => {
                        self.held -= m;
                        *bytes += m as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait(POLL_OUT),
                    Err(e) => return Step::Done(Err(e)),
                }
            }
            if self.eof {
                return Step::Done(Ok(()));
            }
            if reads == READS_PER_WAKE {
                return Step::Wait(POLL_IN);
            }
            reads += 1;
            match sys::splice(fd, self.wr.as_raw_fd(), self.cap, true) {
                Ok(0) => self.eof = true,
                Ok(n) => self.held = n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait(POLL_IN),
                Err(e) => return Step::Done(Err(e)),
            }
        }
    }
}

/// The ring, created before the thread starts so that setup errors reach the caller.
pub(super) struct Loop {
    ring: IoUring,
    /// Set up with `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN` (created disabled,
    /// enabled by the loop's own thread, which becomes its only submitter).
    pub(super) deferred: bool,
}

impl Loop {
    /// A ring whose completion work runs only when the loop waits for completions, in its own
    /// thread (`DEFER_TASKRUN`, Linux 6.1+), instead of interrupting it whenever the kernel has
    /// a completion to post; on kernels without it, a plain ring.
    pub(super) fn new() -> io::Result<Loop> {
        match IoUring::builder().setup_single_issuer().setup_defer_taskrun().setup_r_disabled().build(1024) {
            Ok(ring) => Ok(Loop { ring, deferred: true }),
            Err(_) => Ok(Loop { ring: IoUring::new(1024)?, deferred: false }),
        }
    }

    fn push(&mut self, e: squeue::Entry) {
        loop {
            // SAFETY: every entry built in this file points into memory that stays alive and
            // untouched until its completion is reaped (connection buffers live in `Conn`, which is
            // only dropped after its single in-flight request completed; the wake buffer lives in
            // `run` until the ring is drained).
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                return;
            }
            let _ = self.ring.submit();
        }
    }

    pub(super) fn run(mut self, sh: Arc<Shared>, listener: TcpListener, wake: Arc<OwnedFd>) {
        super::pin_serving_thread(sh.cfg.cpu);
        if self.deferred {
            if let Err(e) = self.ring.submitter().register_enable_rings() {
                eprintln!("echo server (io_uring): cannot enable the ring: {e}");
                return;
            }
        }
        let lfd = types::Fd(listener.as_raw_fd());
        let mut wake_buf = Box::new([0u8; 8]);
        let mut conns: Vec<Option<Conn>> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let accept = opcode::Accept::new(lfd, std::ptr::null_mut(), std::ptr::null_mut()).flags(libc::SOCK_CLOEXEC).build();
        self.push(accept.clone().user_data(ud(ACCEPT, 0)));
        self.push(opcode::Read::new(types::Fd(wake.as_raw_fd()), wake_buf.as_mut_ptr(), 8).build().user_data(ud(WAKE, 0)));
        let mut inflight = 2usize;
        let mut stopping = false;
        let mut stop_deadline = None::<Instant>;
        let mut warned = false;
        let mut cqes: Vec<cqueue::Entry> = Vec::with_capacity(256);
        let ts = types::Timespec::new().nsec(100_000_000);
        while inflight > 0 {
            let waited = if stopping {
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            } else {
                self.ring.submit_and_wait(1)
            };
            if let Err(e) = waited {
                if !matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::ETIME) | Some(libc::EBUSY)) {
                    eprintln!("echo server (io_uring): io_uring_enter failed: {e}");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            // Reaped into a buffer kept across iterations: no allocation per wake-up.
            cqes.clear();
            cqes.extend(self.ring.completion());
            for c in cqes.drain(..) {
                inflight -= 1;
                let (op, slot, res) = (c.user_data() & 7, (c.user_data() >> 3) as usize, c.result());
                match op {
                    ACCEPT => {
                        if res >= 0 {
                            // SAFETY: res is a new socket fd handed to us by the kernel.
                            let stream = unsafe { TcpStream::from_raw_fd(res) };
                            if stopping {
                                continue;
                            }
                            let fd = stream.as_raw_fd();
                            let busy = sh.prepare(fd);
                            let peer = stream.peer_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
                            let id = sh.next_id.fetch_add(1, Ordering::SeqCst);
                            let (path, note) = data_path(sh.cfg.uring_data, fd);
                            let counter = if matches!(path, Path::Splice(_)) { &sh.spliced } else { &sh.copied };
                            counter.fetch_add(1, Ordering::SeqCst);
                            let auto = sh.cfg.uring_data == UringData::Auto;
                            let conn = Conn { stream, peer, id, path, bytes: 0, busy, shut: false, note, auto };
                            let s = match free.pop() {
                                Some(s) => {
                                    conns[s] = Some(conn);
                                    s
                                }
                                None => {
                                    conns.push(Some(conn));
                                    conns.len() - 1
                                }
                            };
                            self.first(&mut conns, s);
                            inflight += 1;
                        } else if res != -libc::ECANCELED && res != -libc::EINTR && res != -libc::EAGAIN && !stopping {
                            if !warned {
                                eprintln!(
                                    "echo server (io_uring): accept failed: {}; raise `ulimit -n` for more connections",
                                    io::Error::from_raw_os_error(-res)
                                );
                                warned = true;
                            }
                            sh.refused.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        if !stopping {
                            self.push(accept.clone().user_data(ud(ACCEPT, 0)));
                            inflight += 1;
                        }
                    }
                    WAKE => {
                        stopping = true;
                    }
                    POLL => {
                        let Some(conn) = conns[slot].as_mut() else { continue };
                        let fd = conn.stream.as_raw_fd();
                        let Path::Splice(p) = &mut conn.path else { continue };
                        let step = if res >= 0 {
                            p.pump(fd, &mut conn.bytes)
                        } else if res == -libc::EINTR || res == -libc::EAGAIN {
                            Step::Wait(if p.held > 0 { POLL_OUT } else { POLL_IN })
                        } else {
                            Step::Done(Err(io::Error::from_raw_os_error(-res)))
                        };
                        match step {
                            Step::Wait(mask) => {
                                self.poll(fd, mask, slot);
                                inflight += 1;
                            }
                            Step::Done(r) => close(&sh, &mut conns, &mut free, slot, r),
                        }
                    }
                    RECV => {
                        let Some(conn) = conns[slot].as_mut() else { continue };
                        let Path::Copy(cs) = &mut conn.path else { continue };
                        // The linked send ahead of it, if any, went out in full.
                        conn.bytes += cs.linked as u64;
                        cs.linked = 0;
                        if res > 0 {
                            cs.off = cs.recv_off;
                            cs.len = res as usize;
                            cs.sent = 0;
                            if conn.auto && cs.len >= AUTO_SPLICE_AT {
                                // A large receive: send it alone, then move to splice.
                                cs.switch = true;
                                self.send(&mut conns, slot);
                            } else {
                                self.send_recv(&mut conns, slot);
                            }
                            inflight += 1;
                        } else if res == -libc::EINTR || res == -libc::EAGAIN {
                            self.recv(&mut conns, slot);
                            inflight += 1;
                        } else {
                            let r = if res == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(-res)) };
                            close(&sh, &mut conns, &mut free, slot, r);
                        }
                    }
                    SEND | SENDL => {
                        let Some(conn) = conns[slot].as_mut() else { continue };
                        let Path::Copy(cs) = &mut conn.path else { continue };
                        // A linked send completes only when it failed or fell short; the
                        // receive behind it is then gone, and the rest is sent alone.
                        cs.linked = 0;
                        if res >= 0 {
                            cs.sent += res as usize;
                            if cs.sent < cs.len {
                                self.send(&mut conns, slot);
                            } else {
                                conn.bytes += cs.len as u64;
                                if cs.switch {
                                    match self.switch_to_splice(&sh, &mut conns, slot) {
                                        None => inflight += 1,
                                        Some(r) => close(&sh, &mut conns, &mut free, slot, r),
                                    }
                                    continue;
                                }
                                self.recv(&mut conns, slot);
                            }
                            inflight += 1;
                        } else if res == -libc::EINTR || res == -libc::EAGAIN {
                            self.send(&mut conns, slot);
                            inflight += 1;
                        } else {
                            close(&sh, &mut conns, &mut free, slot, Err(io::Error::from_raw_os_error(-res)));
                        }
                    }
                    _ => {}
                }
            }
            if (stopping || sh.stop.load(Ordering::SeqCst)) && stop_deadline.is_none() {
                stopping = true;
                stop_deadline = Some(Instant::now() + Duration::from_secs(5));
                self.push(opcode::AsyncCancel::new(ud(ACCEPT, 0)).build().user_data(ud(CANCEL, 0)));
                inflight += 1;
                for c in conns.iter_mut().flatten() {
                    c.shut = true;
                    sys::shutdown_rdwr(c.stream.as_raw_fd());
                }
            }
            if stop_deadline.is_some_and(|d| Instant::now() > d) {
                eprintln!("echo server (io_uring): {inflight} requests still in flight after 5 s; leaking their buffers");
                for c in conns.drain(..).flatten() {
                    if let Path::Copy(cs) = c.path {
                        std::mem::forget(cs.buf);
                    }
                }
                std::mem::forget(wake_buf);
                return;
            }
        }
        drop(wake_buf);
    }

    /// The first request of a new connection: a receive (copy) or a poll for readable (splice).
    fn first(&mut self, conns: &mut [Option<Conn>], slot: usize) {
        let c = conns[slot].as_ref().expect("live slot");
        match c.path {
            Path::Copy(_) => self.recv(conns, slot),
            Path::Splice(_) => self.poll(c.stream.as_raw_fd(), POLL_IN, slot),
        }
    }

    /// A one-shot poll: it completes at once (in the same `io_uring_enter`) when the socket is
    /// already ready, so arming it is also the check for more data.
    fn poll(&mut self, fd: RawFd, mask: u32, slot: usize) {
        self.push(opcode::PollAdd::new(types::Fd(fd), mask).build().user_data(ud(POLL, slot)));
    }

    fn recv(&mut self, conns: &mut [Option<Conn>], slot: usize) {
        let c = conns[slot].as_mut().expect("live slot");
        let fd = c.stream.as_raw_fd();
        let Path::Copy(cs) = &mut c.path else { unreachable!("recv on a splice connection") };
        // Everything received so far has been echoed: `bytes` is the stream position.
        cs.recv_off = sys::line_offset(c.bytes);
        let dst = &mut cs.buf[cs.recv_off..cs.recv_off + CHUNK];
        let e = opcode::Recv::new(types::Fd(fd), dst.as_mut_ptr(), CHUNK as u32).build();
        self.push(e.user_data(ud(RECV, slot)));
    }

    /// The rest of the current chunk's send and, linked behind it, the next receive: both go to
    /// the kernel in the loop's next `io_uring_enter`, which then waits. The send retries short
    /// writes itself (`MSG_WAITALL`) and posts no completion when it succeeds; the receive starts
    /// only after the send completed in full, so the two never touch the buffer at once.
    fn send_recv(&mut self, conns: &mut [Option<Conn>], slot: usize) {
        let c = conns[slot].as_mut().expect("live slot");
        let fd = c.stream.as_raw_fd();
        let Path::Copy(cs) = &mut c.path else { unreachable!("send on a splice connection") };
        let rest = &cs.buf[cs.off + cs.sent..cs.off + cs.len];
        let (src, n) = (rest.as_ptr(), rest.len());
        cs.linked = n;
        // The receive lands at the stream position after this send.
        cs.recv_off = sys::line_offset(c.bytes + n as u64);
        let dst = cs.buf[cs.recv_off..cs.recv_off + CHUNK].as_mut_ptr();
        let send = opcode::Send::new(types::Fd(fd), src, n as u32)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
            .user_data(ud(SENDL, slot));
        let recv =
            opcode::Recv::new(types::Fd(fd), dst, CHUNK as u32).ioprio(RECVSEND_POLL_FIRST).build().user_data(ud(RECV, slot));
        // Both in one submission: a link split across two would not hold.
        while {
            let sq = self.ring.submission();
            sq.capacity() - sq.len() < 2
        } {
            let _ = self.ring.submit();
        }
        self.push(send);
        self.push(recv);
    }

    /// `auto`: the connection's copy is out; it moves to splice (a pipe, a non-blocking socket)
    /// and pumps what is already there. None: a request is in flight for it; Some: it ended.
    fn switch_to_splice(&mut self, sh: &Shared, conns: &mut [Option<Conn>], slot: usize) -> Option<io::Result<()>> {
        let c = conns[slot].as_mut().expect("live slot");
        let fd = c.stream.as_raw_fd();
        c.auto = false;
        match sys::pipe(PIPE_SIZE).and_then(|p| sys::set_nonblocking(fd).map(|()| p)) {
            Ok((rd, wr, cap)) => {
                sh.copied.fetch_sub(1, Ordering::SeqCst);
                sh.switched.fetch_add(1, Ordering::SeqCst);
                c.note = Some(format!(
                    "copied the first {} bytes (RECV/SEND), spliced the rest (a receive brought {} KiB or more)",
                    c.bytes,
                    AUTO_SPLICE_AT >> 10
                ));
                let mut p = Pipe { rd, wr, cap, held: 0, eof: false };
                let step = p.pump(fd, &mut c.bytes);
                c.path = Path::Splice(p);
                match step {
                    Step::Wait(mask) => {
                        self.poll(fd, mask, slot);
                        None
                    }
                    Step::Done(r) => Some(r),
                }
            }
            Err(e) => {
                c.note = Some(format!("stayed on copy: no pipe for splice ({e})"));
                if let Path::Copy(cs) = &mut c.path {
                    cs.switch = false;
                }
                self.recv(conns, slot);
                None
            }
        }
    }

    fn send(&mut self, conns: &mut [Option<Conn>], slot: usize) {
        let c = conns[slot].as_mut().expect("live slot");
        let fd = c.stream.as_raw_fd();
        let Path::Copy(cs) = &c.path else { unreachable!("send on a splice connection") };
        let rest = &cs.buf[cs.off + cs.sent..cs.off + cs.len];
        let e = opcode::Send::new(types::Fd(fd), rest.as_ptr(), rest.len() as u32).flags(libc::MSG_NOSIGNAL).build();
        self.push(e.user_data(ud(SEND, slot)));
    }
}

/// The data path of a new connection: splice when asked and a pipe can be had and the socket made
/// non-blocking; otherwise copy, with the reason when splice was asked.
fn data_path(want: UringData, fd: RawFd) -> (Path, Option<String>) {
    if want != UringData::Splice {
        return (Path::Copy(CopyState::new()), None);
    }
    match sys::pipe(PIPE_SIZE).and_then(|p| sys::set_nonblocking(fd).map(|()| p)) {
        Ok((rd, wr, cap)) => (Path::Splice(Pipe { rd, wr, cap, held: 0, eof: false }), None),
        Err(e) => (Path::Copy(CopyState::new()), Some(format!("no pipe for splice ({e}): echoed by user-space copy"))),
    }
}

fn close(sh: &Shared, conns: &mut [Option<Conn>], free: &mut Vec<usize>, slot: usize, res: io::Result<()>) {
    if let Some(mut c) = conns[slot].take() {
        let mut rep = sh.report(c.id, c.peer, c.stream.as_raw_fd(), c.bytes, res, c.busy.take(), c.shut);
        rep.note = c.note.take();
        drop(c);
        free.push(slot);
        sh.finish(rep);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpStream};
    use std::time::{Duration, Instant};

    use crate::server::{Mode, Server, ServerConfig, ServerReport, UringData};

    fn start(data: UringData) -> Option<Server> {
        if let Err(e) = Mode::IoUring.probe() {
            let test = schedlab_report::testkit::current_test();
            schedlab_report::testkit::skip(&test, &e.to_string());
            return None;
        }
        let mut cfg = ServerConfig::new(Mode::IoUring, "127.0.0.1:0".parse().unwrap());
        cfg.uring_data = data;
        Some(Server::start(cfg).unwrap())
    }

    /// The byte at stream position `i`: a pattern that a reordered, lost or repeated chunk breaks.
    fn byte(i: u64) -> u8 {
        (i ^ (i >> 8) ^ (i >> 16).wrapping_mul(7)) as u8
    }

    fn pattern(from: u64, n: usize) -> Vec<u8> {
        (from..from + n as u64).map(byte).collect()
    }

    /// Reads exactly `n` bytes and checks them against the pattern from `from`.
    fn read_checked(s: &mut TcpStream, from: u64, n: usize) {
        let mut b = vec![0u8; n];
        s.read_exact(&mut b).unwrap_or_else(|e| panic!("reading {n} bytes at {from}: {e}"));
        if let Some(k) = (0..n).find(|&k| b[k] != byte(from + k as u64)) {
            panic!("wrong byte at stream position {}", from + k as u64);
        }
    }

    /// A server on `data` serving one connection [`small_large_small`] and shut down: its report
    /// and the bytes sent (None: no io_uring here).
    fn serve_small_large_small(data: UringData) -> Option<(ServerReport, u64)> {
        let srv = start(data)?;
        let mut s = TcpStream::connect(srv.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let total = small_large_small(&mut s);
        finished(&srv, 1);
        Some((srv.shutdown(), total))
    }

    /// 1 KiB rounds, then 8 MiB streamed, then 1 KiB rounds again, on one connection.
    fn small_large_small(s: &mut TcpStream) -> u64 {
        let mut pos = 0u64;
        for _ in 0..50 {
            s.write_all(&pattern(pos, 1000)).unwrap();
            read_checked(s, pos, 1000);
            pos += 1000;
        }
        let big = 8usize << 20;
        let mut w = s.try_clone().unwrap();
        let from = pos;
        let writer = std::thread::spawn(move || w.write_all(&pattern(from, big)));
        read_checked(s, pos, big);
        writer.join().unwrap().unwrap();
        pos += big as u64;
        for _ in 0..50 {
            s.write_all(&pattern(pos, 1000)).unwrap();
            read_checked(s, pos, 1000);
            pos += 1000;
        }
        s.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "{} bytes after the last round", rest.len());
        pos
    }

    fn finished(srv: &Server, n: usize) {
        let t = Instant::now();
        while srv.finished_connections() < n && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `auto`: the small rounds are copied, the stream moves the connection to splice (a receive
    /// brings 32 KiB or more), and every byte comes back once and in order across the switch.
    #[test]
    fn auto_switches_to_splice_and_keeps_the_bytes_in_order() {
        let Some((rep, total)) = serve_small_large_small(UringData::Auto) else { return };
        let d = rep.uring_data.as_ref().unwrap();
        assert_eq!((d.requested, d.spliced, d.copied, d.switched), (UringData::Auto, 0, 0, 1), "{rep}");
        assert_eq!(rep.bytes_echoed, total, "{rep}");
        let c = &rep.connections[0];
        assert_eq!(c.end, "closed by peer");
        let note = c.note.as_deref().expect("a switched connection says so");
        let copied: u64 = note.strip_prefix("copied the first ").and_then(|r| r.split(' ').next()?.parse().ok()).unwrap();
        // The 1 KiB rounds were copied; the switch came in the stream, after a whole receive was echoed.
        assert!((50_000..total - 50_000).contains(&copied), "{note}");
    }

    /// `copy` and `splice` on the same traffic: no switch, and the report says so.
    #[test]
    fn copy_and_splice_stay_on_their_path() {
        for data in [UringData::Copy, UringData::Splice] {
            let Some((rep, total)) = serve_small_large_small(data) else { return };
            let d = rep.uring_data.as_ref().unwrap();
            let want = if data == UringData::Copy { (0, 1, 0) } else { (1, 0, 0) };
            assert_eq!((d.spliced, d.copied, d.switched), want, "{rep}");
            assert_eq!(rep.bytes_echoed, total, "{data}: {rep}");
            assert!(rep.connections[0].note.is_none(), "{data}: {rep}");
        }
    }

    /// A client that sends without reading leaves the server's (linked) send waiting for room;
    /// stopping the server then fails that send, cancels the receive linked behind it, and ends
    /// the connection at once, with every request accounted for.
    #[test]
    fn a_send_stuck_on_a_client_that_does_not_read_ends_on_shutdown() {
        for data in UringData::ALL {
            let Some(srv) = start(data) else { return };
            let s = TcpStream::connect(srv.local_addr()).unwrap();
            s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut w = s.try_clone().unwrap();
            let writer = std::thread::spawn(move || {
                let chunk = pattern(0, 1 << 20);
                let mut sent = 0u64;
                while sent < 64 << 20 && w.write_all(&chunk).is_ok() {
                    sent += chunk.len() as u64;
                }
                sent
            });
            // Until the server's echo has filled the client's receive buffer and its own send
            // buffer and the client's writes stall.
            std::thread::sleep(Duration::from_millis(500));
            let t = Instant::now();
            let rep = srv.shutdown();
            let took = t.elapsed();
            drop(s);
            let sent = writer.join().unwrap();
            assert!(took < Duration::from_secs(4), "{data}: shutdown took {took:?}");
            assert_eq!(rep.connections.len(), 1, "{data}: {rep}");
            assert_eq!(rep.connections[0].end, "server shutdown", "{data}: {rep}");
            assert!(sent < 64 << 20, "{data}: the client's writes never stalled");
            assert!(rep.bytes_echoed > 0, "{data}: {rep}");
        }
    }
}
