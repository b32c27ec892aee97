//! `schedlab sweep SPEC.toml --out FILE` and `schedlab sweep merge PARTS... --out FILE`: the command
//! lines into a [`SweepCommand`] (a [`Config`] and the front end's own switches, or the merge's
//! parts) and nothing else; the flow (progress bar, lines on stderr) is [`crate::app`]'s, the work
//! [`crate::job`]'s.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;

use crate::job::Config;
use crate::spec::parse_shard;

#[derive(Parser, Debug)]
#[command(
    name = "schedlab sweep",
    about = "Run a grid of simulations from a TOML spec into one tidy table (CSV or Parquet); resumable, shardable",
    after_help = "Examples:\n  schedlab sweep sweeps/report.toml --out report.parquet\n  schedlab sweep spec.toml --out part-3.csv --shard 3/8      # Slurm: --shard $SLURM_ARRAY_TASK_ID/8\n  schedlab sweep merge part-*.csv --out all.parquet\n\nAn interrupted run keeps every finished cell in OUT.journal; the same command again runs only the rest."
)]
struct SweepArgs {
    /// The sweep spec (TOML; see sweeps/report.toml)
    spec: PathBuf,
    /// Output table: .parquet, .csv or .jsonl (typed rows, schedlab.sweep-row/1)
    #[arg(long = "out", short = 'o')]
    out: PathBuf,
    /// Run only the I-th of N disjoint slices of the cells (1 <= I <= N)
    #[arg(long = "shard", value_name = "I/N", value_parser = parse_shard)]
    shard: Option<(u32, u32)>,
    /// Cells run in parallel [default: all CPUs]
    #[arg(long = "jobs", short = 'j')]
    jobs: Option<usize>,
    /// List the cells (index and parameters) and exit without running
    #[arg(long = "list")]
    list: bool,
    /// No progress bar
    #[arg(long = "quiet", short = 'q')]
    quiet: bool,
}

#[derive(Parser, Debug)]
#[command(
    name = "schedlab sweep merge",
    about = "Combine shard outputs of one sweep into one table; refuses overlapping or mismatched parts"
)]
struct MergeArgs {
    /// Part tables (.csv or .parquet) written by `schedlab sweep --shard`
    #[arg(required = true)]
    parts: Vec<PathBuf>,
    /// Merged output: .parquet or .csv
    #[arg(long = "out", short = 'o')]
    out: PathBuf,
    /// Accept parts that together lack some cells of the sweep
    #[arg(long = "partial")]
    partial: bool,
}

/// One `sweep` or `sweep merge` command line, parsed: nothing is run, printed or opened.
#[derive(Debug, Clone, PartialEq)]
pub enum SweepCommand {
    /// `schedlab sweep SPEC --out FILE`.
    Run {
        config: Config,
        /// `--list`: list the cells and exit.
        list: bool,
        /// `--quiet`: no progress bar.
        quiet: bool,
    },
    /// `schedlab sweep merge PARTS... --out FILE`.
    Merge { parts: Vec<PathBuf>, out: PathBuf, partial: bool },
}

/// Parses a command line (`args[0]` is the command name). Help, version and usage errors are
/// `Err` holding the `clap::Error`.
pub fn parse_args(args: Vec<OsString>) -> Result<SweepCommand> {
    if args.get(1).is_some_and(|a| a == "merge") {
        let mut rest = args;
        let first = rest.remove(0);
        rest[0] = OsString::from(format!("{} merge", first.to_string_lossy()));
        let m = MergeArgs::try_parse_from(rest)?;
        return Ok(SweepCommand::Merge { parts: m.parts, out: m.out, partial: m.partial });
    }
    let a = SweepArgs::try_parse_from(args)?;
    Ok(SweepCommand::Run {
        config: Config { spec: a.spec, out: a.out, shard: a.shard, jobs: a.jobs },
        list: a.list,
        quiet: a.quiet,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<SweepCommand> {
        parse_args(v.iter().map(OsString::from).collect())
    }

    #[test]
    fn command_lines_become_configs() {
        let c = parse(&["sweep", "s.toml", "--out", "o.csv", "--shard", "3/8", "-j", "2", "--list"]).unwrap();
        let want = Config { spec: "s.toml".into(), out: "o.csv".into(), shard: Some((3, 8)), jobs: Some(2) };
        assert_eq!(c, SweepCommand::Run { config: want, list: true, quiet: false });
        let m = parse(&["sweep", "merge", "a.csv", "b.csv", "--out", "all.parquet", "--partial"]).unwrap();
        assert_eq!(
            m,
            SweepCommand::Merge { parts: vec!["a.csv".into(), "b.csv".into()], out: "all.parquet".into(), partial: true }
        );
        let e = parse(&["sweep", "s.toml", "--out", "o.csv", "--shard", "9/8"]).unwrap_err();
        assert!(e.downcast_ref::<clap::Error>().is_some(), "{e:#}");
        assert!(parse(&["sweep", "merge", "--out", "x.csv"]).is_err(), "merge needs parts");
    }
}
