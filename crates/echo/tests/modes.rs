//! Every mode echoes 1 B, 4 KiB, 64 KiB and 1 MiB bursts correctly, survives clients that
//! vanish or send garbage, reports busy poll honestly, and releases its BPF objects.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use schedlab_echo::server::{Mode, Server, ServerConfig, UringData};

const SIZES: [u64; 4] = [1, 4 << 10, 64 << 10, 1 << 20];

#[test]
fn every_mode_echoes_every_size() {
    for (mode, data) in common::variants() {
        let Some(srv) = common::start_with(mode, data) else { continue };
        let addr = srv.local_addr();
        let mut expected = 0;
        for size in SIZES {
            let rounds = if size >= 1 << 20 { 4 } else { 20 };
            assert_eq!(common::bursts(addr, size, rounds), rounds as usize, "{mode} {size}");
            expected += size * rounds;
        }
        // Let the server see the last client's close before stopping it.
        let t = std::time::Instant::now();
        while srv.finished_connections() < SIZES.len() && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let rep = srv.shutdown();
        assert_eq!(rep.connections.len(), SIZES.len(), "{mode}: {rep}");
        assert_eq!(rep.bytes_echoed, expected, "{mode}: the server's own count of echoed bytes");
        assert!(rep.connections.iter().all(|c| c.end == "closed by peer"), "{mode}: {:?}", rep.connections);
        if mode == Mode::IoUring {
            // The report says which path the bytes took, and it is the one asked for.
            let d = rep.uring_data.as_ref().expect("io_uring reports its data path");
            assert_eq!(d.requested, data);
            let n = SIZES.len() as u64;
            match data {
                UringData::Splice => assert_eq!((d.spliced, d.copied, d.switched), (n, 0, 0), "{rep}"),
                UringData::Copy => assert_eq!((d.spliced, d.copied, d.switched), (0, n, 0), "{rep}"),
                // The 1 MiB bursts (and, when a receive brings 32 KiB of one, the 64 KiB ones)
                // move to splice; 1 B and 4 KiB never do.
                UringData::Auto => {
                    assert_eq!((d.spliced, d.copied + d.switched), (0, n), "{rep}");
                    assert!((1..=2).contains(&d.switched), "{rep}");
                }
            }
        } else {
            assert!(rep.uring_data.is_none());
        }
        if mode == Mode::Sockmap {
            assert!(rep.bpf_objects_created > 2 * SIZES.len(), "parser + map and verdict per connection");
            assert_eq!(rep.bpf_objects_remaining, 0, "no BPF program or map of the server is left");
        }
    }
}

/// A client that sends before the server has set its socket up (no settle pause) is echoed too:
/// for sockmap this is the bytes-queued-before-the-map case.
#[test]
fn data_sent_before_setup_is_echoed() {
    for (mode, data) in common::variants() {
        let Some(srv) = common::start_with(mode, data) else { continue };
        for _ in 0..10 {
            let mut s = TcpStream::connect(srv.local_addr()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(b"early bird").unwrap();
            let mut b = [0u8; 10];
            s.read_exact(&mut b).unwrap_or_else(|e| panic!("{mode}: {e}"));
            assert_eq!(&b, b"early bird");
        }
    }
}

#[test]
fn vanishing_and_garbage_clients_do_not_hurt() {
    for (mode, data) in common::variants() {
        let Some(srv) = common::start_with(mode, data) else { continue };
        let addr = srv.local_addr();
        // Connects and leaves at once.
        drop(TcpStream::connect(addr).unwrap());
        // Sends 4 MiB of garbage and vanishes without reading: the server's sends fail.
        {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
            let junk: Vec<u8> = (0..4u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
            let _ = s.write(&junk);
            // Reset rather than close: linger 0.
            let s2 = socket_with_linger0(s);
            drop(s2);
        }
        // Sends garbage, half-closes, and gets exactly the garbage back.
        {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let junk: Vec<u8> = (0..100_000u32).map(|i| (i ^ (i >> 7)) as u8).collect();
            s.write_all(&junk).unwrap();
            let mut back = vec![0u8; junk.len()];
            s.read_exact(&mut back).unwrap_or_else(|e| panic!("{mode}: {e}"));
            assert_eq!(back, junk, "{mode}");
            s.shutdown(Shutdown::Write).unwrap();
        }
        // The server still answers.
        assert_eq!(common::bursts(addr, 4096, 5), 5, "{mode}");
        let rep = srv.shutdown();
        assert!(rep.connections.len() >= 4, "{mode}: {rep}");
        assert_eq!(rep.bpf_objects_remaining, 0);
    }
}

fn socket_with_linger0(s: TcpStream) -> TcpStream {
    use std::os::fd::AsRawFd;
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: passes a live linger struct and its size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    s
}

#[test]
fn busy_poll_is_set_and_reported_as_ineffective_on_loopback() {
    for mode in [Mode::Naive, Mode::IoUring] {
        if let Err(e) = mode.probe() {
            common::skip_mode(mode, &e.to_string());
            continue;
        }
        let mut cfg = ServerConfig::new(mode, "127.0.0.1:0".parse().unwrap());
        cfg.busy_poll_us = Some(50);
        let srv = Server::start(cfg).unwrap();
        common::bursts(srv.local_addr(), 100, 3);
        let rep = srv.shutdown();
        let c = &rep.connections[0];
        if c.busy_poll_us == Some(0) {
            common::skip_mode(mode, "SO_BUSY_POLL refused here (needs CAP_NET_ADMIN: root)");
            continue;
        }
        assert_eq!(c.busy_poll_us, Some(50), "{mode}: read back from the socket");
        assert_eq!(c.napi_id, Some(0), "loopback has no NAPI");
        assert!(c.to_string().contains("cannot take effect"), "{c}");
    }
}

#[test]
fn shutdown_with_clients_still_connected_ends_everything() {
    for (mode, data) in common::variants() {
        let Some(srv) = common::start_with(mode, data) else { continue };
        let mut held: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(srv.local_addr()).unwrap()).collect();
        for s in &mut held {
            s.write_all(b"x").unwrap();
            let mut b = [0u8; 1];
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.read_exact(&mut b).unwrap();
        }
        let t = std::time::Instant::now();
        let rep = srv.shutdown();
        assert!(t.elapsed() < Duration::from_secs(5), "{mode}: shutdown took {:?}", t.elapsed());
        assert_eq!(rep.connections.len(), 5, "{mode}: {rep}");
        assert!(rep.connections.iter().all(|c| c.end == "server shutdown"), "{mode}: {:?}", rep.connections);
        for s in &mut held {
            let mut b = [0u8; 1];
            assert_eq!(s.read(&mut b).unwrap_or(0), 0, "{mode}: the server closed the connection");
        }
    }
}

#[test]
fn port_in_use_is_a_clear_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let e = Server::start(ServerConfig::new(Mode::Naive, l.local_addr().unwrap())).err().expect("must fail");
    assert!(e.to_string().contains("already in use"), "{e}");
}

/// A client that streams without pause (a writer and a reader thread) does not starve the other
/// connections of the io_uring loop: a burst client beside it finishes its rounds (each round
/// would time out after the client's default timeout otherwise).
#[test]
fn a_streaming_client_does_not_starve_the_others() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    for (mode, data) in common::variants() {
        if mode != Mode::IoUring {
            continue;
        }
        let Some(srv) = common::start_with(mode, data) else { continue };
        let addr = srv.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let s = TcpStream::connect(addr).unwrap();
        let mut w = s.try_clone().unwrap();
        let r = s.try_clone().unwrap();
        let st = stop.clone();
        let writer = std::thread::spawn(move || {
            let buf = vec![7u8; 1 << 20];
            while !st.load(Ordering::SeqCst) && w.write_all(&buf).is_ok() {}
        });
        let reader = std::thread::spawn(move || {
            let mut b = vec![0u8; 1 << 20];
            let mut n = 0u64;
            while let Ok(k @ 1..) = (&r).read(&mut b) {
                n += k as u64;
            }
            n
        });
        std::thread::sleep(Duration::from_millis(200));
        let t = std::time::Instant::now();
        assert_eq!(common::bursts(addr, 1000, 50), 50, "{mode} ({data})");
        let took = t.elapsed();
        stop.store(true, Ordering::SeqCst);
        s.shutdown(Shutdown::Both).unwrap();
        writer.join().unwrap();
        let streamed = reader.join().unwrap();
        assert!(streamed > 0, "{mode} ({data}): the streaming client got its echo too");
        drop(srv);
        eprintln!("{mode} ({data}): 50 rounds beside a streaming client in {took:?}; it got {streamed} bytes back");
    }
}
