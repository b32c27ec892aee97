//! 200 concurrent clients against each server: every byte echoed, no fd or thread leak, and the
//! server still answers afterwards. Alone in its test binary so that /proc/self/fd counts only
//! this test's descriptors.

mod common;

use std::time::Duration;

use schedlab_echo::sys;

const CLIENTS: usize = 200;
const SIZES: [u64; 3] = [1, 4 << 10, 64 << 10];
const ROUNDS: u64 = 5;

#[test]
fn two_hundred_clients_per_mode() {
    for (mode, data) in common::variants() {
        if let Err(e) = mode.probe() {
            common::skip_mode(mode, &e.to_string());
            continue;
        }
        let fds_before = sys::open_fds().unwrap();
        let threads_before = sys::thread_count().unwrap();
        let srv = common::start_with(mode, data).unwrap();
        let addr = srv.local_addr();
        std::thread::scope(|sc| {
            for i in 0..CLIENTS {
                std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn_scoped(sc, move || common::bursts(addr, SIZES[i % SIZES.len()], ROUNDS))
                    .unwrap();
            }
        });
        // Still answers.
        assert_eq!(common::bursts(addr, 1000, 3), 3);
        let rep = srv.shutdown();
        let expected: u64 = (0..CLIENTS).map(|i| SIZES[i % SIZES.len()] * ROUNDS).sum::<u64>() + 3000;
        assert_eq!(rep.connections.len(), CLIENTS + 1, "{mode}: {rep}");
        assert_eq!(rep.bytes_echoed, expected, "{mode}: every byte echoed");
        assert_eq!(rep.refused, 0, "{mode}");
        if let Some(d) = &rep.uring_data {
            assert_eq!(d.requested, data);
            assert_eq!(d.spliced + d.copied + d.switched, (CLIENTS + 1) as u64, "{rep}");
        }
        assert_eq!(rep.bpf_objects_remaining, 0, "{mode}");
        assert_eq!(sys::open_fds().unwrap(), fds_before, "{mode}: file descriptors leaked");
        // Thread exit is asynchronous in the kernel; give it a moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while sys::thread_count().unwrap() > threads_before && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(sys::thread_count().unwrap(), threads_before, "{mode}: threads leaked");
        eprintln!(
            "{mode} ({data}): {} connections, {} bytes echoed, fds {fds_before} before and after",
            rep.connections.len(),
            rep.bytes_echoed
        );
    }
}
