//! Writers of a `sched` run: the typed report ([`Report`], the result kind `schedlab.sched`), the
//! human text, the configuration line, the JSON and `--disturbance-csv` files, and the policy cost
//! table of `--bench`. `schedlab sched` (its `cli` module) and any code that runs the harness
//! through [`crate::harness::run`] use these.

use std::path::Path;

use schedlab_report::disturb::Disturbance;
use schedlab_report::machine::online_cpus;
use schedlab_report::results::sched::{Sched, SchedClient, SchedSchema};
use schedlab_report::MachineInfo;

use crate::config::Args;
use crate::harness::{message_level, RunResult};
use crate::units::{human, Bps};

/// The JSON report: the typed result kind `schedlab.sched` (see `schedlab_report::results::sched`).
pub type Report = Sched;

/// The configuration line printed before a run.
pub fn config_line(args: &Args) -> String {
    let cfg = &args.cfg;
    format!(
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
    )
}

/// The typed report of a run (`command`: the command line as run, for the record).
pub fn report(args: &Args, r: &RunResult, machine: MachineInfo, command: Vec<String>) -> Report {
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
        command,
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
        counters: r.sched.counters,
        qmax_pkts: cfg.qmax,
        qmin_pkts: cfg.qmin,
        active_clients: cfg.active,
        lock: cfg.distributed.then(|| cfg.lock.to_string()),
        notify: cfg.distributed.then(|| cfg.notify.to_string()),
        distributed_cost: cfg.distributed.then_some(r.dist),
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

/// Every pin of the run that failed (the scheduler's, then each client's): the run went on
/// unpinned there, and every printed summary of it must say so.
pub fn pin_failures(rep: &Report) -> Vec<String> {
    rep.scheduler_pin_error.iter().chain(rep.clients.iter().filter_map(|c| c.pin_error.as_ref())).cloned().collect()
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
            format!("ran on cpu {} (allowed {:?}), {}", t.cpu, t.allowed_cpus, t.policy_text())
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

/// Writes the result as JSON (`schedlab.sched/1`) to `path` (`-`: stdout).
pub fn write_json<T: serde::Serialize>(path: &Path, result: &T) -> anyhow::Result<()> {
    schedlab_report::export::write_json(path, result)
}

/// Writes `--disturbance-csv`: one row per measuring thread of every run, `run` numbered from 1.
pub fn write_disturbance_csv(path: &Path, runs: &[&Report]) -> anyhow::Result<()> {
    let names: Vec<String> = (1..=runs.len()).map(|k| k.to_string()).collect();
    let rows: Vec<(&str, &Disturbance)> =
        runs.iter().zip(&names).flat_map(|(r, n)| r.disturbance.iter().map(move |d| (n.as_str(), d))).collect();
    schedlab_report::disturb::write_csv(path, rows)
}

/// `--bench`'s policy cost table: ns per enqueue+dequeue pair with 1, 16 and 1024 backlogged
/// flows, every policy; `line` gets each printed line as it is measured. Returns the JSON rows.
pub fn bench_policy_pairs(mut line: impl FnMut(&str) -> std::io::Result<()>) -> std::io::Result<Vec<serde_json::Value>> {
    line("policy cost: ns per enqueue+dequeue pair with N backlogged flows (single thread)")?;
    let pairs = 200_000u64;
    let mut rows = Vec::new();
    for alg in crate::bench::algorithms() {
        let mut l = format!("  {:<18}", alg.name());
        for flows in [1usize, 16, 1024] {
            let ns = crate::bench::pair_ns(&alg, flows, pairs);
            l += &format!("  {flows:>5} flows {ns:>7.1} ns");
            rows.push(serde_json::json!({"alg": alg.name(), "label": alg.label(), "flows": flows, "pair_ns": ns}));
        }
        line(&l)?;
    }
    line(
        "throughput: measured against the original sched, same run, alternating, medians: \
         scripts/sched-crosscheck.sh (see the README); single-run figures on a shared machine are noise",
    )?;
    Ok(rows)
}
