//! `schedlab sched` as the binary runs it, a table of contents: the command line through
//! [`crate::cli`] into options, the traffic program loaded ([`crate::config::load`]), every output
//! file checked before anything is measured, the run (or `--repeat N` runs, [`crate::repeat::run`]),
//! then the writers of [`crate::output`] and [`crate::config`] (files first, so a closed stdout
//! cannot lose them), then the human text.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use schedlab_report::frontend::check_writable;
use schedlab_report::MachineInfo;

use crate::cli::{parse, Parsed, HELP, USAGE};
use crate::config::{load, write_message_files, write_timestamps, Args};
use crate::output::{bench_policy_pairs, config_line, text, write_disturbance_csv, write_json, Report};
use crate::repeat::Measured;

/// `println!` that returns an error instead of panicking when stdout is closed (`| head`).
macro_rules! outln {
    ($($t:tt)*) => {
        writeln!(std::io::stdout(), $($t)*).context("writing to stdout")?
    };
}

fn out(s: &str) -> Result<()> {
    write!(std::io::stdout(), "{s}").context("writing to stdout")
}

/// Runs `schedlab sched`; `args[0]` is the command name. 0 after help, 2 after a usage error
/// (message printed), the front-end kit's interrupted code after Ctrl-C.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    let argv = match parse(&args) {
        Ok(Parsed::Run(a)) => *a,
        Ok(Parsed::Help) => {
            out(HELP)?;
            return Ok(schedlab_report::frontend::exit::OK);
        }
        Err(e) => {
            eprintln!("schedlab sched: usage error: {e:#}\n{USAGE}");
            return Ok(schedlab_report::frontend::exit::USAGE);
        }
    };
    let args = load(argv)?;
    check_outputs(&args)?;
    if args.bench {
        return bench_main(&args);
    }
    for w in &args.cfg.traffic.warnings {
        eprintln!("schedlab sched: warning: {w}");
    }
    // SIGINT/SIGTERM: stop the run and print what was measured so far (the front-end kit's one
    // handler per process).
    let interrupt = schedlab_report::frontend::interrupt();
    let machine = MachineInfo::collect();
    outln!("{}", machine.line());
    outln!("{}", config_line(&args));
    // The named workloads the traffic draws from, with their reading and provenance.
    for w in args.cfg.traffic.workloads() {
        outln!("{}", crate::workload::workload_line(&w));
    }
    let command: Vec<String> = std::env::args().collect();
    let m = crate::repeat::run(&args, &machine, &command, interrupt.flag(), |k, n, rep, why| {
        out(&crate::repeat::run_line(k, n, rep, why))
    })?;
    let files = write_files(&args, &m)?;
    if m.interrupted() {
        outln!("interrupted (Ctrl-C): partial results after {:.3} s", m.last.elapsed.secs());
    }
    match m.summary() {
        Some(s) => out(&crate::repeat::text(&s))?,
        None => out(&text(m.report()))?,
    }
    if args.cfg.ts_limit > 0 {
        let clients = &m.last.clients;
        let truncated: u64 = clients.iter().map(|c| c.timestamps_truncated).sum();
        outln!(
            "timestamps{}: {} ({} records{})",
            if m.asked > 1 { " (the last run)" } else { "" },
            files.join(", "),
            clients.iter().map(|c| c.timestamps.len()).sum::<usize>(),
            if truncated > 0 { format!("; {truncated} later packets not logged, raise --ts-limit") } else { String::new() }
        );
    }
    Ok(if m.interrupted() { schedlab_report::frontend::exit::INTERRUPTED } else { schedlab_report::frontend::exit::OK })
}

/// Every file the run will write by name (`--json`, `--disturbance-csv`, `--messages`,
/// `--trace-out`) can be created: checked before measuring, without leaving a file behind.
pub fn check_outputs(args: &Args) -> Result<()> {
    let named: [(&str, Option<&Path>); 4] = [
        ("--json", args.json.as_deref()),
        ("--disturbance-csv", args.disturbance_csv.as_deref()),
        ("--messages", args.messages.as_deref()),
        ("--trace-out", args.trace_out.as_deref()),
    ];
    for (what, path) in named {
        if let Some(p) = path {
            check_writable(p, what)?;
        }
    }
    Ok(())
}

/// The files of a measurement: the last run's timestamps (returned by name), the JSON (the one
/// report, or `--repeat`'s document), the disturbance CSV of every run, `--messages` and
/// `--trace-out` of the last run.
pub fn write_files(args: &Args, m: &Measured) -> Result<Vec<String>> {
    let files = if args.cfg.ts_limit > 0 { write_timestamps(&args.prefix, &m.last.clients)? } else { Vec::new() };
    if let Some(path) = &args.json {
        match m.document() {
            Some(doc) => write_json(path, &doc)?,
            None => write_json(path, m.report())?,
        }
    }
    if let Some(path) = &args.disturbance_csv {
        write_disturbance_csv(path, &m.reports.iter().collect::<Vec<&Report>>())?;
    }
    write_message_files(args, &m.last)?;
    Ok(files)
}

fn bench_main(args: &Args) -> Result<i32> {
    let machine = MachineInfo::collect();
    outln!("{}", machine.line());
    let rows = bench_policy_pairs(|l| writeln!(std::io::stdout(), "{l}")).context("writing to stdout")?;
    if let Some(path) = &args.json {
        let v = serde_json::json!({ "machine": machine, "policy_pairs": rows });
        write_json(path, &v)?;
    }
    Ok(schedlab_report::frontend::exit::OK)
}
