//! `schedlab predict`: `schedlab sched`'s options, plus `--algs`, `--plot`, `--drain`, `--repeat`,
//! turned into a [`Config`] (in [`Opts`]), and the help text; nothing else. [`crate::app`] runs it.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use schedlab_policy::{Dialect, PolicySpec};
use schedlab_sched::config::{load, parse_argv as parse_sched_argv, Argv};
use schedlab_sched::harness::alg_error;
use schedlab_sched::units::{parse_duration, Nanos};

use crate::config::Config;

/// `schedlab predict --help`.
pub const HELP: &str = "\
schedlab predict — the simulator's prediction and the real scheduler's measurement of one workload

Runs the workload on the real harness (schedlab sched), records every message, replays exactly
those arrivals (time, client, length) through the simulator with the same policy and a
deterministic service time of packet_bytes x 8 / link rate, and prints per message length: count,
measured and predicted mean / p50 / p99 queueing latency (arrival to the release of the last
packet) and their ratio (with more than 64 distinct lengths, e.g. dist:w3, per size bucket by
size percentile instead, as schedlab sim buckets); then where the measured time went (ring wait sch_enq - cli_enq, scheduler
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
  --csv FILE      the comparison's rows as CSV, one line per run and length ('-' for stdout)
  --drain TIME    silence appended to every client's program so queues empty (default 50ms)
  --seed N        seed of the workload (message lengths, Poisson gaps; default 1)
  --repeat N      run every algorithm N times (same seed); runs set aside by the verdict (cannot
                  keep up, or disturbed: late pickup, stalled scheduler) are dropped and named,
                  the others give the median and spread of measured / predicted (default 1)
  --messages FILE, --trace-out FILE   as in schedlab sched (of the last algorithm run)
  --disturbance-csv FILE   one row per measuring thread per run; its run column is the
                  algorithm (ALG, or ALG#K for run K under --repeat)
Everything else is schedlab sched's (see schedlab sched --help), e.g.

  schedlab predict -t 4 -f load50.txt -b 1G -q 1000 -i 0 -c 0 --algs fifo,alpha:10,sf --plot p.svg

with load50.txt:  thread all / 2s 125M 1500 dist:report poisson   (4 x 125 Mb/s = 50% of 1 Gb/s)
";

/// `schedlab predict`'s command line as plain data: the run's configuration and where the plot goes.
#[derive(Debug)]
pub struct Opts {
    pub config: Config,
    /// `--plot FILE.svg`.
    pub plot: Option<PathBuf>,
    /// `--csv FILE` (`-`: stdout).
    pub csv: Option<PathBuf>,
}

/// One name of `--algs`, in the harness's dialect (`rr` is DRR, as `-alg rr`).
fn parse_alg_item(s: &str) -> Result<PolicySpec> {
    PolicySpec::parse(s, Dialect::Sched).map_err(alg_error).with_context(|| format!("--algs: '{s}'"))
}

/// An error of [`parse`] that is not a usage error (the traffic file cannot be read or is wrong):
/// exit 1, where every other parse error exits 2.
#[derive(Debug)]
pub struct NotUsage(pub String);

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
    /// `--csv FILE`: the comparison's rows.
    pub csv: Option<PathBuf>,
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
    let mut csv = None;
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
            "--csv" => csv = Some(PathBuf::from(value("--csv")?)),
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
    Ok(Some(PredictArgv { sched, algs, plot, csv, drain, repeat }))
}

/// Parses `schedlab predict`'s arguments (without the program name) and loads the traffic
/// program. `Ok(None)`: help. An error that is a [`NotUsage`] is about the traffic file (exit 1);
/// every other one is a usage error (exit 2).
pub fn parse(argv: &[String]) -> Result<Option<Opts>> {
    let Some(p) = parse_argv(argv)? else { return Ok(None) };
    // Reading the traffic file is the one step of parsing that is not about the command line.
    let sched = load(p.sched).map_err(|e| anyhow::Error::new(NotUsage(format!("{e:#}"))))?;
    let mut config = Config::new(sched, p.algs, p.drain, p.repeat);
    config.command = std::env::args().collect();
    Ok(Some(Opts { config, plot: p.plot, csv: p.csv }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_sched::units::Bps;

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
        let o = p("-b 1G --algs fifo,alpha:10,sf,rr --plot x.svg --drain 10ms").unwrap().unwrap().config;
        assert_eq!(o.algs.len(), 4);
        assert_eq!(o.drain, Nanos(10_000_000));
        assert!(o.sched.cfg.messages && o.sched.cfg.trace);
        assert!(o.sched.cfg.traffic.programs[0].last().unwrap().rate == Bps(0), "drain appended");
        let rr = o.harness(&o.algs[3]);
        assert_eq!(rr.alg, PolicySpec::Drr, "rr is DRR, as -alg rr");
        assert_eq!(rr.flows.len(), 1);
        let all =
            p("-b 1G --algs fifo,mrr,rr',alpha:10,sf,track:1:100,track-insert:1:100,prio,drr,wf2qp,qfq,qfq+").unwrap().unwrap();
        assert_eq!(all.config.algs, PolicySpec::examples());
        assert!(p("--help").unwrap().is_none());
    }
}
