//! `schedlab sched`: turns argv into the harness's configuration (through [`crate::config`]),
//! runs the harness, prints one line per client and a TOTAL line, and writes the timestamp files
//! and the JSON report.

use std::ffi::OsString;
use std::io::Write;

use anyhow::{Context, Result};
use schedlab_report::machine::online_cpus;
use schedlab_report::results::sched::{self as sched_result, Sched, SchedClient, SchedSchema};
use schedlab_report::MachineInfo;

use crate::config::{load, parse_argv, write_message_files, write_timestamps, Args};
use crate::harness::{message_level, run, DistCost, RunResult, SchedCounters};
use crate::units::{human, Bps};

const HELP: &str = "\
schedlab sched — the real multi-threaded scheduler harness

Client threads generate traffic from a program; each feeds its own bounded lock-free ring; one
scheduler thread polls the rings, enqueues the packets into the policy and releases them at the
emulated link rate; each client polls for the marks and counts its packets as transmitted.

Usage: schedlab sched [client options] [-- [scheduler options]]
       schedlab sched --bench          (policy costs; throughput: scripts/sched-crosscheck.sh)

Client options:
  -t N        number of client threads (default 1)
  -f PATH     traffic program (default ./sched.txt; without it an embedded default program runs)
  -q SIZE     ring size between each client and the scheduler, packets (default 100)
  -b BW       emulated link rate, bits/s with k/M/G/T suffixes, e.g. 20M, 10T (default unlimited;
              'unlimited' also accepted)
  -i TIME     scheduler polling interval (bare number: us; ns/us/ms/s suffixes; default 5)
  -c TIME     client polling interval for the marks (same units; default 5)
  -p PREFIX   timestamp files are PREFIXqueue-i.txt (default: no prefix, current directory)
  -a CPU      pin the scheduler thread to this CPU
  --client-cpus LIST    pin client i to LIST[i % len] (e.g. 0,2-3); default with -a: the allowed
              CPUs other than the scheduler's, round robin (never the scheduler's CPU while
              another is allowed); without -a clients are not pinned. Each client reports the
              CPU it asked for and the CPU and mask it got.
  -k N        only clients 0..N-1 run their programs (the others exist, idle; default all)
  -B N        at most N packets released per scheduler pass (default 500)
  -D          distributed mode: an idle scheduler thread releases the scheduler lock and sleeps
              on a notifier; clients try-lock the scheduler and run it themselves, and wake the
              scheduler thread when they spend too long scheduling
  --lock KIND     -D's lock: sem (POSIX semaphore, default as the original), mutex, spinlock,
                  futex, tas, ttas, ticket (crates/prims, the locks `schedlab trylock` measures)
  --notify KIND   -D's wake-up: eventfd (default as the original), pipe, futex, sem, condvar,
                  unix (the mechanisms `schedlab notify` measures)
  -d, --duration TIME   stop after TIME at the latest (bare number: seconds)
  --json FILE           write the results as JSON ('-' for stdout)
  --ts-limit N          timestamp records kept per client (default 100000; 0 writes no files)
  --no-timestamps       same as --ts-limit 0
  --seed N              seed of the clients' generators (message lengths, Poisson gaps; default 1)
  --messages FILE       one line per message (burst): client, packets, packet bytes, cli_enq of
                        its first packet, sch_enq of its first, sch_deq and cli_deq of its last
                        (ns), dropped (1 if some packet was refused or it was not delivered)
  --trace-out FILE      the arrivals in 'schedlab sim --trace' format (TIME_ns LENGTH CLIENT)

Scheduler options (after --):
  -flowsets W:L:N,...   N flows of weight W and maximum packet length L bytes, numbered
                        consecutively; client i is flow i
  -flows N              N flows of weight 1 (as -flowsets 1:1500:N)
  -qmax N               scheduler queue limit, packets inside the policy (default 20 x flows,
                        flows = max(configured flows, clients)); beyond it taken packets are
                        dropped, counted, and marked D in the timestamp files
  -qmin N               with -qmax: once full, refuse until the policy is down to N packets
                        (hysteresis; default -qmax - 1, plain tail drop)
  -alg NAME             any policy of the vocabulary (docs/guide/policies.md); default fifo:
                        fifo | rr (= drr: deficit round robin, quantum W x L) | wf2qp | qfq |
                        mrr (the report's message round robin) | rr' (RR', new messages first) |
                        alpha (with -alpha X) or alpha:X | sf (shortest first) |
                        track:LOW:HIGH[:GAIN] (alpha tracking the queue) | track-insert:LOW:HIGH |
                        prio (per-message alpha: the traffic file's alpha:X column);
                        for every policy but fifo and the flow ones, a client's burst is one message
  -alpha X              alpha for -alg alpha (default 10, the report's recommendation)

Traffic file: lines 'DURATION RATE [PKTLEN [BURST]] [poisson] [alpha:X]' (e.g. '1s 100M 64 1'),
'thread N' or 'thread all' to choose the thread the next lines program, '#' comments. BURST may be
a message length distribution 'dist:LOW-HIGH:WEIGHT,LEN:WEIGHT,...' ('dist:report' =
1-5:90,20:10); a last word 'poisson' spaces bursts by exponential gaps at the entry's mean rate,
e.g. '2s 300M 1500 dist:1-5:90,20:10 poisson'; 'alpha:X' gives the entry's messages alpha X
under -alg prio.

Timestamp files (one line per packet through the ring, TAB separated, times from CLOCK_MONOTONIC
in ns): cli_enq (absolute), sch_enq - cli_enq, sch_deq - sch_enq, cli_deq - sch_deq, pkt_len,
flags ('D' = dropped by the scheduler).

Example: schedlab sched -t 4 -f sched.txt -b 20M -q 100 -i 20 -c 5 -- -flowsets 100:1500:1,1:1500:16 -alg rr
";

/// `println!` that returns an error instead of panicking when stdout is closed (`| head`).
macro_rules! outln {
    ($($t:tt)*) => {
        writeln!(std::io::stdout(), $($t)*).context("writing to stdout")?
    };
}

/// Runs the command; `args[0]` is the command name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    let argv: Result<Vec<String>> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string).with_context(|| format!("argument {a:?} is not valid UTF-8")))
        .collect();
    let parsed = match argv.and_then(|a| parse_argv(&a)) {
        Ok(Some(p)) => p,
        Ok(None) => {
            write!(std::io::stdout(), "{HELP}").context("writing to stdout")?;
            return Ok(0);
        }
        Err(e) => {
            eprintln!("schedlab sched: usage error: {e:#}\nUsage: schedlab sched [client options] [-- [scheduler options]] (see --help)");
            return Ok(2);
        }
    };
    let args = load(parsed)?;
    if args.bench {
        return bench_main(&args);
    }
    for w in &args.cfg.traffic.warnings {
        eprintln!("schedlab sched: warning: {w}");
    }
    // SIGINT/SIGTERM: stop the run and print what was measured so far (the front-end kit's one
    // handler per process).
    let interrupt = schedlab_report::frontend::interrupt();
    let cfg = &args.cfg;
    let machine = MachineInfo::collect();
    outln!("{}", machine.line());
    outln!(
        "config: {} client(s){}, traffic {}, queue {} pkts, link {}, -i {} -c {}, batch {}, alg {} (label {}){}, {} flows, -qmax {} -qmin {}{}{}, seed {}",
        cfg.threads,
        if cfg.active < cfg.threads { format!(" ({} active, -k)", cfg.active) } else { String::new() },
        args.traffic_source,
        cfg.queue,
        cfg.bandwidth.map_or("unlimited".into(), |b| b.to_string()),
        cfg.sched_poll,
        cfg.client_poll,
        cfg.batch,
        cfg.alg.name(),
        cfg.alg.label(),
        if message_level(&cfg.alg) { " (a burst is one message)" } else { "" },
        cfg.flows.len(),
        cfg.qmax,
        cfg.qmin,
        if cfg.distributed { format!(", distributed (-D, lock {}, notify {})", cfg.lock, cfg.notify) } else { String::new() },
        cfg.duration_cap.map_or(String::new(), |d| format!(", capped at {d}")),
        cfg.seed,
    );
    // The named workloads the traffic draws from, with their reading and provenance.
    for w in cfg.traffic.workloads() {
        outln!("{w}");
    }
    let r = run(cfg, interrupt.flag())?;
    let report = report(&args, &r, machine);
    // Files first, so that a closed stdout (`| head`) cannot lose them.
    let files = if cfg.ts_limit > 0 { write_timestamps(&args.prefix, &r.clients)? } else { Vec::new() };
    if let Some(path) = &args.json {
        schedlab_report::export::write_json(path, &report)?;
    }
    write_message_files(&args, &r)?;
    if r.interrupted {
        outln!("interrupted (Ctrl-C): partial results after {:.3} s", r.elapsed.secs());
    }
    write!(std::io::stdout(), "{}", text(&report)).context("writing to stdout")?;
    if cfg.ts_limit > 0 {
        let truncated: u64 = r.clients.iter().map(|c| c.timestamps_truncated).sum();
        outln!(
            "timestamps: {} ({} records{})",
            files.join(", "),
            r.clients.iter().map(|c| c.timestamps.len()).sum::<usize>(),
            if truncated > 0 { format!("; {truncated} later packets not logged, raise --ts-limit") } else { String::new() }
        );
    }
    Ok(if r.interrupted { schedlab_report::frontend::exit::INTERRUPTED } else { 0 })
}

/// The JSON report: the typed result kind `schedlab.sched` (see `schedlab_report::results::sched`).
pub type Report = Sched;

fn counters(k: SchedCounters) -> sched_result::SchedCounters {
    let SchedCounters { idle_passes, early_passes, fetches, publishes, qlimit_drops, qlimit_hits, qlimit_deferred } = k;
    sched_result::SchedCounters { idle_passes, early_passes, fetches, publishes, qlimit_drops, qlimit_hits, qlimit_deferred }
}

fn dist_cost(d: DistCost) -> sched_result::DistCost {
    let DistCost {
        trylock_busy,
        trylock_free,
        handovers,
        sleeps,
        wakeups,
        notifies,
        trylock_sampled,
        trylock_avg_ns,
        notify_avg_ns,
        trylock_total_s,
        notify_total_s,
    } = d;
    sched_result::DistCost {
        trylock_busy,
        trylock_free,
        handovers,
        sleeps,
        wakeups,
        notifies,
        trylock_sampled,
        trylock_avg_ns,
        notify_avg_ns,
        trylock_total_s,
        notify_total_s,
    }
}

/// Builds the JSON report of a run.
fn report(args: &Args, r: &RunResult, machine: MachineInfo) -> Report {
    let secs = r.elapsed.secs().max(1e-9);
    let mut all = schedlab_report::Hist::new();
    let clients: Vec<SchedClient> = r
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            all.merge(&c.delay);
            SchedClient {
                client: i,
                generated_pkts: c.generated,
                transmitted_pkts: c.transmitted,
                ring_full_drops: c.ring_drops,
                sched_drops: c.sched_drops,
                queued_at_stop_pkts: c.queued_at_stop,
                bits: c.bits,
                rate_bps: c.bits as f64 / secs,
                rate_pps: c.transmitted as f64 / secs,
                delay_us: c.delay.summary(1000.0),
                sched_passes_run: c.sched_passes,
                mark_polls: c.mark_polls,
                active: c.active,
                requested_cpu: c.requested_cpu,
                pin_error: c.pin_error.clone(),
                thread: c.thread.clone(),
            }
        })
        .collect();
    let total_bits: u64 = clients.iter().map(|c| c.bits).sum();
    let total_pkts: u64 = clients.iter().map(|c| c.transmitted_pkts).sum();
    let cfg = &args.cfg;
    let achieved = total_bits as f64 / secs;
    Sched {
        schema: SchedSchema,
        machine,
        command: std::env::args().collect(),
        traffic: args.traffic_source.clone(),
        workloads: args.cfg.traffic.workloads(),
        seed: cfg.seed,
        threads: cfg.threads,
        queue_pkts: cfg.queue,
        alg: cfg.alg.name(),
        label: cfg.alg.label(),
        flows: cfg.flows.len(),
        link_nominal_bps: cfg.bandwidth.map(|b| b.0),
        link_achieved_bps: achieved,
        link_utilisation: cfg.bandwidth.map(|b| achieved / b.0 as f64),
        sched_poll_ns: cfg.sched_poll.0,
        client_poll_ns: cfg.client_poll.0,
        batch: cfg.batch,
        distributed: cfg.distributed,
        elapsed_s: r.elapsed.secs(),
        clock: r.clock.to_string(),
        interrupted: r.interrupted,
        scheduler_thread: r.scheduler_thread.clone(),
        scheduler_requested_cpu: cfg.sched_cpu,
        scheduler_pin_error: r.sched_pin_error.clone(),
        scheduler_passes: r.sched.passes.saturating_sub(r.client_passes),
        client_sched_passes: r.client_passes,
        counters: counters(r.sched.counters),
        qmax_pkts: cfg.qmax,
        qmin_pkts: cfg.qmin,
        active_clients: cfg.active,
        lock: cfg.distributed.then(|| cfg.lock.to_string()),
        notify: cfg.distributed.then(|| cfg.notify.to_string()),
        distributed_cost: cfg.distributed.then_some(dist_cost(r.dist)),
        cpus_available: online_cpus(),
        total_pkts,
        total_bits,
        total_rate_pps: total_pkts as f64 / secs,
        total_rate_bps: achieved,
        total_drops: clients.iter().map(|c| c.ring_full_drops + c.sched_drops).sum(),
        total_delay_us: all.summary(1000.0),
        disturbance: r.disturbance(),
        clients,
    }
}

/// The human output: one line per client, the TOTAL line, the link and the placement.
pub fn text(rep: &Report) -> String {
    let mut s = String::new();
    for c in &rep.clients {
        let d = &c.delay_us;
        let place = match (&c.pin_error, c.requested_cpu) {
            (Some(e), _) => format!("cpu {}, NOT pinned: {e}", c.thread.cpu),
            (None, Some(r)) => format!("cpu {}, pinned to {r}, allowed {:?}", c.thread.cpu, c.thread.allowed_cpus),
            (None, None) => format!("cpu {}, not pinned", c.thread.cpu),
        };
        let place = if c.active { place } else { format!("{place}; inactive (-k)") };
        s += &format!(
                "client {:>3}: {:>12} bits {:>14} {:>10} pkts {:>13} {:>9} drops  delay us avg {:.1} p50 {:.1} p99 {:.1} max {:.1}  ({})\n",
                c.client,
                c.bits,
                human(c.rate_bps, "b/s"),
                c.transmitted_pkts,
                human(c.rate_pps, "pps"),
                c.ring_full_drops + c.sched_drops,
                d.mean,
                d.p50,
                d.p99,
                d.max,
                place,
            );
    }
    s += &format!(
        "TOTAL: {} bits {} {} pkts {:.3} Mpps {} drops  delay us p50 {:.1} p99 {:.1} max {:.1}  in {:.3} s\n",
        rep.total_bits,
        human(rep.total_rate_bps, "b/s"),
        rep.total_pkts,
        rep.total_rate_pps / 1e6,
        rep.total_drops,
        rep.total_delay_us.p50,
        rep.total_delay_us.p99,
        rep.total_delay_us.max,
        rep.elapsed_s,
    );
    s += &match rep.link_nominal_bps {
        Some(n) => format!(
            "link: nominal {}, achieved {} ({:.1}% of nominal)\n",
            Bps(n),
            human(rep.link_achieved_bps, "b/s"),
            100.0 * rep.link_utilisation.unwrap_or(0.0)
        ),
        None => format!("link: unlimited (no -b), achieved {}\n", human(rep.link_achieved_bps, "b/s")),
    };
    let placement = match (&rep.scheduler_thread, &rep.scheduler_pin_error) {
        (_, Some(e)) => format!("NOT pinned ({e})"),
        (Some(t), None) => {
            format!("ran on cpu {} (allowed {:?}), {} prio {}", t.cpu, t.allowed_cpus, t.policy.name(), t.priority)
        }
        (None, None) => "unknown".into(),
    };
    let k = &rep.counters;
    s += &format!(
            "scheduler: {placement}, {} passes by the scheduler thread, {} by clients ({} idle, {} with the link busy), {} fetches, {} publishes\n",
            rep.scheduler_passes, rep.client_sched_passes, k.idle_passes, k.early_passes, k.fetches, k.publishes
        );
    let secs = rep.elapsed_s.max(1e-9);
    let polls: u64 = rep.clients.iter().map(|c| c.mark_polls).sum();
    s += &format!(
            "STATS: client mark polls {:.3e} Hz, sch_pub {:.3e} Hz, sch_fetch {:.3e} Hz; queue limit -qmax {} -qmin {}: reached {} times, {} packets dropped, {} visits deferred (link idle)\n",
            polls as f64 / secs,
            k.publishes as f64 / secs,
            k.fetches as f64 / secs,
            rep.qmax_pkts,
            rep.qmin_pkts,
            k.qlimit_hits,
            k.qlimit_drops,
            k.qlimit_deferred
        );
    s += &schedlab_report::disturb::lines(&rep.disturbance);
    if let Some(d) = &rep.distributed_cost {
        s += &format!(
                "distributed (-D, lock {}, notify {}): {} client passes; try-locks {} busy / {} free, {} hand-overs, {} sleeps, {} wake-ups, {} notifies\n",
                rep.lock.as_deref().unwrap_or("?"),
                rep.notify.as_deref().unwrap_or("?"),
                rep.client_sched_passes,
                d.trylock_busy,
                d.trylock_free,
                d.handovers,
                d.sleeps,
                d.wakeups,
                d.notifies
            );
        s += &format!(
                "  cost: try-lock {:.1} ns avg ({} of 1 in {} timed) = {:.3} ms in try-locks; notify {:.0} ns avg = {:.3} ms in notify calls\n",
                d.trylock_avg_ns,
                d.trylock_sampled,
                crate::harness::TRYLOCK_SAMPLE,
                d.trylock_total_s * 1e3,
                d.notify_avg_ns,
                d.notify_total_s * 1e3
            );
    }
    s
}

fn bench_main(args: &Args) -> Result<i32> {
    let machine = MachineInfo::collect();
    outln!("{}", machine.line());
    outln!("policy cost: ns per enqueue+dequeue pair with N backlogged flows (single thread)");
    let pairs = 200_000u64;
    let mut rows = Vec::new();
    for alg in crate::bench::algorithms() {
        let mut line = format!("  {:<18}", alg.name());
        for flows in [1usize, 16, 1024] {
            let ns = crate::bench::pair_ns(&alg, flows, pairs);
            line += &format!("  {flows:>5} flows {ns:>7.1} ns");
            rows.push(serde_json::json!({"alg": alg.name(), "label": alg.label(), "flows": flows, "pair_ns": ns}));
        }
        outln!("{line}");
    }
    outln!(
        "throughput: measured against the original sched, same run, alternating, medians: \
         scripts/sched-crosscheck.sh (see the README); single-run figures on a shared machine are noise"
    );
    if let Some(path) = &args.json {
        let v = serde_json::json!({ "machine": machine, "policy_pairs": rows });
        schedlab_report::export::write_json(path, &v)?;
    }
    Ok(0)
}
