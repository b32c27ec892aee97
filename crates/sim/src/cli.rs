//! `schedlab sim`, `bench` and `workloads`: their command lines into plain data (a [`SimPlan`]
//! holding the [`crate::job::Config`] and what to print and write, a [`BenchPlan`], a
//! [`WorkloadsRequest`]) and the help texts; nothing else. [`crate::app`] runs them.
//!
//! The §16 listing's flags work as they did (`-a ALPHA` repeatable with −2 = RR′, −1 = RR,
//! 0 = FIFO, 1e6 = SF; `-t TRAFFIC`; `-q DELAY`; `-m LOW HIGH PERCENT` repeatable), next to
//! modern ones (`--traffic 50,90,95`, `--alphas RR,10,SF`, `--packets 50M`, `--json`, ...).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Parser;

use crate::engine::{Arrivals, SimConfig};
use crate::model::{
    check_traffic, parse_alpha_classes, parse_strategy, parse_time_unit, parse_trace, parse_weights, report_defaults, LengthDist,
    ModelError, Service, Strategy,
};
/// Counts (`--packets 20M`): the front-end kit's one unit parser.
pub use schedlab_report::units::parse_count;

/// Default number of arrival packets simulated per traffic level.
pub const DEFAULT_PACKETS: u64 = 100_000_000;

#[derive(Parser, Debug)]
#[command(
    name = "schedlab sim",
    about = "Simulate message scheduling strategies (reproduces the alpha scheduling report)",
    allow_negative_numbers = true,
    after_help = "Examples:\n  schedlab sim                                   # 90% traffic, 13 strategies\n  schedlab sim -t 50 -t 95                        # the listing's flags\n  schedlab sim --traffic 50,90,95 --plot figs     # Figures 1-4 as SVG\n  schedlab sim -a -2 -a -1 -a 0 -a 10 -a 1e6 -t 95 --classic\n  schedlab sim -m 1 5 90 -m 20 20 10 --alphas FIFO,10,track:1:100,SF"
)]
struct SimArgs {
    /// Traffic levels in percent, in (0, 100); repeatable or comma-separated [default: 90]. With
    /// --closed N it is the offered load: the think time is exponential with mean
    /// N x E[length] x 100 / traffic, and the load carried (printed) is lower
    #[arg(short = 't', long = "traffic", value_delimiter = ',', action = clap::ArgAction::Append)]
    traffic: Vec<f64>,
    /// Strategies: RR', RR (the report's message round robin, also mrr), FIFO, SF, a number α (or alpha:X),
    /// track:LOW:HIGH[:GAIN], prio, and the flow-level drr, wf2qp (wf2q+), qfq over --apps flows; the listing's
    /// -2/-1/0/1e6 work too; repeatable or comma-separated [default: RR',RR,FIFO,1,2,3,6,10,20,30,60,100,SF]
    #[arg(short = 'a', long = "alphas", value_delimiter = ',', action = clap::ArgAction::Append, allow_hyphen_values = true)]
    alphas: Vec<String>,
    /// Queue-length sampling period in time units
    #[arg(short = 'q', long = "queue-delay", default_value_t = 200.0)]
    queue_delay: f64,
    /// A length range LOW HIGH PERCENT (repeatable; percentages sum to 100) [default: 1 5 90, 20 20 10]
    #[arg(short = 'm', num_args = 3, value_names = ["LOW", "HIGH", "PERCENT"], action = clap::ArgAction::Append, allow_hyphen_values = true)]
    mesdis: Vec<String>,
    /// Length distribution file: lines `LOW HIGH PERCENT`
    #[arg(long = "dist", conflicts_with = "mesdis")]
    dist: Option<PathBuf>,
    /// A named workload for the message lengths (w1..w5, pfabric-websearch, pfabric-datamining,
    /// w1-sampled; `schedlab workloads` lists them with their sources and means)
    #[arg(long = "workload", value_name = "NAME", conflicts_with_all = ["mesdis", "dist", "trace"])]
    workload: Option<String>,
    /// With --workload: read the CDF as a step function (`step`) or linearly interpolated
    /// (`interp`) [default: the source's own rule: step for W1-W5, interp for pFabric]
    #[arg(long = "reading", value_name = "step|interp", requires = "workload")]
    reading: Option<String>,
    /// With --workload: payload bytes per packet that cut a byte table (W1-W4, w1-sampled) into
    /// packets (ceil) [default: 1460, the MSS of a 1500-byte MTU]; refused for the tables in
    /// packets (W5, pFabric)
    #[arg(long = "bytes-per-packet", value_name = "BYTES", requires = "workload")]
    bytes_per_packet: Option<u64>,
    /// Arrival trace file: lines `TIME LENGTH [APP]`; runs until every message is delivered
    #[arg(long = "trace", conflicts_with_all = ["traffic", "closed"])]
    trace: Option<PathBuf>,
    /// With --trace: one time unit (one mean packet service time) in the trace's TIME units: a
    /// duration such as 12us when TIME is in nanoseconds (sched --trace-out), or a plain ratio
    #[arg(long = "time-unit", value_name = "DUR", requires = "trace")]
    time_unit: Option<String>,
    /// Packet service times: report (0.5 + Exp(0.5), the report's), det (exactly one time unit: a
    /// fixed-rate link) or exp (Exp(1)); all have mean 1 time unit
    #[arg(long = "service", value_name = "MODEL", default_value = "report")]
    service: String,
    /// Weights of the applications' flows for drr, wf2qp and qfq: W1,W2,... (W:N repeats W for N
    /// applications, e.g. 1:2,3:2); sets --apps when that is not given [default: all 1]
    #[arg(long = "weights", value_name = "W[:N],...")]
    weights: Option<String>,
    /// Arrival packets to simulate per traffic level (suffixes k, M, G)
    #[arg(long = "packets", value_parser = parse_count)]
    packets: Option<u64>,
    /// Random seed (printed with every result)
    #[arg(long = "seed", default_value_t = 1)]
    seed: u64,
    /// Spread messages over N applications, at most 1000000 (for --in-order and reordering
    /// counts; in closed loop --closed N sets the applications) [default: 1]
    #[arg(long = "apps")]
    apps: Option<u32>,
    /// §11: deliver each application's messages in order (alpha strategies; needs several
    /// applications: --apps N or --closed N)
    #[arg(long = "in-order")]
    in_order: bool,
    /// §2: N closed-loop applications (at most 1000000), each sending its next message an
    /// exponential think time after its previous one is delivered (its last packet starts
    /// service); -t sets the offered load
    #[arg(long = "closed", value_name = "N")]
    closed: Option<u32>,
    /// §10: per-message α classes ALPHA:PERCENT,... used by the `prio` strategy (added if not listed)
    #[arg(long = "msg-alpha", value_name = "SPEC")]
    msg_alpha: Option<String>,
    /// Batches for the batch-means confidence intervals
    #[arg(long = "batches", default_value_t = 20)]
    batches: u32,
    /// Print the listing's `>>` lines (cumulative reports at t = 200000(1.1^k - 1) and at the end)
    #[arg(long = "classic")]
    classic: bool,
    /// Write all results as JSON (`-` for stdout)
    #[arg(long = "json", value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write per-(strategy, length) rows as CSV
    #[arg(long = "csv", value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write Figures 1-4 as SVG files into DIR
    #[arg(long = "plot", value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Threads: traffic levels run in parallel, and the strategies of one level are split over
    /// the threads left (results are the same for every count) [default: all CPUs]
    #[arg(long = "threads")]
    threads: Option<usize>,
    /// Only the report's raw-data table (no further statistics)
    #[arg(long = "brief")]
    brief: bool,
    /// No progress bar
    #[arg(long = "quiet")]
    quiet: bool,
    /// Independent replications with seeds SEED, SEED+1, ... (run in parallel): cells are means over
    /// them with Student-t 95% half-widths; every replication's values and seed are kept
    #[arg(long = "replications", value_name = "N", default_value_t = 1)]
    replications: u32,
    /// Paired comparison: each strategy's mean latency minus BASE's (e.g. SF, "RR'") with a 95%
    /// half-width from the paired differences and a verdict (lower / higher / no difference)
    #[arg(long = "compare", value_name = "BASE", allow_hyphen_values = true)]
    compare: Option<String>,
    /// Delete an initial transient from the steady-state statistics (not from the report's
    /// cumulative tables): PACKETS (whole batches), or auto (MSER on the queue-length batch means)
    #[arg(long = "warmup", value_name = "PACKETS|auto")]
    warmup: Option<String>,
    /// Also print the batch-means diagnostics (lag-1 autocorrelations, relaxation time, warm-up)
    #[arg(long = "verbose", short = 'v')]
    verbose: bool,
}

/// `schedlab sim`'s arguments, parsed and validated into what will run (nothing is run, no output
/// file is written). Built by [`parse_sim_args`].
#[derive(Debug)]
pub struct SimPlan {
    /// One configuration per traffic level (the first replication's seed).
    pub configs: Vec<SimConfig>,
    pub replications: u32,
    pub stats: crate::stats::Options,
    /// Things the user should know (a strategy named twice, a comparison base added), for stderr.
    pub notes: Vec<String>,
    /// Threads (`--threads`; `None`: every CPU).
    pub threads: Option<usize>,
    /// What is printed and written.
    pub output: SimOutput,
}

/// What `schedlab sim` prints and writes.
#[derive(Debug, Clone, Default)]
pub struct SimOutput {
    /// How the tables are shown (`--brief`, `--verbose`, `--classic`, the trace's header).
    pub show: crate::job::Show,
    /// No progress bar (`--quiet`).
    pub quiet: bool,
    /// `--json FILE` (`-`: stdout).
    pub json: Option<PathBuf>,
    /// `--csv FILE` (`-`: stdout).
    pub csv: Option<PathBuf>,
    /// `--plot DIR`.
    pub plot: Option<PathBuf>,
}

/// Why `schedlab sim`'s arguments were refused.
#[derive(Debug)]
pub enum SimArgsError {
    /// A usage error, or `--help`/`--version` (printed by clap; exit 2, or 0 for help).
    Usage(clap::Error),
    /// Well-formed options with a bad value or an unreadable file.
    Invalid(anyhow::Error),
}

impl std::fmt::Display for SimArgsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimArgsError::Usage(e) => write!(f, "{e}"),
            SimArgsError::Invalid(e) => write!(f, "{e:#}"),
        }
    }
}

/// Parses and validates `schedlab sim`'s arguments (`args[0]` is the command name) as the
/// command would, without running anything: never panics and never exits, whatever the input
/// (the entry point for fuzzing the seed-verbatim parser). Reads `--dist`/`--trace` files.
pub fn parse_sim_args(args: &[OsString]) -> Result<SimPlan, SimArgsError> {
    let a = SimArgs::try_parse_from(args).map_err(SimArgsError::Usage)?;
    plan(a).map_err(SimArgsError::Invalid)
}

fn plan(a: SimArgs) -> Result<SimPlan> {
    let mut notes = Vec::new();
    let mut configs = build_configs(&a, &mut notes)?;
    if a.replications == 0 || a.replications > 100_000 {
        bail!("--replications {}: give between 1 and 100000 independent replications", a.replications);
    }
    let warmup = match &a.warmup {
        Some(w) => crate::stats::Warmup::parse(w).map_err(|e| anyhow::anyhow!("--warmup {w}: {e}"))?,
        None => crate::stats::Warmup::None,
    };
    if let crate::stats::Warmup::Packets(w) = warmup {
        let c = &configs[0];
        let d = crate::stats::analysis::warmup_batches(c, w);
        if d + 2 > u64::from(c.batches) {
            bail!(
                "--warmup {}: deletes {d} of the {} batches, leaving fewer than 2 for the statistics; give a smaller warm-up, more --packets or more --batches",
                a.warmup.as_deref().unwrap_or_default(),
                c.batches
            );
        }
    }
    let compare = match &a.compare {
        Some(b) => {
            let s = parse_strategy(b).with_context(|| format!("--compare {b}"))?;
            for c in &mut configs {
                if !c.strategies.contains(&s) {
                    c.strategies.insert(0, s.clone());
                }
            }
            if !a.alphas.is_empty() && !a.alphas.iter().any(|x| parse_strategy(x).ok().as_ref() == Some(&s)) {
                notes.push(format!("--compare {b}: {} is not among the strategies; added it", s.label()));
            }
            Some(s)
        }
        None => None,
    };
    let stats = crate::stats::Options { warmup, compare, ..Default::default() };
    let show = crate::job::Show {
        brief: a.brief,
        verbose: a.verbose,
        classic: a.classic,
        trace: a.trace.clone(),
        time_unit: a.time_unit.clone(),
    };
    let output = SimOutput { show, quiet: a.quiet, json: a.json, csv: a.csv, plot: a.plot };
    Ok(SimPlan { replications: a.replications, configs, stats, notes, threads: a.threads, output })
}

/// Parses the `-a` strategies, keeping the first spelling of each and noting the repeats.
fn dedup_strategies(names: &[String], notes: &mut Vec<String>) -> Result<Vec<Strategy>> {
    let mut out: Vec<(Strategy, &str)> = Vec::new();
    for n in names {
        let s = parse_strategy(n)?;
        match out.iter().find(|(x, _)| *x == s) {
            Some((_, first)) => notes.push(format!("-a {n} names {} like -a {first}: it is run once", s.label())),
            None => out.push((s, n)),
        }
    }
    Ok(out.into_iter().map(|(s, _)| s).collect())
}

#[derive(Parser, Debug)]
#[command(
    name = "schedlab bench",
    about = "Simulator throughput: arrival packets per second, 13 strategies in lock step, on one core or lane-parallel",
    after_help = "Examples:\n  schedlab bench                          # 95%, 20 M packets, one pinned core, median of 5\n  schedlab bench --threads 1,2 --repeat 7 # lane-parallel scaling, 1 and 2 threads alternating"
)]
struct BenchArgs {
    /// Traffic level in percent
    #[arg(short = 't', long = "traffic", default_value_t = 95.0)]
    traffic: f64,
    /// Arrival packets per repetition (suffixes k, M, G)
    #[arg(long = "packets", value_parser = parse_count, default_value = "20M")]
    packets: u64,
    /// Timed repetitions (the median is reported)
    #[arg(long = "repeat", default_value_t = 5)]
    repeat: usize,
    /// CPU to pin the benchmark to when every thread count is 1 [default: the last allowed CPU]
    #[arg(long = "cpu")]
    cpu: Option<usize>,
    /// Threads to replay the strategy lanes on; a list (e.g. 1,2) alternates the counts
    /// repetition by repetition and reports the speedup over the first (unpinned when above 1)
    #[arg(long = "threads", value_delimiter = ',', default_value = "1", value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: Vec<u64>,
    #[arg(long = "seed", default_value_t = 1)]
    seed: u64,
    /// Write the result as JSON
    #[arg(long = "json", value_name = "FILE")]
    json: Option<PathBuf>,
}

/// What `schedlab sim`, `bench` or `workloads` was asked to do: the argv turned into plain data.
#[derive(Debug)]
pub enum Command {
    /// `schedlab sim`.
    Sim(Box<SimPlan>),
    /// `schedlab bench`.
    Bench(BenchPlan),
    /// `schedlab workloads [NAME]`.
    Workloads(WorkloadsRequest),
}

/// `schedlab workloads`'s request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadsRequest {
    /// `-h`/`--help`: print [`WORKLOADS_HELP`].
    Help,
    /// Every named workload (`name: None`, one line each) or one (its table header and means);
    /// `json`: also write them as a `schedlab.workloads/1` document (`-`: to stdout, instead of
    /// the text).
    List { name: Option<String>, json: Option<PathBuf> },
}

/// `schedlab workloads --help`.
pub const WORKLOADS_HELP: &str = "List the named message-size workloads with their sources and means

Usage: schedlab workloads [NAME] [--json FILE]

Without NAME, one line per table: unit, points, the source's own reading (rule), the mean the
source states (blank where it states none), the step and interpolated means in the table's unit
and in packets, checksum, source @ commit. With NAME, that table's header (source, commit, units,
caveats) and its means.

Options:
  --json FILE   write the listing as JSON, schema schedlab.workloads/1 ('-' for stdout)
  -h, --help    print this help

How a table is read is chosen where it is used: `sim --workload NAME --reading step|interp
--bytes-per-packet N`, and NAME[:READING[:BYTES_PER_PACKET]] in sched and predict traffic files
(dist:w2:step:1442) and in sweep specs' lengths. Bytes per packet applies to the byte tables
(W1-W4, w1-sampled) only: W5 and pFabric are in packets.";

/// `schedlab bench`'s settings, validated.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    /// Traffic level, percent.
    pub traffic: f64,
    /// Arrival packets per repetition.
    pub packets: u64,
    /// Timed repetitions.
    pub repeat: usize,
    /// CPU to pin to (every thread count 1); `None`: the last allowed CPU.
    pub cpu: Option<usize>,
    /// Thread counts, alternated repetition by repetition.
    pub threads: Vec<usize>,
    pub seed: u64,
    /// `--json FILE`.
    pub json: Option<PathBuf>,
}

impl BenchPlan {
    /// Every thread count is 1: the benchmark is pinned to one CPU.
    pub fn pinned(&self) -> bool {
        self.threads.iter().all(|&t| t == 1)
    }
}

/// Turns `schedlab sim`, `bench` or `workloads`'s argv (`args[0]` is the command name) into a
/// [`Command`]; nothing runs and nothing is printed (help and usage errors are
/// [`SimArgsError::Usage`], for the caller to print).
pub fn parse_command(args: Vec<OsString>) -> Result<Command, SimArgsError> {
    let cmd = args.first().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default();
    match cmd.as_str() {
        "bench" => parse_bench(args).map(Command::Bench),
        "workloads" => parse_workloads(&args).map(Command::Workloads).map_err(SimArgsError::Invalid),
        _ => parse_sim_args(&args).map(|p| Command::Sim(Box::new(p))),
    }
}

fn parse_bench(args: Vec<OsString>) -> Result<BenchPlan, SimArgsError> {
    let a = BenchArgs::try_parse_from(args).map_err(SimArgsError::Usage)?;
    check_traffic(a.traffic).map_err(|e| SimArgsError::Invalid(e.into()))?;
    let threads: Vec<usize> = a.threads.iter().map(|&t| t as usize).collect();
    if a.cpu.is_some() && !threads.iter().all(|&t| t == 1) {
        return Err(SimArgsError::Invalid(anyhow::anyhow!(
            "--cpu pins one thread; it cannot be combined with --threads above 1"
        )));
    }
    Ok(BenchPlan { traffic: a.traffic, packets: a.packets, repeat: a.repeat, cpu: a.cpu, threads, seed: a.seed, json: a.json })
}

fn parse_workloads(args: &[OsString]) -> Result<WorkloadsRequest> {
    let rest: Vec<String> = args.iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    if rest.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(WorkloadsRequest::Help);
    }
    let (mut names, mut json) = (Vec::new(), None::<PathBuf>);
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        let file = if a == "--json" {
            Some(
                it.next()
                    .map(String::as_str)
                    .ok_or_else(|| anyhow::anyhow!("--json needs a FILE ('-' for stdout): schedlab workloads --json -"))?,
            )
        } else {
            a.strip_prefix("--json=")
        };
        match file {
            Some(_) if json.is_some() => bail!("--json is given twice: give one FILE"),
            Some("") => bail!("--json needs a FILE ('-' for stdout)"),
            Some(f) => json = Some(PathBuf::from(f)),
            None if a.starts_with('-') && a != "-" => {
                bail!("unknown option '{a}': schedlab workloads takes [NAME] [--json FILE] (see --help)")
            }
            None => names.push(a.clone()),
        }
    }
    match names.as_slice() {
        [] => Ok(WorkloadsRequest::List { name: None, json }),
        [name] => Ok(WorkloadsRequest::List { name: Some(name.clone()), json }),
        _ => bail!("schedlab workloads takes at most one NAME (got {})", names.join(" ")),
    }
}
/// `schedlab sim`'s (or `schedlab bench`'s) command line parsed into the run's configurations,
/// without running, printing or exiting (help and usage errors are `Err`); `args[0]` is the command
/// name. `--dist` and `--trace` files are read (their text parsers are `LengthDist::parse` and
/// `parse_trace`). For fuzzing and tests.
pub fn parse_args(args: Vec<OsString>) -> Result<Vec<SimConfig>> {
    if args.first().is_some_and(|c| c == "bench") {
        let a = BenchArgs::try_parse_from(args)?;
        check_traffic(a.traffic)?;
        return Ok(vec![SimConfig::report(a.traffic, a.packets, a.seed)]);
    }
    match parse_sim_args(&args) {
        Ok(p) => Ok(p.configs),
        Err(SimArgsError::Usage(e)) => Err(e.into()),
        Err(SimArgsError::Invalid(e)) => Err(e),
    }
}

fn build_configs(a: &SimArgs, notes: &mut Vec<String>) -> Result<Vec<SimConfig>> {
    let dist = if let Some(w) = &a.workload {
        LengthDist::workload(w, a.reading.as_deref(), a.bytes_per_packet)?
    } else if let Some(p) = &a.dist {
        LengthDist::from_file(p)?
    } else if a.mesdis.is_empty() {
        LengthDist::report_default()
    } else {
        let mut parts = Vec::new();
        for c in a.mesdis.chunks(3) {
            let low: i64 = c[0].parse().with_context(|| format!("-m LOW '{}' is not a whole number", c[0]))?;
            let high: i64 = c[1].parse().with_context(|| format!("-m HIGH '{}' is not a whole number", c[1]))?;
            let pct: f64 = c[2].parse().with_context(|| format!("-m PERCENT '{}' is not a number", c[2]))?;
            parts.push((low, high, pct));
        }
        LengthDist::new(&parts)?
    };
    let mut strategies = if a.alphas.is_empty() { report_defaults() } else { dedup_strategies(&a.alphas, notes)? };
    let msg_alpha = match &a.msg_alpha {
        Some(s) => parse_alpha_classes(s)?,
        None => Vec::new(),
    };
    if !msg_alpha.is_empty() && !strategies.contains(&Strategy::Prio) {
        strategies.push(Strategy::Prio);
    }
    if strategies.contains(&Strategy::Prio) && msg_alpha.is_empty() {
        bail!("the 'prio' strategy needs --msg-alpha ALPHA:PERCENT,... (per-message α classes)");
    }
    if !(a.queue_delay.is_finite() && a.queue_delay > 0.0) {
        bail!("-q {}: the queue sampling delay must be a positive number of time units", a.queue_delay);
    }
    if a.batches < 2 {
        bail!("--batches {}: at least 2 batches are needed for a confidence interval", a.batches);
    }
    if a.apps == Some(0) {
        bail!("--apps 0: there must be at least one application");
    }
    for (opt, v) in [("--apps", a.apps), ("--closed", a.closed)] {
        if let Some(n) = v.filter(|&n| n > MAX_APPS) {
            bail!("{opt} {n}: at most {MAX_APPS} applications are supported (each needs its own state in every strategy)");
        }
    }
    if let (Some(n), Some(c)) = (a.apps, a.closed) {
        if n != c {
            bail!("--apps {n} with --closed {c}: in closed loop the applications are the --closed ones; drop --apps");
        }
    }
    let packets = a.packets.unwrap_or(DEFAULT_PACKETS);
    if a.trace.is_none() && u64::from(a.batches) > packets {
        bail!(
            "--batches {}: more batches than arrival packets ({packets}); each batch mean needs packets of its own: \
             give fewer --batches or more --packets",
            a.batches
        );
    }
    let service = Service::parse(&a.service)?;
    let weights = match &a.weights {
        Some(w) => parse_weights(w)?,
        None => Vec::new(),
    };
    let n_weights = weights.len() as u32;
    let apps = match (a.weights.is_some(), a.apps.unwrap_or(1)) {
        (true, 1) => n_weights,
        (true, n) if n != n_weights => {
            bail!("--apps {n} but --weights gives {n_weights} weights: give one weight per application")
        }
        (_, n) => n,
    };
    if let Some(n) = a.closed.filter(|&n| a.weights.is_some() && n != n_weights) {
        bail!("--closed {n} but --weights gives {n_weights} weights: give one weight per application");
    }
    let base = SimConfig {
        traffic: 0.0,
        strategies,
        dist,
        queue_delay: a.queue_delay,
        packets,
        seed: a.seed,
        apps,
        in_order: a.in_order,
        msg_alpha,
        arrivals: Arrivals::Poisson,
        batches: a.batches,
        checkpoints: a.classic,
        service,
        weights,
    };
    if let Some(p) = &a.trace {
        let unit = a.time_unit.as_deref().map(parse_time_unit).transpose()?.unwrap_or(1.0);
        let text = std::fs::read_to_string(p).map_err(|e| ModelError::Io { file: p.clone(), msg: e.to_string() })?;
        let tr = parse_trace(&text, p, unit)?;
        let span = tr.last().map(|x| x.time).unwrap_or(0.0).max(1e-9);
        let pk: u64 = tr.iter().map(|x| u64::from(x.len)).sum();
        let apps = tr.iter().map(|x| x.app).max().unwrap_or(0).saturating_add(1);
        if apps > MAX_APPS {
            bail!("{}: application {} is above the {MAX_APPS} applications supported", p.display(), apps - 1);
        }
        check_in_order(a.in_order, apps.max(base.apps), false)?;
        if a.weights.is_some() && apps > n_weights {
            bail!("{}: the trace has applications 0..={} but --weights gives {n_weights} weights", p.display(), apps - 1);
        }
        // The trace's own measured load (packets per time unit over its span), for labelling only.
        let traffic = (pk as f64 / span * 100_000.0).round() / 1000.0;
        return Ok(vec![SimConfig {
            traffic,
            packets: pk,
            apps: apps.max(base.apps),
            arrivals: Arrivals::Trace(Arc::new(tr)),
            ..base
        }]);
    }
    check_in_order(a.in_order, a.closed.unwrap_or(base.apps), a.closed.is_some())?;
    let levels = if a.traffic.is_empty() { vec![90.0] } else { a.traffic.clone() };
    let mut out = Vec::new();
    for t in levels {
        check_traffic(t)?;
        let arrivals = match a.closed {
            Some(0) => bail!("--closed 0: there must be at least one application"),
            Some(n) => Arrivals::Closed { apps: n },
            None => Arrivals::Poisson,
        };
        let apps = a.closed.unwrap_or(base.apps);
        out.push(SimConfig { traffic: t, apps, arrivals, ..base.clone() });
    }
    Ok(out)
}

/// Most applications `--apps` and `--closed` accept: every strategy keeps per-application state.
pub const MAX_APPS: u32 = 1_000_000;

/// §11 needs several applications: with one, every message belongs to it, so keeping its
/// messages in order turns every alpha strategy (SF included) into FIFO.
fn check_in_order(in_order: bool, apps: u32, closed: bool) -> Result<()> {
    if in_order && apps < 2 {
        bail!(
            "--in-order with a single application{}: all messages belong to it, so keeping them in order would make \
             every alpha strategy (SF included) FIFO; give several applications with {}",
            if closed { " (--closed 1)" } else { " (--apps 1, the default)" },
            if closed { "--closed N (N >= 2)" } else { "--apps N (N >= 2) or --closed N" }
        );
    }
    Ok(())
}

/// The library's configuration of a parsed `schedlab sim` command line.
pub fn config(p: &SimPlan) -> crate::job::Config {
    crate::job::Config { levels: p.configs.clone(), replications: p.replications, stats: p.stats.clone(), threads: p.threads }
}
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn counts() {
        assert_eq!(parse_count("50M"), Ok(50_000_000));
        assert_eq!(parse_count("1e6"), Ok(1_000_000));
        assert_eq!(parse_count("2k"), Ok(2000));
        assert!(parse_count("0").is_err());
        assert!(parse_count("x").is_err());
    }

    /// The library entry point a fuzz target calls: errors, never a panic or an exit.
    #[test]
    fn parse_sim_args_refuses_without_panicking() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        for bad in [
            &["sim", "-é"][..],
            &["sim", "--packets", "ék"],
            &["sim", "--warmup", "ék"],
            &["sim", "--warmup", "2M", "--packets", "2M"],
            &["sim", "-m", "1", "é", "100"],
            &["sim", "--replications", "0"],
            &["sim", "--compare", "é"],
            &["sim", "-a", "é"],
            &["sim", "-t", "100"],
            &["sim", "--batches", "1"],
            &["sim", "--batches", "4000000000", "--packets", "10k"],
        ] {
            assert!(parse_sim_args(&os(bad)).is_err(), "{bad:?}");
        }
        let p = parse_sim_args(&os(&["sim", "-a", "1e6,SF,10", "--compare", "RR'", "--replications", "3", "--warmup", "auto"]))
            .unwrap();
        let labels: Vec<String> = p.configs[0].strategies.iter().map(|s| s.label()).collect();
        assert_eq!(labels, ["RR'", "SF", "10"]);
        assert_eq!(p.replications, 3);
        assert_eq!(p.stats.warmup, crate::stats::Warmup::Auto);
        assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
    }
}
