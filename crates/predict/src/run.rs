//! One comparison: per policy (and per `--repeat` run), the workload on the real harness, the
//! verdict on whether it kept up, the recorded arrivals through the simulator, the comparison and
//! the exact-order check. [`run`] returns the typed result ([`Predict`]); [`crate::output`] writes it.

use std::sync::atomic::AtomicBool;

use schedlab_policy::{Alpha, BuildOptions, PolicySpec};
use schedlab_report::results::predict::PredictSchema;
use schedlab_report::MachineInfo;
use schedlab_sched::harness::{self, message_level, RunResult, WithAlpha};
use schedlab_sched::messages::{merged, MsgRecord};
use schedlab_sim::replay::ReplayError;

use crate::compare::{compare, predict, service_ns, trace_of};
use crate::config::Config;
use crate::order::{check, OrderCheck};
use crate::repeat::{outcome, summarise, Summary};

use schedlab_report::results::predict::Lat;
/// The typed result and its parts (`schedlab_report::results::predict`).
pub use schedlab_report::results::predict::{AlgRun, Predict, Verdict};

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The simulator's service time is packet bits / link rate: without a rate there is none.
    #[error("predict needs a link rate (-b)")]
    NoLinkRate,
    /// Nothing to compare.
    #[error(
        "the run delivered no messages ({generated} generated): give the clients a program with a positive rate (-f) and a long enough duration"
    )]
    NoMessages { generated: usize },
    /// The simulator refused the recorded arrivals.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The harness could not run (threads, placement, the policy).
    #[error(transparent)]
    Harness(Box<dyn std::error::Error + Send + Sync>),
    /// A pin asked for (`-a`, `--client-cpus`) failed: the harness ran unpinned there, and the
    /// result records no placement, so no comparison is made of it.
    #[error("{}: the harness would be compared unpinned (use CPUs this process may run on, or drop -a/--client-cpus)", .0.join("; "))]
    NotPinned(Vec<String>),
    /// The caller's progress output failed (a closed stdout).
    #[error("writing to stdout")]
    Progress(#[source] std::io::Error),
}

/// How a comparison ended.
#[derive(Debug)]
// Made once per command and moved out at once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Finished {
    /// Every run was made. `last` is the last harness run (for `--messages`, `--trace-out`).
    Done { result: Predict, last: Option<RunResult> },
    /// `interrupt` was raised: nothing is kept.
    Interrupted,
}

/// Runs the comparison with no progress output and no interrupt, on this machine.
pub fn run(cfg: &Config) -> Result<Finished, Error> {
    run_with(cfg, MachineInfo::collect(), &AtomicBool::new(false), |_| Ok(()))
}

/// Runs the comparison; `on_run` sees every run as it finishes (the command prints it). Under
/// `--repeat` the policies take turns, so a disturbance hits them alike. A raised `interrupt`
/// stops the harness and ends with [`Finished::Interrupted`].
pub fn run_with(
    cfg: &Config,
    machine: MachineInfo,
    interrupt: &AtomicBool,
    mut on_run: impl FnMut(&AlgRun) -> std::io::Result<()>,
) -> Result<Finished, Error> {
    let mut runs = Vec::new();
    let mut last: Option<RunResult> = None;
    for k in 1..=cfg.repeat {
        for alg in &cfg.algs {
            let hc = cfg.harness(alg);
            let r = harness::run(&hc, interrupt).map_err(|e| Error::Harness(e.into()))?;
            if r.interrupted {
                return Ok(Finished::Interrupted);
            }
            let failed: Vec<String> =
                r.sched_pin_error.iter().chain(r.clients.iter().filter_map(|c| c.pin_error.as_ref())).cloned().collect();
            if !failed.is_empty() {
                return Err(Error::NotPinned(failed));
            }
            let mut run = analyse(&hc, &r)?;
            run.repeat_run = k;
            on_run(&run).map_err(Error::Progress)?;
            runs.push(run);
            last = Some(r);
        }
    }
    let summaries: Vec<Summary> = if cfg.repeat > 1 {
        let of = |name: &str| runs.iter().filter(|r| r.alg == name).map(outcome).collect::<Vec<_>>();
        cfg.algs.iter().map(|alg| summarise(&alg.name(), &of(&alg.name()))).collect()
    } else {
        Vec::new()
    };
    let base = &cfg.sched.cfg;
    let result = Predict {
        schema: PredictSchema,
        machine,
        command: cfg.command.clone(),
        seed: base.seed,
        traffic: cfg.sched.traffic_source.clone(),
        workloads: cfg.sched.cfg.traffic.workloads(),
        threads: base.threads,
        queue_pkts: base.queue,
        sched_poll_ns: base.sched_poll.0,
        client_poll_ns: base.client_poll.0,
        drain_ns: cfg.drain.0,
        repeat: cfg.repeat,
        runs,
        summaries,
    };
    Ok(Finished::Done { result, last })
}

/// The α of each recorded message under `prio`: its traffic entry's `alpha:X` (`None`: the
/// policy's default); `None` for every message under the other policies.
fn message_alphas(cfg: &harness::Config, msgs: &[MsgRecord]) -> Vec<Option<Alpha>> {
    msgs.iter()
        .map(|m| {
            if cfg.alg != PolicySpec::Prio {
                return None;
            }
            let spec = cfg.traffic.programs.get(m.client as usize)?.get(m.entry as usize)?;
            spec.alpha.and_then(|a| Alpha::new(a).ok())
        })
        .collect()
}

/// Judges, replays and compares one harness run.
pub fn analyse(cfg: &harness::Config, r: &RunResult) -> Result<AlgRun, Error> {
    let bps = cfg.bandwidth.ok_or(Error::NoLinkRate)?.0;
    let per: Vec<&[MsgRecord]> = r.clients.iter().map(|c| c.messages.as_slice()).collect();
    let msgs = merged(&per);
    let delivered = msgs.iter().filter(|m| m.delivered()).count();
    if delivered == 0 {
        return Err(Error::NoMessages { generated: msgs.len() });
    }
    let generated_bits: u64 = msgs.iter().map(|m| u64::from(m.packets) * u64::from(m.packet_bytes) * 8).sum();
    let nominal_offered_bits: f64 = cfg.traffic.programs.iter().flatten().map(|s| s.rate.0 as f64 * s.duration.secs()).sum();
    let ring_drops: u64 = r.clients.iter().map(|c| c.ring_drops).sum();
    let queued: u64 = r.clients.iter().map(|c| c.queued_at_stop).sum();
    let transmitted_bits: u64 = r.clients.iter().map(|c| c.bits).sum();
    let service = service_ns(msgs.iter().find(|m| m.pushed > 0).map_or(1500, |m| m.packet_bytes), bps);

    // The policy as the simulator runs it; under prio each replayed message gets its recorded α.
    let opts = BuildOptions::default().flows(&cfg.flows);
    let alphas = message_alphas(cfg, &msgs);
    let by_pos: std::collections::HashMap<(u32, u64), Option<Alpha>> =
        msgs.iter().zip(&alphas).map(|(m, a)| ((m.client, m.first_pos), *a)).collect();

    // The order check, and how late the passes were against the link's clock.
    let order = match &r.trace {
        Some(t) => {
            // The replay's items are the trace's enqueues, in order.
            let enq: Vec<Option<Alpha>> = t
                .iter()
                .filter_map(|e| match *e {
                    harness::TraceEvent::Enqueue { client, pos, .. } => Some(by_pos.get(&(client, pos)).copied().flatten()),
                    _ => None,
                })
                .collect();
            let p = WithAlpha::new(cfg.alg.build::<usize>(&opts), |i: &usize| enq.get(*i).copied().flatten());
            Some(check(p, t, bps)?)
        }
        None => None,
    };
    let lateness = order.as_ref().map_or(Lat::default(), |o| lateness(&msgs, o, message_level(&cfg.alg)));

    let mut reasons = Vec::new();
    if ring_drops > 0 {
        reasons.push(format!("{ring_drops} packets were dropped at full client rings (raise -q, or the scheduler is too slow)"));
    }
    if queued > 0 {
        reasons.push(format!("{queued} packets were still queued after the drain period"));
    }
    if nominal_offered_bits > 0.0 && (generated_bits as f64) < 0.9 * nominal_offered_bits {
        reasons.push(format!(
            "the clients generated {:.1}% of the program's nominal load",
            100.0 * generated_bits as f64 / nominal_offered_bits
        ));
    }
    if lateness.mean_us * 1e3 > 0.5 * service {
        reasons.push(format!(
            "the scheduler released packets {:.1} us late on average against the link's clock (a packet takes {:.1} us): the achieved rate is below nominal while busy",
            lateness.mean_us,
            service / 1e3
        ));
    }
    let predicted = reasons.is_empty();
    if !predicted {
        reasons.extend(crate::compare::preemption_note(r.sched_disturbance.as_ref(), service));
    }
    let rows = if predicted {
        let trace = trace_of(&msgs, bps, message_level(&cfg.alg));
        let owner = &trace.owner;
        let policy = WithAlpha::new(cfg.alg.build::<usize>(&opts), |i: &usize| owner.get(*i).and_then(|&m| alphas[m]));
        let p = predict(policy, &msgs, &trace)?;
        compare(&msgs, &p)
    } else {
        compare(&msgs, &vec![Some(f64::NAN); msgs.len()])
    };
    // Kept up with the link: was it disturbed (late pickup, a stalled scheduler thread)?
    let disturbed = match rows.last() {
        Some(all) if predicted => {
            let why = crate::compare::disturbance_reasons(
                all.breakdown.ring_wait_us,
                all.predicted.mean_us,
                r.sched_disturbance.as_ref(),
            );
            let d = !why.is_empty();
            reasons.extend(why);
            d
        }
        _ => false,
    };
    let kept_up = reasons.is_empty();
    Ok(AlgRun {
        alg: cfg.alg.name(),
        label: cfg.alg.label(),
        verdict: Verdict { kept_up, disturbed, reasons },
        messages: msgs.len(),
        delivered,
        generated_bits,
        nominal_offered_bits,
        link_nominal_bps: bps,
        link_achieved_bps: transmitted_bits as f64 / r.elapsed.secs().max(1e-9),
        service_ns: service,
        ring_drops,
        queued_at_stop_pkts: queued,
        rows,
        predicted,
        order_check: order.as_ref().map(OrderCheck::summary),
        release_lateness: lateness,
        elapsed_s: r.elapsed.secs(),
        repeat_run: 1,
        disturbance: r.disturbance(),
    })
}

/// `sch_deq` of every delivered message's last packet against the link clock's start of it.
fn lateness(msgs: &[MsgRecord], o: &OrderCheck, message_level: bool) -> Lat {
    let late: Vec<f64> = msgs
        .iter()
        .filter(|m| m.delivered())
        .filter_map(|m| {
            let pos = if message_level { m.first_pos } else { m.first_pos + u64::from(m.pushed) - 1 };
            o.virtual_last_start.get(&(m.client, pos)).map(|&v| m.sch_deq_ns as f64 - v as f64)
        })
        .collect();
    let s = schedlab_report::Summary::of_f64(&late);
    Lat { mean_us: s.mean / 1e3, p50_us: s.p50 / 1e3, p99_us: s.p99 / 1e3 }
}
