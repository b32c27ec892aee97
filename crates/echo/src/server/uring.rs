//! The io_uring server: one thread, one ring, every connection. Each connection has one request
//! in flight at a time (a receive into its 128 KiB buffer, or the send of what was received), so
//! its buffer is never touched by the kernel and by this loop at once.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::{Shared, CHUNK};
use crate::sys;

const ACCEPT: u64 = 1;
const WAKE: u64 = 2;
const RECV: u64 = 3;
const SEND: u64 = 4;
const CANCEL: u64 = 5;

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
    buf: sys::AlignedBuf,
    /// Where the data of the current receive starts in `buf` (its stream position's offset
    /// within a cache line, [`sys::line_offset`]).
    off: usize,
    len: usize,
    sent: usize,
    bytes: u64,
    busy: Option<u32>,
    /// The server shut this connection down (on stop).
    shut: bool,
}

/// The ring, created before the thread starts so that setup errors reach the caller.
pub(super) struct Loop {
    ring: IoUring,
}

impl Loop {
    pub(super) fn new() -> io::Result<Loop> {
        Ok(Loop { ring: IoUring::new(1024)? })
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
        if let Some(cpu) = sh.cfg.cpu {
            let _ = schedlab_report::machine::pin_current_thread(cpu);
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
            let cqes: Vec<cqueue::Entry> = self.ring.completion().collect();
            for c in cqes {
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
                            let conn = Conn {
                                stream,
                                peer,
                                id,
                                buf: sys::AlignedBuf::zeroed(CHUNK + sys::LINE),
                                off: 0,
                                len: 0,
                                sent: 0,
                                bytes: 0,
                                busy,
                                shut: false,
                            };
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
                            self.recv(&mut conns, s);
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
                    RECV => {
                        let Some(conn) = conns[slot].as_mut() else { continue };
                        if res > 0 {
                            conn.len = res as usize;
                            conn.sent = 0;
                            self.send(&mut conns, slot);
                            inflight += 1;
                        } else if res == -libc::EINTR || res == -libc::EAGAIN {
                            self.recv(&mut conns, slot);
                            inflight += 1;
                        } else {
                            let r = if res == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(-res)) };
                            close(&sh, &mut conns, &mut free, slot, r);
                        }
                    }
                    SEND => {
                        let Some(conn) = conns[slot].as_mut() else { continue };
                        if res >= 0 {
                            conn.sent += res as usize;
                            if conn.sent < conn.len {
                                self.send(&mut conns, slot);
                            } else {
                                conn.bytes += conn.len as u64;
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
                    std::mem::forget(c.buf);
                }
                std::mem::forget(wake_buf);
                return;
            }
        }
        drop(wake_buf);
    }

    fn recv(&mut self, conns: &mut [Option<Conn>], slot: usize) {
        let c = conns[slot].as_mut().expect("live slot");
        // Everything received so far has been echoed: `bytes` is the stream position.
        c.off = sys::line_offset(c.bytes);
        let dst = &mut c.buf[c.off..c.off + CHUNK];
        let e = opcode::Recv::new(types::Fd(c.stream.as_raw_fd()), dst.as_mut_ptr(), CHUNK as u32).build();
        self.push(e.user_data(ud(RECV, slot)));
    }

    fn send(&mut self, conns: &mut [Option<Conn>], slot: usize) {
        let c = conns[slot].as_mut().expect("live slot");
        let rest = &c.buf[c.off + c.sent..c.off + c.len];
        let e = opcode::Send::new(types::Fd(c.stream.as_raw_fd()), rest.as_ptr(), rest.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build();
        self.push(e.user_data(ud(SEND, slot)));
    }
}

fn close(sh: &Shared, conns: &mut [Option<Conn>], free: &mut Vec<usize>, slot: usize, res: io::Result<()>) {
    if let Some(c) = conns[slot].take() {
        let rep = sh.report(c.id, c.peer, c.stream.as_raw_fd(), c.bytes, res, c.busy, c.shut);
        drop(c);
        free.push(slot);
        sh.finish(rep);
    }
}
