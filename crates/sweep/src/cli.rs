//! `schedlab sweep SPEC.toml --out FILE` and `schedlab sweep merge PARTS... --out FILE`: the command
//! lines into [`Config`] (and the merge's parts), the progress bar, the lines on stderr; the work is
//! [`crate::job`]'s.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use clap::Parser;

use crate::job::{cells, merge, prepare, progress_for, run, Config, Outcome};
use crate::spec::parse_shard;

#[derive(Parser, Debug)]
#[command(
    name = "schedlab sweep",
    about = "Run a grid of simulations from a TOML spec into one tidy table (CSV or Parquet); resumable, shardable",
    after_help = "Examples:\n  schedlab sweep sweeps/report.toml --out report.parquet\n  schedlab sweep spec.toml --out part-3.csv --shard 3/8      # Slurm: --shard $SLURM_ARRAY_TASK_ID/8\n  schedlab sweep merge part-*.csv --out all.parquet\n\nAn interrupted run keeps every finished cell in OUT.journal; the same command again runs only the rest."
)]
pub struct SweepArgs {
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
pub struct MergeArgs {
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

/// Runs `schedlab sweep ...`; `args[0]` is the command name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    match parse_args(args) {
        Ok(SweepCommand::Merge(a)) => merge_main(&a),
        Ok(SweepCommand::Run(a)) => sweep_main(&a),
        Err(e) => match e.downcast_ref::<clap::Error>() {
            Some(c) => {
                let code = if c.use_stderr() { 2 } else { 0 };
                c.print().ok();
                Ok(code)
            }
            None => Err(e),
        },
    }
}

/// One `sweep` or `sweep merge` command line, parsed: nothing is run, printed or opened.
#[derive(Debug)]
pub enum SweepCommand {
    Run(SweepArgs),
    Merge(MergeArgs),
}

/// Parses a command line (`args[0]` is the command name). Help, version and usage errors are
/// `Err` holding the `clap::Error`.
pub fn parse_args(args: Vec<OsString>) -> Result<SweepCommand> {
    if args.get(1).is_some_and(|a| a == "merge") {
        let mut rest = args;
        let first = rest.remove(0);
        rest[0] = OsString::from(format!("{} merge", first.to_string_lossy()));
        return Ok(SweepCommand::Merge(MergeArgs::try_parse_from(rest)?));
    }
    Ok(SweepCommand::Run(SweepArgs::try_parse_from(args)?))
}

/// The library's configuration of a `schedlab sweep` command line.
pub fn config(a: &SweepArgs) -> Config {
    Config { spec: a.spec.clone(), out: a.out.clone(), shard: a.shard, jobs: a.jobs }
}

fn merge_main(a: &MergeArgs) -> Result<i32> {
    let m = merge(&a.parts, &a.out, a.partial)?;
    if let Some(msg) = &m.missing {
        eprintln!("warning: {msg}");
    }
    eprintln!("merged {} parts: {} rows, {} cells to {}", m.parts, m.rows, m.cells, a.out.display());
    Ok(0)
}

fn sweep_main(a: &SweepArgs) -> Result<i32> {
    let cfg = config(a);
    if a.list {
        // Everything is checked before anything is listed.
        let (_, mine) = cells(&cfg)?;
        for c in &mine {
            println!("{:>6}  {}", c.cell, c.key());
        }
        return Ok(0);
    }
    let mut p = prepare(&cfg)?;
    let (si, sn) = p.shard;
    eprintln!(
        "sweep '{}' (id {}): {} cells{}, {} already finished in {}, running {} on {} workers",
        p.sweep.name,
        p.sweep.sweep_id,
        p.mine.len(),
        if sn > 1 { format!(" in shard {si}/{sn} of {}", p.sweep.cells.len()) } else { String::new() },
        p.mine.len() - p.todo.len(),
        p.journal_path.display(),
        p.todo.len(),
        p.workers.min(p.todo.len().max(1))
    );

    // The process's one interrupt flag (SIGINT/SIGTERM); a second signal exits at once.
    let intr = schedlab_report::frontend::interrupt();
    let stop = AtomicBool::new(false);
    let progress = progress_for(&p);
    let bar = (!a.quiet && std::io::stderr().is_terminal() && !p.todo.is_empty()).then(|| {
        let total: u64 = p.todo.iter().map(|c| c.packets).sum();
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {percent:>3}% {msg} [{elapsed_precise} < {eta}]")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        b
    });
    let n_todo = p.todo.len();
    let res = run(&cfg, &mut p, &stop, &progress, || {
        if intr.requested() {
            stop.store(true, Ordering::Relaxed);
        }
        if let Some(b) = &bar {
            let pk: u64 = progress.controls.iter().map(|c| c.progress.load(Ordering::Relaxed)).sum();
            b.set_position(pk);
            b.set_message(format!("{}/{} cells", progress.done.load(Ordering::Relaxed), n_todo));
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    match res? {
        Outcome::Interrupted { finished, cells } => {
            eprintln!(
                "interrupted: {finished} of {cells} cells finished and kept in {}; run the same command again to finish",
                p.journal_path.display()
            );
            Ok(schedlab_report::frontend::exit::INTERRUPTED)
        }
        Outcome::Written { rows, cells } => {
            eprintln!("wrote {rows} rows ({cells} cells) to {}", a.out.display());
            Ok(0)
        }
    }
}
