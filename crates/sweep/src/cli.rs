//! `schedlab sweep SPEC.toml --out FILE` and `schedlab sweep merge PARTS... --out FILE`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Parser;
use schedlab_sim::Control;

use crate::journal::{journal_path, Journal};
use crate::run::{run_local, Progress};
use crate::spec::{parse_shard, CellJob, Sweep};
use crate::table::{col, read_table, write_table, Format, Row, Value};

#[derive(Parser, Debug)]
#[command(
    name = "schedlab sweep",
    about = "Run a grid of simulations from a TOML spec into one tidy table (CSV or Parquet); resumable, shardable",
    after_help = "Examples:\n  schedlab sweep sweeps/report.toml --out report.parquet\n  schedlab sweep spec.toml --out part-3.csv --shard 3/8      # Slurm: --shard $SLURM_ARRAY_TASK_ID/8\n  schedlab sweep merge part-*.csv --out all.parquet\n\nAn interrupted run keeps every finished cell in OUT.journal; the same command again runs only the rest."
)]
pub struct SweepArgs {
    /// The sweep spec (TOML; see sweeps/report.toml)
    spec: PathBuf,
    /// Output table: .parquet or .csv
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
        Ok(SweepCommand::Merge(a)) => merge(&a.parts, &a.out, a.partial).map(|()| 0),
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

fn sweep_main(a: &SweepArgs) -> Result<i32> {
    // Everything is checked before anything runs.
    Format::of(&a.out)?;
    let sweep = Sweep::from_file(&a.spec)?;
    let (si, sn) = a.shard.unwrap_or((1, 1));
    let mine: Vec<CellJob> = sweep.shard(si, sn).into_iter().cloned().collect();
    if a.list {
        for c in &mine {
            println!("{:>6}  {}", c.cell, c.key());
        }
        return Ok(0);
    }
    if mine.is_empty() {
        bail!("--shard {si}/{sn}: this shard has no cells (the sweep has {})", sweep.cells.len());
    }
    let scope = if sn == 1 { sweep.sweep_id.clone() } else { format!("{} shard {si}/{sn}", sweep.sweep_id) };
    let jpath = journal_path(&a.out);
    let mut journal = Journal::open(&jpath, &scope, sweep.cells.len() as u64)?;
    let todo: Vec<CellJob> = mine.iter().filter(|c| !journal.done.contains_key(&c.cell)).cloned().collect();
    let workers = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |x| x.get())).max(1);
    eprintln!(
        "sweep '{}' (id {}): {} cells{}, {} already finished in {}, running {} on {} workers",
        sweep.name,
        sweep.sweep_id,
        mine.len(),
        if sn > 1 { format!(" in shard {si}/{sn} of {}", sweep.cells.len()) } else { String::new() },
        mine.len() - todo.len(),
        jpath.display(),
        todo.len(),
        workers.min(todo.len().max(1))
    );

    // The process's one interrupt flag (SIGINT/SIGTERM); a second signal exits at once.
    let intr = schedlab_report::frontend::interrupt();
    let stop = AtomicBool::new(false);
    let progress = Progress { controls: todo.iter().map(|_| Arc::new(Control::default())).collect(), done: Default::default() };
    let bar = (!a.quiet && std::io::stderr().is_terminal() && !todo.is_empty()).then(|| {
        let total: u64 = todo.iter().map(|c| c.packets).sum();
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {percent:>3}% {msg} [{elapsed_precise} < {eta}]")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        b
    });
    let n_todo = todo.len();
    let res = run_local(
        &todo,
        workers,
        &stop,
        &progress,
        |i, rows| {
            let c = &todo[i];
            journal.append(c.cell, &c.key(), rows)
        },
        || {
            if intr.requested() {
                stop.store(true, Ordering::Relaxed);
            }
            if let Some(b) = &bar {
                let pk: u64 = progress.controls.iter().map(|c| c.progress.load(Ordering::Relaxed)).sum();
                b.set_position(pk);
                b.set_message(format!("{}/{} cells", progress.done.load(Ordering::Relaxed), n_todo));
            }
        },
    );
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    res?;
    let finished = mine.iter().filter(|c| journal.done.contains_key(&c.cell)).count();
    if finished < mine.len() {
        eprintln!(
            "interrupted: {finished} of {} cells finished and kept in {}; run the same command again to finish",
            mine.len(),
            jpath.display()
        );
        return Ok(schedlab_report::frontend::exit::INTERRUPTED);
    }
    let rows: Vec<Row> = mine.iter().flat_map(|c| journal.done[&c.cell].iter().cloned()).collect();
    write_table(&a.out, &rows, &sweep.sweep_id)?;
    eprintln!("wrote {} rows ({} cells) to {}", rows.len(), mine.len(), a.out.display());
    Ok(0)
}

fn text(r: &Row, name: &str) -> String {
    r[col(name)].text()
}

fn int(r: &Row, name: &str) -> i64 {
    match r[col(name)] {
        Value::Int(i) => i,
        _ => -1,
    }
}

/// Merges part tables of one sweep into `out`. Refuses parts of different sweeps or versions, and
/// parts that share a cell; refuses missing cells unless `partial`.
pub fn merge(parts: &[PathBuf], out: &Path, partial: bool) -> Result<()> {
    Format::of(out)?;
    let mut owner: BTreeMap<i64, &Path> = BTreeMap::new();
    let mut by_cell: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    let mut ident: Option<(String, String, i64, PathBuf)> = None;
    for p in parts {
        let rows = read_table(p).with_context(|| format!("reading part {}", p.display()))?;
        let mut cells_here: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
        for r in rows {
            let id = (text(&r, "sweep_id"), text(&r, "schedlab_version"), int(&r, "cells_total"));
            match &ident {
                None => ident = Some((id.0, id.1, id.2, p.clone())),
                Some((s, v, n, first)) => {
                    if (s, v, n) != (&id.0, &id.1, &id.2) {
                        bail!(
                            "{} does not match {}: sweep id {} vs {}, schedlab {} vs {}, {} vs {} cells (parts of different sweeps)",
                            p.display(),
                            first.display(),
                            id.0,
                            s,
                            id.1,
                            v,
                            id.2,
                            n
                        );
                    }
                }
            }
            cells_here.entry(int(&r, "cell")).or_default().push(r);
        }
        for (cell, rows) in cells_here {
            if let Some(prev) = owner.get(&cell) {
                bail!("cell {cell} is in both {} and {}: overlapping parts (same shard twice?)", prev.display(), p.display());
            }
            owner.insert(cell, p);
            by_cell.insert(cell, rows);
        }
    }
    let Some((sweep_id, _, total, _)) = ident else { bail!("the parts hold no rows") };
    let missing: Vec<i64> = (0..total).filter(|c| !by_cell.contains_key(c)).collect();
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(10).map(i64::to_string).collect();
        let msg = format!(
            "{} of {total} cells are missing (cells {}{}): a shard is absent or unfinished",
            missing.len(),
            shown.join(", "),
            if missing.len() > 10 { ", ..." } else { "" }
        );
        if !partial {
            bail!("{msg}; pass --partial to merge anyway");
        }
        eprintln!("warning: {msg}");
    }
    let rows: Vec<Row> = by_cell.into_values().flatten().collect();
    write_table(out, &rows, &sweep_id)?;
    eprintln!("merged {} parts: {} rows, {} cells to {}", parts.len(), rows.len(), owner.len(), out.display());
    Ok(())
}
