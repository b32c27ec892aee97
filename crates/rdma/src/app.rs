//! `schedlab rdma`'s flow: [`main`] turns argv into an [`RdmaCommand`] through [`crate::cli`],
//! runs the benchmark (server or client) or the two-flow analysis, prints the results, writes
//! the files asked for and returns the exit code.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};

use schedlab_report::export::{write_json, Csv};
use schedlab_report::plot::figures::share_chart;
use schedlab_report::results::rdma_share::{RdmaShare, RdmaShareSchema};

use crate::backend::BackendKind;
use crate::bench::{self, BenchError, RunResult};
use crate::cli::{bench_config, parse_args, BenchArgs, RdmaCommand, ShareArgs};
use crate::record;
use crate::share::{self, FlowInput, ShareError, ShareReport};
use crate::types::MsgSize;

/// Runs the command; `args[0]` is the command name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    match parse_args(args) {
        Ok(RdmaCommand::Share(a)) => run_share(&a, &mut std::io::stdout().lock()).map(|()| 0),
        Ok(RdmaCommand::Bench(a)) => run_bench(&a),
        Err(e) => match e.downcast::<clap::Error>() {
            Ok(c) => clap_exit(c),
            Err(e) => Err(e),
        },
    }
}

fn clap_exit(e: clap::Error) -> Result<i32> {
    let code = e.exit_code();
    let _ = e.print();
    Ok(code)
}

fn run_bench(a: &BenchArgs) -> Result<i32> {
    let cfg = bench_config(a)?;
    // SIGINT/SIGTERM stop the run and keep what was measured (the front-end kit's one handler).
    let stop = schedlab_report::frontend::interrupt().flag();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = match &cfg.server {
        Some(_) => bench::run_client(&cfg, &mut out, stop),
        None => {
            let listener = bench::listen(&cfg)?;
            let addr = listener.local_addr().context("reading the listening address")?;
            let p = if cfg.backend == BackendKind::Emulated { "[EMULATED] " } else { "" };
            writeln!(out, "{p} Waiting for client to connect on {addr} ...")?;
            out.flush()?;
            bench::serve(&cfg, &listener, &mut out, stop)
        }
    };
    // Errors of an emulated run carry the label too (they are the last line a user sees).
    let tag = if cfg.backend == BackendKind::Emulated { "[EMULATED] " } else { "" };
    let res = match result {
        Ok(r) => r,
        Err(BenchError::Interrupted) => {
            // Nothing measured yet: still the interrupted exit status, not an error.
            eprintln!("schedlab rdma: {tag}interrupted before the transfer started: nothing measured");
            return Ok(schedlab_report::frontend::exit::INTERRUPTED);
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("{tag}{} run", cfg.op))),
    };
    finish(a, &res, &mut out)?;
    if let Some(why) = &res.failure {
        bail!("{tag}{why} (the {} messages before it were saved)", res.completed);
    }
    Ok(if res.interrupted { schedlab_report::frontend::exit::INTERRUPTED } else { 0 })
}

fn finish(a: &BenchArgs, res: &RunResult, out: &mut dyn Write) -> Result<()> {
    if let Some(path) = &a.out {
        if a.meta_line {
            record::save(path, Some(&res.meta()), &res.records)?;
        } else {
            record::save(path, None, &res.records)?;
            record::save_sidecar(path, &res.meta())?;
        }
    }
    if let Some(path) = &a.json {
        write_json(path, &res.to_result())?;
    }
    if let Some(path) = &a.disturbance_csv {
        schedlab_report::disturb::write_csv(path, res.disturbance.iter().map(|d| ("1", d)))?;
    }
    res.print(out)?;
    Ok(())
}

/// One flow from its file and the options that override or complete its header.
pub fn flow_input(name: char, path: &Path, f: record::FlowFile, size: Option<MsgSize>, count: Option<u64>) -> Result<FlowInput> {
    let meta = f.meta.clone().unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let conflict = |opt: &'static str, given: u64, header: u64| ShareError::Conflict { flow: name, opt, given, header };
    let bytes = match (size.map(|s| u64::from(s.bytes())), meta.bytes) {
        (Some(g), Some(h)) if g != h => return Err(conflict(if lower == 'a' { "size-a" } else { "size-b" }, g, h).into()),
        (Some(g), _) => g,
        (None, Some(h)) => h,
        (None, None) => {
            return Err(anyhow::Error::new(ShareError::NoSize { flow: name, lower }).context(path.display().to_string()))
        }
    };
    let count = match (count, meta.count) {
        (Some(g), Some(h)) if g != h => return Err(conflict(if lower == 'a' { "count-a" } else { "count-b" }, g, h).into()),
        (g, h) => g.or(h),
    };
    Ok(FlowInput {
        name,
        source: path.display().to_string(),
        backend: meta.backend,
        bytes_per_msg: bytes,
        count,
        records: f.records,
    })
}

fn overall_backend(r: &ShareReport) -> String {
    let b: Vec<&str> = r.flows.iter().map(|f| f.backend.as_str()).collect();
    if b.contains(&"EMULATED") {
        "EMULATED".into()
    } else if b[0] == b[1] {
        b[0].into()
    } else {
        "mixed".into()
    }
}

fn run_share(a: &ShareArgs, out: &mut dyn Write) -> Result<()> {
    // Both files are read before anything else is checked, so a broken file is reported first.
    let (file_a, file_b) = (record::load(&a.a)?, record::load(&a.b)?);
    let fa = flow_input('A', &a.a, file_a, a.size_a, a.count_a)?;
    let fb = flow_input('B', &a.b, file_b, a.size_b, a.count_b)?;
    let r = share::analyse(&fa, &fb, a.window)?;
    let backend = overall_backend(&r);
    let p = if backend == "EMULATED" { "[EMULATED] " } else { "" };
    for f in &r.flows {
        let of = f.count.map(|c| format!("/{c}")).unwrap_or_default();
        let when = if f.finished_first { "finished first" } else { "at that moment" };
        writeln!(
            out,
            "{p}flow {}: {} [{}] {when}: {} B x {}{of} msgs x 8 / {:.6} s = {:.3} Gbps",
            f.name,
            f.source,
            f.backend,
            f.bytes_per_msg,
            f.completed_at_cut,
            f.cut_time_us / 1e6,
            f.gbps
        )?;
        if f.incomplete {
            writeln!(out, "{p}  note: flow {} stopped before its last message (interrupted run?)", f.name)?;
        }
    }
    writeln!(out, "{p}Jain's fairness index: {:.4} (1 = equal shares, 0.5 = one flow had it all)", r.jain)?;
    for f in &r.flows {
        writeln!(out, "{p}latency {} [us]: {}", f.name, f.lat_us.line(""))?;
    }
    let wms = r.window_us / 1e3;
    if r.windows.len() <= 40 {
        writeln!(out, "{p}throughput over time ({wms} ms windows):")?;
        writeln!(out, "{p}  {:>10} {:>10} {:>10} {:>8}", "start_ms", "A_gbps", "B_gbps", "jain")?;
        for w in &r.windows {
            writeln!(out, "{p}  {:>10.3} {:>10.3} {:>10.3} {:>8.4}", w.start_ms, w.a_gbps, w.b_gbps, w.jain)?;
        }
    } else {
        writeln!(out, "{p}throughput over time: {} windows of {wms} ms (see --csv, --json or --svg)", r.windows.len())?;
    }
    if let Some(path) = &a.json {
        let typed = RdmaShare {
            schema: RdmaShareSchema,
            backend: backend.clone(),
            flows: r.flows.clone(),
            jain: r.jain,
            window_us: r.window_us,
            windows: r.windows.clone(),
        };
        write_json(path, &typed)?;
    }
    if let Some(path) = &a.csv {
        let mut c = Csv::create(path, &["start_ms", "end_ms", "a_gbps", "b_gbps", "jain", "backend"])?;
        for w in &r.windows {
            c.row(&[
                format!("{}", w.start_ms),
                format!("{}", w.end_ms),
                format!("{:.6}", w.a_gbps),
                format!("{:.6}", w.b_gbps),
                format!("{:.6}", w.jain),
                backend.clone(),
            ])?;
        }
        c.finish()?;
    }
    if let Some(path) = &a.svg {
        let flows: Vec<(String, u64)> = r.flows.iter().map(|f| (f.name.clone(), f.bytes_per_msg)).collect();
        let windows: Vec<(f64, Vec<f64>)> =
            r.windows.iter().map(|w| ((w.start_ms + w.end_ms) / 2.0, vec![w.a_gbps, w.b_gbps])).collect();
        let chart = share_chart(wms, if p.is_empty() { "" } else { backend.as_str() }, &flows, &windows);
        chart.write(path)?;
    }
    Ok(())
}
