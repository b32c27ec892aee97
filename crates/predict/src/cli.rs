//! `schedlab predict`: `schedlab sched`'s options, plus `--algs`, `--plot`, `--drain`.
//!
//! `run()` reads as the table of contents: parse; per algorithm, run the workload on the real
//! harness (recording messages and the scheduler's trace), judge whether the harness kept up,
//! replay the recorded arrivals through the simulator, compare, check the release order; then
//! print, write JSON and the plot.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use schedlab_policy::{Alpha, BuildOptions, Dialect, FlowWeight, PolicySpec};
use schedlab_report::plot::figures::{predict_chart, PredictSeries};
use schedlab_report::plot::LineChart;
use schedlab_report::MachineInfo;
use schedlab_sched::config::{load, parse_argv as parse_sched_argv, write_message_files, Args, Argv};
use schedlab_sched::harness::{alg_error, message_level, run as run_harness, Config, RunResult, WithAlpha};
use schedlab_sched::messages::{merged, MsgRecord};
use schedlab_sched::traffic::Spec;
use schedlab_sched::units::{parse_duration, Bps, Nanos};
use serde::Serialize;

use crate::compare::{compare, predict, service_ns, trace_of, Row};
use crate::order::{check, OrderCheck};

const HELP: &str = "\
schedlab predict — the simulator's prediction and the real scheduler's measurement of one workload

Runs the workload on the real harness (schedlab sched), records every message, replays exactly
those arrivals (time, client, length) through the simulator with the same policy and a
deterministic service time of packet_bytes x 8 / link rate, and prints per message length: count,
measured and predicted mean / p50 / p99 queueing latency (arrival to the release of the last
packet) and their ratio; then where the measured time went (ring wait sch_enq - cli_enq, scheduler
queue, release-to-seen cli_deq - sch_deq) and how late the scheduler's passes released packets
against the link's own clock. It also checks that the harness released exactly the packets, in
exactly the order, that the simulator releases from the arrivals as the scheduler saw them.

If the harness cannot keep up with the link (ring drops, packets left at the end, clients
generating below the nominal rate, or passes releasing late by more than half a packet time on
average), it says so and why, prints the measured figures only and exits 0.

Usage: schedlab predict [schedlab sched options] [--algs LIST] [--plot FILE.svg] [--drain TIME]
                        [-- [scheduler options]]

  -b BW           link rate (required: it sets the service time)
  --algs LIST     run the workload once per policy, any name of the vocabulary (as -alg: rr is
                  DRR), e.g. fifo,mrr,rr',alpha:10,sf,track:1:100,prio,drr,wf2qp,qfq
                  (default: the one given by -alg; flow-level ones without -flowsets get weight 1
                  per client; prio takes each message's alpha from the traffic file's alpha:X)
  --plot FILE     latency vs message length, measured and predicted per algorithm (SVG)
  --json FILE     the comparison as JSON ('-' for stdout)
  --drain TIME    silence appended to every client's program so queues empty (default 50ms)
  --seed N        seed of the workload (message lengths, Poisson gaps; default 1)
  --repeat N      run every algorithm N times (same seed); runs set aside by the verdict (cannot
                  keep up, or disturbed: late pickup, stalled scheduler) are dropped and named,
                  the others give the median and spread of measured / predicted (default 1)
  --messages FILE, --trace-out FILE   as in schedlab sched (of the last algorithm run)
Everything else is schedlab sched's (see schedlab sched --help), e.g.

  schedlab predict -t 4 -f load50.txt -b 1G -q 1000 -i 0 -c 0 --algs fifo,alpha:10,sf --plot p.svg

with load50.txt:  thread all / 2s 125M 1500 dist:report poisson   (4 x 125 Mb/s = 50% of 1 Gb/s)
";

/// Predict-only options; the rest is `schedlab sched`'s.
struct Opts {
    sched: Args,
    algs: Vec<PolicySpec>,
    plot: Option<PathBuf>,
    drain: Nanos,
    repeat: usize,
}

/// One name of `--algs`, in the harness's dialect (`rr` is DRR, as `-alg rr`).
fn parse_alg_item(s: &str) -> Result<PolicySpec> {
    PolicySpec::parse(s, Dialect::Sched).map_err(alg_error).with_context(|| format!("--algs: '{s}'"))
}

/// An error of [`parse`] that is not a usage error (the traffic file cannot be read or is wrong):
/// exit 1, where every other parse error exits 2.
#[derive(Debug)]
struct NotUsage(String);

impl std::fmt::Display for NotUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotUsage {}

/// `schedlab predict`'s command line, parsed without touching any file.
#[derive(Debug, Clone)]
pub struct PredictArgv {
    /// `schedlab sched`'s options (the traffic file not loaded yet).
    pub sched: Argv,
    /// `--algs`, or the one `-alg`.
    pub algs: Vec<PolicySpec>,
    pub plot: Option<PathBuf>,
    pub drain: Nanos,
    /// `--repeat N`: runs per algorithm (at least 1).
    pub repeat: usize,
}

/// Parses `schedlab predict`'s arguments (without the program name) without touching any file:
/// every error is a usage error. `Ok(None)`: help. Any `&[String]` gives `Ok` or `Err`, never a
/// panic (fuzzed).
pub fn parse_argv(argv: &[String]) -> Result<Option<PredictArgv>> {
    let mut rest = Vec::new();
    let mut algs_arg = None;
    let mut plot = None;
    let mut drain = Nanos(50_000_000);
    let mut repeat = 1usize;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let (opt, inline) = match a.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it.next().cloned().with_context(|| format!("option {name} needs a value (see --help)")),
            }
        };
        match opt {
            "--algs" => algs_arg = Some(value("--algs")?),
            "--plot" => plot = Some(PathBuf::from(value("--plot")?)),
            "--drain" => {
                let v = value("--drain")?;
                drain = parse_duration(&v, 1_000_000_000).with_context(|| format!("--drain {v}"))?;
            }
            "--repeat" => {
                let v = value("--repeat")?;
                repeat = v
                    .parse()
                    .ok()
                    .filter(|&n: &usize| (1..=10_000).contains(&n))
                    .with_context(|| format!("--repeat '{v}': give a whole number of runs from 1 to 10000"))?;
            }
            "-h" | "--help" => return Ok(None),
            _ => rest.push(a.clone()),
        }
    }
    let Some(sched) = parse_sched_argv(&rest)? else { return Ok(None) };
    if sched.bench {
        bail!("--bench is not a predict option");
    }
    if sched.bandwidth.is_none() {
        bail!("predict needs a link rate (-b, e.g. -b 1G): the simulator's service time is packet_bytes x 8 / rate")
    }
    let algs = match algs_arg {
        None => vec![sched.alg.clone()],
        Some(list) => {
            let v = list.split(',').filter(|s| !s.is_empty()).map(parse_alg_item).collect::<Result<Vec<_>>>()?;
            if v.is_empty() {
                bail!("--algs is empty: give e.g. fifo,alpha:10,sf");
            }
            v
        }
    };
    Ok(Some(PredictArgv { sched, algs, plot, drain, repeat }))
}

/// Parses `schedlab predict`'s arguments and loads the traffic program. `Ok(None)`: help.
fn parse(argv: &[String]) -> Result<Option<Opts>> {
    let Some(p) = parse_argv(argv)? else { return Ok(None) };
    // Reading the traffic file is the one step of parsing that is not about the command line.
    let mut sched = load(p.sched).map_err(|e| anyhow::Error::new(NotUsage(format!("{e:#}"))))?;
    let cfg = &mut sched.cfg;
    cfg.messages = true;
    cfg.trace = true;
    cfg.ts_limit = 0;
    for prog in cfg.traffic.programs.iter_mut() {
        if !prog.is_empty() {
            prog.push(Spec::fixed(p.drain, Bps(0), 1500, 1));
        }
    }
    Ok(Some(Opts { sched, algs: p.algs, plot: p.plot, drain: p.drain, repeat: p.repeat }))
}

/// Whether the harness kept up with the link, and why not.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Verdict {
    /// The comparison stands: the harness kept up with the link and was not disturbed.
    pub kept_up: bool,
    /// It kept up with the link but was disturbed ([`crate::compare::disturbance_reasons`]).
    pub disturbed: bool,
    pub reasons: Vec<String>,
}

/// Release lateness: the harness's `sch_deq` of a message's last packet minus the start of that
/// packet in the link's own clock.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Lateness {
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// One algorithm's run.
#[derive(Debug, Serialize)]
pub struct AlgRun {
    /// The policy's canonical name (`PolicySpec::name`, e.g. `alpha:10`, `drr`).
    pub alg: String,
    /// Its row label (`PolicySpec::label`, e.g. `10`, `DRR`).
    pub label: String,
    pub verdict: Verdict,
    pub messages: usize,
    pub delivered: usize,
    pub generated_bits: u64,
    pub nominal_offered_bits: f64,
    pub link_nominal_bps: u64,
    pub link_achieved_bps: f64,
    pub service_ns: f64,
    pub ring_drops: u64,
    pub queued_at_stop_pkts: u64,
    /// Measured only (when the harness did not keep up) or measured and predicted.
    pub rows: Vec<Row>,
    pub predicted: bool,
    pub order_check: Option<OrderCheck>,
    pub release_lateness: Lateness,
    pub elapsed_s: f64,
    /// 1-based run number under `--repeat` (1 without it).
    pub repeat_run: usize,
    /// Per measuring thread (scheduler, clients): switches, migrations, longest loop gap.
    pub disturbance: Vec<schedlab_report::disturb::Disturbance>,
}

/// The JSON report.
#[derive(Debug, Serialize)]
pub struct PredictReport {
    pub machine: MachineInfo,
    pub command: Vec<String>,
    pub seed: u64,
    pub traffic: String,
    /// The named workloads (`dist:w3`) the traffic file draws from (name, reading, checksum,
    /// source, commit); the model replays the very messages drawn from them.
    pub workloads: Vec<schedlab_sched::workload::WorkloadUsed>,
    pub threads: usize,
    pub queue_pkts: usize,
    pub sched_poll_ns: u64,
    pub client_poll_ns: u64,
    pub drain_ns: u64,
    pub repeat: usize,
    pub runs: Vec<AlgRun>,
    /// Per algorithm over the `--repeat` runs (empty without `--repeat`).
    pub summaries: Vec<crate::repeat::Summary>,
}

/// `println!` that returns an error instead of panicking when stdout is closed.
macro_rules! outln {
    ($($t:tt)*) => {
        writeln!(std::io::stdout(), $($t)*).context("writing to stdout")?
    };
}

/// Entry point: `args[0]` is the program name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    let argv: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string).with_context(|| format!("argument {a:?} is not valid UTF-8")))
        .collect::<Result<_>>()?;
    let opts = match parse(&argv) {
        Ok(Some(o)) => o,
        Ok(None) => {
            write!(std::io::stdout(), "{HELP}").context("writing to stdout")?;
            return Ok(0);
        }
        Err(e) if e.is::<NotUsage>() => return Err(e),
        Err(e) => {
            eprintln!("schedlab predict: usage error: {e:#} (see --help)");
            return Ok(schedlab_report::frontend::exit::USAGE);
        }
    };
    for w in &opts.sched.cfg.traffic.warnings {
        eprintln!("schedlab predict: warning: {w}");
    }
    // SIGINT/SIGTERM: the front-end kit's one handler per process.
    let interrupt = schedlab_report::frontend::interrupt();
    let machine = MachineInfo::collect();
    outln!("{}", machine.line());
    let base = &opts.sched.cfg;
    outln!(
        "workload: {} client(s), traffic {}, queue {} pkts, link {}, -i {} -c {}, seed {}, drain {}",
        base.threads,
        opts.sched.traffic_source,
        base.queue,
        base.bandwidth.map_or("unlimited".into(), |b| b.to_string()),
        base.sched_poll,
        base.client_poll,
        base.seed,
        opts.drain
    );
    for w in base.traffic.workloads() {
        outln!("{w}");
    }
    let mut runs = Vec::new();
    let mut last: Option<RunResult> = None;
    // Under --repeat the algorithms take turns, so a disturbance hits them alike.
    for k in 1..=opts.repeat {
        for alg in &opts.algs {
            let cfg = config_for(base, alg);
            let r = run_harness(&cfg, interrupt.flag())?;
            if r.interrupted {
                outln!("interrupted (Ctrl-C)");
                return Ok(schedlab_report::frontend::exit::INTERRUPTED);
            }
            let mut run = analyse(&cfg, &r)?;
            run.repeat_run = k;
            let shown =
                if opts.repeat > 1 { crate::repeat::run_line(k, opts.repeat, &run.alg, &outcome(&run)) } else { text(&run) };
            write!(std::io::stdout(), "{shown}").context("writing to stdout")?;
            runs.push(run);
            last = Some(r);
        }
    }
    let summaries: Vec<crate::repeat::Summary> = if opts.repeat > 1 {
        let of = |name: &str| runs.iter().filter(|r| r.alg == name).map(outcome).collect::<Vec<_>>();
        opts.algs.iter().map(|alg| crate::repeat::summarise(&alg.name(), &of(&alg.name()))).collect()
    } else {
        Vec::new()
    };
    if !summaries.is_empty() {
        outln!("\nover {} runs per algorithm (runs set aside by the verdict are dropped):", opts.repeat);
        for s in &summaries {
            write!(std::io::stdout(), "{}", crate::repeat::text(s)).context("writing to stdout")?;
        }
    }
    if let Some(r) = &last {
        write_message_files(&opts.sched, r)?;
    }
    let report = PredictReport {
        machine,
        command: std::env::args().collect(),
        seed: base.seed,
        traffic: opts.sched.traffic_source.clone(),
        workloads: base.traffic.workloads(),
        threads: base.threads,
        queue_pkts: base.queue,
        sched_poll_ns: base.sched_poll.0,
        client_poll_ns: base.client_poll.0,
        drain_ns: opts.drain.0,
        repeat: opts.repeat,
        runs,
        summaries,
    };
    if let Some(p) = &opts.sched.json {
        schedlab_report::export::write_json(p, &report)?;
    }
    if let Some(p) = &opts.plot {
        plot(&report).write(p)?;
        outln!("plot: {}", p.display());
    }
    Ok(0)
}

/// The run's configuration for one algorithm; flow-level policies without enough `-flowsets` get
/// weight 1 per client.
fn config_for(base: &Config, alg: &PolicySpec) -> Config {
    let mut cfg = base.clone();
    cfg.alg = alg.clone();
    // The simulator has no scheduler queue limit: run the harness without one (sched's default
    // -qmax of 20 per flow would drop packets the model keeps).
    cfg.qmax = u64::MAX;
    cfg.qmin = 0;
    if alg.flow_level() && cfg.flows.len() < cfg.threads {
        let max_len = cfg.traffic.programs.iter().flatten().map(|s| s.pkt_len).max().unwrap_or(1500);
        cfg.flows = vec![FlowWeight::new(1, max_len); cfg.threads];
    }
    cfg
}

/// The α of each recorded message under `prio`: its traffic entry's `alpha:X` (`None`: the
/// policy's default); `None` for every message under the other policies.
fn message_alphas(cfg: &Config, msgs: &[MsgRecord]) -> Vec<Option<Alpha>> {
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
pub fn analyse(cfg: &Config, r: &RunResult) -> Result<AlgRun> {
    let bps = cfg.bandwidth.context("predict needs a link rate (-b)")?.0;
    let per: Vec<&[MsgRecord]> = r.clients.iter().map(|c| c.messages.as_slice()).collect();
    let msgs = merged(&per);
    let delivered = msgs.iter().filter(|m| m.delivered()).count();
    if delivered == 0 {
        bail!(
            "the run delivered no messages ({} generated): give the clients a program with a positive rate (-f) and a long enough duration",
            msgs.len()
        );
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
                    schedlab_sched::harness::TraceEvent::Enqueue { client, pos, .. } => {
                        Some(by_pos.get(&(client, pos)).copied().flatten())
                    }
                    _ => None,
                })
                .collect();
            let p = WithAlpha::new(cfg.alg.build::<usize>(&opts), |i: &usize| enq.get(*i).copied().flatten());
            Some(check(p, t, bps)?)
        }
        None => None,
    };
    let lateness = order.as_ref().map_or(Lateness::default(), |o| lateness(&msgs, o, message_level(&cfg.alg)));

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
        order_check: order,
        release_lateness: lateness,
        elapsed_s: r.elapsed.secs(),
        repeat_run: 1,
        disturbance: r.disturbance(),
    })
}

/// `sch_deq` of every delivered message's last packet against the link clock's start of it.
fn lateness(msgs: &[MsgRecord], o: &OrderCheck, message_level: bool) -> Lateness {
    let late: Vec<f64> = msgs
        .iter()
        .filter(|m| m.delivered())
        .filter_map(|m| {
            let pos = if message_level { m.first_pos } else { m.first_pos + u64::from(m.pushed) - 1 };
            o.virtual_last_start.get(&(m.client, pos)).map(|&v| m.sch_deq_ns as f64 - v as f64)
        })
        .collect();
    let s = schedlab_report::Summary::of_f64(&late);
    Lateness { mean_us: s.mean / 1e3, p50_us: s.p50 / 1e3, p99_us: s.p99 / 1e3 }
}

/// What `--repeat` needs of a run.
fn outcome(r: &AlgRun) -> crate::repeat::Outcome {
    let all = r.rows.last();
    crate::repeat::Outcome {
        kept_up: r.verdict.kept_up,
        reasons: r.verdict.reasons.clone(),
        ratio: all.map_or(f64::NAN, |a| a.ratio_mean),
        measured_mean_us: all.map_or(f64::NAN, |a| a.measured.mean_us),
        predicted_mean_us: all.map_or(f64::NAN, |a| a.predicted.mean_us),
    }
}

/// The human table of one run.
pub fn text(r: &AlgRun) -> String {
    let mut s = format!(
        "\n== {} ({}) ==  {} messages ({} delivered), link {} nominal, achieved {:.1} Mb/s, a packet takes {:.2} us\n",
        r.alg,
        r.label,
        r.messages,
        r.delivered,
        Bps(r.link_nominal_bps),
        r.link_achieved_bps / 1e6,
        r.service_ns / 1e3
    );
    let len = |l: u32| if l == 0 { "all".to_string() } else { l.to_string() };
    if r.verdict.disturbed {
        s += "DISTURBED: the harness kept up with the link but was disturbed, so the run is set aside and its \
              disagreement with the model is not the model's:\n";
        for why in &r.verdict.reasons {
            s += &format!("  - {why}\n");
        }
    }
    if !r.predicted {
        s += "CANNOT KEEP UP: the harness did not run the link at its nominal rate, so the model's prediction \
              does not apply; measured figures only.\n";
        for why in &r.verdict.reasons {
            s += &format!("  - {why}\n");
        }
        s += &format!("{:>5} {:>7} {:>11} {:>10} {:>10}\n", "len", "count", "mean us", "p50 us", "p99 us");
        for row in &r.rows {
            s += &format!(
                "{:>5} {:>7} {:>11.1} {:>10.1} {:>10.1}\n",
                len(row.len_pkts),
                row.count,
                row.measured.mean_us,
                row.measured.p50_us,
                row.measured.p99_us
            );
        }
    } else {
        s += "queueing latency (arrival to release of the last packet), us:\n";
        s += &format!(
            "{:>5} {:>7} | {:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | {:>6}\n",
            "len", "count", "meas mean", "meas p50", "meas p99", "pred mean", "pred p50", "pred p99", "ratio"
        );
        for row in &r.rows {
            s += &format!(
                "{:>5} {:>7} | {:>9.1} {:>9.1} {:>9.1} | {:>9.1} {:>9.1} {:>9.1} | {:>6.3}\n",
                len(row.len_pkts),
                row.count,
                row.measured.mean_us,
                row.measured.p50_us,
                row.measured.p99_us,
                row.predicted.mean_us,
                row.predicted.p50_us,
                row.predicted.p99_us,
                row.ratio_mean
            );
        }
    }
    if let Some(all) = r.rows.last() {
        let b = &all.breakdown;
        s += &format!(
            "where the measured time went (mean per message, us): ring wait {:.2}, scheduler queue {:.2}, then release-to-seen {:.2}\n",
            b.ring_wait_us, b.sched_queue_us, b.release_to_seen_us
        );
    }
    s += &format!(
        "scheduler passes vs the link's clock: last packets released late by mean {:.2} us, p50 {:.2}, p99 {:.2}\n",
        r.release_lateness.mean_us, r.release_lateness.p50_us, r.release_lateness.p99_us
    );
    s += &schedlab_report::disturb::lines(&r.disturbance);
    if let Some(o) = &r.order_check {
        s += &match (o.identical(), o.first_mismatch) {
            (true, _) => format!(
                "release order: the {} packets the harness released are exactly the simulator's, in order\n",
                o.harness_pkts
            ),
            (false, Some(k)) => format!("release order: DIFFERS from the simulator's at packet {k} of {}\n", o.harness_pkts),
            (false, None) => format!(
                "release order: the harness released {} packets, the simulator only {}\n",
                o.harness_pkts, o.simulator_pkts
            ),
        };
    }
    s
}

/// Mean latency vs message length, measured and predicted, per algorithm (the chart comes from
/// `schedlab_report::plot::figures::predict_chart`, which the `schedlab report` page also uses).
pub fn plot(rep: &PredictReport) -> LineChart {
    let runs: Vec<PredictSeries> = rep
        .runs
        .iter()
        .map(|r| PredictSeries {
            alg: r.alg.clone(),
            rows: r
                .rows
                .iter()
                .map(|x| (f64::from(x.len_pkts), x.measured.mean_us, r.predicted.then_some(x.predicted.mean_us)))
                .collect(),
        })
        .collect();
    predict_chart(&runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Option<Opts>> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn options() {
        let e = |s: &str| format!("{:#}", p(s).err().unwrap());
        assert!(e("-t 1").contains("needs a link rate"));
        assert!(e("-b 1G --algs fifo,bogus").contains("unknown -alg 'bogus'"));
        assert!(e("-b 1G --algs alpha:x").contains("not a number"));
        assert!(e("-b 1G --algs ,").contains("empty"));
        assert!(e("-b 1G --drain").contains("needs a value"));
        let o = p("-b 1G --algs fifo,alpha:10,sf,rr --plot x.svg --drain 10ms").unwrap().unwrap();
        assert_eq!(o.algs.len(), 4);
        assert_eq!(o.drain, Nanos(10_000_000));
        assert!(o.sched.cfg.messages && o.sched.cfg.trace);
        assert!(o.sched.cfg.traffic.programs[0].last().unwrap().rate == Bps(0), "drain appended");
        let rr = config_for(&o.sched.cfg, &o.algs[3]);
        assert_eq!(rr.alg, PolicySpec::Drr, "rr is DRR, as -alg rr");
        assert_eq!(rr.flows.len(), 1);
        let all = p("-b 1G --algs fifo,mrr,rr',alpha:10,sf,track:1:100,track-insert:1:100,prio,drr,wf2qp,qfq").unwrap().unwrap();
        assert_eq!(all.algs, PolicySpec::examples());
        assert!(p("--help").unwrap().is_none());
    }
}
