//! `schedlab sweep` and `schedlab sweep merge` as the binary runs them: the command line through
//! [`crate::cli`] into a [`SweepCommand`], then [`crate::job`]'s `prepare` / `run` / `merge`, with
//! the progress bar and the lines on stderr. Everything is checked before anything runs.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use crate::cli::{parse_args, SweepCommand};
use crate::job::{cells, merge, prepare, progress_for, run, Config, Outcome};

/// Runs `schedlab sweep ...`; `args[0]` is the command name. 0 after help, 2 after a usage error
/// (message printed), the front-end kit's interrupted code after Ctrl-C.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    match parse_args(args) {
        Ok(SweepCommand::Merge { parts, out, partial }) => merge_main(&parts, &out, partial),
        Ok(SweepCommand::Run { config, list, quiet }) => sweep_main(&config, list, quiet),
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

fn merge_main(parts: &[PathBuf], out: &Path, partial: bool) -> Result<i32> {
    let m = merge(parts, out, partial)?;
    if let Some(msg) = &m.missing {
        eprintln!("warning: {msg}");
    }
    eprintln!("merged {} parts: {} rows, {} cells to {}", m.parts, m.rows, m.cells, out.display());
    Ok(0)
}

fn sweep_main(cfg: &Config, list: bool, quiet: bool) -> Result<i32> {
    if list {
        // Everything is checked before anything is listed.
        let (_, mine) = cells(cfg)?;
        for c in &mine {
            println!("{:>6}  {}", c.cell, c.key());
        }
        return Ok(0);
    }
    let mut p = prepare(cfg)?;
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
    let bar = (!quiet && std::io::stderr().is_terminal() && !p.todo.is_empty()).then(|| {
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
    let res = run(cfg, &mut p, &stop, &progress, || {
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
            eprintln!("wrote {rows} rows ({cells} cells) to {}", cfg.out.display());
            Ok(0)
        }
    }
}
