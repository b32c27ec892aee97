//! One sweep as a library call: a [`Config`] (plain data, built by [`crate::cli`] from the command
//! line or by code), [`prepare`] (the spec, the shard, the journal: everything checked before
//! anything runs), [`run`] (the cells not yet in the journal, on every core, then the table), and
//! [`merge`] (shard outputs into one table). The rows are the tidy table's ([`crate::table`]); each
//! is the typed result kind `schedlab.sweep-row/1` through [`crate::table::typed`]. Every failure
//! is a [`JobError`] that names the file (spec, table, journal, part) or the cells concerned.
//!
//! The errors are typed all the way down ([`SpecError`], [`TableError`], [`JournalError`],
//! [`CellError`]); an I/O, Parquet or JSON error under them is their `source`, so the whole
//! message is the chain (`{:#}` through `anyhow`, as the binary prints it, or a walk of
//! [`std::error::Error::source`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use schedlab_sim::Control;

use crate::journal::{journal_path, Journal, JournalError};
use crate::run::{run_local, CellError, Progress};
use crate::spec::{CellJob, SpecError, Sweep};
use crate::table::{col, read_table, write_table, Format, Row, TableError, Value};

/// Why a sweep, or a merge, stopped. The variant says which stage failed; the typed error of the
/// layer below (table, journal, cell) names the file, line, field or cell concerned.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The spec was refused (its message names the file and the key).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The output table's name is refused (its extension picks the format):
    /// [`TableError::Extension`].
    #[error(transparent)]
    OutputFormat(TableError),
    /// `--shard I/N` selects no cell of the sweep.
    #[error("--shard {index}/{count}: this shard has no cells (the sweep has {cells})")]
    EmptyShard { index: u32, count: u32, cells: usize },
    /// The journal could not be opened, read or appended to, or belongs to another sweep.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A cell failed to run.
    #[error(transparent)]
    Cell(#[from] CellError),
    /// The table could not be written.
    #[error(transparent)]
    WriteTable(TableError),
    /// A part of a merge could not be read.
    #[error("reading part {}", path.display())]
    ReadPart { path: PathBuf, source: TableError },
    /// Two parts of a merge come from different sweeps (or schedlab versions).
    #[error(
        "{} does not match {}: sweep id {} vs {}, schedlab {} vs {}, {} vs {} cells (parts of different sweeps)",
        .0.part.display(), .0.first.display(), .0.sweep_id.0, .0.sweep_id.1, .0.version.0, .0.version.1,
        .0.cells_total.0, .0.cells_total.1
    )]
    MismatchedParts(Box<PartMismatch>),
    /// Two parts hold the same cell.
    #[error("cell {cell} is in both {} and {}: overlapping parts (same shard twice?)", first.display(), second.display())]
    OverlappingParts { cell: i64, first: PathBuf, second: PathBuf },
    /// The parts hold no row at all.
    #[error("the parts hold no rows")]
    NoRows,
    /// Cells of the sweep are in no part (and the merge was not `partial`).
    #[error("{}; pass --partial to merge anyway", missing_cells(*missing, cells_total, first))]
    MissingCells { missing: usize, cells_total: i64, first: Vec<i64> },
}

/// `N of M cells are missing (cells a, b, ...)`: at most the first ten are named.
fn missing_cells(missing: usize, total: &i64, first: &[i64]) -> String {
    let shown: Vec<String> = first.iter().take(10).map(i64::to_string).collect();
    format!(
        "{missing} of {total} cells are missing (cells {}{}): a shard is absent or unfinished",
        shown.join(", "),
        if missing > 10 { ", ..." } else { "" }
    )
}

/// Two parts of one merge that differ in what identifies their sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct PartMismatch {
    pub part: PathBuf,
    pub first: PathBuf,
    /// (this part's, the first part's).
    pub sweep_id: (String, String),
    pub version: (String, String),
    pub cells_total: (i64, i64),
}

type Result<T, E = JobError> = std::result::Result<T, E>;

/// One sweep run: the spec, the output table, the shard and the workers.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The sweep spec (TOML).
    pub spec: PathBuf,
    /// The output table: `.csv`, `.parquet` or `.jsonl` (its journal is `OUT.journal`).
    pub out: PathBuf,
    /// Run only the I-th of N disjoint slices of the cells (`None`: all of them).
    pub shard: Option<(u32, u32)>,
    /// Cells run in parallel (`None`: every CPU).
    pub jobs: Option<usize>,
}

/// A sweep ready to run: the spec read, this shard's cells, those the journal does not hold yet.
pub struct Prepared {
    pub sweep: Sweep,
    /// (I, N) of the shard run ((1, 1): all cells).
    pub shard: (u32, u32),
    /// This shard's cells.
    pub mine: Vec<CellJob>,
    /// Those still to run.
    pub todo: Vec<CellJob>,
    pub journal: Journal,
    pub journal_path: PathBuf,
    /// Worker threads that will run.
    pub workers: usize,
}

/// Reads the spec and picks this shard's cells, without opening the journal (`--list`).
pub fn cells(cfg: &Config) -> Result<(Sweep, Vec<CellJob>)> {
    Format::of(&cfg.out).map_err(JobError::OutputFormat)?;
    let sweep = Sweep::from_file(&cfg.spec)?;
    let (si, sn) = cfg.shard.unwrap_or((1, 1));
    let mine: Vec<CellJob> = sweep.shard(si, sn).into_iter().cloned().collect();
    Ok((sweep, mine))
}

/// Checks everything before anything runs and opens (or resumes) the journal.
pub fn prepare(cfg: &Config) -> Result<Prepared> {
    let (sweep, mine) = cells(cfg)?;
    let (si, sn) = cfg.shard.unwrap_or((1, 1));
    if mine.is_empty() {
        return Err(JobError::EmptyShard { index: si, count: sn, cells: sweep.cells.len() });
    }
    let scope = if sn == 1 { sweep.sweep_id.clone() } else { format!("{} shard {si}/{sn}", sweep.sweep_id) };
    let jpath = journal_path(&cfg.out);
    let journal = Journal::open(&jpath, &scope, sweep.cells.len() as u64)?;
    let todo: Vec<CellJob> = mine.iter().filter(|c| !journal.done.contains_key(&c.cell)).cloned().collect();
    let workers = cfg.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |x| x.get())).max(1);
    Ok(Prepared { sweep, shard: (si, sn), mine, todo, journal, journal_path: jpath, workers })
}

/// How a sweep ended.
#[derive(Debug)]
pub enum Outcome {
    /// Every cell of the shard finished; the table holds `rows` rows of `cells` cells.
    Written { rows: usize, cells: usize },
    /// Stopped early: `finished` of `cells` cells are kept in the journal; the same run again
    /// runs only the rest.
    Interrupted { finished: usize, cells: usize },
}

/// Runs the cells still to run (each finished cell goes to the journal at once), then writes the
/// table. `progress` holds one control per cell of `p.todo` ([`progress_for`]); `tick` is called
/// about every 100 ms while cells run (the command polls its interrupt and draws its bar there;
/// setting `stop` ends the run early).
pub fn run(cfg: &Config, p: &mut Prepared, stop: &AtomicBool, progress: &Progress, tick: impl FnMut()) -> Result<Outcome> {
    let todo = &p.todo;
    let journal = &mut p.journal;
    run_local(
        todo,
        p.workers,
        stop,
        progress,
        |i, rows| {
            let c = &todo[i];
            journal.append(c.cell, &c.key(), rows).map_err(JobError::Journal)
        },
        tick,
    )?;
    let finished = p.mine.iter().filter(|c| p.journal.done.contains_key(&c.cell)).count();
    if finished < p.mine.len() {
        return Ok(Outcome::Interrupted { finished, cells: p.mine.len() });
    }
    let rows: Vec<Row> = p.mine.iter().flat_map(|c| p.journal.done[&c.cell].iter().cloned()).collect();
    write_table(&cfg.out, &rows, &p.sweep.sweep_id).map_err(JobError::WriteTable)?;
    Ok(Outcome::Written { rows: rows.len(), cells: p.mine.len() })
}

/// One progress control per cell still to run.
pub fn progress_for(p: &Prepared) -> Progress {
    Progress { controls: p.todo.iter().map(|_| Arc::new(Control::default())).collect(), done: Default::default() }
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

/// What [`merge`] wrote.
#[derive(Debug)]
pub struct Merged {
    pub parts: usize,
    pub rows: usize,
    pub cells: usize,
    /// Cells missing from a `partial` merge, said in words.
    pub missing: Option<String>,
}

/// Merges part tables of one sweep into `out`. Refuses parts of different sweeps or versions, and
/// parts that share a cell; refuses missing cells unless `partial`.
pub fn merge(parts: &[PathBuf], out: &Path, partial: bool) -> Result<Merged> {
    Format::of(out).map_err(JobError::OutputFormat)?;
    let mut owner: BTreeMap<i64, &Path> = BTreeMap::new();
    let mut by_cell: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    let mut ident: Option<(String, String, i64, PathBuf)> = None;
    for p in parts {
        let rows = read_table(p).map_err(|source| JobError::ReadPart { path: p.clone(), source })?;
        let mut cells_here: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
        for r in rows {
            let id = (text(&r, "sweep_id"), text(&r, "schedlab_version"), int(&r, "cells_total"));
            match &ident {
                None => ident = Some((id.0, id.1, id.2, p.clone())),
                Some((s, v, n, first)) => {
                    if (s, v, n) != (&id.0, &id.1, &id.2) {
                        return Err(JobError::MismatchedParts(Box::new(PartMismatch {
                            part: p.clone(),
                            first: first.clone(),
                            sweep_id: (id.0, s.clone()),
                            version: (id.1, v.clone()),
                            cells_total: (id.2, *n),
                        })));
                    }
                }
            }
            cells_here.entry(int(&r, "cell")).or_default().push(r);
        }
        for (cell, rows) in cells_here {
            if let Some(prev) = owner.get(&cell) {
                return Err(JobError::OverlappingParts { cell, first: prev.to_path_buf(), second: p.clone() });
            }
            owner.insert(cell, p);
            by_cell.insert(cell, rows);
        }
    }
    let Some((sweep_id, _, total, _)) = ident else { return Err(JobError::NoRows) };
    let missing: Vec<i64> = (0..total).filter(|c| !by_cell.contains_key(c)).collect();
    let mut said = None;
    if !missing.is_empty() {
        if !partial {
            return Err(JobError::MissingCells {
                missing: missing.len(),
                cells_total: total,
                first: missing.into_iter().take(10).collect(),
            });
        }
        said = Some(missing_cells(missing.len(), &total, &missing));
    }
    let rows: Vec<Row> = by_cell.into_values().flatten().collect();
    write_table(out, &rows, &sweep_id).map_err(JobError::WriteTable)?;
    Ok(Merged { parts: parts.len(), rows: rows.len(), cells: owner.len(), missing: said })
}

#[cfg(test)]
mod tests {
    use schedlab_report::export::csv_line;

    use super::*;
    use crate::table::{header, COLUMNS};

    /// The message as the binary prints it: the error and its sources, joined by ": ".
    fn chain(e: JobError) -> String {
        format!("{:#}", anyhow::Error::from(e))
    }

    #[test]
    fn an_unknown_output_extension_is_refused_before_the_spec_is_read() {
        let cfg = Config { spec: "no-such-spec.toml".into(), out: "o.txt".into(), shard: None, jobs: None };
        let e = cells(&cfg).err().unwrap();
        assert!(matches!(&e, JobError::OutputFormat(TableError::Extension { path }) if path == Path::new("o.txt")), "{e:?}");
        assert_eq!(chain(e), "o.txt: the output's extension must be .csv or .parquet (or .jsonl: typed rows as JSON lines)");
        let e = merge(&["a.csv".into()], Path::new("all.xlsx"), false).unwrap_err();
        assert!(matches!(e, JobError::OutputFormat(TableError::Extension { .. })), "{e:?}");
    }

    #[test]
    fn a_part_with_a_bad_field_names_the_part_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("part1.csv");
        let row: Vec<String> =
            COLUMNS.iter().map(|(n, _)| if *n == "cells_total" { "many".into() } else { "1".into() }).collect();
        std::fs::write(&p, format!("{}\n{}\n", csv_line(&header()), csv_line(&row))).unwrap();
        let e = merge(std::slice::from_ref(&p), &dir.path().join("all.csv"), false).unwrap_err();
        match &e {
            JobError::ReadPart { path, source: TableError::Field { line: 2, field: "cells_total", .. } } => assert_eq!(path, &p),
            other => panic!("not ReadPart(Field): {other:?}"),
        }
        assert_eq!(e.to_string(), format!("reading part {}", p.display()));
        assert_eq!(chain(e), format!("reading part {0}: {0}:2: field 'cells_total': 'many' is not an integer", p.display()));
    }

    #[test]
    fn a_journal_of_another_sweep_stops_prepare() {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("s.toml");
        std::fs::write(&spec, "traffic = [50, 90]\npackets = 1000\n").unwrap();
        let out = dir.path().join("o.csv");
        let cfg = Config { spec: spec.clone(), out: out.clone(), shard: None, jobs: Some(1) };
        let p = prepare(&cfg).unwrap();
        let id = p.sweep.sweep_id.clone();
        drop(p);
        let shard = Config { shard: Some((1, 2)), ..cfg };
        let e = prepare(&shard).err().unwrap();
        match &e {
            JobError::Journal(JournalError::OtherSweep { path, found, expected }) => {
                assert_eq!(path, &journal_path(&out));
                assert_eq!((found.clone(), expected.clone()), (id.clone(), format!("{id} shard 1/2")));
            }
            other => panic!("not Journal(OtherSweep): {other:?}"),
        }
        assert!(chain(e).contains("belongs to another sweep"));
    }
}
