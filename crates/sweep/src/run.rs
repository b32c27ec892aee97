//! Running cells: one cell -> rows ([`run_cell`], the entry point the local pool, Python and Ray
//! all call), and the local pool over every core ([`run_local`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use schedlab_sim::model::{parse_strategy, AlphaClass, ModelError};
use schedlab_sim::{run, Arrivals, Control, LengthDist, SimConfig};

use crate::spec::CellJob;
use crate::table::{Row, Value};

/// Why a cell could not run. A spec read by [`crate::spec`] has been checked already, so these
/// come from cells made by hand (the Python package and Ray take cells as JSON).
#[derive(Debug, thiserror::Error)]
pub enum CellError {
    /// A strategy the simulator does not know (the message is the simulator's own).
    #[error("{error}")]
    Strategy { cell: u64, strategy: String, error: ModelError },
    /// The length distribution is refused.
    #[error("cell {cell}: lengths: {msg}")]
    Lengths { cell: u64, msg: String },
    /// A service model other than `report`.
    #[error("cell {cell}: unknown service model '{service}'")]
    Service { cell: u64, service: String },
}

/// The simulator configuration of a cell.
pub fn sim_config(job: &CellJob) -> Result<SimConfig, CellError> {
    let strategies = job
        .strategies
        .iter()
        .map(|s| parse_strategy(s).map_err(|error| CellError::Strategy { cell: job.cell, strategy: s.clone(), error }))
        .collect::<Result<Vec<_>, _>>()?;
    let dist = job.lengths.to_length_dist().map_err(|msg| CellError::Lengths { cell: job.cell, msg })?;
    let o = &job.options;
    Ok(SimConfig {
        traffic: job.traffic_pct,
        strategies,
        dist,
        queue_delay: o.queue_delay_tu,
        packets: job.packets,
        seed: job.seed,
        apps: o.apps,
        in_order: o.in_order,
        msg_alpha: o.msg_alpha.iter().map(|&(alpha, pct)| AlphaClass { alpha, frac: pct / 100.0 }).collect(),
        arrivals: if o.closed > 0 { Arrivals::Closed { apps: o.closed } } else { Arrivals::Poisson },
        batches: o.batches,
        checkpoints: false,
        service: schedlab_sim::model::Service::Report,
        weights: Vec::new(),
    })
}

/// The `workload_*` columns of a cell's rows: the named workload its lengths were drawn from (its
/// reading, bytes per packet, checksum, source and commit, as `schedlab sim --json` records them),
/// or empty values (null bytes per packet) for lengths that are no workload.
fn workload_values(d: &LengthDist) -> [Value; 5] {
    match &d.workload {
        Some(w) => [
            Value::Str(w.reading.clone()),
            w.bytes_per_packet.map_or(Value::Null, |b| Value::Int(i64::from(b))),
            Value::Str(w.checksum.clone()),
            Value::Str(w.source.clone()),
            Value::Str(w.commit.clone()),
        ],
        None => [
            Value::Str(String::new()),
            Value::Null,
            Value::Str(String::new()),
            Value::Str(String::new()),
            Value::Str(String::new()),
        ],
    }
}

/// Runs one cell. `None` when it was stopped through `ctl` (an unfinished cell has no rows).
pub fn run_cell(job: &CellJob, ctl: &Control) -> Result<Option<Vec<Row>>, CellError> {
    if job.service != "report" {
        return Err(CellError::Service { cell: job.cell, service: job.service.clone() });
    }
    let cfg = sim_config(job)?;
    let r = run(&cfg, ctl);
    if r.interrupted || ctl.stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let mean_len = cfg.dist.mean();
    let workload = workload_values(&cfg.dist);
    let o = &job.options;
    let mut rows = Vec::new();
    for st in &r.strategies {
        for l in st.by_len.iter().chain(std::iter::once(&st.overall)) {
            let len = if l.len == 0 { mean_len } else { f64::from(l.len) };
            // The columns in table order: the cell's, the workload's, then the strategy's.
            let mut row = vec![
                Value::Str(job.sweep_id.clone()),
                Value::Int(job.cell as i64),
                Value::Int(job.cells_total as i64),
                Value::f(job.traffic_pct),
                Value::Str(job.lengths.name.clone()),
                Value::f(mean_len),
            ];
            row.extend(workload.iter().cloned());
            row.extend([
                Value::Str(job.service.clone()),
                Value::Int(job.packets as i64),
                Value::Int(job.seed as i64),
                Value::Int(i64::from(job.replication)),
                Value::f(o.queue_delay_tu),
                Value::Int(i64::from(o.batches)),
                Value::Int(i64::from(o.apps)),
                Value::Int(i64::from(o.closed)),
                Value::Bool(o.in_order),
                Value::Str(st.label.clone()),
                Value::f(st.listing_alpha),
                Value::Int(i64::from(l.len)),
                Value::Int(l.count as i64),
                Value::f(l.mean_tu),
                Value::f(l.ci95_tu),
                Value::f(l.p50_tu),
                Value::f(l.p99_tu),
                Value::f(l.max_tu),
                // §12 effective packet period: (latency + 1) / length (the mean length for all
                // messages); per size bucket, the bucket's mean slowdown, which is the same
                // quantity averaged over its messages.
                Value::f(if l.bucket.is_some() { l.slowdown_mean } else { (l.mean_tu + 1.0) / len }),
                Value::f(st.qlen_pkts),
                Value::f(st.qlen_ci95_pkts),
                Value::Int(st.packets_in as i64),
                Value::Int(st.packets_out as i64),
                Value::f(st.sim_time_tu),
                Value::Str(crate::VERSION.into()),
            ]);
            rows.push(row);
        }
    }
    Ok(Some(rows))
}

/// Live state of a local run, for progress displays.
#[derive(Debug, Default)]
pub struct Progress {
    /// One control per cell of the run (index = position in the `jobs` slice).
    pub controls: Vec<Arc<Control>>,
    pub done: AtomicUsize,
}

/// Runs `jobs` on `workers` threads; `on_done(job index, rows)` is called on the calling thread as
/// each cell finishes, in completion order. Stops early (returning what finished) when `stop` is
/// set; `tick` runs on the calling thread about every 100 ms (progress bars, signal checks). The
/// first error, of a cell ([`CellError`], into `E`) or of `on_done`, stops the run and is returned.
pub fn run_local<E: From<CellError>>(
    jobs: &[CellJob],
    workers: usize,
    stop: &AtomicBool,
    progress: &Progress,
    mut on_done: impl FnMut(usize, Vec<Row>) -> Result<(), E>,
    mut tick: impl FnMut(),
) -> Result<(), E> {
    assert_eq!(progress.controls.len(), jobs.len(), "one control per job");
    let next = AtomicUsize::new(0);
    let workers = workers.clamp(1, jobs.len().max(1));
    let (tx, rx) = mpsc::channel::<(usize, Result<Option<Vec<Row>>, CellError>)>();
    std::thread::scope(|s| {
        for _ in 0..workers {
            let tx = tx.clone();
            let next = &next;
            s.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() {
                    break;
                }
                let r = run_cell(&jobs[i], &progress.controls[i]);
                if tx.send((i, r)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut first_err: Option<E> = None;
        loop {
            // Forward a stop request to the running cells.
            if stop.load(Ordering::Relaxed) {
                for c in &progress.controls {
                    c.stop.store(true, Ordering::Relaxed);
                }
            }
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok((i, Ok(Some(rows)))) => {
                    progress.done.fetch_add(1, Ordering::Relaxed);
                    if first_err.is_none() {
                        if let Err(e) = on_done(i, rows) {
                            stop.store(true, Ordering::Relaxed);
                            first_err = Some(e);
                        }
                    }
                }
                Ok((_, Ok(None))) => {}
                Ok((_, Err(e))) => {
                    stop.store(true, Ordering::Relaxed);
                    first_err.get_or_insert(E::from(e));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            tick();
        }
        first_err.map_or(Ok(()), Err)
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::spec::Sweep;

    fn cell() -> CellJob {
        let s = Sweep::parse("traffic = [50]\npackets = 2000\nstrategies = [\"RR\", 10]\n", "s.toml", Path::new(".")).unwrap();
        s.cells[0].clone()
    }

    #[test]
    fn cells_made_by_hand_are_refused_by_their_variant() {
        let ctl = Control::default();
        let mut c = cell();
        c.service = "exact".into();
        let e = run_cell(&c, &ctl).unwrap_err();
        assert!(matches!(&e, CellError::Service { cell: 0, service } if service == "exact"), "{e:?}");
        assert_eq!(e.to_string(), "cell 0: unknown service model 'exact'");
        let mut c = cell();
        c.strategies.push("warp".into());
        let e = run_cell(&c, &ctl).unwrap_err();
        let want = parse_strategy("warp").unwrap_err();
        assert_eq!(e.to_string(), want.to_string(), "the simulator's own message");
        assert!(matches!(e, CellError::Strategy { cell: 0, strategy, error } if strategy == "warp" && error == want));
        let mut c = cell();
        c.lengths.workload = None;
        c.lengths.ranges = vec![(5, 2, 100.0)];
        let e = run_cell(&c, &ctl).unwrap_err();
        assert!(matches!(&e, CellError::Lengths { cell: 0, .. }), "{e:?}");
        assert!(e.to_string().starts_with("cell 0: lengths: length range 5..2"), "{e}");
    }

    #[test]
    fn the_pool_returns_the_first_error_typed() {
        let mut bad = cell();
        bad.service = "exact".into();
        let jobs = vec![cell(), bad];
        let progress =
            Progress { controls: jobs.iter().map(|_| Arc::new(Control::default())).collect(), done: Default::default() };
        let stop = AtomicBool::new(false);
        let mut finished = Vec::new();
        let r: Result<(), CellError> = run_local(
            &jobs,
            1,
            &stop,
            &progress,
            |i, _| {
                finished.push(i);
                Ok(())
            },
            || {},
        );
        assert!(matches!(r, Err(CellError::Service { cell: 0, .. })), "{r:?}");
        assert_eq!(finished, [0], "the good cell finished before the bad one stopped the run");
    }

    /// Rows of a named workload record what `sim --json` records of it (reading, bytes per packet,
    /// checksum, source, commit); rows of other lengths leave those columns empty.
    #[test]
    fn rows_record_the_workload_they_were_drawn_from() {
        use crate::table::{col, row_fits};
        let s = Sweep::parse(
            "traffic = [50]\npackets = 3000\nstrategies = [\"RR\"]\nlengths = [\"w3:interp:1442\", \"report\", \"w5\"]\n",
            "s.toml",
            Path::new("."),
        )
        .unwrap();
        let ctl = Control::default();
        let w = LengthDist::workload("w3", Some("interp"), Some(1442)).unwrap().workload.unwrap();
        assert!(w.checksum.starts_with("fnv1a64:") && !w.source.is_empty() && !w.commit.is_empty(), "{w:?}");
        let rows = run_cell(&s.cells[0], &ctl).unwrap().unwrap();
        assert!(rows.len() > 1);
        for r in &rows {
            assert!(row_fits(r), "{r:?}");
            assert_eq!(r[col("lengths")], Value::Str("w3:interp:1442".into()));
            assert_eq!(r[col("workload_reading")], Value::Str("interp".into()));
            assert_eq!(r[col("workload_bytes_per_pkt")], Value::Int(1442));
            assert_eq!(r[col("workload_checksum")], Value::Str(w.checksum.clone()));
            assert_eq!(r[col("workload_source")], Value::Str(w.source.clone()));
            assert_eq!(r[col("workload_commit")], Value::Str(w.commit.clone()));
        }
        let rows = run_cell(&s.cells[1], &ctl).unwrap().unwrap();
        for r in &rows {
            assert_eq!(r[col("lengths")], Value::Str("report".into()));
            assert_eq!(r[col("workload_bytes_per_pkt")], Value::Null);
            for c in ["workload_reading", "workload_checksum", "workload_source", "workload_commit"] {
                assert_eq!(r[col(c)], Value::Str(String::new()), "{c}");
            }
        }
        // W5 is a table in packets: no bytes per packet, the rest recorded.
        let w5 = LengthDist::workload("w5", None, None).unwrap().workload.unwrap();
        let rows = run_cell(&s.cells[2], &ctl).unwrap().unwrap();
        assert_eq!(rows[0][col("workload_bytes_per_pkt")], Value::Null);
        assert_eq!(rows[0][col("workload_reading")], Value::Str("step".into()));
        assert_eq!(rows[0][col("workload_checksum")], Value::Str(w5.checksum));
    }
}
