//! The echo family's flow: [`main`] turns argv into an [`EchoCommand`] through [`crate::cli`],
//! runs the server, the burst client, the summary or the bench matrix, prints what it measured,
//! writes the files asked for and returns the exit code.

use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use schedlab_report::machine::{MachineInfo, ThreadInfo};
use schedlab_report::results::burst::{Burst, BurstSchema, BurstTarget, ClientCost, Ratio};
use schedlab_report::Summary;

use crate::cli::{parse_args, BurstArgs, EchoArgs, EchoCommand, HistArgs};
use crate::client::{self, BurstConfig, ClientMode};
use crate::server::{self, Mode, Server, ServerConfig, DEFAULT_BUSY_POLL_US};
use crate::{stats, sys, EchoError};

/// Runs the command; `args[0]` is the command name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    match parse_args(args) {
        Ok(EchoCommand::Echo(a, implied)) => echo(a, implied),
        Ok(EchoCommand::Burst(a)) => burst(a),
        Ok(EchoCommand::Hist(a)) => hist(a),
        Ok(EchoCommand::Bench(a)) => crate::bench::main(a),
        // Help and version exit 0, usage errors exit 2 with clap's message.
        Err(e) => match e.downcast_ref::<clap::Error>() {
            Some(c) => {
                let code = if c.use_stderr() { 2 } else { 0 };
                let _ = c.print();
                Ok(code)
            }
            None => Err(e),
        },
    }
}

/// Resolves `IP:PORT` (or `host:port`) to one socket address.
pub fn parse_addr(s: &str) -> Result<SocketAddr, EchoError> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let bad = |reason: String| EchoError::BadAddress { input: s.to_string(), reason };
    if !s.contains(':') {
        return Err(bad("no port".into()));
    }
    s.to_socket_addrs().map_err(|e| bad(e.to_string()))?.next().ok_or_else(|| bad("resolves to nothing".into()))
}

/// The front-end kit's SIGINT/SIGTERM handler (one per process): the shared flag, and a channel
/// that receives one message per signal (None if the handler could not be installed).
pub(crate) fn signals() -> (&'static AtomicBool, Option<mpsc::Receiver<()>>) {
    let i = schedlab_report::frontend::interrupt();
    (i.flag(), i.installed().then(|| i.subscribe()))
}

#[derive(Serialize)]
struct EchoJson<'a> {
    machine: MachineInfo,
    report: &'a server::ServerReport,
    busy_poll_us_requested: Option<u32>,
    fds_before: usize,
    fds_after: usize,
}

fn echo(a: EchoArgs, implied: Option<Mode>) -> Result<i32> {
    let mode = match (implied, a.mode) {
        (Some(m), None) => m,
        (Some(m), Some(o)) if m == o => m,
        (Some(m), Some(o)) => bail!("echo-{m} was given --mode {o}: use one or the other"),
        (None, Some(m)) => m,
        (None, None) => bail!("which server? give --mode naive|iosubmit|splice|sockmap|io_uring (or run echo-naive etc.)"),
    };
    let addr = parse_addr(&a.addr)?;
    let busy = a.busy_poll.or(a.busypoll.as_ref().map(|_| DEFAULT_BUSY_POLL_US));
    if let Some(d) = a.duration {
        anyhow::ensure!(d.is_finite() && d > 0.0, "--duration must be a positive number of seconds, got {d}");
    }
    let (stop, rx) = signals();
    let rx = rx.context("cannot install the SIGINT/SIGTERM handler")?;
    let fds_before = sys::open_fds().unwrap_or(0);
    let mut cfg = ServerConfig::new(mode, addr);
    cfg.busy_poll_us = busy;
    cfg.cpu = a.cpu;
    cfg.congestion = congestion_choice(&a.congestion);
    cfg.print_connections = true;
    cfg.uring_data = a.uring_data;
    let srv = Server::start(cfg)?;
    println!(
        "echo server ({mode}) listening on {}; busy poll: {}; Ctrl-C or SIGTERM stops it",
        srv.local_addr(),
        match busy {
            Some(us) => format!("SO_BUSY_POLL={us}us on every connection (whether it can act is reported per connection)"),
            None => "off".into(),
        }
    );
    if mode == Mode::IoUring {
        println!("io_uring data path: {}", a.uring_data);
    }
    if mode == Mode::Sockmap {
        println!("sockmap: each connection gets a 1-slot SOCKMAP with the stream parser and verdict attached; the echo stays in the kernel");
    }
    match a.duration {
        Some(d) => {
            let _ = rx.recv_timeout(Duration::from_secs_f64(d));
        }
        None => {
            let _ = rx.recv();
        }
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let report = srv.shutdown();
    let fds_after = sys::open_fds().unwrap_or(0);
    println!("{report}");
    println!(
        "stopped{}: file descriptors open {} before the server, {} after",
        if interrupted { " by signal" } else { " after --duration" },
        fds_before,
        fds_after
    );
    if let Some(p) = &a.json {
        let j =
            EchoJson { machine: MachineInfo::collect(), report: &report, busy_poll_us_requested: busy, fds_before, fds_after };
        schedlab_report::export::write_json(p, &j)?;
    }
    if report.bpf_objects_remaining > 0 {
        bail!("{} BPF objects of this server are still present in the kernel after shutdown", report.bpf_objects_remaining);
    }
    Ok(0)
}

/// `system` means the system default (None); anything else is a congestion control name.
fn congestion_choice(s: &str) -> Option<String> {
    (s != "system").then(|| s.to_string())
}

/// The client's cost as the typed result `schedlab.burst` records it.
fn client_cost(c: &client::ClientCost) -> ClientCost {
    let client::ClientCost {
        cpu_us_per_round,
        user_us_per_round,
        sys_us_per_round,
        verify_us_per_round,
        verify_in_span_us_per_round,
        syscalls_per_round,
        idle_spins_per_round,
    } = *c;
    ClientCost {
        cpu_us_per_round,
        user_us_per_round,
        sys_us_per_round,
        verify_us_per_round,
        verify_in_span_us_per_round,
        syscalls_per_round,
        idle_spins_per_round,
    }
}

fn burst(a: BurstArgs) -> Result<i32> {
    let addr = parse_addr(&a.addr)?;
    let mut addrs = vec![addr];
    for t in &a.targets {
        addrs.push(parse_addr(t)?);
    }
    if let Some(cpu) = a.cpu {
        schedlab_report::machine::pin_current_thread(cpu).with_context(|| format!("cannot pin to CPU {cpu}"))?;
    }
    let mut cfg = BurstConfig::new(addr, a.size, a.rounds);
    cfg.warmup = a.warmup;
    cfg.mode = if a.mode == "rr" { ClientMode::Rr } else { ClientMode::Burst };
    cfg.busy_poll_us = a.busy_poll;
    cfg.settle = a.settle;
    cfg.spin = a.spin;
    cfg.timeout = a.timeout.max(Duration::from_millis(10));
    cfg.congestion = congestion_choice(&a.congestion);
    let (stop, _rx) = signals();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let quiet = a.quiet;
    let multi = addrs.len() > 1;
    let res = if multi {
        client::run_targets(&cfg, &addrs, stop, |i, ns| {
            if !quiet {
                let _ = writeln!(out, "{} {}", i + 1, ns / 1000);
            }
        })
    } else {
        client::run(&cfg, stop, |ns| {
            if !quiet {
                let _ = writeln!(out, "{}", ns / 1000);
            }
        })
        .map(|r| vec![r])
    };
    out.flush().context("writing RTTs to stdout")?;
    drop(out);
    let results = res.with_context(|| {
        let to: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
        format!("burst of {} to {}", a.size, to.join(", "))
    })?;
    let thread = ThreadInfo::current();
    let mut first: Option<Summary> = None;
    let mut disturbance = None;
    let mut targets = Vec::with_capacity(results.len());
    let interrupted = results.iter().any(|r| r.interrupted);
    for (i, (r, addr)) in results.into_iter().zip(&addrs).enumerate() {
        let us: Vec<f64> = r.rtt_ns.iter().map(|&n| n as f64 / 1000.0).collect();
        let s = Summary::of_f64(&us);
        let prefix = if multi { format!("target {}: ", i + 1) } else { String::new() };
        eprintln!(
            "{prefix}burst {} x {} rounds ({} warm-up, {} mode{}) to {addr} from {}, CPU {}: {} bytes echoed and verified",
            a.size,
            us.len(),
            a.warmup,
            a.mode,
            if a.spin { ", spinning" } else { "" },
            r.local_addr,
            thread.cpu,
            r.bytes_verified
        );
        eprintln!("{prefix}rtt_us {}", s.line("us"));
        let c = &r.cost;
        eprintln!(
            "{prefix}client cost per round: {:.1} us CPU (user {:.1}, system {:.1}{}), {:.1} system calls, {:.1} idle spins; checking the echo {:.1} us, of it {:.1} us inside the timed span; congestion control {}",
            c.cpu_us_per_round,
            c.user_us_per_round,
            c.sys_us_per_round,
            if multi { ", split as the whole run's" } else { "" },
            c.syscalls_per_round,
            c.idle_spins_per_round,
            c.verify_us_per_round,
            c.verify_in_span_us_per_round,
            r.congestion
        );
        if let Some(bp) = r.busy_poll_us {
            eprintln!("{prefix}client {}", server::busy_poll_note(bp, r.napi_id));
        }
        if let Some(d) = r.disturbance.as_ref().filter(|_| i == 0) {
            eprintln!("disturbance {}", d.line());
            disturbance = Some(d.clone());
        }
        let ratio_to_first = match &first {
            Some(f) if multi => {
                let ratio = Ratio { p50: s.p50 / f.p50, p99: s.p99 / f.p99 };
                eprintln!("{prefix}over target 1, same run (rounds interleaved): p50 {:.3}, p99 {:.3}", ratio.p50, ratio.p99);
                Some(ratio)
            }
            _ => None,
        };
        if first.is_none() {
            first = Some(s);
        }
        if interrupted && (!multi || i == 0) {
            eprintln!("interrupted: {} of {} rounds done", us.len(), a.rounds);
        }
        targets.push(BurstTarget {
            addr: addr.to_string(),
            sndbuf_bytes: r.sndbuf_bytes,
            rcvbuf_bytes: r.rcvbuf_bytes,
            busy_poll_us: r.busy_poll_us,
            napi_id: r.napi_id,
            bytes_verified: r.bytes_verified,
            congestion: r.congestion.clone(),
            client_cost: client_cost(&r.cost),
            disturbance: r.disturbance.clone(),
            rtt_us: s,
            rtt_samples_us: us,
            ratio_to_first,
        });
    }
    if let Some(p) = &a.json {
        let j = Burst {
            schema: BurstSchema,
            machine: MachineInfo::collect(),
            thread,
            size_bytes: a.size.bytes(),
            rounds: a.rounds,
            warmup: a.warmup,
            mode: if cfg.mode == ClientMode::Rr { "rr" } else { "burst" }.into(),
            spin: cfg.spin,
            interrupted,
            single: if multi { None } else { targets.pop() },
            targets,
        };
        schedlab_report::export::write_json(p, &j)?;
    }
    if let Some(p) = &a.disturbance_csv {
        schedlab_report::disturb::write_csv(p, disturbance.iter().map(|d| ("1", d)))?;
    }
    Ok(if interrupted { 130 } else { 0 })
}

#[derive(Serialize)]
struct HistJson {
    source: String,
    trimmed_slowest_percent: Option<f64>,
    summary: Summary,
}

fn hist(a: HistArgs) -> Result<i32> {
    let (text, source) = match a.file.as_deref() {
        Some(p) if p.as_os_str() != "-" => {
            (std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?, p.display().to_string())
        }
        _ => {
            let mut s = String::new();
            if std::io::stdin().is_terminal() {
                eprintln!("reading numbers from stdin, one per line (Ctrl-D ends)");
            }
            std::io::stdin().read_to_string(&mut s).context("reading stdin")?;
            (s, "stdin".to_string())
        }
    };
    let mut v = stats::parse_numbers(&text, &source)?;
    if v.is_empty() {
        bail!("{source}: no numbers found (expected one number per line)");
    }
    if let Some(p) = a.trim_slowest {
        stats::trim_slowest(&mut v, p);
        if v.is_empty() {
            bail!("{source}: nothing left after trimming {p}%");
        }
    }
    let s = Summary::of_f64(&v);
    if a.csv {
        let name = a.name.clone().unwrap_or_else(|| match a.file.as_deref() {
            Some(p) if p.as_os_str() != "-" => p.file_stem().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default(),
            _ => "stdin".into(),
        });
        println!("{}", stats::csv_row(&name, &s));
    } else {
        if let Some(t) = a.title.as_deref().filter(|t| !t.is_empty()) {
            println!("{t}");
        }
        println!("{}", stats::mm_line(&s));
        println!("{}", stats::percentile_line(&s));
        print!("{}", stats::log2_histogram(&v, a.width.max(1)));
    }
    if let Some(p) = &a.json {
        schedlab_report::export::write_json(p, &HistJson { source, trimmed_slowest_percent: a.trim_slowest, summary: s })?;
    }
    Ok(0)
}
