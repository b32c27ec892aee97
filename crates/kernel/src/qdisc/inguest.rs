//! The guest side of `schedlab qdisc`: a veth pair, the qdisc tree, paced UDP senders and a
//! receiver in its own network namespace (so that the packets cross the veth, not `lo`).
//!
//! Runs only inside the guest (it rewires the network): [`execute`] refuses to run unless
//! `SCHEDLAB_IN_GUEST=1` is set and the kernel command line is the guest runner's.
//!
//! Every datagram carries a 32-byte stamp: magic, flow, message number, packet index, packets in
//! the message, and the `CLOCK_MONOTONIC` time its message's first packet was sent (one clock for
//! both namespaces). A packet's length on the veth (Ethernet + IPv4 + UDP + payload) is the
//! traffic file's packet length.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedlab_report::frontend::now_ns;
use schedlab_report::Hist;

use super::{fill_shares, Alg, FlowResult, KernelAnswer, Plan};

pub const STAMP_LEN: usize = 32;
const MAGIC: u32 = 0x534c_5144; // "SLQD"
const HEADERS: u32 = 42; // Ethernet 14 + IPv4 20 + UDP 8
const NETNS: &str = "schedlab-rx";
const TX_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const RX_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const TX_MAC: &str = "02:00:00:00:00:01";
const RX_MAC: &str = "02:00:00:00:00:02";
const BASE_PORT: u16 = 5001;

/// Something in the guest failed.
#[derive(Debug, thiserror::Error)]
pub enum InGuestError {
    #[error("refusing to rewire this machine's network: `schedlab qdisc --in-guest` runs only inside `schedlab vm`'s guest")]
    NotInGuest,
    #[error("{cmd}: {msg}")]
    Command { cmd: String, msg: String },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{0}")]
    Other(String),
}

fn run(args: &[&str]) -> Result<String, InGuestError> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| InGuestError::Command { cmd: args.join(" "), msg: e.to_string() })?;
    if !out.status.success() {
        return Err(InGuestError::Command {
            cmd: args.join(" "),
            msg: format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn runs(line: &str) -> Result<String, InGuestError> {
    let v: Vec<&str> = line.split_whitespace().collect();
    run(&v)
}

/// The qdisc tree for `plan` under the tbf bottleneck, as `tc` command lines (veth0, handle 10:).
/// Flow `i` goes to class `10:(i+1)` (drr, qfq) or to the band of its weight (prio); a catch-all
/// class takes what no filter classifies (drr and qfq drop unclassified packets).
pub fn tc_commands(plan: &Plan) -> Vec<String> {
    let n = plan.flows.len();
    // 20 ms of the rate (at least four frames): an emulated guest's timers fire late, and a
    // smaller bucket would let the link run below its rate.
    let burst = (plan.link_bps / 8 / 50).max(4 * 1514);
    let mut c =
        vec![format!("tc qdisc add dev veth0 root handle 1: tbf rate {}bit burst {burst} limit {}", plan.link_bps, 1514 * 64)];
    let q = plan.queue_pkts;
    let leaf = |class: usize, c: &mut Vec<String>| {
        c.push(format!("tc qdisc add dev veth0 parent 10:{class:x} handle {:x}: pfifo limit {q}", 0x100 + class))
    };
    let filter = |port: u16, class: usize| {
        format!("tc filter add dev veth0 parent 10: protocol ip prio 1 u32 match ip dport {port} 0xffff flowid 10:{class:x}")
    };
    match plan.alg {
        Alg::Fifo => c.push(format!("tc qdisc add dev veth0 parent 1:1 handle 10: pfifo limit {q}")),
        Alg::Fq => {
            c.push(format!("tc qdisc add dev veth0 parent 1:1 handle 10: fq limit {} flow_limit {q}", u64::from(q) * n as u64))
        }
        Alg::FqCodel => {
            c.push(format!("tc qdisc add dev veth0 parent 1:1 handle 10: fq_codel limit {}", u64::from(q) * n as u64))
        }
        Alg::Drr => c.push("tc qdisc add dev veth0 parent 1:1 handle 10: drr".to_string()),
        // Linux's qfq fixes its classes per aggregate when the qdisc is created, from the device's
        // txqueuelen: min(txqueuelen + 1, 8) rounded down to a power of two (qfq_init_qdisc). Set
        // it for that moment only; the leaves' pfifo limits are explicit.
        Alg::Qfq => {
            c.push(format!("ip link set dev veth0 txqueuelen {}", plan.qfq_agg_classes.max(1) - 1));
            c.push("tc qdisc add dev veth0 parent 1:1 handle 10: qfq".to_string());
            c.push("ip link set dev veth0 txqueuelen 1000".to_string());
        }
        _ => {}
    }
    match plan.alg {
        Alg::Fifo | Alg::Fq | Alg::FqCodel => {}
        Alg::Drr | Alg::Qfq => {
            for i in 0..=n {
                let class = i + 1;
                let spec = match (plan.alg, i < n) {
                    (Alg::Drr, true) => format!("drr quantum {}", plan.quantum(i)),
                    (Alg::Drr, false) => "drr quantum 1514".to_string(),
                    (_, true) => format!("qfq weight {} maxpkt {}", plan.flows[i].weight, plan.flows[i].max_len),
                    (_, false) => format!("qfq weight 1 maxpkt {MIN_QFQ_LMAX}"),
                };
                c.push(format!("tc class add dev veth0 parent 10: classid 10:{class:x} {spec}"));
                leaf(class, &mut c);
            }
            for i in 0..n {
                c.push(filter(BASE_PORT + i as u16, i + 1));
            }
            c.push(format!("tc filter add dev veth0 parent 10: protocol all prio 2 u32 match u32 0 0 flowid 10:{:x}", n + 1));
        }
        Alg::Prio => {
            let bands = prio_bands(plan);
            let nb = bands.iter().max().map_or(1, |b| b + 1).max(2);
            c.push(format!("tc qdisc add dev veth0 parent 1:1 handle 10: prio bands {nb} priomap {}", vec!["1"; 16].join(" ")));
            for b in 0..nb {
                leaf(b + 1, &mut c);
            }
            for (i, b) in bands.iter().enumerate() {
                c.push(filter(BASE_PORT + i as u16, b + 1));
            }
        }
    }
    c
}

/// The catch-all class's maximum packet under qfq (a full frame).
const MIN_QFQ_LMAX: u32 = 1514;

/// prio: band 0 for the highest weight, one band per distinct weight (at most 16).
fn prio_bands(plan: &Plan) -> Vec<usize> {
    let mut w: Vec<u32> = plan.flows.iter().map(|f| f.weight).collect();
    w.sort_unstable_by(|a, b| b.cmp(a));
    w.dedup();
    plan.flows.iter().map(|f| w.iter().position(|x| *x == f.weight).unwrap_or(0).min(15)).collect()
}

/// The leaf queue of flow `i` (its handle), where the tree has one per flow.
fn leaf_of(plan: &Plan, i: usize) -> Option<String> {
    match plan.alg {
        Alg::Drr | Alg::Qfq => Some(format!("{:x}:", 0x100 + i + 1)),
        _ => None,
    }
}

/// Per-qdisc counters from `tc -s -j qdisc show` (handle -> (drops, qlen, packets)).
#[derive(Clone, Debug, Default)]
struct Snapshot {
    qdiscs: std::collections::BTreeMap<String, (u64, u64, u64)>,
}

fn snapshot() -> Result<Snapshot, InGuestError> {
    let text = runs("tc -s -j qdisc show dev veth0")?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| InGuestError::Other(format!("tc -s -j qdisc show: not JSON ({e}): {text}")))?;
    let mut s = Snapshot::default();
    for q in v.as_array().into_iter().flatten() {
        let handle = q.get("handle").and_then(|h| h.as_str()).unwrap_or("").to_string();
        let num = |k: &str| q.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
        s.qdiscs.insert(handle, (num("drops"), num("qlen"), num("packets")));
    }
    Ok(s)
}

fn in_guest() -> bool {
    std::env::var("SCHEDLAB_IN_GUEST").as_deref() == Ok("1")
        && std::fs::read_to_string("/proc/cmdline").map(|c| c.contains(" xchg=")).unwrap_or(false)
}

/// Per-flow counters shared between the receiver and the main thread.
struct RxFlow {
    bytes: AtomicU64,
    pkts: AtomicU64,
}

/// Runs `plan` (inside the guest, as root) and returns the kernel's answer.
pub fn execute(plan: &Plan) -> Result<KernelAnswer, InGuestError> {
    if !in_guest() {
        return Err(InGuestError::NotInGuest);
    }
    plan.validate().map_err(InGuestError::Other)?;
    let n = plan.flows.len();
    for l in [
        format!("ip netns add {NETNS}"),
        format!("ip link add veth0 address {TX_MAC} type veth peer name veth1 address {RX_MAC}"),
        format!("ip link set veth1 netns {NETNS}"),
        "ip addr add 198.18.0.1/24 dev veth0".into(),
        "ip link set veth0 up".into(),
        format!("ip -n {NETNS} addr add 198.18.0.2/24 dev veth1"),
        format!("ip -n {NETNS} link set veth1 up"),
        format!("ip -n {NETNS} link set lo up"),
        format!("ip neigh replace 198.18.0.2 lladdr {RX_MAC} dev veth0 nud permanent"),
        format!("ip -n {NETNS} neigh replace 198.18.0.1 lladdr {TX_MAC} dev veth1 nud permanent"),
    ] {
        runs(&l)?;
    }
    let _ = std::fs::write("/proc/sys/net/ipv6/conf/veth0/disable_ipv6", "1");
    for l in tc_commands(plan) {
        runs(&l)?;
    }

    let start = now_ns() + 300_000_000;
    let duration_ns = (plan.duration_s() * 1e9) as u64;
    let win_lo = start + (plan.warmup_s * 1e9) as u64;
    let win_hi = start + duration_ns;
    let rx_end = win_hi + 500_000_000;

    // Receiver: its own thread, moved into the receiving namespace before it opens a socket.
    let rx_flows: Arc<Vec<RxFlow>> =
        Arc::new((0..n).map(|_| RxFlow { bytes: AtomicU64::new(0), pkts: AtomicU64::new(0) }).collect());
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let rx = {
        let flows = Arc::clone(&rx_flows);
        std::thread::spawn(move || receiver(n, win_lo, win_hi, rx_end, &flows, ready_tx))
    };
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(InGuestError::Other(format!("receiver: {e}"))),
        Err(_) => return Err(InGuestError::Other("receiver thread ended before it was ready".into())),
    }
    let refused: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let offered: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let mut senders = Vec::new();
    for (i, program) in plan.clients.iter().enumerate() {
        let program = program.clone();
        let (refused, offered) = (Arc::clone(&refused), Arc::clone(&offered));
        senders.push(std::thread::spawn(move || sender(i, &program, start, win_lo, win_hi, &refused[i], &offered[i])));
    }
    sleep_until(win_lo);
    let s0 = snapshot()?;
    let refused0: Vec<u64> = refused.iter().map(|r| r.load(Ordering::Relaxed)).collect();
    sleep_until(win_hi);
    let s1 = snapshot()?;
    let refused1: Vec<u64> = refused.iter().map(|r| r.load(Ordering::Relaxed)).collect();
    for s in senders {
        s.join().map_err(|_| InGuestError::Other("a sender thread panicked".into()))?.map_err(InGuestError::Other)?;
    }
    let (delays, receiver_drops) =
        rx.join().map_err(|_| InGuestError::Other("the receiver thread panicked".into()))?.map_err(InGuestError::Other)?;
    let qdiscs = runs("tc -s qdisc show dev veth0")?;

    let window_s = (win_hi - win_lo) as f64 / 1e9;
    let mut flows: Vec<FlowResult> = (0..n)
        .map(|i| {
            let (leaf_drops, leaf_q0, leaf_q1) = leaf_of(plan, i).map_or((0, 0, 0), |h| {
                let a = s0.qdiscs.get(&h).copied().unwrap_or_default();
                let b = s1.qdiscs.get(&h).copied().unwrap_or_default();
                (b.0.saturating_sub(a.0), a.1, b.1)
            });
            let refused = refused1[i] - refused0[i];
            let drops = leaf_drops + refused;
            FlowResult {
                flow: i,
                offered_pkts: offered[i].load(Ordering::Relaxed),
                bytes: rx_flows[i].bytes.load(Ordering::Relaxed),
                pkts: rx_flows[i].pkts.load(Ordering::Relaxed),
                drops,
                backlogged: drops > 0 || leaf_q0 > 0 || leaf_q1 > 0,
                delay_us: (!delays[i].is_empty()).then(|| delays[i].summary(1000.0)),
                ..Default::default()
            }
        })
        .collect();
    fill_shares(&mut flows, window_s);
    let root0 = s0.qdiscs.get("1:").copied().unwrap_or_default();
    let root1 = s1.qdiscs.get("1:").copied().unwrap_or_default();
    let link_rate_bps = flows.iter().map(|f| f.rate_bps).sum::<f64>();
    let link_drops = root1.0.saturating_sub(root0.0);
    let sender_refused: u64 = refused1.iter().zip(&refused0).map(|(a, b)| a - b).sum();
    let queued = link_drops > 0 || root0.1 > 0 || root1.1 > 0 || sender_refused > 0 || flows.iter().any(|f| f.backlogged);
    let saturated = link_rate_bps >= 0.9 * plan.link_bps as f64 && queued;
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    Ok(KernelAnswer {
        kernel,
        qdiscs,
        window_s,
        flows,
        link_rate_bps,
        link_drops,
        link_backlog_pkts: root1.1,
        sender_refused,
        receiver_drops,
        saturated,
    })
}

fn sleep_until(t: u64) {
    loop {
        let now = now_ns();
        if now >= t {
            return;
        }
        std::thread::sleep(Duration::from_nanos((t - now).min(50_000_000)));
    }
}

fn sender(
    flow: usize,
    program: &[super::Step],
    start: u64,
    win_lo: u64,
    win_hi: u64,
    refused: &AtomicU64,
    offered: &AtomicU64,
) -> Result<(), String> {
    let sock = UdpSocket::bind(SocketAddrV4::new(TX_ADDR, 0)).map_err(|e| format!("sender {flow}: bind: {e}"))?;
    let port = BASE_PORT + flow as u16;
    sock.connect(SocketAddrV4::new(RX_ADDR, port)).map_err(|e| format!("sender {flow}: connect: {e}"))?;
    sock.set_nonblocking(true).map_err(|e| format!("sender {flow}: nonblocking: {e}"))?;
    let mut buf = vec![0u8; 1500];
    let mut msg: u64 = 0;
    let mut t0 = start;
    for step in program {
        let end = t0 + step.duration_ns;
        let Some(gap) = step.gap_ns() else {
            t0 = end;
            continue;
        };
        let payload = (step.pkt_len - HEADERS) as usize;
        let mut next = t0;
        while next < end {
            sleep_until(next);
            let sent_at = now_ns();
            for idx in 0..step.burst {
                stamp(&mut buf[..payload], flow as u32, msg, idx, step.burst, sent_at);
                let in_window = (win_lo..win_hi).contains(&now_ns());
                if in_window {
                    offered.fetch_add(1, Ordering::Relaxed);
                }
                match sock.send(&buf[..payload]) {
                    Ok(_) => {}
                    // A full socket buffer: the packets already queued in the qdisc hold it.
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS) => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => return Err(format!("sender {flow}: send: {e}")),
                }
            }
            msg += 1;
            next += gap;
        }
        t0 = end;
    }
    Ok(())
}

fn stamp(buf: &mut [u8], flow: u32, msg: u64, idx: u32, npk: u32, sent_ns: u64) {
    buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    buf[4..8].copy_from_slice(&flow.to_le_bytes());
    buf[8..16].copy_from_slice(&msg.to_le_bytes());
    buf[16..20].copy_from_slice(&idx.to_le_bytes());
    buf[20..24].copy_from_slice(&npk.to_le_bytes());
    buf[24..32].copy_from_slice(&sent_ns.to_le_bytes());
}

/// A stamp read back: (flow, message, index, packets in the message, sent ns).
fn read_stamp(buf: &[u8]) -> Option<(u32, u64, u32, u32, u64)> {
    if buf.len() < STAMP_LEN || u32::from_le_bytes(buf[0..4].try_into().ok()?) != MAGIC {
        return None;
    }
    let u32at = |o: usize| u32::from_le_bytes(buf[o..o + 4].try_into().expect("4 bytes"));
    let u64at = |o: usize| u64::from_le_bytes(buf[o..o + 8].try_into().expect("8 bytes"));
    Some((u32at(4), u64at(8), u32at(16), u32at(20), u64at(24)))
}

fn enter_netns(name: &str) -> Result<(), String> {
    let path = format!("/run/netns/{name}");
    let f = std::fs::File::open(&path).map_err(|e| format!("open {path}: {e}"))?;
    // SAFETY: setns on a descriptor we own; CLONE_NEWNET changes only this thread's namespace.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

fn receiver(
    n: usize,
    win_lo: u64,
    win_hi: u64,
    end: u64,
    flows: &[RxFlow],
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) -> Result<(Vec<Hist>, u64), String> {
    let setup = || -> Result<Vec<UdpSocket>, String> {
        enter_netns(NETNS)?;
        (0..n)
            .map(|i| {
                let s = UdpSocket::bind(SocketAddrV4::new(RX_ADDR, BASE_PORT + i as u16))
                    .map_err(|e| format!("bind port {}: {e}", BASE_PORT + i as u16))?;
                s.set_nonblocking(true).map_err(|e| e.to_string())?;
                // A deep receive buffer (root may force it past rmem_max): an emulated receiver
                // lags, and what it has not read yet must wait, not be dropped.
                let size: libc::c_int = 16 << 20;
                // SAFETY: setsockopt on a socket we own with a valid c_int option value.
                unsafe {
                    libc::setsockopt(
                        s.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_RCVBUFFORCE,
                        (&size as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                    )
                };
                Ok(s)
            })
            .collect()
    };
    let socks = match setup() {
        Ok(s) => {
            let _ = ready.send(Ok(()));
            s
        }
        Err(e) => {
            let _ = ready.send(Err(e.clone()));
            return Err(e);
        }
    };
    let mut delays: Vec<Hist> = (0..n).map(|_| Hist::new()).collect();
    // Per flow: the message being received and how many of its packets came.
    let mut cur: Vec<(u64, u32)> = vec![(u64::MAX, 0); n];
    let mut pfds: Vec<libc::pollfd> =
        socks.iter().map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let mut buf = vec![0u8; 2048];
    while now_ns() < end {
        // SAFETY: `pfds` is a valid array of pollfd of the given length, alive for the call.
        let rc = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 50) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("poll: {e}"));
        }
        for (k, s) in socks.iter().enumerate() {
            if pfds[k].revents == 0 {
                continue;
            }
            loop {
                let len = match s.recv(&mut buf) {
                    Ok(l) => l,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(format!("recv: {e}")),
                };
                let now = now_ns();
                let Some((flow, msg, idx, npk, sent)) = read_stamp(&buf[..len]) else { continue };
                let f = flow as usize;
                if f >= n {
                    continue;
                }
                if (win_lo..win_hi).contains(&now) {
                    flows[f].bytes.fetch_add(len as u64 + u64::from(HEADERS), Ordering::Relaxed);
                    flows[f].pkts.fetch_add(1, Ordering::Relaxed);
                }
                if cur[f].0 != msg {
                    cur[f] = (msg, 0);
                }
                cur[f].1 += 1;
                // A message counts when all its packets came; its delay is from its first
                // packet's send to its last packet's arrival.
                if idx + 1 == npk && cur[f].1 == npk && (win_lo..win_hi).contains(&now) {
                    delays[f].record(now.saturating_sub(sent));
                }
            }
            pfds[k].revents = 0;
        }
    }
    Ok((delays, udp_rcvbuf_errors()))
}

/// `Udp: RcvbufErrors` of this thread's network namespace (datagrams dropped at full receive
/// buffers).
fn udp_rcvbuf_errors() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap_or_default();
    let mut udp = text.lines().filter(|l| l.starts_with("Udp: "));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else { return 0 };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "RcvbufErrors")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(alg: Alg) -> Plan {
        super::super::test_plan(alg)
    }

    #[test]
    fn drr_quanta_are_weight_times_max_length_and_every_flow_has_a_filter() {
        let c = tc_commands(&plan(Alg::Drr)).join("\n");
        assert!(c.contains("classid 10:1 drr quantum 150000"), "{c}");
        assert!(c.contains("classid 10:2 drr quantum 1500"), "{c}");
        assert!(c.contains("dport 5001 0xffff flowid 10:1"), "{c}");
        assert!(c.contains("dport 5002 0xffff flowid 10:2"), "{c}");
        assert!(c.contains("match u32 0 0 flowid 10:3"), "{c}");
        assert!(c.contains("tbf rate 5000000bit"), "{c}");
    }

    #[test]
    fn qfq_takes_the_same_weights_and_prio_puts_the_heavy_flow_first() {
        let c = tc_commands(&plan(Alg::Qfq)).join("\n");
        assert!(c.contains("classid 10:1 qfq weight 100 maxpkt 1500"), "{c}");
        assert!(c.contains("classid 10:2 qfq weight 1 maxpkt 1500"), "{c}");
        // Linux's 8 classes per aggregate: txqueuelen 7 while the qdisc is created, then back.
        let q = c.find("handle 10: qfq").unwrap();
        assert!(c[..q].ends_with("ip link set dev veth0 txqueuelen 7\ntc qdisc add dev veth0 parent 1:1 "), "{c}");
        assert!(c[q..].starts_with("handle 10: qfq\nip link set dev veth0 txqueuelen 1000\n"), "{c}");
        let mut p = plan(Alg::Qfq);
        p.qfq_agg_classes = 1;
        assert!(tc_commands(&p).join("\n").contains("txqueuelen 0\n"));
        let c = tc_commands(&plan(Alg::Prio)).join("\n");
        assert!(c.contains("dport 5001 0xffff flowid 10:1"), "{c}");
        assert!(c.contains("dport 5002 0xffff flowid 10:2"), "{c}");
    }

    #[test]
    fn a_stamp_reads_back() {
        let mut b = [0u8; 64];
        stamp(&mut b, 3, 77, 1, 2, 123_456);
        assert_eq!(read_stamp(&b), Some((3, 77, 1, 2, 123_456)));
        assert_eq!(read_stamp(&b[..10]), None);
    }

    #[test]
    fn outside_the_guest_it_refuses() {
        assert!(matches!(execute(&plan(Alg::Drr)), Err(InGuestError::NotInGuest)));
    }
}
