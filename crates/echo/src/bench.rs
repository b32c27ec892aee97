//! `echo-bench`: the seed's whole experiment in one command — every mode × every size × busy
//! poll off/on, on loopback or across two network namespaces, then the seed's files
//! (`data.csv`, `data-busypoll.csv`: `name, med, dev, min, max` after dropping the slowest 1%)
//! and its candlestick chart per size, as SVG and PNG. When `sockperf` is installed, its TCP
//! ping-pong (full round trip) runs in the same session as a reference point.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;

use schedlab_report::machine::{MachineInfo, ThreadInfo};
use schedlab_report::plot::figures::{echo_chart, EchoCell};
use schedlab_report::results::echo_bench::{EchoBench, EchoBenchSchema};
use schedlab_report::Summary;

use crate::client::{self, BurstConfig};
use crate::netns::{self, NetnsPair, Side};
use crate::server::{Mode, Server, ServerConfig, DEFAULT_BUSY_POLL_US};
use crate::{stats, Size};

/// sockperf refuses TCP messages outside this range (it needs room for its header).
const SOCKPERF_MSG: std::ops::RangeInclusive<u64> = 14..=65_000;

#[derive(Parser, Debug)]
#[command(
    name = "schedlab echo-bench",
    bin_name = "schedlab echo-bench",
    about = "The whole echo latency matrix: modes x sizes x busy poll off/on, CSV files and candlestick charts",
    after_help = "Writes into --out: summary.csv, results.json and per size SIZE/data.csv, SIZE/data-busypoll.csv (the seed's\n`name, med, dev, min, max`, slowest 1% dropped), SIZE/echo-SIZE.svg and .png. Progress goes to stderr."
)]
pub struct BenchArgs {
    /// Modes, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "naive,iosubmit,splice,sockmap,io_uring")]
    modes: Vec<Mode>,
    /// Burst sizes, comma separated (a bare number is KiB; 1B is one byte).
    #[arg(long, value_delimiter = ',', default_value = "1B,4K,64K,1M")]
    sizes: Vec<Size>,
    /// Measured rounds per cell.
    #[arg(long, default_value = "1000", value_parser = client::parse_rounds)]
    rounds: u64,
    /// Unrecorded rounds per cell.
    #[arg(long, default_value_t = 100)]
    warmup: u64,
    /// SO_BUSY_POLL for the busy-poll series, microseconds.
    #[arg(long, default_value_t = DEFAULT_BUSY_POLL_US)]
    busy_poll_us: u32,
    /// Skip the busy-poll series.
    #[arg(long)]
    no_busy_poll: bool,
    /// Run across two network namespaces joined by a veth pair (root only; removed afterwards).
    #[arg(long)]
    netns: bool,
    /// Output directory.
    #[arg(long, default_value = "echo-bench")]
    out: PathBuf,
    /// Drop the slowest PCT before computing the CSV rows (the seed dropped 1%).
    #[arg(long, default_value = "1%", value_parser = stats::parse_percent)]
    trim_slowest: f64,
    /// Pin the server threads to this CPU.
    #[arg(long)]
    server_cpu: Option<usize>,
    /// Pin the client to this CPU.
    #[arg(long)]
    client_cpu: Option<usize>,
    /// Reference: `sockperf` (TCP ping-pong, full RTT) when installed, or `none`.
    #[arg(long, default_value = "sockperf", value_parser = ["sockperf", "none"])]
    peer: String,
    /// Seconds of sockperf ping-pong per size.
    #[arg(long, default_value_t = 2)]
    peer_seconds: u32,
    /// Longest a single round may take, seconds.
    #[arg(long, default_value_t = 10)]
    timeout: u64,
}

/// One cell of the matrix: the typed result row (`schedlab_report::results::echo_bench`).
pub use schedlab_report::results::echo_bench::EchoRow as Row;

/// Runs the benchmark.
pub fn main(a: BenchArgs) -> Result<i32> {
    let stop = schedlab_report::frontend::interrupt().flag();
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create output directory {}", a.out.display()))?;
    let pair = if a.netns { Some(NetnsPair::create()?) } else { None };
    let result = run(&a, pair.as_ref(), stop);
    if let Some(mut p) = pair {
        p.remove().map_err(|e| anyhow::anyhow!("cannot remove the benchmark namespaces: {e}"))?;
        eprintln!("namespaces {} and {} removed", p.name(Side::Server), p.name(Side::Client));
    }
    result
}

fn run(a: &BenchArgs, pair: Option<&NetnsPair>, stop: &AtomicBool) -> Result<i32> {
    // A CPU outside this process's mask cannot be had: say so before measuring anything.
    let allowed = schedlab_report::machine::online_cpus();
    for (flag, cpu) in [("--server-cpu", a.server_cpu), ("--client-cpu", a.client_cpu)] {
        if let Some(c) = cpu.filter(|c| !allowed.contains(c)) {
            bail!("{flag} {c}: cannot pin to CPU {c}, this process may run on CPUs {allowed:?} only");
        }
    }
    let machine = MachineInfo::collect();
    eprintln!("machine: {}", machine.line());
    let (listen_ip, connect_ip): (IpAddr, IpAddr) = match pair {
        Some(_) => (netns::SERVER_IP.into(), netns::SERVER_IP.into()),
        None => (Ipv4Addr::LOCALHOST.into(), Ipv4Addr::LOCALHOST.into()),
    };
    let path = if pair.is_some() { "veth between two network namespaces" } else { "loopback" };
    let mut skipped = Vec::new();
    let modes: Vec<Mode> = a
        .modes
        .iter()
        .copied()
        .filter(|m| match m.probe() {
            Ok(()) => true,
            Err(e) => {
                eprintln!("SKIP {m}: {e}");
                skipped.push(format!("{m}: {e}"));
                false
            }
        })
        .collect();
    let busy: Vec<Option<u32>> = if a.no_busy_poll { vec![None] } else { vec![None, Some(a.busy_poll_us)] };
    let total = busy.len() * modes.len() * a.sizes.len();
    let mut rows = Vec::new();
    let mut done = 0;
    let mut client_thread = ThreadInfo::current();
    'outer: for &bp in &busy {
        for &mode in &modes {
            let mut cfg = ServerConfig::new(mode, SocketAddr::new(listen_ip, 0));
            cfg.busy_poll_us = bp;
            cfg.cpu = a.server_cpu;
            let srv =
                in_ns(pair, Side::Server, move || Server::start(cfg))?.with_context(|| format!("starting the {mode} server"))?;
            let addr = SocketAddr::new(connect_ip, srv.local_addr().port());
            for &size in &a.sizes {
                if stop.load(Ordering::SeqCst) {
                    break 'outer;
                }
                done += 1;
                let mut c = BurstConfig::new(addr, size, a.rounds);
                c.warmup = a.warmup;
                c.busy_poll_us = bp;
                c.timeout = Duration::from_secs(a.timeout.max(1));
                let ccpu = a.client_cpu;
                let t = Instant::now();
                // The client runs on a thread of its own even without namespaces: its pin must not
                // stay on this thread, whose mask the next servers' threads would inherit.
                let (res, th) = in_ns_thread(pair, Side::Client, move || {
                    if let Some(cpu) = ccpu {
                        schedlab_report::machine::pin_current_thread(cpu)
                            .with_context(|| format!("--client-cpu {cpu}: cannot pin the client to CPU {cpu}"))?;
                    }
                    let stop = schedlab_report::frontend::interrupt().flag();
                    anyhow::Ok((client::run(&c, stop, |_| {}), ThreadInfo::current()))
                })??;
                client_thread = th.clone();
                let r =
                    res.with_context(|| format!("{mode} {size} busy poll {}", bp.map_or("off".into(), |u| format!("{u}us"))))?;
                let mut us: Vec<f64> = r.rtt_ns.iter().map(|&n| n as f64 / 1000.0).collect();
                let all = Summary::of_f64(&us);
                stats::trim_slowest(&mut us, a.trim_slowest);
                let trimmed = Summary::of_f64(&us);
                eprintln!(
                    "[{done}/{total}] {mode:>8} {size:>4} busy poll {:>4}: p50 {:.1} us, p99 {:.1} us ({} rounds, {:.1} s)",
                    bp.map_or("off".into(), |u| format!("{u}us")),
                    all.p50,
                    all.p99,
                    all.count,
                    t.elapsed().as_secs_f64()
                );
                rows.push(Row {
                    mode: mode.name().into(),
                    size_bytes: size.bytes(),
                    busy_poll_us: bp,
                    rtt_us: all,
                    trimmed_rtt_us: trimmed,
                    trimmed_percent: a.trim_slowest,
                    client_cpu: th.cpu,
                    server_cpu: None,
                    napi_id: None,
                });
            }
            let rep = srv.shutdown();
            // Match each row of this server to its connection (one connection per size, in order).
            let first = rows.len() - rep.connections.len().min(rows.len());
            for (row, conn) in rows[first..].iter_mut().zip(rep.connections.iter()) {
                row.server_cpu = Some(conn.cpu);
                row.napi_id = conn.busy_poll_us.and(conn.napi_id);
            }
            if rep.bpf_objects_remaining > 0 {
                bail!("{mode}: {} BPF objects still present after shutdown", rep.bpf_objects_remaining);
            }
        }
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let peer = if a.peer == "sockperf" && !interrupted { sockperf_rows(a, pair, connect_ip) } else { Vec::new() };
    write_outputs(a, &rows, &peer)?;
    let results = EchoBench {
        schema: EchoBenchSchema,
        machine,
        client_thread,
        path: path.to_string(),
        rounds: a.rounds,
        warmup: a.warmup,
        rows,
        skipped,
        peer,
        interrupted,
    };
    schedlab_report::export::write_json(&a.out.join("results.json"), &results)?;
    let rows = &results.rows;
    print!("{}", table(rows, &results.peer, &a.sizes, path));
    if rows.iter().any(|r| r.busy_poll_us.is_some() && r.napi_id == Some(0)) {
        println!("busy poll: SO_BUSY_POLL was set, but SO_INCOMING_NAPI_ID is 0 on this path ({path}): it cannot take effect; differences between the series are noise");
    }
    println!("files in {}", a.out.display());
    if interrupted {
        eprintln!("interrupted: partial results written");
        return Ok(130);
    }
    Ok(0)
}

/// Runs `f` on a thread of its own, inside the namespace of `side` when there are namespaces.
fn in_ns_thread<T: Send + 'static>(pair: Option<&NetnsPair>, side: Side, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    match pair {
        Some(_) => in_ns(pair, side, f),
        None => std::thread::spawn(f).join().map_err(|_| anyhow::anyhow!("benchmark thread panicked")),
    }
}

/// Runs `f` on a thread inside the namespace of `side` (or directly without namespaces).
fn in_ns<T: Send + 'static>(pair: Option<&NetnsPair>, side: Side, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let Some(p) = pair else { return Ok(f()) };
    let ns = netns::ns_path(p.name(side));
    std::thread::spawn(move || -> Result<T> {
        let file = std::fs::File::open(&ns).with_context(|| format!("cannot open {}", ns.display()))?;
        use std::os::fd::AsRawFd;
        // SAFETY: setns on an fd we hold; it changes only this thread's network namespace.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        if r != 0 {
            bail!("cannot enter {}: {}", ns.display(), std::io::Error::last_os_error());
        }
        Ok(f())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("benchmark thread panicked"))?
}

fn size_dir(out: &Path, s: Size) -> PathBuf {
    out.join(s.to_string())
}

fn write_outputs(a: &BenchArgs, rows: &[Row], peer: &[Row]) -> Result<()> {
    let mut summary = schedlab_report::export::Csv::create(
        &a.out.join("summary.csv"),
        &[
            "mode",
            "size_bytes",
            "busy_poll_us",
            "count",
            "med_us",
            "dev_us",
            "min_us",
            "max_us",
            "p90_us",
            "p99_us",
            "p999_us",
            "trimmed_percent",
            "client_cpu",
            "server_cpu",
            "napi_id",
        ],
    )?;
    for r in rows.iter().chain(peer) {
        let t = &r.trimmed_rtt_us;
        let o = |v: Option<String>| v.unwrap_or_default();
        summary.row(&[
            r.mode.clone(),
            r.size_bytes.to_string(),
            o(r.busy_poll_us.map(|v| v.to_string())),
            t.count.to_string(),
            format!("{:.2}", t.p50),
            format!("{:.2}", t.stddev),
            format!("{:.2}", t.min),
            format!("{:.2}", t.max),
            format!("{:.2}", t.p90),
            format!("{:.2}", t.p99),
            format!("{:.2}", t.p999),
            format!("{}", r.trimmed_percent),
            r.client_cpu.to_string(),
            o(r.server_cpu.map(|v| v.to_string())),
            o(r.napi_id.map(|v| v.to_string())),
        ])?;
    }
    summary.finish()?;
    for &size in &a.sizes {
        let dir = size_dir(&a.out, size);
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let in_size = |busy: bool| rows.iter().filter(move |r| r.size_bytes == size.bytes() && r.busy_poll_us.is_some() == busy);
        for (busy, file) in [(false, "data.csv"), (true, "data-busypoll.csv")] {
            let body: String = in_size(busy).map(|r| stats::csv_row(&r.mode, &r.trimmed_rtt_us) + "\n").collect();
            std::fs::write(dir.join(file), body).with_context(|| format!("cannot write {}", dir.join(file).display()))?;
        }
        // The chart comes from schedlab_report::plot::figures::echo_chart, as on the report page.
        let cells: Vec<EchoCell> = a
            .modes
            .iter()
            .flat_map(|m| [(m, false), (m, true)])
            .filter(|(_, busy)| !*busy || !a.no_busy_poll)
            .filter_map(|(m, busy)| {
                in_size(busy).find(|r| r.mode == m.name()).map(|r| EchoCell {
                    mode: r.mode.clone(),
                    busy_poll: busy,
                    rtt_us: r.trimmed_rtt_us,
                })
            })
            .collect();
        let chart = echo_chart(&size.to_string(), &format!("with BUSYPOLL ({} us)", a.busy_poll_us), &cells);
        let svg_path = dir.join(format!("echo-{size}.svg"));
        chart.write(&svg_path)?;
        let png_path = svg_path.with_extension("png");
        match crate::png::svg_to_png(&chart.svg(), &png_path) {
            Ok(r) if r.font_faces == 0 => {
                eprintln!("warning: no system fonts found (install fonts-dejavu-core): {} has no text", png_path.display())
            }
            Ok(_) => {}
            Err(e) => eprintln!("warning: PNG not written: {e}"),
        }
    }
    Ok(())
}

fn table(rows: &[Row], peer: &[Row], sizes: &[Size], path: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "median round trip in us ({path}; slowest 1% dropped), busy poll off / on:");
    let _ = write!(s, "{:<16}", "mode");
    for z in sizes {
        let _ = write!(s, "{:>18}", z.to_string());
    }
    s.push('\n');
    let mut modes: Vec<&str> = Vec::new();
    for r in rows.iter().chain(peer) {
        if !modes.contains(&r.mode.as_str()) {
            modes.push(&r.mode);
        }
    }
    for m in modes {
        let _ = write!(s, "{m:<16}");
        for z in sizes {
            let get = |busy: bool| {
                rows.iter()
                    .chain(peer)
                    .find(|r| r.mode == m && r.size_bytes == z.bytes() && r.busy_poll_us.is_some() == busy)
                    .map(|r| format!("{:.1}", r.trimmed_rtt_us.p50))
                    .unwrap_or_else(|| "-".into())
            };
            let _ = write!(s, "{:>18}", format!("{} / {}", get(false), get(true)));
        }
        s.push('\n');
    }
    s
}

/// Runs `sockperf server` and `sockperf ping-pong --full-rtt` per size (clamped to 14..=65000
/// bytes, sockperf's limits; such rows are named `sockperf(NB)`).
fn sockperf_rows(a: &BenchArgs, pair: Option<&NetnsPair>, ip: IpAddr) -> Vec<Row> {
    if Command::new("sockperf").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        eprintln!("SKIP sockperf reference: sockperf is not installed (apt-get install sockperf)");
        return Vec::new();
    }
    let port = match std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).and_then(|l| l.local_addr()) {
        Ok(a) if pair.is_none() => a.port(),
        _ => 11_211,
    };
    // `ip netns exec NS` and `taskset -c CPU` in front of sockperf, as the run asks.
    let wrap = |side: Side, args: &[String]| -> Command {
        let mut argv: Vec<String> = Vec::new();
        if let Some(p) = pair {
            argv.extend(["ip", "netns", "exec", p.name(side)].map(String::from));
        }
        let cpu = match side {
            Side::Server => a.server_cpu,
            Side::Client => a.client_cpu,
        };
        if let Some(c) = cpu {
            argv.extend(["taskset".to_string(), "-c".to_string(), c.to_string()]);
        }
        argv.push("sockperf".into());
        argv.extend(args.iter().cloned());
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]);
        c
    };
    let common = vec!["--tcp".to_string(), "-i".into(), ip.to_string(), "-p".into(), port.to_string()];
    let mut srv_args = vec!["server".to_string()];
    srv_args.extend(common.clone());
    let server: Child = match wrap(Side::Server, &srv_args).stdout(Stdio::null()).stderr(Stdio::null()).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("SKIP sockperf reference: cannot start sockperf server: {e}");
            return Vec::new();
        }
    };
    let mut server = KillOnDrop(server);
    std::thread::sleep(Duration::from_millis(500));
    let mut rows = Vec::new();
    for &size in &a.sizes {
        let msg = size.bytes().clamp(*SOCKPERF_MSG.start(), *SOCKPERF_MSG.end());
        let mut args = vec!["ping-pong".to_string()];
        args.extend(common.clone());
        args.extend(["-m".into(), msg.to_string(), "-t".into(), a.peer_seconds.max(1).to_string(), "--full-rtt".into()]);
        let out = match wrap(Side::Client, &args).output() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("sockperf ping-pong failed to start: {e}");
                break;
            }
        };
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        match parse_sockperf(&text) {
            Some(s) => {
                eprintln!("sockperf ping-pong {} B: p50 {:.1} us (full round trip)", msg, s.p50);
                rows.push(Row {
                    mode: if msg == size.bytes() { "sockperf".into() } else { format!("sockperf({msg}B)") },
                    size_bytes: size.bytes(),
                    busy_poll_us: None,
                    rtt_us: s,
                    trimmed_rtt_us: s,
                    trimmed_percent: 0.0,
                    client_cpu: a.client_cpu.map_or(-1, |c| c as i32),
                    server_cpu: a.server_cpu.map(|c| c as i32),
                    napi_id: None,
                });
            }
            None => eprintln!(
                "sockperf ping-pong {msg} B: could not read its output:\n{}",
                text.lines().rev().take(5).collect::<Vec<_>>().join("\n")
            ),
        }
    }
    server.kill();
    rows
}

struct KillOnDrop(Child);
impl KillOnDrop {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads sockperf's summary: percentiles 50/90/99/99.9/99.99, MIN, MAX, avg-rtt and std-dev.
pub fn parse_sockperf(text: &str) -> Option<Summary> {
    let num_after = |l: &str, key: &str| {
        l.split(key)
            .nth(1)
            .and_then(|r| r.trim().split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == '\x1b').next())
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let mut s = Summary::default();
    let mut seen = 0;
    for l in text.lines() {
        if let Some(v) = num_after(l, "percentile 50.000 =") {
            s.p50 = v;
            seen += 1;
        } else if let Some(v) = num_after(l, "percentile 90.000 =") {
            s.p90 = v;
        } else if let Some(v) = num_after(l, "percentile 99.000 =") {
            s.p99 = v;
        } else if let Some(v) = num_after(l, "percentile 99.900 =") {
            s.p999 = v;
        } else if let Some(v) = num_after(l, "percentile 99.990 =") {
            s.p9999 = v;
        } else if let Some(v) = num_after(l, "<MIN> observation =") {
            s.min = v;
        } else if let Some(v) = num_after(l, "<MAX> observation =") {
            s.max = v;
        } else if let Some(v) = num_after(l, "avg-rtt=") {
            s.mean = v;
            s.stddev = num_after(l, "std-dev=").unwrap_or(0.0);
        } else if let Some(v) =
            l.split("Total ").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse::<u64>().ok())
        {
            s.count = v;
        }
    }
    (seen > 0).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sockperf_output() {
        let text = "sockperf: \x1b[2;35m====> avg-rtt=46.863 (std-dev=307.882)\x1b[0m\n\
                    sockperf: \x1b[2;35mTotal 11681 observations\x1b[0m; each percentile contains 116.81 observations\n\
                    sockperf: ---> <MAX> observation = 6664.639\n\
                    sockperf: ---> percentile 99.000 =  262.379\n\
                    sockperf: ---> percentile 50.000 =   17.566\n\
                    sockperf: ---> <MIN> observation =   15.132\n";
        let s = parse_sockperf(text).unwrap();
        assert_eq!(
            (s.p50, s.p99, s.min, s.max, s.mean, s.stddev, s.count),
            (17.566, 262.379, 15.132, 6664.639, 46.863, 307.882, 11681)
        );
        assert!(parse_sockperf("nothing here").is_none());
    }
}
