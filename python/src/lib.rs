//! `schedlab._native`: the Rust side of the Python package. It parses sweep specs and runs cells
//! through `schedlab_sweep::run_cell` — the same entry point as `schedlab sweep` — on Rust threads
//! while the GIL is released; the calling thread wakes every 100 ms to let Python handle signals,
//! so Ctrl-C stops the cells and raises `KeyboardInterrupt`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use schedlab_sim::Control;
use schedlab_sweep::run::{run_local, CellError, Progress};
use schedlab_sweep::table::{Kind, Row, Value, COLUMNS};
use schedlab_sweep::{CellJob, Sweep};

/// Parses and validates a sweep spec (TOML text). `file` names it in error messages and `base` is
/// the folder relative distribution files are read from. Returns (name, sweep id, cells as JSON).
#[pyfunction]
#[pyo3(signature = (text, file = "<spec>", base = "."))]
fn parse_spec(text: &str, file: &str, base: &str) -> PyResult<(String, String, Vec<String>)> {
    let s = Sweep::parse(text, file, Path::new(base)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let jobs = s
        .cells
        .iter()
        .map(|c| serde_json::to_string(c).map_err(|e| PyRuntimeError::new_err(e.to_string())))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((s.name, s.sweep_id, jobs))
}

/// The table's columns as (name, kind) with kind one of "str", "int", "int?" (an integer or None),
/// "float", "bool".
#[pyfunction]
fn columns() -> Vec<(&'static str, &'static str)> {
    COLUMNS
        .iter()
        .map(|(n, k)| {
            (
                *n,
                match k {
                    Kind::Str => "str",
                    Kind::Int => "int",
                    Kind::OptInt => "int?",
                    Kind::Float => "float",
                    Kind::Bool => "bool",
                },
            )
        })
        .collect()
}

/// The schedlab version recorded in every row.
#[pyfunction]
fn version() -> &'static str {
    schedlab_sweep::VERSION
}

/// Runs cells (JSON from `parse_spec`) on `workers` threads without the GIL and returns the rows
/// as a dict of column name -> list, cells in the order given.
#[pyfunction]
#[pyo3(signature = (jobs, workers = None))]
fn run_cells<'py>(py: Python<'py>, jobs: Vec<String>, workers: Option<usize>) -> PyResult<Bound<'py, PyDict>> {
    let jobs: Vec<CellJob> = jobs
        .iter()
        .map(|j| serde_json::from_str(j).map_err(|e| PyValueError::new_err(format!("not a sweep cell: {e}"))))
        .collect::<PyResult<_>>()?;
    let workers = workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |x| x.get())).max(1);
    let n = jobs.len();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    // A Mutex makes the receiver shareable with the GIL-free closure (Receiver is not Sync).
    let rx = std::sync::Mutex::new(rx);
    let worker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let progress =
                Progress { controls: (0..n).map(|_| Arc::new(Control::default())).collect(), done: Default::default() };
            let mut out: Vec<Option<Vec<Row>>> = vec![None; n];
            let r = run_local(
                &jobs,
                workers,
                &stop,
                &progress,
                |i, rows| {
                    out[i] = Some(rows);
                    Ok::<(), CellError>(())
                },
                || {},
            );
            let _ = tx.send(r.map(|()| out));
        })
    };
    let result = loop {
        match py.detach(|| rx.lock().map_err(|_| mpsc::RecvTimeoutError::Disconnected)?.recv_timeout(Duration::from_millis(100)))
        {
            Ok(r) => break r,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    stop.store(true, Ordering::Relaxed);
                    py.detach(|| {
                        let _ = worker.join();
                    });
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(PyRuntimeError::new_err("the simulation thread failed")),
        }
    };
    let _ = worker.join();
    let cells = result.map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))?;
    let mut rows: Vec<Row> = Vec::new();
    for (i, c) in cells.into_iter().enumerate() {
        match c {
            Some(r) => rows.extend(r),
            None => return Err(PyRuntimeError::new_err(format!("cell {i} did not finish"))),
        }
    }
    let d = PyDict::new(py);
    for (i, (name, kind)) in COLUMNS.iter().enumerate() {
        match kind {
            Kind::Str => {
                let v: Vec<&str> = rows.iter().map(|r| if let Value::Str(s) = &r[i] { s.as_str() } else { "" }).collect();
                d.set_item(*name, v)?;
            }
            Kind::Int => {
                let v: Vec<i64> = rows.iter().map(|r| if let Value::Int(x) = r[i] { x } else { 0 }).collect();
                d.set_item(*name, v)?;
            }
            Kind::OptInt => {
                let v: Vec<Option<i64>> = rows.iter().map(|r| if let Value::Int(x) = r[i] { Some(x) } else { None }).collect();
                d.set_item(*name, v)?;
            }
            Kind::Float => {
                let v: Vec<f64> =
                    rows.iter().map(|r| if let Value::Float(b) = r[i] { f64::from_bits(b) } else { f64::NAN }).collect();
                d.set_item(*name, v)?;
            }
            Kind::Bool => {
                let v: Vec<bool> = rows.iter().map(|r| matches!(r[i], Value::Bool(true))).collect();
                d.set_item(*name, v)?;
            }
        }
    }
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_spec, m)?)?;
    m.add_function(wrap_pyfunction!(columns, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(run_cells, m)?)?;
    Ok(())
}
