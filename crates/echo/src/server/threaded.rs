//! The thread-per-connection servers: naive, iosubmit, splice and sockmap.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{Mode, Shared, CHUNK, PIPE_SIZE};
use crate::aio::{AioContext, IoEvent};
use crate::bpf::{self, ObjKind};
use crate::sys;

/// Accepts until the eventfd `wake` is signalled; one thread per connection.
pub(super) fn accept_loop(sh: Arc<Shared>, listener: TcpListener, wake: Arc<OwnedFd>) {
    let mut warned = false;
    loop {
        let rev = match sys::poll(&[(listener.as_raw_fd(), libc::POLLIN), (wake.as_raw_fd(), libc::POLLIN)], -1) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("echo server: poll failed: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if sh.stop.load(Ordering::SeqCst) || rev[1] != 0 {
            break;
        }
        match listener.accept() {
            Ok((stream, peer)) => spawn_conn(&sh, stream, peer, &mut warned),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => {}
            Err(e) => {
                // EMFILE, ENFILE, ENOBUFS, ENOMEM: back off instead of spinning.
                if !warned {
                    eprintln!("echo server: accept failed: {e}; raise `ulimit -n` for more connections");
                    warned = true;
                }
                sh.refused.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        reap(&sh);
    }
}

/// Joins finished connection threads so that their handles do not pile up.
fn reap(sh: &Shared) {
    let mut w = sh.workers.lock().unwrap_or_else(|e| e.into_inner());
    if w.iter().any(|h| h.is_finished()) {
        let (done, live): (Vec<_>, Vec<_>) = std::mem::take(&mut *w).into_iter().partition(|h| h.is_finished());
        *w = live;
        drop(w);
        for h in done {
            let _ = h.join();
        }
    }
}

fn spawn_conn(sh: &Arc<Shared>, stream: TcpStream, peer: SocketAddr, warned: &mut bool) {
    let id = sh.next_id.fetch_add(1, Ordering::SeqCst);
    let stream = Arc::new(stream);
    sh.live.lock().unwrap_or_else(|e| e.into_inner()).insert(id, stream.clone());
    let sh2 = sh.clone();
    let s2 = stream.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("echo-conn-{id}"))
        .stack_size(256 << 10)
        .spawn(move || serve_conn(sh2, id, s2, peer));
    match spawned {
        Ok(h) => sh.workers.lock().unwrap_or_else(|e| e.into_inner()).push(h),
        Err(e) => {
            if !*warned {
                eprintln!("echo server: cannot start a thread for {peer}: {e}; connection refused");
                *warned = true;
            }
            sh.refused.fetch_add(1, Ordering::SeqCst);
            sh.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        }
    }
    // A shutdown that raced with this accept would not have seen the new connection.
    if sh.stop.load(Ordering::SeqCst) {
        sh.shut.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
        sys::shutdown_rdwr(stream.as_raw_fd());
    }
}

fn serve_conn(sh: Arc<Shared>, id: u64, stream: Arc<TcpStream>, peer: SocketAddr) {
    super::pin_serving_thread(sh.cfg.cpu);
    let fd = stream.as_raw_fd();
    let busy = sh.prepare(fd);
    let mut bytes = 0u64;
    let mut fallback = None;
    let res = match sh.cfg.mode {
        Mode::Naive => naive(&stream, &mut bytes),
        Mode::IoSubmit => iosubmit(fd, &mut bytes),
        Mode::Splice => splice(fd, &mut bytes),
        Mode::Sockmap => sockmap(&sh, &stream, &mut bytes, &mut fallback),
        Mode::IoUring => Err(io::Error::other("io_uring connections are served by the ring")),
    };
    sh.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    let by_server = sh.shut.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    let mut rep = sh.report(id, peer, fd, bytes, res, busy, by_server);
    rep.note = fallback;
    drop(stream);
    sh.finish(rep);
}

/// Blocking `recv` up to 128 KiB, then `send` all of it. Each receive lands at the stream
/// position's offset within a cache line ([`sys::line_offset`]).
fn naive(mut s: &TcpStream, bytes: &mut u64) -> io::Result<()> {
    let mut buf = sys::AlignedBuf::zeroed(CHUNK + sys::LINE);
    let mut pos = 0u64;
    loop {
        let off = sys::line_offset(pos);
        let n = match s.read(&mut buf[off..off + CHUNK]) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        s.write_all(&buf[off..off + n])?;
        pos += n as u64;
        *bytes += n as u64;
    }
}

/// One `io_submit` per round: the write of what the previous read got, and the next read.
fn iosubmit(fd: RawFd, bytes: &mut u64) -> io::Result<()> {
    const WRITE: u64 = 1;
    const READ: u64 = 2;
    let ctx = AioContext::new(4)?;
    let mut bufs = [sys::AlignedBuf::zeroed(CHUNK + sys::LINE), sys::AlignedBuf::zeroed(CHUNK + sys::LINE)];
    let mut ev = [IoEvent::default(); 2];
    let mut cur = 0usize;
    // Each read lands at its stream position's offset within a line (sys::line_offset); `off`
    // is where the data of bufs[cur] starts, `pos` the stream position after it.
    let mut off = 0usize;
    // The first read goes alone.
    let mut iocbs = [AioContext::read_iocb(fd, &mut bufs[cur][..CHUNK], READ)];
    // SAFETY: bufs outlive the call, which waits for the request to complete.
    unsafe { ctx.submit_and_wait(&mut iocbs, &mut ev[..1]) }?;
    let mut n = result(ev[0].res)?;
    let mut pos = n as u64;
    while n > 0 {
        let (a, b) = bufs.split_at_mut(1);
        let roff = sys::line_offset(pos);
        let (wbuf, rbuf) = if cur == 0 {
            (&a[0][off..off + n], &mut b[0][roff..roff + CHUNK])
        } else {
            (&b[0][off..off + n], &mut a[0][roff..roff + CHUNK])
        };
        let mut iocbs = [AioContext::write_iocb(fd, wbuf, WRITE), AioContext::read_iocb(fd, rbuf, READ)];
        // SAFETY: both buffers outlive the call, which waits for both requests; they do not overlap.
        unsafe { ctx.submit_and_wait(&mut iocbs, &mut ev) }?;
        let mut next = 0usize;
        for e in &ev {
            match e.data {
                WRITE => {
                    let w = result(e.res)?;
                    if w < n {
                        // A blocking socket writes everything unless interrupted: finish by hand.
                        let mut s = std::mem::ManuallyDrop::new(borrow_stream(fd));
                        s.write_all(&wbuf[w..n])?;
                    }
                    *bytes += n as u64;
                }
                READ => next = result(e.res)?,
                _ => return Err(io::Error::other("unexpected AIO completion")),
            }
        }
        n = next;
        pos += next as u64;
        off = roff;
        cur ^= 1;
    }
    Ok(())
}

fn result(res: i64) -> io::Result<usize> {
    if res < 0 {
        Err(io::Error::from_raw_os_error(-res as i32))
    } else {
        Ok(res as usize)
    }
}

/// A `TcpStream` view of a borrowed fd; wrap it in `ManuallyDrop` so it never closes the fd.
fn borrow_stream(fd: RawFd) -> TcpStream {
    // SAFETY: the caller keeps the fd open for the view's lifetime and never drops the view.
    unsafe { TcpStream::from_raw_fd(fd) }
}

/// socket → pipe → socket with `SPLICE_F_MOVE`.
fn splice(fd: RawFd, bytes: &mut u64) -> io::Result<()> {
    let (rd, wr, cap) = sys::pipe(PIPE_SIZE)?;
    loop {
        let n = match sys::splice(fd, wr.as_raw_fd(), cap, false) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut left = n;
        while left > 0 {
            match sys::splice(rd.as_raw_fd(), fd, left, false) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "splice to the socket wrote nothing")),
                Ok(m) => left -= m,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        *bytes += n as u64;
    }
}

/// Puts the socket into a one-slot sockmap whose verdict program redirects every received chunk
/// back out of it, and leaves it there until the peer is done. Every byte is echoed:
///
/// - a socket the kernel will not put into the map (it refuses any socket that is not
///   ESTABLISHED, e.g. one whose peer already sent everything and half-closed before this thread
///   got to it) is echoed by a user-space copy instead;
/// - when the peer half-closes, the socket leaves the map only once everything received has been
///   sent and acknowledged (the kernel drops whatever the sockmap still holds when it leaves);
///   what is then left in the receive queue is echoed by user space, and the socket is closed
///   with an empty receive queue, so the peer gets EOF and never a reset.
///
/// `bytes` counts what the kernel echoed (acknowledged by the peer) plus what user space copied.
/// Everything is detached and closed before returning.
fn sockmap(sh: &Shared, stream: &TcpStream, bytes: &mut u64, fallback: &mut Option<String>) -> io::Result<()> {
    let fd = stream.as_raw_fd();
    let map = bpf::create_sockmap(1, "slecho_map")?;
    let verdict = bpf::load_sk_skb(&bpf::verdict_program(map.as_raw_fd()), "slecho_verdict", bpf::BPF_SK_SKB_STREAM_VERDICT)
        .map_err(io::Error::other)?;
    {
        let mut ids = sh.bpf_ids.lock().unwrap_or_else(|e| e.into_inner());
        // Forget objects already verified gone, so long-running servers keep a short list.
        if ids.len() > 4096 {
            ids.retain(|(k, id)| bpf::exists(*k, *id).unwrap_or(true));
        }
        ids.extend(bpf::object_id(&map).ok().map(|id| (ObjKind::Map, id)));
        ids.extend(bpf::object_id(&verdict).ok().map(|id| (ObjKind::Prog, id)));
    }
    let parser = sh.parser.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|p| p.try_clone()).transpose()?;
    let parser = parser.ok_or_else(|| io::Error::other("server is shutting down"))?;
    bpf::attach(&map, &parser, bpf::BPF_SK_SKB_STREAM_PARSER)?;
    let joined = bpf::attach(&map, &verdict, bpf::BPF_SK_SKB_STREAM_VERDICT).and_then(|()| bpf::map_set_socket(&map, 0, fd));
    let res = match joined {
        Err(e) => {
            // Nothing has been read from the socket: user space echoes all of it.
            *fallback = Some(format!("could not join the SOCKMAP ({e}): echoed by user-space copy"));
            Ok(())
        }
        Ok(()) => {
            // Bytes that arrived before the socket entered the map wait in the receive queue until
            // the next data_ready; setting SO_RCVLOWAT calls data_ready now, so they are echoed too.
            let r = sys::set_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, 1).and_then(|()| wait_for_peer_done(sh, stream));
            let left = match &r {
                // The peer half-closed: let the kernel finish the echo before leaving the map.
                Ok(()) => drain_in_kernel(sh, fd),
                Err(_) => Ok(()),
            };
            // Once the server has shut the socket down (on stop), `acked` counts its FIN too:
            // never count more than was received (without the peer's FIN).
            *bytes = sys::tcp_bytes(fd)
                .map(|k| k.acked.min(k.received - u64::from(sys::peer_closed(fd)).min(k.received)))
                .unwrap_or(0);
            match (r, left) {
                (Err(e), _) => Err(e),
                (Ok(()), Err(lost)) => {
                    *fallback = Some(lost.clone());
                    Err(io::Error::other(lost))
                }
                (Ok(()), Ok(())) => Ok(()),
            }
        }
    };
    let _ = bpf::map_delete(&map, 0);
    let _ = bpf::detach(&map, &verdict, bpf::BPF_SK_SKB_STREAM_VERDICT);
    let _ = bpf::detach(&map, &parser, bpf::BPF_SK_SKB_STREAM_PARSER);
    res?;
    if sh.stop.load(Ordering::SeqCst) {
        return Ok(());
    }
    // Out of the map: whatever is still in the receive queue (all of it when the socket never
    // joined) is echoed from user space, up to the peer's EOF.
    let mut user = 0u64;
    let r = naive(stream, &mut user);
    *bytes += user;
    if user > 0 && fallback.is_none() {
        *fallback = Some(format!("{user} bytes left in the receive queue after leaving the SOCKMAP: echoed by user-space copy"));
    }
    r
}

/// Blocks until the peer half-closes (Ok), the connection fails (Err) or the server shuts the
/// socket down. It never reads: a read would race the stream parser for the bytes in the receive
/// queue and reorder the echo.
fn wait_for_peer_done(sh: &Shared, s: &TcpStream) -> io::Result<()> {
    let fd = s.as_raw_fd();
    loop {
        let rev = sys::poll(&[(fd, libc::POLLRDHUP)], 1000)?;
        if let Some(e) = s.take_error()? {
            return Err(e);
        }
        if rev[0] & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 || sh.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
    }
}

/// After the peer's FIN: waits until every byte received has been echoed and acknowledged
/// (`tcpi_bytes_acked` + 1 for the FIN = `tcpi_bytes_received`), or the server stops, or the
/// connection fails. A peer that is slow to read keeps it waiting, as it would keep a blocking
/// `send` waiting; but when nothing is in flight, nothing is queued and nothing moved for a
/// second while bytes are still missing, the kernel has dropped them: that is returned as the
/// error text, so that the loss is reported instead of hidden.
fn drain_in_kernel(sh: &Shared, fd: RawFd) -> Result<(), String> {
    let mut pause = Duration::from_micros(20);
    let mut last = None;
    let mut still_since = std::time::Instant::now();
    loop {
        let Ok(k) = sys::tcp_bytes(fd) else { return Ok(()) };
        let fin = u64::from(sys::peer_closed(fd));
        if k.acked + fin >= k.received || sh.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        // A reset or other failure ends the wait: there is nobody left to echo to.
        if sys::get_int(fd, libc::SOL_SOCKET, libc::SO_ERROR).map(|e| e != 0).unwrap_or(true) {
            return Ok(());
        }
        let busy = sys::queued(fd).map(|(inq, outq)| inq > 0 || outq > 0).unwrap_or(true);
        if last != Some(k.acked) || busy {
            last = Some(k.acked);
            still_since = std::time::Instant::now();
        } else if still_since.elapsed() > Duration::from_secs(1) {
            return Err(format!(
                "the kernel's sockmap dropped {} of {} bytes received (nothing queued, nothing in flight for 1 s)",
                k.received - fin - k.acked,
                k.received - fin
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}
