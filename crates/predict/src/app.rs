//! `schedlab predict`'s flow: [`main`] turns argv into a [`crate::config::Config`] through
//! [`crate::cli`], runs every policy on the harness and through the simulator
//! ([`crate::run::run_with`]), prints each run and the summaries, writes the files asked for
//! ([`crate::output`]) and returns the exit code.

use std::ffi::OsString;
use std::io::Write;

use anyhow::{Context, Result};
use schedlab_report::MachineInfo;
use schedlab_sched::config::write_message_files;
use schedlab_sched::workload::workload_line;

use crate::cli::{parse, NotUsage, HELP};
use crate::output::{plot, text, write_csv, write_disturbance_csv, write_json};
use crate::run::{run_with, Finished};

/// `println!` that returns an error instead of panicking when stdout is closed.
macro_rules! outln {
    ($($t:tt)*) => {
        writeln!(std::io::stdout(), $($t)*).context("writing to stdout")?
    };
}

/// Entry point: `args[0]` is the program name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    let argv: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string).with_context(|| format!("argument {a:?} is not valid UTF-8")))
        .collect::<Result<_>>()?;
    let opts = match parse(&argv) {
        Ok(Some(o)) => o,
        Ok(None) => {
            write!(std::io::stdout(), "{HELP}").context("writing to stdout")?;
            return Ok(0);
        }
        Err(e) if e.is::<NotUsage>() => return Err(e),
        Err(e) => {
            eprintln!("schedlab predict: usage error: {e:#} (see --help)");
            return Ok(schedlab_report::frontend::exit::USAGE);
        }
    };
    let cfg = &opts.config;
    for w in &cfg.sched.cfg.traffic.warnings {
        eprintln!("schedlab predict: warning: {w}");
    }
    // SIGINT/SIGTERM: the front-end kit's one handler per process.
    let interrupt = schedlab_report::frontend::interrupt();
    let machine = MachineInfo::collect();
    outln!("{}", machine.line());
    let base = &cfg.sched.cfg;
    outln!(
        "workload: {} client(s), traffic {}, queue {} pkts, link {}, -i {} -c {}, seed {}, drain {}",
        base.threads,
        cfg.sched.traffic_source,
        base.queue,
        base.bandwidth.map_or("unlimited".into(), |b| b.to_string()),
        base.sched_poll,
        base.client_poll,
        base.seed,
        cfg.drain
    );
    // The named workloads the traffic draws from, with their reading and provenance.
    for w in base.traffic.workloads() {
        outln!("{}", workload_line(&w));
    }
    let shown = |run: &crate::run::AlgRun| -> std::io::Result<()> {
        let s = if cfg.repeat > 1 {
            crate::repeat::run_line(run.repeat_run, cfg.repeat, &run.alg, &crate::repeat::outcome(run))
        } else {
            text(run)
        };
        write!(std::io::stdout(), "{s}")
    };
    let (result, last) = match run_with(cfg, machine, interrupt.flag(), shown)? {
        Finished::Done { result, last } => (result, last),
        Finished::Interrupted => {
            outln!("interrupted (Ctrl-C)");
            return Ok(schedlab_report::frontend::exit::INTERRUPTED);
        }
    };
    if !result.summaries.is_empty() {
        outln!("\nover {} runs per algorithm (runs set aside by the verdict are dropped):", cfg.repeat);
        for s in &result.summaries {
            write!(std::io::stdout(), "{}", crate::repeat::text(s)).context("writing to stdout")?;
        }
    }
    if let Some(r) = &last {
        write_message_files(&cfg.sched, r)?;
    }
    if let Some(p) = &cfg.sched.json {
        write_json(p, &result)?;
    }
    if let Some(p) = &opts.csv {
        write_csv(p, &result)?;
    }
    if let Some(p) = &cfg.sched.disturbance_csv {
        write_disturbance_csv(p, &result, cfg.repeat)?;
    }
    if let Some(p) = &opts.plot {
        plot(&result).write(p)?;
        outln!("plot: {}", p.display());
    }
    Ok(0)
}
