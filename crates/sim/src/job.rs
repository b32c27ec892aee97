//! `schedlab sim` as a library call: a [`Config`] (plain data: the traffic levels' configurations,
//! replications, statistics options; built by [`crate::cli`] from the command line or by code),
//! [`run`] (every level and replication on the cores, then the statistics) returning
//! [`SimResults`], and their writers: [`text`] (the report's tables), [`result`] (the typed
//! `schedlab.sim/1` result `--json` writes), [`write_csv`]
//! and the figures ([`crate::plot::write_figures`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use schedlab_report::export::Csv;
use schedlab_report::results::sim::{self as results, SimSchema};
use schedlab_report::MachineInfo;

use crate::engine::{run_threads, Arrivals, Control, RunResult, SimConfig};
use crate::model::Service;
use crate::output::{classic_lines, csv_rows, extra_tables, raw_table, thousands, workload_line, CSV_HEADER};
use crate::replicate::{merge, replications};
use crate::stats::{analyse, LevelStats, Options};

/// One `sim` run: one configuration per traffic level, each replicated.
#[derive(Clone, Debug)]
pub struct Config {
    /// One configuration per traffic level (the first replication's seed).
    pub levels: Vec<SimConfig>,
    /// Independent replications per level (seeds `seed`, `seed + 1`, ...; at least 1).
    pub replications: u32,
    /// What the statistics are asked for (warm-up, comparison base).
    pub stats: Options,
    /// Threads (`None`: every CPU). Threads beyond one per job replay lanes in parallel.
    pub threads: Option<usize>,
}

/// Everything one `sim` run produced.
#[derive(Debug)]
pub struct SimResults {
    /// The levels' configurations.
    pub levels: Vec<SimConfig>,
    /// Replications per level.
    pub replications: usize,
    /// One per (level, replication), level-major.
    pub results: Vec<RunResult>,
    /// Per level: the replications' means (empty without replications).
    pub merged: Vec<RunResult>,
    /// Per level: the statistics (confidence intervals, comparison, warnings).
    pub stats: Vec<LevelStats>,
    /// A run was stopped (Ctrl-C): its figures cover what ran.
    pub interrupted: bool,
}

impl SimResults {
    /// The runs the report's tables show: per level, the one run or the replications' means.
    pub fn shown(&self) -> &[RunResult] {
        if self.replications > 1 {
            &self.merged
        } else {
            &self.results
        }
    }
    /// The replications of level `k`.
    pub fn group(&self, k: usize) -> &[RunResult] {
        &self.results[k * self.replications..(k + 1) * self.replications]
    }
    /// Every level's warnings.
    pub fn warnings(&self) -> Vec<String> {
        self.stats.iter().flat_map(|s| s.warnings.iter().cloned()).collect()
    }
}

/// One control per job (level × replication), for [`run_with`]: raising a control's `stop` ends
/// its run early; its `progress` counts arrival packets.
pub fn controls(cfg: &Config) -> Vec<Arc<Control>> {
    (0..cfg.levels.len() * cfg.replications.max(1) as usize).map(|_| Arc::new(Control::default())).collect()
}

/// The jobs of a run: one configuration per (level, replication), level-major.
pub fn jobs(cfg: &Config) -> Vec<SimConfig> {
    cfg.levels.iter().flat_map(|c| replications(c, cfg.replications.max(1))).collect()
}

/// Runs every job without progress output and without an interrupt.
pub fn run(cfg: &Config) -> SimResults {
    run_with(cfg, &controls(cfg), |_, _, _| {})
}

/// Runs every job on the cores; `watch` runs on the calling thread meanwhile with the jobs, their
/// controls and the count of finished jobs (the command draws its progress bars there).
pub fn run_with(
    cfg: &Config,
    controls: &[Arc<Control>],
    watch: impl FnOnce(&[SimConfig], &[Arc<Control>], &AtomicUsize),
) -> SimResults {
    let nrep = cfg.replications.max(1) as usize;
    let configs = jobs(cfg);
    let n = configs.len();
    let all_threads = cfg.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |x| x.get()));
    let threads = all_threads.clamp(1, n.max(1));
    // The threads left over when there are fewer levels than threads replay lanes in parallel.
    let lane_threads = (all_threads / threads).max(1);
    let mut results: Vec<Option<RunResult>> = vec![None; n];
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for _ in 0..threads {
            handles.push(s.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    mine.push((i, run_threads(&configs[i], &controls[i], lane_threads)));
                    done.fetch_add(1, Ordering::Relaxed);
                }
                mine
            }));
        }
        watch(&configs, controls, &done);
        for h in handles {
            for (i, r) in h.join().expect("simulation worker panicked") {
                results[i] = Some(r);
            }
        }
    });
    let results: Vec<RunResult> = results.into_iter().map(|r| r.expect("every level ran")).collect();
    let interrupted = results.iter().any(|r| r.interrupted);
    let stats: Vec<LevelStats> = cfg.levels.iter().zip(results.chunks(nrep)).map(|(c, g)| analyse(c, g, &cfg.stats)).collect();
    // With replications the report's tables show the means over them.
    let merged: Vec<RunResult> = if nrep > 1 { results.chunks(nrep).map(merge).collect() } else { Vec::new() };
    SimResults { levels: cfg.levels.clone(), replications: nrep, results, merged, stats, interrupted }
}

/// How the tables are shown.
#[derive(Clone, Debug, Default)]
pub struct Show {
    /// Only the main table per level.
    pub brief: bool,
    /// Also the batch-means diagnostics.
    pub verbose: bool,
    /// The listing's `>>` lines.
    pub classic: bool,
    /// The trace file the arrivals came from (`--trace`), for the header.
    pub trace: Option<PathBuf>,
    /// `--time-unit` as given, for the header.
    pub time_unit: Option<String>,
}

/// The report's tables, as `schedlab sim` prints them.
pub fn text(r: &SimResults, show: &Show) -> String {
    let levels = &r.levels;
    let nrep = r.replications;
    let seed = levels[0].seed;
    let batches = levels[0].batches;
    let mut out = String::new();
    let seeds = if nrep > 1 {
        format!("seeds {}..{} ({nrep} independent replications)", seed, seed.wrapping_add(nrep as u64 - 1))
    } else {
        format!("seed {seed}")
    };
    let volume = match (&show.trace, &levels[0].arrivals) {
        (Some(p), Arrivals::Trace(tr)) => format!(
            "trace {}: {} messages, {} packets over {} time units, measured load {}% (run until all delivered)",
            p.display(),
            thousands(tr.len() as u64),
            thousands(tr.iter().map(|x| u64::from(x.len)).sum()),
            crate::output::fmt_g((tr.last().map_or(0.0, |x| x.time) * 100.0).round() / 100.0),
            crate::output::fmt_g((levels[0].traffic * 1000.0).round() / 1000.0)
        ),
        _ => format!(
            "{} arrival packets per level{}",
            thousands(levels[0].packets),
            if nrep > 1 { " and replication" } else { "" }
        ),
    };
    out.push_str(&format!(
        "# schedlab sim: {seeds}, {volume}; time unit = mean packet service time{}{}\n",
        match &show.time_unit {
            Some(u) => format!(" = {u} of trace time"),
            None => String::new(),
        },
        match levels[0].service {
            Service::Report => String::new(),
            s => format!("; service {}", s.name()),
        },
    ));
    if let Some(w) = &levels[0].dist.workload {
        out.push_str(&format!("# {}\n", workload_line(w)));
    }
    for (k, run) in r.shown().iter().enumerate() {
        out.push('\n');
        if nrep > 1 {
            out.push_str(&format!(
                "Means over {nrep} replications (seeds {}..{}; packets = their total; ±: Student t across replications):\n",
                seed,
                seed.wrapping_add(nrep as u64 - 1)
            ));
        }
        out.push_str(&raw_table(run));
        out.push_str(&crate::questions::closed_loop_table(run));
        if !show.brief {
            let extra = extra_tables(run, batches);
            if nrep > 1 {
                let from = format!("(batch means, {batches} batches)");
                out.push_str(&extra.replace(&from, &format!("(Student t across {nrep} replications, {} df)", nrep - 1)));
            } else {
                out.push_str(&extra);
            }
        }
        if nrep > 1 {
            for rep in r.group(k) {
                out.push_str(&format!("\nReplication seed {}:\n", rep.seed));
                out.push_str(&raw_table(rep));
                if show.classic {
                    out.push_str(&classic_lines(rep));
                }
            }
        }
        out.push_str(&r.stats[k].text(show.brief, show.verbose));
        if show.classic && nrep == 1 {
            out.push_str(&classic_lines(run));
        }
    }
    out
}

/// What a `sim` result could not be turned into or written as.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A run's or a level's figures do not fit the `schedlab.sim` type (a field the engine or
    /// the statistics write that the result type does not have, or one it lacks).
    #[error("level {level}: the {what} do not fit the {tag} result type: {source}", tag = SimSchema::TAG)]
    Result { level: usize, what: &'static str, source: serde_json::Error },
    /// The CSV table could not be written.
    #[error("{path}: cannot write the CSV table: {why}")]
    Csv { path: PathBuf, why: String },
}

/// Converts one of the engine's or the statistics' values to its result type through its serde
/// form (the two are written by different crates' types; a field one has and the other lacks
/// fails here, by name).
fn typed<T: serde::de::DeserializeOwned>(x: &impl serde::Serialize, level: usize, what: &'static str) -> Result<T, JobError> {
    let v = serde_json::to_value(x).map_err(|source| JobError::Result { level, what, source })?;
    serde_json::from_value(v).map_err(|source| JobError::Result { level, what, source })
}

fn typed_runs(runs: &[&RunResult]) -> Result<Vec<results::Run>, JobError> {
    runs.iter().enumerate().map(|(k, r)| typed(*r, k, "run's figures")).collect()
}

/// The typed result `schedlab sim --json` writes (`schedlab.sim/1`); `argv` is the command line
/// recorded in it.
pub fn result(r: &SimResults, argv: Vec<String>, machine: MachineInfo) -> Result<results::Sim, JobError> {
    let levels = &r.levels;
    let seed = levels[0].seed;
    let nrep = r.replications;
    let replications = if nrep > 1 {
        let reps = (0..nrep).map(|i| {
            let runs: Vec<&RunResult> = (0..levels.len()).map(|k| &r.group(k)[i]).collect();
            Ok(results::Replication { seed: seed.wrapping_add(i as u64), runs: typed_runs(&runs)? })
        });
        Some(reps.collect::<Result<Vec<_>, JobError>>()?)
    } else {
        None
    };
    Ok(results::Sim {
        schema: SimSchema,
        command: "sim".into(),
        argv,
        seed,
        time_unit: results::TIME_UNIT.into(),
        service: levels[0].service.name().into(),
        machine,
        length_distribution: typed(&levels[0].dist, 0, "length distribution")?,
        runs: typed_runs(&r.shown().iter().collect::<Vec<_>>())?,
        statistics: r.stats.iter().enumerate().map(|(k, s)| typed(s, k, "statistics")).collect::<Result<_, _>>()?,
        warnings: r.warnings(),
        replications,
    })
}

/// Writes the per-length table as CSV (`-`: stdout): every run's rows, then with replications the
/// means (seed column `mean`, ci95 across replications).
pub fn write_csv(r: &SimResults, path: &Path) -> Result<(), JobError> {
    let err = |e: anyhow::Error| JobError::Csv { path: path.to_path_buf(), why: format!("{e:#}") };
    let mut c = Csv::create(path, &CSV_HEADER).map_err(err)?;
    for run in &r.results {
        for row in csv_rows(run) {
            c.row(&row).map_err(err)?;
        }
    }
    for run in &r.merged {
        for mut row in csv_rows(run) {
            row[1] = "mean".into();
            c.row(&row).map_err(err)?;
        }
    }
    c.finish().map_err(err)?;
    Ok(())
}
